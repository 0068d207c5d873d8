#include "ode.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cvode/cvode.h>
#include <nvector/nvector_serial.h>
#include <sundials/sundials_context.h>
#include <sunlinsol/sunlinsol_dense.h>
#include <sunmatrix/sunmatrix_dense.h>

typedef struct {
    const aim_ode_model *model;
    double blowup;
    char solver_message[256];
} session;

static void say(aim_ode_report *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->message, sizeof r->message, fmt, ap);
    va_end(ap);
}

static int rhs_adapter(sunrealtype t, N_Vector y, N_Vector ydot, void *user)
{
    (void)t;
    session *s = user;
    /* A failure is recoverable for CVODE: a trial step can leave the
     * region of valid covariances, and a smaller step may not. */
    if (s->model->rhs(s->model->ctx, N_VGetArrayPointer(y),
                      N_VGetArrayPointer(ydot)))
        return 1;
    return 0;
}

static int watched(const aim_ode_model *m)
{
    return m->monitored > 0 && m->monitored < m->size ? m->monitored : m->size;
}

/* One root per watched component: |y_i| reaching the blow-up level. */
static int blowup_roots(sunrealtype t, N_Vector y, sunrealtype *g, void *user)
{
    (void)t;
    session *s = user;
    const double *v = N_VGetArrayPointer(y);
    for (int i = 0; i < watched(s->model); i++)
        g[i] = s->blowup - fabs(v[i]);
    return 0;
}

/* Keeps CVODE's own diagnostic for the report instead of printing it. */
static void keep_solver_message(int code, const char *module,
                                const char *function, char *msg, void *user)
{
    session *s = user;
    snprintf(s->solver_message, sizeof s->solver_message, "%s (%s, code %d): %s",
             function, module, code, msg);
}

/* CVodeGetReturnFlagName returns a string the caller must free. */
static void flag_name(int flag, char *buf, size_t n)
{
    char *name = CVodeGetReturnFlagName(flag);
    snprintf(buf, n, "%s", name ? name : "unknown flag");
    free(name);
}

static void describe_state(char *buf, size_t n, const aim_ode_model *model,
                           const double *y)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < model->size && used < n; i++)
        used += (size_t)snprintf(buf + used, n - used, "%s%s = %.6g",
                                 i ? ", " : "", model->state_name(model->ctx, i), y[i]);
}

aim_ode_status aim_ode_integrate(const aim_config *cfg, const aim_ode_model *model,
                                 const double *y0, const double *tau, int points,
                                 double *states, aim_ode_report *report)
{
    memset(report, 0, sizeof *report);
    report->status = AIM_ODE_FAILED;
    const int n = model->size;
    session s = {.model = model, .blowup = cfg->blowup};
    SUNContext sunctx = NULL;
    N_Vector y = NULL;
    SUNMatrix A = NULL;
    SUNLinearSolver LS = NULL;
    void *mem = NULL;

    if (SUNContext_Create(NULL, &sunctx) != 0) {
        say(report, "SUNContext_Create failed");
        return report->status;
    }
    y = N_VNew_Serial(n, sunctx);
    A = SUNDenseMatrix(n, n, sunctx);
    LS = A && y ? SUNLinSol_Dense(y, A, sunctx) : NULL;
    mem = CVodeCreate(CV_BDF, sunctx);
    if (!y || !A || !LS || !mem) {
        say(report, "out of memory setting up CVODE");
        goto done;
    }
    for (int i = 0; i < n; i++)
        if (!isfinite(y0[i]) || (i < watched(model) && fabs(y0[i]) >= cfg->blowup)) {
            say(report, "the initial %s = %g is already at or beyond the blow-up level "
                        "ode.blowup = %g: raise ode.blowup or lower the initial scales",
                model->state_name(model->ctx, i), y0[i], cfg->blowup);
            goto done;
        }
    memcpy(N_VGetArrayPointer(y), y0, sizeof(double) * (size_t)n);
    memcpy(states, y0, sizeof(double) * (size_t)n);
    report->reached = 1;
    report->tau = tau[0];

    int flag;
    if ((flag = CVodeInit(mem, rhs_adapter, tau[0], y)) != CV_SUCCESS ||
        (flag = CVodeSetUserData(mem, &s)) != CV_SUCCESS ||
        (flag = CVodeSetErrHandlerFn(mem, keep_solver_message, &s)) != CV_SUCCESS ||
        (flag = CVodeSStolerances(mem, cfg->rtol, cfg->atol)) != CV_SUCCESS ||
        (flag = CVodeSetLinearSolver(mem, LS, A)) != CV_SUCCESS ||
        (flag = CVodeSetMaxNumSteps(mem, 1000000)) != CV_SUCCESS ||
        (flag = CVodeSetStopTime(mem, tau[points - 1])) != CV_SUCCESS ||
        (flag = CVodeRootInit(mem, watched(model), blowup_roots)) != CV_SUCCESS) {
        char name[64];
        flag_name(flag, name, sizeof name);
        say(report, "CVODE set-up failed: %s %s", name, s.solver_message);
        goto done;
    }

    for (int i = 1; i < points; i++) {
        double reached_tau = tau[i - 1];
        flag = CVode(mem, tau[i], y, &reached_tau, CV_NORMAL);
        const double *v = N_VGetArrayPointer(y);
        report->tau = reached_tau;
        if (flag == CV_ROOT_RETURN) {
            int *roots = calloc((size_t)n, sizeof *roots);
            int which = 0;
            if (roots && CVodeGetRootInfo(mem, roots) == CV_SUCCESS)
                for (int k = 0; k < watched(model); k++)
                    if (roots[k]) {
                        which = k;
                        break;
                    }
            free(roots);
            report->status = AIM_ODE_BLOWUP;
            say(report,
                "blow-up: |%s| reached %g at tau = %.6g (the noise terms "
                "outgrow the gradient terms at this learning rate; lower "
                "training.eta)",
                model->state_name(model->ctx, which), cfg->blowup, reached_tau);
            goto done;
        }
        if (flag < 0) {
            char state[384];
            describe_state(state, sizeof state, model, v);
            const char *why = model->error ? model->error(model->ctx) : "";
            char name[64];
            flag_name(flag, name, sizeof name);
            say(report, "CVODE failed at tau = %.6g with %s%s%s%s%s; state: %s",
                reached_tau, name,
                s.solver_message[0] ? ": " : "", s.solver_message,
                why && why[0] ? "; last right-hand side evaluation: " : "", why ? why : "",
                state);
            goto done;
        }
        if (model->check && model->check(model->ctx, v)) {
            report->status = AIM_ODE_BLOWUP;
            report->invalid = 1;
            say(report, "the state left the model's valid set by tau = %.6g: %s",
                reached_tau, model->error ? model->error(model->ctx) : "");
            goto done;
        }
        memcpy(states + (size_t)i * n, v, sizeof(double) * (size_t)n);
        report->reached = i + 1;
    }
    report->status = AIM_ODE_OK;
done:
    CVodeFree(&mem);
    if (LS)
        SUNLinSolFree(LS);
    if (A)
        SUNMatDestroy(A);
    if (y)
        N_VDestroy(y);
    SUNContext_Free(&sunctx);
    return report->status;
}
