/* aimdyn sgd: online SGD at each dimension, measured. */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "compare.h"
#include "grid.h"
#include "ranks.h"
#include "seeds.h"

int aim_cmd_sgd(int argc, char **argv)
{
    run_options ro;
    int rc = aim_cli_parse_run_options("sgd", argc, argv, &ro);
    if (rc)
        return rc > 0 ? 0 : AIM_EXIT_USAGE;
    aim_config *cfg = &ro.cfg;
    if (aim_ranks_rank() != 0) /* rank 0 writes the files (ranks.h) */
        return aim_cli_sgd_share("sgd", ro.jobs, cfg, ro.dims[0]) ? AIM_EXIT_RUNTIME : 0;
    const int points = cfg->points;
    double *tau = malloc(sizeof(double) * (size_t)points);
    double *mean = malloc(sizeof(double) * (size_t)points * AIM_OBS_COUNT);
    double *se = malloc(sizeof(double) * (size_t)points * AIM_OBS_COUNT);
    double *xmean = malloc(sizeof(double) * (size_t)points * AIM_SGD_EXTRA_COUNT);
    double *xse = malloc(sizeof(double) * (size_t)points * AIM_SGD_EXTRA_COUNT);
    int exit_code = AIM_EXIT_RUNTIME;
    char path[1024];
    /* the per-seed and the summary file replace the old pair together,
     * under the lock of NAME-sgd-dD (aim_cli_parse_run_options) */
    char set_name[sizeof cfg->name + 32];
    snprintf(set_name, sizeof set_name, "%s-sgd-d%d", cfg->name, ro.dims[0]);
    aim_atomic_set *set = aim_atomic_set_create(cfg->dir, set_name);
    if (tau && mean && se && xmean && xse && set) {
        aim_grid_fill(cfg, tau);
        double twr;
        int recovered;
        int st = aim_cli_run_sgd("sgd", ro.jobs, cfg, ro.dims[0], tau, mean, se, xmean, xse,
                                 &twr, &recovered, path, sizeof path, set);
        if (st < 0)
            aim_atomic_set_free(set);
        else if (aim_atomic_set_commit(set) != 0)
            st = -1;
        set = NULL;
        if (st >= 0) {
            aim_seeds_remove_dir("sgd", cfg, ro.dims[0]);
            const double *last = mean + (size_t)(points - 1) * AIM_OBS_COUNT;
            printf("wrote %s\n", path);
            printf("tau = %g: risk = %.6g, teacher overlap = %.6g (means over %d seeds)\n",
                   tau[points - 1], last[AIM_OBS_RISK], last[AIM_OBS_OVERLAP], cfg->seeds);
            char med[32];
            printf("weak recovery (|overlap| >= %g): %d of %d seeds, median tau = %s\n",
                   cfg->recovery_threshold, recovered, cfg->seeds,
                   aim_cli_tau_text(med, sizeof med, twr, "not defined"));
            exit_code = st > 0 ? AIM_EXIT_BLOWUP : 0;
        }
    }
    aim_atomic_set_free(set);
    free(tau);
    free(mean);
    free(se);
    free(xmean);
    free(xse);
    return exit_code;
}
