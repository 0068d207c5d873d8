/* The generated tied hierarchy against the equations derived by hand
 * (theory/tied.md sec. 0, 9, 10), its size for M = 1..8, the closures'
 * exactness at the free start, and the printed forms. */
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

#include "hierarchy.h"
#include "tied.h"
#include "untied.h"

static void tied_config(aim_config *cfg, int order)
{
    aim_config_error e;
    aim_config_defaults(cfg);
    assert_int_equal(aim_config_set(cfg, "model.decomposition=tied", &e), 0);
    assert_int_equal(aim_config_set(cfg, "teacher.decomposition=tied", &e), 0);
    assert_int_equal(aim_config_validate(cfg, &e), 0);
    cfg->order = order;
}

static void test_sizes(void **state)
{
    (void)state;
    /* binary bracelets of length 1..M minus the pure-teacher word */
    static const int equations[] = {1, 3, 6, 11, 18, 30, 47, 76};
    static const int terms[] = {7, 23, 52, 109, 210, 408, 771, 1494};
    for (int M = 1; M <= 8; M++) {
        aim_config cfg;
        tied_config(&cfg, M);
        char err[256];
        aim_tied *m = aim_tied_create(&cfg, AIM_RULE_AUTO, err, sizeof err);
        assert_non_null(m);
        assert_int_equal(aim_tied_size(m), equations[M - 1]);
        assert_int_equal(aim_hierarchy_terms(aim_tied_hierarchy(m)), terms[M - 1]);
        aim_tied_free(m);
    }
}

/* M = 2 by hand (theory/tied.md sec. 9) at arbitrary moments and kernels */
static void test_order2_by_hand(void **state)
{
    (void)state;
    aim_config cfg;
    tied_config(&cfg, 2);
    char err[256];
    aim_tied *m = aim_tied_create(&cfg, AIM_RULE_AUTO, err, sizeof err);
    assert_non_null(m);
    const aim_hierarchy *h = aim_tied_hierarchy(m);
    const aim_wordset *ws = aim_hierarchy_words(h);
    const int count = aim_wordset_count(ws);
    double *mom = malloc(sizeof *mom * (size_t)count);
    assert_non_null(mom);
    for (int i = 0; i < count; i++)
        mom[i] = 0.3 + 0.17 * i + 0.01 * i * i; /* distinct values */
    mom[0] = 1.0;
#define M_(w) mom[aim_wordset_find(ws, w)]
    const double aS = 0.7, bS = -0.2, aT = -1.3, bT = 0.4, KO = 0.9, KP = 0.35, g = 0.6;
    const double k[AIM_KERNEL_COUNT] = {aS, bS, aT, bT, KO, KP, g};
    double grad[3], noise[3], decay[3];
    aim_hierarchy_eval(h, mom, k, grad, noise, decay);
    const double gS = aS + bS, gT = aT + bT, K = KO + KP;
    double want_g[3], want_n[3], want_d[3];
    const char *order[3] = {"S", "SS", "ST"};
    want_g[0] = -4 * gS * M_("SS") - 4 * gT * M_("ST");
    want_n[0] = 2 * K * M_("S");
    want_d[0] = -2 * g * M_("S");
    want_g[1] = -8 * gS * M_("SSS") - 8 * gT * M_("SST");
    want_n[1] = K * (4 * M_("SS") + 8 * M_("S") * M_("S"));
    want_d[1] = -4 * g * M_("SS");
    want_g[2] = -4 * gS * M_("SST") - 4 * gT * M_("STT");
    want_n[2] = 2 * K * M_("S") * M_("T");
    want_d[2] = -2 * g * M_("ST");
    for (int i = 0; i < 3; i++) {
        int e = -1;
        for (int j = 0; j < 3; j++)
            if (aim_hierarchy_tracked(h, j) == aim_wordset_find(ws, order[i]))
                e = j;
        assert_true(e >= 0);
        assert_true(fabs(grad[e] - want_g[i]) < 1e-12 * (1 + fabs(want_g[i])));
        assert_true(fabs(noise[e] - want_n[i]) < 1e-12 * (1 + fabs(want_n[i])));
        assert_true(fabs(decay[e] - want_d[i]) < 1e-12 * (1 + fabs(want_d[i])));
    }
    /* the M = 3 equation of m(SST) (theory/tied.md sec. 10) */
    cfg.order = 3;
    aim_tied *m3 = aim_tied_create(&cfg, AIM_RULE_AUTO, err, sizeof err);
    assert_non_null(m3);
    const aim_hierarchy *h3 = aim_tied_hierarchy(m3);
    const aim_wordset *w3 = aim_hierarchy_words(h3);
    double *mom3 = malloc(sizeof *mom3 * (size_t)aim_wordset_count(w3));
    assert_non_null(mom3);
    for (int i = 0; i < aim_wordset_count(w3); i++)
        mom3[i] = 0.2 + 0.11 * i;
    mom3[0] = 1.0;
    double g3[6], n3[6], d3[6];
    aim_hierarchy_eval(h3, mom3, k, g3, n3, d3);
#define M3(w) mom3[aim_wordset_find(w3, w)]
    int e = -1;
    for (int j = 0; j < 6; j++)
        if (aim_hierarchy_tracked(h3, j) == aim_wordset_find(w3, "SST"))
            e = j;
    assert_true(e >= 0);
    double wg = -8 * gS * M3("SSST") - 4 * gT * (M3("SSTT") + M3("STST"));
    double wn = K * (2 * M3("SST") + 8 * M3("S") * M3("ST") + 2 * M3("T") * M3("SS"));
    assert_true(fabs(g3[e] - wg) < 1e-12 * (1 + fabs(wg)));
    assert_true(fabs(n3[e] - wn) < 1e-12 * (1 + fabs(wn)));
    assert_true(fabs(d3[e] + 4 * g * M3("SST")) < 1e-12);
    free(mom);
    free(mom3);
    aim_tied_free(m);
    aim_tied_free(m3);
}

