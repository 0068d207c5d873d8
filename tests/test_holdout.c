/* Unit tests of validate/holdout.c, the risk measured on held-out
 * samples (theory/measurement.md), and of its place in the SGD columns
 * (validate/compare.c):
 *  - the held-out risk and its standard error equal a brute-force
 *    evaluation on the same samples (dense x_a^T S x_b, the output maps
 *    written out here) for direct (correlated tokens, raw centring with a
 *    teacher mean, symmetric), tied (elementwise and softmax) and untied
 *    (centred, raw) students, at the start and after training;
 *  - the held-out samples: reproducible per seed, another seed another
 *    set, not the training samples, with the token covariance C; drawing
 *    and using them leaves the SGD trajectory bit for bit as it is;
 *  - compare's risk column is the held-out risk, its risk_gauss the
 *    Gaussian formula on the measured order parameters, its
 *    risk_holdout_se the held-out standard error. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"
#include "config_check.h"
#include "family.h"
#include "gauss.h"
#include "holdout.h"
#include "sgd.h"

#define MAX_ASSIGN 16
enum { D = 24, SAMPLES = 300 };

static void configure(aim_config *cfg, const char *const *assign)
{
    aim_config_error err;
    aim_config_defaults(cfg);
    for (int i = 0; i < MAX_ASSIGN && assign[i]; i++)
        if (aim_config_set(cfg, assign[i], &err))
            fail_msg("%s: %s", assign[i], err.message);
    if (aim_config_validate(cfg, &err))
        fail_msg("validate: %s", err.message);
}

/* sigma = sum_k c_k He_k by the three-term recurrence He_{k+1} = x He_k
 * - k He_{k-1} (independent of src/engine/outmap.c's GSL calls). */
static double hermite_series(const aim_config *cfg, double x)
{
    double prev = 1.0, cur = x, s = cfg->hermite[0];
    if (cfg->hermite_degree >= 1)
        s += cfg->hermite[1] * x;
    for (int k = 1; k < cfg->hermite_degree; k++) {
        double next = x * cur - k * prev;
        prev = cur;
        cur = next;
        s += cfg->hermite[k + 1] * cur;
    }
    return s;
}

/* f(h) for a T x T index matrix: elementwise Hermite series or row
 * softmax, written out plainly. */
static void output(const aim_config *cfg, const double *h, double *f)
{
    const int T = cfg->tokens;
    if (cfg->output == AIM_ELEMENTWISE) {
        for (int q = 0; q < T * T; q++)
            f[q] = hermite_series(cfg, h[q]);
        return;
    }
    for (int a = 0; a < T; a++) {
        double z = 0.0;
        for (int b = 0; b < T; b++)
            z += exp(cfg->beta * h[a * T + b]);
        for (int b = 0; b < T; b++)
            f[a * T + b] = exp(cfg->beta * h[a * T + b]) / z;
    }
}

/* Dense indices (x_a^T A x_b - c C_ab Tr A)/sqrt d of tokens x (T x d). */
static void dense_indices(const aim_config *cfg, const double *A, const double *x, double *h)
{
    const int T = cfg->tokens;
    const double c = cfg->centring == AIM_CENTRED ? 1.0 : 0.0;
    double tr = 0.0;
    for (int i = 0; i < D; i++)
        tr += A[i * D + i];
    for (int a = 0; a < T; a++)
        for (int b = 0; b < T; b++) {
            double v = 0.0;
            for (int i = 0; i < D; i++)
                for (int j = 0; j < D; j++)
                    v += x[a * D + i] * A[i * D + j] * x[b * D + j];
            h[a * T + b] = (v - c * cfg->cov[a * T + b] * tr) / sqrt((double)D);
        }
}

/* Brute force on the held-out samples of h: the mean of 1/2 sum_ab
 * (f(h_ab(S)) - f(h_ab(S*)))^2 and its standard error. */
