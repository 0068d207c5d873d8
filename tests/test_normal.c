/* aim_normal_quantiles against GSL's gsl_cdf_ugaussian_Pinv, number by
 * number and bit for bit: the quasi-random point sets are made with it,
 * and every engine value downstream is the one GSL's quantile gave. The
 * probabilities cover the three regions of the algorithm, their borders
 * (|p - 1/2| = 0.425, the logarithm's r = 5 at p = exp(-25)), the
 * extremes (0, 1, the smallest normal and subnormal numbers) and blocks
 * of every length around the vector block (the last, partial one). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_rng.h>

#include "normal.h"

/* The count of p[0..n) whose quantile is not GSL's bit for bit (the
 * first printed). */
static size_t mismatches(const double *p, size_t n)
{
    double *x = malloc(sizeof *x * n);
    assert_non_null(x);
    memcpy(x, p, sizeof *x * n);
    aim_normal_quantiles(x, n);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        const double want = gsl_cdf_ugaussian_Pinv(p[i]);
        if (memcmp(&want, &x[i], sizeof want) != 0 && bad++ == 0)
            print_error("p = %.17g: %.17g, GSL %.17g\n", p[i], x[i], want);
    }
    free(x);
    return bad;
}

static void test_borders_and_extremes(void **state)
{
    (void)state;
    const double tail_border = exp(-25.0);
    const double p[] = {0.0,
                        1.0,
                        0.5,
                        0.075,
                        0.925,
                        nextafter(0.075, 0.0),
                        nextafter(0.075, 1.0),
                        nextafter(0.925, 0.0),
                        nextafter(0.925, 1.0),
                        tail_border,
                        nextafter(tail_border, 0.0),
                        nextafter(tail_border, 1.0),
                        1.0 - tail_border,
                        DBL_MIN,
                        DBL_TRUE_MIN,
                        DBL_EPSILON,
                        1.0 - DBL_EPSILON / 2.0,
                        1e-300,
                        0.3,
                        0.7};
    const size_t n = sizeof p / sizeof *p;
    assert_int_equal(mismatches(p, n), 0);
    double x[2] = {0.0, 1.0};
    aim_normal_quantiles(x, 2);
    assert_true(isinf(x[0]) && x[0] < 0.0);
    assert_true(isinf(x[1]) && x[1] > 0.0);
}

/* 2^20 uniform probabilities, a tenth of them pushed into each tail
 * (p^k for k up to 40), as a point set's shifted Sobol numbers are. */
static void test_random_probabilities(void **state)
{
    (void)state;
    const size_t n = (size_t)1 << 20;
    double *p = malloc(sizeof *p * n);
    assert_non_null(p);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    assert_non_null(rng);
    gsl_rng_set(rng, 20261203);
    for (size_t i = 0; i < n; i++) {
        const double u = gsl_rng_uniform_pos(rng);
        const double k = 1.0 + 39.0 * gsl_rng_uniform(rng);
        p[i] = i % 10 == 1 ? pow(u, k) : i % 10 == 2 ? 1.0 - pow(u, k) : u;
    }
    gsl_rng_free(rng);
    assert_int_equal(mismatches(p, n), 0);
    free(p);
}

/* Every length from 0 to three vector blocks and a bit: the partial last
 * block and the tails found in it. */
static void test_every_length(void **state)
{
    (void)state;
    enum { MOST = 800 };
    double p[MOST];
    for (int i = 0; i < MOST; i++)
        p[i] = (i + 0.5) / MOST;
    for (size_t n = 0; n <= MOST; n += n < 20 ? 1 : 37)
        assert_int_equal(mismatches(p + (MOST - n) / 2, n), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_borders_and_extremes),
        cmocka_unit_test(test_random_probabilities),
        cmocka_unit_test(test_every_length),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
