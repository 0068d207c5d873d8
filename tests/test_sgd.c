/* Unit tests of validate/sgd.c: online SGD for a direct student.
 *
 * (a) reproducibility per seed; (b) block sizes agree to round-off;
 * (c) the blocked code against a naive dense implementation of MODEL.md
 *     sec. 5 fed with the same samples (via aim_sgd_last_samples), and
 *     the token covariance; (d) initial overlaps against their large-d
 *     values; (e) blow-up detection; (f) the tied student S = W W^T: the
 *     same checks against a naive d x d implementation of its update. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "outmap.h"
#include "overlaps.h"
#include "sgd.h"

/* A fully specified configuration (nothing left to the defaults that
 * the tests depend on). */
static void base_cfg(aim_config *cfg, int T, aim_centring centring,
                     aim_output_kind output)
{
    aim_config_defaults(cfg);
    cfg->decomposition = AIM_DIRECT;
    cfg->tokens = T;
    memset(cfg->cov, 0, sizeof cfg->cov);
    for (int a = 0; a < T; a++)
        for (int b = 0; b < T; b++)
            cfg->cov[a * T + b] = a == b ? 1.0 : 0.4 / (1.0 + abs(a - b));
    cfg->centring = centring;
    cfg->output = output;
    cfg->activation = AIM_ACT_HERMITE;
    memset(cfg->hermite, 0, sizeof cfg->hermite);
    cfg->hermite[1] = 1.0;
    cfg->hermite[2] = 1.0 / sqrt(2.0);
    cfg->hermite_degree = 2;
    cfg->beta = 1.0;
    cfg->noise = 0.1;
    memset(&cfg->student, 0, sizeof cfg->student);
    memset(&cfg->teacher, 0, sizeof cfg->teacher);
    cfg->student.decomposition = AIM_DIRECT;
    cfg->student.rho = 1.0;
    cfg->student.scale = 0.5;
    cfg->teacher.decomposition = AIM_DIRECT;
    cfg->teacher.rho = 1.0;
    cfg->teacher.scale = 1.0;
    cfg->eta = 0.3;
    cfg->gamma = 0.0;
    cfg->blowup = 1e6;
    cfg->block = 1;
}

static double max_abs(const double *a, size_t n)
{
    double m = 0.0;
    for (size_t i = 0; i < n; i++)
        m = fmax(m, fabs(a[i]));
    return m;
}

static double max_abs_diff(const double *a, const double *b, size_t n)
{
    double m = 0.0;
    for (size_t i = 0; i < n; i++)
        m = fmax(m, fabs(a[i] - b[i]));
    return m;
}

/* ---------------------------------------------------------------- (a) */

/* The compared state: the factor W of a tied student, else S. */
static const double *state_of(const aim_sgd *s, size_t *n)
{
    int d = aim_sgd_dim(s), p = aim_sgd_columns(s);
    *n = (size_t)d * (p ? p : d);
    return p ? aim_sgd_factor(s) : aim_sgd_matrix(s, 0);
}

/* Seeds reproduce bit for bit (in the same partition into advance
 * calls); another seed is another teacher, start and data; clones copy
 * the state, draw the data stream of their data seed, leave the
 * original alone, and a clone of a fresh run with its own seed is that
 * run. */
static void check_reproducible(const aim_config *cfg, int d)
{
    aim_sgd *a = aim_sgd_create(cfg, d, 7), *b = aim_sgd_create(cfg, d, 7);
    aim_sgd *c = aim_sgd_create(cfg, d, 8);
    aim_sgd *f = aim_sgd_create(cfg, d, 7);
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(c);
    assert_non_null(f);
    aim_sgd *fc = aim_sgd_clone(f, 7);
    assert_non_null(fc);
    assert_int_equal(aim_sgd_dim(a), d);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(aim_sgd_advance(a, 90), 0);
        assert_int_equal(aim_sgd_advance(b, 90), 0);
        assert_int_equal(aim_sgd_advance(c, 90), 0);
        assert_int_equal(aim_sgd_advance(fc, 90), 0);
    }
    assert_int_equal(aim_sgd_steps(a), 270);
    size_t ns;
    const double *sa = state_of(a, &ns);
    aim_overlaps qa, qb, qc;
    memset(&qa, 0, sizeof qa);
    memset(&qb, 0, sizeof qb);
    memset(&qc, 0, sizeof qc);
    aim_sgd_overlaps(a, &qa);
    aim_sgd_overlaps(b, &qb);
    aim_sgd_overlaps(c, &qc);
    assert_memory_equal(&qa, &qb, sizeof qa);
    assert_memory_equal(aim_sgd_matrix(a, 0), aim_sgd_matrix(b, 0),
                        sizeof(double) * d * d);
    assert_memory_equal(sa, state_of(b, &ns), sizeof(double) * ns);
    assert_memory_equal(sa, state_of(fc, &ns), sizeof(double) * ns);
    /* another seed: another teacher, start and data */
    assert_true(qa.omega[1][1] != qc.omega[1][1]);
    assert_true(qa.omega[0][0] != qc.omega[0][0]);
    assert_true(qa.omega[0][1] != qc.omega[0][1]);

    /* clones: same matrices, fresh data stream, reproducible per data seed */
    aim_sgd *k1 = aim_sgd_clone(a, 99), *k2 = aim_sgd_clone(a, 99);
    aim_sgd *k3 = aim_sgd_clone(a, 100);
    assert_non_null(k1);
    assert_non_null(k2);
    assert_non_null(k3);
    aim_overlaps q1;
    aim_sgd_overlaps(k1, &q1);
    assert_memory_equal(&q1, &qa, sizeof qa);
    assert_int_equal(aim_sgd_columns(k1), aim_sgd_columns(a));
    assert_memory_equal(state_of(k1, &ns), sa, sizeof(double) * ns);
    assert_int_equal(aim_sgd_advance(k1, 40), 0);
    assert_int_equal(aim_sgd_advance(k2, 40), 0);
    assert_int_equal(aim_sgd_advance(k3, 40), 0);
    assert_memory_equal(aim_sgd_matrix(k1, 0), aim_sgd_matrix(k2, 0),
                        sizeof(double) * d * d);
    assert_memory_equal(state_of(k1, &ns), state_of(k2, &ns),
                        sizeof(double) * ns);
    assert_true(max_abs_diff(aim_sgd_matrix(k1, 0), aim_sgd_matrix(k3, 0),
                             (size_t)d * d) > 1e-6);
    /* the original is unaffected by its clones */
    aim_overlaps qa2;
    aim_sgd_overlaps(a, &qa2);
    assert_memory_equal(&qa2, &qa, sizeof qa);
    aim_sgd_free(k1);
    aim_sgd_free(k2);
    aim_sgd_free(k3);
    aim_sgd_free(fc);
    aim_sgd_free(f);
    aim_sgd_free(a);
    aim_sgd_free(b);
    aim_sgd_free(c);
}

