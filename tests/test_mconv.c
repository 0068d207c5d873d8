/* The convergence-in-M rule of the truncation error estimate
 * (theory/matrix.md sec. 6) on given sequences of orders: the stall of the
 * quadrature closure's risk on Figure 1 (validate/results/RESULTS_late.md
 * sec. 1) and its odd orders' larger error early in the same run, the
 * alternation of the untied raw case (sec. 5), a geometric
 * sequence whose tail is known, and the numerical resolution. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>

#include "mconv.h"

/* The steps x_k - x_(k-1) of values x[0 .. count] (lowest order first). */
static void steps_of(const double *x, int count, double *steps)
{
    for (int k = 0; k < count; k++)
        steps[k] = x[k + 1] - x[k];
}

/* Figure 1, quadrature closure, tau = 1: the risk of orders 6..10 relative
 * to the M = infinity reference (+5.2, -9.3, -6.6, -9.5, -6.2 %), orders 9
 * and 10 both below it. Two orders see an alternation with a 3.3 % step
 * and would pass hierarchy.tol = 0.05; the step from 9 to 10 is larger
 * than the one from 7 to 8 (3.3 against 2.7 %), and the rule says that
 * the orders do not converge, from three steps and from two. */
static void test_stall_is_seen(void **state)
{
    (void)state;
    const double risk[5] = {0.052, -0.093, -0.066, -0.095, -0.062}; /* M = 6..10 */
    double steps[4], est;
    steps_of(risk, 4, steps);
    assert_int_equal(aim_mconv_estimate(steps + 1, 3, 1e-4, &est), AIM_MCONV_STALLED);
    assert_true(fabs(est - 0.033) < 1e-12); /* the last step, a lower bound */
    assert_int_equal(aim_mconv_estimate(steps + 2, 2, 1e-4, &est), AIM_MCONV_STALLED);
}

/* Figure 1 at tau = 0.18, the overlap of orders 3..6: steps -0.046,
 * +0.0040, -0.0040. Order 5 is the one that errs (0.5037 against 0.4997
 * for orders 4 and 6): equal consecutive steps are an odd order's larger
 * error, not a stall; two orders on, the step shrank twelvefold. */
static void test_parity_is_no_stall(void **state)
{
    (void)state;
    const double steps[3] = {-0.046, 0.0040, -0.0040};
    double est;
    assert_int_equal(aim_mconv_estimate(steps, 3, 1e-4, &est), AIM_MCONV_ALTERNATING);
    assert_true(fabs(est - 0.0040) < 1e-15);
}

/* The untied raw case at tau = 0.05 (sec. 5): orders 3..6 alternate with
 * steps 0.200, 0.137, 0.084 that shrink by 0.69, 0.61; the last step
 * bounds the error of order 6 (+0.032 against the matrix process). */
static void test_alternating_brackets(void **state)
{
    (void)state;
    const double steps[3] = {0.200, -0.137, 0.084};
    double est;
    assert_int_equal(aim_mconv_estimate(steps, 3, 1e-4, &est), AIM_MCONV_ALTERNATING);
    assert_true(fabs(est - 0.084) < 1e-15);
    assert_true(est >= 0.032);
}

/* x_M = 1 - r^M from one side: the error of x_M is r^M, the last step
 * r^(M-1) (1 - r) times r / (1 - r); at r = 0.8 the tail is four times the
 * last step, at r = 0.25 a third of it, and the estimate keeps the step.
 * The rate comes from the steps two orders apart (r^2). */
static void test_monotone_tail(void **state)
{
    (void)state;
    const double rates[2] = {0.8, 0.25};
    for (int j = 0; j < 2; j++) {
        const double r = rates[j];
        double x[4], steps[3], est;
        for (int M = 2; M <= 5; M++)
            x[M - 2] = 1.0 - pow(r, M);
        steps_of(x, 3, steps);
        assert_int_equal(aim_mconv_estimate(steps, 3, 1e-9, &est), AIM_MCONV_MONOTONE);
        const double error = 1.0 - x[3], last = steps[2];
        assert_true(fabs(est - fmax(error, last)) < 1e-12 * error);
    }
    /* r -> 1 from below: the tail grows without bound */
    const double slow[2] = {0.0100, 0.0099};
    double est;
    assert_int_equal(aim_mconv_estimate(slow, 2, 1e-9, &est), AIM_MCONV_MONOTONE);
    assert_true(fabs(est - 0.0099 * 99.0) < 1e-9);
}

/* Steps within the runs' numerical resolution do not count: round-off
 * that grows from 1e-13 to 3e-13 is no stall; a resolved step after
 * unresolved ones is one (it did not shrink); one step is the two-order
 * estimate; a NaN step (a lower order stopped) gives no estimate. */
static void test_resolution(void **state)
{
    (void)state;
    double est;
    const double roundoff[3] = {1e-13, -1e-13, 3e-13};
    assert_int_equal(aim_mconv_estimate(roundoff, 3, 1e-4, &est), AIM_MCONV_RESOLUTION);
    assert_true(est == 3e-13);
    const double old_small[3] = {2e-5, -1e-5, 5e-4};
    assert_int_equal(aim_mconv_estimate(old_small, 3, 1e-4, &est), AIM_MCONV_STALLED);
    const double newer_small[3] = {0.02, -0.01, 5e-5};
    assert_int_equal(aim_mconv_estimate(newer_small, 3, 1e-4, &est), AIM_MCONV_RESOLUTION);
    const double one[1] = {-0.03};
    assert_int_equal(aim_mconv_estimate(one, 1, 1e-4, &est), AIM_MCONV_TWO_ORDERS);
    assert_true(est == 0.03);
    const double stopped[2] = {NAN, 0.01};
    assert_int_equal(aim_mconv_estimate(stopped, 2, 1e-4, &est), AIM_MCONV_RESOLUTION);
    assert_true(isnan(est));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stall_is_seen),
        cmocka_unit_test(test_parity_is_no_stall),
        cmocka_unit_test(test_alternating_brackets),
        cmocka_unit_test(test_monotone_tail),
        cmocka_unit_test(test_resolution),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
