/* Words, their canonical classes and moments, and free cumulants. Every
 * check here is an exact identity, so tolerances are round-off only. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "freecum.h"
#include "words.h"

static const aim_alphabet tied = {"ST", "ST"};
/* A, B symmetric; K and k = K^T */
static const aim_alphabet mixed = {"ABKk", "ABkK"};

static void assert_canonical(const aim_alphabet *ab, const char *w, const char *want)
{
    char out[AIM_WORD_MAX + 1];
    assert_int_equal(aim_word_canonical(ab, w, out), 0);
    assert_string_equal(out, want);
}

static void test_canonical(void **state)
{
    (void)state;
    assert_canonical(&tied, "", "");
    assert_canonical(&tied, "TS", "ST");
    assert_canonical(&tied, "TSS", "SST");
    assert_canonical(&tied, "TTS", "STT");
    /* transposition is reversal for symmetric letters: SSTSTT is not a
     * rotation of its reversal TTSTSS, whose rotation SSTTST is larger */
    assert_canonical(&tied, "TTSTSS", "SSTSTT");
    assert_canonical(&tied, "SSTTST", "SSTSTT");
    /* letter order, not ASCII order */
    const aim_alphabet ts = {"TS", "TS"};
    assert_canonical(&ts, "ST", "TS");
    assert_canonical(&ts, "SSST", "TSSS");

    char out[AIM_WORD_MAX + 1];
    assert_int_equal(aim_word_transpose(&mixed, "AK", out), 0);
    assert_string_equal(out, "kA");
    assert_int_equal(aim_word_transpose(&mixed, "AKBk", out), 0);
    assert_string_equal(out, "KBkA");
    assert_canonical(&mixed, "kA", "AK");
    assert_canonical(&mixed, "Ak", "AK"); /* Tr(A K^T) = Tr(K A^T) = Tr(AK) */
    assert_canonical(&mixed, "kk", "KK");
    assert_canonical(&mixed, "kK", "Kk"); /* K^T K, rotated K K^T: self-transpose */
    assert_canonical(&mixed, "AKB", "ABk");
    assert_canonical(&mixed, "KAkB", "AkBK");

    assert_int_equal(aim_word_canonical(&tied, "SX", out), -1);
    assert_int_equal(aim_word_transpose(&tied, "SX", out), -1);
    char w[AIM_WORD_MAX + 2];
    memset(w, 'S', AIM_WORD_MAX);
    w[AIM_WORD_MAX] = '\0';
    assert_int_equal(aim_word_canonical(&tied, w, out), 0);
    w[AIM_WORD_MAX] = 'S';
    w[AIM_WORD_MAX + 1] = '\0';
    assert_int_equal(aim_word_canonical(&tied, w, out), -1);
    assert_int_equal(aim_word_transpose(&tied, w, out), -1);

    const aim_alphabet bad[] = {{"SS", "SS"}, {"AK", "Ak"}, {"ABC", "BCA"}, {"AB", "A"},
                                {"", ""}, {"A B", "A B"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(aim_word_canonical(&bad[i], "A", out), -1);
        assert_null(aim_wordset_create(&bad[i], 2));
    }
    assert_null(aim_wordset_create(&tied, -1));
    assert_null(aim_wordset_create(&tied, AIM_WORD_MAX + 1));
}

static void test_counts(void **state)
{
    (void)state;
    /* binary bracelets, OEIS A000029 */
    const int bracelets[] = {1, 2, 3, 4, 6, 8, 13, 18, 30};
    aim_wordset *ws = aim_wordset_create(&tied, 8);
    assert_non_null(ws);
    assert_int_equal(aim_wordset_max_len(ws), 8);
    assert_ptr_not_equal(aim_wordset_alphabet(ws), &tied);
    assert_string_equal(aim_wordset_alphabet(ws)->letters, "ST");
    int total = 0;
    for (int n = 0; n <= 8; n++) {
        assert_int_equal(aim_wordset_first(ws, n), total);
        total += bracelets[n];
    }
    assert_int_equal(aim_wordset_first(ws, 9), total);
    assert_int_equal(aim_wordset_count(ws), total);
    assert_string_equal(aim_wordset_word(ws, 0), "");
    assert_string_equal(aim_wordset_word(ws, 1), "S");
    assert_string_equal(aim_wordset_word(ws, 2), "T");
    assert_string_equal(aim_wordset_word(ws, 3), "SS");
    assert_string_equal(aim_wordset_word(ws, 4), "ST");
    assert_string_equal(aim_wordset_word(ws, 5), "TT");
    aim_wordset_free(ws);

    const aim_alphabet one = {"S", "S"};
    ws = aim_wordset_create(&one, AIM_WORD_MAX);
    assert_non_null(ws);
    assert_int_equal(aim_wordset_count(ws), AIM_WORD_MAX + 1);
    for (int n = 0; n <= AIM_WORD_MAX; n++) {
        assert_int_equal(aim_wordset_len(ws, n), n);
        assert_int_equal((int)strlen(aim_wordset_word(ws, n)), n);
    }
    aim_wordset_free(ws);
}

/* The number of classes of each length, counted without listing them
 * (Burnside), against the word sets that list them: letters that are
 * their own transposes, pairs, and an alphabet of 15 letters. */
static void test_class_counts(void **state)
{
    (void)state;
    static const aim_alphabet alphabets[] = {
        {"ST", "ST"}, {"ABKkT", "ABkKT"}, {"ABKkTt", "ABkKtT"}, {"Ab", "bA"},
        {"abcdefghijklmno", "badcfehgjilknmo"}};
    static const int max_len[] = {12, 7, 7, 12, 4};
    for (size_t a = 0; a < sizeof alphabets / sizeof alphabets[0]; a++) {
        aim_wordset *ws = aim_wordset_create(&alphabets[a], max_len[a]);
        assert_non_null(ws);
        for (int n = 0; n <= max_len[a]; n++) {
            const int listed = aim_wordset_first(ws, n + 1) - aim_wordset_first(ws, n);
            if (aim_words_classes(&alphabets[a], n) != listed)
                fail_msg("%s, length %d: %.17g classes counted, %d listed",
                         alphabets[a].letters, n, aim_words_classes(&alphabets[a], n), listed);
        }
        aim_wordset_free(ws);
    }
    const aim_alphabet bad = {"ST", "SX"};
    assert_true(aim_words_classes(&bad, 3) == -1);
    assert_true(aim_words_classes(&alphabets[0], -1) == -1);
}

/* w as the index-th word of length n over k letters, in base k */
static void nth_word(const aim_alphabet *ab, int k, int n, long index, char *w)
{
    for (int i = n - 1; i >= 0; i--) {
        w[i] = ab->letters[index % k];
        index /= k;
    }
    w[n] = '\0';
}

/* Every word of the alphabet up to the set's length (all k^n of them)
 * must be found, at the index of its canonical form, and the classes hit
 * must be exactly the enumerated ones: an independent brute-force count
 * of the classes. The enumeration must also be sorted. */
static void check_enumeration(const aim_alphabet *ab, int max_len)
{
    aim_wordset *ws = aim_wordset_create(ab, max_len);
    assert_non_null(ws);
    const int k = (int)strlen(ab->letters), count = aim_wordset_count(ws);
    int *hit = calloc((size_t)count, sizeof *hit);
    assert_non_null(hit);
    for (int n = 0; n <= max_len; n++) {
        long total = 1;
        for (int i = 0; i < n; i++)
            total *= k;
        for (long index = 0; index < total; index++) {
            char w[AIM_WORD_MAX + 1], c[AIM_WORD_MAX + 1];
            nth_word(ab, k, n, index, w);
            const int i = aim_wordset_find(ws, w);
            assert_true(i >= 0);
            assert_int_equal(aim_wordset_len(ws, i), n);
            assert_int_equal(aim_word_canonical(ab, w, c), 0);
            assert_string_equal(aim_wordset_word(ws, i), c);
            hit[i] = 1;
        }
    }
    for (int i = 0; i < count; i++) {
        assert_true(hit[i]);
        const char *w = aim_wordset_word(ws, i);
        const int n = (int)strlen(w);
        assert_int_equal(aim_wordset_len(ws, i), n);
        /* sorted by length, then in letter order */
        if (i > 0) {
            const char *p = aim_wordset_word(ws, i - 1);
            const int m = (int)strlen(p);
            assert_true(m <= n);
            if (m == n) {
                int j = 0;
                while (p[j] == w[j])
                    j++;
                assert_true(strchr(ab->letters, p[j]) < strchr(ab->letters, w[j]));
            }
        }
        /* every rotation and transpose is found at i */
        char t[AIM_WORD_MAX + 1];
        assert_int_equal(aim_word_transpose(ab, w, t), 0);
        for (int r = 0; r < n; r++) {
            char rw[AIM_WORD_MAX + 1], rt[AIM_WORD_MAX + 1];
            for (int j = 0; j < n; j++) {
                rw[j] = w[(r + j) % n];
                rt[j] = t[(r + j) % n];
            }
            rw[n] = rt[n] = '\0';
            assert_int_equal(aim_wordset_find(ws, rw), i);
            assert_int_equal(aim_wordset_find(ws, rt), i);
        }
    }
    char longer[AIM_WORD_MAX + 1];
    memset(longer, ab->letters[0], (size_t)max_len + 1);
    longer[max_len + 1] = '\0';
    assert_int_equal(aim_wordset_find(ws, longer), -1);
    assert_int_equal(aim_wordset_find(ws, "?"), -1);
    free(hit);
    aim_wordset_free(ws);
}

static void test_enumeration(void **state)
{
    (void)state;
    check_enumeration(&tied, 10);
    check_enumeration(&mixed, 6);
    const aim_alphabet ts = {"TS", "TS"}, swap = {"ABC", "BAC"};
    check_enumeration(&ts, 6);
    check_enumeration(&swap, 6);
}

static double *random_matrix(gsl_rng *r, int d)
{
    double *m = malloc(sizeof(double) * (size_t)(d * d));
    assert_non_null(m);
    for (int i = 0; i < d * d; i++)
        m[i] = gsl_ran_gaussian(r, 1.0 / sqrt(d));
    return m;
}

/* Tr(w)/d by plain loops, one product at a time */
static double naive_moment(const aim_alphabet *ab, const double *const *mat, int d,
                           const char *w)
{
    double *p = calloc((size_t)(d * d), sizeof *p), *q = malloc(sizeof(double) * (size_t)(d * d));
    assert_non_null(p);
    assert_non_null(q);
    for (int i = 0; i < d; i++)
        p[i * d + i] = 1.0;
    for (const char *c = w; *c; c++) {
        const double *L = mat[strchr(ab->letters, *c) - ab->letters];
        for (int i = 0; i < d; i++)
            for (int j = 0; j < d; j++) {
                double s = 0.0;
                for (int l = 0; l < d; l++)
                    s += p[i * d + l] * L[l * d + j];
                q[i * d + j] = s;
            }
        memcpy(p, q, sizeof(double) * (size_t)(d * d));
    }
    double t = 0.0;
    for (int i = 0; i < d; i++)
        t += p[i * d + i];
    free(p);
    free(q);
    return t / d;
}

static void test_measure(void **state)
{
    (void)state;
    const int d = 7, max_len = 6;
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 11);
    double *A = random_matrix(r, d), *B = random_matrix(r, d), *K = random_matrix(r, d);
    double *k = malloc(sizeof(double) * (size_t)(d * d));
    assert_non_null(k);
    for (int i = 0; i < d; i++)
        for (int j = 0; j < d; j++) {
            k[i * d + j] = K[j * d + i];
            if (j < i) {
                A[i * d + j] = A[j * d + i];
                B[i * d + j] = B[j * d + i];
            }
        }
    const double *mat[] = {A, B, K, k};
    aim_wordset *ws = aim_wordset_create(&mixed, max_len);
    assert_non_null(ws);
    const int count = aim_wordset_count(ws);
    double *m = malloc(sizeof(double) * (size_t)count);
    assert_non_null(m);
    for (int part = 0; part < 2; part++) {
        /* part 0: up to length 4 only, the rest must stay untouched */
        const int len = part ? max_len : 4;
        for (int i = 0; i < count; i++)
            m[i] = NAN;
        assert_int_equal(aim_words_measure(ws, len, mat, d, m), 0);
        for (int i = 0; i < count; i++) {
            const char *w = aim_wordset_word(ws, i);
            if (aim_wordset_len(ws, i) > len) {
                assert_true(isnan(m[i]));
                continue;
            }
            const double want = naive_moment(&mixed, mat, d, w);
            if (!(fabs(m[i] - want) <= 1e-12 * (1.0 + fabs(want))))
                fail_msg("%s: measured %.17g, naive %.17g", w, m[i], want);
            /* and the class: a rotation of the transpose, computed naively */
            const int n = (int)strlen(w);
            char t[AIM_WORD_MAX + 1], rt[AIM_WORD_MAX + 1];
            assert_int_equal(aim_word_transpose(&mixed, w, t), 0);
            for (int j = 0; j < n; j++)
                rt[j] = t[(j + i) % n];
            rt[n] = '\0';
            const double other = naive_moment(&mixed, mat, d, rt);
            if (!(fabs(other - want) <= 1e-12 * (1.0 + fabs(want))))
                fail_msg("%s: %.17g but its representative %s: %.17g", w, want, rt, other);
        }
    }
    free(m);
    aim_wordset_free(ws);
    free(A);
    free(B);
    free(K);
    free(k);
    gsl_rng_free(r);
}

