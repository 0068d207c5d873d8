/* bench_sgd: microseconds per online SGD step (validate/sgd.c) at
 * d = 400 and 800, T = 2 and 4, block 1 and the default block, against
 * the time of just the BLAS calls one block needs (two n x d x d dgemms
 * for the indices of student and teacher, one n x n x d dsyrk for the
 * Gram blocks, one d x d x n dgemm for the update, n = block T) on random
 * matrices of the same shapes: that is the bound, and measured/bound the
 * overhead of everything else (sampling, T x T work, bookkeeping).
 *
 * Single-threaded: openblas_set_num_threads(1) is called at start (with
 * another CBLAS, run with OPENBLAS_NUM_THREADS=1 or its equivalent).
 * Usage: bench_sgd [seconds per measurement, default 0.8]. Runs in
 * about 16 x that. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cblas.h>

#include "config.h"
#include "sgd.h"

static double now(void)
{
    struct timespec ts;
    timespec_get(&ts, TIME_UTC); /* C11; wall clock is fine here */
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double *random_matrix(size_t n, unsigned *state)
{
    double *a = malloc(n * sizeof *a);
    if (!a) {
        fprintf(stderr, "bench_sgd: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < n; i++) {
        *state = *state * 1664525u + 1013904223u;
        a[i] = (double)(*state >> 8) / 16777216.0 - 0.5;
    }
    return a;
}

/* Seconds per step of aim_sgd_advance; -1 on failure. */
static double time_sgd(const aim_config *cfg, int d, double budget)
{
    aim_sgd *s = aim_sgd_create(cfg, d, 1);
    if (!s)
        return -1.0;
    long chunk = cfg->block > 1 ? cfg->block : 1;
    if (aim_sgd_advance(s, 4 * chunk)) { /* warm-up */
        aim_sgd_free(s);
        return -1.0;
    }
    long steps = 0;
    double t0 = now(), t;
    do {
        if (aim_sgd_advance(s, 4 * chunk)) {
            fprintf(stderr, "bench_sgd: blow-up (d = %d)\n", d);
            aim_sgd_free(s);
            return -1.0;
        }
        steps += 4 * chunk;
        t = now() - t0;
    } while (t < budget);
    aim_sgd_free(s);
    return t / steps;
}

/* Seconds per step of the BLAS calls of one block of b steps. */
static double time_bound(int d, int T, int b, double budget)
{
    unsigned st = 12345u;
    int n = b * T;
    double *X = random_matrix((size_t)n * d, &st);
    double *S = random_matrix((size_t)d * d, &st);
    double *St = random_matrix((size_t)d * d, &st);
    double *Y = random_matrix((size_t)n * d, &st);
    double *P = random_matrix((size_t)n * d, &st);
    double *Q = random_matrix((size_t)n * d, &st);
    double *K = random_matrix((size_t)n * n, &st);
    long blocks = 0;
    double t0 = now(), t;
    do {
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, d, d, 1.0,
                    X, d, S, d, 0.0, P, d);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, d, d, 1.0,
                    X, d, St, d, 0.0, Q, d);
        cblas_dsyrk(CblasRowMajor, CblasLower, CblasNoTrans, n, d, 1.0, X, d,
                    0.0, K, n);
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, d, d, n, -1e-9,
                    X, d, Y, d, 1.0, S, d);
        blocks++;
        t = now() - t0;
    } while (t < budget);
    free(X); free(S); free(St); free(Y); free(P); free(Q); free(K);
    return t / ((double)blocks * b);
}

int main(int argc, char **argv)
{
    double budget = argc > 1 ? atof(argv[1]) : 0.8;
    if (!(budget > 0.0))
        budget = 0.8;
    openblas_set_num_threads(1);

    aim_config cfg;
    aim_config_defaults(&cfg);
    int bdef = cfg.block > 1 ? cfg.block : 16;
    cfg.eta = 0.05; /* stable: the benchmark must not blow up */
    cfg.gamma = 0.0;
    cfg.blowup = 1e300;

    printf("# bench_sgd: single-threaded OpenBLAS, %.2f s per measurement\n",
           budget);
    printf("# bound = the BLAS calls of one block (2 dgemm n x d x d, dsyrk "
           "n x n x d, dgemm d x d x n; n = block T) per step\n");
    printf("%5s %2s %6s %12s %12s %8s\n", "d", "T", "block", "us/step",
           "bound_us", "ratio");
    const int ds[] = {400, 800}, Ts[] = {2, 4};
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            for (int k = 0; k < 2; k++) {
                int d = ds[i], T = Ts[j], b = k == 0 ? 1 : bdef;
                cfg.tokens = T;
                for (int a = 0; a < AIM_MAX_TOKENS * AIM_MAX_TOKENS; a++)
                    cfg.cov[a] = 0.0;
                for (int a = 0; a < T; a++)
                    cfg.cov[a * T + a] = 1.0;
                cfg.block = b;
                double ts = time_sgd(&cfg, d, budget);
                double tb = time_bound(d, T, b, budget / 2);
                if (ts < 0) {
                    printf("%5d %2d %6d %12s\n", d, T, b, "failed");
                    continue;
                }
                printf("%5d %2d %6d %12.1f %12.1f %8.2f\n", d, T, b,
                       1e6 * ts, 1e6 * tb, ts / tb);
                fflush(stdout);
            }
    return 0;
}