static void test_reproducible(void **state)
{
    (void)state;
    aim_config cfg;
    base_cfg(&cfg, 3, AIM_CENTRED, AIM_ELEMENTWISE);
    cfg.activation = AIM_ACT_TANH;
    cfg.block = 8;
    cfg.gamma = 0.5;
    check_reproducible(&cfg, 40);
}

/* ---------------------------------------------------------------- (b) */

/* Runs `steps` steps in two chunks with the given block size. */
static aim_sgd *run_blocked(aim_config *cfg, int d, int block, long steps)
{
    cfg->block = block;
    aim_sgd *s = aim_sgd_create(cfg, d, 3);
    assert_non_null(s);
    assert_int_equal(aim_sgd_advance(s, 37), 0);
    assert_int_equal(aim_sgd_advance(s, steps - 37), 0);
    assert_int_equal(aim_sgd_steps(s), steps);
    return s;
}

/* Block sizes agree to round-off: the blocked step computes the indices
 * from Gram corrections instead of a direct product, a relative
 * difference of a few u (= 1.1e-16) times the sums' lengths (<= d + b T)
 * per step. Measured: below 1e-14 relative after 300 steps (the runs are
 * not chaotic; a tied tanh run at eta = 2, T = 4 is, and block sizes part
 * ways there from round-off growing ~10x per 25 steps); tolerance 1e-12. */
static void check_blocks(aim_config *cfg)
{
    const int d = 50;
    const long steps = 300;
    aim_sgd *ref = run_blocked(cfg, d, 1, steps);
    size_t ns;
    const double *S1 = state_of(ref, &ns);
    double scale = max_abs(S1, ns);
    aim_overlaps q1, q0;
    aim_sgd_overlaps(ref, &q1);
    /* the run must have moved S (else the corrections would be idle) */
    aim_sgd *start = aim_sgd_create(cfg, d, 3);
    assert_non_null(start);
    aim_sgd_overlaps(start, &q0);
    assert_true(fabs(q1.omega[0][0] - q0.omega[0][0]) > 1e-2);
    aim_sgd_free(start);

    const int blocks[] = {16, 64, 7, 300};
    for (size_t i = 0; i < sizeof blocks / sizeof blocks[0]; i++) {
        aim_sgd *s = run_blocked(cfg, d, blocks[i], steps);
        double diff = max_abs_diff(S1, state_of(s, &ns), ns);
        if (diff > 1e-12 * scale)
            fail_msg("block %d: max |state_block - state_1| = %g (scale %g)",
                     blocks[i], diff, scale);
        aim_overlaps q;
        aim_sgd_overlaps(s, &q);
        double tol = 1e-12 * (1.0 + q1.omega[0][0]);
        for (int a = 0; a < 2; a++) {
            assert_true(fabs(q.mean[a] - q1.mean[a]) <= tol);
            assert_true(fabs(q.trace[a] - q1.trace[a]) <= tol);
            for (int b = 0; b < 2; b++) {
                assert_true(fabs(q.omega[a][b] - q1.omega[a][b]) <= tol);
                assert_true(fabs(q.psi[a][b] - q1.psi[a][b]) <= tol);
            }
        }
        aim_sgd_free(s);
    }
    aim_sgd_free(ref);
}

static void test_blocks_centred(void **state)
{
    (void)state;
    aim_config cfg;
    base_cfg(&cfg, 3, AIM_CENTRED, AIM_ELEMENTWISE);
    cfg.activation = AIM_ACT_TANH;
    cfg.eta = 1.0;
    cfg.gamma = 2.0;
    check_blocks(&cfg);
    base_cfg(&cfg, 2, AIM_CENTRED, AIM_ELEMENTWISE); /* He1 + He2/sqrt 2 */
    cfg.eta = 0.05;
    cfg.gamma = 2.0;
    check_blocks(&cfg);
}

static void test_blocks_raw(void **state)
{
    (void)state;
    aim_config cfg;
    base_cfg(&cfg, 3, AIM_RAW, AIM_ELEMENTWISE);
    cfg.activation = AIM_ACT_TANH;
    cfg.eta = 1.0;
    cfg.gamma = 2.0;
    cfg.teacher.mean = 0.8;
    check_blocks(&cfg);
}

static void test_blocks_softmax(void **state)
{
    (void)state;
    aim_config cfg;
    base_cfg(&cfg, 3, AIM_CENTRED, AIM_SOFTMAX);
    cfg.beta = 2.0;
    cfg.gamma = 1.0;
    cfg.eta = 1.0;
    check_blocks(&cfg);
    base_cfg(&cfg, 3, AIM_RAW, AIM_SOFTMAX);
    cfg.beta = 2.0;
    cfg.gamma = 1.0;
    cfg.eta = 1.0;
    cfg.teacher.mean = 0.5;
    check_blocks(&cfg);
}

static void test_blocks_symmetric(void **state)
{
    (void)state;
    aim_config cfg;
    base_cfg(&cfg, 2, AIM_CENTRED, AIM_ELEMENTWISE);
    cfg.student.symmetric = 1;
    cfg.teacher.symmetric = 1;
    cfg.activation = AIM_ACT_ERF;
    cfg.eta = 1.0;
    cfg.gamma = 1.0;
    check_blocks(&cfg);
}

/* ---------------------------------------------------------------- (c) */

/* Naive dense gradient, MODEL.md sec. 5, of one sample X (T x d) with
 * standard label noises xi (T^2) at student S:
 * h_ab = (x_a^T S x_b - c C_ab Tr S)/sqrt d, y = f(h(S*)) + sqrt(D) xi,
 * e = J^T (f(h(S)) - y), G = sum e_ab (x_a x_b^T - c C_ab I)/sqrt d. */
