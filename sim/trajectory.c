#include "trajectory.h"
#include "config_check.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fold.h"
#include "gauss.h"
#include "mconv.h"
#include "mlimit.h"
#include "model.h"
#include "omp_directive.h"

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

__attribute__((format(printf, 1, 2))) static void note(const char *fmt, ...)
{
    if (!note_sink)
        return;
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    note_sink(note_ctx, text);
}

static double wall_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* A long integration's progress: a note at most every AIM_NOTE_SECONDS
 * (none for a run that ends sooner). */
typedef struct {
    double start, last;
} progress_clock;

static progress_clock progress_start(void)
{
    const double now = wall_seconds();
    return (progress_clock){now, now};
}

static void progress_row(progress_clock *c, const aim_config *cfg, const double *tau, int i)
{
    const double now = wall_seconds();
    if (now - c->last < AIM_NOTE_SECONDS)
        return;
    c->last = now;
    note("order-%d hierarchy: tau = %.4g of %.4g (grid point %d of %d), %.0f s", cfg->order,
         tau[i], tau[cfg->points - 1], i + 1, cfg->points, now - c->start);
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

/* Who a run_model is for: the run itself, or a lower order of its
 * truncation error estimate. CVODE giving up after the start of a
 * hierarchy keeps the rows it wrote before, as a stopped run: for a
 * companion the estimate ends there, not the run it qualifies
 * (theory/matrix.md sec. 6); the run itself stops there
 * (AIM_STOP_SOLVER), or hands over. */
typedef enum { MODEL_RUN, MODEL_COMPANION } model_role;

/* A model's integration in progress (model_run_begin .. model_run_end):
 * the model, its states per grid point, and its fast variable's path. */
typedef struct {
    aim_model *m;
    double *y0, *states, *fast;
    aim_ode_model om; /* the run holds its address */
    aim_ode_run *ode;
    aim_ode_report fast_report;
    int fast_failed;
} model_run;

/* cfg's model (exact start, or start) set up on tau, its start checked
 * (row 0) and its fast variable, if any, integrated: 0, or -1 with
 * report's status AIM_ODE_FAILED and message set (model_run_end still
 * to be called). */
static int model_run_begin(model_run *r, const aim_config *cfg, int d, const double *tau,
                           const aim_measured_start *start, aim_ode_report *report)
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
 * AIM_OBS_COUNT), the same numbers model_run_end writes there; scratch:
 * points x AIM_OBS_COUNT (a fast path's rows depend on its start). 0, or
 * -1 when they cannot be had. */
static int model_run_row(model_run *r, int i, double *scratch, double *obs)
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
static aim_ode_status model_run_end(model_run *r, const aim_config *cfg, const double *tau,
                                    double *obs, aim_trajectory_moments *moments, int estimate,
                                    model_role role, aim_ode_report *report)
{
    const int points = cfg->points;
    aim_model *m = r->m;
    if (!r->ode)
        goto done;
    aim_ode_end(r->ode);
    /* counters are recorded once CVODE is set up: a failure with them
     * and a row is CVODE's own, after the start */
    if (report->status == AIM_ODE_FAILED && report->integrations > 0 && report->reached > 0 &&
        (role == MODEL_COMPANION || aim_model_is_hierarchy(m))) {
        report->status = AIM_ODE_BLOWUP;
        if (role == MODEL_RUN) {
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

/* cfg's model integrated on the whole grid (model_run_end says into
 * what). */
static aim_ode_status run_model(const aim_config *cfg, int d, const double *tau,
                                const aim_measured_start *start, double *obs,
                                aim_trajectory_moments *moments, int estimate, model_role role,
                                aim_ode_report *report)
{
    model_run r;
    if (model_run_begin(&r, cfg, d, tau, start, report) == 0) {
        if (role == MODEL_RUN && aim_model_is_hierarchy(r.m)) {
            progress_clock clock = progress_start();
            for (int i = 1; i < cfg->points && aim_ode_advance(r.ode, i) == AIM_ODE_OK &&
                            report->reached > i;
                 i++)
                progress_row(&clock, cfg, tau, i);
        } else {
            aim_ode_advance(r.ode, cfg->points - 1);
        }
    }
    return model_run_end(&r, cfg, tau, obs, moments, estimate, role, report);
}

/* The tracked words of cfg's hierarchy at order cfg->order (every word of
 * length 1..M with a letter the student moves, in word-set order), as the
 * truncated hierarchy names its state: the matrix method writes the same
 * columns. ws is created here; *tracked is malloc'ed. */
static aim_wordset *matrix_tracked_words(const aim_config *cfg, int **tracked, int *count)
{
    *tracked = NULL;
    *count = 0;
    const aim_model_ops *ops = aim_model_ops_of(cfg);
    if (!ops->hierarchy)
        return NULL;
    aim_alphabet ab;
    ops->alphabet(cfg, &ab);
    const char *moving = ops->moving;
    aim_wordset *ws = aim_wordset_create(&ab, cfg->order);
    if (!ws || !(*tracked = malloc(sizeof **tracked * (size_t)aim_wordset_count(ws)))) {
        aim_wordset_free(ws);
        return NULL;
    }
    for (int i = 1; i < aim_wordset_count(ws); i++)
        if (strpbrk(aim_wordset_word(ws, i), moving))
            (*tracked)[(*count)++] = i;
    return ws;
}

/* Sum and sum of squares of one replica's row into acc (2 x width). */
static void accumulate(double *acc, const double *row, int width)
{
    for (int k = 0; k < width; k++) {
        acc[k] += row[k];
        acc[width + k] += row[k] * row[k];
    }
}

/* What one replica of run_matrix gave: rows 0 .. reached - 1 of its
 * observables and tracked words (width each); rc 0 when it ran the whole
 * grid, > 0 when it blew up, < 0 when it failed, with message and the tau
 * it stopped at; made 0 when it could not be set up (message says why). */
typedef struct {
    double *rows;
    int made, reached, rc;
    double tau, twr;
    char message[512];
} replica_result;

/* Replica r of run_matrix (seed cfg->seed + r) on the grid tau into out
 * (out->rows: points x width). */
static void run_replica(const aim_config *cfg, int D, double d_raw, double h0, const double *tau,
                        const aim_wordset *ws, const int *tracked, int count, int r,
                        replica_result *out)
{
    const int points = cfg->points, width = AIM_OBS_COUNT + count;
    const int nw = ws ? aim_wordset_count(ws) : 0;
    double *all = malloc(sizeof *all * ((size_t)nw + 1));
    double *row = malloc(sizeof *row * (size_t)width);
    char err[256] = "out of memory";
    aim_mlimit *m =
        all && row ? aim_mlimit_create(cfg, D, d_raw, cfg->seed + (uint64_t)r, err, sizeof err)
                   : NULL;
    out->made = m != NULL;
    if (!m) {
        snprintf(out->message, sizeof out->message,
                 "could not set up the matrix limit process: %s", err);
        free(all);
        free(row);
        return;
    }
    int i = 0, rc = 0;
    for (; i < points; i++) {
        if (i > 0 && (rc = aim_mlimit_advance(m, tau[i] - tau[i - 1], h0)) != 0)
            break;
        if (aim_mlimit_observables(m, row) || (ws && aim_mlimit_words(m, ws, cfg->order, all))) {
            rc = -1;
            break;
        }
        for (int k = 0; k < count; k++)
            row[AIM_OBS_COUNT + k] = all[tracked[k]];
        memcpy(out->rows + (size_t)i * width, row, sizeof *row * (size_t)width);
    }
    out->reached = i;
    out->rc = rc;
    out->twr = aim_mlimit_recovery_time(m);
    if (rc) {
        snprintf(out->message, sizeof out->message, "%s",
                 rc < 0 && !aim_mlimit_error(m)[0] ? "out of memory" : aim_mlimit_error(m));
        out->tau = aim_mlimit_tau(m);
    } else {
        note("matrix limit process: replica %d/%d done (D = %d)", r + 1, cfg->replicas, D);
    }
    aim_mlimit_free(m);
    free(all);
    free(row);
}

/* ode.method = matrix: the limit process at dimension matrix.d, replicas
 * averaged (theory/matrix.md). A replica that blows up ends the run at the
 * last point every replica reached (a mean over survivors would be
 * biased). With output.fold, a replica is folded by its sign at the last
 * point it reached (src/results/fold.h): its rows are kept until it ends. */
static aim_ode_status run_matrix(const aim_config *cfg, int d, const double *tau, double *obs,
                                 aim_trajectory_moments *moments, aim_ode_report *report)
{
    const double d_raw = cfg->ode_d > 0 ? cfg->ode_d : (double)d;
    const int points = cfg->points, R = cfg->replicas, D = cfg->matrix_d;
    const double h0 = aim_config_matrix_step(cfg);
    int *tracked = NULL, count = 0;
    aim_wordset *ws = matrix_tracked_words(cfg, &tracked, &count);
    const int width = AIM_OBS_COUNT + count;
    double *acc = calloc((size_t)points * 2 * width, sizeof *acc);
    /* every replica's rows */
    double *rows = malloc(sizeof *rows * (size_t)R * points * width);
    replica_result *res = calloc((size_t)R, sizeof *res);
    int *odd = malloc(sizeof *odd * (size_t)width);
    int *sign = calloc((size_t)R, sizeof *sign);
    int reached = points, crossed = 0;
    double twr_sum = 0.0, twr_sq = 0.0;
    if ((aim_model_ops_of(cfg)->hierarchy && !ws) || !acc || !rows || !res || !odd || !sign) {
        snprintf(report->message, sizeof report->message, "out of memory");
        goto done;
    }
    for (int k = 0; k < width; k++)
        odd[k] = k < AIM_OBS_COUNT
                     ? aim_fold_obs_odd(k)
                     : aim_fold_word_odd(aim_wordset_word(ws, tracked[k - AIM_OBS_COUNT]));
    /* the replicas on the engine's threads (--threads), each its own
     * process and engine; their results are then taken in replica order,
     * so that the file is the same on any number of threads */
    int threads = aim_gauss_threads() < R ? aim_gauss_threads() : R;
    if (threads > 1)
        aim_gauss_team_started();
    OMP(omp parallel for schedule(dynamic, 1) num_threads(threads) if (threads > 1))
    for (int r = 0; r < R; r++) {
        res[r].rows = rows + (size_t)r * points * width;
        run_replica(cfg, D, d_raw, h0, tau, ws, tracked, count, r, &res[r]);
    }
    for (int r = 0; r < R; r++) {
        const replica_result *x = &res[r];
        if (!x->made) {
            snprintf(report->message, sizeof report->message, "%s", x->message);
            goto done;
        }
        const int i = x->reached;
        /* rows 0 .. i - 1 are the replica's, folded by the last of them */
        sign[r] = i > 0 ? aim_fold_sign(cfg, x->rows + (size_t)(i - 1) * width) : 1;
        for (int j = 0; j < i; j++) {
            double *y = x->rows + (size_t)j * width;
            for (int k = 0; k < width && sign[r] < 0; k++)
                y[k] = odd[k] ? -y[k] : y[k];
            accumulate(acc + (size_t)j * 2 * width, y, width);
        }
        crossed += !isnan(x->twr);
        twr_sum += isnan(x->twr) ? 0.0 : x->twr;
        twr_sq += isnan(x->twr) ? 0.0 : x->twr * x->twr;
        if (x->rc) {
            snprintf(report->message, sizeof report->message, "replica %d (seed %llu): %.400s",
                     r + 1, (unsigned long long)(cfg->seed + (uint64_t)r), x->message);
            report->tau = x->tau;
            if (x->rc < 0)
                goto done;
            report->status = AIM_ODE_BLOWUP;
            if (i < reached)
                reached = i;
            break;
        }
    }
    if (report->status != AIM_ODE_BLOWUP) {
        report->status = AIM_ODE_OK;
        report->tau = tau[points - 1];
    }
    report->reached = reached;
    /* weak recovery: the replicas' mean crossing time, when every replica
     * crossed (a mean over the early ones would be biased) */
    if (report->status == AIM_ODE_OK && crossed == R) {
        report->tau_wr = twr_sum / R;
        report->tau_wr_se =
            R > 1 ? sqrt(fmax(twr_sq / R - report->tau_wr * report->tau_wr, 0.0) / (R - 1))
                  : NAN;
    }
    if (moments && !(moments->names = calloc((size_t)count + 1, sizeof *moments->names))) {
        report->status = AIM_ODE_FAILED;
        snprintf(report->message, sizeof report->message, "out of memory");
        goto done;
    }
    if (moments && cfg->fold != AIM_FOLD_NONE) {
        moments->fold_sign = sign;
        sign = NULL;
    }
    if (moments) {
        moments->count = count;
        moments->values = malloc(sizeof(double) * ((size_t)points * count + 1));
        moments->obs_se = R > 1 ? malloc(sizeof(double) * (size_t)points * AIM_OBS_COUNT) : NULL;
        int ok = moments->values && (R == 1 || moments->obs_se);
        for (int k = 0; ok && k < count; k++) {
            const char *w = aim_wordset_word(ws, tracked[k]);
            ok = (moments->names[k] = malloc(strlen(w) + 4)) != NULL;
            if (ok)
                sprintf(moments->names[k], "m(%s)", w);
        }
        if (!ok) {
            aim_trajectory_moments_free(moments);
            report->status = AIM_ODE_FAILED;
            snprintf(report->message, sizeof report->message, "out of memory");
            goto done;
        }
    }
    for (int i = 0; i < points; i++) {
        const double *a = acc + (size_t)i * 2 * width;
        for (int k = 0; k < width; k++) {
            const double mean = a[k] / R;
            const double se = R > 1 ? sqrt(fmax(a[width + k] / R - mean * mean, 0.0) * R /
                                           (R - 1) / R)
                                    : NAN;
            const double v = i < reached ? mean : NAN;
            if (k < AIM_OBS_COUNT) {
                obs[(size_t)i * AIM_OBS_COUNT + k] = v;
                if (moments && moments->obs_se)
                    moments->obs_se[(size_t)i * AIM_OBS_COUNT + k] = i < reached ? se : NAN;
            } else if (moments) {
                moments->values[(size_t)i * count + (k - AIM_OBS_COUNT)] = v;
            }
        }
    }
done:
    aim_wordset_free(ws);
    free(tracked);
    free(acc);
    free(rows);
    free(res);
    free(odd);
    free(sign);
    return report->status;
}

/* One hierarchy run's observables before its own truncation cut, and what
 * identifies that run bit for bit: its configuration (config_key), d, grid
 * and start. key NULL: an empty slot. */
typedef struct {
    char *key;
    size_t key_len;
    int d, count; /* count: start moments kept (0: the exact start) */
    double *tau, *start, *obs;
    aim_ode_report report;
} kept_run;

/* An order-M estimate reads orders M - 1 .. M - 3; they, and the order-M
 * run itself, are the next order's: twice that, so that no run the next
 * order reads is dropped before it does. */
enum { REUSE_KEPT = 8 };

/* A hand-over's matrix limit process (theory/matrix.md sec. 7), the same
 * for every order of one configuration: what identifies it (its
 * configuration with the order left out, d, grid), its words measured up
 * to order words (those of every lower order are their leading columns),
 * and its result. key NULL: none kept. */
typedef struct {
    char *key;
    size_t key_len;
    int d, words;
    double *tau, *obs;
    aim_trajectory_moments moments;
    aim_ode_report report;
} kept_matrix;

struct aim_trajectory_reuse {
    int reused, next; /* next: the slot the next run kept takes */
    int highest;      /* the highest order the runs sharing it ask for, 0 unknown */
    kept_run runs[REUSE_KEPT];
    kept_matrix matrix;
};

/* cfg as the text of every key (aim_config_write: reals at 17 digits, so
 * that equal text is equal values) but the file name, which differs
 * between the orders of one compare, and the token covariance it
 * resolves to; not the struct's bytes, whose padding and string tails are
 * not values. Into *key (malloc'ed, *len bytes); 0, or -1 when out of
 * memory. */
static int config_key(const aim_config *cfg, char **key, size_t *len)
{
    aim_config c = *cfg;
    c.name[0] = '\0';
    *key = NULL;
    FILE *f = open_memstream(key, len);
    if (!f)
        return -1;
    aim_config_write(&c, f, NULL);
    const int ok = fwrite(c.cov, sizeof c.cov, 1, f) == 1;
    if (fclose(f) != 0 || !ok) {
        free(*key);
        *key = NULL;
        return -1;
    }
    return 0;
}

aim_trajectory_reuse *aim_trajectory_reuse_create(void)
{
    return calloc(1, sizeof(aim_trajectory_reuse));
}

static void kept_clear(kept_run *k)
{
    free(k->key);
    free(k->tau);
    free(k->start);
    free(k->obs);
    memset(k, 0, sizeof *k);
}

static void kept_matrix_clear(kept_matrix *k)
{
    free(k->key);
    free(k->tau);
    free(k->obs);
    aim_trajectory_moments_free(&k->moments);
    memset(k, 0, sizeof *k);
}

void aim_trajectory_reuse_free(aim_trajectory_reuse *r)
{
    if (!r)
        return;
    for (int i = 0; i < REUSE_KEPT; i++)
        kept_clear(&r->runs[i]);
    kept_matrix_clear(&r->matrix);
    free(r);
}

void aim_trajectory_reuse_orders(aim_trajectory_reuse *r, int highest) { r->highest = highest; }

int aim_trajectory_reused(const aim_trajectory_reuse *r) { return r->reused; }

/* The start moments a hierarchy of cfg's order reads: every word of length
 * 0 .. order + 1 (aim_measured_start); -1 when the word set cannot be
 * made. */
static int start_count(const aim_config *cfg)
{
    aim_alphabet ab;
    aim_model_ops_of(cfg)->alphabet(cfg, &ab);
    aim_wordset *ws = aim_wordset_create(&ab, cfg->order + 1);
    const int count = ws ? aim_wordset_count(ws) : -1;
    aim_wordset_free(ws);
    return count;
}

/* 1 when k holds the run of cfg (whose key is key, len) at d on tau from
 * start. */
static int kept_matches(const kept_run *k, const char *key, size_t len, const aim_config *cfg,
                        int d, const double *tau, const aim_measured_start *start)
{
    if (!k->key || d != k->d || len != k->key_len || memcmp(key, k->key, len) != 0 ||
        memcmp(tau, k->tau, sizeof *tau * (size_t)cfg->points) != 0)
        return 0;
    if (!start || !start->moments)
        return k->count == 0 && !(start && start->q);
    return k->count > 0 && !start->q &&
           memcmp(start->moments, k->start, sizeof *k->start * (size_t)k->count) == 0;
}

/* The run of cfg at d on tau from start kept in r, or NULL. */
static const kept_run *reuse_find(const aim_trajectory_reuse *r, const aim_config *cfg, int d,
                                  const double *tau, const aim_measured_start *start)
{
    char *key;
    size_t len;
    if (!r || config_key(cfg, &key, &len))
        return NULL;
    const kept_run *found = NULL;
    for (int i = 0; i < REUSE_KEPT && !found; i++)
        if (kept_matches(&r->runs[i], key, len, cfg, d, tau, start))
            found = &r->runs[i];
    free(key);
    return found;
}

/* Keeps the run of cfg (observables obs before its truncation cut, its
 * report) in r (NULL: nowhere), in place of the oldest one kept; a start
 * with direct order parameters is not kept. */
static void reuse_keep(aim_trajectory_reuse *r, const aim_config *cfg, int d, const double *tau,
                       const aim_measured_start *start, const double *obs,
                       const aim_ode_report *report)
{
    if (!r || reuse_find(r, cfg, d, tau, start))
        return;
    kept_run *k = &r->runs[r->next];
    kept_clear(k);
    const int points = cfg->points;
    const int count = start && start->moments ? start_count(cfg) : 0;
    if ((start && start->q) || count < 0 || config_key(cfg, &k->key, &k->key_len))
        return;
    k->d = d;
    k->count = count;
    k->tau = malloc(sizeof *k->tau * (size_t)points);
    k->obs = malloc(sizeof *k->obs * (size_t)points * AIM_OBS_COUNT);
    k->start = count > 0 ? malloc(sizeof *k->start * (size_t)count) : NULL;
    if (!k->tau || !k->obs || (count > 0 && !k->start)) {
        kept_clear(k); /* nothing kept: the next order integrates its own */
        return;
    }
    memcpy(k->tau, tau, sizeof *tau * (size_t)points);
    memcpy(k->obs, obs, sizeof *obs * (size_t)points * AIM_OBS_COUNT);
    if (count > 0)
        memcpy(k->start, start->moments, sizeof *k->start * (size_t)count);
    k->report = *report;
    r->next = (r->next + 1) % REUSE_KEPT;
}

/* The lower orders an order-M estimate reads: M - 1 down to M - 3, but
 * not below 2 (order 1 tracks no student-teacher word). */
enum { LOWER_ORDERS = 3 };

/* A step between orders smaller than RESOLUTION_RTOLS ode.rtol (or than
 * the quasi-random rule's kernel error) may be the integrator's own: the
 * runs resolve no smaller difference (theory/matrix.md sec. 6). */
#define RESOLUTION_RTOLS 100.0

/* The lower orders' quasi-random rule has COARSE_DIVISOR times fewer
 * points than the run's: they only resolve steps between orders, far
 * above the kernel error (theory/matrix.md sec. 6, measured there). */
enum { COARSE_DIVISOR = 4, COARSE_LEAST = 256 };

/* The quasi-random points of the lower orders' runs: 0 when they use the
 * run's own rule (exact Gauss-Hermite kernels, or points chosen by
 * ode.kernel_tol). */
static int coarse_points(const aim_config *cfg, const aim_ode_report *report)
{
    if (report->kernel_points == 0 || cfg->kernel_tol > 0.0)
        return 0;
    const int points = cfg->qmc_points / COARSE_DIVISOR;
    return points < COARSE_LEAST ? COARSE_LEAST : points;
}

/* The lower-order runs of cfg's estimate (order M - 1 - k in slot k, not
 * below order 2), integrated in step with order M, or taken from reuse
 * where it holds that very run. */
typedef struct {
    int runs;
    int coarse; /* on a coarse rule: their kernel errors estimated */
    aim_config cfg[LOWER_ORDERS];
    model_run run[LOWER_ORDERS];
    int live[LOWER_ORDERS];            /* integrated here, begun */
    double *low[LOWER_ORDERS];         /* observables, points x AIM_OBS_COUNT */
    aim_ode_report rep[LOWER_ORDERS];
} lower_set;

/* A lower run's failure, as the run's message. */
static void lower_failed(aim_ode_report *report, int order, const char *why)
{
    snprintf(report->message, sizeof report->message,
             "the order-%d run for the truncation error estimate failed: %.600s", order, why);
}

/* Sets the lower runs up (their start checked; those in reuse copied, on
 * a coarse rule of qmc > 0 points when asked): 0, or -1 with report's
 * message set when one could not start (lower_end still to be called). */
static int lower_begin(lower_set *ls, const aim_config *cfg, int d, const double *tau,
                       const aim_measured_start *start, int qmc, aim_trajectory_reuse *reuse,
                       aim_ode_report *report)
{
    memset(ls, 0, sizeof *ls);
    const int points = cfg->points;
    for (int order = cfg->order - 1; order >= 2 && ls->runs < LOWER_ORDERS; order--) {
        const int k = ls->runs++;
        ls->cfg[k] = *cfg;
        ls->cfg[k].order = order;
        if (qmc > 0)
            ls->cfg[k].qmc_points = qmc;
        ls->coarse = qmc > 0;
        double *obs = ls->low[k] = malloc(sizeof *obs * (size_t)points * AIM_OBS_COUNT);
        const kept_run *kept = obs ? reuse_find(reuse, &ls->cfg[k], d, tau, start) : NULL;
        if (kept) {
            memcpy(obs, kept->obs, sizeof *obs * (size_t)points * AIM_OBS_COUNT);
            ls->rep[k] = kept->report;
            reuse->reused++;
            continue;
        }
        ls->live[k] = 1;
        if (!obs ||
            model_run_begin(&ls->run[k], &ls->cfg[k], d, tau, start, &ls->rep[k]) != 0) {
            lower_failed(report, order, obs ? ls->rep[k].message : "out of memory");
            return -1;
        }
    }
    return 0;
}

/* The lower runs integrated here to row i (or to where they stop). */
static void lower_advance(lower_set *ls, int i)
{
    for (int k = 0; k < ls->runs; k++)
        if (ls->live[k])
            aim_ode_advance(ls->run[k].ode, i);
}

/* Observables of row i of the lower runs integrated here that reached it,
 * into their low rows: 0, or -1 when they cannot be had. */
static int lower_row(lower_set *ls, int i, double *scratch)
{
    for (int k = 0; k < ls->runs; k++)
        if (ls->live[k] && i < ls->rep[k].reached &&
            model_run_row(&ls->run[k], i, scratch, ls->low[k] + (size_t)i * AIM_OBS_COUNT))
            return -1;
    return 0;
}

/* Ends the lower runs where they are (failed: one failed to start) and
 * appends their counters to report; keep: the runs made here are whole,
 * for reuse. The count of runs, or -1 with report's message set when one
 * failed. */
static int lower_end(lower_set *ls, const double *tau, int d, const aim_measured_start *start,
                     aim_trajectory_reuse *reuse, int keep, int failed, aim_ode_report *report)
{
    for (int k = 0; k < ls->runs; k++) {
        if (!ls->live[k])
            continue;
        aim_ode_report *rep = &ls->rep[k];
        model_run_end(&ls->run[k], &ls->cfg[k], tau, ls->low[k], NULL, ls->coarse,
                      MODEL_COMPANION, rep);
        if (failed)
            continue;
        if (rep->status == AIM_ODE_FAILED) {
            lower_failed(report, ls->cfg[k].order, rep->message);
            failed = 1;
        } else if (keep) {
            reuse_keep(reuse, &ls->cfg[k], d, tau, start, ls->low[k], rep);
        }
    }
    if (failed)
        return -1;
    for (int k = 0; k < ls->runs; k++) {
        char what[64];
        snprintf(what, sizeof what, "truncation estimate (order %d)", ls->cfg[k].order);
        aim_ode_stats_append(report, &ls->rep[k], what);
    }
    return ls->runs;
}

static void lower_free(lower_set *ls)
{
    for (int k = 0; k < LOWER_ORDERS; k++)
        free(ls->low[k]);
}

/* The truncation error estimate of row i (theory/matrix.md sec. 6) from
 * the order-M observables a and the lower orders' low[k] (order
 * M - 1 - k) that reached the row: est[0] overlap, est[1] risk; 1 when
 * the orders do not converge in M there. */
static int row_estimate(const double *a, double *const low[LOWER_ORDERS], int runs, size_t row,
                        double resolution, double est[2])
{
    int stalled = 0;
    for (int o = 0; o < 2; o++) {
        const int col = o == 0 ? AIM_OBS_OVERLAP : AIM_OBS_RISK;
        /* the risk relative to the order-M risk, the overlap absolute */
        const double unit = o == 0 ? 1.0 : fabs(a[col]);
        double steps[LOWER_ORDERS];
        double upper = a[col];
        for (int k = 0; k < runs; k++) {
            const double x = low[k][row * AIM_OBS_COUNT + col];
            steps[runs - 1 - k] = (upper - x) / unit; /* oldest step first */
            upper = x;
        }
        stalled |= aim_mconv_estimate(steps, runs, resolution, &est[o]) == AIM_MCONV_STALLED;
    }
    return stalled;
}

/* The length of a run's message up to its first ';' (where and why it
 * stopped; the advice and the state that follow are the run's own), a
 * closing '.' left out. */
static int first_clause(const char *message)
{
    size_t n = strcspn(message, ";");
    if (n > 0 && message[n - 1] == '.')
        n--;
    return (int)n;
}

/* The truncation error estimate (theory/matrix.md sec. 6): the same run at
 * orders M - 1, M - 2, M - 3 (not below 2), whose words are the first of
 * the order-M word set (words are ordered by length), so the same start
 * serves. Per row, the steps between consecutive orders say how the
 * truncations converge there: alternating and shrinking, the last step
 * bounds the error; shrinking from one side, the geometric tail; not
 * shrinking (beyond the runs' numerical resolution), nothing bounds it.
 * The run is cut at the first row whose estimate passes hierarchy.tol,
 * whose orders do not converge, or that order M - 1 did not reach (it
 * stopped, or CVODE gave up on it: no estimate, NaN) (hierarchy.tol = 0:
 * never). Where only a lower order had stopped, the orders above it
 * serve. low, rep: the lower orders' runs (lower_end; runs of them,
 * -1 when they failed: report's message says why). */
static void truncation_estimate(const aim_config *cfg, const double *tau, double *obs,
                                aim_trajectory_moments *moments, aim_ode_report *report,
                                double *low[LOWER_ORDERS], const aim_ode_report rep[LOWER_ORDERS],
                                int runs)
{
    const int points = cfg->points;
    const int qmc = coarse_points(cfg, report);
    double *est = runs >= 0 ? malloc(sizeof *est * (size_t)points * 2) : NULL;
    if (!est) {
        if (runs >= 0)
            snprintf(report->message, sizeof report->message, "out of memory");
        report->status = AIM_ODE_FAILED;
        return;
    }
    double resolution = RESOLUTION_RTOLS * cfg->rtol;
    if (isfinite(report->kernel_error))
        resolution = fmax(resolution, report->kernel_error);
    for (int k = 0; k < runs; k++)
        if (isfinite(rep[k].kernel_error))
            resolution = fmax(resolution, rep[k].kernel_error);
    int cut = -1, stall = -1, cut_runs = 0; /* cut_runs: lower orders read at the cut */
    for (int i = 0; i < report->reached; i++) {
        int reached = 0; /* lower orders, from M - 1 down, that reached row i */
        while (reached < runs && i < rep[reached].reached)
            reached++;
        double *e = est + 2 * (size_t)i;
        if (reached == 0) {
            /* without order M - 1 nothing vouches for the row */
            e[0] = e[1] = NAN;
            if (cut < 0 && cfg->tol > 0.0)
                cut = i;
            continue;
        }
        const int stalled =
            row_estimate(obs + (size_t)i * AIM_OBS_COUNT, low, reached, (size_t)i, resolution, e);
        if (stalled && stall < 0)
            stall = i;
        if (cut < 0 && cfg->tol > 0.0 && (stalled || e[0] > cfg->tol || e[1] > cfg->tol)) {
            cut = i;
            cut_runs = reached;
        }
    }
    if (cut >= 0) {
        const double *e = est + 2 * (size_t)cut;
        report->status = AIM_ODE_BLOWUP;
        report->stop = AIM_STOP_TRUNCATION;
        report->tau = tau[cut];
        if (cut >= rep[0].reached) {
            snprintf(report->reason, sizeof report->reason,
                     "order %d companion: %.*s; so no truncation error estimate vouches for "
                     "the rows from tau = %.6g on",
                     cfg->order - 1, first_clause(rep[0].message), rep[0].message, tau[cut]);
        } else if (cut == stall) {
            const int from = cfg->order - (cut_runs > 2 ? 3 : 2); /* aim_mconv_estimate */
            snprintf(report->reason, sizeof report->reason,
                     "the orders %d to %d do not converge in M: the step from order %d to %d "
                     "(%.3g in the overlap, %.3g in the relative risk) is no smaller than the "
                     "step from %d to %d in one of them, so nothing bounds the truncation error",
                     cfg->order - cut_runs, cfg->order, cfg->order - 1, cfg->order, e[0], e[1],
                     from, from + 1);
        } else {
            snprintf(report->reason, sizeof report->reason,
                     "the truncation error estimate (orders %d to %d) is %.3g in the overlap "
                     "and %.3g in the relative risk, above hierarchy.tol = %g",
                     cfg->order - cut_runs, cfg->order, e[0], e[1], cfg->tol);
        }
        snprintf(report->message, sizeof report->message,
                 "the order-%d hierarchy stopped at tau = %.6g: %s; raise hierarchy.order, "
                 "or use ode.method = matrix (no truncation)",
                 cfg->order, tau[cut], report->reason);
        for (int i = cut; i < report->reached; i++)
            for (int k = 0; k < AIM_OBS_COUNT; k++)
                obs[(size_t)i * AIM_OBS_COUNT + k] = NAN;
        if (moments)
            for (int i = cut * moments->count; i < points * moments->count; i++)
                moments->values[i] = NAN;
        if (report->tau_wr > tau[cut - (cut > 0)])
            report->tau_wr = NAN;
        report->reached = cut;
    }
    if (moments) {
        moments->trunc = est;
        moments->trunc_orders = runs;
        moments->trunc_points = qmc;
        moments->trunc_stop = rep[0].status == AIM_ODE_OK ? NAN : rep[0].tau;
        if (rep[0].status != AIM_ODE_OK)
            snprintf(moments->trunc_stop_why, sizeof moments->trunc_stop_why, "%.*s",
                     first_clause(rep[0].message), rep[0].message);
        moments->trunc_stall = stall >= 0 && stall < report->reached ? tau[stall] : NAN;
    } else {
        free(est);
    }
}

void aim_trajectory_kernel_line(FILE *f, const aim_config *cfg, int points, double error)
{
    if (cfg->method == AIM_METHOD_MATRIX) {
        fprintf(f, "# threads: %d (the matrix process's replicas, run that many at a time; the "
                   "results are the same, bit for bit, on any number)\n",
                aim_gauss_threads());
        return;
    }
    if (points == 0) {
        fprintf(f, "# kernels: Gauss-Hermite product rules (ode.quad_nodes; exact for Hermite "
                   "series), no quasi-random error\n");
        return;
    }
    fprintf(f, "# kernels: quasi-random rule, %d points and their antithetic images; estimated "
               "relative kernel error %.2g at the start and the end (the larger; a 95 %% Student-t "
               "bound from 8 randomly shifted copies of the rule)",
            points, error);
    if (cfg->kernel_tol > 0.0)
        fprintf(f, "; points chosen for ode.kernel_tol = %g at the start%s", cfg->kernel_tol,
                !(error > cfg->kernel_tol)               ? ""
                : aim_gauss_points_capped(cfg, points) ? ", not reached below the cap on the "
                                                         "point set (2^25 numbers)"
                                                       : ", passed by the end");
    fprintf(f, "\n# threads: %d (the quasi-random rule's; the results are the same, bit for "
               "bit, on any number)\n",
            aim_gauss_threads());
}

/* Text added to report->message (cut at its size). */
__attribute__((format(printf, 2, 3))) static void append_message(aim_ode_report *report,
                                                                 const char *fmt, ...)
{
    const size_t used = strlen(report->message);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(report->message + used, sizeof report->message - used, fmt, ap);
    va_end(ap);
}

/* The highest order, at most cfg->order, whose tracked words number at
 * most AIM_HANDOVER_WORDS: the words the hand-over's process writes
 * (longer words are NaN in its rows). Each word is one D x D matrix
 * product per output point and replica (after shared prefixes): at
 * untied M = 7 (25 245 words, D = 400, 46 points, 4 replicas) measuring
 * them all had not finished after 13 minutes of CPU, where the process's
 * steps with 235 words take about one
 * (validate/results/RESULTS_late.md sec. 10); every tied order has at
 * most 198 words (M = 10), untied order 4 235. */
static int handover_words_order(const aim_config *cfg)
{
    aim_config c = *cfg;
    int order = 1;
    while (order < cfg->order) {
        c.order = order + 1;
        int *tracked = NULL, count = 0;
        aim_wordset *ws = matrix_tracked_words(&c, &tracked, &count);
        free(tracked);
        aim_wordset_free(ws);
        if (!ws || count > AIM_HANDOVER_WORDS)
            break;
        order++;
    }
    return order;
}

/* The matrix limit process of mcfg at d on tau (its words, when wanted,
 * up to mcfg->order at least): the one kept in reuse when it is that run
 * with words to that order, else run, into reuse (words to the highest
 * order its runs ask for, so that the next order finds them) or, without
 * one, into *own (clear it after). NULL when out of memory. */
static const kept_matrix *matrix_process(const aim_config *mcfg, int d, const double *tau,
                                         int want_words, aim_trajectory_reuse *reuse,
                                         kept_matrix *own)
{
    const int points = mcfg->points;
    aim_config run = *mcfg;
    char *key = NULL;
    size_t len = 0;
    if (reuse && reuse->highest > run.order)
        run.order = reuse->highest;
    run.order = handover_words_order(&run);
    if (reuse) {
        aim_config unordered = *mcfg;
        unordered.order = 0; /* the process is the same at every order */
        if (config_key(&unordered, &key, &len))
            return NULL;
        const kept_matrix *k = &reuse->matrix;
        if (k->key && k->key_len == len && !memcmp(k->key, key, len) && k->d == d &&
            !memcmp(k->tau, tau, sizeof *tau * (size_t)points) && k->words >= run.order) {
            free(key);
            return k;
        }
        kept_matrix_clear(&reuse->matrix);
        own = &reuse->matrix;
        want_words = 1;
    }
    own->key = key;
    own->key_len = len;
    own->d = d;
    own->words = run.order;
    own->tau = malloc(sizeof *own->tau * (size_t)points);
    own->obs = malloc(sizeof *own->obs * (size_t)points * AIM_OBS_COUNT);
    if (!own->tau || !own->obs) {
        kept_matrix_clear(own);
        return NULL;
    }
    memcpy(own->tau, tau, sizeof *tau * (size_t)points);
    aim_trajectory_run_full(&run, d, tau, NULL, own->obs, want_words ? &own->moments : NULL,
                            &own->report);
    return own;
}

/* hierarchy.beyond = matrix (theory/matrix.md sec. 7): a hierarchy that
 * failed at grid point report->reached, by its truncation error estimate
 * or by leaving the moments of real matrices, continues as the matrix
 * limit process. That process is run over the whole grid from its own
 * start (it has no state to take over from a truncation: the words longer
 * than M are what failed; the same run for every order, kept in reuse) and
 * its rows, with their replica standard errors, replace the missing ones;
 * the rows before are the hierarchy's, untouched. */
static void hand_over(const aim_config *cfg, int d, const double *tau, double *obs,
                      aim_trajectory_moments *moments, aim_trajectory_reuse *reuse,
                      aim_ode_report *report)
{
    const int points = cfg->points, cut = report->reached;
    snprintf(report->handover_why, sizeof report->handover_why, "%s", report->message);
    if (cfg->start_file[0]) {
        append_message(report, " (no hand-over to the matrix limit process: it cannot start "
                               "from training.start_file)");
        return;
    }
    aim_config mcfg = *cfg;
    mcfg.method = AIM_METHOD_MATRIX;
    aim_config_error err;
    if (aim_config_validate(&mcfg, &err)) {
        append_message(report, " (no hand-over to the matrix limit process: %s)", err.message);
        return;
    }
    /* With an output map even in the index the replicas split between a
     * branch and its mirror image (src/results/fold.h), and the hierarchy follows
     * one of them: the replicas are folded, then put on its branch. */
    if (mcfg.fold == AIM_FOLD_NONE) {
        aim_config folded = mcfg;
        folded.fold = cfg->centring == AIM_RAW ? AIM_FOLD_MEAN : AIM_FOLD_OVERLAP;
        if (aim_config_validate(&folded, &err) == 0)
            mcfg = folded;
    }
    const int branch =
        cut > 0 ? aim_fold_sign(&mcfg, obs + (size_t)(cut - 1) * AIM_OBS_COUNT) : 1;
    double *se =
        moments && !moments->obs_se ? malloc(sizeof *se * (size_t)points * AIM_OBS_COUNT) : NULL;
    if (moments && !moments->obs_se && !se) {
        append_message(report, " (no hand-over to the matrix limit process: out of memory)");
        return;
    }
    note("%s; hierarchy.beyond = matrix: the matrix limit process (D = %d, %d replicas) "
         "continues from tau = %g",
         report->message, cfg->matrix_d, cfg->replicas, tau[cut]);
    kept_matrix own = {0};
    const kept_matrix *run = matrix_process(&mcfg, d, tau, moments != NULL, reuse, &own);
    if (!run) {
        append_message(report, " (no hand-over to the matrix limit process: out of memory)");
        free(se);
        return;
    }
    const double *mobs = run->obs;
    const aim_trajectory_moments mmom = run->moments;
    const aim_ode_report mrep = run->report;
    if (mrep.status == AIM_ODE_FAILED || mrep.reached <= cut) {
        append_message(report, " (the matrix limit process, run to hand over, %s: %s)",
                       mrep.status == AIM_ODE_FAILED ? "failed" : "stopped before that point",
                       mrep.message);
        free(se);
        kept_matrix_clear(&own);
        return;
    }
    for (int i = cut; i < mrep.reached; i++)
        for (int k = 0; k < AIM_OBS_COUNT; k++)
            obs[(size_t)i * AIM_OBS_COUNT + k] = (branch < 0 && aim_fold_obs_odd(k) ? -1 : 1) *
                                                 mobs[(size_t)i * AIM_OBS_COUNT + k];
    if (moments) {
        if (se) {
            for (size_t k = 0; k < (size_t)points * AIM_OBS_COUNT; k++)
                se[k] = NAN;
            moments->obs_se = se;
        }
        for (int i = cut; i < points; i++) {
            const int in = i < mrep.reached;
            for (int k = 0; k < AIM_OBS_COUNT; k++)
                moments->obs_se[(size_t)i * AIM_OBS_COUNT + k] =
                    in && mmom.obs_se ? mmom.obs_se[(size_t)i * AIM_OBS_COUNT + k] : NAN;
            /* the matrix method writes the hierarchy's words (matrix_tracked_words) */
            for (int k = 0; k < moments->count; k++)
                moments->values[(size_t)i * moments->count + k] =
                    in && k < mmom.count && !strcmp(moments->names[k], mmom.names[k])
                        ? (branch < 0 && aim_fold_word_odd(moments->names[k]) ? -1 : 1) *
                              mmom.values[(size_t)i * mmom.count + k]
                        : NAN;
            if (moments->trunc)
                moments->trunc[2 * (size_t)i] = moments->trunc[2 * (size_t)i + 1] = NAN;
        }
    }
    report->handover_order = moments ? (run->words < cfg->order ? run->words : cfg->order) : 0;
    kept_matrix_clear(&own);
    aim_ode_stats_append(report, &mrep, "matrix limit process (hand-over)");
    if (mcfg.fold != AIM_FOLD_NONE)
        snprintf(report->handover_fold, sizeof report->handover_fold,
                 "its replicas folded by the sign of their final %s (output.fold = %s), then "
                 "put on the hierarchy's branch (%s %s at tau = %g)",
                 aim_fold_what(&mcfg), mcfg.fold == AIM_FOLD_MEAN ? "mean" : "overlap",
                 aim_fold_what(&mcfg), branch < 0 ? "negative" : "positive",
                 tau[cut > 0 ? cut - 1 : 0]);
    report->handed_over = 1;
    report->handover = tau[cut];
    report->status = mrep.status;
    report->stop = mrep.stop;
    report->tau = mrep.tau;
    report->reached = mrep.reached;
    snprintf(report->message, sizeof report->message, "%s", mrep.message);
    if (isnan(report->tau_wr))
        report->tau_wr = aim_trajectory_recovery_time(report->reached, tau,
                                                      obs + AIM_OBS_OVERLAP, AIM_OBS_COUNT,
                                                      cfg->recovery_threshold);
}

/* Where the hierarchy failed as a truncation (not as SGD itself would),
 * and hierarchy.beyond asks for the hand-over. */
static int truncation_failed(const aim_config *cfg, const aim_ode_report *report)
{
    return aim_model_ops_of(cfg)->hierarchy && cfg->beyond == AIM_BEYOND_MATRIX &&
           report->status == AIM_ODE_BLOWUP &&
           (report->stop == AIM_STOP_TRUNCATION || report->stop == AIM_STOP_INVALID ||
            report->stop == AIM_STOP_SOLVER);
}

aim_ode_status aim_trajectory_run(const aim_config *cfg, int d,
                                  const double *tau, double *obs,
                                  aim_ode_report *report)
{
    return aim_trajectory_run_full(cfg, d, tau, NULL, obs, NULL, report);
}

aim_ode_status aim_trajectory_run_full(const aim_config *cfg, int d,
                                       const double *tau, const aim_measured_start *start,
                                       double *obs, aim_trajectory_moments *moments,
                                       aim_ode_report *report)
{
    return aim_trajectory_run_reusing(cfg, d, tau, start, obs, moments, report, NULL);
}

/* Whether row i of the order-M run (observables a) fails its truncation
 * error estimate whatever the runs' numerical resolution turns out to be
 * (the kernel errors are known only when the runs end): order M - 1 did
 * not reach it, or the last step, from order M - 1 to M, is above
 * hierarchy.tol, which every kind of estimate is at least
 * (aim_mconv_estimate; with an infinite resolution the estimate is that
 * step, computed as truncation_estimate computes it, and NaN where any
 * step is). */
static int surely_cut(const aim_config *cfg, const double *a, const lower_set *ls, int i)
{
    int reached = 0;
    while (reached < ls->runs && i < ls->rep[reached].reached)
        reached++;
    if (reached == 0)
        return 1;
    double e[2];
    row_estimate(a, ls->low, reached, (size_t)i, INFINITY, e);
    return e[0] > cfg->tol || e[1] > cfg->tol;
}

/* A hierarchy run of order M >= 3 with its truncation error estimate: the
 * lower orders first, then order M a grid point at a time. When no one
 * wants order M's rows past the estimate's cut (stop_early: hierarchy.tol
 * > 0 and no later order of reuse takes this run as its order M - 1),
 * order M stops at the first row the estimate surely cuts, instead of
 * integrating on into states past its truncation's validity, where a
 * large untied system can take CVODE minutes per grid point; the rows the
 * estimate keeps are the same. Otherwise, and when raw is not NULL, order
 * M's observables and report before the estimate cuts them into raw,
 * raw_report (raw_report->status AIM_ODE_FAILED: not made). */
static void run_with_estimate(const aim_config *cfg, int d, const double *tau,
                              const aim_measured_start *start, aim_trajectory_reuse *reuse,
                              int stop_early, double *obs, aim_trajectory_moments *moments,
                              aim_ode_report *report, double *raw, aim_ode_report *raw_report)
{
    const int points = cfg->points;
    lower_set ls;
    aim_ode_report lower = {.status = AIM_ODE_OK}; /* the lower runs' counters, failure */
    model_run r;
    double *scratch = malloc(sizeof *scratch * (size_t)points * AIM_OBS_COUNT);
    memset(&ls, 0, sizeof ls);
    int failed = model_run_begin(&r, cfg, d, tau, start, report) != 0;
    if (!failed) {
        report->kernel_points = aim_gauss_points(aim_model_engine(r.m));
        failed = lower_begin(&ls, cfg, d, tau, start, coarse_points(cfg, report), reuse,
                             &lower) != 0;
        if (!scratch) {
            snprintf(lower.message, sizeof lower.message, "out of memory");
            failed = 1;
        }
    }
    progress_clock clock = progress_start();
    for (int i = 1; !failed && i < points; i++) {
        double *row = obs + (size_t)i * AIM_OBS_COUNT;
        lower_advance(&ls, i);
        if (aim_ode_advance(r.ode, i) != AIM_ODE_OK || report->reached <= i)
            break;
        if (stop_early && model_run_row(&r, i, scratch, row) == 0 &&
            lower_row(&ls, i, scratch) == 0 && surely_cut(cfg, row, &ls, i))
            break;
        progress_row(&clock, cfg, tau, i);
    }
    /* kept for a later order's estimate, the lower runs go to their own
     * ends, as they would by themselves */
    if (!failed && !stop_early)
        lower_advance(&ls, points - 1);
    free(scratch);
    model_run_end(&r, cfg, tau, obs, moments, 1, MODEL_RUN, report);
    const int runs = lower_end(&ls, tau, d, start, reuse, !stop_early, failed, &lower);
    raw_report->status = AIM_ODE_FAILED;
    if (report->status != AIM_ODE_FAILED) {
        for (int k = 0; k < lower.integrations && report->integrations < AIM_ODE_MAX_INTEGRATIONS;
             k++)
            report->stats[report->integrations++] = lower.stats[k];
        if (raw && !stop_early && !failed && runs >= 0) {
            memcpy(raw, obs, sizeof *raw * (size_t)points * AIM_OBS_COUNT);
            *raw_report = *report;
        }
        if (runs < 0)
            snprintf(report->message, sizeof report->message, "%s", lower.message);
        truncation_estimate(cfg, tau, obs, moments, report, ls.low, ls.rep, runs);
    }
    lower_free(&ls);
}

aim_ode_status aim_trajectory_run_reusing(const aim_config *cfg, int d, const double *tau,
                                          const aim_measured_start *start, double *obs,
                                          aim_trajectory_moments *moments,
                                          aim_ode_report *report, aim_trajectory_reuse *reuse)
{
    memset(report, 0, sizeof *report);
    report->status = AIM_ODE_FAILED;
    report->tau_wr = report->tau_wr_se = report->noise_share = report->kernel_error = NAN;
    if (moments)
        memset(moments, 0, sizeof *moments);
    if (cfg->method == AIM_METHOD_MATRIX)
        return run_matrix(cfg, d, tau, obs, moments, report);
    const int hierarchy = aim_model_ops_of(cfg)->hierarchy;
    if (!hierarchy || cfg->order < 3) {
        /* no estimate; a hierarchy's run is a later order's order M - 1 */
        run_model(cfg, d, tau, start, obs, moments, 1, MODEL_RUN, report);
        if (hierarchy && reuse && report->status != AIM_ODE_FAILED)
            reuse_keep(reuse, cfg, d, tau, start, obs, report);
    } else {
        /* this run is the next order's estimate when reuse is to run orders
         * above it: then its rows past its own cut are wanted */
        const int later = reuse && (reuse->highest == 0 || reuse->highest > cfg->order);
        const size_t n = (size_t)cfg->points * AIM_OBS_COUNT;
        double *raw = reuse ? malloc(sizeof *raw * n) : NULL;
        aim_ode_report raw_report;
        run_with_estimate(cfg, d, tau, start, reuse, cfg->tol > 0.0 && !later, obs, moments,
                          report, raw, &raw_report);
        if (raw && raw_report.status != AIM_ODE_FAILED)
            reuse_keep(reuse, cfg, d, tau, start, raw, &raw_report);
        free(raw);
    }
    if (truncation_failed(cfg, report))
        hand_over(cfg, d, tau, obs, moments, reuse, report);
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