/* Round-off of a sum is bounded by a multiple of the sum of the absolute
 * values of its terms; moments_abs are the moments of |kappa|, which bound
 * that sum for every word. */
static void check_close(const aim_wordset *ws, const double *got, const double *want,
                        const double *scale, int from, int to, const char *what)
{
    for (int i = from; i < to; i++)
        if (!(fabs(got[i] - want[i]) <= 1e-12 * scale[i]))
            fail_msg("%s of %s: %.17g, want %.17g (scale %.3g)", what,
                     aim_wordset_word(ws, i), got[i], want[i], scale[i]);
}

static void check_round_trip(const aim_alphabet *ab, int max_len)
{
    aim_wordset *ws = aim_wordset_create(ab, max_len);
    assert_non_null(ws);
    aim_freecum *fc = aim_freecum_create(ws);
    assert_non_null(fc);
    const int count = aim_wordset_count(ws);
    double *kappa = malloc(sizeof(double) * (size_t)count * 5);
    assert_non_null(kappa);
    double *kabs = kappa + count, *m = kabs + count, *mabs = m + count, *back = mabs + count;
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 5);
    kappa[0] = kabs[0] = 0.0;
    m[0] = mabs[0] = 1.0;
    for (int i = 1; i < count; i++) {
        kappa[i] = gsl_rng_uniform(r) * 2.0 - 1.0;
        kabs[i] = fabs(kappa[i]);
    }
    aim_freecum_moments(fc, kappa, m, 1, max_len);
    aim_freecum_moments(fc, kabs, mabs, 1, max_len);
    aim_freecum_cumulants(fc, m, back, max_len);
    assert_true(back[0] == 0.0);
    check_close(ws, back, kappa, mabs, 1, count, "cumulant");
    /* only the lengths asked for are written */
    const int from = aim_wordset_first(ws, 2), to = aim_wordset_first(ws, 3);
    for (int i = 0; i < count; i++)
        back[i] = -7.0;
    aim_freecum_moments(fc, kappa, back, 2, 2);
    for (int i = 0; i < count; i++)
        if (i < from || i >= to)
            assert_true(back[i] == -7.0);
    check_close(ws, back, m, mabs, from, to, "moment");
    gsl_rng_free(r);
    free(kappa);
    aim_freecum_free(fc);
    aim_wordset_free(ws);
}