static void naive_grad(const aim_config *cfg, aim_outmap *map, int d,
                       const double *S, const double *St, const double *X,
                       const double *xi, double *G)
{
    int T = cfg->tokens, T2 = T * T;
    double c = cfg->centring == AIM_CENTRED ? 1.0 : 0.0;
    double *jac = malloc(sizeof(double) * T2 * T2);
    assert_non_null(jac);
    double h[64], hs[64], f[64], ft[64], e[64];
    double trS = 0.0, trT = 0.0;
    for (int i = 0; i < d; i++) {
        trS += S[i * d + i];
        trT += St[i * d + i];
    }
    for (int a = 0; a < T; a++)
        for (int b = 0; b < T; b++) {
            double v = 0.0, w = 0.0;
            for (int i = 0; i < d; i++)
                for (int j = 0; j < d; j++) {
                    v += X[a * d + i] * S[i * d + j] * X[b * d + j];
                    w += X[a * d + i] * St[i * d + j] * X[b * d + j];
                }
            h[a * T + b] = (v - c * cfg->cov[a * T + b] * trS) / sqrt(d);
            hs[a * T + b] = (w - c * cfg->cov[a * T + b] * trT) / sqrt(d);
        }
    aim_outmap_apply(map, hs, ft, NULL);
    aim_outmap_apply(map, h, f, jac);
    for (int q = 0; q < T2; q++) {
        e[q] = 0.0;
        for (int p = 0; p < T2; p++) {
            double y = ft[p] + sqrt(cfg->noise) * xi[p];
            e[q] += jac[p * T2 + q] * (f[p] - y);
        }
    }
    double ec = 0.0;
    for (int q = 0; q < T2; q++)
        ec += e[q] * cfg->cov[q];
    for (int i = 0; i < d; i++)
        for (int j = 0; j < d; j++) {
            double v = 0.0;
            for (int a = 0; a < T; a++)
                for (int b = 0; b < T; b++)
                    v += e[a * T + b] * X[a * d + i] * X[b * d + j];
            G[i * d + j] = (v - (i == j ? c * ec : 0.0)) / sqrt(d);
        }
    free(jac);
}

/* Naive dense SGD on the given samples (x: nsteps T x d, xi: nsteps x
 * T^2): symmetric: G <- (G + G^T)/2, S <- S - (eta/d)(G + (gamma/d) S). */
static void naive_steps(const aim_config *cfg, aim_outmap *map, int d,
                        double *S, const double *St, int nsteps,
                        const double *x, const double *xi)
{
    int T = cfg->tokens, T2 = T * T;
    double *G = malloc(sizeof(double) * d * d);
    assert_non_null(G);
    for (int k = 0; k < nsteps; k++) {
        naive_grad(cfg, map, d, S, St, x + (size_t)k * T * d, xi + k * T2, G);
        if (cfg->student.symmetric)
            for (int i = 0; i < d; i++)
                for (int j = i + 1; j < d; j++) {
                    double v = 0.5 * (G[i * d + j] + G[j * d + i]);
                    G[i * d + j] = G[j * d + i] = v;
                }
        for (int i = 0; i < d * d; i++)
            S[i] -= cfg->eta / d * (G[i] + cfg->gamma / d * S[i]);
    }
    free(G);
}

static void check_naive(aim_config *cfg, int block)
{
    const int d = 12, T = cfg->tokens, blocks = 6;
    cfg->block = block;
    aim_sgd *s = aim_sgd_create(cfg, d, 11);
    aim_outmap *map = aim_outmap_create(cfg);
    assert_non_null(s);
    assert_non_null(map);
    double *S = malloc(sizeof(double) * d * d);
    double *St = malloc(sizeof(double) * d * d);
    double *x = malloc(sizeof(double) * block * T * d);
    double *xi = malloc(sizeof(double) * block * T * T);
    assert_non_null(S);
    assert_non_null(St);
    assert_non_null(x);
    assert_non_null(xi);
    memcpy(St, aim_sgd_matrix(s, 1), sizeof(double) * d * d);
    assert_int_equal(aim_sgd_last_samples(s, NULL, NULL), 0);
    for (int r = 0; r < blocks; r++) {
        memcpy(S, aim_sgd_matrix(s, 0), sizeof(double) * d * d);
        assert_int_equal(aim_sgd_advance(s, block), 0);
        assert_int_equal(aim_sgd_last_samples(s, x, xi), block);
        const double *Sb = aim_sgd_matrix(s, 0);
        double scale = max_abs(S, (size_t)d * d);
        /* the block must be a visible change ... */
        assert_true(max_abs_diff(S, Sb, (size_t)d * d) > 1e-3 * scale);
        naive_steps(cfg, map, d, S, St, block, x, xi);
        /* ... and match the naive steps to round-off */
        double diff = max_abs_diff(S, Sb, (size_t)d * d);
        memcpy(S, Sb, sizeof(double) * d * d);
        if (diff > 1e-12 * scale)
            fail_msg("block %d, round %d: max |S_naive - S_sgd| = %g "
                     "(scale %g)", block, r, diff, scale);
        assert_memory_equal(St, aim_sgd_matrix(s, 1), sizeof(double) * d * d);
    }
    /* overlaps from the matrices, recomputed here */
    aim_overlaps q;
    aim_sgd_overlaps(s, &q);
    const double *M[2] = {aim_sgd_matrix(s, 0), St};
    for (int a = 0; a < 2; a++) {
        double tr = 0.0;
        for (int i = 0; i < d; i++)
            tr += M[a][i * d + i];
        assert_true(fabs(q.trace[a] - tr / d) < 1e-13);
        double m = cfg->centring == AIM_RAW ? tr / sqrt(d) : 0.0;
        assert_true(fabs(q.mean[a] - m) < 1e-13);
        for (int b = 0; b < 2; b++) {
            double om = 0.0, ps = 0.0;
            for (int i = 0; i < d; i++)
                for (int j = 0; j < d; j++) {
                    om += M[a][i * d + j] * M[b][i * d + j];
                    ps += M[a][i * d + j] * M[b][j * d + i];
                }
            assert_true(fabs(q.omega[a][b] - om / d) < 1e-13);
            assert_true(fabs(q.psi[a][b] - ps / d) < 1e-13);
        }
    }
    free(S);
    free(St);
    free(x);
    free(xi);
    aim_outmap_free(map);
    aim_sgd_free(s);
}

static void naive_all_blocks(aim_config *cfg)
{
    check_naive(cfg, 1);
    check_naive(cfg, 4);
}

static void test_naive_centred(void **state)
{
    (void)state;
    aim_config cfg;
    base_cfg(&cfg, 3, AIM_CENTRED, AIM_ELEMENTWISE);
    cfg.activation = AIM_ACT_TANH; /* bounded errors: large steps are safe */
    cfg.eta = 2.0; /* d = 12: large steps make every term visible */
    cfg.gamma = 3.0;
    naive_all_blocks(&cfg);
    base_cfg(&cfg, 3, AIM_CENTRED, AIM_ELEMENTWISE); /* He1 + He2/sqrt 2 */
    cfg.eta = 0.05;
    cfg.gamma = 3.0;
    cfg.blowup = 1e300;
    naive_all_blocks(&cfg);
}

static void test_naive_raw(void **state)
{
    (void)state;
    aim_config cfg;
    base_cfg(&cfg, 3, AIM_RAW, AIM_ELEMENTWISE);
    cfg.activation = AIM_ACT_TANH;
    cfg.eta = 2.0;
    cfg.gamma = 3.0;
    cfg.teacher.mean = 1.0;
    naive_all_blocks(&cfg);
    cfg.student.symmetric = 1;
    naive_all_blocks(&cfg);
}