static void brute_force(const aim_config *cfg, const aim_sgd *s, const aim_holdout *h,
                        double *risk, double *se)
{
    const int T = cfg->tokens, n = aim_holdout_samples(h);
    double *loss = malloc(sizeof *loss * (size_t)n);
    assert_non_null(loss);
    double hs[64], ht[64], fs[64], ft[64], sum = 0.0, ss = 0.0;
    for (int i = 0; i < n; i++) {
        const double *x = aim_holdout_tokens(h, i);
        dense_indices(cfg, aim_sgd_matrix(s, 0), x, hs);
        dense_indices(cfg, aim_sgd_matrix(s, 1), x, ht);
        output(cfg, hs, fs);
        output(cfg, ht, ft);
        loss[i] = 0.0;
        for (int q = 0; q < T * T; q++)
            loss[i] += 0.5 * (fs[q] - ft[q]) * (fs[q] - ft[q]);
        sum += loss[i];
    }
    *risk = sum / n;
    for (int i = 0; i < n; i++)
        ss += (loss[i] - *risk) * (loss[i] - *risk);
    *se = sqrt(ss / (n - 1) / n);
    free(loss);
}

/* The held-out risk against the brute force at the start and after
 * `steps` SGD steps (round-off: sums of d^2 products, relative 1e-11). */
static void check_brute_force(const char *name, const char *const *assign, long steps)
{
    aim_config cfg;
    configure(&cfg, assign);
    aim_sgd *s = aim_sgd_create(&cfg, D, 5);
    assert_non_null(s);
    aim_holdout *h = aim_holdout_create(s, 5, SAMPLES);
    assert_non_null(h);
    assert_int_equal(aim_holdout_samples(h), SAMPLES);
    for (int round = 0; round < 2; round++) {
        if (round == 1)
            assert_int_equal(aim_sgd_advance(s, steps), 0);
        double r, se, rb, seb;
        assert_int_equal(aim_holdout_risk(h, s, &r, &se), 0);
        brute_force(&cfg, s, h, &rb, &seb);
        print_message("  %-28s %s: held-out risk %.6g +- %.3g (brute force %.6g +- %.3g)\n",
                      name, round ? "trained" : "start  ", r, se, rb, seb);
        assert_true(rb > 0.0 && seb > 0.0);
        assert_true(fabs(r - rb) <= 1e-11 * rb);
        assert_true(fabs(se - seb) <= 1e-9 * seb);
    }
    aim_holdout_free(h);
    aim_sgd_free(s);
}

static void test_direct(void **state)
{
    (void)state;
    static const char *const corr[] = {"model.tokens=3", "model.covariance=equicorrelated:0.4",
                                       "model.hermite=0 1 0 1", "model.noise=0.3",
                                       "training.eta=0.005", NULL};
    check_brute_force("direct, correlated, He1+He3", corr, 400);
    static const char *const raw[] = {"model.centring=raw", "teacher.mean=1",
                                      "model.covariance=equicorrelated:-0.3",
                                      "training.eta=0.01", NULL};
    check_brute_force("direct, raw, teacher mean", raw, 400);
    static const char *const sym[] = {"student.symmetric=true", "teacher.symmetric=true",
                                      "model.activation=he2", "training.eta=0.02", NULL};
    check_brute_force("direct, symmetric, He2", sym, 400);
}

static void test_tied(void **state)
{
    (void)state;
    static const char *const he2[] = {"model.decomposition=tied", "teacher.decomposition=tied",
                                      "model.tokens=3", "model.activation=he2",
                                      "training.eta=0.002", "student.rho=0.5", NULL};
    check_brute_force("tied, He2, T = 3", he2, 400);
    static const char *const soft[] = {"model.decomposition=tied", "teacher.decomposition=tied",
                                       "model.output=softmax", "model.tokens=4",
                                       "model.beta=2", "training.eta=0.5", NULL};
    check_brute_force("tied, softmax, T = 4", soft, 400);
}

