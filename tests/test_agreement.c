/* CI-sized agreement of the limit ODE with online SGD (MODEL.md sec. 8):
 * direct, centred, T = 2, sigma = He1 + He2/sqrt 2, d = 200, 8 seeds;
 * the convergence of the tied and untied hierarchies with their order M
 * (the allowance 0.6/sqrt d there: the measured first-order bias of the
 * tied hierarchy, 2-3 % at d = 200-400, i.e. about 0.5/sqrt d),
 * the fast relaxation of the untied raw mean, and the finite-d escape of
 * direct He2 predicted from each seed's start (below).
 *
 * Tolerance per grid point: 4 standard errors of the SGD mean over the
 * seeds, plus the finite-size bias of order 1/d. The bias of the order
 * parameters is measured in MODEL.md sec. 8 (noise term +20/d to +33/d
 * relative, first-order terms unbiased); the allowance here is 30/d of
 * the observable's change from its start, which at d = 200 is 15 %. The
 * check is on the teacher overlap and the risk; the drift tests check
 * every term sharply, this one the integration over time. A second check
 * makes the test able to fail on the time scale: the ODE evaluated on a
 * grid stretched by 20 % must be rejected. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>

#include "compare.h"
#include "grid.h"
#include "recovery.h"
#include "trajectory.h"

enum { POINTS = 13, SEEDS = 8, D = 200 };

static int count_violations(const double *tau, const double *ode, const double *mean,
                            const double *se, int verbose)
{
    static const int checked[2] = {AIM_OBS_OVERLAP, AIM_OBS_RISK};
    int bad = 0;
    for (int c = 0; c < 2; c++) {
        const int k = checked[c];
        const double start = ode[k];
        for (int i = 1; i < POINTS; i++) {
            const double o = ode[i * AIM_OBS_COUNT + k], m = mean[i * AIM_OBS_COUNT + k];
            const double s = se[i * AIM_OBS_COUNT + k];
            const double tol = 4.0 * s + 30.0 / D * fabs(o - start);
            const int ok = fabs(o - m) <= tol;
            if (verbose)
                print_message("  %-8s tau %.3f: ODE %.5f SGD %.5f +- %.5f  gap/tol %.2f %s\n",
                              aim_obs_names[k], tau[i], o, m, s, fabs(o - m) / tol,
                              ok ? "" : "FAIL");
            bad += !ok;
        }
    }
    return bad;
}

static void test_ode_matches_sgd(void **state)
{
    (void)state;
    aim_config cfg;
    aim_config_defaults(&cfg);
    cfg.horizon = 0.3;
    cfg.points = POINTS;
    cfg.seeds = SEEDS;
    cfg.d = D;
    double tau[POINTS], ode[POINTS * AIM_OBS_COUNT], stretched[POINTS * AIM_OBS_COUNT];
    aim_grid_fill(&cfg, tau);
    aim_ode_report rep;
    assert_int_equal(aim_trajectory_run(&cfg, D, tau, ode, &rep), AIM_ODE_OK);

    double *obs = malloc(sizeof(double) * SEEDS * POINTS * AIM_OBS_COUNT);
    int reached[SEEDS];
    double mean[POINTS * AIM_OBS_COUNT], se[POINTS * AIM_OBS_COUNT];
    assert_int_equal(aim_compare_run_sgd(&cfg, D, tau, POINTS, obs, reached), 0);
    for (int s = 0; s < SEEDS; s++)
        assert_int_equal(reached[s], POINTS);
    aim_compare_stats(SEEDS, POINTS, obs, mean, se);
    assert_int_equal(count_violations(tau, ode, mean, se, 1), 0);
    /* the overlap really moved: the comparison is not of constants */
    assert_true(ode[(POINTS - 1) * AIM_OBS_COUNT + AIM_OBS_OVERLAP] > 0.5);

    aim_config slow = cfg;
    slow.horizon = cfg.horizon * 0.8; /* an ODE 20 % slower */
    double tau_slow[POINTS];
    aim_grid_fill(&slow, tau_slow);
    assert_int_equal(aim_trajectory_run(&slow, D, tau_slow, stretched, &rep),
                     AIM_ODE_OK);
    assert_true(count_violations(tau, stretched, mean, se, 0) > 0);
    free(obs);
}

