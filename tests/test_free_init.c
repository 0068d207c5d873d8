/* Exact large-d moments of independent Gaussian-initialised matrices
 * (free cumulants, theory/model.md sec. 6 "Initial values") against moments
 * sampled at d = 2000, every word in S, S* of length <= 5.
 *
 * Student S = W W^T, W d x p, p = rho d, entries N(0, v/d): free Poisson,
 * kappa_n = rho v^n. Teacher likewise (rho*, v*), or a symmetric Wigner
 * matrix (N(0, v* / d) off the diagonal, N(0, 2 v* / d) on it): semicircle,
 * kappa_2 = v*. Independent, hence asymptotically free: mixed cumulants
 * vanish.
 *
 * Tolerance. A sampled Tr(w)/d differs from its limit by O(1/d) (bias of
 * the real ensembles and fluctuation of a linear statistic, both 1/d).
 * The scale used for word w of length n is
 *     scale(w) = n sqrt(phi(w w^T)),
 * the normalised Frobenius norm of the product (which bounds |phi(w)|),
 * times n because each of the n letters contributes its own fluctuation.
 * Measured with a scratch program over 20 draws at d = 500, 10 at 1000
 * and 4 at 2000 for the three cases below: the rms of d |dev| / scale
 * stays flat from d = 500 to 2000 (so dev falls like 1/d) and is 0.3 to
 * 1.25 for every word; the largest is the Wigner trace, whose deviation
 * is exactly N(0, 2 v*) / d^2 summed over d entries, i.e. rms
 * sqrt(2 v*) / d = 1.41 scale / d. The largest single value seen was
 * 2.96. The bound is |dev| <= C scale(w) / d with C = 6: 4.2 times the
 * largest rms (that of a Gaussian trace, so this is a 4-sigma bound on
 * the worst word), about twice the largest deviation measured. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>
/* OpenBLAS's cblas.h and GSL's gsl_cblas.h declare the same enums (as in
 * validate/sgd.c): keep OpenBLAS's. */
#define __GSL_CBLAS_H__
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "freecum.h"
#include "words.h"

#define D 2000
#define LEN 5
#define C_TOL 6.0

static const aim_alphabet tied = {"ST", "ST"};

typedef struct {
    aim_wordset *ws; /* up to 2 LEN: phi(w w^T) for the scales */
    aim_freecum *fc;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    f->ws = aim_wordset_create(&tied, 2 * LEN);
    f->fc = f->ws ? aim_freecum_create(f->ws) : NULL;
    *state = f;
    return f->fc ? 0 : -1;
}

static int teardown(void **state)
{
    fixture *f = *state;
    aim_freecum_free(f->fc);
    aim_wordset_free(f->ws);
    free(f);
    return 0;
}

/* W W^T, W d x p with entries N(0, v/d) */
static double *draw_wishart(gsl_rng *r, double rho, double v)
{
    const int p = (int)lround(rho * D);
    double *W = malloc(sizeof(double) * (size_t)D * (size_t)p);
    double *S = malloc(sizeof(double) * (size_t)D * D);
    assert_non_null(W);
    assert_non_null(S);
    for (size_t i = 0; i < (size_t)D * (size_t)p; i++)
        W[i] = gsl_ran_gaussian_ziggurat(r, sqrt(v / D));
    cblas_dsyrk(CblasRowMajor, CblasLower, CblasNoTrans, D, p, 1.0, W, p, 0.0, S, D);
    for (size_t i = 0; i < D; i++)
        for (size_t j = i + 1; j < D; j++)
            S[i * D + j] = S[j * D + i];
    free(W);
    return S;
}

static double *draw_wigner(gsl_rng *r, double v)
{
    double *S = malloc(sizeof(double) * (size_t)D * D);
    assert_non_null(S);
    for (size_t i = 0; i < D; i++)
        for (size_t j = 0; j <= i; j++)
            S[i * D + j] = S[j * D + i] =
                gsl_ran_gaussian_ziggurat(r, sqrt((i == j ? 2.0 : 1.0) * v / D));
    return S;
}

