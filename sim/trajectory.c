#include "trajectory.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "direct.h"
#include "mlimit.h"
#include "tied.h"
#include "untied.h"

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

static void tied_margins(void *ctx, const double *y, double *g) { aim_tied_margins(ctx, y, g); }

static const char *tied_margin_text(void *ctx, int k) { return aim_tied_margin_text(ctx, k); }

static aim_ode_stop tied_failure(void *ctx)
{
    return aim_tied_left_valid(ctx) ? AIM_STOP_INVALID : AIM_STOP_NONE;
}

static double tied_overlap(void *ctx, const double *y) { return aim_tied_overlap(ctx, y); }

static int tied_terms(void *ctx, const double *y, double *gradient, double *noise,
                      double *decay)
{
    return aim_tied_terms(ctx, y, gradient, noise, decay);
}

static int direct_observables(void *ctx, const double *y, double *obs)
{
    return aim_direct_observables(ctx, y, obs);
}

static int tied_observables(void *ctx, const double *y, double *obs)
{
    return aim_tied_observables(ctx, y, obs);
}

static int untied_rhs(void *ctx, const double *y, double *dy)
{
    return aim_untied_rhs(ctx, y, dy);
}

static const char *untied_error(void *ctx) { return aim_untied_error(ctx); }

static void untied_margins(void *ctx, const double *y, double *g)
{
    aim_untied_margins(ctx, y, g);
}

static const char *untied_margin_text(void *ctx, int k)
{
    return aim_untied_margin_text(ctx, k);
}

static aim_ode_stop untied_failure(void *ctx)
{
    const int why = aim_untied_left_valid(ctx);
    return why == AIM_UNTIED_RUNAWAY ? AIM_STOP_DIVERGED : why ? AIM_STOP_INVALID : AIM_STOP_NONE;
}

static double untied_overlap(void *ctx, const double *y) { return aim_untied_overlap(ctx, y); }

static int untied_terms(void *ctx, const double *y, double *gradient, double *noise,
                        double *decay)
{
    return aim_untied_terms(ctx, y, gradient, noise, decay);
}

static double direct_overlap(void *ctx, const double *y)
{
    aim_overlaps q;
    aim_direct_overlaps(ctx, y, &q);
    return aim_overlaps_teacher_overlap(&q);
}

static void direct_margins(void *ctx, const double *y, double *g)
{
    aim_direct_margins(ctx, y, g);
}

static const char *direct_margin_text(void *ctx, int k)
{
    (void)ctx;
    return aim_direct_margin_text(k);
}

static int direct_terms(void *ctx, const double *y, double *gradient, double *noise,
                        double *decay)
{
    return aim_direct_terms(ctx, y, gradient, noise, decay);
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
    else if (report->stop == AIM_STOP_GRADIENT)
        snprintf(report->message, sizeof report->message,
                 "the order-%d hierarchy stopped at tau = %.6g: %s; the truncation's "
                 "closure error (raise hierarchy.order, or shorten training.horizon), or a "
                 "level the dynamics reaches (raise ode.blowup)",
                 cfg->order, report->tau, report->reason);
}

static int untied_observables(void *ctx, const double *y, double *obs)
{
    return aim_untied_observables(ctx, y, obs);
}

static void direct_release(void *ctx) { aim_direct_free(ctx); }
static void tied_release(void *ctx) { aim_tied_free(ctx); }
static void untied_release(void *ctx) { aim_untied_free(ctx); }

/* The configured model at its exact large-d start, through one interface
 * (the same d for a raw mean as the runs use). */
typedef struct {
    void *model;
    int size;
    int (*rhs)(void *, const double *, double *);
    int (*observe)(void *, const double *, double *);
    const char *(*error)(void *);
    void (*release)(void *);
} start_model;