/* At the free start every closure reproduces the exact moments of the
 * words of length M + 1 (theory/tied.md sec. 6). */
static void test_closures_exact_at_start(void **state)
{
    (void)state;
    for (int cl = AIM_CLOSURE_ALIGNED; cl <= AIM_CLOSURE_INITIAL; cl++)
        for (int M = 1; M <= 5; M++) {
            aim_config cfg;
            tied_config(&cfg, M);
            cfg.closure = (aim_closure)cl;
            cfg.student.rho = 0.5;
            char err[256];
            aim_tied *m = aim_tied_create(&cfg, AIM_RULE_AUTO, err, sizeof err);
            assert_non_null(m);
            const aim_wordset *ws = aim_hierarchy_words(aim_tied_hierarchy(m));
            const int count = aim_wordset_count(ws);
            double *y = malloc(sizeof *y * (size_t)aim_tied_size(m));
            double *mom = malloc(sizeof *mom * (size_t)count);
            assert_true(y && mom);
            aim_tied_initial(m, y);
            aim_tied_moments(m, y, mom);
            const double *exact = aim_tied_start_moments(m);
            for (int i = 0; i < count; i++)
                assert_true(fabs(mom[i] - exact[i]) <= 1e-12 * fabs(exact[i]) + 1e-14);
            free(y);
            free(mom);
            aim_tied_free(m);
        }
}

/* The aligned closure is exact at S = S* (c = 1); the cumulant closure
 * is not (it drops the top mixed cumulants). */
