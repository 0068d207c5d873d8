/* bench_sgd: microseconds per online SGD step (validate/sgd.c) at
 * d = 400 and 800, T = 2 and 4, block 1 and the default block, against
 * the time of just the BLAS calls one block needs (two n x d x d dgemms
 * for the indices of student and teacher, one n x n x d dsyrk for the
 * Gram blocks, one d x d x n dgemm for the update, n = block T) on random
 * matrices of the same shapes: that is the bound, and measured/bound the
 * overhead of everything else (sampling, T x T work, bookkeeping).
 *
 * Second table: the tied student S = W W^T (validate/sgd_tied.c, rho = 1,
 * p = d), timed in aim_sgd_advance calls of 256 steps. Its bound is every
 * BLAS call of a block: X W_0 (n x p x d), X S* (n x d x d, the teacher
 * is dense), K (dsyrk n x n x d), the final d x p x n dgemm ("block"
 * column), the per-step corrections (a T x p x kT and a T x p x T dgemm
 * for step k, "corr"), and the dsyrk S = W W^T (d x d x p) that every
 * advance call ends with, per step of its 256 ("WWt").
 *
 * Third table: the untied student S = U V^T (validate/sgd_untied.c, rho
 * = 1, p = d, centred, untied teacher), likewise in calls of 256 steps.
 * Its bound: X U_0, X V_0 (n x p x d each), X S*, K, the two final d x p
 * x n dgemms ("block"), the per-step corrections (four T x p x kT
 * dgemms and two T x p x T for step k, "corr") and the dgemm S = U V^T
 * (d x d x p) per call ("UVt"). In both factored tables "speedup" is
 * the time per step at block 1 over the time at this block.
 *
 * First of all, per d, a plain square dgemm (d x d x d) in GFLOP/s: what
 * one core's BLAS does at its best.
 *
 * Single-threaded: openblas_set_num_threads(1) is called at start (with
 * another CBLAS, run with OPENBLAS_NUM_THREADS=1 or its equivalent).
 * Times are CPU times of the process (on an idle machine its wall time),
 * so that other load on a shared machine does not count.
 * Usage: bench_sgd [SECONDS [D ...]]: SECONDS per measurement (default
 * 0.8), the dimensions D (default 400 800). Runs in about 23 x SECONDS
 * per D (longer at large D: every measurement runs at least one call). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cblas.h>

#include "config.h"
#include "sgd.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
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

/* Seconds per step of aim_sgd_advance in calls of 4 chunk steps; -1 on
 * failure. */
static double time_sgd(const aim_config *cfg, int d, long chunk, double budget)
{
    aim_sgd *s = aim_sgd_create(cfg, d, 1);
    if (!s)
        return -1.0;
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

/* Seconds per step of the BLAS calls of one block of b steps, for a
 * student with `cols` columns (d: direct S; p: tied W, untied U and V)
 * and nf factors (1, or 2 untied: the block-start product and the final
 * update once per factor). */
static double time_bound(int d, int cols, int nf, int T, int b, double budget)
{
    unsigned st = 12345u;
    int n = b * T;
    double *X = random_matrix((size_t)n * d, &st);
    double *St = random_matrix((size_t)d * d, &st);
    double *Q = random_matrix((size_t)n * d, &st);
    double *K = random_matrix((size_t)n * n, &st);
    double *S[2], *Y[2], *P[2]; /* per factor: its own matrices */
    for (int f = 0; f < nf; f++) {
        S[f] = random_matrix((size_t)d * cols, &st);
        Y[f] = random_matrix((size_t)n * cols, &st);
        P[f] = random_matrix((size_t)n * cols, &st);
    }
    long blocks = 0;
    double t0 = now(), t;
    do {
        for (int f = 0; f < nf; f++)
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, cols, d,
                        1.0, X, d, S[f], cols, 0.0, P[f], cols);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, d, d, 1.0,
                    X, d, St, d, 0.0, Q, d);
        cblas_dsyrk(CblasRowMajor, CblasLower, CblasNoTrans, n, d, 1.0, X, d,
                    0.0, K, n);
        for (int f = 0; f < nf; f++)
            cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, d, cols, n,
                        -1e-9, X, d, Y[f], cols, 1.0, S[f], cols);
        blocks++;
        t = now() - t0;
    } while (t < budget);
    for (int f = 0; f < nf; f++) {
        free(S[f]); free(Y[f]); free(P[f]);
    }
    free(X); free(St); free(Q); free(K);
    return t / ((double)blocks * b);
}