static void test_round_trip(void **state)
{
    (void)state;
    check_round_trip(&tied, 9);
    check_round_trip(&mixed, 6);
}

static double binomial(int n, int k)
{
    double b = 1.0;
    for (int i = 1; i <= k; i++)
        b = b * (n - k + i) / i;
    return b;
}

/* One letter: kappa_n = rho v^n (free Poisson) has the Narayana moments
 * m_n = v^n sum_k N(n, k) rho^k, N(n, k) = C(n, k) C(n, k - 1) / n, and
 * kappa_2 = s alone (semicircle) has m_2k = Catalan(k) s^k, odd ones 0. */
static void test_one_letter(void **state)
{
    (void)state;
    const aim_alphabet one = {"S", "S"};
    const int N = 12;
    aim_wordset *ws = aim_wordset_create(&one, N);
    assert_non_null(ws);
    aim_freecum *fc = aim_freecum_create(ws);
    assert_non_null(fc);
    double kappa[13], m[13], want[13], back[13];
    const double rho = 0.37, v = 1.3, s = 0.7;
    for (int n = 1; n <= N; n++)
        kappa[n] = rho * pow(v, n);
    m[0] = 1.0;
    aim_freecum_moments(fc, kappa, m, 1, N);
    for (int n = 1; n <= N; n++) {
        want[n] = 0.0;
        for (int k = 1; k <= n; k++)
            want[n] += binomial(n, k) * binomial(n, k - 1) / n * pow(rho, k);
        want[n] *= pow(v, n);
        if (!(fabs(m[n] - want[n]) <= 1e-12 * want[n]))
            fail_msg("free Poisson m_%d = %.17g, Narayana %.17g", n, m[n], want[n]);
    }
    aim_freecum_cumulants(fc, m, back, N);
    for (int n = 1; n <= N; n++)
        if (!(fabs(back[n] - kappa[n]) <= 1e-12 * want[n]))
            fail_msg("free Poisson kappa_%d = %.17g, want %.17g", n, back[n], kappa[n]);

    for (int n = 1; n <= N; n++)
        kappa[n] = n == 2 ? s : 0.0;
    aim_freecum_moments(fc, kappa, m, 1, N);
    for (int n = 1; n <= N; n++) {
        const double w = n % 2 ? 0.0 : binomial(n, n / 2) / (n / 2 + 1) * pow(s, n / 2);
        if (!(fabs(m[n] - w) <= 1e-12 * w))
            fail_msg("semicircle m_%d = %.17g, want %.17g", n, m[n], w);
    }
    aim_freecum_free(fc);
    aim_wordset_free(ws);
}

