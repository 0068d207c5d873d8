#include "trajectory.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "direct.h"
#include "tied.h"

static int direct_rhs(void *ctx, const double *y, double *dy)
{
    return aim_direct_rhs(ctx, y, dy);
}

static const char *direct_error(void *ctx) { return aim_direct_error(ctx); }

static int tied_rhs(void *ctx, const double *y, double *dy)
{
    return aim_tied_rhs(ctx, y, dy);
}

static const char *tied_error(void *ctx) { return aim_tied_error(ctx); }

static int tied_check(void *ctx, const double *y) { return aim_tied_check(ctx, y); }

static int direct_observables(void *ctx, const double *y, double *obs)
{
    return aim_direct_observables(ctx, y, obs);
}

static int tied_observables(void *ctx, const double *y, double *obs)
{
    return aim_tied_observables(ctx, y, obs);
}

/* Observables at every grid point the integration reached, NaN beyond.
 * Returns 0, or -1 with the report turned into a failure. */
static int fill_observables(int points, const double *tau, const double *states, int n,
                            double *obs, aim_ode_report *report, void *model,
                            int (*observe)(void *, const double *, double *),
                            const char *(*error)(void *))
{
    for (int i = 0; i < points; i++) {
        double *row = obs + (size_t)i * AIM_OBS_COUNT;
        if (i >= report->reached) {
            for (int k = 0; k < AIM_OBS_COUNT; k++)
                row[k] = NAN;
        } else if (observe(model, states + (size_t)i * n, row)) {
            report->status = AIM_ODE_FAILED;
            snprintf(report->message, sizeof report->message, "observables at tau = %g: %s",
                     tau[i], error(model));
            return -1;
        }
    }
    return 0;
}

void aim_trajectory_moments_free(aim_trajectory_moments *m)
{
    if (!m)
        return;
    if (m->names)
        for (int i = 0; i < m->count; i++)
            free(m->names[i]);
    free(m->names);
    free(m->values);
    memset(m, 0, sizeof *m);
}

static aim_ode_status run_tied(const aim_config *cfg, const double *tau,
                               const double *start, double *obs,
                               aim_trajectory_moments *moments,
                               aim_ode_report *report)
{
    const int points = cfg->points;
    char err[256];
    aim_tied *model = aim_tied_create(cfg, cfg->rule, err, sizeof err);
    if (!model) {
        snprintf(report->message, sizeof report->message,
                 "could not set up the tied hierarchy: %s", err);
        return report->status;
    }
    const int n = aim_tied_size(model);
    double *states = malloc(sizeof(double) * (size_t)points * n);
    double *y0 = malloc(sizeof(double) * (size_t)n);
    if (!states || !y0) {
        snprintf(report->message, sizeof report->message, "out of memory");
        goto done;
    }
    if (start)
        aim_tied_set_start(model, start);
    aim_tied_initial(model, y0);
    if (aim_tied_check(model, y0)) {
        snprintf(report->message, sizeof report->message,
                 "the start moments are not those of a positive semi-definite S and a "
                 "symmetric S*: %s", aim_tied_error(model));
        goto done;
    }
    const aim_ode_model om = {.size = n,
                              .ctx = model,
                              .rhs = tied_rhs,
                              .error = tied_error,
                              .state_name = aim_tied_state_name,
                              .monitored = aim_tied_order_parameters(model),
                              .check = tied_check};
    aim_ode_integrate(cfg, &om, y0, tau, points, states, report);
    /* A truncated hierarchy can leave the moments of real matrices (its
     * closure error grows with time): stopped by the check at a grid
     * point, or by a right-hand side that met such moments between two.
     * The rest is not a prediction. */
    if (report->invalid || (report->status == AIM_ODE_FAILED && aim_tied_left_valid(model))) {
        snprintf(report->message, sizeof report->message,
                 "the order-%d hierarchy left the valid moments by tau = %.6g: %s; the "
                 "closure error has grown too large (raise hierarchy.order, or shorten "
                 "training.horizon)",
                 cfg->order, report->tau, aim_tied_error(model));
        report->status = AIM_ODE_BLOWUP;
    }
    if (fill_observables(points, tau, states, n, obs, report, model, tied_observables,
                         tied_error))
        goto done;
    if (moments) {
        memset(moments, 0, sizeof *moments);
        moments->names = calloc((size_t)n, sizeof *moments->names);
        moments->values = malloc(sizeof(double) * (size_t)points * n);
        if (!moments->names || !moments->values) {
            aim_trajectory_moments_free(moments);
            report->status = AIM_ODE_FAILED;
            snprintf(report->message, sizeof report->message, "out of memory");
            goto done;
        }
        moments->count = n;
        for (int k = 0; k < n; k++)
            if (!(moments->names[k] = strdup(aim_tied_state_name(model, k)))) {
                aim_trajectory_moments_free(moments);
                report->status = AIM_ODE_FAILED;
                snprintf(report->message, sizeof report->message, "out of memory");
                goto done;
            }
        for (int i = 0; i < points; i++)
            for (int k = 0; k < n; k++)
                moments->values[(size_t)i * n + k] =
                    i < report->reached ? states[(size_t)i * n + k] : NAN;
    }
done:
    free(states);
    free(y0);
    aim_tied_free(model);
    return report->status;
}

