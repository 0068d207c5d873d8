#include "trajectory.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "direct.h"

static int direct_rhs(void *ctx, const double *y, double *dy)
{
    return aim_direct_rhs(ctx, y, dy);
}

static const char *direct_error(void *ctx) { return aim_direct_error(ctx); }

aim_ode_status aim_trajectory_run(const aim_config *cfg, int d,
                                  const double *tau, double *obs,
                                  aim_ode_report *report)
{
    memset(report, 0, sizeof *report);
    report->status = AIM_ODE_FAILED;
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
    for (int i = 0; i < points; i++) {
        double *row = obs + (size_t)i * AIM_OBS_COUNT;
        if (i >= report->reached) {
            for (int k = 0; k < AIM_OBS_COUNT; k++)
                row[k] = NAN;
        } else if (aim_direct_observables(model, states + (size_t)i * n, row)) {
            report->status = AIM_ODE_FAILED;
            snprintf(report->message, sizeof report->message, "observables at tau = %g: %s",
                     tau[i], aim_direct_error(model));
            break;
        }
    }
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
