/* aimdyn ode: the limit ODE of the configured student. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "compare.h"
#include "grid.h"
#include "model.h"
#include "ode.h"
#include "trajectory.h"

int aim_cmd_ode(int argc, char **argv)
{
    run_options ro;
    int rc = aim_cli_parse_run_options("ode", argc, argv, &ro);
    if (rc)
        return rc > 0 ? 0 : AIM_EXIT_USAGE;
    const aim_config *cfg = &ro.cfg;
    double *tau = malloc(sizeof(double) * (size_t)cfg->points);
    double *obs = malloc(sizeof(double) * (size_t)cfg->points * AIM_OBS_COUNT);
    if (!tau || !obs) {
        free(tau);
        free(obs);
        fprintf(stderr, "aimdyn ode: out of memory\n");
        return AIM_EXIT_RUNTIME;
    }
    aim_grid_fill(cfg, tau);
    aim_ode_report rep;
    aim_trajectory_moments mom;
    /* measured starts: a hierarchy's on SGD seed sgd.seed, any student's
     * on a saved state (aim_sgd_create loads it for the seed) */
    aim_measured_start start = {0};
    char why[1200];
    const int measured = cfg->start_file[0] ||
                         (aim_model_ops_of(cfg)->hierarchy && cfg->start == AIM_START_SEED);
    if (measured &&
        aim_compare_measure_start(cfg, ro.dims[0], cfg->seed, &start, why, sizeof why)) {
        fprintf(stderr, "aimdyn ode: %s\n", why);
        free(tau);
        free(obs);
        return AIM_EXIT_RUNTIME;
    }
    aim_ode_status st = aim_trajectory_run_full(cfg, ro.dims[0], tau, measured ? &start : NULL,
                                                obs, &mom, &rep);
    aim_compare_release_start(&start);
    if (rep.warning[0])
        fprintf(stderr, "aimdyn ode: warning: the balance condition |tA_k(0) - tB_k(0)| >= "
                        "hierarchy.balance = %g of the paper's Corollary 4 fails for %s\n",
                cfg->balance, rep.warning);
    int exit_code = 0;
    if (st == AIM_ODE_FAILED || rep.reached < 1) {
        fprintf(stderr, "aimdyn ode: %s\n", rep.message);
        exit_code = AIM_EXIT_RUNTIME;
    } else {
        char path[1024];
        if (aim_cli_write_ode_file(cfg, ro.dims[0], tau, obs, &mom, &rep, path, sizeof path, NULL)) {
            exit_code = AIM_EXIT_RUNTIME;
        } else {
            const double *last = obs + (size_t)(rep.reached - 1) * AIM_OBS_COUNT;
            const double twr = rep.tau_wr;
            printf("wrote %s\n", path);
            printf("tau = %g: risk = %.6g, teacher overlap = %.6g\n",
                   tau[rep.reached - 1], last[AIM_OBS_RISK], last[AIM_OBS_OVERLAP]);
            if (isnan(twr))
                printf("weak recovery (|overlap| >= %g): not reached by tau = %g\n",
                       cfg->recovery_threshold, tau[rep.reached - 1]);
            else
                printf("weak recovery (|overlap| >= %g): tau = %.6g, n = %.4g samples at d = %d\n",
                       cfg->recovery_threshold, twr, twr * ro.dims[0] * (double)ro.dims[0] / cfg->eta,
                       ro.dims[0]);
            if (rep.handed_over)
                fprintf(stderr, "aimdyn ode: %s; the rows from tau = %g on are the matrix "
                                "limit process's (hierarchy.beyond = matrix; at the seam, "
                                "tau = %g, it differs by %+.2g in the overlap, %+.2g %% in "
                                "the risk)\n",
                        rep.handover_why, rep.handover, rep.handover_seam_tau,
                        rep.handover_seam[0], 100 * rep.handover_seam[1]);
            if (st == AIM_ODE_BLOWUP) {
                fprintf(stderr, "aimdyn ode: %s\n", rep.message);
                exit_code = AIM_EXIT_BLOWUP;
            }
        }
    }
    aim_trajectory_moments_free(&mom);
    free(tau);
    free(obs);
    return exit_code;
}
