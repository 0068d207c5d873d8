/* aim_trajectory's driver (trajectory.h): a run picks its kind (the matrix
 * method, one model on the grid, or a hierarchy with its truncation error
 * estimate) and hands a failed hierarchy over; the kernel metadata line.
 * The top of the trajectory files: the parts below it (one model's run in
 * trajectory_run.c, the kept runs, the matrix method, the estimate, the
 * hand-over) never call it. */
#include "trajectory.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gauss.h"
#include "model.h"
#include "trajectory_internal.h"

/* cfg's model integrated on the whole grid
 * (aim_trajectory_i_model_run_end says into what). */
static aim_ode_status run_model(const aim_config *cfg, int d, const double *tau,
                                const aim_measured_start *start, double *obs,
                                aim_trajectory_moments *moments, int estimate,
                                aim_trajectory_role role, aim_ode_report *report)
{
    aim_trajectory_model_run r;
    if (aim_trajectory_i_model_run_begin(&r, cfg, d, tau, start, report) == 0) {
        if (role == AIM_TRAJECTORY_RUN) {
            /* a grid point at a time for its progress: CVODE makes the
             * same calls as on the whole grid at once */
            void *stage = aim_trajectory_i_ode_stage(cfg);
            for (int i = 1; i < cfg->points && aim_ode_advance(r.ode, i) == AIM_ODE_OK &&
                            report->reached > i;
                 i++)
                aim_trajectory_i_stage_update(stage, 0, i, cfg->points - 1, i);
            aim_trajectory_i_stage_finished(stage, 0);
            aim_trajectory_i_stage_end(stage);
        } else {
            aim_ode_advance(r.ode, cfg->points - 1);
        }
    }
    return aim_trajectory_i_model_run_end(&r, cfg, tau, obs, moments, estimate, role, report);
}

void aim_trajectory_kernel_line(FILE *f, const aim_config *cfg, int points, double error)
{
    if (cfg->method == AIM_METHOD_MATRIX) {
        fprintf(f, "# threads: %d (the matrix process's replicas, run that many at a time; the "
                   "results are the same, bit for bit, on any number)\n",
                aim_gauss_threads());
        return;
    }
    if (points == 0 && aim_gauss_closed_forms(cfg)) {
        fprintf(f, "# kernels: closed forms (relu and erf; theory/direct.md sec. 3.6, exact to "
                   "about 1e-9), no quasi-random error\n");
        return;
    }
    if (points == 0) {
        fprintf(f, "# kernels: Gauss-Hermite product rules (ode.quad_nodes; exact for Hermite "
                   "series), no quasi-random error\n");
        return;
    }
    fprintf(f, "# kernels: quasi-random rule, %d points and their antithetic images; estimated "
               "relative kernel error %.2g at the start and the end (the larger; a 95 %% Student-t "
               "bound from 8 randomly shifted copies of the rule)",
            points, error);
    if (cfg->kernel_tol > 0.0)
        fprintf(f, "; points chosen for ode.kernel_tol = %g at the start%s", cfg->kernel_tol,
                !(error > cfg->kernel_tol)               ? ""
                : aim_gauss_points_capped(cfg, points) ? ", not reached below the cap on the "
                                                         "point set (2^25 numbers)"
                                                       : ", passed by the end");
    fprintf(f, "\n# threads: %d (the quasi-random rule's; the results are the same, bit for "
               "bit, on any number)\n",
            aim_gauss_threads());
}

/* Where the hierarchy failed as a truncation (not as SGD itself would),
 * and hierarchy.beyond asks for the hand-over. */
static int truncation_failed(const aim_config *cfg, const aim_ode_report *report)
{
    return aim_model_ops_of(cfg)->hierarchy && cfg->beyond == AIM_BEYOND_MATRIX &&
           report->status == AIM_ODE_BLOWUP &&
           (report->stop == AIM_STOP_TRUNCATION || report->stop == AIM_STOP_INVALID ||
            report->stop == AIM_STOP_SOLVER);
}

aim_ode_status aim_trajectory_run(const aim_config *cfg, int d,
                                  const double *tau, double *obs,
                                  aim_ode_report *report)
{
    return aim_trajectory_run_full(cfg, d, tau, NULL, obs, NULL, report);
}

aim_ode_status aim_trajectory_run_full(const aim_config *cfg, int d,
                                       const double *tau, const aim_measured_start *start,
                                       double *obs, aim_trajectory_moments *moments,
                                       aim_ode_report *report)
{
    return aim_trajectory_run_reusing(cfg, d, tau, start, obs, moments, report, NULL);
}

aim_ode_status aim_trajectory_run_reusing(const aim_config *cfg, int d, const double *tau,
                                          const aim_measured_start *start, double *obs,
                                          aim_trajectory_moments *moments,
                                          aim_ode_report *report, aim_trajectory_reuse *reuse)
{
    aim_trajectory_i_report_clear(report, moments);
    if (cfg->method == AIM_METHOD_MATRIX)
        return aim_trajectory_i_run_matrix(cfg, d, tau, obs, moments, report);
    const int hierarchy = aim_model_ops_of(cfg)->hierarchy;
    if (!hierarchy || cfg->order < 3) {
        /* no estimate; a hierarchy's run is a later order's order M - 1 */
        run_model(cfg, d, tau, start, obs, moments, 1, AIM_TRAJECTORY_RUN, report);
        if (hierarchy && reuse && report->status != AIM_ODE_FAILED)
            aim_trajectory_i_reuse_keep(reuse, cfg, d, tau, start, obs, report);
    } else {
        /* this run is the next order's estimate when reuse is to run orders
         * above it: then its rows past its own cut are wanted */
        const int later = reuse && (reuse->highest == 0 || reuse->highest > cfg->order);
        const size_t n = (size_t)cfg->points * AIM_OBS_COUNT;
        double *raw = reuse ? malloc(sizeof *raw * n) : NULL;
        aim_ode_report raw_report;
        aim_trajectory_i_run_with_estimate(cfg, d, tau, start, reuse, cfg->tol > 0.0 && !later, obs,
                                           moments, report, raw, &raw_report);
        if (raw && raw_report.status != AIM_ODE_FAILED)
            aim_trajectory_i_reuse_keep(reuse, cfg, d, tau, start, raw, &raw_report);
        free(raw);
    }
    if (truncation_failed(cfg, report))
        aim_trajectory_i_hand_over(cfg, d, tau, obs, moments, reuse, report);
    return report->status;
}
