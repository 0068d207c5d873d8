/* Short-horizon drift tests of the tied hierarchy's rules (MODEL.md
 * sec. 9, theory/tied.md sec. 7) with the harness of drift_harness.h:
 * every tracked moment m(w) = Tr(w)/d (words in S and S* up to length
 * M) from measured moments. For tied attention the leading bias is of
 * order 1/sqrt d, not 1/d: the second-order terms
 * E Tr(G A G B)/d = K m(A) m(B) + O(d^-1/2) have a correction
 * m(B) E[sum e e' C h(A)]/sqrt d from the fluctuation of x^T A x around
 * Tr A, which is of order one here because Tr S/d is (theory/tied.md
 * sec. 7). Each case makes a different term large: gradient (softmax,
 * He1), noise (a larger eta), weight decay, label noise, and a trained
 * state where student and teacher are correlated. */
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

#include "tied.h"

#include "drift_harness.h"

#define ORDER 3

static int tied_terms(void *m, const double *mom, int d, double *g, double *n, double *dc)
{
    (void)d;
    return aim_tied_terms_at(m, mom, g, n, dc);
}

static double tied_state(void *m, const double *mom, int i, int d)
{
    (void)d;
    return mom[aim_hierarchy_tracked(aim_tied_hierarchy(m), i)];
}

static void run_case(const aim_config *cfg, const drift_case *dc)
{
    char err[256];
    aim_tied *m = aim_tied_create(cfg, AIM_RULE_AUTO, err, sizeof err);
    assert_non_null(m);
    const drift_model dm = {m, aim_tied_hierarchy(m), tied_terms, tied_state,
                            aim_tied_state_name, {"S", "T", "ST", "SS", "TT"}};
    drift_run(cfg, dc, &dm);
    aim_tied_free(m);
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
    drift_case dc = {"softmax T = 4, free start", 400, 0.0, 0.01, 0};
    run_case(&cfg, &dc);
}

static void test_softmax_trained(void **state)
{
    (void)state;
    aim_config cfg;
    softmax_config(&cfg);
    drift_case dc = {"softmax T = 4, trained (student-teacher pair terms)", 400, 0.25, 0.01, 0};
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
    drift_case dc = {"softmax T = 4, eta = 2, weight decay 2, label noise 0.5", 400, 0.0, 0.01, 0};
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
    drift_case dc = {"He1, T = 2, eta = 0.01", 400, 0.0, 0.002, 0};
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
