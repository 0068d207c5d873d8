/* Drift tests of the untied hierarchy (theory/untied.md sec. 8):
 * every term of the generated right-hand side of every tracked moment
 * m(w) = Tr(w)/d (words in A = U U^T, B = V V^T, K = U V^T, k = V U^T, the
 * teacher T and its transpose t) against the same term measured on online
 * SGD by the one-step expansion of drift_harness.h, at the measured
 * moments (no closure involved), with a tolerance of standard errors and
 * a measured finite-d law. In raw centring the slot of K is the index
 * mean sqrt(d) m(K) of the stiff finite-d system, and the first-order
 * terms are compared in their two parts: the lambda terms (the identity
 * part of G) and the rest. */
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

/* The step of an untied student: dU = -(G V + (gamma/d) U), dV = -(G^T U
 * + (gamma/d) V). */
static const drift_factor untied_factors[] = {
    {'U', 1, 'V', DRIFT_G}, {'V', 1, 'U', DRIFT_GT}, {'T', 0, 0, DRIFT_G}};
static const drift_letter untied_letters[] = {{'A', 'U', 'U', 0}, {'B', 'V', 'V', 0},
                                              {'K', 'U', 'V', 0}, {'k', 'V', 'U', 0},
                                              {'T', 'T', 0, 0},   {'t', 'T', 0, 1}};

static const double *untied_factor(const aim_sgd *s, char name, int *cols)
{
    const double *U, *V;
    if (name == 'U' || name == 'V') {
        if (aim_sgd_untied_factors(s, &U, &V))
            return NULL;
        *cols = aim_sgd_columns(s);
        return name == 'U' ? U : V;
    }
    *cols = aim_sgd_dim(s);
    return name == 'T' ? aim_sgd_matrix(s, 1) : NULL;
}

static void *untied_create(const aim_config *cfg, int d)
{
    char err[256];
    aim_untied *m = aim_untied_create(cfg, d, AIM_RULE_AUTO, err, sizeof err);
    if (!m)
        print_message("%s\n", err);
    return m;
}

static void untied_destroy(void *m) { aim_untied_free(m); }
static const aim_wordset *untied_wordset(void *m)
{
    return aim_hierarchy_words(aim_untied_hierarchy(m));
}
static int untied_size(void *m) { return aim_untied_size(m); }

static const char *untied_word(void *m, int i)
{
    const aim_hierarchy *h = aim_untied_hierarchy(m);
    return aim_wordset_word(aim_hierarchy_words(h), aim_hierarchy_tracked(h, i));
}

/* The slot of K carries the mean sqrt(d) m(K) in raw centring. */
static double untied_scale(void *m, int i, int d)
{
    return strcmp(aim_untied_state_name(m, i), "mean") == 0 ? sqrt((double)d) : 1.0;
}

static int untied_terms(void *m, const double *mom, int d, double *first, double *second,
                        double *decay, double *mean)
{
    const aim_wordset *ws = untied_wordset(m);
    const double mu = sqrt((double)d) * mom[aim_wordset_find(ws, "K")];
    if (aim_untied_terms_split_at(m, mom, mu, first, mean, second, decay))
        return -1;
    if (untied_scale(m, aim_untied_k_slot(m), d) == 1.0) /* centred: no mean part */
        for (int i = 0; i < aim_untied_size(m); i++)
            mean[i] = NAN;
    return 0;
}

static const drift_model untied_model = {
    untied_factors, 3, untied_letters, 6, 'K', 'T', untied_factor,
    untied_create, untied_destroy, untied_wordset, untied_size, aim_untied_state_name,
    untied_word, untied_scale, untied_terms};

static void untied_config(aim_config *cfg, const char *activation, int order)
{
    char set[64];
    aim_config_defaults(cfg);
    snprintf(set, sizeof set, "model.activation=%s", activation);
    drift_config(cfg, "model.decomposition=untied");
    drift_config(cfg, set);
    cfg->student.rho = 1.0;
    cfg->student.scale = 0.5;
    cfg->teacher.scale = 1.0;
    cfg->order = order;
    cfg->block = 32;
    cfg->eta = 0.01;
    drift_config(cfg, NULL);
}

/* Raw centring with a teacher mean 1. */
static void raw_mean(aim_config *cfg)
{
    drift_config(cfg, "model.centring=raw");
    drift_config(cfg, "teacher.mean=1");
}

static void test_step_expansion(void **state)
{
    (void)state;
    aim_config cfg;
    untied_config(&cfg, "he1", 3);
    cfg.eta = 0.05;
    cfg.gamma = 2.0;
    cfg.noise = 0.5;
    drift_check_step(&cfg, 24, 0.01, &untied_model);
    raw_mean(&cfg);
    drift_check_step(&cfg, 24, 0.01, &untied_model);
}

/* The dimensions of a case and the one-step samples at each (a sample
 * costs d^2: the smallest d, measured best, pins the finite-d slope). */
#define DIMS 3, {200, 400, 800}
#define SAMPLES {80000, 40000, 20000}
#define ORDER 2

/* He1: the first-order terms are exact at any d (Gaussian regression of
 * a linear map, Wick), the noise terms carry 1/d token-norm terms. */
static void test_he1_start(void **state)
{
    (void)state;
    aim_config cfg;
    untied_config(&cfg, "he1", ORDER);
    const drift_case dc = {"He1, T = 2, free start", DIMS, SAMPLES, 0.0, 0.0, 0.0, 1.0, 0, NULL};
    drift_run(&cfg, &dc, &untied_model);
}