/* Two free letters: mixed cumulants vanish, and the moments factor as in
 * the classical formulas for free variables. */
static void test_free_pair(void **state)
{
    (void)state;
    const aim_alphabet ab = {"ab", "ab"};
    const int N = 6;
    aim_wordset *ws = aim_wordset_create(&ab, N);
    assert_non_null(ws);
    aim_freecum *fc = aim_freecum_create(ws);
    assert_non_null(fc);
    const int count = aim_wordset_count(ws);
    double kappa[64], m[64], back[64];
    assert_true(count <= 64);
    const double ka[] = {0, 0.8, 0.5, -0.3, 0.2, 0.1, -0.05};
    const double kb[] = {0, -0.6, 1.1, 0.4, -0.2, 0.3, 0.07};
    for (int i = 0; i < count; i++) {
        const char *w = aim_wordset_word(ws, i);
        const int n = (int)strlen(w);
        kappa[i] = 0.0;
        if (n > 0 && strspn(w, "a") == (size_t)n)
            kappa[i] = ka[n];
        if (n > 0 && strspn(w, "b") == (size_t)n)
            kappa[i] = kb[n];
    }
    m[0] = 1.0;
    aim_freecum_moments(fc, kappa, m, 1, N);
#define PHI(w) m[aim_wordset_find(ws, w)]
    const double a = PHI("a"), b = PHI("b"), a2 = PHI("aa"), b2 = PHI("bb");
    const double checks[][2] = {
        {PHI("ab"), a * b},
        {PHI("aab"), a2 * b},
        {PHI("abab"), a2 * b * b + a * a * b2 - a * a * b * b},
        {PHI("aabb"), a2 * b2},
        {PHI("aaab"), PHI("aaa") * b},
    };
#undef PHI
    for (size_t c = 0; c < sizeof checks / sizeof checks[0]; c++)
        if (!(fabs(checks[c][0] - checks[c][1]) <= 1e-12 * (1.0 + fabs(checks[c][1]))))
            fail_msg("identity %zu: %.17g, want %.17g", c, checks[c][0], checks[c][1]);
    aim_freecum_cumulants(fc, m, back, N);
    for (int i = 1; i < count; i++)
        if (!(fabs(back[i] - kappa[i]) <= 1e-12 * (1.0 + fabs(m[i]))))
            fail_msg("kappa(%s) = %.17g, want %.17g", aim_wordset_word(ws, i), back[i],
                     kappa[i]);
    aim_freecum_free(fc);
    aim_wordset_free(ws);
}