static void test_untied(void **state)
{
    (void)state;
    static const char *const cen[] = {"model.decomposition=untied", "model.tokens=3",
                                      "model.covariance=equicorrelated:0.3",
                                      "student.rho=0.75", "training.eta=0.05", NULL};
    check_brute_force("untied, centred", cen, 400);
    static const char *const raw[] = {"model.decomposition=untied", "model.centring=raw",
                                      "teacher.mean=1", "teacher.decomposition=untied",
                                      "model.output=softmax", "training.eta=0.05", NULL};
    check_brute_force("untied, raw, softmax", raw, 400);
}

static void test_direct_softmax(void **state)
{
    (void)state;
    static const char *const soft[] = {"model.output=softmax", "model.tokens=4",
                                       "model.covariance=equicorrelated:0.2", "training.eta=0.5",
                                       NULL};
    check_brute_force("direct, softmax, T = 4", soft, 400);
}

/* The held-out set: the same per seed, another for another seed, not
 * the training samples, with covariance C; measuring leaves SGD alone. */
static void test_samples(void **state)
{
    (void)state;
    static const char *const assign[] = {"model.tokens=3", "model.covariance=equicorrelated:0.5",
                                         "sgd.block=16", "training.eta=0.02", NULL};
    aim_config cfg;
    configure(&cfg, assign);
    const int T = cfg.tokens, n = 2000;
    aim_sgd *a = aim_sgd_create(&cfg, D, 9), *b = aim_sgd_create(&cfg, D, 9);
    aim_sgd *c = aim_sgd_create(&cfg, D, 10);
    assert_true(a && b && c);
    aim_holdout *ha = aim_holdout_create(a, 9, n), *hb = aim_holdout_create(a, 9, n);
    aim_holdout *hc = aim_holdout_create(c, 10, n);
    assert_true(ha && hb && hc);
    const size_t bytes = sizeof(double) * (size_t)T * D;
    for (int i = 0; i < n; i++)
        assert_memory_equal(aim_holdout_tokens(ha, i), aim_holdout_tokens(hb, i), bytes);
    assert_true(memcmp(aim_holdout_tokens(ha, 0), aim_holdout_tokens(hc, 0), bytes) != 0);

    /* measuring between advances changes nothing in the trajectory */
    double r, se;
    for (int k = 0; k < 3; k++) {
        assert_int_equal(aim_holdout_risk(ha, a, &r, &se), 0);
        assert_int_equal(aim_sgd_advance(a, 50), 0);
        assert_int_equal(aim_sgd_advance(b, 50), 0);
    }
    assert_memory_equal(aim_sgd_matrix(a, 0), aim_sgd_matrix(b, 0), sizeof(double) * D * D);
    /* the training samples of the last block are not held-out samples */
    double *x = malloc(sizeof *x * (size_t)cfg.block * T * D);
    assert_non_null(x);
    int steps = aim_sgd_last_samples(a, x, NULL);
    assert_true(steps > 0);
    for (int k = 0; k < steps; k++)
        for (int i = 0; i < n; i++)
            assert_true(memcmp(x + (size_t)k * T * D, aim_holdout_tokens(ha, i), bytes) != 0);
    free(x);

    /* E[x_a x_b^T] = C_ab I: the empirical C over n d coordinates, each
     * product of unit-variance Gaussians with variance 1 + C_ab^2 */
    for (int p = 0; p < T; p++)
        for (int q = 0; q < T; q++) {
            double m = 0.0;
            for (int i = 0; i < n; i++) {
                const double *xi = aim_holdout_tokens(ha, i);
                for (int j = 0; j < D; j++)
                    m += xi[p * D + j] * xi[q * D + j];
            }
            m /= (double)n * D;
            const double want = cfg.cov[p * T + q];
            const double se_c = sqrt((1.0 + want * want) / ((double)n * D));
            assert_true(fabs(m - want) <= 5.0 * se_c);
        }
    aim_holdout_free(ha);
    aim_holdout_free(hb);
    aim_holdout_free(hc);
    aim_sgd_free(a);
    aim_sgd_free(b);
    aim_sgd_free(c);
}

