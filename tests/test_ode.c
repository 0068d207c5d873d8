/* The direct-attention ODE on CVODE against known limits:
 *  - linear sigma (He1), C = I: every expectation is in closed form and
 *    the ODE is linear; an independent RK4 integration of the closed-form
 *    right-hand side (written here, without the engine) must agree;
 *  - He2 started on the uninformative manifold stays on it exactly;
 *  - a learning rate above the noise threshold blows up, and is reported;
 *  - an invalid state is reported with its time and state;
 *  - the integration a grid point at a time is the whole one. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include <gsl/gsl_errno.h>

#include "direct.h"
#include "ode.h"

static aim_ode_model wrap(aim_direct *m)
{
    aim_ode_model om = {
        .size = AIM_DIRECT_SIZE,
        .ctx = m,
        .rhs = (int (*)(void *, const double *, double *))aim_direct_rhs,
        .error = (const char *(*)(void *))aim_direct_error,
        .state_name = aim_direct_state_name,
    };
    return om;
}

static void linear_config(aim_config *cfg, int T)
{
    aim_config_defaults(cfg);
    cfg->tokens = T;
    memset(cfg->cov, 0, sizeof cfg->cov);
    for (int a = 0; a < T; a++)
        cfg->cov[a * T + a] = 1.0;
    memset(cfg->hermite, 0, sizeof cfg->hermite);
    cfg->hermite[1] = 1.0;
    cfg->hermite_degree = 1;
    cfg->activation = AIM_ACT_HERMITE;
    cfg->rtol = 1e-10;
    cfg->atol = 1e-12;
}

/* Closed-form right-hand side for sigma = He1, C = I (theory/direct.md,
 * "Linear activation"): y = (Q, P, Ro, Rp), teacher (Qt, Pt). */
static void linear_rhs(int T, double eta, double gamma, double noise, double Qt,
                       double Pt, const double *y, double *dy)
{
    const double T2 = T * T, Q = y[0], P = y[1], Ro = y[2], Rp = y[3];
    const double dom = Q + Qt - 2 * Ro, dps = P + Pt - 2 * Rp;
    const double a_s = T2 * (Q - Ro) + T * (P - Rp), a_st = T * (Q - Ro) + T2 * (P - Rp);
    const double a_t = T2 * (Ro - Qt) + T * (Rp - Pt), a_tt = T * (Ro - Qt) + T2 * (Rp - Pt);
    const double ko = T2 * dom + T * dps + noise * T2, kp = T * dom + T2 * dps + noise * T;
    dy[0] = -2 * a_s - 2 * gamma * Q + eta * ko;
    dy[1] = -2 * a_st - 2 * gamma * P + eta * kp;
    dy[2] = -a_t - gamma * Ro;
    dy[3] = -a_tt - gamma * Rp;
}

