/* Stopping rules of the ODE driver (theory/stops.md):
 *  - the weak-recovery crossing, at an explicitly set threshold, against
 *    an independent computation: the closed-form linear-activation ODE
 *    integrated by RK4 and the crossing located by bisection on it; the
 *    same crossing on output grids of 3 and 101 points;
 *  - the crossing of a measured curve (SGD's, linearly interpolated
 *    between grid points) at set thresholds: exact on a curve that is
 *    linear between the points, within the stated error (the spacing
 *    around it) of tanh's closed-form crossing on a coarse grid;
 *  - the blow-up's cause: a noise blow-up (direct He2, eta = 0.5) has a
 *    noise share above 1/2, a level reached by learning (He1 towards a
 *    teacher above ode.blowup) one below;
 *  - the truncation stop's order M - 1 run taken from the previous order's
 *    run (compare --order ...) gives the same numbers as its own; a run
 *    whose rows past the cut nobody reads stops at the cut. */
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

#include "trajectory.h"
#include "config_check.h"

/* sigma = He1, C = I, T tokens, no noise, no decay: the closed-form
 * right-hand side of theory/direct.md ("Linear activation") for y = (Q,
 * P, Ro, Rp) with a direct teacher (Qt, Pt = 0). */
static void linear_rhs(int T, double eta, double Qt, const double *y, double *dy)
{
    const double T2 = T * T, Q = y[0], P = y[1], Ro = y[2], Rp = y[3];
    const double dom = Q + Qt - 2 * Ro, dps = P - 2 * Rp;
    const double a_s = T2 * (Q - Ro) + T * (P - Rp), a_st = T * (Q - Ro) + T2 * (P - Rp);
    const double a_t = T2 * (Ro - Qt) + T * Rp, a_tt = T * (Ro - Qt) + T2 * Rp;
    dy[0] = -2 * a_s + eta * (T2 * dom + T * dps);
    dy[1] = -2 * a_st + eta * (T * dom + T2 * dps);
    dy[2] = -a_t;
    dy[3] = -a_tt;
}

static void rk4_step(int T, double eta, double Qt, double h, double *y)
{
    double k1[4], k2[4], k3[4], k4[4], tmp[4];
    linear_rhs(T, eta, Qt, y, k1);
    for (int j = 0; j < 4; j++) tmp[j] = y[j] + 0.5 * h * k1[j];
    linear_rhs(T, eta, Qt, tmp, k2);
    for (int j = 0; j < 4; j++) tmp[j] = y[j] + 0.5 * h * k2[j];
    linear_rhs(T, eta, Qt, tmp, k3);
    for (int j = 0; j < 4; j++) tmp[j] = y[j] + h * k3[j];
    linear_rhs(T, eta, Qt, tmp, k4);
    for (int j = 0; j < 4; j++) y[j] += h / 6 * (k1[j] + 2 * k2[j] + 2 * k3[j] + k4[j]);
}

/* The overlap at tau from (Q0, 0, 0, 0): traceless student and teacher,
 * so it is Ro / sqrt(Q Qt). RK4 with steps of at most 1e-5. */
static double overlap_at(int T, double eta, double Q0, double Qt, double tau)
{
    double y[4] = {Q0, 0.0, 0.0, 0.0};
    const int steps = (int)ceil(tau / 1e-5);
    for (int s = 0; s < steps; s++)
        rk4_step(T, eta, Qt, tau / steps, y);
    return y[2] / sqrt(y[0] * Qt);
}

static void linear_config(aim_config *cfg)
{
    aim_config_defaults(cfg);
    cfg->tokens = 3;
    memset(cfg->cov, 0, sizeof cfg->cov);
    for (int a = 0; a < 3; a++)
        cfg->cov[a * 3 + a] = 1.0;
    memset(cfg->hermite, 0, sizeof cfg->hermite);
    cfg->hermite[1] = 1.0;
    cfg->hermite_degree = 1;
    cfg->eta = 0.05;
    cfg->horizon = 0.1;
    cfg->rtol = 1e-10;
    cfg->atol = 1e-12;
}

static double run_tau_wr(const aim_config *cfg, int points)
{
    aim_config c = *cfg;
    c.points = points;
    double *tau = malloc(sizeof(double) * (size_t)points);
    double *obs = malloc(sizeof(double) * (size_t)points * AIM_OBS_COUNT);
    assert_non_null(tau);
    assert_non_null(obs);
    for (int i = 0; i < points; i++)
        tau[i] = c.horizon * i / (points - 1.0);
    aim_ode_report rep;
    assert_int_equal(aim_trajectory_run(&c, 200, tau, obs, &rep), AIM_ODE_OK);
    free(tau);
    free(obs);
    return rep.tau_wr;
}

