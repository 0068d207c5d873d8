/* Exact large-d moments of words in Gaussian factors (planar.h):
 * closed forms, freeness of independent letters against free cumulants
 * (freecum.h), every word of two alphabets against a brute-force genus
 * expansion over all Wick pairings, refused descriptions, the untied
 * wordsets (their time: validate/bench/bench_planar.c).
 * Every check is an exact identity: tolerances are round-off only. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_sf_gamma.h>

#include "freecum.h"
#include "planar.h"
#include "words.h"

#include "wick.h"

#define TOL 1e-12

static void assert_close(double got, double want, const char *what)
{
    if (!(fabs(got - want) <= TOL * fmax(1.0, fabs(want))))
        fail_msg("%s: %.17g, expected %.17g", what, got, want);
}

/* m(w) of one word; the description must be accepted */
static double moment(const aim_alphabet *ab, const char *w, const aim_planar_factor *fac,
                     int nf, const aim_planar_letter *let)
{
    char err[256] = "";
    double m = NAN;
    if (aim_planar_word(ab, w, fac, nf, let, &m, err, sizeof err))
        fail_msg("%s: %s", w, err);
    return m;
}

static double binomial(int n, int k)
{
    return gsl_sf_choose((unsigned)n, (unsigned)k);
}

/* A = W W^T, W d x rho d: free Poisson, m(A^n) = sum_k Narayana(n, k)
 * rho^k v^n, Narayana(n, k) = C(n, k) C(n, k - 1) / n. */
static void test_wishart(void **state)
{
    (void)state;
    const aim_alphabet ab = {"A", "A"};
    const aim_planar_letter A = {2, {0, 0}, {0, 1}};
    const double rhos[] = {0.5, 1.0, 2.5}, v = 0.3;
    for (int r = 0; r < 3; r++) {
        const aim_planar_factor W = {rhos[r], v, 0};
        char w[AIM_WORD_MAX + 1] = "";
        for (int n = 1; n <= 11; n++) {
            strcat(w, "A");
            double want = 0.0;
            for (int k = 1; k <= n; k++)
                want += binomial(n, k) * binomial(n, k - 1) / n * pow(rhos[r], k);
            assert_close(moment(&ab, w, &W, 1, &A), want * pow(v, n), w);
        }
    }
}

/* Wigner H: semicircle, m(H^2n) = Catalan(n) v^n, odd moments 0. */
static void test_wigner(void **state)
{
    (void)state;
    const aim_alphabet ab = {"H", "H"};
    const aim_planar_factor H = {0.0, 0.7, 1}; /* rho ignored */
    const aim_planar_letter h = {1, {0}, {0}};
    char w[AIM_WORD_MAX + 1] = "";
    for (int n = 1; n <= 22; n++) {
        strcat(w, "H");
        const double want = n % 2 ? 0.0 : binomial(n, n / 2) / (n / 2 + 1) * pow(0.7, n / 2);
        assert_close(moment(&ab, w, &H, 1, &h), want, w);
    }
}

/* Square non-symmetric G (circular): G G^T is free Poisson with rho = 1,
 * m((G G^T)^n) = Catalan(n) v^n; a word without as many G as G^T, or
 * with G G paired, vanishes. */
static void test_circular(void **state)
{
    (void)state;
    const aim_alphabet ab = {"Gg", "gG"};
    const double v = 1.3;
    const aim_planar_factor G = {1.0, v, 0};
    const aim_planar_letter let[] = {{1, {0}, {0}}, {1, {0}, {1}}};
    assert_close(moment(&ab, "", &G, 1, let), 1.0, "empty");
    assert_close(moment(&ab, "G", &G, 1, let), 0.0, "G");
    assert_close(moment(&ab, "GG", &G, 1, let), 0.0, "GG");
    assert_close(moment(&ab, "Gg", &G, 1, let), v, "Gg");
    assert_close(moment(&ab, "GgGg", &G, 1, let), 2 * v * v, "GgGg");
    assert_close(moment(&ab, "GGgg", &G, 1, let), v * v, "GGgg"); /* only (G(Gg)g) */
    assert_close(moment(&ab, "GGGggg", &G, 1, let), pow(v, 3), "GGGggg");
    char w[AIM_WORD_MAX + 1] = "";
    for (int n = 1; n <= 11; n++) {
        strcat(w, "Gg");
        assert_close(moment(&ab, w, &G, 1, let), binomial(2 * n, n) / (n + 1) * pow(v, n), w);
    }
}