static void test_naive_softmax_symmetric(void **state)
{
    (void)state;
    aim_config cfg;
    base_cfg(&cfg, 3, AIM_CENTRED, AIM_SOFTMAX);
    cfg.eta = 2.0;
    cfg.gamma = 3.0;
    cfg.beta = 2.0;
    cfg.student.symmetric = 1;
    naive_all_blocks(&cfg);
    base_cfg(&cfg, 3, AIM_RAW, AIM_SOFTMAX);
    cfg.eta = 2.0;
    cfg.gamma = 3.0;
    cfg.beta = 2.0;
    naive_all_blocks(&cfg);
}

/* Tokens: E[x_a x_b^T] = C_ab I (X = L Z, not L^T Z). */
static void test_token_covariance(void **state)
{
    (void)state;
    aim_config cfg;
    base_cfg(&cfg, 3, AIM_CENTRED, AIM_ELEMENTWISE);
    cfg.cov[0 * 3 + 1] = cfg.cov[1 * 3 + 0] = 0.6;
    cfg.cov[0 * 3 + 2] = cfg.cov[2 * 3 + 0] = -0.3;
    cfg.cov[1 * 3 + 2] = cfg.cov[2 * 3 + 1] = 0.2;
    cfg.eta = 1e-3;
    cfg.block = 10;
    const int d = 200, T = 3, rounds = 10;
    aim_sgd *s = aim_sgd_create(&cfg, d, 5);
    assert_non_null(s);
    double *x = malloc(sizeof(double) * 10 * T * d);
    assert_non_null(x);
    double acc[9] = {0}, cross = 0.0;
    long n = 0;
    for (int r = 0; r < rounds; r++) {
        assert_int_equal(aim_sgd_advance(s, 10), 0);
        assert_int_equal(aim_sgd_last_samples(s, x, NULL), 10);
        for (int k = 0; k < 10; k++) {
            for (int i = 0; i < d; i++) {
                for (int a = 0; a < T; a++)
                    for (int b = 0; b < T; b++)
                        acc[a * T + b] += x[(k * T + a) * d + i] *
                                          x[(k * T + b) * d + i];
                /* different coordinates are uncorrelated */
                cross += x[(k * T) * d + i] * x[(k * T + 1) * d + (i + 1) % d];
            }
            n += d;
        }
    }
    /* n = 20000 pairs: standard errors <= 0.012 */
    for (int q = 0; q < 9; q++)
        if (fabs(acc[q] / n - cfg.cov[q]) > 0.05)
            fail_msg("E[x_a x_b] entry %d: %g, want %g", q, acc[q] / n,
                     cfg.cov[q]);
    assert_true(fabs(cross / n) < 0.05);
    free(x);
    aim_sgd_free(s);
}

/* ---------------------------------------------------------------- (d) */

static void near(double got, double want, double tol, const char *what)
{
    if (!(fabs(got - want) <= tol))
        fail_msg("%s: %g, want %g +- %g", what, got, want, tol);
}

static void test_initial_overlaps(void **state)
{
    (void)state;
    const int d = 400;
    const double u = 2.0 / sqrt(d); /* "a few 1/sqrt d" */
    aim_config cfg;
    aim_overlaps q;
    aim_sgd *s;

    /* general student, general direct teacher, centred */
    base_cfg(&cfg, 2, AIM_CENTRED, AIM_ELEMENTWISE);
    cfg.student.scale = 0.5;
    cfg.teacher.scale = 1.5;
    s = aim_sgd_create(&cfg, d, 21);
    assert_non_null(s);
    aim_sgd_overlaps(s, &q);
    near(q.omega[0][0], 0.5, 0.5 * u, "student Omega");
    near(q.psi[0][0], 0.0, 0.5 * u, "student Psi");
    near(q.trace[0], 0.0, 0.5 * u, "student trace");
    near(q.omega[1][1], 1.5, 1.5 * u, "direct teacher Omega");
    near(q.psi[1][1], 0.0, 1.5 * u, "direct teacher Psi");
    near(q.omega[0][1], 0.0, u, "Omega(S,S*)");
    near(q.psi[0][1], 0.0, u, "Psi(S,S*)");
    assert_true(q.omega[0][1] == q.omega[1][0] && q.psi[0][1] == q.psi[1][0]);
    assert_true(q.mean[0] == 0.0 && q.mean[1] == 0.0);
    aim_sgd_free(s);

    /* symmetric student and teacher */
    cfg.student.symmetric = 1;
    cfg.teacher.symmetric = 1;
    s = aim_sgd_create(&cfg, d, 22);
    assert_non_null(s);
    aim_sgd_overlaps(s, &q);
    near(q.omega[0][0], 0.5, 0.5 * u, "symmetric student Omega");
    near(q.psi[0][0], 0.5, 0.5 * u, "symmetric student Psi");
    near(q.omega[1][1], 1.5, 1.5 * u, "symmetric teacher Omega");
    near(q.psi[1][1], 1.5, 1.5 * u, "symmetric teacher Psi");
    const double *S = aim_sgd_matrix(s, 0);
    double diag2 = 0.0;
    for (int i = 0; i < d; i++) {
        diag2 += S[i * d + i] * S[i * d + i];
        for (int j = 0; j < i; j++)
            assert_true(S[i * d + j] == S[j * d + i]);
    }
    /* (A + A^T)/sqrt 2: diagonal entries N(0, 2 v/d) (mean of d squares,
     * relative standard error sqrt(2/d) = 0.07) */
    near(diag2 / d, 2.0 * 0.5 / d, 0.25 * 2.0 * 0.5 / d,
         "symmetric student diagonal variance");
    aim_sgd_free(s);

    /* tied teacher, rho* = 0.5, v* = 1.2 */
    base_cfg(&cfg, 2, AIM_CENTRED, AIM_ELEMENTWISE);
    cfg.teacher.decomposition = AIM_TIED;
    cfg.teacher.rho = 0.5;
    cfg.teacher.scale = 1.2;
    s = aim_sgd_create(&cfg, d, 23);
    assert_non_null(s);
    aim_sgd_overlaps(s, &q);
    near(q.trace[1], 0.5 * 1.2, 0.6 * u, "tied teacher trace");
    near(q.omega[1][1], 1.44 * 0.5 * 1.5, 1.08 * u, "tied teacher Omega");
    near(q.psi[1][1], q.omega[1][1], 1e-12, "tied teacher Psi");
    aim_sgd_free(s);

    /* untied teacher: Omega = rho v^2, Psi ~ 0 */
    cfg.teacher.decomposition = AIM_UNTIED;
    s = aim_sgd_create(&cfg, d, 24);
    assert_non_null(s);
    aim_sgd_overlaps(s, &q);
    near(q.omega[1][1], 0.5 * 1.44, 0.72 * u, "untied teacher Omega");
    near(q.psi[1][1], 0.0, 0.72 * u, "untied teacher Psi");
    near(q.trace[1], 0.0, 0.72 * u, "untied teacher trace");
    aim_sgd_free(s);

    /* raw centring: teacher mean m_t enters as (m_t / sqrt d) I */
    base_cfg(&cfg, 2, AIM_RAW, AIM_ELEMENTWISE);
    cfg.teacher.mean = 0.7;
    cfg.teacher.scale = 1.0;
    s = aim_sgd_create(&cfg, d, 25);
    assert_non_null(s);
    aim_sgd_overlaps(s, &q);
    /* Tr of the random part ~ N(0, v): mean within 3 sqrt(v/d) */
    near(q.mean[1], 0.7, 3.0 / sqrt(d), "raw teacher mean");
    near(q.mean[0], 0.0, 3.0 * sqrt(0.5 / d), "raw student mean");
    near(q.trace[1] * sqrt(d), q.mean[1], 1e-12, "mean = sqrt(d) trace");
    near(q.omega[1][1], 1.0, u, "raw teacher Omega");
    aim_sgd_free(s);
}