/* y0 is malloc'ed. Returns 0, or -1 with the reason in err. */
static int start_model_create(const aim_config *cfg, int d, start_model *sm, double **y0,
                              char *err, size_t n)
{
    memset(sm, 0, sizeof *sm);
    *y0 = NULL;
    char why[256] = "out of memory";
    const double d_raw = cfg->ode_d > 0 ? cfg->ode_d : (double)d;
    if (cfg->decomposition == AIM_TIED) {
        aim_tied *m = aim_tied_create(cfg, cfg->rule, why, sizeof why);
        if (m)
            *sm = (start_model){m, aim_tied_size(m), tied_rhs, tied_observables, tied_error,
                                tied_release};
    } else if (cfg->decomposition == AIM_UNTIED) {
        aim_untied *m = aim_untied_create(cfg, d_raw, cfg->rule, why, sizeof why);
        if (m)
            *sm = (start_model){m, aim_untied_size(m), untied_rhs, untied_observables,
                                untied_error, untied_release};
        if (m && cfg->centring == AIM_RAW && cfg->mean_mode == AIM_MEAN_ADIABATIC &&
            aim_untied_settle(m, aim_untied_start_mean(m))) {
            snprintf(why, sizeof why, "%s", aim_untied_error(m));
            aim_untied_free(m);
            sm->model = NULL;
        }
    } else {
        aim_direct *m =
            aim_direct_create(cfg, cfg->centring == AIM_RAW ? d_raw : 0.0, cfg->rule);
        if (m)
            *sm = (start_model){m, AIM_DIRECT_SIZE, direct_rhs, direct_observables,
                                direct_error, direct_release};
    }
    if (sm->model)
        *y0 = malloc(sizeof(double) * (size_t)sm->size);
    if (!sm->model || !*y0) {
        snprintf(err, n, "could not set up the model: %s", why);
        if (sm->model)
            sm->release(sm->model);
        return -1;
    }
    if (cfg->decomposition == AIM_TIED)
        aim_tied_initial(sm->model, *y0);
    else if (cfg->decomposition == AIM_UNTIED)
        aim_untied_initial(sm->model, *y0);
    else
        aim_direct_initial(sm->model, *y0);
    return 0;
}

/* A central difference of the overlap along the right-hand side (the
 * overlap is a smooth function of the state; the step keeps the state
 * change at 1e-6 of its size, so the O(h^2) error is far below the
 * tolerance of the drift test). */
int aim_trajectory_start_drift(const aim_config *cfg, int d, double obs0[AIM_OBS_COUNT],
                               double *drift, char *err, size_t n)
{
    start_model sm;
    double *y0;
    if (start_model_create(cfg, d, &sm, &y0, err, n))
        return -1;
    const int size = sm.size;
    double *dy = malloc(sizeof(double) * 2 * (size_t)size);
    int rc = dy ? 0 : -1;
    if (rc)
        snprintf(err, n, "out of memory");
    double norm_y = 0.0, norm_dy = 0.0, plus[AIM_OBS_COUNT], minus[AIM_OBS_COUNT];
    if (!rc && (sm.observe(sm.model, y0, obs0) || sm.rhs(sm.model, y0, dy)))
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
        rc = sm.observe(sm.model, y, s ? minus : plus) ? 1 : 0;
    }
    if (rc > 0)
        snprintf(err, n, "the right-hand side at the start: %s", sm.error(sm.model));
    else if (rc == 0)
        *drift = h > 0.0 ? (plus[AIM_OBS_OVERLAP] - minus[AIM_OBS_OVERLAP]) / (2.0 * h) : 0.0;
    free(dy);
    free(y0);
    sm.release(sm.model);
    return rc ? -1 : 0;
}

/* Observables at every grid point the integration reached, NaN beyond.
 * Returns 0 (a row whose observables cannot be computed ends the run
 * there, as a stop: the rows before it are kept), or -1 with the report
 * turned into a failure when not even the start's can. */
