/* The lowest part of aim_trajectory (trajectory.h, trajectory_internal.h):
 * one model integrated on the grid (CVODE on an aim_model, its
 * observables and tracked moments, a grid point at a time), the notes of
 * runs in progress, the start drift, and the crossing time of a measured
 * curve. It calls no other trajectory file. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "gauss.h"
#include "model.h"
#include "omp_directive.h"
#include "trajectory_internal.h" /* and trajectory.h, part of which is here */

static void note_stderr(void *ctx, const char *text)
{
    (void)ctx;
    fprintf(stderr, "aimdyn: %s\n", text);
}

static void (*note_sink)(void *, const char *) = note_stderr;
static void *note_ctx;

void aim_trajectory_set_notes(void (*note)(void *ctx, const char *text), void *ctx)
{
    note_sink = note;
    note_ctx = ctx;
}

__attribute__((format(printf, 1, 2))) void aim_trajectory_i_note(const char *fmt, ...)
{
    if (!note_sink)
        return;
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    /* the replicas note from the engine's threads: one line at a time, and
     * not inside a progress report */
    OMP(omp critical(aim_trajectory_report))
    note_sink(note_ctx, text);
}

static const aim_trajectory_progress_ops *progress_ops;
static void *progress_ctx;

void aim_trajectory_set_progress(const aim_trajectory_progress_ops *ops, void *ctx)
{
    progress_ops = ops;
    progress_ctx = ctx;
}

void *aim_trajectory_i_stage_begin(const char *label, const char *unit, int tasks, int threads,
                                   double work_per_task, const char *work_unit)
{
    return progress_ops ? progress_ops->begin(progress_ctx, label, unit, tasks, threads,
                                              work_per_task, work_unit)
                        : NULL;
}

