/* Short-horizon drift tests of the untied hierarchy's rules (MODEL.md
 * sec. 9, theory/untied.md sec. 7): from a state of online SGD at finite
 * d, independent continuations over a short delta tau measure the rate of
 * change of every tracked moment m(w) = Tr(w)/d (words in A = U U^T,
 * B = V V^T, K = U V^T, k = V U^T, the teacher T and its transpose t, up
 * to length M); the generated right-hand side is evaluated at the moments
 * *measured* on the same matrices, including the words of length M + 1,
 * so that the rules are tested apart from any closure. In raw centring
 * the slot of K is the index mean Tr S/sqrt d and the stiff finite-d
 * system is under test, lambda = sqrt(d) E[sum e C] included.
 *
 * The rate is compared with the trapezoid of the right-hand side at the
 * start and at the mean end state. Tolerance: 4 standard errors of the
 * measured rate, plus the finite-size bias. For tied attention the
 * leading bias is of order 1/sqrt d, not 1/d: the second-order terms
 * E Tr(G A G B)/d = K m(A) m(B) + O(d^-1/2) have a correction
 * m(B) E[sum e e' C h(A)]/sqrt d from the fluctuation of x^T A x around
 * Tr A, which is of order one here because Tr S/d is (theory/tied.md
 * sec. 7); the allowance is 4/sqrt d of the noise term and 4/d of the
 * first-order and decay terms. Each case makes a different term large:
 * gradient (He1 at the start, a trained state where student and teacher
 * are correlated), noise (a larger eta), weight decay and label noise,
 * and the raw mean with a teacher mean after the fast phase. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>

#include "compare.h"
#include "sgd.h"
#include "untied.h"
#include "words.h"

#define REPS 12
#define ORDER 3

typedef struct {
    const char *label;
    int d;
    double tau0; /* training before the measured window */
    double dtau; /* the window */
    int reps;    /* continuations; 0: REPS */
} drift_case;

/* All moments of the hierarchy's word set (lengths 0..ORDER + 1). */
static void measure(const aim_sgd *s, const aim_wordset *ws, double *mom)
{
    assert_int_equal(aim_compare_measure_words(s, ws, aim_wordset_max_len(ws), mom), 0);
}

/* The state variable of equation i: the moment, or in the raw stiff
 * system the mean sqrt(d) m(K) for the slot of K. */
static double state_of(aim_untied *m, const double *mom, int i, int d)
{
    const int w = aim_hierarchy_tracked(aim_untied_hierarchy(m), i);
    const int raw = strcmp(aim_untied_state_name(m, i), "mean") == 0;
    return raw ? sqrt((double)d) * mom[w] : mom[w];
}

static void run_case(const aim_config *cfg, const drift_case *dc)
{
    char err[256];
    aim_untied *m = aim_untied_create(cfg, dc->d, AIM_RULE_AUTO, err, sizeof err);
    if (!m)
        fail_msg("%s", err);
    const aim_hierarchy *h = aim_untied_hierarchy(m);
    const aim_wordset *ws = aim_hierarchy_words(h);
    const int count = aim_wordset_count(ws), n = aim_hierarchy_size(h);
    double *m0 = calloc((size_t)count, sizeof *m0), *m1 = calloc((size_t)count, sizeof *m1);
    double *mend = calloc((size_t)count, sizeof *mend);
    double *rate = calloc((size_t)n, sizeof *rate), *rate2 = calloc((size_t)n, sizeof *rate2);
    double *t0 = calloc(6 * (size_t)n, sizeof *t0), *t1 = t0 + 3 * n;
    assert_true(m0 && m1 && mend && rate && rate2 && t0);

    aim_sgd *base = aim_sgd_create(cfg, dc->d, cfg->seed);
    assert_non_null(base);
    assert_int_equal(aim_sgd_advance(base, aim_sgd_steps_for(cfg, dc->d, dc->tau0)), 0);
    const long steps = aim_sgd_steps_for(cfg, dc->d, dc->dtau);
    const double dtau = steps * cfg->eta / ((double)dc->d * dc->d);
    measure(base, ws, m0);
    const int reps = dc->reps ? dc->reps : REPS;
    for (int r = 0; r < reps; r++) {
        aim_sgd *c = aim_sgd_clone(base, 1000 + (uint64_t)r);
        assert_non_null(c);
        assert_int_equal(aim_sgd_advance(c, steps), 0);
        measure(c, ws, m1);
        for (int i = 0; i < n; i++) {
            double v = (state_of(m, m1, i, dc->d) - state_of(m, m0, i, dc->d)) / dtau;
            rate[i] += v / reps;
            rate2[i] += v * v / reps;
        }
        for (int w = 0; w < count; w++)
            mend[w] += m1[w] / reps;
        aim_sgd_free(c);
    }
    const double sqd = sqrt((double)dc->d);
    const int wk = aim_wordset_find(ws, "K");
    assert_int_equal(aim_untied_terms_at(m, m0, sqd * m0[wk], t0, t0 + n, t0 + 2 * n), 0);
    assert_int_equal(aim_untied_terms_at(m, mend, sqd * mend[wk], t1, t1 + n, t1 + 2 * n), 0);
    print_message("%s (d = %d, tau0 = %g, dtau = %.3g, %d continuations, overlap %.3f)\n",
                  dc->label, dc->d, dc->tau0, dtau, reps,
                  (m0[aim_wordset_find(ws, "Kt")] - m0[wk] * m0[aim_wordset_find(ws, "T")]) /
                      sqrt((m0[aim_wordset_find(ws, "Kk")] - pow(m0[wk], 2)) *
                           (m0[aim_wordset_find(ws, "Tt")] - pow(m0[aim_wordset_find(ws, "T")], 2))));
    print_message("  %-10s %11s %11s %9s %7s %11s %11s %11s\n", "moment", "SGD rate", "ODE rate",
                  "SE", "z", "gradient", "noise", "decay");
    int bad = 0;
    for (int i = 0; i < n; i++) {
        double se = sqrt(fmax(rate2[i] - rate[i] * rate[i], 0.0) / (reps - 1));
        double grad = 0.5 * (t0[i] + t1[i]), noise = 0.5 * (t0[n + i] + t1[n + i]),
               decay = 0.5 * (t0[2 * n + i] + t1[2 * n + i]);
        double pred = grad + noise + decay;
        double tol = 4.0 * se + 4.0 / sqd * fabs(noise) + 4.0 / dc->d * (fabs(grad) + fabs(decay));
        int ok = fabs(rate[i] - pred) <= tol;
        print_message("  %-10s %11.5g %11.5g %9.2g %7.2f %11.4g %11.4g %11.4g %s\n",
                      aim_untied_state_name(m, i), rate[i], pred, se,
                      se > 0 ? (rate[i] - pred) / se : 0.0, grad, noise, decay, ok ? "ok" : "FAIL");
        bad += !ok;
    }
    aim_sgd_free(base);
    aim_untied_free(m);
    free(m0);
    free(m1);
    free(mend);
    free(rate);
    free(rate2);
    free(t0);
    assert_int_equal(bad, 0);
}