aim_ode_status aim_trajectory_run(const aim_config *cfg, int d,
                                  const double *tau, double *obs,
                                  aim_ode_report *report)
{
    return aim_trajectory_run_full(cfg, d, tau, NULL, obs, NULL, report);
}

aim_ode_status aim_trajectory_run_full(const aim_config *cfg, int d,
                                       const double *tau, const double *start,
                                       double *obs, aim_trajectory_moments *moments,
                                       aim_ode_report *report)
{
    memset(report, 0, sizeof *report);
    report->status = AIM_ODE_FAILED;
    if (moments)
        memset(moments, 0, sizeof *moments);
    if (cfg->decomposition == AIM_TIED)
        return run_tied(cfg, tau, start, obs, moments, report);
    /* the raw-mode mean equation needs d; the centred limit does not */
    const double d_model =
        cfg->centring == AIM_RAW ? (cfg->ode_d > 0 ? cfg->ode_d : (double)d) : 0.0;
    const int n = AIM_DIRECT_SIZE, points = cfg->points;
    aim_direct *model = aim_direct_create(cfg, d_model, cfg->rule);
    double *states = malloc(sizeof(double) * (size_t)points * n);
    if (!model || !states) {
        snprintf(report->message, sizeof report->message,
                 "could not set up the direct model: out of memory, or the "
                 "quasi-random point set could not be whitened (raise ode.qmc_points)");
        goto done;
    }
    double y0[AIM_DIRECT_SIZE];
    aim_direct_initial(model, y0);
    const aim_ode_model om = {.size = n,
                              .ctx = model,
                              .rhs = direct_rhs,
                              .error = direct_error,
                              .state_name = aim_direct_state_name};
    aim_ode_integrate(cfg, &om, y0, tau, points, states, report);
    fill_observables(points, tau, states, n, obs, report, model, direct_observables,
                     direct_error);
done:
    free(states);
    aim_direct_free(model);
    return report->status;
}

double aim_trajectory_recovery_time(int points, const double *tau,
                                    const double *overlap, size_t stride,
                                    double threshold)
{
    for (int i = 0; i < points; i++) {
        const double v = fabs(overlap[(size_t)i * stride]);
        if (isnan(v))
            return NAN;
        if (v >= threshold) {
            if (i == 0)
                return tau[0];
            const double u = fabs(overlap[(size_t)(i - 1) * stride]);
            return tau[i - 1] + (threshold - u) / (v - u) * (tau[i] - tau[i - 1]);
        }
    }
    return NAN;
}