/* ---------------------------------------------------------------- (e) */

/* Returns the steps done before the blow-up. Tied: the checked
 * quantity is Tr S/d, and a blow-up decided by one unlucky sample need
 * not recur on the next samples, so "stays blown up" is direct only. */
static long check_blowup(aim_config *cfg)
{
    const int d = 30;
    aim_sgd *s = aim_sgd_create(cfg, d, 4);
    assert_non_null(s);
    assert_int_equal(aim_sgd_advance(s, 100000), 1);
    long n = aim_sgd_steps(s);
    assert_true(n < 100000);
    assert_true(n % cfg->block == 0);
    aim_overlaps q;
    aim_sgd_overlaps(s, &q);
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++) {
            assert_true(isfinite(q.omega[a][b]));
            assert_true(isfinite(q.psi[a][b]));
        }
    const int tied = aim_sgd_columns(s) > 0;
    assert_true((tied ? q.trace[0] : q.omega[0][0]) <= cfg->blowup);
    size_t ns;
    const double *S = aim_sgd_matrix(s, 0), *state = state_of(s, &ns);
    for (int i = 0; i < d * d; i++)
        assert_true(isfinite(S[i]));
    for (size_t i = 0; i < ns; i++)
        assert_true(isfinite(state[i]));
    /* the state is exactly the end of the last finite block */
    aim_sgd *r = aim_sgd_create(cfg, d, 4);
    assert_non_null(r);
    assert_int_equal(aim_sgd_advance(r, n), 0);
    assert_memory_equal(aim_sgd_matrix(r, 0), S, sizeof(double) * d * d);
    assert_memory_equal(state_of(r, &ns), state, sizeof(double) * ns);
    /* and it stays blown up */
    if (!tied)
        assert_int_equal(aim_sgd_advance(s, 100000), 1);
    aim_sgd_free(r);
    aim_sgd_free(s);
    return n;
}

static void test_blowup(void **state)
{
    (void)state;
    aim_config cfg;
    base_cfg(&cfg, 2, AIM_CENTRED, AIM_ELEMENTWISE);
    cfg.eta = 20.0;
    cfg.block = 4;
    cfg.blowup = 50.0; /* threshold on Omega(S,S) */
    check_blowup(&cfg);
    cfg.blowup = 1e300; /* only non-finite values can trigger */
    check_blowup(&cfg);
    base_cfg(&cfg, 2, AIM_RAW, AIM_ELEMENTWISE);
    cfg.eta = 20.0;
    cfg.block = 1;
    cfg.blowup = 50.0;
    check_blowup(&cfg);

    /* a blow-up inside a long block is caught before the indices reach
     * the output map (He_8 of a huge index overflows) */
    base_cfg(&cfg, 2, AIM_CENTRED, AIM_ELEMENTWISE);
    memset(cfg.hermite, 0, sizeof cfg.hermite);
    cfg.hermite[8] = 1.0 / sqrt(40320.0);
    cfg.hermite_degree = 8;
    cfg.eta = 1e3;
    cfg.block = 64;
    cfg.blowup = 1e4;
    check_blowup(&cfg);

    /* a stable run does not report a blow-up */
    base_cfg(&cfg, 2, AIM_CENTRED, AIM_ELEMENTWISE);
    cfg.eta = 0.02;
    cfg.blowup = 10.0;
    cfg.block = 16;
    aim_sgd *s = aim_sgd_create(&cfg, 30, 4);
    assert_non_null(s);
    assert_int_equal(aim_sgd_advance(s, 2000), 0);
    assert_int_equal(aim_sgd_steps(s), 2000);
    aim_sgd_free(s);
}

/* The blow-up check predicts ||S||_F^2 and Tr S at the end of a block
 * from T x T blocks (no copy of S): it must be exact, so a threshold a
 * relative 1e-9 below or above the true max(Omega(S,S), |mean|) after a
 * block decides. */
static double omega_after(aim_config *cfg, int d, long steps)
{
    aim_sgd *s = aim_sgd_create(cfg, d, 9);
    assert_non_null(s);
    assert_int_equal(aim_sgd_advance(s, steps), 0);
    aim_overlaps q;
    aim_sgd_overlaps(s, &q);
    aim_sgd_free(s);
    return fmax(q.omega[0][0], fabs(q.mean[0]));
}

static void check_threshold(aim_config *cfg)
{
    const int d = 30, b = cfg->block;
    cfg->blowup = 1e300;
    double w1 = omega_after(cfg, d, b), w2 = omega_after(cfg, d, 2 * b);
    /* first block */
    cfg->blowup = w1 * (1.0 - 1e-9);
    aim_sgd *s = aim_sgd_create(cfg, d, 9);
    assert_non_null(s);
    assert_int_equal(aim_sgd_advance(s, b), 1);
    assert_int_equal(aim_sgd_steps(s), 0);
    aim_sgd_free(s);
    cfg->blowup = w1 * (1.0 + 1e-9);
    s = aim_sgd_create(cfg, d, 9);
    assert_non_null(s);
    assert_int_equal(aim_sgd_advance(s, b), 0);
    aim_sgd_free(s);
    /* second block, in the same call (norm carried from block 1) and in
     * a second call */
    assert_true(w2 > w1 * (1.0 + 1e-6)); /* Omega grows in block 2 */
    cfg->blowup = w2 * (1.0 - 1e-9);
    s = aim_sgd_create(cfg, d, 9);
    assert_non_null(s);
    assert_int_equal(aim_sgd_advance(s, 2 * b), 1);
    assert_int_equal(aim_sgd_steps(s), b);
    aim_sgd_free(s);
    s = aim_sgd_create(cfg, d, 9);
    assert_non_null(s);
    assert_int_equal(aim_sgd_advance(s, b), 0);
    assert_int_equal(aim_sgd_advance(s, b), 1);
    assert_int_equal(aim_sgd_steps(s), b);
    aim_sgd_free(s);
    cfg->blowup = w2 * (1.0 + 1e-9);
    s = aim_sgd_create(cfg, d, 9);
    assert_non_null(s);
    assert_int_equal(aim_sgd_advance(s, 2 * b), 0);
    aim_sgd_free(s);
}

