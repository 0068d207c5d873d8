/* Short-horizon drift tests of the tied hierarchy's rules (MODEL.md
 * sec. 9, theory/tied.md sec. 7): from a state of online SGD at finite d,
 * independent continuations over a short delta tau measure the rate of
 * change of every tracked moment m(w) = Tr(w)/d (words in S and S* up to
 * length M); the generated right-hand side is evaluated at the moments
 * *measured* on the same matrices, including the words of length M + 1,
 * so that the rules are tested apart from any closure.
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
 * gradient (softmax, He1), noise (a larger eta), weight decay, label
 * noise, and a trained state where student and teacher are correlated. */
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

#include "sgd.h"
#include "tied.h"
#include "words.h"

#define REPS 12
#define ORDER 3

typedef struct {
    const char *label;
    int d;
    double tau0; /* training before the measured window */
    double dtau; /* the window */
} drift_case;

/* All moments of the hierarchy's word set (lengths 0..ORDER + 1). */
static void measure(const aim_sgd *s, const aim_wordset *ws, double *mom)
{
    const double *const mats[2] = {aim_sgd_matrix(s, 0), aim_sgd_matrix(s, 1)};
    assert_int_equal(aim_words_measure(ws, aim_wordset_max_len(ws), mats, aim_sgd_dim(s), mom),
                     0);
}

static void run_case(const aim_config *cfg, const drift_case *dc)
{
    char err[256];
    aim_tied *m = aim_tied_create(cfg, AIM_RULE_AUTO, err, sizeof err);
    assert_non_null(m);
    const aim_hierarchy *h = aim_tied_hierarchy(m);
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
    for (int r = 0; r < REPS; r++) {
        aim_sgd *c = aim_sgd_clone(base, 1000 + (uint64_t)r);
        assert_non_null(c);
        assert_int_equal(aim_sgd_advance(c, steps), 0);
        measure(c, ws, m1);
        for (int i = 0; i < n; i++) {
            int w = aim_hierarchy_tracked(h, i);
            double v = (m1[w] - m0[w]) / dtau;
            rate[i] += v / REPS;
            rate2[i] += v * v / REPS;
        }
        for (int w = 0; w < count; w++)
            mend[w] += m1[w] / REPS;
        aim_sgd_free(c);
    }
    assert_int_equal(aim_tied_terms_at(m, m0, t0, t0 + n, t0 + 2 * n), 0);
    assert_int_equal(aim_tied_terms_at(m, mend, t1, t1 + n, t1 + 2 * n), 0);
    print_message("%s (d = %d, tau0 = %g, dtau = %.3g, %d continuations, overlap %.3f)\n",
                  dc->label, dc->d, dc->tau0, dtau, REPS,
                  (m0[aim_wordset_find(ws, "ST")] -
                   m0[aim_wordset_find(ws, "S")] * m0[aim_wordset_find(ws, "T")]) /
                      sqrt((m0[aim_wordset_find(ws, "SS")] - pow(m0[aim_wordset_find(ws, "S")], 2)) *
                           (m0[aim_wordset_find(ws, "TT")] - pow(m0[aim_wordset_find(ws, "T")], 2))));
    print_message("  %-10s %11s %11s %9s %7s %11s %11s %11s\n", "moment", "SGD rate", "ODE rate",
                  "SE", "z", "gradient", "noise", "decay");
    int bad = 0;
    const double sqd = sqrt((double)dc->d);
    for (int i = 0; i < n; i++) {
        double se = sqrt(fmax(rate2[i] - rate[i] * rate[i], 0.0) / (REPS - 1));
        double grad = 0.5 * (t0[i] + t1[i]), noise = 0.5 * (t0[n + i] + t1[n + i]),
               decay = 0.5 * (t0[2 * n + i] + t1[2 * n + i]);
        double pred = grad + noise + decay;
        double tol = 4.0 * se + 4.0 / sqd * fabs(noise) + 4.0 / dc->d * (fabs(grad) + fabs(decay));
        int ok = fabs(rate[i] - pred) <= tol;
        print_message("  %-10s %11.5g %11.5g %9.2g %7.2f %11.4g %11.4g %11.4g %s\n",
                      aim_tied_state_name(m, i), rate[i], pred, se,
                      se > 0 ? (rate[i] - pred) / se : 0.0, grad, noise, decay, ok ? "ok" : "FAIL");
        bad += !ok;
    }
    aim_sgd_free(base);
    aim_tied_free(m);
    free(m0);
    free(m1);
    free(mend);
    free(rate);
    free(rate2);
    free(t0);
    assert_int_equal(bad, 0);
}

static void tied_config(aim_config *cfg)
{
    aim_config_defaults(cfg);
    cfg->decomposition = cfg->student.decomposition = AIM_TIED;
    cfg->teacher.decomposition = AIM_TIED;
    cfg->student.rho = cfg->teacher.rho = 1.0;
    cfg->student.scale = 0.25;
    cfg->teacher.scale = 1.0;
    cfg->order = ORDER;
    cfg->block = 32;
}

static void softmax_config(aim_config *cfg)
{
    tied_config(cfg);
    cfg->tokens = 4;
    aim_config_error e;
    assert_int_equal(aim_config_set(cfg, "model.output=softmax", &e), 0);
    assert_int_equal(aim_config_validate(cfg, &e), 0);
    cfg->eta = 0.5;
}

static void test_softmax_start(void **state)
{
    (void)state;
    aim_config cfg;
    softmax_config(&cfg);
    drift_case dc = {"softmax T = 4, free start", 400, 0.0, 0.01};
    run_case(&cfg, &dc);
}

static void test_softmax_trained(void **state)
{
    (void)state;
    aim_config cfg;
    softmax_config(&cfg);
    drift_case dc = {"softmax T = 4, trained (student-teacher pair terms)", 400, 0.25, 0.01};
    run_case(&cfg, &dc);
}

static void test_softmax_noise_decay(void **state)
{
    (void)state;
    aim_config cfg;
    softmax_config(&cfg);
    cfg.eta = 2.0;
    cfg.gamma = 2.0;
    cfg.noise = 0.5;
    drift_case dc = {"softmax T = 4, eta = 2, weight decay 2, label noise 0.5", 400, 0.0, 0.01};
    run_case(&cfg, &dc);
}

static void test_he1(void **state)
{
    (void)state;
    aim_config cfg;
    tied_config(&cfg);
    aim_config_error e;
    assert_int_equal(aim_config_set(&cfg, "model.activation=he1", &e), 0);
    assert_int_equal(aim_config_validate(&cfg, &e), 0);
    cfg.eta = 0.01;
    drift_case dc = {"He1, T = 2, eta = 0.01", 400, 0.0, 0.002};
    run_case(&cfg, &dc);
}

int main(void)
{
    gsl_set_error_handler_off();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_softmax_start),
        cmocka_unit_test(test_softmax_trained),
        cmocka_unit_test(test_softmax_noise_decay),
        cmocka_unit_test(test_he1),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