static void test_linear_against_closed_form(void **state)
{
    (void)state;
    aim_config cfg;
    const int T = 3;
    linear_config(&cfg, T);
    cfg.eta = 0.05;
    cfg.gamma = 0.3;
    cfg.noise = 0.2;
    cfg.teacher.symmetric = 1; /* Psi(S*, S*) = Omega(S*, S*) = v* */
    cfg.horizon = 0.3;
    cfg.points = 7;
    aim_direct *m = aim_direct_create(&cfg, 0.0, AIM_RULE_AUTO);
    assert_non_null(m);
    double y0[AIM_DIRECT_SIZE], states[7 * AIM_DIRECT_SIZE], tau[7];
    aim_direct_initial(m, y0);
    assert_true(fabs(y0[0] - cfg.student.scale) < 1e-15);
    for (int i = 0; i < 7; i++)
        tau[i] = cfg.horizon * i / 6.0;
    aim_ode_model om = wrap(m);
    aim_ode_report rep;
    assert_int_equal(aim_ode_integrate(&cfg, &om, y0, tau, 7, states, &rep), AIM_ODE_OK);
    assert_int_equal(rep.reached, 7);

    /* independent RK4 on the closed form */
    double y[4] = {y0[0], y0[1], y0[2], y0[3]};
    const double Qt = cfg.teacher.scale, Pt = cfg.teacher.scale;
    const int steps_per = 2000;
    for (int i = 1; i < 7; i++) {
        const double h = (tau[i] - tau[i - 1]) / steps_per;
        for (int s = 0; s < steps_per; s++) {
            double k1[4], k2[4], k3[4], k4[4], tmp[4];
            linear_rhs(T, cfg.eta, cfg.gamma, cfg.noise, Qt, Pt, y, k1);
            for (int j = 0; j < 4; j++) tmp[j] = y[j] + 0.5 * h * k1[j];
            linear_rhs(T, cfg.eta, cfg.gamma, cfg.noise, Qt, Pt, tmp, k2);
            for (int j = 0; j < 4; j++) tmp[j] = y[j] + 0.5 * h * k2[j];
            linear_rhs(T, cfg.eta, cfg.gamma, cfg.noise, Qt, Pt, tmp, k3);
            for (int j = 0; j < 4; j++) tmp[j] = y[j] + h * k3[j];
            linear_rhs(T, cfg.eta, cfg.gamma, cfg.noise, Qt, Pt, tmp, k4);
            for (int j = 0; j < 4; j++) y[j] += h / 6 * (k1[j] + 2 * k2[j] + 2 * k3[j] + k4[j]);
        }
        for (int j = 0; j < 4; j++) {
            double got = states[i * AIM_DIRECT_SIZE + j];
            /* CVODE at rtol 1e-10 and RK4 at h ~ 2.5e-5: both ~1e-9 */
            if (fabs(got - y[j]) > 1e-7 * (1 + fabs(y[j])))
                fail_msg("tau %g component %d: CVODE %.12g, closed-form RK4 %.12g", tau[i], j,
                         got, y[j]);
        }
        /* the trace stays 0: a direct Gaussian teacher is traceless */
        assert_true(fabs(states[i * AIM_DIRECT_SIZE + 4]) < 1e-12);
    }
    /* the student learns: overlap grows */
    double obs[AIM_OBS_COUNT];
    assert_int_equal(aim_direct_observables(m, states + 6 * AIM_DIRECT_SIZE, obs), 0);
    assert_true(obs[AIM_OBS_OVERLAP] > 0.5);
    aim_direct_free(m);
}

/* Raw centring, linear sigma, general C: the mean obeys exactly
 * dm/dtau = -(d s2 + T^2 + s2)(m - m*) - gamma m, s2 = ||C||_F^2
 * (theory/direct.md, sec. 6.2). */
static void test_linear_raw_mean(void **state)
{
    (void)state;
    aim_config cfg;
    const int T = 3;
    linear_config(&cfg, T);
    for (int a = 0; a < T; a++)
        for (int b = 0; b < T; b++)
            cfg.cov[a * T + b] = a == b ? 1.0 : 0.25;
    cfg.centring = AIM_RAW;
    cfg.teacher.mean = 0.8;
    cfg.gamma = 0.7;
    const double d = 300.0;
    aim_direct *m = aim_direct_create(&cfg, d, AIM_RULE_AUTO);
    double s2 = 0.0;
    for (int p = 0; p < T * T; p++)
        s2 += cfg.cov[p] * cfg.cov[p];
    double y[AIM_DIRECT_SIZE] = {0.3, 0.05, 0.1, 0.02, -0.4}, dy[AIM_DIRECT_SIZE];
    assert_int_equal(aim_direct_rhs(m, y, dy), 0);
    const double want = -(d * s2 + T * T + s2) * (y[4] - cfg.teacher.mean) - cfg.gamma * y[4];
    if (fabs(dy[4] - want) > 1e-9 * fabs(want))
        fail_msg("dm/dtau = %.12g, closed form %.12g", dy[4], want);
    aim_direct_free(m);
}

