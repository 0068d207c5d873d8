/* bench_threads: the wall and CPU time of the expectation engine on a
 * given number of threads (validate/bench/bench_threads.sh runs it on 1
 * and 2, interleaved, and prints the ratios).
 *
 *   bench_threads T THREADS [SECONDS]  one line: T, threads, wall and
 *                               CPU milliseconds per aim_gauss_eval (row
 *                               softmax, tied start of
 *                               examples/tied_softmax_T4.ini, default point
 *                               count; calls repeated for SECONDS of wall
 *                               time, default 1), then the risk and
 *                               K_omega at 17 digits (the same on any
 *                               number of threads)
 * (the whole runs are timed by /usr/bin/time in the script). */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "config_check.h"
#include "family.h"
#include "gauss.h"

static double clock_now(clockid_t id)
{
    struct timespec ts;
    if (clock_gettime(id, &ts) != 0) {
        perror("bench_threads: clock_gettime");
        exit(1);
    }
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int bench(int T, int threads, double budget)
{
    aim_config cfg;
    aim_config_error err;
    char tokens[32];
    snprintf(tokens, sizeof tokens, "model.tokens=%d", T);
    const char *sets[] = {tokens, "model.output=softmax", "model.decomposition=tied",
                          "teacher.decomposition=tied"};
    aim_config_defaults(&cfg);
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++)
        if (aim_config_set(&cfg, sets[i], &err)) {
            fprintf(stderr, "bench_threads: %s\n", err.message);
            return -1;
        }
    if (aim_config_validate(&cfg, &err)) {
        fprintf(stderr, "bench_threads: %s\n", err.message);
        return -1;
    }
    if (aim_gauss_set_threads(threads)) {
        fprintf(stderr, "bench_threads: THREADS = %d; allowed: 1 to %d\n", threads,
                AIM_GAUSS_MAX_THREADS);
        return -1;
    }
    aim_gauss *g = aim_gauss_create(&cfg, AIM_RULE_AUTO, aim_family_symmetric_pair(&cfg));
    /* student scale 0.25, teacher scale 1 at rho = 1: the example's start */
    const aim_overlaps q = {.omega = {{0.125, 0.25}, {0.25, 2.0}},
                            .psi = {{0.125, 0.25}, {0.25, 2.0}}};
    if (!g || aim_gauss_eval(g, &q)) { /* the first call sets the point set up */
        fprintf(stderr, "bench_threads: engine set-up failed at T = %d\n", T);
        aim_gauss_free(g);
        return -1;
    }
    long calls = 0;
    const double w0 = clock_now(CLOCK_MONOTONIC), c0 = clock_now(CLOCK_PROCESS_CPUTIME_ID);
    double wall;
    do {
        if (aim_gauss_eval(g, &q)) {
            fprintf(stderr, "bench_threads: %s\n", aim_gauss_error(g));
            aim_gauss_free(g);
            return -1;
        }
        calls++;
    } while ((wall = clock_now(CLOCK_MONOTONIC) - w0) < budget);
    const double cpu = clock_now(CLOCK_PROCESS_CPUTIME_ID) - c0;
    printf("%d\t%d\t%.4f\t%.4f\t%.17g\t%.17g\n", T, aim_gauss_threads(),
           1e3 * wall / (double)calls, 1e3 * cpu / (double)calls, aim_gauss_risk(g),
           aim_gauss_noise_omega(g));
    aim_gauss_free(g);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: bench_threads T THREADS [SECONDS]\n");
        return 1;
    }
    const double budget = argc > 3 ? atof(argv[3]) : 1.0;
    if (!(budget > 0.0)) {
        fprintf(stderr, "bench_threads: SECONDS = '%s'; allowed: a number > 0\n", argv[3]);
        return 1;
    }
    return bench(atoi(argv[1]), atoi(argv[2]), budget) ? 1 : 0;
}