/* Tied (nf = 1) and untied (nf = 2, centred), the BLAS calls beyond
 * time_bound's, in seconds per step: t[0] the per-step corrections of
 * a block of b steps (tied: U_k += [w K]_k R, T x p x kT, and r_k = F
 * U_k, T x p x T; untied: P_k, Q_k += [w K]_k R_u,v + [z K]_k R_v,u,
 * four T x p x kT, and r_u, r_v, two T x p x T), t[1] the product S =
 * W W^T (dsyrk) or U V^T (dgemm), d x d x p, once per `per_call`
 * steps. */
static void time_factor_extra(int d, int p, int nf, int T, int b,
                              long per_call, double budget, double t[2])
{
    unsigned st = 54321u;
    const int n = b * T;
    double *R = random_matrix((size_t)n * p, &st);
    double *Kw = random_matrix((size_t)T * n, &st);
    double *U = random_matrix((size_t)T * p, &st);
    double *F = random_matrix((size_t)T * T, &st);
    double *W = random_matrix((size_t)d * p, &st);
    double *S = random_matrix((size_t)d * d, &st);
    for (int part = 0; part < 2; part++) {
        long reps = 0;
        double t0 = now(), tt;
        do {
            if (part == 1 && nf == 1)
                cblas_dsyrk(CblasRowMajor, CblasLower, CblasNoTrans, d, p, 1.0,
                            W, p, 0.0, S, d);
            else if (part == 1)
                cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, d, d, p,
                            1.0, W, p, W, p, 0.0, S, d);
            else
                for (int k = 0; k < b; k++) {
                    for (int f = 0; k > 0 && f < nf * nf; f++)
                        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans,
                                    T, p, k * T, 1e-9, Kw, k * T, R, p, 1.0,
                                    U, p);
                    for (int f = 0; f < nf; f++)
                        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans,
                                    T, p, T, 1e-9, F, T, U, p, 0.0,
                                    R + (size_t)k * T * p, p);
                }
            reps++;
            tt = now() - t0;
        } while (tt < budget);
        t[part] = tt / ((double)reps * (part == 1 ? per_call : b));
    }
    free(R); free(Kw); free(U); free(F); free(W); free(S);
}

/* GFLOP/s of a square dgemm d x d x d (2 d^3 flops). */
static double dgemm_gflops(int d, double budget)
{
    unsigned st = 777u;
    double *A = random_matrix((size_t)d * d, &st), *B = random_matrix((size_t)d * d, &st);
    double *C = random_matrix((size_t)d * d, &st);
    long calls = 0;
    double t0 = now(), t;
    do {
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, d, d, d, 1.0, A, d, B, d,
                    0.0, C, d);
        calls++;
        t = now() - t0;
    } while (t < budget);
    free(A); free(B); free(C);
    return 2.0 * d * (double)d * d * calls / t * 1e-9;
}

static void set_identity_cov(aim_config *cfg, int T)
{
    cfg->tokens = T;
    for (int a = 0; a < AIM_MAX_TOKENS * AIM_MAX_TOKENS; a++)
        cfg->cov[a] = 0.0;
    for (int a = 0; a < T; a++)
        cfg->cov[a * T + a] = 1.0;
}