/* compare's columns: risk = the held-out risk of the seed at that step,
 * risk_gauss = the Gaussian formula on its order parameters,
 * risk_holdout_se = the held-out standard error; bit for bit. */
static void test_compare_columns(void **state)
{
    (void)state;
    static const char *const assign[] = {"model.tokens=3", "model.covariance=equicorrelated:0.5",
                                         "sgd.seeds=2", "sgd.holdout=500", "training.points=3",
                                         "training.eta=0.02", "training.horizon=0.01", NULL};
    aim_config cfg;
    configure(&cfg, assign);
    enum { P = 3, SEEDS = 2, X = AIM_SGD_EXTRA_COUNT };
    double tau[P] = {0.0, 0.005, 0.01};
    double obs[SEEDS * P * AIM_OBS_COUNT], extra[SEEDS * P * X];
    int reached[SEEDS];
    assert_int_equal(aim_compare_run_sgd_moments(&cfg, D, tau, P, obs, extra, reached, NULL, NULL), 0);
    aim_gauss *g = aim_gauss_create(&cfg, cfg.rule, aim_family_symmetric_pair(&cfg));
    assert_non_null(g);
    for (int s = 0; s < SEEDS; s++) {
        assert_int_equal(reached[s], P);
        const uint64_t seed = cfg.seed + (uint64_t)s;
        aim_sgd *sgd = aim_sgd_create(&cfg, D, seed);
        aim_holdout *h = aim_holdout_create(sgd, seed, cfg.holdout);
        assert_true(sgd && h);
        for (int i = 0; i < P; i++) {
            long todo = aim_sgd_steps_for(&cfg, D, tau[i]) - aim_sgd_steps(sgd);
            assert_int_equal(aim_sgd_advance(sgd, todo), 0);
            double r, se, want[AIM_OBS_COUNT];
            assert_int_equal(aim_holdout_risk(h, sgd, &r, &se), 0);
            aim_overlaps q;
            aim_sgd_overlaps(sgd, &q);
            assert_int_equal(aim_gauss_observables(g, &q, want), 0);
            const double *row = obs + ((size_t)s * P + i) * AIM_OBS_COUNT;
            const double *xrow = extra + ((size_t)s * P + i) * X;
            assert_true(row[AIM_OBS_RISK] == r);
            assert_true(xrow[AIM_SGD_RISK_HOLDOUT_SE] == se);
            assert_true(xrow[AIM_SGD_RISK_GAUSS] == want[AIM_OBS_RISK]);
            for (int k = 1; k < AIM_OBS_COUNT; k++) /* the rest: from the matrices */
                assert_true(row[k] == want[k]);
            assert_true(r != want[AIM_OBS_RISK]);
        }
        aim_holdout_free(h);
        aim_sgd_free(sgd);
    }
    aim_gauss_free(g);
    assert_string_equal(aim_sgd_extra_names[AIM_SGD_RISK_GAUSS], "risk_gauss");
    assert_string_equal(aim_sgd_extra_names[AIM_SGD_RISK_HOLDOUT_SE], "risk_holdout_se");
}

/* Fewer than 2 held-out samples has no standard error: refused. */
static void test_refusals(void **state)
{
    (void)state;
    aim_config cfg;
    aim_config_defaults(&cfg);
    aim_sgd *s = aim_sgd_create(&cfg, D, 1);
    assert_non_null(s);
    assert_null(aim_holdout_create(s, 1, 1));
    aim_sgd_free(s);
    aim_config_error err;
    assert_int_equal(aim_config_set(&cfg, "sgd.holdout=1", &err), -1);
    assert_non_null(strstr(err.message, "sgd.holdout"));
    assert_non_null(strstr(err.message, "allowed: an integer in 2..1000000"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_direct),
        cmocka_unit_test(test_direct_softmax),
        cmocka_unit_test(test_tied),
        cmocka_unit_test(test_untied),
        cmocka_unit_test(test_samples),
        cmocka_unit_test(test_compare_columns),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
