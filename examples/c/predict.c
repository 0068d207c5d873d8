/* predict: the limit ODE of a configuration through libaimdyn's public
 * API (README.md, "Use as a library").
 *
 *   cc predict.c $(pkg-config --cflags --libs aimdyn) -o predict
 *   ./predict [CONFIG.ini] [section.key=value ...]
 *
 * Prints the observables at every grid point reached, with all their
 * digits, and the weak-recovery time. Exit status 0, 1 for a configuration the library refused, 2 when
 * the run failed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <aimdyn/aimdyn.h>

int main(int argc, char **argv)
{
    aim_config cfg;
    aim_config_error err;
    aim_config_defaults(&cfg);
    int first = 1;
    if (argc > 1 && !strchr(argv[1], '=')) {
        if (aim_config_load(&cfg, argv[1], &err) != 0) {
            fprintf(stderr, "predict: %s\n", err.message);
            return 1;
        }
        first = 2;
    }
    for (int i = first; i < argc; i++)
        if (aim_config_set(&cfg, argv[i], &err) != 0) {
            fprintf(stderr, "predict: %s\n", err.message);
            return 1;
        }
    if (aim_config_validate(&cfg, &err) != 0) {
        fprintf(stderr, "predict: %s\n", err.message);
        return 1;
    }

    double *tau = malloc(sizeof *tau * (size_t)cfg.points);
    double *obs = malloc(sizeof *obs * (size_t)cfg.points * AIM_OBS_COUNT);
    if (!tau || !obs) {
        fprintf(stderr, "predict: out of memory\n");
        free(tau);
        free(obs);
        return 2;
    }
    aim_grid_fill(&cfg, tau);
    aim_ode_report report;
    /* cfg.d: the dimension a raw-centring mean equation needs */
    aim_ode_status status = aim_trajectory_run(&cfg, cfg.d, tau, obs, &report);
    if (status == AIM_ODE_FAILED) {
        fprintf(stderr, "predict: %s\n", report.message);
        free(tau);
        free(obs);
        return 2;
    }
    printf("tau");
    for (int k = 0; k < AIM_OBS_COUNT; k++)
        printf("\t%s", aim_obs_names[k]);
    printf("\n");
    for (int i = 0; i < report.reached; i++) {
        printf("%.17g", tau[i]);
        for (int k = 0; k < AIM_OBS_COUNT; k++)
            printf("\t%.17g", obs[i * AIM_OBS_COUNT + k]);
        printf("\n");
    }
    if (isnan(report.tau_wr))
        printf("# tau_wr not reached by tau = %.17g\n", report.tau);
    else
        printf("# tau_wr %.17g\n", report.tau_wr);
    if (status == AIM_ODE_BLOWUP)
        printf("# stopped: %s\n", report.message);
    free(tau);
    free(obs);
    return 0;
}