/* The summation order of the free cumulant tables, against the
 * straightforward construction they replaced (one look-up per block of
 * every non-crossing partition, the partitions' block lists sorted by
 * (number of blocks, ascending block words) and equal ones merged): the
 * moments and cumulants must agree to the last bit, since the ODE
 * outputs at every order are compared byte for byte across changes of
 * these tables. The non-crossing partitions here come from all set
 * partitions (restricted growth strings) with the crossing ones removed,
 * independently of src/hierarchy/freecum.c's recursion. */
typedef struct {
    int nb;
    int b[AIM_WORD_MAX];
} ref_term;

static int ref_term_compare(const void *x, const void *y)
{
    const ref_term *s = x, *t = y;
    if (s->nb != t->nb)
        return s->nb < t->nb ? -1 : 1;
    for (int i = 0; i < s->nb; i++)
        if (s->b[i] != t->b[i])
            return s->b[i] < t->b[i] ? -1 : 1;
    return 0;
}

static int ref_int_compare(const void *x, const void *y)
{
    const int a = *(const int *)x, b = *(const int *)y;
    return (a > b) - (a < b);
}

static int crossing(const int *label, int n)
{
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++)
            for (int c = b + 1; c < n; c++)
                for (int e = c + 1; e < n; e++)
                    if (label[a] == label[c] && label[b] == label[e] && label[a] != label[b])
                        return 1;
    return 0;
}