static void test_blowup_threshold(void **state)
{
    (void)state;
    aim_config cfg;
    base_cfg(&cfg, 3, AIM_CENTRED, AIM_ELEMENTWISE);
    cfg.activation = AIM_ACT_TANH;
    cfg.eta = 3.0;
    cfg.gamma = 1.0;
    cfg.block = 8;
    cfg.student.scale = 0.05; /* Omega(S,S) grows from a small start */
    check_threshold(&cfg);
    base_cfg(&cfg, 2, AIM_RAW, AIM_SOFTMAX);
    cfg.eta = 3.0;
    cfg.gamma = 1.0;
    cfg.block = 5;
    cfg.student.symmetric = 1;
    cfg.student.scale = 0.05;
    check_threshold(&cfg);
    /* raw, the mean is the largest order parameter */
    base_cfg(&cfg, 2, AIM_RAW, AIM_ELEMENTWISE);
    cfg.hermite[2] = 0.0;
    cfg.hermite_degree = 1; /* sigma = He1 */
    cfg.eta = 0.5;
    cfg.block = 4;
    cfg.student.scale = 0.05;
    cfg.teacher.mean = 3.0;
    check_threshold(&cfg);
    cfg.blowup = 1e300;
    aim_sgd *s = aim_sgd_create(&cfg, 30, 9);
    assert_non_null(s);
    assert_int_equal(aim_sgd_advance(s, 8), 0);
    aim_overlaps q;
    aim_sgd_overlaps(s, &q);
    assert_true(fabs(q.mean[0]) > q.omega[0][0]);
    aim_sgd_free(s);
}

/* ------------------------------------------------------- (f) tied */

/* A tied student (S = W W^T, centred; MODEL.md sec. 4) with a tied
 * teacher, set field by field (not through aim_config_validate, which
 * would also resolve model.covariance over the cov set here). */
static void tied_cfg(aim_config *cfg, int T, aim_output_kind output)
{
    base_cfg(cfg, T, AIM_CENTRED, output);
    cfg->decomposition = AIM_TIED;
    cfg->student.decomposition = AIM_TIED;
    cfg->student.rho = 0.75; /* p != d */
    cfg->student.scale = 0.5;
    cfg->teacher.decomposition = AIM_TIED;
    cfg->teacher.rho = 0.5;
    cfg->teacher.scale = 1.0;
}

/* max |S - W W^T| with W W^T summed naively; S exactly symmetric. */
static double outer_error(const double *S, const double *W, int d, int p)
{
    double m = 0.0;
    for (int i = 0; i < d; i++)
        for (int j = 0; j < d; j++) {
            double v = 0.0;
            for (int k = 0; k < p; k++)
                v += W[i * p + k] * W[j * p + k];
            m = fmax(m, fabs(S[i * d + j] - v));
            if (S[i * d + j] != S[j * d + i])
                return INFINITY;
        }
    return m;
}

static double sumsq(const double *a, size_t n)
{
    double t = 0.0;
    for (size_t i = 0; i < n; i++)
        t += a[i] * a[i];
    return t;
}

/* Naive tied SGD, MODEL.md sec. 5, on the given samples:
 * S = W W^T, G as for a direct student (naive_grad),
 * W <- W - (eta/d) ((G + G^T) W + (gamma/d) W), all d x d. */
static void naive_tied_steps(const aim_config *cfg, aim_outmap *map, int d,
                             int p, double *W, const double *St, int nsteps,
                             const double *x, const double *xi)
{
    int T = cfg->tokens, T2 = T * T;
    double *S = malloc(sizeof(double) * d * d);
    double *G = malloc(sizeof(double) * d * d);
    double *Wn = malloc(sizeof(double) * d * p);
    assert_non_null(S);
    assert_non_null(G);
    assert_non_null(Wn);
    for (int k = 0; k < nsteps; k++) {
        for (int i = 0; i < d; i++)
            for (int j = 0; j < d; j++) {
                double v = 0.0;
                for (int l = 0; l < p; l++)
                    v += W[i * p + l] * W[j * p + l];
                S[i * d + j] = v;
            }
        naive_grad(cfg, map, d, S, St, x + (size_t)k * T * d, xi + k * T2, G);
        for (int i = 0; i < d; i++)
            for (int l = 0; l < p; l++) {
                double v = 0.0;
                for (int j = 0; j < d; j++)
                    v += (G[i * d + j] + G[j * d + i]) * W[j * p + l];
                Wn[i * p + l] = W[i * p + l] -
                                cfg->eta / d * (v + cfg->gamma / d * W[i * p + l]);
            }
        memcpy(W, Wn, sizeof(double) * d * p);
    }
    free(S);
    free(G);
    free(Wn);
}

/* The blocked tied code against the naive steps, block by block (block
 * = 1: single steps), fed with the same samples. Tolerance 1e-12
 * relative: both sides are the same arithmetic in another order, sums
 * of at most d^2 T^2 = 2e3 terms per step over a few steps, so the
 * round-off is of order 1e3 u = 1e-13 (u = 2^-53). */