static void he2_config(aim_config *cfg)
{
    aim_config_defaults(cfg);
    memset(cfg->hermite, 0, sizeof cfg->hermite);
    cfg->hermite[2] = 1.0;
    cfg->hermite_degree = 2;
    cfg->activation = AIM_ACT_HERMITE;
}

static void test_he2_manifold_invariant(void **state)
{
    (void)state;
    aim_config cfg;
    he2_config(&cfg);
    cfg.eta = 0.05;
    cfg.horizon = 1.0;
    enum { N = 11 };
    aim_direct *m = aim_direct_create(&cfg, 0.0, AIM_RULE_AUTO);
    double y0[AIM_DIRECT_SIZE], states[N * AIM_DIRECT_SIZE], tau[N];
    aim_direct_initial(m, y0);
    for (int i = 0; i < N; i++)
        tau[i] = cfg.horizon * i / (N - 1.0);
    aim_ode_model om = wrap(m);
    aim_ode_report rep;
    assert_int_equal(aim_ode_integrate(&cfg, &om, y0, tau, N, states, &rep), AIM_ODE_OK);
    for (int i = 0; i < N; i++) {
        assert_true(fabs(states[i * AIM_DIRECT_SIZE + 2]) < 1e-12);
        assert_true(fabs(states[i * AIM_DIRECT_SIZE + 3]) < 1e-12);
    }
    /* ... but the student's own Omega moves (risk decreases or noise
     * grows it): the integration did something */
    assert_true(fabs(states[(N - 1) * AIM_DIRECT_SIZE] - y0[0]) > 1e-3);
    /* off the manifold, He2 drifts towards the teacher while
     * Omega(S,S) < Omega(S*,S*) (theory/direct.md sec. 6.3): Ro grows */
    double y1[AIM_DIRECT_SIZE] = {0.25, 0.0, 0.01, 0.0, 0.0}, dy[AIM_DIRECT_SIZE];
    assert_int_equal(aim_direct_rhs(m, y1, dy), 0);
    assert_true(dy[2] > 0.0);
    aim_direct_free(m);
}

static void test_blowup_reported(void **state)
{
    (void)state;
    aim_config cfg;
    he2_config(&cfg);
    cfg.eta = 0.5; /* theory/model.md sec. 8: blow-up at tau ~ 0.045 */
    cfg.teacher.scale = 1.0;
    cfg.student.scale = 0.25;
    cfg.blowup = 1e3;
    enum { N = 21 };
    aim_direct *m = aim_direct_create(&cfg, 0.0, AIM_RULE_AUTO);
    double y0[AIM_DIRECT_SIZE], states[N * AIM_DIRECT_SIZE], tau[N];
    aim_direct_initial(m, y0);
    for (int i = 0; i < N; i++)
        tau[i] = 0.5 * i / (N - 1.0);
    aim_ode_model om = wrap(m);
    aim_ode_report rep;
    assert_int_equal(aim_ode_integrate(&cfg, &om, y0, tau, N, states, &rep), AIM_ODE_BLOWUP);
    assert_non_null(strstr(rep.message, "blow-up"));
    assert_true(rep.tau > 0.0 && rep.tau < 0.5);
    assert_true(rep.reached < N);
    aim_direct_free(m);
}

static void test_invalid_state_reported(void **state)
{
    (void)state;
    aim_config cfg;
    aim_config_defaults(&cfg);
    aim_direct *m = aim_direct_create(&cfg, 0.0, AIM_RULE_AUTO);
    /* |Omega(S,S*)| > sqrt(Omega(S,S) Omega(S*,S*)): impossible */
    double y0[AIM_DIRECT_SIZE] = {0.25, 0.0, 0.9, 0.0, 0.0}, states[2 * AIM_DIRECT_SIZE];
    double tau[2] = {0.0, 0.1};
    aim_ode_model om = wrap(m);
    aim_ode_report rep;
    assert_int_equal(aim_ode_integrate(&cfg, &om, y0, tau, 2, states, &rep), AIM_ODE_FAILED);
    assert_non_null(strstr(rep.message, "not a valid covariance"));
    assert_non_null(strstr(rep.message, "omega_st = 0.9"));
    aim_direct_free(m);
}