static int fill_observables(int points, const double *tau, const double *states, int n,
                            double *obs, aim_ode_report *report, void *model,
                            int (*observe)(void *, const double *, double *),
                            const char *(*error)(void *))
{
    for (int i = 0; i < points; i++) {
        double *row = obs + (size_t)i * AIM_OBS_COUNT;
        if (i < report->reached && observe(model, states + (size_t)i * n, row)) {
            snprintf(report->reason, sizeof report->reason, "the observables: %s",
                     error(model));
            snprintf(report->message, sizeof report->message, "observables at tau = %g: %s",
                     tau[i], error(model));
            report->status = i > 0 ? AIM_ODE_BLOWUP : AIM_ODE_FAILED;
            report->stop = AIM_STOP_NONFINITE;
            report->reached = i;
            report->tau = tau[i];
            if (i == 0)
                return -1;
        }
        if (i >= report->reached)
            for (int k = 0; k < AIM_OBS_COUNT; k++)
                row[k] = NAN;
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
    free(m->obs_se);
    free(m->trunc);
    memset(m, 0, sizeof *m);
}

/* Copies the tracked moments of states (points x n) into moments. */
static int keep_moments(aim_trajectory_moments *moments, int points, int n, int reached,
                        const double *states, const char *(*name)(void *, int), void *model,
                        aim_ode_report *report)
{
    memset(moments, 0, sizeof *moments);
    moments->names = calloc((size_t)n, sizeof *moments->names);
    moments->values = malloc(sizeof(double) * (size_t)points * n);
    int ok = moments->names && moments->values;
    moments->count = n;
    for (int k = 0; ok && k < n; k++)
        ok = (moments->names[k] = strdup(name(model, k))) != NULL;
    if (!ok) {
        aim_trajectory_moments_free(moments);
        report->status = AIM_ODE_FAILED;
        snprintf(report->message, sizeof report->message, "out of memory");
        return -1;
    }
    for (int i = 0; i < points; i++)
        for (int k = 0; k < n; k++)
            moments->values[(size_t)i * n + k] =
                i < reached ? states[(size_t)i * n + k] : NAN;
    return 0;
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

/* estimate: the engine's kernel error wanted in the report (not for the
 * truncation estimate's second run). */
static aim_ode_status run_tied(const aim_config *cfg, const double *tau,
                               const double *start, double *obs,
                               aim_trajectory_moments *moments, int estimate,
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
                              .margins = aim_tied_margin_count(model),
                              .margin = tied_margins,
                              .margin_text = tied_margin_text,
                              .failure = tied_failure,
                              .overlap = tied_overlap,
                              .terms = tied_terms};
    aim_ode_integrate(cfg, &om, y0, tau, points, states, report);
    engine_accuracy(aim_tied_gauss(model), estimate, report);
    /* A truncated hierarchy can leave the moments of real matrices (its
     * closure error grows with time): the rest is not a prediction. */
    hierarchy_stop(cfg, report);
    if (fill_observables(points, tau, states, n, obs, report, model, tied_observables,
                         tied_error))
        goto done;
    if (moments)
        keep_moments(moments, points, n, report->reached, states, aim_tied_state_name,
                     model, report);
done:
    free(states);
    free(y0);
    aim_tied_free(model);
    return report->status;
}

static int untied_fast_rhs(void *ctx, const double *y, double *dy)
{
    return aim_untied_fast_rate(ctx, y[0], dy);
}

static const char *untied_fast_name(void *ctx, int i)
{
    (void)ctx;
    (void)i;
    return "mean";
}

/* Adiabatic observables: the composite of the fast phase (the mean on
 * t = d tau with the moments frozen) and the slow one (the moments on
 * tau with the mean on the critical manifold m*(q)),
 *     mean(tau) = m_fast(d tau) + m*(q(tau)) - m*(q(0)),
 * which is uniformly valid to leading order (theory/untied.md sec. 3). */
static int untied_composite(const aim_config *cfg, aim_untied *model, double d,
                            const double *tau, const double *states, int n, double mean0,
                            double *obs, aim_ode_report *report)
{
    const int points = cfg->points;
    double *t = malloc(sizeof(double) * (size_t)points);
    double *fast = malloc(sizeof(double) * (size_t)points);
    int rc = -1;
    double root0 = NAN;
    if (!t || !fast) {
        snprintf(report->message, sizeof report->message, "out of memory");
        goto done;
    }
    for (int i = 0; i < points; i++)
        t[i] = d * tau[i];
    const aim_ode_model fm = {.size = 1,
                              .ctx = model,
                              .rhs = untied_fast_rhs,
                              .error = untied_error,
                              .state_name = untied_fast_name};
    aim_ode_report frep;
    if (aim_ode_integrate(cfg, &fm, &mean0, t, points, fast, &frep) != AIM_ODE_OK) {
        snprintf(report->message, sizeof report->message, "fast phase of the mean: %.700s",
                 frep.message);
        goto done;
    }
    if (aim_untied_settle(model, mean0)) {
        snprintf(report->message, sizeof report->message, "%s", aim_untied_error(model));
        goto done;
    }
    for (int i = 0; i < points; i++) {
        double *row = obs + (size_t)i * AIM_OBS_COUNT;
        if (i >= report->reached) {
            for (int k = 0; k < AIM_OBS_COUNT; k++)
                row[k] = NAN;
            continue;
        }
        double root;
        if (aim_untied_mean(model, states + (size_t)i * n, &root) ||
            aim_untied_observables_with_mean(
                model, states + (size_t)i * n,
                fast[i] + root - (i == 0 ? root : root0), row)) {
            snprintf(report->message, sizeof report->message, "observables at tau = %g: %s",
                     tau[i], aim_untied_error(model));
            goto done;
        }
        if (i == 0)
            root0 = root;
    }
    rc = 0;
done:
    if (rc)
        report->status = AIM_ODE_FAILED;
    free(t);
    free(fast);
    return rc;
}

static aim_ode_status run_untied(const aim_config *cfg, int d, const double *tau,
                                 const double *start, double *obs,
                                 aim_trajectory_moments *moments, int estimate,
                                 aim_ode_report *report)
{
    const int points = cfg->points;
    const double d_out = cfg->ode_d > 0 ? cfg->ode_d : (double)d;
    const int adiabatic = cfg->centring == AIM_RAW && cfg->mean_mode == AIM_MEAN_ADIABATIC;
    char err[256];
    aim_untied *model = aim_untied_create(cfg, d_out, cfg->rule, err, sizeof err);
    if (!model) {
        snprintf(report->message, sizeof report->message,
                 "could not set up the untied hierarchy: %s", err);
        return report->status;
    }
    const int n = aim_untied_size(model);
    double *states = malloc(sizeof(double) * (size_t)points * n);
    double *y0 = malloc(sizeof(double) * (size_t)n);
    if (!states || !y0) {
        snprintf(report->message, sizeof report->message, "out of memory");
        goto done;
    }
    double mean0 = aim_untied_start_mean(model);
    if (start) {
        /* the seed's mean Tr S/sqrt d, from its m(K) = Tr S/d */
        const int wk = aim_wordset_find(aim_hierarchy_words(aim_untied_hierarchy(model)), "K");
        mean0 = cfg->centring == AIM_RAW ? start[wk] * sqrt((double)d) : 0.0;
        aim_untied_set_start(model, start, mean0);
    }
    char warning[sizeof report->warning];
    aim_untied_balance(model, warning, sizeof warning);
    aim_untied_initial(model, y0);
    if (adiabatic && aim_untied_settle(model, mean0)) {
        snprintf(report->message, sizeof report->message, "%s", aim_untied_error(model));
        goto done;
    }
    if (aim_untied_check(model, y0)) {
        snprintf(report->message, sizeof report->message,
                 "the start moments are not those of real U, V: %s", aim_untied_error(model));
        goto done;
    }
    const aim_ode_model om = {.size = n,
                              .ctx = model,
                              .rhs = untied_rhs,
                              .error = untied_error,
                              .state_name = aim_untied_state_name,
                              .monitored = aim_untied_order_parameters(model),
                              .margins = aim_untied_margin_count(model),
                              .margin = untied_margins,
                              .margin_text = untied_margin_text,
                              .failure = untied_failure,
                              .overlap = untied_overlap,
                              .terms = untied_terms};
    aim_ode_integrate(cfg, &om, y0, tau, points, states, report);
    engine_accuracy(aim_untied_gauss(model), estimate, report);
    report->start_mean = mean0;
    memcpy(report->warning, warning, sizeof warning);
    if (report->stop == AIM_STOP_DIVERGED)
        snprintf(report->message, sizeof report->message,
                 "blow-up of the student mean by tau = %.6g: %s", report->tau, report->reason);
    hierarchy_stop(cfg, report);
    if (adiabatic) {
        if (untied_composite(cfg, model, d_out, tau, states, n, mean0, obs, report))
            goto done;
    } else if (fill_observables(points, tau, states, n, obs, report, model,
                                untied_observables, untied_error))
        goto done;
    if (moments) {
        /* raw centring: the output's m(K) = mean / sqrt d at the d of the
         * runs, as SGD measures it (the adiabatic state holds its limit 0) */
        const int slot = aim_untied_k_slot(model);
        for (int i = 0; cfg->centring == AIM_RAW && i < report->reached; i++)
            states[(size_t)i * n + slot] =
                obs[(size_t)i * AIM_OBS_COUNT + AIM_OBS_MEAN] / sqrt(d_out);
        keep_moments(moments, points, n, report->reached, states, aim_untied_moment_name,
                     model, report);
    }
done:
    free(states);
    free(y0);
    aim_untied_free(model);
    return report->status;
}

/* q: measured start (student and teacher), NULL for the exact one. */
static aim_ode_status run_direct(const aim_config *cfg, int d, const double *tau,
                                 const aim_overlaps *q, double *obs, aim_ode_report *report)
{
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
    if (q)
        aim_direct_state_from(model, q, y0);
    else
        aim_direct_initial(model, y0);
    const aim_ode_model om = {.size = n,
                              .ctx = model,
                              .rhs = direct_rhs,
                              .error = direct_error,
                              .state_name = aim_direct_state_name,
                              .margins = AIM_DIRECT_MARGINS,
                              .margin = direct_margins,
                              .margin_text = direct_margin_text,
                              .overlap = direct_overlap,
                              .terms = direct_terms};
    aim_ode_integrate(cfg, &om, y0, tau, points, states, report);
    engine_accuracy(aim_direct_gauss(model), 1, report);
    fill_observables(points, tau, states, n, obs, report, model, direct_observables,
                     direct_error);
done:
    free(states);
    aim_direct_free(model);
    return report->status;
}

/* The tracked words of cfg's hierarchy at order cfg->order (every word of
 * length 1..M with a letter the student moves, in word-set order), as the
 * truncated hierarchy names its state: the matrix method writes the same
 * columns. ws is created here; *tracked is malloc'ed. */
static aim_wordset *matrix_tracked_words(const aim_config *cfg, int **tracked, int *count)
{
    *tracked = NULL;
    *count = 0;
    if (cfg->decomposition == AIM_DIRECT)
        return NULL;
    aim_alphabet ab = {"ST", "ST"};
    if (cfg->decomposition == AIM_UNTIED)
        aim_untied_alphabet(cfg, &ab);
    const char *moving = cfg->decomposition == AIM_TIED ? "S" : "ABKk";
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

/* ode.method = matrix: the limit process at dimension matrix.d, replicas
 * averaged (theory/matrix.md). A replica that blows up ends the run at the
 * last point every replica reached (a mean over survivors would be
 * biased). */
static aim_ode_status run_matrix(const aim_config *cfg, int d, const double *tau, double *obs,
                                 aim_trajectory_moments *moments, aim_ode_report *report)
{
    const double d_raw = cfg->ode_d > 0 ? cfg->ode_d : (double)d;
    const int points = cfg->points, R = cfg->replicas, D = cfg->matrix_d;
    const double h0 = cfg->matrix_dtau > 0.0 ? cfg->matrix_dtau : cfg->horizon / 512.0;
    int *tracked = NULL, count = 0;
    aim_wordset *ws = matrix_tracked_words(cfg, &tracked, &count);
    const int nw = ws ? aim_wordset_count(ws) : 0;
    const int width = AIM_OBS_COUNT + count;
    double *acc = calloc((size_t)points * 2 * width, sizeof *acc);
    double *all = malloc(sizeof *all * ((size_t)nw + 1));
    double *row = malloc(sizeof *row * (size_t)width);
    int reached = points, crossed = 0;
    double twr_sum = 0.0, twr_sq = 0.0;
    if ((cfg->decomposition != AIM_DIRECT && !ws) || !acc || !all || !row) {
        snprintf(report->message, sizeof report->message, "out of memory");
        goto done;
    }
    for (int r = 0; r < R; r++) {
        char err[256];
        aim_mlimit *m =
            aim_mlimit_create(cfg, D, d_raw, cfg->seed + (uint64_t)r, err, sizeof err);
        if (!m) {
            snprintf(report->message, sizeof report->message,
                     "could not set up the matrix limit process: %s", err);
            goto done;
        }
        int i = 0, rc = 0;
        for (; i < points; i++) {
            if (i > 0 && (rc = aim_mlimit_advance(m, tau[i] - tau[i - 1], h0)) != 0)
                break;
            if (aim_mlimit_observables(m, row) ||
                (ws && aim_mlimit_words(m, ws, cfg->order, all))) {
                rc = -1;
                break;
            }
            for (int k = 0; k < count; k++)
                row[AIM_OBS_COUNT + k] = all[tracked[k]];
            accumulate(acc + (size_t)i * 2 * width, row, width);
        }
        const double twr = aim_mlimit_recovery_time(m);
        crossed += !isnan(twr);
        twr_sum += isnan(twr) ? 0.0 : twr;
        twr_sq += isnan(twr) ? 0.0 : twr * twr;
        if (rc) {
            snprintf(report->message, sizeof report->message, "replica %d (seed %llu): %s",
                     r + 1, (unsigned long long)(cfg->seed + (uint64_t)r),
                     rc < 0 && !aim_mlimit_error(m)[0] ? "out of memory"
                                                       : aim_mlimit_error(m));
            report->tau = aim_mlimit_tau(m);
            aim_mlimit_free(m);
            if (rc < 0)
                goto done;
            report->status = AIM_ODE_BLOWUP;
            if (i < reached)
                reached = i;
            break;
        }
        aim_mlimit_free(m);
        fprintf(stderr, "aimdyn: matrix limit process: replica %d/%d done (D = %d)\n", r + 1,
                R, D);
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
    free(all);
    free(row);
    return report->status;
}

static aim_ode_status run_hierarchy(const aim_config *cfg, int d, const double *tau,
                                    const double *start, double *obs,
                                    aim_trajectory_moments *moments, int estimate,
                                    aim_ode_report *report)
{
    return cfg->decomposition == AIM_TIED
               ? run_tied(cfg, tau, start, obs, moments, estimate, report)
               : run_untied(cfg, d, tau, start, obs, moments, estimate, report);
}

/* The truncation error estimate (theory/matrix.md sec. 6): the same run at
 * order M - 1, whose words are the first of the order-M word set (words
 * are ordered by length), so the same start serves. Where successive
 * orders alternate about the limit, as they do before the truncation
 * breaks down, |x_M - x_(M-1)| bounds the error of x_M; where they stop
 * alternating it grows, and the run is cut at the first grid point whose
 * estimate passes hierarchy.tol (0: never). */
static void truncation_estimate(const aim_config *cfg, int d, const double *tau,
                                const double *start, double *obs,
                                aim_trajectory_moments *moments, aim_ode_report *report)
{
    const int points = cfg->points;
    aim_config lower = *cfg;
    lower.order = cfg->order - 1;
    double *low = malloc(sizeof *low * (size_t)points * AIM_OBS_COUNT);
    double *est = malloc(sizeof *est * (size_t)points * 2);
    aim_ode_report rep;
    if (!low || !est ||
        run_hierarchy(&lower, d, tau, start, low, NULL, 0, &rep) == AIM_ODE_FAILED) {
        free(low);
        free(est);
        report->status = AIM_ODE_FAILED;
        snprintf(report->message, sizeof report->message,
                 "the order-%d run for the truncation error estimate failed: %.600s",
                 lower.order, low && est ? rep.message : "out of memory");
        return;
    }
    int cut = -1;
    for (int i = 0; i < report->reached; i++) {
        const double *a = obs + (size_t)i * AIM_OBS_COUNT, *b = low + (size_t)i * AIM_OBS_COUNT;
        double *e = est + 2 * (size_t)i;
        if (i >= rep.reached) {
            e[0] = e[1] = NAN;
            continue;
        }
        e[0] = fabs(a[AIM_OBS_OVERLAP] - b[AIM_OBS_OVERLAP]);
        e[1] = fabs(a[AIM_OBS_RISK] - b[AIM_OBS_RISK]) / fabs(a[AIM_OBS_RISK]);
        if (cut < 0 && cfg->tol > 0.0 && (e[0] > cfg->tol || e[1] > cfg->tol))
            cut = i;
    }
    if (cut >= 0) {
        const double *e = est + 2 * (size_t)cut;
        report->status = AIM_ODE_BLOWUP;
        report->stop = AIM_STOP_TRUNCATION;
        report->tau = tau[cut];
        snprintf(report->reason, sizeof report->reason,
                 "the truncation error estimate (order %d against %d) is %.3g in the overlap "
                 "and %.3g in the relative risk, above hierarchy.tol = %g",
                 cfg->order, lower.order, e[0], e[1], cfg->tol);
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
        moments->trunc_stop = rep.status == AIM_ODE_OK ? NAN : rep.tau;
    } else {
        free(est);
    }
    free(low);
}

void aim_trajectory_kernel_line(FILE *f, const aim_config *cfg, int points, double error)
{
    if (cfg->method == AIM_METHOD_MATRIX)
        return;
    if (points == 0) {
        fprintf(f, "# kernels: Gauss-Hermite product rules (ode.quad_nodes; exact for Hermite "
                   "series), no quasi-random error\n");
        return;
    }
    fprintf(f, "# kernels: quasi-random rule, %d points and their antithetic images; estimated "
               "relative kernel error %.2g at the start (spread of 8 randomly shifted copies of "
               "the rule)",
            points, error);
    if (cfg->kernel_tol > 0.0)
        fprintf(f, "; points chosen for ode.kernel_tol = %g%s", cfg->kernel_tol,
                error > cfg->kernel_tol ? ", not reached below the cap on the "
                                                         "point set (2^25 numbers)"
                                                       : "");
    fputc('\n', f);
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
    report->tau_wr = report->tau_wr_se = report->noise_share = report->kernel_error = NAN;
    if (moments)
        memset(moments, 0, sizeof *moments);
    if (cfg->method == AIM_METHOD_MATRIX)
        return run_matrix(cfg, d, tau, obs, moments, report);
    if (cfg->decomposition == AIM_DIRECT)
        return run_direct(cfg, d, tau, NULL, obs, report);
    run_hierarchy(cfg, d, tau, start, obs, moments, 1, report);
    if (report->status != AIM_ODE_FAILED && cfg->order >= 3)
        truncation_estimate(cfg, d, tau, start, obs, moments, report);
    return report->status;
}

aim_ode_status aim_trajectory_run_direct_from(const aim_config *cfg, int d,
                                              const double *tau, const aim_overlaps *q,
                                              double *obs, aim_ode_report *report)
{
    memset(report, 0, sizeof *report);
    report->status = AIM_ODE_FAILED;
    report->tau_wr = report->tau_wr_se = report->noise_share = NAN;
    return run_direct(cfg, d, tau, q, obs, report);
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