typedef struct {
    const char *label;
    double rho, v;     /* student */
    int wigner;        /* teacher: 1 Wigner (v*), 0 free Poisson (rho*, v*) */
    double rhos, vs;
    unsigned long seed;
} init_case;

static void check_case(const fixture *f, const init_case *ic)
{
    const int count = aim_wordset_count(f->ws);
    double *kappa = calloc((size_t)count, sizeof *kappa);
    double *exact = malloc(sizeof(double) * (size_t)count);
    double *sampled = malloc(sizeof(double) * (size_t)count);
    assert_non_null(kappa);
    assert_non_null(exact);
    assert_non_null(sampled);
    for (int i = 1; i < count; i++) {
        const char *w = aim_wordset_word(f->ws, i);
        const size_t n = strlen(w);
        if (strspn(w, "S") == n)
            kappa[i] = ic->rho * pow(ic->v, (double)n);
        else if (strspn(w, "T") == n)
            kappa[i] = ic->wigner ? (n == 2 ? ic->vs : 0.0) : ic->rhos * pow(ic->vs, (double)n);
    }
    exact[0] = 1.0;
    aim_freecum_moments(f->fc, kappa, exact, 1, 2 * LEN);

    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    assert_non_null(r);
    gsl_rng_set(r, ic->seed);
    double *S = draw_wishart(r, ic->rho, ic->v);
    double *T = ic->wigner ? draw_wigner(r, ic->vs) : draw_wishart(r, ic->rhos, ic->vs);
    const double *mat[] = {S, T};
    assert_int_equal(aim_words_measure(f->ws, LEN, mat, D, sampled), 0);

    print_message("%s: word, sampled, exact, d |dev| / scale (bound %g)\n", ic->label, C_TOL);
    int bad = 0;
    for (int i = 1; i < aim_wordset_first(f->ws, LEN + 1); i++) {
        const char *w = aim_wordset_word(f->ws, i);
        char t[AIM_WORD_MAX + 1], wwt[AIM_WORD_MAX + 1];
        assert_int_equal(aim_word_transpose(&tied, w, t), 0);
        strcpy(wwt, w);
        strcat(wwt, t);
        const double scale = (double)strlen(w) * sqrt(exact[aim_wordset_find(f->ws, wwt)]);
        const double ratio = fabs(sampled[i] - exact[i]) * D / scale;
        print_message("  %-6s %12.6f %12.6f %6.3f%s\n", w, sampled[i], exact[i], ratio,
                      ratio <= C_TOL ? "" : "  FAIL");
        bad += !(ratio <= C_TOL);
    }
    free(S);
    free(T);
    gsl_rng_free(r);
    free(kappa);
    free(exact);
    free(sampled);
    if (bad)
        fail_msg("%s: %d words beyond the finite-size bound", ic->label, bad);
}

static void test_wishart_teacher(void **state)
{
    const init_case ic = {"free Poisson student (1, 1), free Poisson teacher (0.5, 2)",
                          1.0, 1.0, 0, 0.5, 2.0, 1};
    check_case(*state, &ic);
}

static void test_wigner_teacher(void **state)
{
    const init_case ic = {"free Poisson student (1, 1), Wigner teacher (2)",
                          1.0, 1.0, 1, 0.0, 2.0, 1};
    check_case(*state, &ic);
}

static void test_narrow_student(void **state)
{
    const init_case ic = {"free Poisson student (0.5, 1), free Poisson teacher (0.5, 2)",
                          0.5, 1.0, 0, 0.5, 2.0, 1};
    check_case(*state, &ic);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wishart_teacher),
        cmocka_unit_test(test_wigner_teacher),
        cmocka_unit_test(test_narrow_student),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
