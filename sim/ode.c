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
#include <sunlinsol/sunlinsol_spgmr.h>
#include <sunmatrix/sunmatrix_dense.h>

typedef struct {
    const aim_ode_model *model;
    double blowup, threshold;
    int nb, nm, nr; /* root functions: blow-up, margins, recovery crossing */
    void *mem;
    /* the last rhs call that failed: CVODE's step count then (-1: none),
     * its kind (AIM_STOP_INVALID, AIM_STOP_NONFINITE, or AIM_STOP_NONE for
     * any other reason) and what it said */
    long fail_step;
    aim_ode_stop fail_kind;
    char fail_message[512];
    char solver_message[256];
} session;

static void say(aim_ode_report *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->message, sizeof r->message, fmt, ap);
    va_end(ap);
}

static int first_nonfinite(const double *v, int n)
{
    for (int i = 0; i < n; i++)
        if (!isfinite(v[i]))
            return i;
    return -1;
}

__attribute__((format(printf, 3, 4))) static void
note_failure(session *s, aim_ode_stop kind, const char *fmt, ...)
{
    long steps = 0;
    if (s->mem && CVodeGetNumSteps(s->mem, &steps) != CV_SUCCESS)
        steps = -2; /* never matches: the failure is not attributed */
    s->fail_step = steps;
    s->fail_kind = kind;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->fail_message, sizeof s->fail_message, fmt, ap);
    va_end(ap);
}

static int rhs_adapter(sunrealtype t, N_Vector y, N_Vector ydot, void *user)
{
    (void)t;
    session *s = user;
    const aim_ode_model *m = s->model;
    const double *v = N_VGetArrayPointer(y);
    double *dv = N_VGetArrayPointer(ydot);
    /* A failure is recoverable for CVODE: a trial step can leave the
     * region of valid covariances (or overflow), and a smaller step may
     * not. What failed is kept to name the cause if CVODE gives up. */
    int bad = first_nonfinite(v, m->size);
    if (bad >= 0) {
        note_failure(s, AIM_STOP_NONFINITE, "%s = %g is not finite",
                     m->state_name(m->ctx, bad), v[bad]);
        return 1;
    }
    if (m->rhs(m->ctx, v, dv)) {
        note_failure(s, m->failure ? m->failure(m->ctx) : AIM_STOP_NONE, "%s",
                     m->error ? m->error(m->ctx) : "");
        return 1;
    }
    bad = first_nonfinite(dv, m->size);
    if (bad >= 0) {
        note_failure(s, AIM_STOP_NONFINITE, "the rate d%s/dtau = %g is not finite (overflow)",
                     m->state_name(m->ctx, bad), dv[bad]);
        return 1;
    }
    return 0;
}

static int watched(const aim_ode_model *m)
{
    return m->monitored > 0 && m->monitored < m->size ? m->monitored : m->size;
}

/* The root functions, checked by CVODE on every accepted step: |y_i|
 * reaching the blow-up level (one per watched component), the model's
 * validity margins, and |overlap| reaching the weak-recovery threshold. */