/* Runs SEEDS seeds of SGD on tau (points) into mean and se. */
static void sgd_stats(const aim_config *cfg, int d, const double *tau, int points,
                      double *mean, double *se)
{
    double *obs = malloc(sizeof(double) * (size_t)cfg->seeds * points * AIM_OBS_COUNT);
    int *reached = malloc(sizeof(int) * (size_t)cfg->seeds);
    assert_true(obs && reached);
    assert_int_equal(aim_compare_run_sgd(cfg, d, tau, points, obs, reached), 0);
    for (int s = 0; s < cfg->seeds; s++)
        assert_int_equal(reached[s], points);
    aim_compare_stats(cfg->seeds, points, obs, mean, se);
    free(obs);
    free(reached);
}

static void configure(aim_config *cfg, const char *const *sets, size_t n)
{
    aim_config_error e;
    aim_config_defaults(cfg);
    for (size_t i = 0; i < n; i++)
        if (aim_config_set(cfg, sets[i], &e))
            fail_msg("%s", e.message);
    if (aim_config_validate(cfg, &e))
        fail_msg("%s", e.message);
}

/* The hierarchy's convergence with its order against cfg->seeds SGD
 * seeds at dimension d: gap[j], the largest teacher-overlap gap of order
 * orders[j]; at the last order the overlap and the risk must agree at
 * every grid point within 4 standard errors plus 0.6/sqrt d of the
 * observable's change from its start (the finite-size bias of the
 * hierarchies is of order 1/sqrt d: theory/tied.md sec. 8,
 * theory/untied.md sec. 8). */
static void convergence(const char *const *sets, size_t nsets, int d, const int *orders, int n,
                        double *gap)
{
    aim_config cfg;
    configure(&cfg, sets, nsets);
    const int P = cfg.points;
    double *tau = malloc(sizeof(double) * (size_t)P);
    double *mean = malloc(sizeof(double) * (size_t)P * AIM_OBS_COUNT);
    double *se = malloc(sizeof(double) * (size_t)P * AIM_OBS_COUNT);
    double *ode = malloc(sizeof(double) * (size_t)P * AIM_OBS_COUNT);
    assert_true(tau && mean && se && ode);
    aim_grid_fill(&cfg, tau);
    sgd_stats(&cfg, d, tau, P, mean, se);
    for (int j = 0; j < n; j++) {
        cfg.order = orders[j];
        aim_ode_report rep;
        assert_int_equal(aim_trajectory_run(&cfg, d, tau, ode, &rep), AIM_ODE_OK);
        gap[j] = 0.0;
        int bad = 0;
        for (int i = 1; i < P; i++) {
            gap[j] = fmax(gap[j], fabs(ode[i * AIM_OBS_COUNT + AIM_OBS_OVERLAP] -
                                       mean[i * AIM_OBS_COUNT + AIM_OBS_OVERLAP]));
            for (int c = 0; c < 2; c++) {
                const int k = c ? AIM_OBS_RISK : AIM_OBS_OVERLAP;
                const double o = ode[i * AIM_OBS_COUNT + k], m = mean[i * AIM_OBS_COUNT + k];
                const double tol = 4.0 * se[i * AIM_OBS_COUNT + k] +
                                   0.6 / sqrt((double)d) * fabs(o - ode[k]);
                bad += fabs(o - m) > tol;
            }
        }
        print_message("  M = %d: largest overlap gap %.4f; overlap at tau = %.3f: ODE %.4f, "
                      "SGD %.4f +- %.4f; points outside the tolerance: %d\n",
                      orders[j], gap[j], tau[P - 1],
                      ode[(P - 1) * AIM_OBS_COUNT + AIM_OBS_OVERLAP],
                      mean[(P - 1) * AIM_OBS_COUNT + AIM_OBS_OVERLAP],
                      se[(P - 1) * AIM_OBS_COUNT + AIM_OBS_OVERLAP], bad);
        if (j == n - 1)
            assert_int_equal(bad, 0);
    }
    free(tau);
    free(mean);
    free(se);
    free(ode);
}

/* Tied attention, row softmax (beta = 1), T = 2, d = 100, 8 seeds, each
 * ODE started from the exact free moments. The largest teacher-overlap
 * gap must fall from M = 1 (no student-teacher moment: the overlap stays
 * 0) to M = 2 and again to M = 4, and at M = 4 the overlap and the risk
 * must agree within 4 standard errors plus the finite-size bias, which
 * for tied attention is of order 1/sqrt d (theory/tied.md sec. 8; the
 * drift tests measure the first-order terms 2-3 % high at d = 200-400):
 * allowance 0.6/sqrt d = 6 % of the observable's change. */