/* Untied student: U, V d x p (p = rho d), scales vu, vv; A = U U^T,
 * B = V V^T, K = U V^T, k = V U^T. Hand values: with X = U^T U and
 * Y = V^T V (free, p x p, normalised trace psi = Tr/p: psi(X) = vu,
 * psi(X^2) = (1 + rho) vu^2), Tr(w)/d = rho psi(...). */
static void test_untied(void **state)
{
    (void)state;
    const aim_alphabet ab = {"ABKk", "ABkK"};
    const double rho = 0.6, vu = 0.25, vv = 0.4;
    const aim_planar_factor fac[] = {{rho, vu, 0}, {rho, vv, 0}};
    const aim_planar_letter let[] = {
        {2, {0, 0}, {0, 1}}, {2, {1, 1}, {0, 1}}, {2, {0, 1}, {0, 1}}, {2, {1, 0}, {0, 1}}};
#define M(w) moment(&ab, w, fac, 2, let)
    const double a1 = rho * vu, a2 = (rho + rho * rho) * vu * vu;
    const double b1 = rho * vv, b2 = (rho + rho * rho) * vv * vv;
    assert_close(M("A"), a1, "A");
    assert_close(M("B"), b1, "B");
    assert_close(M("K"), 0.0, "K");
    assert_close(M("k"), 0.0, "k");
    assert_close(M("KK"), 0.0, "KK");
    assert_close(M("Kk"), rho * vu * vv, "Kk");
    assert_close(M("kK"), rho * vu * vv, "kK");
    assert_close(M("AKk"), rho * (1 + rho) * vu * vu * vv, "AKk");
    /* U (U^T V)(U^T U) V^T: (U^T U) ~ vu I_p, then V V^T, then U U^T */
    assert_close(M("AkK"), rho * rho * vu * vu * vv, "AkK");
    assert_close(M("KkKk"), rho * (1 + 2 * rho) * vu * vu * vv * vv, "KkKk");
    assert_close(M("AK"), 0.0, "AK");
    assert_close(M("AKB"), 0.0, "AKB");
    /* A and B are free */
    assert_close(M("AB"), a1 * b1, "AB");
    assert_close(M("AABB"), a2 * b2, "AABB");
    assert_close(M("ABAB"), a2 * b1 * b1 + a1 * a1 * b2 - a1 * a1 * b1 * b1, "ABAB");
#undef M
}

/* Independent letters are asymptotically free: every word of length <= 6
 * in a tied student A = W W^T, an untied-width B = V V^T, a Wigner H and
 * a circular G (g = G^T) against the moment-cumulant formula, with the
 * cumulants kappa(A^n) = rho_W v_W^n, kappa(B^n) = rho_V v_V^n,
 * kappa(HH) = v_H, kappa(Gg) = v_G, all others 0. */
static void check_free(const aim_alphabet *ab, int max_len, const aim_planar_factor *fac,
                       int nf, const aim_planar_letter *let)
{
    aim_wordset *ws = aim_wordset_create(ab, max_len);
    assert_non_null(ws);
    aim_freecum *fc = aim_freecum_create(ws);
    assert_non_null(fc);
    const int count = aim_wordset_count(ws);
    double *kappa = calloc((size_t)count, sizeof *kappa);
    double *free_m = calloc((size_t)count, sizeof *free_m);
    double *planar = calloc((size_t)count, sizeof *planar);
    assert_non_null(kappa);
    assert_non_null(free_m);
    assert_non_null(planar);
    for (int i = 1; i < count; i++) {
        const char *w = aim_wordset_word(ws, i);
        const size_t n = strlen(w);
        if (strspn(w, "A") == n)
            kappa[i] = fac[0].rho * pow(fac[0].scale, (double)n);
        else if (strspn(w, "B") == n)
            kappa[i] = fac[1].rho * pow(fac[1].scale, (double)n);
        else if (!strcmp(w, "HH"))
            kappa[i] = fac[2].scale;
    }
    const int gg = aim_wordset_find(ws, "Gg");
    if (gg >= 0)
        kappa[gg] = fac[3].scale;
    free_m[0] = 1.0;
    aim_freecum_moments(fc, kappa, free_m, 1, max_len);
    char err[256];
    assert_int_equal(aim_planar_moments(ws, max_len, fac, nf, let, planar, err, sizeof err), 0);
    for (int i = 0; i < count; i++)
        assert_close(planar[i], free_m[i], aim_wordset_word(ws, i));
    free(kappa);
    free(free_m);
    free(planar);
    aim_freecum_free(fc);
    aim_wordset_free(ws);
}