static void test_crossing_against_closed_form(void **state)
{
    (void)state;
    aim_config cfg;
    linear_config(&cfg);
    /* thresholds set explicitly, one not the default */
    const double thresholds[2] = {0.1, 0.35};
    for (int k = 0; k < 2; k++) {
        cfg.recovery_threshold = thresholds[k];
        /* bisection on the independent trajectory: the overlap grows
         * monotonically from 0 here (Ro' = T^2 Qt > 0 at the start) */
        double lo = 0.0, hi = cfg.horizon;
        assert_true(overlap_at(3, cfg.eta, cfg.student.scale, cfg.teacher.scale, hi) >
                    thresholds[k]);
        for (int it = 0; it < 50; it++) {
            const double mid = 0.5 * (lo + hi);
            if (overlap_at(3, cfg.eta, cfg.student.scale, cfg.teacher.scale, mid) >=
                thresholds[k])
                hi = mid;
            else
                lo = mid;
        }
        const double want = 0.5 * (lo + hi);
        const double coarse = run_tau_wr(&cfg, 3), fine = run_tau_wr(&cfg, 101);
        /* CVODE at rtol 1e-10 and RK4 at h = 1e-5 (error ~1e-12): the
         * overlap agrees to ~1e-9, the crossing to ~1e-9 / (d overlap /
         * d tau ~ 9) */
        if (fabs(coarse - want) > 1e-8 || fabs(fine - want) > 1e-8)
            fail_msg("threshold %g: tau_wr = %.12g (3 points), %.12g (101 points), "
                     "independent %.12g",
                     thresholds[k], coarse, fine, want);
        /* the root does not depend on the grid (only round-off) */
        assert_true(fabs(coarse - fine) <= 1e-12);
    }
}

/* The overlap of an SGD run is known on the grid only; its crossing is
 * interpolated linearly (sim/trajectory_run.c, theory/stops.md sec. 5). */
static void test_measured_crossing(void **state)
{
    (void)state;
    enum { N = 9 };
    double tau[N], overlap[2 * N]; /* stride 2: the overlap beside another column */
    /* a non-uniform grid and a curve linear in tau (negative: the crossing
     * is of |overlap|), whose interpolated crossing is exact */
    const double a = 6.0, b = 0.02;
    for (int i = 0; i < N; i++) {
        tau[i] = 0.1 * (i / (N - 1.0)) * (i / (N - 1.0));
        overlap[2 * i] = -(a * tau[i] + b);
        overlap[2 * i + 1] = 1.0; /* must not be read */
    }
    const double thresholds[2] = {0.1, 0.35};
    for (int k = 0; k < 2; k++) {
        const double want = (thresholds[k] - b) / a;
        const double got = aim_trajectory_recovery_time(N, tau, overlap, 2, thresholds[k]);
        if (!(fabs(got - want) <= 1e-14))
            fail_msg("linear curve, threshold %g: crossing %.17g, closed form %.17g",
                     thresholds[k], got, want);
    }
    /* at or above the threshold at the start: tau[0]; never: NaN; a NaN
     * point before the crossing (a blown-up seed): NaN */
    assert_true(aim_trajectory_recovery_time(N, tau, overlap, 2, 0.02) == tau[0]);
    assert_true(isnan(aim_trajectory_recovery_time(N, tau, overlap, 2, 0.7)));
    overlap[2 * 3] = NAN;
    assert_true(isnan(aim_trajectory_recovery_time(N, tau, overlap, 2, 0.35)));

    /* tanh(5 tau) on 11 points over [0, 0.5]: the crossing atanh(th)/5 is
     * within the stated bound, the spacing of the interval around it, and
     * within the curvature estimate h^2 |f''| / (8 |f'|), the largest error
     * of a linear interpolant over the interval (at its middle) */
    enum { P = 11 };
    double t2[P], o2[P];
    for (int i = 0; i < P; i++) {
        t2[i] = 0.05 * i;
        o2[i] = tanh(5.0 * t2[i]);
    }
    for (int k = 0; k < 2; k++) {
        const double th = thresholds[k] + 0.5; /* 0.6, 0.85: where tanh bends */
        const double want = atanh(th) / 5.0;
        const double got = aim_trajectory_recovery_time(P, t2, o2, 1, th);
        double spacing, curvature;
        aim_trajectory_recovery_error(P, t2, o2, 1, th, &spacing, &curvature);
        const double err = fabs(got - want);
        if (!(err <= spacing && err <= curvature))
            fail_msg("tanh, threshold %g: crossing %.9g, closed form %.9g (error %.3g), "
                     "spacing %.3g, curvature estimate %.3g",
                     th, got, want, err, spacing, curvature);
    }
}