int main(int argc, char **argv)
{
    double budget = argc > 1 ? atof(argv[1]) : 0.8;
    if (!(budget > 0.0))
        budget = 0.8;
    int ds[16] = {400, 800}, nd = 2;
    if (argc > 2)
        for (nd = 0; nd < argc - 2 && nd < 16; nd++)
            if ((ds[nd] = atoi(argv[nd + 2])) < 8) {
                fprintf(stderr, "bench_sgd: D = '%s'; allowed: an integer >= 8\n",
                        argv[nd + 2]);
                return 1;
            }
#ifdef AIM_HAVE_OPENBLAS_THREADS
    openblas_set_num_threads(1);
#endif

    aim_config cfg;
    aim_config_defaults(&cfg);
    int bdef = cfg.block > 1 ? cfg.block : 16;
    cfg.eta = 0.05; /* stable: the benchmark must not blow up */
    cfg.gamma = 0.0;
    cfg.blowup = 1e300;

    printf("# bench_sgd: single-threaded OpenBLAS, %.2f s of CPU time per measurement\n",
           budget);
    printf("%5s %12s\n", "d", "dgemm_GFLOPs");
    for (int i = 0; i < nd; i++) {
        printf("%5d %12.2f\n", ds[i], dgemm_gflops(ds[i], budget));
        fflush(stdout);
    }
    printf("# bound = the BLAS calls of one block (2 dgemm n x d x d, dsyrk "
           "n x n x d, dgemm d x d x n; n = block T) per step\n");
    printf("%5s %2s %6s %12s %12s %8s\n", "d", "T", "block", "us/step",
           "bound_us", "ratio");
    const int Ts[] = {2, 4};
    for (int i = 0; i < nd; i++)
        for (int j = 0; j < 2; j++)
            for (int k = 0; k < 2; k++) {
                int d = ds[i], T = Ts[j], b = k == 0 ? 1 : bdef;
                set_identity_cov(&cfg, T);
                cfg.block = b;
                double ts = time_sgd(&cfg, d, b, budget);
                double tb = time_bound(d, d, 1, T, b, budget / 2);
                if (ts < 0) {
                    printf("%5d %2d %6d %12s\n", d, T, b, "failed");
                    continue;
                }
                printf("%5d %2d %6d %12.1f %12.1f %8.2f\n", d, T, b,
                       1e6 * ts, 1e6 * tb, ts / tb);
                fflush(stdout);
            }

    /* factored students, rho = 1, centred, teacher of the same family */
    const long per_call = 256;
    cfg.centring = AIM_CENTRED;
    cfg.student.rho = 1.0;
    cfg.student.scale_v = 0.0;
    cfg.teacher.rho = 1.0;
    cfg.teacher.symmetric = 0;
    cfg.eta = 0.01; /* tied blows up from eta ~ 0.05 (He1 + He2/sqrt 2) */
    for (int nf = 1; nf <= 2; nf++) {
        cfg.decomposition = cfg.student.decomposition =
            cfg.teacher.decomposition = nf == 1 ? AIM_TIED : AIM_UNTIED;
        if (nf == 1) {
            printf("# tied student (rho = 1, p = d), aim_sgd_advance calls "
                   "of %ld steps\n", per_call);
            printf("# bound = block (X W_0, X S*, X X^T, final dgemm) + corr "
                   "(per-step dgemms) + WWt (dsyrk per call), per step\n");
        } else {
            printf("# untied student (rho = 1, p = d, centred), "
                   "aim_sgd_advance calls of %ld steps\n", per_call);
            printf("# bound = block (X U_0, X V_0, X S*, X X^T, 2 final "
                   "dgemms) + corr (per-step dgemms) + UVt (dgemm per call), "
                   "per step\n");
        }
        printf("%5s %2s %6s %12s %12s %9s %9s %9s %8s %8s\n", "d", "T",
               "block", "us/step", "bound_us", "block_us", "corr_us",
               nf == 1 ? "WWt_us" : "UVt_us", "ratio", "speedup");
        for (int i = 0; i < nd; i++)
            for (int j = 0; j < 2; j++) {
                double t1 = -1.0; /* block 1, for the speed-up */
                for (int k = 0; k < 2; k++) {
                    int d = ds[i], T = Ts[j], b = k == 0 ? 1 : bdef;
                    set_identity_cov(&cfg, T);
                    cfg.block = b;
                    double ts = time_sgd(&cfg, d, per_call / 4, budget);
                    double tb[3];
                    tb[0] = time_bound(d, d, nf, T, b, budget / 2); /* p = d */
                    time_factor_extra(d, d, nf, T, b, per_call, budget / 4,
                                      tb + 1);
                    double bound = tb[0] + tb[1] + tb[2];
                    if (ts < 0) {
                        printf("%5d %2d %6d %12s\n", d, T, b, "failed");
                        continue;
                    }
                    if (k == 0)
                        t1 = ts;
                    printf("%5d %2d %6d %12.1f %12.1f %9.1f %9.1f %9.1f %8.2f "
                           "%8.2f\n", d, T, b, 1e6 * ts, 1e6 * bound,
                           1e6 * tb[0], 1e6 * tb[1], 1e6 * tb[2], ts / bound,
                           t1 > 0 ? t1 / ts : 0.0);
                    fflush(stdout);
                }
            }
    }
    return 0;
}