static void test_tied_convergence(void **state)
{
    (void)state;
    static const char *const sets[] = {"model.decomposition=tied", "teacher.decomposition=tied",
                                       "model.output=softmax", "training.eta=0.5",
                                       "training.horizon=0.3", "student.scale=0.25",
                                       "training.points=11", "sgd.seeds=8", "sgd.block=32"};
    static const int orders[] = {1, 2, 4};
    double gap[3];
    convergence(sets, sizeof sets / sizeof sets[0], 100, orders, 3, gap);
    assert_true(gap[1] < gap[0]);
    assert_true(gap[2] < gap[1]);
}

/* Untied attention, He1, centred, T = 2, d = 100, 8 seeds, exact start.
 * The largest overlap gap must fall from M = 2 to M = 3 and to M = 5,
 * and at M = 5 the overlap and the risk must agree within 4 standard
 * errors plus the finite-size bias: for He1 the first-order terms are
 * exact at any d (theory/untied.md sec. 8), the second-order ones carry
 * O(1/sqrt d) (the drift tests); allowance 0.6/sqrt d of the change, as
 * for tied attention (convergence()). */
static void test_untied_convergence(void **state)
{
    (void)state;
    static const char *const sets[] = {"model.decomposition=untied", "model.activation=he1",
                                       "student.scale=0.5", "training.eta=0.05",
                                       "training.horizon=0.06", "training.points=11",
                                       "sgd.seeds=8", "sgd.block=32"};
    static const int orders[] = {2, 3, 5};
    double gap[3];
    convergence(sets, sizeof sets / sizeof sets[0], 100, orders, 3, gap);
    assert_true(gap[1] < gap[0]);
    assert_true(gap[2] < gap[1]);
}

/* The fast clock: untied, raw centring, He1, teacher mean 1, d = 100,
 * 8 seeds, a log grid from t = d tau = 0.01 to 3. The student mean of
 * the stiff ODE at d = 100 must follow the SGD mean within 4 standard
 * errors (the seeds' teachers differ in their own trace, +-0.1 in
 * their mean at d = 100, which the standard error carries) plus 2 % of
 * its change (the moments move by O(1/d) during the fast phase, which the
 * ODE's start does not see), and a clock 30 % slower must be rejected.
 * The adiabatic composite must agree with the stiff system within 5 % of
 * the change: the two differ by the terms of order 1/sqrt d = 10 % of
 * the stiff mean equation (the teacher mean's m* over sqrt d in the
 * moments, m(K) = mean/sqrt d, and sqrt(d) E[sum e h^c(A + B)] against
 * d (m(A) + m(B)) E_C), measured at 1.7 % here (theory/untied.md sec. 3).
 * The slower clock must fail at two points at least (it does at three:
 * t = 0.38, 0.63, 1.06, by 1.3-1.5 times the tolerance). */
static void test_untied_fast_mean(void **state)
{
    (void)state;
    enum { FP = 13, FD = 100 };
    static const char *const sets[] = {
        "model.decomposition=untied", "model.activation=he1", "model.centring=raw",
        "teacher.mean=1", "student.scale=0.5", "training.eta=0.05", "training.grid=log",
        "training.grid_start=1e-4", "training.horizon=0.03", "sgd.seeds=8", "sgd.block=16",
        "hierarchy.order=3"};
    aim_config cfg;
    configure(&cfg, sets, sizeof sets / sizeof sets[0]);
    cfg.points = FP;
    double tau[FP], mean[FP * AIM_OBS_COUNT], se[FP * AIM_OBS_COUNT];
    aim_grid_fill(&cfg, tau);
    sgd_stats(&cfg, FD, tau, FP, mean, se);
    double stiff[FP * AIM_OBS_COUNT], slow[FP * AIM_OBS_COUNT], adia[FP * AIM_OBS_COUNT];
    aim_ode_report rep;
    assert_int_equal(aim_trajectory_run(&cfg, FD, tau, stiff, &rep), AIM_ODE_OK);
    aim_config lag = cfg;
    lag.ode_d = 0.7 * FD; /* the fast clock t = d tau runs 30 % slower */
    assert_int_equal(aim_trajectory_run(&lag, FD, tau, slow, &rep), AIM_ODE_OK);
    aim_config ad = cfg;
    ad.mean_mode = AIM_MEAN_ADIABATIC;
    assert_int_equal(aim_trajectory_run(&ad, FD, tau, adia, &rep), AIM_ODE_OK);
    const int k = AIM_OBS_MEAN;
    const double change = fabs(stiff[(FP - 1) * AIM_OBS_COUNT + k] - stiff[k]);
    int bad = 0, bad_slow = 0, bad_adia = 0;
    for (int i = 1; i < FP; i++) {
        const double m = mean[i * AIM_OBS_COUNT + k], s = se[i * AIM_OBS_COUNT + k];
        const double o = stiff[i * AIM_OBS_COUNT + k], tol = 4.0 * s + 0.02 * change;
        bad += fabs(o - m) > tol;
        bad_slow += fabs(slow[i * AIM_OBS_COUNT + k] - m) > tol;
        bad_adia += fabs(adia[i * AIM_OBS_COUNT + k] - o) > 0.05 * change;
        print_message("  t = %7.3f: mean SGD %.4f +- %.4f, stiff %.4f, adiabatic %.4f, "
                      "slower clock %.4f\n", FD * tau[i], m, s, o,
                      adia[i * AIM_OBS_COUNT + k], slow[i * AIM_OBS_COUNT + k]);
    }
    assert_true(change > 0.5); /* the mean really moved */
    assert_int_equal(bad, 0);
    assert_int_equal(bad_adia, 0);
    assert_true(bad_slow >= 2);
}