static aim_ode_report direct_run(aim_config *cfg, int points)
{
    double *tau = malloc(sizeof(double) * (size_t)points);
    double *obs = malloc(sizeof(double) * (size_t)points * AIM_OBS_COUNT);
    assert_non_null(tau);
    assert_non_null(obs);
    cfg->points = points;
    for (int i = 0; i < points; i++)
        tau[i] = cfg->horizon * i / (points - 1.0);
    aim_ode_report rep;
    aim_trajectory_run(cfg, 200, tau, obs, &rep);
    free(tau);
    free(obs);
    return rep;
}

static void test_blowup_cause(void **state)
{
    (void)state;
    aim_config cfg;
    aim_config_defaults(&cfg);
    memset(cfg.hermite, 0, sizeof cfg.hermite);
    cfg.hermite[2] = 1.0; /* He2 at eta = 0.5: a noise blow-up at tau ~ 0.05 */
    cfg.hermite_degree = 2;
    cfg.eta = 0.5;
    cfg.horizon = 0.5;
    aim_ode_report rep = direct_run(&cfg, 21);
    assert_int_equal(rep.status, AIM_ODE_BLOWUP);
    assert_int_equal(rep.stop, AIM_STOP_NOISE);
    assert_true(rep.noise_share > 0.5);
    assert_non_null(strstr(rep.message, "lower training.eta"));

    /* He1 learning a teacher of Omega* = 1: Omega(S,S) rises from 0.25
     * through 0.6 by the gradient terms */
    linear_config(&cfg);
    cfg.eta = 0.01;
    cfg.horizon = 1.0;
    cfg.blowup = 0.6;
    rep = direct_run(&cfg, 21);
    assert_int_equal(rep.status, AIM_ODE_BLOWUP);
    assert_int_equal(rep.stop, AIM_STOP_GRADIENT);
    assert_true(rep.noise_share < 0.5);
    assert_non_null(strstr(rep.message, "not a noise blow-up"));
    assert_null(strstr(rep.message, "noise terms outgrow"));
}

/* One run of the tied He2 hierarchy (softmax: Figure 1's softmax on 1024
 * quasi-random points) at order M (reuse may be NULL): its observables,
 * moments (with the truncation estimate) and report. */
typedef struct {
    double obs[21 * AIM_OBS_COUNT];
    aim_trajectory_moments mom;
    aim_ode_report rep;
} tied_run;

static void run_tied(double tol, double eta, int order, int softmax, aim_trajectory_reuse *reuse,
                     tied_run *out)
{
    aim_config cfg;
    aim_config_error err;
    aim_config_defaults(&cfg);
    const char *he2[] = {"model.decomposition=tied", "teacher.decomposition=tied",
                         "model.activation=he2", "training.horizon=0.03",
                         "training.points=21", "student.scale=0.25", "teacher.scale=0.5",
                         "hierarchy.beyond=stop"};
    const char *soft[] = {"model.decomposition=tied", "teacher.decomposition=tied",
                          "model.tokens=4", "model.output=softmax", "training.horizon=0.3",
                          "training.points=21", "student.scale=0.25", "ode.qmc_points=1024",
                          "hierarchy.beyond=stop"};
    const char **sets = softmax ? soft : he2;
    const size_t n = softmax ? sizeof soft / sizeof *soft : sizeof he2 / sizeof *he2;
    for (size_t i = 0; i < n; i++)
        assert_int_equal(aim_config_set(&cfg, sets[i], &err), 0);
    assert_int_equal(aim_config_validate(&cfg, &err), 0);
    cfg.order = order;
    cfg.tol = tol;
    cfg.eta = eta;
    snprintf(cfg.name, sizeof cfg.name, "tied-M%d", order); /* compare's names */
    double tau[21];
    for (int i = 0; i < 21; i++)
        tau[i] = cfg.horizon * i / 20.0;
    assert_int_not_equal(aim_trajectory_run_reusing(&cfg, 400, tau, NULL, out->obs, &out->mom,
                                                    &out->rep, reuse),
                         AIM_ODE_FAILED);
}

