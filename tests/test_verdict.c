/* The one-word verdict of an agreement row (theory/model.md sec. 9):
 * each band of the z-score and of the exponent a of d^-a that takes the
 * previous d's gap to this one, on both sides of every boundary. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "compare.h"

static aim_gap gap(double max_abs, double max_z)
{
    return (aim_gap){max_abs, 0.01, max_z, 0.01};
}

/* The gap at d = 800 of a bias c d^-a that was g400 at d = 400. */
static aim_gap law(double g400, double a, double z)
{
    return gap(g400 * pow(0.5, a), z);
}

static void test_noise_and_special_rows(void **state)
{
    (void)state;
    aim_gap g = gap(0.01, 3.0), prev = gap(0.02, 10.0);
    assert_string_equal(aim_compare_verdict(&g, &prev, 400, 800), "within_3se");
    g = gap(0.01, 3.01);
    assert_string_equal(aim_compare_verdict(&g, NULL, 0, 800), "above_3se");
    /* a previous d inside the noise says nothing about the law */
    prev = gap(0.02, 2.9);
    assert_string_equal(aim_compare_verdict(&g, &prev, 400, 800), "above_3se");
    g = gap(0.0, NAN);
    assert_string_equal(aim_compare_verdict(&g, NULL, 0, 800), "exact");
    g = gap(INFINITY, INFINITY);
    assert_string_equal(aim_compare_verdict(&g, NULL, 0, 800), "ode_stopped");
    g = gap(NAN, NAN);
    assert_string_equal(aim_compare_verdict(&g, NULL, 0, 800), "no_data");
    g = gap(0.01, NAN); /* no standard error: the z-score is undefined */
    assert_string_equal(aim_compare_verdict(&g, NULL, 0, 800), "no_data");
    /* a previous d that is not smaller is no previous d */
    g = gap(0.01, 5.0);
    prev = gap(0.02, 5.0);
    assert_string_equal(aim_compare_verdict(&g, &prev, 800, 800), "above_3se");
}

static void test_laws(void **state)
{
    (void)state;
    const aim_gap prev = gap(0.02, 8.0);
    const struct {
        double a;
        const char *verdict;
    } cases[] = {{1.0, "1/d"},        {0.76, "1/d"},         {0.74, "1/sqrt_d"},
                 {0.5, "1/sqrt_d"},   {0.26, "1/sqrt_d"},    {0.24, "not_falling"},
                 {0.0, "not_falling"}, {-0.5, "not_falling"}, {2.0, "1/d"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const aim_gap g = law(prev.max_abs, cases[i].a, 4.0);
        assert_string_equal(aim_compare_verdict(&g, &prev, 400, 800), cases[i].verdict);
    }
    /* the exponent, not the ratio: from d = 200 to 800 a 1/d bias falls by 4 */
    const aim_gap g = gap(prev.max_abs / 4 * 1.3, 4.0); /* a = 0.81 */
    assert_string_equal(aim_compare_verdict(&g, &prev, 200, 800), "1/d");
    const aim_gap h = gap(prev.max_abs / 2, 4.0); /* a = 0.5 */
    assert_string_equal(aim_compare_verdict(&h, &prev, 200, 800), "1/sqrt_d");
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_noise_and_special_rows),
                                       cmocka_unit_test(test_laws)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