static void untied_config(aim_config *cfg, const char *activation)
{
    aim_config_defaults(cfg);
    aim_config_error e;
    char set[64];
    snprintf(set, sizeof set, "model.activation=%s", activation);
    assert_int_equal(aim_config_set(cfg, "model.decomposition=untied", &e), 0);
    assert_int_equal(aim_config_set(cfg, set, &e), 0);
    cfg->student.rho = 1.0;
    cfg->student.scale = 0.5;
    cfg->teacher.scale = 1.0;
    cfg->order = ORDER;
    cfg->block = 32;
    cfg->eta = 0.01;
    assert_int_equal(aim_config_validate(cfg, &e), 0);
}

static void test_he1_start(void **state)
{
    (void)state;
    aim_config cfg;
    untied_config(&cfg, "he1");
    drift_case dc = {"He1, T = 2, eta = 0.01, free start", 400, 0.0, 0.002, 0};
    run_case(&cfg, &dc);
}

static void test_trained(void **state)
{
    (void)state;
    aim_config cfg;
    untied_config(&cfg, "he1");
    drift_case dc = {"He1, trained (student-teacher pair terms)", 400, 0.03, 0.002, 0};
    run_case(&cfg, &dc);
}

static void test_noise_decay(void **state)
{
    (void)state;
    aim_config cfg;
    untied_config(&cfg, "he1");
    /* at eta = 0.5 the words odd in K (0 at the free start) drift by
     * 0.1-0.17 at seed 1 (3.5-4.3 se with 24 continuations) and by -0.1
     * (-1.4 se) at seed 2: a realisation-dependent effect of the large
     * step, not in the limit (theory/untied.md sec. 8); at eta = 0.2 the
     * noise terms are still a third of the gradient terms */
    cfg.eta = 0.2;
    cfg.gamma = 2.0;
    cfg.noise = 0.5;
    drift_case dc = {"He1, eta = 0.2, weight decay 2, label noise 0.5", 400, 0.0, 0.002, 0};
    run_case(&cfg, &dc);
}

static void test_raw_mean(void **state)
{
    (void)state;
    aim_config cfg;
    untied_config(&cfg, "he1");
    aim_config_error e;
    assert_int_equal(aim_config_set(&cfg, "model.centring=raw", &e), 0);
    assert_int_equal(aim_config_set(&cfg, "teacher.mean=1", &e), 0);
    assert_int_equal(aim_config_validate(&cfg, &e), 0);
    drift_case dc = {"He1, raw, teacher mean 1, after the fast phase", 400, 0.01, 0.002, 0};
    run_case(&cfg, &dc);
}

int main(void)
{
    gsl_set_error_handler_off();
    /* AIMDYN_TEST_FILTER=test_x runs the matching tests only */
    if (getenv("AIMDYN_TEST_FILTER"))
        cmocka_set_test_filter(getenv("AIMDYN_TEST_FILTER"));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_he1_start),
        cmocka_unit_test(test_trained),
        cmocka_unit_test(test_noise_decay),
        cmocka_unit_test(test_raw_mean),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