/* Direct He2: the limit ODE never leaves the uninformative start, SGD
 * does, through the seed's random start overlap of order 1/d. The limit
 * ODE started from each seed's initial matrices (aimdyn recovery's
 * finite-d start) must predict that seed's SGD weak-recovery time: the
 * mean of ln(tau_SGD / tau_ODE) over 32 seeds at d = 100 within 3
 * standard errors of 0 (the seeds' scatter, about 0.33 per seed, is
 * SGD's own noise, which the deterministic prediction leaves out); a
 * prediction on a clock 1.5 times slower must be rejected. */
static void test_finite_escape(void **state)
{
    (void)state;
    enum { ESC_SEEDS = 32, ESC_D = 100, ESC_POINTS = 91 };
    const char *const sets[] = {"model.activation=he2", "training.horizon=0.45",
                                "training.points=91", "sgd.seeds=32"};
    aim_config cfg;
    configure(&cfg, sets, sizeof sets / sizeof sets[0]);
    double tau[ESC_POINTS];
    aim_grid_fill(&cfg, tau);
    double *obs = malloc(sizeof(double) * ESC_SEEDS * ESC_POINTS * AIM_OBS_COUNT);
    int reached[ESC_SEEDS];
    assert_non_null(obs);
    assert_int_equal(aim_compare_run_sgd(&cfg, ESC_D, tau, ESC_POINTS, obs, reached), 0);
    aim_recovery_finite f;
    char err[1024];
    if (aim_recovery_finite_run(&cfg, ESC_D, ESC_SEEDS, 0, &f, err, sizeof err))
        fail_msg("%s", err);
    double sum = 0.0, sum2 = 0.0;
    int n = 0;
    for (int s = 0; s < ESC_SEEDS; s++) {
        const double t_sgd = aim_trajectory_recovery_time(
            ESC_POINTS, tau, obs + (size_t)s * ESC_POINTS * AIM_OBS_COUNT + AIM_OBS_OVERLAP,
            AIM_OBS_COUNT, cfg.recovery_threshold);
        if (!isfinite(t_sgd) || !isfinite(f.tau_wr[s]))
            continue;
        const double l = log(t_sgd / f.tau_wr[s]);
        sum += l;
        sum2 += l * l;
        n++;
    }
    const double mean = sum / n, sd = sqrt((sum2 - n * mean * mean) / (n - 1));
    const double se = sd / sqrt(n);
    printf("finite-d escape, d = %d: %d of %d seeds recover in both; mean ln(tau_SGD/tau_ODE) "
           "= %.4f, sd %.4f, se %.4f\n", ESC_D, n, ESC_SEEDS, mean, sd, se);
    assert_true(n >= ESC_SEEDS * 3 / 4);
    assert_true(fabs(mean) <= 3.0 * se);
    assert_true(fabs(mean - log(1.5)) > 3.0 * se); /* a 1.5 times slower clock fails */
    aim_recovery_finite_free(&f);
    free(obs);
}

int main(void)
{
    gsl_set_error_handler_off();
    /* AIMDYN_TEST_FILTER=test_x runs the matching tests only */
    if (getenv("AIMDYN_TEST_FILTER"))
        cmocka_set_test_filter(getenv("AIMDYN_TEST_FILTER"));
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_ode_matches_sgd),
                                       cmocka_unit_test(test_tied_convergence),
                                       cmocka_unit_test(test_untied_convergence),
                                       cmocka_unit_test(test_untied_fast_mean),
                                       cmocka_unit_test(test_finite_escape)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
