/* Short-horizon drift tests of the untied hierarchy's rules (MODEL.md
 * sec. 9, theory/untied.md) with the harness of drift_harness.h: every
 * tracked moment m(w) = Tr(w)/d (words in A = U U^T, B = V V^T,
 * K = U V^T, k = V U^T, the teacher T and its transpose t, up to length
 * M) from measured moments. In raw centring the slot of K is the index
 * mean Tr S/sqrt d and the stiff finite-d system is under test, lambda =
 * sqrt(d) E[sum e C] included. The output map is He1, for which the
 * first-order terms are exact at any d (theory/untied.md sec. 8: a
 * non-linear map adds an O(1/sqrt d) token-norm term to the words with
 * the traceful letters A, B). Each case makes a different term large:
 * gradient (the free start, a trained state where student and teacher
 * are correlated), noise with weight decay and label noise, and the raw
 * mean with a teacher mean after the fast phase. */
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

#include "untied.h"

#include "drift_harness.h"

#define ORDER 3

static int untied_terms(void *m, const double *mom, int d, double *g, double *n, double *dc)
{
    const int wk = aim_wordset_find(aim_hierarchy_words(aim_untied_hierarchy(m)), "K");
    return aim_untied_terms_at(m, mom, sqrt((double)d) * mom[wk], g, n, dc);
}

/* The state variable of equation i: the moment, or in the raw stiff
 * system the mean sqrt(d) m(K) for the slot of K. */
static double untied_state(void *m, const double *mom, int i, int d)
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
    const drift_model dm = {m, aim_untied_hierarchy(m), untied_terms, untied_state,
                            aim_untied_state_name, {"K", "T", "Kt", "Kk", "Tt"}};
    drift_run(cfg, dc, &dm);
    aim_untied_free(m);
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
    /* the mean relaxes at the rate d (m(A) + m(B)) dE_C/dm = 800 per unit
     * tau: the window is 0.2 of its relaxation time, so that the trapezoid
     * of the start and end rates is exact to (0.2)^2/12 = 0.3 % (at 0.002,
     * 1.6 relaxation times, it would be 20 % high for the mean); the
     * short window needs more continuations */
    drift_case dc = {"He1, raw, teacher mean 1, after the fast phase", 400, 0.01, 0.00025, 48};
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