/* A trained state (student-teacher pair terms). */
static void test_trained(void **state)
{
    (void)state;
    aim_config cfg;
    untied_config(&cfg, "he1", ORDER);
    const drift_case dc = {"He1, trained", DIMS, SAMPLES, 0.02, 0.5, 0.0, 1.0, 0, NULL};
    drift_run(&cfg, &dc, &untied_model);
}

/* A tied (positive semi-definite) teacher, Tr S* / d = 0.5: the student
 * learns a trace, m(K) = Tr S / d grows to order one, and the second-order
 * rules of K and k (eps^2 G k G, eps^2 G^T K G^T), whose terms carry m(K),
 * are seen (at a traceless teacher m(K) stays of order 1/sqrt d). He1 has
 * definite parity: no d^-1/2 terms. */
static void test_traceful_teacher(void **state)
{
    (void)state;
    aim_config cfg;
    untied_config(&cfg, "he1", ORDER);
    cfg.teacher.rho = 0.5;
    drift_config(&cfg, "teacher.decomposition=tied");
    const drift_case dc = {"He1, tied teacher (rho* = 0.5), trained", DIMS, SAMPLES, 0.05, 0.5,
                           0.0, 1.0, 0, NULL};
    drift_run(&cfg, &dc, &untied_model);
}

/* Weight decay and label noise. */
static void test_noise_decay(void **state)
{
    (void)state;
    aim_config cfg;
    untied_config(&cfg, "he1", ORDER);
    cfg.eta = 0.2;
    cfg.gamma = 2.0;
    cfg.noise = 0.5;
    const drift_case dc = {"He1, weight decay 2, label noise 0.5, free start", DIMS, SAMPLES,
                           0.0, 0.0, 0.0, 1.0, 0, NULL};
    drift_run(&cfg, &dc, &untied_model);
}

static void raw_config(aim_config *cfg)
{
    untied_config(cfg, "he1", ORDER);
    raw_mean(cfg);
}

/* In raw centring the letters K, k and T carry the index means: m(K) =
 * mean / sqrt d, m(T) = mean* / sqrt d, so the second-order terms of the
 * words with them vanish in the limit, and the error's mean part makes
 * e e' correlate linearly with the indices, which gives them a d^-1/2 term
 * (theory/tied.md sec. 8): two orders, d^-1/2 and 1/d. The mean's own
 * equation is sqrt(d) times that of m(K): the O(d^-1/2) correction of the
 * latter is of order one there, and the stiff system keeps only
 * eta K_P mean of it (theory/untied.md sec. 3); the rest is proportional
 * to the error's mean, of order d^-1/2 once the mean has relaxed (its law)
 * and of order one at the start, where it is outside the model: measured,
 * printed, not compared. The words of A and B alone keep their 1/d law,
 * and the first-order terms of He1 stay exact. */
static void raw_law(const char *name, int part, drift_law *law)
{
    if (part != DRIFT_SECOND)
        return;
    if (strcmp(name, "mean") == 0) {
        law->p = 0.5;
    } else if (strpbrk(name + 2, "KkTt")) { /* "m(...)" */
        law->p = 0.5;
        law->orders = 2;
    }
}

static void raw_start_law(const char *name, int part, drift_law *law)
{
    raw_law(name, part, law);
    if (strcmp(name, "mean") == 0 && part == DRIFT_SECOND)
        law->compared = 0;
}

/* Raw centring with a teacher mean, at the start: lambda = sqrt(d) E_C is
 * of order sqrt d, and the lambda terms dominate the first-order terms of
 * every word with a K (compared in their own part). */
static void test_raw_start(void **state)
{
    (void)state;
    aim_config cfg;
    raw_config(&cfg);
    const drift_case dc = {"He1, raw, teacher mean 1, start", DIMS, SAMPLES, 0.0, 0.0, 0.0, 1.0,
                           0, raw_start_law};
    drift_run(&cfg, &dc, &untied_model);
}

/* Raw centring after the fast phase (t = d tau0 >= 4): lambda of order
 * one, and the error's mean of order d^-1/2 (He1: it is E_C C / s_2), so
 * the mean's second-order term is the model's up to O(d^-1/2), in the
 * law of the vanishing terms. */
static void test_raw_manifold(void **state)
{
    (void)state;
    aim_config cfg;
    raw_config(&cfg);
    const drift_case dc = {"He1, raw, teacher mean 1, after the fast phase", DIMS, SAMPLES, 0.02,
                           0.5, 0.0, 1.0, 0, raw_law};
    drift_run(&cfg, &dc, &untied_model);
}

/* Order 3: the generated equations of the words of length 3. */
static void test_order3(void **state)
{
    (void)state;
    aim_config cfg;
    untied_config(&cfg, "he1", 3);
    const drift_case dc = {"He1, order 3, free start", 2, {200, 400}, {40000, 20000}, 0.0, 0.0,
                           0.0, 1.0, 0, NULL};
    drift_run(&cfg, &dc, &untied_model);
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
        cmocka_unit_test(test_trained),
        cmocka_unit_test(test_traceful_teacher),
        cmocka_unit_test(test_noise_decay),
        cmocka_unit_test(test_raw_start),
        cmocka_unit_test(test_raw_manifold),
        cmocka_unit_test(test_order3),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