/* ode.linear_solver = auto: dense for every tied order (198 equations at
 * M = 10, 1.4 times faster dense), GMRES for the untied hierarchies from
 * M = 4 (235 equations); an explicit choice is kept at any size. */
static void test_linear_solver_choice(void **state)
{
    (void)state;
    aim_config cfg;
    aim_config_defaults(&cfg);
    assert_int_equal(cfg.solver, AIM_SOLVER_AUTO);
    assert_false(aim_ode_uses_krylov(&cfg, 76));
    assert_false(aim_ode_uses_krylov(&cfg, 198));
    assert_true(aim_ode_uses_krylov(&cfg, 235));
    assert_true(aim_ode_uses_krylov(&cfg, 25245));
    cfg.solver = AIM_SOLVER_DENSE;
    assert_false(aim_ode_uses_krylov(&cfg, 25245));
    cfg.solver = AIM_SOLVER_KRYLOV;
    assert_true(aim_ode_uses_krylov(&cfg, 2));
}

/* The integration a grid point at a time (aim_ode_begin, _advance, _end)
 * is the whole integration: the same states, bit for bit, and the same
 * CVODE steps; ended early by its caller it keeps the rows reached, with
 * status OK, and fewer steps. */
static void test_stepwise(void **state)
{
    (void)state;
    aim_config cfg;
    linear_config(&cfg, 2);
    cfg.eta = 0.05;
    cfg.horizon = 0.3;
    enum { N = 7 };
    aim_direct *m = aim_direct_create(&cfg, 0.0, AIM_RULE_AUTO);
    assert_non_null(m);
    double y0[AIM_DIRECT_SIZE], whole[N * AIM_DIRECT_SIZE], parts[N * AIM_DIRECT_SIZE], tau[N];
    aim_direct_initial(m, y0);
    for (int i = 0; i < N; i++)
        tau[i] = cfg.horizon * i / (N - 1.0);
    aim_ode_model om = wrap(m);
    aim_ode_report a, b, c;
    assert_int_equal(aim_ode_integrate(&cfg, &om, y0, tau, N, whole, &a), AIM_ODE_OK);
    aim_ode_run *run = aim_ode_begin(&cfg, &om, y0, tau, N, parts, &b);
    assert_non_null(run);
    for (int i = 1; i < N; i++) {
        assert_int_equal(aim_ode_advance(run, i), AIM_ODE_OK);
        assert_int_equal(b.reached, i + 1);
    }
    aim_ode_end(run);
    assert_int_equal(b.status, AIM_ODE_OK);
    assert_memory_equal(whole, parts, sizeof whole);
    assert_int_equal(a.stats[0].steps, b.stats[0].steps);
    run = aim_ode_begin(&cfg, &om, y0, tau, N, parts, &c);
    assert_int_equal(aim_ode_advance(run, 3), AIM_ODE_OK);
    aim_ode_end(run);
    assert_int_equal(c.status, AIM_ODE_OK);
    assert_int_equal(c.reached, 4);
    assert_memory_equal(whole, parts, sizeof(double) * 4 * AIM_DIRECT_SIZE);
    assert_true(c.stats[0].steps < a.stats[0].steps);
    aim_direct_free(m);
}

int main(void)
{
    gsl_set_error_handler_off();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_linear_against_closed_form),
        cmocka_unit_test(test_stepwise),
        cmocka_unit_test(test_linear_raw_mean),
        cmocka_unit_test(test_he2_manifold_invariant),
        cmocka_unit_test(test_blowup_reported),
        cmocka_unit_test(test_invalid_state_reported),
        cmocka_unit_test(test_linear_solver_choice),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