static void test_aligned_exact_at_teacher(void **state)
{
    (void)state;
    aim_config cfg;
    tied_config(&cfg, 3);
    cfg.student.scale = cfg.teacher.scale; /* same law: start = teacher's */
    char err[256];
    aim_tied *m = aim_tied_create(&cfg, AIM_RULE_AUTO, err, sizeof err);
    assert_non_null(m);
    const aim_hierarchy *h = aim_tied_hierarchy(m);
    const aim_wordset *ws = aim_hierarchy_words(h); /* re-read when m is recreated */
    const int count = aim_wordset_count(ws), n = aim_tied_size(m);
    /* moments of the pair (S*, S*): every word equals the teacher's
     * moment of its length */
    const double *start = aim_tied_start_moments(m);
    char tw[16];
    double *y = malloc(sizeof *y * (size_t)n), *mom = malloc(sizeof *mom * (size_t)count);
    double *want = malloc(sizeof *want * (size_t)count);
    assert_true(y && mom && want);
    for (int i = 0; i < count; i++) {
        int len = aim_wordset_len(ws, i);
        memset(tw, 'T', (size_t)len);
        tw[len] = '\0';
        want[i] = start[aim_wordset_find(ws, tw)];
    }
    for (int i = 0; i < n; i++)
        y[i] = want[aim_hierarchy_tracked(h, i)];
    aim_tied_moments(m, y, mom);
    for (int i = aim_wordset_first(ws, 4); i < count; i++)
        assert_true(fabs(mom[i] - want[i]) < 1e-10 * want[i]);
    aim_tied_free(m);
    cfg.closure = AIM_CLOSURE_CUMULANT;
    m = aim_tied_create(&cfg, AIM_RULE_AUTO, err, sizeof err);
    assert_non_null(m);
    ws = aim_hierarchy_words(aim_tied_hierarchy(m)); /* the old set was freed */
    aim_tied_moments(m, y, mom);
    double worst = 0.0;
    for (int i = aim_wordset_first(ws, 4); i < count; i++)
        worst = fmax(worst, fabs(mom[i] - want[i]) / want[i]);
    assert_true(worst > 0.01);
    aim_tied_free(m);
    free(y);
    free(mom);
    free(want);
}

/* aim_tied_check: the free start is valid; moments with a valid Gram
 * matrix but a traceless overlap of -5 are not (the overlap function
 * clamps, the check must not); m(SS) < m(S)^2 is not. */
static void test_validity_check(void **state)
{
    (void)state;
    aim_config cfg;
    tied_config(&cfg, 2); /* tracked: m(S), m(SS), m(ST); m(T) = 1, m(TT) = 2 */
    char err[256];
    aim_tied *m = aim_tied_create(&cfg, AIM_RULE_AUTO, err, sizeof err);
    assert_non_null(m);
    double y[3];
    aim_tied_initial(m, y);
    assert_int_equal(aim_tied_check(m, y), 0);
    const aim_wordset *ws = aim_hierarchy_words(aim_tied_hierarchy(m));
    int iS = -1, iSS = -1, iST = -1;
    for (int i = 0; i < 3; i++) {
        const char *w = aim_wordset_word(ws, aim_hierarchy_tracked(aim_tied_hierarchy(m), i));
        if (!strcmp(w, "S"))
            iS = i;
        else if (!strcmp(w, "SS"))
            iSS = i;
        else
            iST = i;
    }
    y[iS] = 1.0;
    y[iSS] = 1.1;
    y[iST] = 0.5; /* Gram m(SS) m(TT) = 2.2 >= 0.25, but (0.5 - 1)^2 > 0.1 x 1 */
    assert_int_equal(aim_tied_check(m, y), -1);
    assert_non_null(strstr(aim_tied_error(m), "kappa_2(S,S*)^2 <= kappa_2(S,S) kappa_2(S*,S*)"));
    y[iST] = 1.0;
    y[iSS] = 0.9; /* m(SS) < m(S)^2 */
    assert_int_equal(aim_tied_check(m, y), -1);
    assert_non_null(strstr(aim_tied_error(m), "m(SS) >= m(S)^2 fails"));
    aim_tied_free(m);
}