/* The partition sum of word w (length n) with the cumulants kappa, in
 * the reference order. */
static double reference_sum(const aim_wordset *ws, const char *w, int n, const double *kappa)
{
    ref_term *terms = malloc(sizeof *terms * 5000);
    assert_non_null(terms);
    int label[AIM_WORD_MAX] = {0}, nterms = 0;
    for (;;) {
        int nb = 0;
        for (int j = 0; j < n; j++)
            nb = label[j] + 1 > nb ? label[j] + 1 : nb;
        if (nb > 1 && !crossing(label, n)) {
            assert_true(nterms < 5000);
            ref_term *t = &terms[nterms++];
            t->nb = nb;
            for (int b = 0; b < nb; b++) {
                char sub[AIM_WORD_MAX + 1];
                int len = 0;
                for (int j = 0; j < n; j++)
                    if (label[j] == b)
                        sub[len++] = w[j];
                sub[len] = '\0';
                t->b[b] = aim_wordset_find(ws, sub);
                assert_true(t->b[b] >= 0);
            }
            qsort(t->b, (size_t)nb, sizeof(int), ref_int_compare);
        }
        /* next restricted growth string: label[j] <= 1 + max of label[0..j-1] */
        int j = n - 1;
        for (; j > 0; j--) {
            int top = 0;
            for (int i = 0; i < j; i++)
                top = label[i] > top ? label[i] : top;
            if (label[j] <= top)
                break;
        }
        if (j <= 0)
            break;
        label[j]++;
        for (int i = j + 1; i < n; i++)
            label[i] = 0;
    }
    qsort(terms, (size_t)nterms, sizeof *terms, ref_term_compare);
    double s = 0.0;
    for (int a = 0; a < nterms;) {
        int e = a + 1;
        while (e < nterms && ref_term_compare(&terms[a], &terms[e]) == 0)
            e++;
        double prod = (double)(e - a);
        for (int b = 0; b < terms[a].nb; b++)
            prod *= kappa[terms[a].b[b]];
        s += prod;
        a = e;
    }
    free(terms);
    return s;
}

static void check_summation_order(const aim_alphabet *ab, int max_len)
{
    aim_wordset *ws = aim_wordset_create(ab, max_len);
    assert_non_null(ws);
    aim_freecum *fc = aim_freecum_create(ws);
    assert_non_null(fc);
    const int count = aim_wordset_count(ws);
    double *kappa = malloc(sizeof(double) * (size_t)count * 3);
    assert_non_null(kappa);
    double *m = kappa + count, *back = m + count;
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 11);
    kappa[0] = 0.0;
    m[0] = 1.0;
    for (int i = 1; i < count; i++)
        kappa[i] = gsl_rng_uniform(r) * 2.0 - 1.0;
    aim_freecum_moments(fc, kappa, m, 1, max_len);
    for (int i = 1; i < count; i++) {
        const char *w = aim_wordset_word(ws, i);
        const double want = kappa[i] + reference_sum(ws, w, (int)strlen(w), kappa);
        if (m[i] != want)
            fail_msg("m(%s) = %.17g, reference order %.17g", w, m[i], want);
    }
    /* cumulants from moments: each word's sum uses the cumulants of its
     * shorter blocks, computed first */
    aim_freecum_cumulants(fc, m, back, max_len);
    for (int i = 1; i < count; i++) {
        const char *w = aim_wordset_word(ws, i);
        const double want = m[i] - reference_sum(ws, w, (int)strlen(w), back);
        if (back[i] != want)
            fail_msg("kappa(%s) = %.17g, reference order %.17g", w, back[i], want);
    }
    gsl_rng_free(r);
    free(kappa);
    aim_freecum_free(fc);
    aim_wordset_free(ws);
}

/* The untied alphabet with a general teacher, up to the words of order
 * 5 (length 6), and the tied one further. */
static void test_summation_order(void **state)
{
    (void)state;
    const aim_alphabet untied = {"ABKkTt", "ABkKtT"};
    check_summation_order(&untied, 6);
    check_summation_order(&tied, 9);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_canonical),
        cmocka_unit_test(test_counts),
        cmocka_unit_test(test_class_counts),
        cmocka_unit_test(test_enumeration),
        cmocka_unit_test(test_measure),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_one_letter),
        cmocka_unit_test(test_free_pair),
        cmocka_unit_test(test_summation_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