static void check_tied_naive(aim_config *cfg, int block, int rounds)
{
    const int d = 12, T = cfg->tokens;
    cfg->block = block;
    aim_sgd *s = aim_sgd_create(cfg, d, 11);
    aim_outmap *map = aim_outmap_create(cfg);
    assert_non_null(s);
    assert_non_null(map);
    const int p = aim_sgd_columns(s);
    assert_int_equal(p, aim_config_columns(&cfg->student, d));
    double *W = malloc(sizeof(double) * d * p);
    double *St = malloc(sizeof(double) * d * d);
    double *x = malloc(sizeof(double) * block * T * d);
    double *xi = malloc(sizeof(double) * block * T * T);
    assert_non_null(W);
    assert_non_null(St);
    assert_non_null(x);
    assert_non_null(xi);
    memcpy(St, aim_sgd_matrix(s, 1), sizeof(double) * d * d);
    for (int r = 0; r < rounds; r++) {
        memcpy(W, aim_sgd_factor(s), sizeof(double) * d * p);
        assert_int_equal(aim_sgd_advance(s, block), 0);
        assert_int_equal(aim_sgd_last_samples(s, x, xi), block);
        const double *Wb = aim_sgd_factor(s);
        double scale = max_abs(W, (size_t)d * p);
        assert_true(max_abs_diff(W, Wb, (size_t)d * p) > 1e-3 * scale);
        naive_tied_steps(cfg, map, d, p, W, St, block, x, xi);
        double diff = max_abs_diff(W, Wb, (size_t)d * p);
        if (diff > 1e-12 * scale)
            fail_msg("tied block %d, round %d: max |W_naive - W_sgd| = %g "
                     "(scale %g)", block, r, diff, scale);
        /* S = W W^T stored after the advance */
        const double *S = aim_sgd_matrix(s, 0);
        double err = outer_error(S, Wb, d, p);
        if (!(err <= 1e-13 * max_abs(S, (size_t)d * d)))
            fail_msg("tied: max |S - W W^T| = %g", err);
        assert_memory_equal(St, aim_sgd_matrix(s, 1), sizeof(double) * d * d);
    }
    /* overlaps from S = W W^T; Tr S = ||W||^2 */
    aim_overlaps q;
    aim_sgd_overlaps(s, &q);
    const double *S = aim_sgd_matrix(s, 0);
    near(q.trace[0], sumsq(aim_sgd_factor(s), (size_t)d * p) / d, 1e-13,
         "tied Tr S/d");
    assert_true(q.mean[0] == 0.0 && q.mean[1] == 0.0);
    const double *M[2] = {S, St};
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++) {
            double om = 0.0, ps = 0.0;
            for (int i = 0; i < d; i++)
                for (int j = 0; j < d; j++) {
                    om += M[a][i * d + j] * M[b][i * d + j];
                    ps += M[a][i * d + j] * M[b][j * d + i];
                }
            near(q.omega[a][b], om / d, 1e-13 * (1.0 + om / d), "tied Omega");
            near(q.psi[a][b], ps / d, 1e-13 * (1.0 + ps / d), "tied Psi");
        }
    free(W);
    free(St);
    free(x);
    free(xi);
    aim_outmap_free(map);
    aim_sgd_free(s);
}

static void tied_naive_all(aim_config *cfg)
{
    check_tied_naive(cfg, 1, 1); /* one step */
    check_tied_naive(cfg, 1, 4); /* a few plain steps */
    check_tied_naive(cfg, 5, 3); /* blocks */
}

static void test_tied_naive(void **state)
{
    (void)state;
    aim_config cfg;
    /* He1 + He2/sqrt 2: the noise-driven blow-up (MODEL.md sec. 7b)
     * comes early for a tied student at small d (at d = 12 already for
     * eta = 0.5), so a small step here; the bounded maps take large ones
     * that make every term visible */
    tied_cfg(&cfg, 2, AIM_ELEMENTWISE);
    cfg.eta = 0.05;
    cfg.gamma = 3.0;
    tied_naive_all(&cfg);
    tied_cfg(&cfg, 3, AIM_ELEMENTWISE);
    cfg.activation = AIM_ACT_TANH;
    cfg.eta = 2.0;
    cfg.gamma = 3.0;
    cfg.student.rho = 1.5; /* p > d */
    cfg.teacher.decomposition = AIM_DIRECT; /* any teacher family */
    cfg.teacher.symmetric = 1;
    tied_naive_all(&cfg);
    tied_cfg(&cfg, 4, AIM_SOFTMAX);
    cfg.beta = 2.0;
    cfg.eta = 2.0;
    cfg.gamma = 1.0;
    tied_naive_all(&cfg);
}

static void test_tied_blocks(void **state)
{
    (void)state;
    aim_config cfg;
    tied_cfg(&cfg, 2, AIM_ELEMENTWISE); /* He1 + He2/sqrt 2 */
    cfg.eta = 0.02; /* blows up from eta ~ 0.03 at d = 40 */
    cfg.gamma = 2.0;
    check_blocks(&cfg);
    tied_cfg(&cfg, 4, AIM_ELEMENTWISE);
    cfg.activation = AIM_ACT_TANH;
    cfg.eta = 1.0; /* not 2: chaotic (see check_blocks) */
    cfg.gamma = 1.0;
    check_blocks(&cfg);
    tied_cfg(&cfg, 4, AIM_SOFTMAX);
    cfg.beta = 2.0;
    cfg.eta = 2.0;
    cfg.gamma = 1.0;
    cfg.student.rho = 1.0;
    check_blocks(&cfg);
}

static void test_tied_reproducible(void **state)
{
    (void)state;
    aim_config cfg;
    tied_cfg(&cfg, 3, AIM_ELEMENTWISE);
    cfg.activation = AIM_ACT_TANH;
    cfg.eta = 1.0;
    cfg.gamma = 0.5;
    cfg.block = 8;
    const int d = 30;
    aim_sgd *a = aim_sgd_create(&cfg, d, 7);
    assert_non_null(a);
    const int p = aim_sgd_columns(a);
    assert_int_equal(p, 23); /* round(0.75 x 30) */
    /* at creation: S = W W^T, Tr S/d ~ rho v */
    assert_true(outer_error(aim_sgd_matrix(a, 0), aim_sgd_factor(a), d, p) <=
                1e-14);
    aim_overlaps q;
    aim_sgd_overlaps(a, &q);
    near(q.trace[0], 0.75 * 0.5, 0.1, "tied initial Tr S/d");
    aim_sgd_free(a);
    check_reproducible(&cfg, d);
}

/* The data stream does not depend on the block size: 32 steps drawn in
 * blocks of 16 and one at a time are the same tokens and noises. */
static void test_tied_stream(void **state)
{
    (void)state;
    aim_config cfg;
    tied_cfg(&cfg, 4, AIM_ELEMENTWISE);
    cfg.eta = 0.01;
    const int d = 20, T = 4, n = 32;
    double *x16 = malloc(sizeof(double) * n * T * d);
    double *x1 = malloc(sizeof(double) * n * T * d);
    double xi16[32 * 16], xi1[32 * 16];
    assert_non_null(x16);
    assert_non_null(x1);
    cfg.block = 16;
    aim_sgd *s = aim_sgd_create(&cfg, d, 5);
    assert_non_null(s);
    for (int r = 0; r < 2; r++) {
        assert_int_equal(aim_sgd_advance(s, 16), 0);
        assert_int_equal(aim_sgd_last_samples(s, x16 + (size_t)r * 16 * T * d,
                                              xi16 + r * 16 * T * T), 16);
    }
    aim_sgd_free(s);
    cfg.block = 1;
    s = aim_sgd_create(&cfg, d, 5);
    assert_non_null(s);
    for (int k = 0; k < n; k++) {
        assert_int_equal(aim_sgd_advance(s, 1), 0);
        assert_int_equal(aim_sgd_last_samples(s, x1 + (size_t)k * T * d,
                                              xi1 + k * T * T), 1);
    }
    aim_sgd_free(s);
    assert_memory_equal(x16, x1, sizeof(double) * n * T * d);
    assert_memory_equal(xi16, xi1, sizeof xi1);
    free(x16);
    free(x1);
}