static void same_run(const tied_run *a, const tied_run *b)
{
    assert_memory_equal(a->obs, b->obs, sizeof a->obs);
    assert_int_equal(a->rep.status, b->rep.status);
    assert_int_equal(a->rep.stop, b->rep.stop);
    assert_int_equal(a->rep.reached, b->rep.reached);
    assert_memory_equal(&a->rep.tau, &b->rep.tau, sizeof a->rep.tau);
    assert_memory_equal(&a->rep.tau_wr, &b->rep.tau_wr, sizeof a->rep.tau_wr);
    assert_string_equal(a->rep.message, b->rep.message);
    assert_int_equal(a->mom.count, b->mom.count);
    assert_memory_equal(a->mom.values, b->mom.values, sizeof(double) * 21 * a->mom.count);
    assert_int_equal(a->mom.trunc == NULL, b->mom.trunc == NULL);
    if (a->mom.trunc) /* the rows reached (the writer reads no others) */
        assert_memory_equal(a->mom.trunc, b->mom.trunc, sizeof(double) * 2 * a->rep.reached);
    assert_memory_equal(&a->mom.trunc_stop, &b->mom.trunc_stop, sizeof a->mom.trunc_stop);
    assert_memory_equal(&a->mom.trunc_stall, &b->mom.trunc_stall, sizeof a->mom.trunc_stall);
    assert_int_equal(a->mom.trunc_orders, b->mom.trunc_orders);
    assert_int_equal(a->mom.trunc_points, b->mom.trunc_points);
}

/* compare --order 2 3 4: each order's run serves the later ones'
 * truncation error estimates (aim_trajectory_run_reusing): order 3 takes
 * order 2, order 4 takes orders 3 and 2 (exact kernels: the lower orders
 * run on the run's own rule); every number is the one the estimate's own
 * lower runs give, without a cut and with hierarchy.tol = 0.01, which
 * stops the order-3 run at tau = 0.02 but not the order-4 run, whose
 * estimate reads the order-3 rows past that cut; and a run of another
 * configuration is not taken. */
static void test_truncation_reuse(void **state)
{
    (void)state;
    const double tols[2] = {0.0, 0.01};
    for (int k = 0; k < 2; k++) {
        aim_trajectory_reuse *reuse = aim_trajectory_reuse_create();
        assert_non_null(reuse);
        static tied_run fresh, kept;
        int cut = 0;
        for (int order = 2; order <= 4; order++) {
            run_tied(tols[k], 0.01, order, 0, NULL, &fresh);
            run_tied(tols[k], 0.01, order, 0, reuse, &kept);
            same_run(&fresh, &kept);
            cut |= fresh.rep.stop == AIM_STOP_TRUNCATION;
            aim_trajectory_moments_free(&fresh.mom);
            aim_trajectory_moments_free(&kept.mom);
        }
        assert_int_equal(aim_trajectory_reused(reuse), 3);
        assert_int_equal(cut, k == 1);
        /* another eta at order 5: the order-4 run kept is not its estimate's */
        run_tied(tols[k], 0.02, 5, 0, NULL, &fresh);
        run_tied(tols[k], 0.02, 5, 0, reuse, &kept);
        same_run(&fresh, &kept);
        assert_int_equal(aim_trajectory_reused(reuse), 3);
        aim_trajectory_moments_free(&fresh.mom);
        aim_trajectory_moments_free(&kept.mom);
        aim_trajectory_reuse_free(reuse);
    }
}

/* A run whose rows past its estimate's cut nobody reads stops there (the
 * order-3 run at hierarchy.tol = 0.01 is cut at tau = 0.02 of 0.03):
 * the same numbers as the whole run that compare keeps for a later order,
 * in fewer CVODE steps; the highest order of a compare stops early too. */
