/* Drift tests of the tied hierarchy (theory/tied.md sec. 8):
 * every term of the generated right-hand side of every tracked moment
 * m(w) = Tr(w)/d (words in S = W W^T and T = S* up to length M = 3)
 * against the same term measured on online SGD by the one-step expansion
 * of drift_harness.h, at the measured moments (words of length 4
 * included, so no closure is involved), with a tolerance of standard
 * errors and a measured finite-d law. */
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

/* The step of a tied student: dW = -((G + G^T) W + (gamma/d) W). */
static const drift_factor tied_factors[] = {{'W', 1, 'W', DRIFT_GSYM}, {'T', 0, 0, DRIFT_G}};
static const drift_letter tied_letters[] = {{'S', 'W', 'W', 0}, {'T', 'T', 0, 0}};

static const double *tied_factor(const aim_sgd *s, char name, int *cols)
{
    if (name == 'W') {
        *cols = aim_sgd_columns(s);
        return aim_sgd_factor(s);
    }
    *cols = aim_sgd_dim(s);
    return name == 'T' ? aim_sgd_matrix(s, 1) : NULL;
}

static void *tied_create(const aim_config *cfg, int d)
{
    (void)d;
    char err[256];
    return aim_tied_create(cfg, AIM_RULE_AUTO, err, sizeof err);
}

static void tied_destroy(void *m) { aim_tied_free(m); }
static const aim_wordset *tied_wordset(void *m) { return aim_hierarchy_words(aim_tied_hierarchy(m)); }
static int tied_size(void *m) { return aim_tied_size(m); }

static const char *tied_word(void *m, int i)
{
    const aim_hierarchy *h = aim_tied_hierarchy(m);
    return aim_wordset_word(aim_hierarchy_words(h), aim_hierarchy_tracked(h, i));
}

static double tied_scale(void *m, int i, int d)
{
    (void)m;
    (void)i;
    (void)d;
    return 1.0;
}

static int tied_terms(void *m, const double *mom, int d, double *first, double *second,
                      double *decay, double *mean)
{
    (void)d;
    (void)mean;
    return aim_tied_terms_at(m, mom, first, second, decay);
}

static const drift_model tied_model = {
    tied_factors, 2, tied_letters, 2, 'S', 'T', tied_factor,
    tied_create, tied_destroy, tied_wordset, tied_size, aim_tied_state_name,
    tied_word, tied_scale, tied_terms};

static void tied_config(aim_config *cfg, const char *output)
{
    aim_config_defaults(cfg);
    cfg->decomposition = cfg->student.decomposition = AIM_TIED;
    cfg->teacher.decomposition = AIM_TIED;
    cfg->student.rho = cfg->teacher.rho = 1.0;
    cfg->student.scale = 0.25;
    cfg->teacher.scale = 1.0;
    cfg->order = ORDER;
    cfg->block = 32;
    drift_config(cfg, output);
}

static void softmax_config(aim_config *cfg)
{
    tied_config(cfg, "model.output=softmax");
    cfg->tokens = 4;
    drift_config(cfg, NULL);
    cfg->eta = 0.5;
}

static void test_step_expansion(void **state)
{
    (void)state;
    aim_config cfg;
    softmax_config(&cfg);
    cfg.tokens = 3;
    cfg.gamma = 2.0;
    cfg.noise = 0.5;
    drift_config(&cfg, NULL);
    drift_check_step(&cfg, 24, 0.05, &tied_model);
}

/* The dimensions of a case and the one-step samples at each (a sample
 * costs d^2: the smallest d, measured best, pins the finite-d slope). */
#define DIMS 3, {200, 400, 800}
#define SAMPLES {80000, 40000, 20000}
/* He1 at T = 2 costs a quarter of softmax at T = 4 per sample: twice the
 * samples, for the halves K_O, K_P of the noise kernel */
#define SAMPLES_HE1 {160000, 80000, 40000}