static int roots(sunrealtype t, N_Vector y, sunrealtype *g, void *user)
{
    (void)t;
    session *s = user;
    const aim_ode_model *m = s->model;
    const double *v = N_VGetArrayPointer(y);
    for (int i = 0; i < s->nb; i++)
        g[i] = s->blowup - fabs(v[i]);
    if (s->nm)
        m->margin(m->ctx, v, g + s->nb);
    if (s->nr)
        g[s->nb + s->nm] = fabs(m->overlap(m->ctx, v)) - s->threshold;
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

#if SUNDIALS_VERSION_MAJOR >= 7
/* SUNDIALS 7 reports errors through its context's handlers (it removed
 * CVodeSetErrHandlerFn); code is CVODE's flag. */
static void keep_context_message(int line, const char *function, const char *file,
                                 const char *msg, SUNErrCode code, void *user,
                                 SUNContext sunctx)
{
    (void)line;
    (void)file;
    (void)sunctx;
    keep_solver_message(code, "CVODE", function, (char *)msg, user);
}
#endif

/* CVODE's messages go to the session (into a failure's report) instead
 * of stderr: in SUNDIALS 7 through the context (its default handler, which
 * prints, replaced), in SUNDIALS 6 through the solver. */
static int catch_solver_messages(SUNContext sunctx, void *mem, session *s)
{
#if SUNDIALS_VERSION_MAJOR >= 7
    (void)mem;
    SUNErrCode e = SUNContext_ClearErrHandlers(sunctx);
    return e != SUN_SUCCESS ? e : SUNContext_PushErrHandler(sunctx, keep_context_message, s);
#else
    (void)sunctx;
    return CVodeSetErrHandlerFn(mem, keep_solver_message, s);
#endif
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

/* The noise terms' share of the rate of component i at y:
 * |noise_i| / (|gradient_i + decay_i| + |noise_i|). Above 1/2 the noise
 * terms are what drives |y_i| up (theory/stops.md sec. 3). NAN when the
 * model cannot split its rate. */
static double noise_share(const aim_ode_model *m, const double *y, int i)
{
    if (!m->terms)
        return NAN;
    double *w = malloc(sizeof(double) * 3 * (size_t)m->size);
    double share = NAN;
    if (w && m->terms(m->ctx, y, w, w + m->size, w + 2 * m->size) == 0) {
        const double noise = fabs(w[m->size + i]), driven = fabs(w[i] + w[2 * m->size + i]);
        if (noise + driven > 0.0)
            share = noise / (noise + driven);
    }
    free(w);
    return share;
}

/* Reports the root that stopped the run at tau t (state v); 1 when one
 * did, 0 when only the recovery crossing was found. */
static int root_stop(const session *s, const aim_config *cfg, const int *found,
                     const double *v, double t, aim_ode_report *report)
{
    const aim_ode_model *m = s->model;
    for (int k = 0; k < s->nm; k++)
        if (found[s->nb + k]) {
            report->stop = AIM_STOP_INVALID;
            snprintf(report->reason, sizeof report->reason, "%s fails",
                     m->margin_text(m->ctx, k));
            say(report, "the state left the valid set at tau = %.6g: %s", t, report->reason);
            return 1;
        }
    for (int i = 0; i < s->nb; i++)
        if (found[i]) {
            const char *name = m->state_name(m->ctx, i);
            const double share = noise_share(m, v, i);
            report->noise_share = share;
            report->stop = share > 0.5 ? AIM_STOP_NOISE : AIM_STOP_GRADIENT;
            if (isnan(share))
                snprintf(report->reason, sizeof report->reason, "|%s| reached %g", name,
                         cfg->blowup);
            else if (share > 0.5)
                snprintf(report->reason, sizeof report->reason,
                         "|%s| reached %g; the noise terms outgrow the gradient terms there "
                         "(%.3g %% of its rate is noise): lower training.eta",
                         name, cfg->blowup, 100.0 * share);
            else
                snprintf(report->reason, sizeof report->reason,
                         "|%s| reached %g, driven by the gradient and weight-decay terms (%.3g "
                         "%% of its rate is noise there): not a noise blow-up, a lower "
                         "training.eta does not remove it",
                         name, cfg->blowup, 100.0 * share);
            say(report, "blow-up at tau = %.6g: %s", t, report->reason);
            return 1;
        }
    return 0;
}

/* The watched component growing fastest relative to its size at v (its
 * rate against max(|v_i|, atol)), or -1 when no rate can be computed. */
static int fastest(const session *s, const aim_config *cfg, const double *v)
{
    const aim_ode_model *m = s->model;
    double *dv = malloc(sizeof(double) * (size_t)m->size), best = -1.0;
    int which = -1;
    if (dv && m->rhs(m->ctx, v, dv) == 0)
        for (int i = 0; i < s->nb; i++) {
            const double r = fabs(dv[i]) / fmax(fabs(v[i]), cfg->atol);
            if (isfinite(r) && r > best) {
                best = r;
                which = i;
            }
        }
    free(dv);
    return which;
}

/* CVODE gave up at its last accepted step tau t (state v): a noise
 * blow-up too fast to follow when the noise terms drive the fastest
 * growing order parameter there; else a stop when the rhs failed for a
 * reason of the state; else a failure. */
static void solver_failure(const session *s, const aim_config *cfg, int flag, double t,
                           const double *v, aim_ode_report *report)
{
    const aim_ode_model *m = s->model;
    const int i = fastest(s, cfg, v);
    const double share = i >= 0 ? noise_share(m, v, i) : NAN;
    if (share > 0.5) {
        report->status = AIM_ODE_BLOWUP;
        report->stop = AIM_STOP_NOISE;
        report->noise_share = share;
        snprintf(report->reason, sizeof report->reason,
                 "%s grows too fast for the integrator to follow, and the noise terms outgrow "
                 "the gradient terms there (%.3g %% of its rate is noise): lower training.eta",
                 m->state_name(m->ctx, i), 100.0 * share);
        say(report, "blow-up at tau = %.6g: %s", t, report->reason);
        return;
    }
    long steps = -1;
    const int attributed = s->fail_step >= 0 && CVodeGetNumSteps(s->mem, &steps) == CV_SUCCESS &&
                           steps == s->fail_step && s->fail_kind != AIM_STOP_NONE;
    if (attributed) {
        report->status = AIM_ODE_BLOWUP;
        report->stop = s->fail_kind;
        snprintf(report->reason, sizeof report->reason, "%s", s->fail_message);
        say(report, "%s by tau = %.6g: %s",
            s->fail_kind == AIM_STOP_INVALID ? "the state left the valid set" : "blow-up", t,
            report->reason);
        return;
    }
    char state[384], name[64];
    describe_state(state, sizeof state, m, v);
    flag_name(flag, name, sizeof name);
    say(report, "CVODE failed at tau = %.6g with %s%s%s%s%s; state: %s", t, name,
        s->solver_message[0] ? ": " : "", s->solver_message,
        s->fail_step >= 0 ? "; last failed right-hand side evaluation: " : "",
        s->fail_step >= 0 ? s->fail_message : "", state);
}

/* Dense LU up to this many equations, GMRES above (measured in
 * theory/untied.md sec. 12): the dense solver's finite-difference Jacobian
 * costs n right-hand sides and its LU n^3/3, GMRES a few right-hand sides
 * per Newton iteration. The tied hierarchies (at most 198 equations, at
 * M = 10) reuse their kernels across a Jacobian's columns and run 1.4-2.3
 * times faster dense at every order up to 10; the untied ones from M = 4
 * (235 equations) run 2.4 times (M = 4) to 9 times (M = 5) faster with
 * GMRES, the same trajectories to 1e-6. */
#define DENSE_MAX 200

/* The counters of the integration in mem into report's first entry;
 * one CVODE call that fails leaves the integration unrecorded. */
static void record_stats(void *mem, aim_ode_report *report)
{
    aim_ode_stats st = {.what = "trajectory"};
    if (CVodeGetNumSteps(mem, &st.steps) != CV_SUCCESS ||
        CVodeGetNumRhsEvals(mem, &st.rhs_evals) != CV_SUCCESS ||
        CVodeGetNumLinSolvSetups(mem, &st.linear_setups) != CV_SUCCESS ||
        CVodeGetNumJacEvals(mem, &st.jacobian_evals) != CVLS_SUCCESS ||
        CVodeGetNumLinRhsEvals(mem, &st.jacobian_rhs_evals) != CVLS_SUCCESS ||
        CVodeGetNumErrTestFails(mem, &st.error_test_failures) != CV_SUCCESS ||
        CVodeGetNumNonlinSolvIters(mem, &st.nonlinear_iterations) != CV_SUCCESS ||
        CVodeGetNumNonlinSolvConvFails(mem, &st.nonlinear_failures) != CV_SUCCESS)
        return;
    report->stats[0] = st;
    report->integrations = 1;
}

void aim_ode_stats_append(aim_ode_report *to, const aim_ode_report *from, const char *what)
{
    for (int i = 0; i < from->integrations && to->integrations < AIM_ODE_MAX_INTEGRATIONS; i++) {
        aim_ode_stats *st = &to->stats[to->integrations++];
        *st = from->stats[i];
        snprintf(st->what, sizeof st->what, "%s", what);
    }
}

int aim_ode_uses_krylov(const aim_config *cfg, int n)
{
    return cfg->solver == AIM_SOLVER_KRYLOV || (cfg->solver == AIM_SOLVER_AUTO && n > DENSE_MAX);
}

/* An integration in progress: CVODE's state between grid points. */
struct aim_ode_run {
    const aim_config *cfg;
    const double *tau;
    int points;
    double *states;
    aim_ode_report *report;
    session s;
    SUNContext sunctx;
    N_Vector y;
    SUNMatrix A;
    SUNLinearSolver LS;
    void *mem;
    int nroots;
    int *found, *direction;
    int ended; /* status final: stopped, failed, or every row reached */
};

aim_ode_run *aim_ode_begin(const aim_config *cfg, const aim_ode_model *model,
                           const double *y0, const double *tau, int points, double *states,
                           aim_ode_report *report)
{
    memset(report, 0, sizeof *report);
    report->status = AIM_ODE_FAILED;
    report->noise_share = NAN;
    report->tau_wr = report->tau_wr_se = NAN;
    aim_ode_run *r = calloc(1, sizeof *r);
    if (!r) {
        say(report, "out of memory setting up CVODE");
        return NULL;
    }
    r->cfg = cfg;
    r->tau = tau;
    r->points = points;
    r->states = states;
    r->report = report;
    r->s = (session){.model = model,
                     .blowup = cfg->blowup,
                     .threshold = cfg->recovery_threshold,
                     .nb = watched(model),
                     .nm = model->margin ? model->margins : 0,
                     .nr = model->overlap ? 1 : 0,
                     .fail_step = -1};
    session *s = &r->s;
    const int n = model->size;
    r->nroots = s->nb + s->nm + s->nr;
    double *dy0 = NULL;

#if SUNDIALS_VERSION_MAJOR >= 7
    const int created = SUNContext_Create(SUN_COMM_NULL, &r->sunctx);
#else
    const int created = SUNContext_Create(NULL, &r->sunctx);
#endif
    if (created != 0) {
        say(report, "SUNContext_Create failed");
        r->sunctx = NULL;
        goto failed;
    }
    r->y = N_VNew_Serial(n, r->sunctx);
    if (r->y && aim_ode_uses_krylov(cfg, n)) {
        /* matrix-free: CVODE's difference quotients give J v, so a large
         * system needs neither the n^2 finite differences of a dense
         * Jacobian nor its O(n^3) LU */
        r->LS = SUNLinSol_SPGMR(r->y, SUN_PREC_NONE, 0, r->sunctx);
    } else if (r->y) {
        r->A = SUNDenseMatrix(n, n, r->sunctx);
        r->LS = r->A ? SUNLinSol_Dense(r->y, r->A, r->sunctx) : NULL;
    }
    r->mem = CVodeCreate(CV_BDF, r->sunctx);
    r->found = calloc((size_t)r->nroots, sizeof *r->found);
    r->direction = calloc((size_t)r->nroots, sizeof *r->direction);
    dy0 = malloc(sizeof(double) * (size_t)n);
    if (!r->y || !r->LS || !r->mem || !r->found || !r->direction || !dy0) {
        say(report, "out of memory setting up CVODE");
        goto failed;
    }
    for (int i = 0; i < n; i++)
        if (!isfinite(y0[i]) || (i < s->nb && fabs(y0[i]) >= cfg->blowup)) {
            say(report, "the initial %s = %g is already at or beyond the blow-up level "
                        "ode.blowup = %g: raise ode.blowup or lower the initial scales",
                model->state_name(model->ctx, i), y0[i], cfg->blowup);
            goto failed;
        }
    /* a start whose rate cannot be computed is no run at all */
    const int start_failed = model->rhs(model->ctx, y0, dy0);
    const int bad_rate = start_failed ? -1 : first_nonfinite(dy0, n);
    if (start_failed || bad_rate >= 0) {
        char state[384];
        describe_state(state, sizeof state, model, y0);
        if (start_failed)
            say(report, "the right-hand side at the start: %s; state: %s",
                model->error ? model->error(model->ctx) : "", state);
        else
            say(report, "the rate d%s/dtau at the start is not finite; state: %s",
                model->state_name(model->ctx, bad_rate), state);
        goto failed;
    }
    memcpy(N_VGetArrayPointer(r->y), y0, sizeof(double) * (size_t)n);
    memcpy(states, y0, sizeof(double) * (size_t)n);
    report->reached = 1;
    report->tau = tau[0];
    if (model->overlap && fabs(model->overlap(model->ctx, y0)) >= s->threshold)
        report->tau_wr = tau[0];
    /* the blow-up level is crossed in either direction (it is only ever
     * reached from below); a margin going negative; |overlap| rising */
    for (int k = s->nb; k < r->nroots; k++)
        r->direction[k] = k < s->nb + s->nm ? -1 : 1;

    int flag;
    void *mem = r->mem;
    if ((flag = CVodeInit(mem, rhs_adapter, tau[0], r->y)) != CV_SUCCESS ||
        (flag = CVodeSetUserData(mem, s)) != CV_SUCCESS ||
        (flag = catch_solver_messages(r->sunctx, mem, s)) != CV_SUCCESS ||
        (flag = CVodeSStolerances(mem, cfg->rtol, cfg->atol)) != CV_SUCCESS ||
        (flag = CVodeSetLinearSolver(mem, r->LS, r->A)) != CV_SUCCESS ||
        (flag = CVodeSetMaxNumSteps(mem, cfg->max_steps)) != CV_SUCCESS ||
        (flag = CVodeSetStopTime(mem, tau[points - 1])) != CV_SUCCESS ||
        (flag = CVodeRootInit(mem, r->nroots, roots)) != CV_SUCCESS ||
        (flag = CVodeSetRootDirection(mem, r->direction)) != CV_SUCCESS ||
        (flag = CVodeSetNoInactiveRootWarn(mem)) != CV_SUCCESS) {
        char name[64];
        flag_name(flag, name, sizeof name);
        say(report, "CVODE set-up failed: %s %s", name, s->solver_message);
        goto failed;
    }
    s->mem = mem;
    free(dy0);
    if (points == 1) {
        report->status = AIM_ODE_OK;
        r->ended = 1;
    }
    return r;
failed:
    free(dy0);
    r->ended = 1;
    return r;
}

aim_ode_status aim_ode_advance(aim_ode_run *r, int upto)
{
    if (!r)
        return AIM_ODE_FAILED;
    aim_ode_report *report = r->report;
    if (r->ended)
        return report->status;
    const aim_ode_model *model = r->s.model;
    const int n = model->size, nroots = r->nroots;
    const double *tau = r->tau;
    if (upto > r->points - 1)
        upto = r->points - 1;
    for (int i = report->reached; i <= upto;) {
        double reached_tau = tau[i - 1];
        const int flag = CVode(r->mem, tau[i], r->y, &reached_tau, CV_NORMAL);
        const double *v = N_VGetArrayPointer(r->y);
        report->tau = reached_tau;
        if (flag == CV_ROOT_RETURN) {
            if (CVodeGetRootInfo(r->mem, r->found) != CV_SUCCESS) {
                say(report, "CVODE could not say which root it found at tau = %.6g",
                    reached_tau);
                r->ended = 1;
                return report->status;
            }
            if (r->s.nr && r->found[nroots - 1] && isnan(report->tau_wr))
                report->tau_wr = reached_tau;
            if (root_stop(&r->s, r->cfg, r->found, v, reached_tau, report)) {
                report->status = AIM_ODE_BLOWUP;
                r->ended = 1;
                return report->status;
            }
            continue; /* only the recovery crossing: on to tau[i] */
        }
        if (flag < 0) {
            sunrealtype last = reached_tau;
            if (CVodeGetCurrentTime(r->mem, &last) == CV_SUCCESS)
                report->tau = last;
            solver_failure(&r->s, r->cfg, flag, report->tau, v, report);
            r->ended = 1;
            return report->status;
        }
        const int bad = first_nonfinite(v, n);
        if (bad >= 0) {
            report->status = AIM_ODE_BLOWUP;
            report->stop = AIM_STOP_NONFINITE;
            snprintf(report->reason, sizeof report->reason, "%s = %g is not finite",
                     model->state_name(model->ctx, bad), v[bad]);
            say(report, "blow-up by tau = %.6g: %s", reached_tau, report->reason);
            r->ended = 1;
            return report->status;
        }
        memcpy(r->states + (size_t)i * n, v, sizeof(double) * (size_t)n);
        report->reached = ++i;
    }
    if (report->reached == r->points) {
        report->status = AIM_ODE_OK;
        r->ended = 1;
    }
    return AIM_ODE_OK;
}

void aim_ode_end(aim_ode_run *r)
{
    if (!r)
        return;
    if (!r->ended) /* ended by the caller before the last grid point */
        r->report->status = AIM_ODE_OK;
    if (r->s.mem)
        record_stats(r->s.mem, r->report);
    CVodeFree(&r->mem);
    if (r->LS)
        SUNLinSolFree(r->LS);
    if (r->A)
        SUNMatDestroy(r->A);
    if (r->y)
        N_VDestroy(r->y);
    if (r->sunctx)
        SUNContext_Free(&r->sunctx);
    free(r->found);
    free(r->direction);
    free(r);
}

aim_ode_status aim_ode_integrate(const aim_config *cfg, const aim_ode_model *model,
                                 const double *y0, const double *tau, int points,
                                 double *states, aim_ode_report *report)
{
    aim_ode_run *r = aim_ode_begin(cfg, model, y0, tau, points, states, report);
    aim_ode_advance(r, points - 1);
    aim_ode_end(r);
    return report->status;
}

size_t aim_ode_report_size(void) { return sizeof(aim_ode_report); }