/* the calling thread's number in the engine's team (0 outside one) */
static int thread_number(void)
{
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

void aim_trajectory_i_stage_update(void *stage, int task, int done, int total, double work)
{
    if (!stage)
        return;
    const int thread = thread_number();
    OMP(omp critical(aim_trajectory_report))
    progress_ops->update(stage, thread, task, done, total, work);
}

void aim_trajectory_i_stage_finished(void *stage, int task)
{
    if (!stage)
        return;
    const int thread = thread_number();
    OMP(omp critical(aim_trajectory_report))
    progress_ops->finished(stage, thread, task);
}

void aim_trajectory_i_stage_end(void *stage)
{
    if (stage)
        progress_ops->end(stage);
}

void *aim_trajectory_i_ode_stage(const aim_config *cfg)
{
    const aim_model_ops *ops = aim_model_ops_of(cfg);
    char label[64];
    if (ops->hierarchy)
        snprintf(label, sizeof label, "order-%d hierarchy", cfg->order);
    else
        snprintf(label, sizeof label, "%s ODE", ops->name);
    return aim_trajectory_i_stage_begin(label, "run", 1, 1, cfg->points - 1, "grid points");
}

/* aim_ode_model's operations on an aim_model (the ODE layer knows no
 * decomposition). */
static int model_rhs(void *ctx, const double *y, double *dy) { return aim_model_rhs(ctx, y, dy); }

static const char *model_error(void *ctx) { return aim_model_error(ctx); }

static const char *model_state_name(void *ctx, int i) { return aim_model_state_name(ctx, i); }

static void model_margins(void *ctx, const double *y, double *g) { aim_model_margins(ctx, y, g); }

static const char *model_margin_text(void *ctx, int k) { return aim_model_margin_text(ctx, k); }

static aim_ode_stop model_failure(void *ctx)
{
    switch (aim_model_failure_of(ctx)) {
    case AIM_MODEL_FAILURE_INVALID:
        return AIM_STOP_INVALID;
    case AIM_MODEL_FAILURE_DIVERGED:
        return AIM_STOP_DIVERGED;
    default:
        return AIM_STOP_NONE;
    }
}

static double model_overlap(void *ctx, const double *y) { return aim_model_overlap(ctx, y); }

static int model_terms(void *ctx, const double *y, double *gradient, double *noise,
                       double *decay)
{
    return aim_model_terms(ctx, y, gradient, noise, decay);
}

static int model_fast_rate(void *ctx, const double *y, double *dy)
{
    return aim_model_fast_rate(ctx, y[0], dy);
}

static const char *model_fast_name(void *ctx, int i)
{
    (void)i;
    return aim_model_fast_name(ctx);
}

/* The closing words of a hierarchy's stop: which truncation, and why
 * lowering eta is not the cure. */
static void hierarchy_stop(const aim_config *cfg, aim_ode_report *report)
{
    if (report->stop == AIM_STOP_INVALID)
        snprintf(report->message, sizeof report->message,
                 "the order-%d hierarchy left the valid moments at tau = %.6g: %s; the "
                 "closure error has grown too large (raise hierarchy.order, or shorten "
                 "training.horizon)",
                 cfg->order, report->tau, report->reason);
    else if (report->stop == AIM_STOP_SOLVER)
        snprintf(report->message, sizeof report->message,
                 "the order-%d hierarchy stopped at tau = %.6g, where CVODE gave up: its "
                 "state has neared moments that no real matrices have, where the closure "
                 "error is large (raise hierarchy.order, or shorten training.horizon; raise "
                 "ode.max_steps if CVODE only ran out of steps): %.450s",
                 cfg->order, report->tau, report->reason);
    else if (report->stop == AIM_STOP_GRADIENT)
        snprintf(report->message, sizeof report->message,
                 "the order-%d hierarchy stopped at tau = %.6g: %s; the truncation's "
                 "closure error (raise hierarchy.order, or shorten training.horizon), or a "
                 "level the dynamics reaches (raise ode.blowup)",
                 cfg->order, report->tau, report->reason);
}

/* cfg's model at its start (exact, or start); the dimension of a raw
 * mean's equation is ode.d, else d. *y0 is malloc'ed. NULL with the
 * reason in err. */
static aim_model *model_at_start(const aim_config *cfg, int d, const aim_measured_start *start,
                                 double **y0, char *err, size_t n)
{
    *y0 = NULL;
    aim_model *m = aim_model_create(cfg, cfg->ode_d > 0 ? cfg->ode_d : (double)d, err, n);
    if (!m)
        return NULL;
    aim_measured_start at = start ? *start : (aim_measured_start){0};
    at.d = d; /* a seed's moments are measured at the dimension of the run */
    if (!(*y0 = malloc(sizeof **y0 * (size_t)aim_model_size(m)))) {
        snprintf(err, n, "out of memory");
    } else if (!aim_model_initial(m, start ? &at : NULL, *y0, err, n)) {
        return m;
    }
    free(*y0);
    *y0 = NULL;
    aim_model_free(m);
    return NULL;
}

/* A central difference of the overlap along the right-hand side (the
 * overlap is a smooth function of the state; the step keeps the state
 * change at 1e-6 of its size, so the O(h^2) error is far below the
 * tolerance of the drift test). */
int aim_trajectory_start_drift(const aim_config *cfg, int d, double obs0[AIM_OBS_COUNT],
                               double *drift, char *err, size_t n)
{
    double *y0;
    aim_model *m = model_at_start(cfg, d, NULL, &y0, err, n);
    if (!m)
        return -1;
    const int size = aim_model_size(m);
    double *dy = malloc(sizeof(double) * 2 * (size_t)size);
    int rc = dy ? 0 : -1;
    if (rc)
        snprintf(err, n, "out of memory");
    double norm_y = 0.0, norm_dy = 0.0, plus[AIM_OBS_COUNT], minus[AIM_OBS_COUNT];
    if (!rc && (aim_model_observables(m, y0, obs0) || aim_model_rhs(m, y0, dy)))
        rc = 1;
    for (int i = 0; !rc && i < size; i++) {
        norm_y += y0[i] * y0[i];
        norm_dy += dy[i] * dy[i];
    }
    const double h = norm_dy > 0.0 ? 1e-6 * sqrt(norm_y / norm_dy) : 0.0;
    for (int s = 0; !rc && s < 2; s++) {
        double *y = dy + size;
        for (int i = 0; i < size; i++)
            y[i] = y0[i] + (s ? -h : h) * dy[i];
        rc = aim_model_observables(m, y, s ? minus : plus) ? 1 : 0;
    }
    if (rc > 0)
        snprintf(err, n, "the right-hand side at the start: %s", aim_model_error(m));
    else if (rc == 0)
        *drift = h > 0.0 ? (plus[AIM_OBS_OVERLAP] - minus[AIM_OBS_OVERLAP]) / (2.0 * h) : 0.0;
    free(dy);
    free(y0);
    aim_model_free(m);
    return rc ? -1 : 0;
}

/* Observables at every grid point the integration reached, NaN beyond.
 * A row whose observables cannot be computed ends the run there, as a
 * stop (the rows before it are kept), or fails the run at the start. With
 * a fast variable the observables are one composite of both clocks, and
 * any failure fails the run. Returns 0, or -1 when the run failed. */
static int fill_observables(aim_model *m, int points, const double *tau, const double *states,
                            const double *fast, double *obs, aim_ode_report *report)
{
    int row = 0;
    if (aim_model_path_observables(m, states, fast, report->reached, obs, &row)) {
        snprintf(report->message, sizeof report->message, "observables at tau = %g: %s",
                 tau[row], aim_model_error(m));
        if (fast || row == 0) {
            report->status = AIM_ODE_FAILED;
            return -1;
        }
        snprintf(report->reason, sizeof report->reason, "the observables: %s",
                 aim_model_error(m));
        report->status = AIM_ODE_BLOWUP;
        report->stop = AIM_STOP_NONFINITE;
        report->reached = row;
        report->tau = tau[row];
    }
    for (int i = report->reached; i < points; i++)
        for (int k = 0; k < AIM_OBS_COUNT; k++)
            obs[(size_t)i * AIM_OBS_COUNT + k] = NAN;
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
    free(m->obs_se);
    free(m->trunc);
    free(m->fold_sign);
    memset(m, 0, sizeof *m);
}

/* The model's tracked moments at every grid point reached (NaN beyond). */
static int keep_moments(const aim_model *m, int points, const double *states,
                        const double *obs, aim_trajectory_moments *moments,
                        aim_ode_report *report)
{
    const int n = aim_model_size(m), count = aim_model_tracked_count(m);
    memset(moments, 0, sizeof *moments);
    moments->names = calloc((size_t)count, sizeof *moments->names);
    moments->values = malloc(sizeof(double) * (size_t)points * count);
    int ok = moments->names && moments->values;
    moments->count = count;
    for (int k = 0; ok && k < count; k++)
        ok = (moments->names[k] = strdup(aim_model_tracked_name(m, k))) != NULL;
    if (!ok) {
        aim_trajectory_moments_free(moments);
        report->status = AIM_ODE_FAILED;
        snprintf(report->message, sizeof report->message, "out of memory");
        return -1;
    }
    for (int i = 0; i < points; i++) {
        double *row = moments->values + (size_t)i * count;
        if (i < report->reached)
            aim_model_tracked(m, states + (size_t)i * n, obs + (size_t)i * AIM_OBS_COUNT, row);
        else
            for (int k = 0; k < count; k++)
                row[k] = NAN;
    }
    return 0;
}

/* A model's fast variable on t = d tau with the slow state frozen at the
 * start, at every grid point (theory/untied.md sec. 3), its integration's
 * report into report. fast: points. 0, or -1 when it failed. */
static int integrate_fast(const aim_config *cfg, aim_model *m, double d, const double *tau,
                          double *fast, aim_ode_report *report)
{
    const int points = cfg->points;
    double *t = malloc(sizeof(double) * (size_t)points);
    if (!t) {
        *report = (aim_ode_report){.status = AIM_ODE_FAILED};
        snprintf(report->message, sizeof report->message, "out of memory");
        return -1;
    }
    for (int i = 0; i < points; i++)
        t[i] = d * tau[i];
    const aim_ode_model fm = {.size = 1,
                              .ctx = m,
                              .rhs = model_fast_rate,
                              .error = model_error,
                              .state_name = model_fast_name};
    const double x0 = aim_model_fast_start(m);
    const int rc =
        aim_ode_integrate(cfg, &fm, &x0, t, points, fast, report) == AIM_ODE_OK ? 0 : -1;
    free(t);
    return rc;
}

/* The engine's point count and, when estimate, its kernel error
 * estimate into the report (an out-of-memory failure leaves NAN). */
static void engine_accuracy(aim_gauss *g, int estimate, aim_ode_report *report)
{
    report->kernel_points = aim_gauss_points(g);
    report->kernel_error = NAN;
    if (estimate && aim_gauss_kernel_error(g, &report->kernel_error))
        report->kernel_error = NAN;
}

/* cfg's model (exact start, or start) set up on tau, its start checked
 * (row 0) and its fast variable, if any, integrated: 0, or -1 with
 * report's status AIM_ODE_FAILED and message set
 * (aim_trajectory_i_model_run_end still to be called). */
int aim_trajectory_i_model_run_begin(aim_trajectory_model_run *r, const aim_config *cfg, int d,
                                     const double *tau, const aim_measured_start *start,
                                     aim_ode_report *report)
{
    memset(r, 0, sizeof *r);
    /* a failure before the integration: no counters, a failed status */
    *report = (aim_ode_report){.status = AIM_ODE_FAILED};
    const int points = cfg->points;
    char err[sizeof report->message];
    r->m = model_at_start(cfg, d, start, &r->y0, err, sizeof err);
    if (!r->m) {
        snprintf(report->message, sizeof report->message, "%s", err);
        return -1;
    }
    aim_model *m = r->m;
    const int n = aim_model_size(m);
    const int has_fast = !isnan(aim_model_fast_start(m));
    r->states = malloc(sizeof(double) * (size_t)points * n);
    r->fast = has_fast ? malloc(sizeof(double) * (size_t)points) : NULL;
    if (!r->states || (has_fast && !r->fast)) {
        snprintf(report->message, sizeof report->message, "out of memory");
        return -1;
    }
    r->om = (aim_ode_model){.size = n,
                            .ctx = m,
                            .rhs = model_rhs,
                            .error = model_error,
                            .state_name = model_state_name,
                            .monitored = aim_model_monitored(m),
                            .margins = aim_model_margin_count(m),
                            .margin = model_margins,
                            .margin_text = model_margin_text,
                            .failure = model_failure,
                            .overlap = model_overlap,
                            .terms = aim_model_has_terms(m) ? model_terms : NULL};
    r->ode = aim_ode_begin(cfg, &r->om, r->y0, tau, points, r->states, report);
    if (!r->ode || report->reached == 0)
        return -1;
    /* the fast path is independent of the slow one (its slow state is
     * frozen at the start), so it is at hand for every row's observables */
    if (has_fast)
        r->fast_failed = integrate_fast(cfg, m, cfg->ode_d > 0 ? cfg->ode_d : (double)d, tau,
                                        r->fast, &r->fast_report);
    return 0;
}

/* Observables of row i of a run in progress into obs (the row's
 * AIM_OBS_COUNT), the same numbers aim_trajectory_i_model_run_end writes
 * there; scratch: points x AIM_OBS_COUNT (a fast path's rows depend on its
 * start). 0, or -1 when they cannot be had. */
int aim_trajectory_i_model_run_row(aim_trajectory_model_run *r, int i, double *scratch, double *obs)
{
    int row = 0;
    const int n = aim_model_size(r->m);
    if (!r->fast)
        return aim_model_path_observables(r->m, r->states + (size_t)i * n, NULL, 1, obs, &row);
    if (r->fast_failed || aim_model_path_observables(r->m, r->states, r->fast, i + 1, scratch, &row))
        return -1;
    memcpy(obs, scratch + (size_t)i * AIM_OBS_COUNT, sizeof(double) * AIM_OBS_COUNT);
    return 0;
}

/* Ends a run where it is: observables per grid point into obs, its
 * tracked moments into moments (may be NULL); estimate: the engine's
 * kernel error wanted in the report (not for the truncation estimate's
 * lower orders). Frees the run. */
aim_ode_status aim_trajectory_i_model_run_end(aim_trajectory_model_run *r, const aim_config *cfg,
                                              const double *tau, double *obs,
                                              aim_trajectory_moments *moments, int estimate,
                                              aim_trajectory_role role, aim_ode_report *report)
{
    const int points = cfg->points;
    aim_model *m = r->m;
    if (!r->ode)
        goto done;
    aim_ode_end(r->ode);
    /* counters are recorded once CVODE is set up: a failure with them
     * and a row is CVODE's own, after the start */
    if (report->status == AIM_ODE_FAILED && report->integrations > 0 && report->reached > 0 &&
        (role == AIM_TRAJECTORY_COMPANION || aim_model_is_hierarchy(m))) {
        report->status = AIM_ODE_BLOWUP;
        if (role == AIM_TRAJECTORY_RUN) {
            report->stop = AIM_STOP_SOLVER;
            snprintf(report->reason, sizeof report->reason, "%.*s",
                     (int)sizeof report->reason - 1, report->message);
        }
    }
    engine_accuracy(aim_model_engine(m), estimate, report);
    if (!isnan(aim_model_start_mean(m)))
        report->start_mean = aim_model_start_mean(m);
    snprintf(report->warning, sizeof report->warning, "%s", aim_model_warning(m));
    if (report->stop == AIM_STOP_DIVERGED)
        snprintf(report->message, sizeof report->message, "blow-up of the %s by tau = %.6g: %s",
                 aim_model_divergence(m), report->tau, report->reason);
    /* A truncated hierarchy can leave the moments of real matrices (its
     * closure error grows with time): the rest is not a prediction. */
    if (aim_model_is_hierarchy(m))
        hierarchy_stop(cfg, report);
    if (r->fast) {
        aim_ode_stats_append(report, &r->fast_report, "fast phase");
        if (r->fast_failed) {
            snprintf(report->message, sizeof report->message, "fast phase of the %s: %.700s",
                     aim_model_fast_name(m), r->fast_report.message);
            report->status = AIM_ODE_FAILED;
            goto done;
        }
    }
    if (fill_observables(m, points, tau, r->states, r->fast, obs, report))
        goto done;
    if (moments && aim_model_tracked_count(m) > 0)
        keep_moments(m, points, r->states, obs, moments, report);
done:
    free(r->states);
    free(r->fast);
    free(r->y0);
    aim_model_free(m);
    return report->status;
}

void aim_trajectory_i_report_clear(aim_ode_report *report, aim_trajectory_moments *moments)
{
    memset(report, 0, sizeof *report);
    report->status = AIM_ODE_FAILED;
    report->tau_wr = report->tau_wr_se = report->noise_share = report->kernel_error = NAN;
    if (moments)
        memset(moments, 0, sizeof *moments);
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

void aim_trajectory_recovery_error(int points, const double *tau, const double *overlap,
                                   size_t stride, double threshold, double *spacing,
                                   double *curvature)
{
    *spacing = *curvature = NAN;
    if (points > 0 && fabs(overlap[0]) >= threshold) {
        *spacing = *curvature = 0.0; /* the start itself: nothing interpolated */
        return;
    }
    for (int i = 1; i < points; i++) {
        const double v = fabs(overlap[(size_t)i * stride]);
        if (isnan(v))
            return;
        if (v < threshold)
            continue;
        const double u = fabs(overlap[(size_t)(i - 1) * stride]);
        *spacing = tau[i] - tau[i - 1];
        /* |f''| from the second difference over the points around the
         * interval, |f'| from its first difference (theory/stops.md
         * sec. 5): error ~ h^2 |f''| / (8 |f'|) */
        const int k = i + 1 < points ? i : i - 1;
        if (k >= 1 && k + 1 < points && k - 1 >= 0) {
            const double h0 = tau[k] - tau[k - 1], h1 = tau[k + 1] - tau[k];
            const double f0 = fabs(overlap[(size_t)(k - 1) * stride]);
            const double f1 = fabs(overlap[(size_t)k * stride]);
            const double f2 = fabs(overlap[(size_t)(k + 1) * stride]);
            const double second = 2.0 * ((f2 - f1) / h1 - (f1 - f0) / h0) / (h0 + h1);
            const double slope = (v - u) / *spacing;
            if (isfinite(second) && slope > 0.0)
                *curvature = *spacing * *spacing * fabs(second) / (8.0 * slope);
        }
        return;
    }
}