static void he1_config(aim_config *cfg)
{
    tied_config(cfg, "model.activation=he1");
    cfg->eta = 0.01;
}

/* He1 (a linear map: the first-order terms are exact at any d, the
 * d^-1/2 terms of theory/tied.md sec. 8 vanish by parity) at the free
 * start. */
static void test_he1_start(void **state)
{
    (void)state;
    aim_config cfg;
    he1_config(&cfg);
    const drift_case dc = {"He1, T = 2, free start", DIMS, SAMPLES_HE1, 0.0, 0.0, 0.0, 1.0, 0,
                           NULL};
    drift_run(&cfg, &dc, &tied_model);
}

/* He1 at a trained state (student-teacher pair terms), with weight decay
 * and label noise. */
static void test_he1_trained(void **state)
{
    (void)state;
    aim_config cfg;
    he1_config(&cfg);
    cfg.gamma = 2.0;
    cfg.noise = 0.5;
    const drift_case dc = {"He1, T = 2, weight decay 2, label noise 0.5, trained", DIMS,
                           SAMPLES_HE1, 0.02, 0.5, 0.0, 1.0, 0, NULL};
    drift_run(&cfg, &dc, &tied_model);
}

/* Row softmax has no parity: d^-1/2 terms from the token norms and the
 * skewed diagonal indices of S and S* (theory/tied.md sec. 8). The
 * first-order terms follow d^-1/2 alone at d = 200-800; the second-order
 * terms do not (their d^-1/2 and 1/d terms are of the same size there), so
 * both orders are fitted to them. */
#define SOFTMAX_ORDERS 2

/* Row softmax at the free start. */
static void test_softmax_start(void **state)
{
    (void)state;
    aim_config cfg;
    softmax_config(&cfg);
    const drift_case dc = {"softmax T = 4, free start", DIMS, SAMPLES, 0.0, 0.0, 0.5, 0.5,
                           SOFTMAX_ORDERS, NULL};
    drift_run(&cfg, &dc, &tied_model);
}

/* Softmax with large noise, weight decay and label noise terms. */
static void test_softmax_noise_decay(void **state)
{
    (void)state;
    aim_config cfg;
    softmax_config(&cfg);
    cfg.eta = 2.0;
    cfg.gamma = 2.0;
    cfg.noise = 0.5;
    const drift_case dc = {"softmax T = 4, eta = 2, weight decay 2, label noise 0.5, free start",
                           DIMS, SAMPLES, 0.0, 0.0, 0.5, 0.5, SOFTMAX_ORDERS, NULL};
    drift_run(&cfg, &dc, &tied_model);
}

/* Softmax at a trained state. The first-order terms sit 2-4 % below the
 * limit at d = 200-400 and follow d^-1/2 to a limit within standard errors
 * (theory/tied.md sec. 8, which also gives the old test's state, tau0 =
 * 0.25 at eta = 0.5); the state is reached with eta = 2 here so that d =
 * 800 costs half a minute of training. */
static void test_softmax_trained(void **state)
{
    (void)state;
    aim_config cfg;
    softmax_config(&cfg);
    const drift_case dc = {"softmax T = 4, trained", DIMS, SAMPLES, 0.1, 2.0, 0.5, 0.5,
                           SOFTMAX_ORDERS, NULL};
    drift_run(&cfg, &dc, &tied_model);
}

int main(void)
{
    gsl_set_error_handler_off();
    /* AIMDYN_TEST_FILTER=test_x runs the matching tests only */
    if (getenv("AIMDYN_TEST_FILTER"))
        cmocka_set_test_filter(getenv("AIMDYN_TEST_FILTER"));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_step_expansion),
        cmocka_unit_test(test_he1_start),
        cmocka_unit_test(test_he1_trained),
        cmocka_unit_test(test_softmax_start),
        cmocka_unit_test(test_softmax_noise_decay),
        cmocka_unit_test(test_softmax_trained),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
