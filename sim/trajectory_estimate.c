/* A hierarchy run of order M >= 3 with its truncation error estimate
 * (theory/matrix.md sec. 6): the lower orders run in step with it (or
 * taken from a reuse), the steps between orders per grid point, and the
 * cut where the estimate passes hierarchy.tol or the orders do not
 * converge. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gauss.h"
#include "mconv.h"
#include "model.h"
#include "trajectory_internal.h"

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
    aim_trajectory_model_run run[LOWER_ORDERS];
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
        const aim_trajectory_kept_run *kept =
            obs ? aim_trajectory_i_reuse_find(reuse, &ls->cfg[k], d, tau, start) : NULL;
        if (kept) {
            memcpy(obs, kept->obs, sizeof *obs * (size_t)points * AIM_OBS_COUNT);
            ls->rep[k] = kept->report;
            reuse->reused++;
            continue;
        }
        ls->live[k] = 1;
        if (!obs || aim_trajectory_i_model_run_begin(&ls->run[k], &ls->cfg[k], d, tau, start,
                                                     &ls->rep[k]) != 0) {
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
            aim_trajectory_i_model_run_row(&ls->run[k], i, scratch,
                                           ls->low[k] + (size_t)i * AIM_OBS_COUNT))
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
        aim_trajectory_i_model_run_end(&ls->run[k], &ls->cfg[k], tau, ls->low[k], NULL, ls->coarse,
                                       AIM_TRAJECTORY_COMPANION, rep);
        if (failed)
            continue;
        if (rep->status == AIM_ODE_FAILED) {
            lower_failed(report, ls->cfg[k].order, rep->message);
            failed = 1;
        } else if (keep) {
            aim_trajectory_i_reuse_keep(reuse, &ls->cfg[k], d, tau, start, ls->low[k], rep);
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
void aim_trajectory_i_run_with_estimate(const aim_config *cfg, int d, const double *tau,
                                        const aim_measured_start *start,
                                        aim_trajectory_reuse *reuse, int stop_early, double *obs,
                                        aim_trajectory_moments *moments, aim_ode_report *report,
                                        double *raw, aim_ode_report *raw_report)
{
    const int points = cfg->points;
    lower_set ls;
    aim_ode_report lower = {.status = AIM_ODE_OK}; /* the lower runs' counters, failure */
    aim_trajectory_model_run r;
    double *scratch = malloc(sizeof *scratch * (size_t)points * AIM_OBS_COUNT);
    memset(&ls, 0, sizeof ls);
    int failed = aim_trajectory_i_model_run_begin(&r, cfg, d, tau, start, report) != 0;
    if (!failed) {
        report->kernel_points = aim_gauss_points(aim_model_engine(r.m));
        failed = lower_begin(&ls, cfg, d, tau, start, coarse_points(cfg, report), reuse,
                             &lower) != 0;
        if (!scratch) {
            snprintf(lower.message, sizeof lower.message, "out of memory");
            failed = 1;
        }
    }
    void *stage = failed ? NULL : aim_trajectory_i_ode_stage(cfg);
    for (int i = 1; !failed && i < points; i++) {
        double *row = obs + (size_t)i * AIM_OBS_COUNT;
        lower_advance(&ls, i);
        if (aim_ode_advance(r.ode, i) != AIM_ODE_OK || report->reached <= i)
            break;
        if (stop_early && aim_trajectory_i_model_run_row(&r, i, scratch, row) == 0 &&
            lower_row(&ls, i, scratch) == 0 && surely_cut(cfg, row, &ls, i))
            break;
        aim_trajectory_i_stage_update(stage, 0, i, points - 1, i);
    }
    aim_trajectory_i_stage_finished(stage, 0);
    aim_trajectory_i_stage_end(stage);
    /* kept for a later order's estimate, the lower runs go to their own
     * ends, as they would by themselves */
    if (!failed && !stop_early)
        lower_advance(&ls, points - 1);
    free(scratch);
    aim_trajectory_i_model_run_end(&r, cfg, tau, obs, moments, 1, AIM_TRAJECTORY_RUN, report);
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
