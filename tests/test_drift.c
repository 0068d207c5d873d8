/* Drift tests of the direct model (theory/direct.md sec. 10):
 * every term of its right-hand side against the same term measured on
 * online SGD by the one-step expansion of drift_harness.h, with a
 * tolerance of standard errors and a measured finite-d law.
 *
 * State: Omega(S,S) = m(S S^T), Psi(S,S) = m(S S), Omega(S,S*) = m(S S*^T),
 * Psi(S,S*) = m(S S*), and Tr S/d = m(S) (centred) or the mean sqrt(d)
 * m(S) (raw), in the letters S, k = S^T, T = S*, t = S*^T. Each case makes
 * different terms large: the four first-order kernels and the two noise
 * kernels (He1 with a student larger than the teacher), weight decay and
 * label noise, a symmetric student with softmax (whose two noise kernels
 * differ, so the symmetrised kernel (K_O + K_P)/2 is seen), the centred
 * trace with a traceful (tied) teacher, and the raw mean: its fast part
 * -d E_C and its O(1) part -A~_I, compared separately. */
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

#include "direct.h"

#include "drift_harness.h"

/* The step of a direct student: dS = -(G + (gamma/d) S). */
static const drift_factor direct_factors[] = {{'S', 1, 0, DRIFT_G}, {'T', 0, 0, DRIFT_G}};
static const drift_letter direct_letters[] = {
    {'S', 'S', 0, 0}, {'k', 'S', 0, 1}, {'T', 'T', 0, 0}, {'t', 'T', 0, 1}};

static const double *direct_factor(const aim_sgd *s, char name, int *cols)
{
    *cols = aim_sgd_dim(s);
    return name == 'S' ? aim_sgd_matrix(s, 0) : name == 'T' ? aim_sgd_matrix(s, 1) : NULL;
}

typedef struct {
    aim_direct *m;
    aim_wordset *ws;
    int raw;
} direct_model;

static const char *const direct_words[AIM_DIRECT_SIZE] = {"Sk", "SS", "St", "ST", "S"};

static void *direct_create(const aim_config *cfg, int d)
{
    direct_model *dm = calloc(1, sizeof *dm);
    const aim_alphabet ab = {"SkTt", "kStT"};
    if (!dm)
        return NULL;
    dm->m = aim_direct_create(cfg, d, AIM_RULE_AUTO);
    dm->ws = aim_wordset_create(&ab, 2);
    dm->raw = cfg->centring == AIM_RAW;
    if (!dm->m || !dm->ws) {
        aim_direct_free(dm->m);
        aim_wordset_free(dm->ws);
        free(dm);
        return NULL;
    }
    return dm;
}

static void direct_destroy(void *p)
{
    direct_model *dm = p;
    aim_direct_free(dm->m);
    aim_wordset_free(dm->ws);
    free(dm);
}

static const aim_wordset *direct_wordset(void *p) { return ((direct_model *)p)->ws; }
static int direct_size(void *p)
{
    (void)p;
    return AIM_DIRECT_SIZE;
}
static const char *direct_word(void *p, int i)
{
    (void)p;
    return direct_words[i];
}
static const char *direct_name(void *p, int i)
{
    (void)p;
    return aim_direct_state_name(NULL, i);
}

static double direct_scale(void *p, int i, int d)
{
    return i == AIM_DIRECT_SIZE - 1 && ((direct_model *)p)->raw ? sqrt((double)d) : 1.0;
}

static int direct_terms(void *p, const double *mom, int d, double *first, double *second,
                        double *decay, double *mean)
{
    direct_model *dm = p;
#define M(w) mom[aim_wordset_find(dm->ws, w)]
    aim_overlaps q;
    memset(&q, 0, sizeof q);
    q.omega[0][0] = M("Sk");
    q.psi[0][0] = M("SS");
    q.omega[0][1] = q.omega[1][0] = M("St");
    q.psi[0][1] = q.psi[1][0] = M("ST");
    q.omega[1][1] = M("Tt");
    q.psi[1][1] = M("TT");
    q.trace[0] = M("S");
    q.trace[1] = M("T");
    if (dm->raw) {
        q.mean[0] = sqrt((double)d) * q.trace[0];
        q.mean[1] = sqrt((double)d) * q.trace[1];
    }
#undef M
    double y[AIM_DIRECT_SIZE];
    aim_direct_state_from(dm->m, &q, y);
    if (aim_direct_terms(dm->m, y, first, second, decay))
        return -1;
    double slow;
    if (dm->raw && aim_direct_mean_parts(dm->m, y, &mean[AIM_DIRECT_SIZE - 1], &slow))
        return -1;
    return 0;
}

