/* kernel_accuracy: the engine's kernel error estimate
 * (aim_gauss_kernel_error) against the error it actually makes, measured
 * against a reference rule of 2^20 points, at the start of
 * examples/tied_softmax_T4.ini (row softmax, T = 4, tied student and
 * teacher), for the point counts 1024 .. 65536 and for ode.kernel_tol
 * values. The actual error of each group of kernels, as the estimate
 * defines it (the risk; K_omega; K_psi; the drift kernels, seen through
 * E[sum e C] and E[e h(B)], E[e h^T(B)] for B = each index and a
 * Psi-only direction), relative to the group's largest reference value;
 * the largest over the groups is printed beside the estimate.
 * Usage: kernel_accuracy [REFERENCE_POINTS, default 1048576] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <gsl/gsl_errno.h>

#include "config.h"
#include "gauss.h"

#define NVAL 12

static int configure(aim_config *cfg, int points, double tol)
{
    aim_config_error err;
    const char *sets[] = {"model.tokens=4", "model.output=softmax", "model.decomposition=tied",
                          "teacher.decomposition=tied"};
    aim_config_defaults(cfg);
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++)
        if (aim_config_set(cfg, sets[i], &err)) {
            fprintf(stderr, "kernel_accuracy: %s\n", err.message);
            return -1;
        }
    cfg->qmc_points = points;
    cfg->kernel_tol = tol;
    if (aim_config_validate(cfg, &err)) {
        fprintf(stderr, "kernel_accuracy: %s\n", err.message);
        return -1;
    }
    return 0;
}

/* The kernels at q: risk, K_omega, K_psi, then the drift kernels. */
static int kernels(aim_gauss *g, const aim_overlaps *q, double v[NVAL])
{
    if (aim_gauss_eval(g, q))
        return -1;
    v[0] = aim_gauss_risk(g);
    v[1] = aim_gauss_noise_omega(g);
    v[2] = aim_gauss_noise_psi(g);
    v[3] = aim_gauss_error_mean(g);
    const double dir[4][2][2] = {{{1, 0}, {1, 0}}, {{0, 1}, {0, 1}}, {{1, 0}, {0, 0}},
                                 {{0, 1}, {0, 0}}};
    for (int k = 0; k < 4; k++)
        for (int t = 0; t < 2; t++)
            v[4 + 2 * k + t] = aim_gauss_error_index(g, dir[k][0], dir[k][1], 0.0, t);
    return 0;
}

static double actual_error(const double v[NVAL], const double ref[NVAL])
{
    double drift_scale = 0.0, drift_err = 0.0, worst = 0.0;
    for (int j = 0; j < 3; j++)
        worst = fmax(worst, fabs(v[j] - ref[j]) / fabs(ref[j]));
    for (int j = 3; j < NVAL; j++) {
        drift_scale = fmax(drift_scale, fabs(ref[j]));
        drift_err = fmax(drift_err, fabs(v[j] - ref[j]));
    }
    return fmax(worst, drift_err / drift_scale);
}

int main(int argc, char **argv)
{
    gsl_set_error_handler_off();
    const int nref = argc > 1 ? atoi(argv[1]) : 1 << 20;
    const aim_overlaps q = {.omega = {{0.125, 0.25}, {0.25, 2.0}},
                            .psi = {{0.125, 0.25}, {0.25, 2.0}}};
    aim_config cfg;
    double ref[NVAL], v[NVAL], est;
    if (configure(&cfg, nref, 0.0))
        return 1;
    aim_gauss *g = aim_gauss_create(&cfg, AIM_RULE_AUTO);
    if (!g || kernels(g, &q, ref)) {
        fprintf(stderr, "kernel_accuracy: the reference failed\n");
        return 1;
    }
    aim_gauss_free(g);
    printf("tied softmax T = 4 at the start of examples/tied_softmax_T4.ini; reference: %d "
           "points\n",
           nref);
    printf("%12s %10s %12s %14s\n", "kernel_tol", "points", "estimated", "actual");
    const double tols[] = {0, 0, 0, 0, 0, 1e-2, 3e-3, 1e-3, 3e-4};
    const int counts[] = {1024, 4096, 16384, 65536, 262144, 0, 0, 0, 0};
    for (size_t i = 0; i < sizeof tols / sizeof tols[0]; i++) {
        if (configure(&cfg, counts[i] ? counts[i] : 16384, tols[i]))
            return 1;
        g = aim_gauss_create(&cfg, AIM_RULE_AUTO);
        if (!g || kernels(g, &q, v) || aim_gauss_kernel_error(g, &est)) {
            fprintf(stderr, "kernel_accuracy: the engine failed\n");
            return 1;
        }
        if (tols[i] > 0)
            printf("%12g %10d %12.3g %14.3g\n", tols[i], aim_gauss_points(g), est,
                   actual_error(v, ref));
        else
            printf("%12s %10d %12.3g %14.3g\n", "-", aim_gauss_points(g), est,
                   actual_error(v, ref));
        aim_gauss_free(g);
    }
    return 0;
}
