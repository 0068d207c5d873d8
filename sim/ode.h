/* aim_ode: integrates an autonomous ODE model on the output grid with
 * SUNDIALS CVODE (BDF, dense direct linear solver, tolerances from the
 * configuration), with blow-up detection through CVODE's root finding. */
#ifndef AIM_ODE_H
#define AIM_ODE_H

#include "config.h"

typedef struct {
    int size;
    void *ctx;
    /* dy/dtau at y; returns 0, or non-zero with a message in *error */
    int (*rhs)(void *ctx, const double *y, double *dy);
    const char *(*error)(void *ctx);
    const char *(*state_name)(void *ctx, int i);
    /* components 0 .. monitored-1 are watched for blow-up (the order
     * parameters; a hierarchy's long words are legitimately large);
     * 0 means all */
    int monitored;
    /* optional: 0 when the state reached at a grid point is valid, else
     * non-zero with the reason in error(); the run stops there, before
     * that point, and is reported like a blow-up (e.g. a truncated moment
     * hierarchy that has left the moments of real matrices) */
    int (*check)(void *ctx, const double *y);
} aim_ode_model;

typedef enum {
    AIM_ODE_OK = 0,
    AIM_ODE_BLOWUP = 1, /* |state| reached cfg->blowup, or the state left
                           the model's valid set: model diverges */
    AIM_ODE_FAILED = -1 /* solver or right-hand side failure */
} aim_ode_status;

typedef struct {
    aim_ode_status status;
    double tau;          /* where the integration stopped */
    int reached;         /* grid points filled in states */
    int invalid;         /* stopped because model->check rejected a state */
    double start_mean;   /* untied, raw: the student mean it started from */
    char warning[512];   /* a diagnostic that does not stop the run (the
                            untied balance condition), "" if none */
    char message[768];
} aim_ode_report;

/* Integrates from y0 at tau[0] through tau[1..points-1], storing the
 * state at each grid point in states[i * size ...]. */
aim_ode_status aim_ode_integrate(const aim_config *cfg, const aim_ode_model *model,
                                 const double *y0, const double *tau, int points,
                                 double *states, aim_ode_report *report);

#endif