static const drift_model direct_model_desc = {
    direct_factors, 2, direct_letters, 4, 'S', 'T', direct_factor,
    direct_create, direct_destroy, direct_wordset, direct_size, direct_name,
    direct_word, direct_scale, direct_terms};

static void base_config(aim_config *cfg, const char *activation)
{
    char set[64];
    aim_config_defaults(cfg); /* direct, centred, T = 2, He1 + He2/sqrt 2 */
    snprintf(set, sizeof set, "model.activation=%s", activation ? activation : "hermite");
    drift_config(cfg, activation ? set : NULL);
    cfg->block = 16;
}

static void test_step_expansion(void **state)
{
    (void)state;
    aim_config cfg;
    base_config(&cfg, NULL);
    cfg.gamma = 3.0;
    cfg.noise = 0.3;
    drift_check_step(&cfg, 24, 0.01, &direct_model_desc);
    cfg.centring = AIM_RAW;
    cfg.teacher.mean = 1.0;
    drift_check_step(&cfg, 24, 0.01, &direct_model_desc);
    base_config(&cfg, "he1");
    cfg.output = AIM_SOFTMAX;
    cfg.student.symmetric = 1;
    drift_check_step(&cfg, 24, 0.01, &direct_model_desc);
}

/* The dimensions of a case and the one-step samples at each (a sample
 * costs d^2: the smallest d, measured best, pins the finite-d slope). */
#define DIMS 3, {200, 400, 800}
#define SAMPLES {160000, 80000, 40000}

/* The centred trace of a non-linear map with traceless matrices drifts
 * by the skew of the diagonal indices, O(d^-1/2) (theory/direct.md sec.
 * 7, item 3). */
static void trace_law(const char *name, int part, drift_law *law)
{
    if (strcmp(name, "trace_or_mean") == 0 && part != DRIFT_SECOND)
        law->p = 0.5;
}

/* He1 with a student twice the teacher's scale: every first-order kernel
 * and both noise kernels are large; He1's first-order terms are exact at
 * any d (Wick), its noise terms carry a 1/d token-norm term. */
static void test_kernels(void **state)
{
    (void)state;
    aim_config cfg;
    base_config(&cfg, "he1");
    cfg.student.scale = 2.0;
    const drift_case dc = {"He1, student scale 2, free start", DIMS, SAMPLES,
                           0.0, 0.0, 0.0, 1.0, 0, NULL};
    drift_run(&cfg, &dc, &direct_model_desc);
}

/* Weight decay (exact on both sides) and label noise, which is 62 % of
 * both noise kernels here (T^2 Delta and s_2 Delta against s_2^2
 * Omega_D and s_4 Omega_D, Omega_D = 1.25). */
static void test_decay_label_noise(void **state)
{
    (void)state;
    aim_config cfg;
    base_config(&cfg, "he1");
    cfg.gamma = 8.0;
    cfg.noise = 2.0;
    const drift_case dc = {"He1, weight decay 8, label noise 2, free start", DIMS,
                           SAMPLES, 0.0, 0.0, 0.0, 1.0, 0, NULL};
    drift_run(&cfg, &dc, &direct_model_desc);
}

/* A symmetric student with row softmax: the symmetrised gradient gives
 * the noise kernel (K_O + K_P)/2, and for softmax K_P is not K_O
 * (equivalent for elementwise maps on the symmetric manifold, not here). */