static const aim_planar_factor free_factors[] = {
    {0.5, 0.25, 0}, {2.5, 0.4, 0}, {0.0, 0.7, 1}, {1.0, 1.3, 0}};
static const aim_planar_letter free_letters[] = {
    {2, {0, 0}, {0, 1}}, {2, {1, 1}, {0, 1}}, {1, {2}, {0}}, {1, {3}, {0}}, {1, {3}, {1}}};

static void test_freeness(void **state)
{
    (void)state;
    const aim_alphabet AH = {"AH", "AH"};
    const aim_planar_letter ah[] = {free_letters[0], free_letters[2]};
    check_free(&AH, 6, free_factors, 3, ah);
    const aim_alphabet ABHGg = {"ABHGg", "ABHgG"};
    check_free(&ABHGg, 6, free_factors, 4, free_letters);
}

/* Brute force (wick.h): the expectation as a sum over all Wick pairings
 * of the occurrences (crossing and twisted ones included): the power of d
 * must never exceed 0, and the coefficient of d^0 must be the planar
 * moment. */
static void check_brute_linked(const aim_alphabet *ab, int max_len,
                               const aim_planar_factor *fac, int nf,
                               const aim_planar_link *links, int n_links,
                               const aim_planar_letter *let)
{
    aim_wordset *ws = aim_wordset_create(ab, max_len);
    assert_non_null(ws);
    const int count = aim_wordset_count(ws);
    double *planar = malloc(sizeof(double) * (size_t)count);
    assert_non_null(planar);
    char err[256];
    if (aim_planar_moments_linked(ws, max_len, fac, nf, links, n_links, let, planar, err,
                                  sizeof err))
        fail_msg("%s", err);
    int nonzero = 0, subleading = 0;
    assert_close(planar[0], 1.0, "empty word");
    for (int i = 1; i < count; i++) {
        const char *w = aim_wordset_word(ws, i);
        wick_word o = {0};
        wick_add(&o, ab, w, fac, let);
        const wick_sum b = wick_expect_linked(&o, fac, links, n_links, 0.0, 0);
        if (b.pairings && b.max_power > 0)
            fail_msg("%s: a pairing of order d^%d", w, b.max_power);
        assert_close(planar[i], b.leading, w);
        nonzero += b.leading != 0.0;
        subleading += b.pairings > 0 && b.leading == 0.0;
    }
    print_message("%s up to %d letters: %d words, %d with a non-zero moment, %d with "
                  "pairings of lower order only\n", ab->letters, max_len, count, nonzero,
                  subleading);
    free(planar);
    aim_wordset_free(ws);
}

static void check_brute(const aim_alphabet *ab, int max_len, const aim_planar_factor *fac,
                        int nf, const aim_planar_letter *let)
{
    check_brute_linked(ab, max_len, fac, nf, NULL, 0, let);
}

/* the untied student and teacher of the hierarchy */
static const aim_alphabet untied = {"ABKkTt", "ABkKtT"};
static const aim_planar_factor untied_factors[] = {
    {0.5, 0.25, 0}, {0.5, 0.4, 0}, {1.0, 1.0, 0}, {1.0, 1.0, 0}};
static const aim_planar_letter untied_letters[] = {
    {2, {0, 0}, {0, 1}}, {2, {1, 1}, {0, 1}}, {2, {0, 1}, {0, 1}},
    {2, {1, 0}, {0, 1}}, {2, {2, 3}, {0, 1}}, {2, {3, 2}, {0, 1}}};