static void test_truncation_stops_early(void **state)
{
    (void)state;
    static tied_run early, whole, highest;
    aim_trajectory_reuse *reuse = aim_trajectory_reuse_create();
    aim_trajectory_reuse *last = aim_trajectory_reuse_create();
    assert_non_null(reuse);
    assert_non_null(last);
    aim_trajectory_reuse_orders(last, 3);
    run_tied(0.01, 0.01, 3, 0, NULL, &early);
    run_tied(0.01, 0.01, 3, 0, reuse, &whole);
    run_tied(0.01, 0.01, 3, 0, last, &highest);
    assert_int_equal(early.rep.stop, AIM_STOP_TRUNCATION);
    same_run(&early, &whole);
    same_run(&early, &highest);
    assert_string_equal(whole.rep.stats[0].what, "trajectory");
    assert_true(early.rep.stats[0].steps < whole.rep.stats[0].steps);
    assert_int_equal(early.rep.stats[0].steps, highest.rep.stats[0].steps);
    aim_trajectory_moments_free(&early.mom);
    aim_trajectory_moments_free(&whole.mom);
    aim_trajectory_moments_free(&highest.mom);
    aim_trajectory_reuse_free(reuse);
    aim_trajectory_reuse_free(last);
}

/* The same with a fast variable: the untied student's adiabatic raw mean
 * (examples/untied_raw_mean.ini, order 4, tau <= 0.05), whose path
 * observables, taken while order M is between grid points, move the root
 * tracking of the mean: they put it back, so the early-stopped run's rows
 * are the whole run's, bit for bit. */
static void test_truncation_stops_early_adiabatic(void **state)
{
    (void)state;
    aim_config cfg;
    aim_config_error err;
    aim_config_defaults(&cfg);
    const char *sets[] = {"model.decomposition=untied", "model.centring=raw",
                          "model.activation=he2",       "student.scale=0.5",
                          "teacher.mean=1",             "training.eta=0.02",
                          "training.horizon=0.05",      "training.points=21",
                          "hierarchy.order=4",          "hierarchy.mean=adiabatic",
                          "hierarchy.tol=0.05",         "hierarchy.beyond=stop"};
    for (size_t i = 0; i < sizeof sets / sizeof *sets; i++)
        assert_int_equal(aim_config_set(&cfg, sets[i], &err), 0);
    assert_int_equal(aim_config_validate(&cfg, &err), 0);
    double tau[21];
    for (int i = 0; i < 21; i++)
        tau[i] = cfg.horizon * i / 20.0;
    static tied_run early, whole;
    aim_trajectory_reuse *reuse = aim_trajectory_reuse_create();
    assert_non_null(reuse);
    assert_int_not_equal(
        aim_trajectory_run_reusing(&cfg, 400, tau, NULL, early.obs, &early.mom, &early.rep, NULL),
        AIM_ODE_FAILED);
    assert_int_not_equal(
        aim_trajectory_run_reusing(&cfg, 400, tau, NULL, whole.obs, &whole.mom, &whole.rep, reuse),
        AIM_ODE_FAILED);
    assert_int_equal(early.rep.stop, AIM_STOP_TRUNCATION);
    same_run(&early, &whole);
    assert_true(early.rep.stats[0].steps < whole.rep.stats[0].steps);
    aim_trajectory_moments_free(&early.mom);
    aim_trajectory_moments_free(&whole.mom);
    aim_trajectory_reuse_free(reuse);
}

/* compare --order 3 4 5 on the quasi-random rule: the lower orders run on
 * a quarter of its points (256), so the runs kept for the next order are
 * those coarse runs, not the orders' own: order 4 takes order 2's, order
 * 5 orders 3's and 2's; every number is the one of a run without reuse. */
static void test_truncation_reuse_coarse(void **state)
{
    (void)state;
    aim_trajectory_reuse *reuse = aim_trajectory_reuse_create();
    assert_non_null(reuse);
    static tied_run fresh, kept;
    for (int order = 3; order <= 5; order++) {
        run_tied(0.0, 0.5, order, 1, NULL, &fresh);
        run_tied(0.0, 0.5, order, 1, reuse, &kept);
        same_run(&fresh, &kept);
        assert_int_equal(kept.mom.trunc_points, 256);
        aim_trajectory_moments_free(&fresh.mom);
        aim_trajectory_moments_free(&kept.mom);
    }
    assert_int_equal(aim_trajectory_reused(reuse), 3);
    aim_trajectory_reuse_free(reuse);
}

int main(void)
{
    gsl_set_error_handler_off();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crossing_against_closed_form),
        cmocka_unit_test(test_measured_crossing),
        cmocka_unit_test(test_blowup_cause),
        cmocka_unit_test(test_truncation_reuse),
        cmocka_unit_test(test_truncation_reuse_coarse),
        cmocka_unit_test(test_truncation_stops_early),
        cmocka_unit_test(test_truncation_stops_early_adiabatic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