static void test_print(void **state)
{
    (void)state;
    aim_config cfg;
    tied_config(&cfg, 2);
    char err[256];
    aim_tied *m = aim_tied_create(&cfg, AIM_RULE_AUTO, err, sizeof err);
    assert_non_null(m);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    aim_hierarchy_print(aim_tied_hierarchy(m), f, 0);
    aim_hierarchy_print(aim_tied_hierarchy(m), f, 1);
    fclose(f);
    assert_non_null(strstr(buf, "3 equations, 23 terms"));
    assert_non_null(strstr(buf, "d m(SS)/dtau = g_S (-8 m(SSS)) + g_T (-8 m(SST)) + eta K "
                                "(4 m(SS) + 8 m(S) m(S)) + gamma (-4 m(SS))"));
    assert_non_null(strstr(buf, "\\begin{align*}"));
    assert_non_null(strstr(buf, "m(S {S^{*}}^{2})"));
    free(buf);
    aim_tied_free(m);
}

static aim_untied *untied_model(int order, const char *const *sets, size_t n, double d)
{
    aim_config cfg;
    aim_config_error e;
    aim_config_defaults(&cfg);
    assert_int_equal(aim_config_set(&cfg, "model.decomposition=untied", &e), 0);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(aim_config_set(&cfg, sets[i], &e), 0);
    cfg.order = order;
    assert_int_equal(aim_config_validate(&cfg, &e), 0);
    char err[256];
    aim_untied *m = aim_untied_create(&cfg, d, AIM_RULE_AUTO, err, sizeof err);
    if (!m)
        fail_msg("%s", err);
    return m;
}

/* Untied sizes (non-symmetric teacher: 6 letters; symmetric: 5), counted
 * independently by brute-force enumeration of the bracelets with a
 * student letter (a short Python loop over all words), and the
 * raw mean terms: one per first-order term, in raw centring only. */
static void test_untied_sizes(void **state)
{
    (void)state;
    static const int size6[] = {0, 0, 14, 56, 235, 1047}, size5[] = {0, 0, 13, 42, 141};
    static const char *const sym[] = {"teacher.symmetric=true"};
    static const char *const raw[] = {"model.centring=raw"};
    for (int M = 2; M <= 5; M++) {
        aim_untied *m = untied_model(M, NULL, 0, 0.0);
        assert_int_equal(aim_untied_size(m), size6[M]);
        aim_untied_free(m);
    }
    for (int M = 2; M <= 4; M++) {
        aim_untied *m = untied_model(M, sym, 1, 0.0);
        assert_int_equal(aim_untied_size(m), size5[M]);
        aim_untied_free(m);
    }
    aim_untied *c = untied_model(3, NULL, 0, 0.0), *r = untied_model(3, raw, 1, 400.0);
    assert_true(aim_hierarchy_terms(aim_untied_hierarchy(r)) >
                aim_hierarchy_terms(aim_untied_hierarchy(c)));
    assert_string_equal(aim_untied_state_name(r, 2), "mean");
    assert_string_equal(aim_untied_state_name(c, 2), "m(K)");
    aim_untied_free(c);
    aim_untied_free(r);
}

/* The largest |stiff - adiabatic| right-hand side over every equation
 * but K's, the stiff system at dimension big with its mean set where its
 * own equation vanishes (bisection); *mean gets that mean. */