static void test_brute_force(void **state)
{
    (void)state;
    check_brute(&untied, 5, untied_factors, 4, untied_letters);
    /* a tall W (rho 2.5), Wigner and circular letters */
    const aim_alphabet BHGg = {"BHGg", "BHgG"};
    check_brute(&BHGg, 6, free_factors, 4, free_letters + 1);
    /* a letter mixing kinds of factors: R = G H (circular times Wigner),
     * r = R^T = H G^T */
    const aim_alphabet Rr = {"ARr", "ArR"};
    const aim_planar_letter rl[] = {free_letters[0], {2, {3, 2}, {0, 0}}, {2, {2, 3}, {0, 1}}};
    check_brute(&Rr, 5, free_factors, 4, rl);
}

/* Linked factors (the informed start, src/students/inform.h): columns shared by
 * factors of different widths, against the brute force. */
static void test_brute_force_linked(void **state)
{
    (void)state;
    /* tied student W (rho 0.5) sharing its columns with W* (rho* 1.5) */
    const aim_alphabet ST = {"ST", "ST"};
    const aim_planar_factor tied[] = {{0.5, 0.3, 0}, {1.5, 1.2, 0}};
    const aim_planar_link tied_link = {0, 1, 0.4, 0.5};
    const aim_planar_letter tied_letters[] = {{2, {0, 0}, {0, 1}}, {2, {1, 1}, {0, 1}}};
    check_brute_linked(&ST, 6, tied, 2, &tied_link, 1, tied_letters);
    /* untied U, V (rho 1.5) on a tied teacher W* (rho* 0.5): U and V
     * share their first 0.5 d columns with W* and with each other */
    const aim_alphabet ut = {"ABKkT", "ABkKT"};
    const aim_planar_factor uv[] = {{1.5, 0.25, 0}, {1.5, 0.4, 0}, {0.5, 2.0, 0}};
    const aim_planar_link uv_links[] = {{0, 2, 0.3, 0.5}, {1, 2, 0.5, 0.5}, {0, 1, 0.1, 0.5}};
    const aim_planar_letter uv_letters[] = {{2, {0, 0}, {0, 1}}, {2, {1, 1}, {0, 1}},
                                            {2, {0, 1}, {0, 1}}, {2, {1, 0}, {0, 1}},
                                            {2, {2, 2}, {0, 1}}};
    check_brute_linked(&ut, 4, uv, 3, uv_links, 3, uv_letters);
    /* the recursion of linked factors (planar.c sec. 6) on independent
     * ones (a link of covariance 0): the untied start of test_brute_force */
    const aim_planar_link none = {0, 2, 0.0, 0.5};
    check_brute_linked(&untied, 5, untied_factors, 4, &none, 1, untied_letters);
    /* two linked Wigner matrices */
    const aim_alphabet HJ = {"HJ", "HJ"};
    const aim_planar_factor wig[] = {{0.0, 0.5, 1}, {0.0, 1.5, 1}};
    const aim_planar_link wig_link = {0, 1, -0.6, 1.0};
    const aim_planar_letter wig_letters[] = {{1, {0}, {0}}, {1, {1}, {0}}};
    check_brute_linked(&HJ, 6, wig, 2, &wig_link, 1, wig_letters);
}

static void expect_error(const aim_alphabet *ab, const char *w, const aim_planar_factor *fac,
                         int nf, const aim_planar_letter *let, const char *part)
{
    char err[256] = "";
    double m = 0.0;
    assert_int_equal(aim_planar_word(ab, w, fac, nf, let, &m, err, sizeof err), -1);
    if (!strstr(err, part))
        fail_msg("'%s': message \"%s\" lacks \"%s\"", w, err, part);
}

