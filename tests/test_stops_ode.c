/* Stopping rules of the ODE driver (theory/stops.md):
 *  - the weak-recovery crossing, at an explicitly set threshold, against
 *    an independent computation: the closed-form linear-activation ODE
 *    integrated by RK4 and the crossing located by bisection on it; the
 *    same crossing on output grids of 3 and 101 points;
 *  - the blow-up's cause: a noise blow-up (direct He2, eta = 0.5) has a
 *    noise share above 1/2, a level reached by learning (He1 towards a
 *    teacher above ode.blowup) one below. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>

#include "trajectory.h"

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

int main(void)
{
    gsl_set_error_handler_off();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crossing_against_closed_form),
        cmocka_unit_test(test_blowup_cause),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