static double stiff_vs_adiabatic(double big, double *mean_out, double *scale)
{
    static const char *const ad_sets[] = {"model.activation=he1", "model.centring=raw",
                                          "teacher.mean=0.7", "hierarchy.mean=adiabatic"};
    static const char *const st_sets[] = {"model.activation=he1", "model.centring=raw",
                                          "teacher.mean=0.7", "hierarchy.mean=stiff"};
    aim_untied *ad = untied_model(3, ad_sets, 4, 400.0), *st = untied_model(3, st_sets, 4, big);
    const int n = aim_untied_size(ad), k = aim_untied_k_slot(ad);
    assert_int_equal(aim_untied_size(st), n);
    double *y = malloc(sizeof *y * (size_t)n), *ya = malloc(sizeof *ya * (size_t)n);
    double *da = malloc(sizeof *da * (size_t)n), *ds = malloc(sizeof *ds * (size_t)n);
    assert_true(y && ya && da && ds);
    aim_untied_initial(ad, ya);
    assert_int_equal(aim_untied_settle(ad, 0.0), 0);
    for (int i = 0; i < n; i++) /* off the start, with student-teacher correlation */
        ya[i] = i == k ? 0.0 : ya[i] * (1.0 + 0.02 * (i % 3)) + 0.01 * (i % 2);
    assert_int_equal(aim_untied_rhs(ad, ya, da), 0);
    double mean;
    assert_int_equal(aim_untied_mean(ad, ya, &mean), 0);
    assert_true(fabs(mean - 0.7) < 1e-9);
    memcpy(y, ya, sizeof *y * (size_t)n);
    double lo = mean - 0.1, hi = mean + 0.1;
    y[k] = lo;
    assert_int_equal(aim_untied_rhs(st, y, ds), 0);
    const double f_lo = ds[k];
    y[k] = hi;
    assert_int_equal(aim_untied_rhs(st, y, ds), 0);
    assert_true((f_lo > 0.0) != (ds[k] > 0.0));
    for (int it = 0; it < 100; it++) {
        y[k] = 0.5 * (lo + hi);
        assert_int_equal(aim_untied_rhs(st, y, ds), 0);
        if ((ds[k] > 0.0) == (f_lo > 0.0))
            lo = y[k];
        else
            hi = y[k];
    }
    double worst = 0.0;
    *scale = 0.0;
    for (int i = 0; i < n; i++)
        if (i != k) {
            worst = fmax(worst, fabs(ds[i] - da[i]));
            *scale = fmax(*scale, fabs(da[i]));
        }
    *mean_out = y[k];
    free(y);
    free(ya);
    free(da);
    free(ds);
    aim_untied_free(ad);
    aim_untied_free(st);
    return worst;
}

/* The adiabatic limit is the stiff system's slow manifold at large d
 * (theory/untied.md sec. 3): with the stiff mean where its own equation
 * vanishes, every other right-hand side of the stiff system tends to the
 * adiabatic one like 1/sqrt d (the teacher mean's m* over sqrt d and m(K) =
 * mean/sqrt d in the moments), so the largest difference falls by 10
 * from d = 1e8 to 1e10; and the mean is the adiabatic critical point
 * (He1, T = 2, C = I: dR/dm = T (m - m*), so m* = 0.7 exactly). A wrong
 * lambda* (e.g. without its division by m(A) + m(B)) would leave O(1)
 * differences in every equation with a mean term. */
static void test_untied_adiabatic(void **state)
{
    (void)state;
    double mean8, mean10, scale;
    const double gap8 = stiff_vs_adiabatic(1e8, &mean8, &scale);
    const double gap10 = stiff_vs_adiabatic(1e10, &mean10, &scale);
    print_message("  stiff on its slow manifold against the adiabatic limit: largest gap %.3g "
                  "(d = 1e8), %.3g (d = 1e10), largest rate %.3g; means %.8f, %.8f\n",
                  gap8, gap10, scale, mean8, mean10);
    assert_true(fabs(mean10 - 0.7) < 1e-4);
    assert_true(gap10 < 1e-3 * scale);
    assert_true(gap10 > 0.05 * gap8 && gap10 < 0.2 * gap8);
}

int main(void)
{
    gsl_set_error_handler_off();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_order2_by_hand),
        cmocka_unit_test(test_closures_exact_at_start),
        cmocka_unit_test(test_aligned_exact_at_teacher),
        cmocka_unit_test(test_validity_check),
        cmocka_unit_test(test_print),
        cmocka_unit_test(test_untied_sizes),
        cmocka_unit_test(test_untied_adiabatic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