static void test_symmetric_softmax(void **state)
{
    (void)state;
    aim_config cfg;
    base_config(&cfg, "he1");
    cfg.output = AIM_SOFTMAX;
    cfg.beta = 1.0;
    cfg.eta = 0.5;
    cfg.student.symmetric = 1;
    const drift_case dc = {"symmetric student, row softmax, free start", DIMS,
                           SAMPLES, 0.0, 0.0, 1.0, 1.0, 0, trace_law};
    drift_run(&cfg, &dc, &direct_model_desc);
}

/* A traceful teacher (tied, rho* = 0.5, so that Tr S* / d = 0.5): the centred
 * trace moves at O(1), -A_I = -(T^2 + s_2)(t - t*) for He1. */
static void test_traceful_teacher(void **state)
{
    (void)state;
    aim_config cfg;
    base_config(&cfg, "he1");
    cfg.teacher.rho = 0.5;
    drift_config(&cfg, "teacher.decomposition=tied");
    const drift_case dc = {"He1, tied teacher (rho* = 0.5), free start", DIMS,
                           SAMPLES, 0.0, 0.0, 0.0, 1.0, 0, NULL};
    drift_run(&cfg, &dc, &direct_model_desc);
}

/* Raw centring, teacher mean 1, at the start: the mean's fast part -d
 * E_C (the identity part of G) and its O(1) part -A~_I, both exact at
 * any d for He1. */
static void test_raw_mean_start(void **state)
{
    (void)state;
    aim_config cfg;
    base_config(&cfg, "he1");
    cfg.centring = AIM_RAW;
    cfg.teacher.mean = 1.0;
    const drift_case dc = {"He1, raw, teacher mean 1, start", DIMS, SAMPLES,
                           0.0, 0.0, 0.0, 1.0, 0, NULL};
    drift_run(&cfg, &dc, &direct_model_desc);
}

/* Only the first-order parts (the noise parts of the same state are
 * compared at d >= 200 in test_raw_mean_start). */
static void first_only(const char *name, int part, drift_law *law)
{
    (void)name;
    law->compared = part != DRIFT_SECOND;
}

/* The raw mean's O(1) part -A~_I = -(T^2 + s_2)(m - m*) (He1) against the
 * centred part of its measured first-order coefficient, sqrt(d) sum_ab
 * e_ab h^c_ab(I): its per-sample spread grows like sqrt d, so it is
 * measured at small d, where He1's exactness (no finite-d term) allows it. */
static void test_raw_mean_slow(void **state)
{
    (void)state;
    aim_config cfg;
    base_config(&cfg, "he1");
    cfg.centring = AIM_RAW;
    cfg.teacher.mean = 1.0;
    const drift_case dc = {"He1, raw, teacher mean 1, start: the mean's O(1) part", 3,
                           {50, 100, 200}, {640000, 320000, 160000}, 0.0, 0.0, 0.0, 1.0, 0,
                           first_only};
    drift_run(&cfg, &dc, &direct_model_desc);
}

/* The default map at a trained state (the noise term's known finite-d
 * excess, theory/direct.md sec. 9). */
static void test_default_map(void **state)
{
    (void)state;
    aim_config cfg;
    base_config(&cfg, NULL);
    const drift_case dc = {"He1 + He2/sqrt 2, trained", DIMS, SAMPLES, 0.01,
                           0.0, 1.0, 1.0, 0, trace_law};
    drift_run(&cfg, &dc, &direct_model_desc);
}

int main(void)
{
    gsl_set_error_handler_off();
    /* AIMDYN_TEST_FILTER=test_x runs the matching tests only */
    if (getenv("AIMDYN_TEST_FILTER"))
        cmocka_set_test_filter(getenv("AIMDYN_TEST_FILTER"));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_step_expansion),
        cmocka_unit_test(test_kernels),
        cmocka_unit_test(test_decay_label_noise),
        cmocka_unit_test(test_symmetric_softmax),
        cmocka_unit_test(test_traceful_teacher),
        cmocka_unit_test(test_raw_mean_start),
        cmocka_unit_test(test_raw_mean_slow),
        cmocka_unit_test(test_default_map),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