static void test_refused(void **state)
{
    (void)state;
    const aim_alphabet Kk = {"Kk", "kK"};
    const aim_planar_factor uv[] = {{0.5, 1.0, 0}, {0.7, 1.0, 0}};
    const aim_planar_letter kl[] = {{2, {0, 1}, {0, 1}}, {2, {1, 0}, {0, 1}}};
    expect_error(&Kk, "Kk", uv, 2, kl, "rows where");
    const aim_planar_factor uv5[] = {{0.5, 1.0, 0}, {0.5, 1.0, 0}};
    const aim_planar_letter wrong_t[] = {{2, {0, 1}, {0, 1}}, {2, {0, 1}, {0, 1}}};
    expect_error(&Kk, "Kk", uv5, 2, wrong_t, "not the transposed product");
    const aim_planar_letter wrong_f[] = {{2, {0, 1}, {0, 1}}, {2, {0, 1}, {1, 0}}};
    expect_error(&Kk, "Kk", uv5, 2, wrong_f, "rows where");
    const aim_alphabet G = {"G", "G"};
    const aim_planar_letter g = {1, {0}, {0}};
    /* a rectangular factor alone is not d x d */
    expect_error(&G, "G", uv5, 1, &g, "columns, not d");
    /* a square non-symmetric factor is not its own transpose */
    const aim_planar_factor sq = {1.0, 1.0, 0};
    expect_error(&G, "G", &sq, 1, &g, "not the transposed product");
    const aim_planar_letter bad_n = {3, {0}, {0}}, bad_f = {1, {1}, {0}}, bad_t = {1, {0}, {2}};
    const aim_planar_factor wig = {0.0, 1.0, 1};
    assert_close(moment(&G, "GG", &wig, 1, &g), 1.0, "GG");
    expect_error(&G, "G", &wig, 1, &bad_n, "1 or 2 factors");
    expect_error(&G, "G", &wig, 1, &bad_f, "factor 0 is 1");
    expect_error(&G, "G", &wig, 1, &bad_t, "transpose 2");
    const aim_planar_factor neg = {1.0, -1.0, 0}, flat = {0.0, 1.0, 0}, two = {1.0, 1.0, 2};
    expect_error(&G, "G", &neg, 1, &g, "scale >= 0");
    expect_error(&G, "G", &flat, 1, &g, "rho > 0");
    expect_error(&G, "G", &two, 1, &g, "0 or 1");
    expect_error(&G, "GX", &wig, 1, &g, "not a word");
    const aim_alphabet dup = {"GG", "GG"};
    expect_error(&dup, "G", &wig, 1, &g, "invalid alphabet");

    aim_wordset *ws = aim_wordset_create(&G, 3);
    assert_non_null(ws);
    double m[4];
    char err[256];
    assert_int_equal(aim_planar_moments(ws, 4, &wig, 1, &g, m, err, sizeof err), -1);
    assert_non_null(strstr(err, "max_len"));
    /* entries above max_len are left alone */
    m[3] = 42.0;
    assert_int_equal(aim_planar_moments(ws, 2, &wig, 1, &g, m, err, sizeof err), 0);
    assert_close(m[0], 1.0, "");
    assert_close(m[1], 0.0, "G");
    assert_close(m[2], 1.0, "GG");
    assert_close(m[3], 42.0, "untouched");
    aim_wordset_free(ws);
}

/* The untied wordset up to 5 and to 7 letters, and a word of 11 letters,
 * computed (their time is measured by validate/bench/bench_planar.c: a
 * bound on wall time fails by the machine's load, not by the code). */
static void test_untied_wordsets(void **state)
{
    (void)state;
    for (int len = 5; len <= 7; len += 2) {
        aim_wordset *ws = aim_wordset_create(&untied, len);
        assert_non_null(ws);
        double *m = malloc(sizeof(double) * (size_t)aim_wordset_count(ws));
        assert_non_null(m);
        char err[256];
        assert_int_equal(aim_planar_moments(ws, len, untied_factors, 4, untied_letters, m, err,
                                            sizeof err), 0);
        free(m);
        aim_wordset_free(ws);
    }
    assert_true(isfinite(moment(&untied, "AKkBTtAKkBA", untied_factors, 4, untied_letters)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wishart),     cmocka_unit_test(test_wigner),
        cmocka_unit_test(test_circular),    cmocka_unit_test(test_untied),
        cmocka_unit_test(test_freeness),    cmocka_unit_test(test_brute_force),
        cmocka_unit_test(test_brute_force_linked),
        cmocka_unit_test(test_refused),     cmocka_unit_test(test_untied_wordsets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