static void test_tied_blowup(void **state)
{
    (void)state;
    aim_config cfg;
    tied_cfg(&cfg, 2, AIM_ELEMENTWISE);
    cfg.eta = 0.05; /* d = 30: blows up after ~160 steps */
    cfg.blowup = 5.0; /* threshold on Tr S/d (starts at rho v = 0.375) */
    cfg.block = 1;
    long n1 = check_blowup(&cfg);
    assert_true(n1 > 20);
    /* Tr S is checked at every step: the blocked run stops at the start
     * of the block holding the same step */
    cfg.block = 4;
    assert_int_equal(check_blowup(&cfg), n1 / 4 * 4);
    tied_cfg(&cfg, 4, AIM_SOFTMAX);
    cfg.eta = 30.0;
    cfg.blowup = 50.0;
    cfg.block = 16;
    check_blowup(&cfg);
    /* a blow-up inside a long block is caught before the indices reach
     * the output map (He_8 of a huge index overflows) */
    tied_cfg(&cfg, 2, AIM_ELEMENTWISE);
    memset(cfg.hermite, 0, sizeof cfg.hermite);
    cfg.hermite[8] = 1.0 / sqrt(40320.0);
    cfg.hermite_degree = 8;
    cfg.eta = 1e3;
    cfg.block = 64;
    cfg.blowup = 1e4;
    check_blowup(&cfg);
    /* a stable run does not report a blow-up */
    tied_cfg(&cfg, 2, AIM_ELEMENTWISE);
    cfg.eta = 0.005;
    cfg.blowup = 10.0;
    cfg.block = 16;
    aim_sgd *s = aim_sgd_create(&cfg, 30, 4);
    assert_non_null(s);
    assert_int_equal(aim_sgd_advance(s, 2000), 0);
    assert_int_equal(aim_sgd_steps(s), 2000);
    aim_sgd_free(s);
}

/* Tr S is checked exactly at every step, whatever the block size: a
 * threshold a relative 1e-9 below or above the largest Tr S_k/d of the
 * first block (k = 0 .. b, measured with plain steps) decides. */
static void test_tied_threshold(void **state)
{
    (void)state;
    aim_config cfg;
    tied_cfg(&cfg, 3, AIM_ELEMENTWISE);
    cfg.activation = AIM_ACT_TANH;
    cfg.eta = 3.0;
    cfg.gamma = 0.5;
    cfg.student.scale = 0.05;
    cfg.teacher.scale = 2.0; /* Tr S grows towards the teacher's */
    cfg.blowup = 1e300;
    const int d = 30, b = 8;
    cfg.block = 1;
    aim_sgd *s = aim_sgd_create(&cfg, d, 9);
    assert_non_null(s);
    const int p = aim_sgd_columns(s);
    double m1 = sumsq(aim_sgd_factor(s), (size_t)d * p) / d, m2 = m1;
    for (int k = 1; k <= 2 * b; k++) {
        assert_int_equal(aim_sgd_advance(s, 1), 0);
        double t = sumsq(aim_sgd_factor(s), (size_t)d * p) / d;
        if (k <= b)
            m1 = fmax(m1, t);
        m2 = fmax(m2, t);
    }
    aim_sgd_free(s);
    assert_true(m2 > m1 * (1.0 + 1e-6));
    cfg.block = b;
    const double th[4] = {m1 * (1.0 - 1e-9), m1 * (1.0 + 1e-9),
                          m2 * (1.0 - 1e-9), m2 * (1.0 + 1e-9)};
    const int rc[4] = {1, 0, 1, 0};
    const long done[4] = {0, 2 * b, b, 2 * b};
    for (int i = 0; i < 4; i++) {
        cfg.blowup = th[i];
        s = aim_sgd_create(&cfg, d, 9);
        assert_non_null(s);
        assert_int_equal(aim_sgd_advance(s, i < 2 ? b : 2 * b), rc[i]);
        if (i == 1)
            assert_int_equal(aim_sgd_advance(s, b), 1); /* m2 > m1 */
        else
            assert_int_equal(aim_sgd_steps(s), done[i]);
        aim_sgd_free(s);
    }
}

/* ---------------------------------------------------------------- misc */

static void test_refusals(void **state)
{
    (void)state;
    aim_config cfg;
    base_cfg(&cfg, 2, AIM_CENTRED, AIM_ELEMENTWISE);
    aim_sgd *s = aim_sgd_create(&cfg, 20, 1);
    assert_non_null(s); /* direct: no factor */
    assert_null(aim_sgd_factor(s));
    assert_int_equal(aim_sgd_columns(s), 0);
    aim_sgd_free(s);
    cfg.student.decomposition = AIM_TIED; /* student and model disagree */
    assert_null(aim_sgd_create(&cfg, 20, 1));
    base_cfg(&cfg, 2, AIM_RAW, AIM_ELEMENTWISE);
    cfg.student.decomposition = AIM_TIED; /* tied needs centred indices */
    cfg.decomposition = AIM_TIED;
    assert_null(aim_sgd_create(&cfg, 20, 1));
    cfg.student.decomposition = AIM_UNTIED;
    cfg.decomposition = AIM_UNTIED;
    assert_null(aim_sgd_create(&cfg, 20, 1));
    base_cfg(&cfg, 2, AIM_CENTRED, AIM_ELEMENTWISE);
    cfg.cov[1] = cfg.cov[2] = 1.5; /* not positive definite */
    assert_null(aim_sgd_create(&cfg, 20, 1));
}

static void test_steps_for(void **state)
{
    (void)state;
    aim_config cfg;
    base_cfg(&cfg, 2, AIM_CENTRED, AIM_ELEMENTWISE);
    cfg.eta = 0.3;
    assert_int_equal(aim_sgd_steps_for(&cfg, 400, 0.5), 266667);
    assert_int_equal(aim_sgd_steps_for(&cfg, 100, 0.0), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reproducible),
        cmocka_unit_test(test_blocks_centred),
        cmocka_unit_test(test_blocks_raw),
        cmocka_unit_test(test_blocks_softmax),
        cmocka_unit_test(test_blocks_symmetric),
        cmocka_unit_test(test_naive_centred),
        cmocka_unit_test(test_naive_raw),
        cmocka_unit_test(test_naive_softmax_symmetric),
        cmocka_unit_test(test_token_covariance),
        cmocka_unit_test(test_initial_overlaps),
        cmocka_unit_test(test_blowup),
        cmocka_unit_test(test_blowup_threshold),
        cmocka_unit_test(test_tied_naive),
        cmocka_unit_test(test_tied_blocks),
        cmocka_unit_test(test_tied_reproducible),
        cmocka_unit_test(test_tied_stream),
        cmocka_unit_test(test_tied_blowup),
        cmocka_unit_test(test_tied_threshold),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_steps_for),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
