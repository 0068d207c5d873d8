/* aimdyn sweep: computing the points still to do, shared among forked
 * workers (pool.h) and among the ranks of an MPI job (ranks.h): a point's
 * limit ODE as `aimdyn ode` integrates it, its outcome classified and
 * written to its file, and the progress as the workers finish points. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "compare.h"
#include "grid.h"
#include "model.h"
#include "progress.h"
#include "ranks.h"
#include "sweep_internal.h"
#include "trajectory.h"

/* The monotonic clock in seconds: a point's and the whole sweep's wall time. */
double aim_sweep_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void set_outcome(point_result *r, const char *status, const char *message)
{
    snprintf(r->status, sizeof r->status, "%s", status);
    snprintf(r->message, sizeof r->message, "%s", message && *message ? message : "-");
    for (char *c = r->message; *c; c++) /* one TSV cell */
        if (*c == '\t' || *c == '\n' || *c == '\r')
            *c = ' ';
}

/* Integrates the point's limit ODE as `aimdyn ode` does and classifies
 * the outcome. */
static void run_point(const aim_config *cfg, point_result *r)
{
    const double t0 = aim_sweep_now();
    const int points = cfg->points;
    *r = (point_result){.tau_wr = NAN, .n_wr = NAN, .tau_end = NAN, .overlap = NAN,
                        .risk = NAN, .kernel_error = NAN};
    double *tau = malloc(sizeof(double) * (size_t)points);
    double *obs = malloc(sizeof(double) * (size_t)points * AIM_OBS_COUNT);
    double *start = NULL;
    const int seeded = aim_model_ops_of(cfg)->hierarchy && cfg->start == AIM_START_SEED;
    aim_ode_report rep;
    if (!tau || !obs) {
        set_outcome(r, "failed", "out of memory");
    } else if (seeded && !(start = aim_compare_seed_start(cfg, cfg->d))) {
        set_outcome(r, "failed", "could not measure the start moments of SGD seed sgd.seed");
    } else {
        aim_grid_fill(cfg, tau);
        aim_ode_status st =
            aim_trajectory_run_full(cfg, cfg->d, tau, start ? &(aim_measured_start){.moments = start} : NULL,
                                    obs, NULL, &rep);
        r->kernel_points = rep.kernel_points;
        r->kernel_error = rep.kernel_error;
        r->integrations = rep.integrations;
        memcpy(r->stats, rep.stats, sizeof r->stats);
        if (st == AIM_ODE_FAILED || rep.reached < 1) {
            set_outcome(r, "failed", rep.message);
        } else {
            const double *last = obs + (size_t)(rep.reached - 1) * AIM_OBS_COUNT;
            r->tau_end = tau[rep.reached - 1];
            r->overlap = last[AIM_OBS_OVERLAP];
            r->risk = last[AIM_OBS_RISK];
            r->tau_wr = rep.tau_wr;
            r->n_wr = r->tau_wr * cfg->d * (double)cfg->d / cfg->eta;
            char warning[sizeof rep.warning + 128] = "";
            if (rep.warning[0])
                snprintf(warning, sizeof warning, "balance condition |tA_k(0) - tB_k(0)| >= "
                         "hierarchy.balance fails for %s", rep.warning);
            set_outcome(r, st == AIM_ODE_BLOWUP    ? "blow-up"
                           : isnan(r->tau_wr) ? "not-by-horizon"
                                              : "recovered",
                        st == AIM_ODE_BLOWUP ? rep.message : warning);
        }
    }
    free(start);
    free(tau);
    free(obs);
    r->seconds = aim_sweep_now() - t0;
}

/* In a worker: computes point p and writes its file. */
static int compute_point(void *ctx, int p)
{
    const sweep *sw = ctx;
    if (p >= sw->npoints) {
        fprintf(stderr, "aimdyn sweep: worker %ld: point %d is not in the sweep\n",
                (long)getpid(), p + 1);
        return -1;
    }
    point_result r;
    run_point(&sw->cfg[p], &r);
    return aim_sweep_write_point(sw, p, &r);
}

static void report_progress(const sweep *sw, int p, int finished)
{
    const point_result *r = &sw->res[p];
    char label[TEXT_LEN], what[1024];
    aim_sweep_point_label(sw, p, label, sizeof label);
    if (!strcmp(r->status, "recovered"))
        snprintf(what, sizeof what, "tau_wr = %.4g", r->tau_wr);
    else if (!strcmp(r->status, "not-by-horizon"))
        snprintf(what, sizeof what, "not recovered by tau = %g", r->tau_end);
    else if (!strcmp(r->status, "blow-up") && isnan(r->tau_wr))
        snprintf(what, sizeof what, "blow-up after tau = %g, not recovered", r->tau_end);
    else if (!strcmp(r->status, "blow-up"))
        snprintf(what, sizeof what, "tau_wr = %.4g, then blow-up after tau = %g", r->tau_wr,
                 r->tau_end);
    else
        snprintf(what, sizeof what, "failed: %s", r->message);
    /* a failed point is a warning (the sweep has no value there), even with
     * --quiet; a result is a note */
    (strcmp(r->status, "failed") ? aim_progress_note : aim_progress_warning)(
        "sweep: %d/%d points (%s): %s (%.2g s)\n", finished, sw->npoints, label, what,
        r->seconds);
}

/* In the parent: reads the point a worker finished from its file. */
static void point_finished(void *ctx, int p, double seconds)
{
    sweep *sw = ctx;
    char path[1100], version[128];
    if (p >= 0 && p < sw->npoints && aim_sweep_point_path(sw, p, path, sizeof path) == 0 &&
        aim_sweep_read_point(path, &sw->res[p], NULL, version, sizeof version) == 0) {
        sw->res[p].seconds = seconds;
        sw->done[p] = COMPUTED;
        sw->finished++;
        if (!isnan(seconds)) /* NaN: another rank's point, reported there */
            report_progress(sw, p, sw->finished);
    }
}

/* Computes the points not done with sw->jobs workers; a point that a
 * failed worker left undone stays so (reported). In an MPI job (ranks.h)
 * rank 0's list of the points to do (status: whether it could make it) is
 * shared, each rank computes every ranks-th of them and rank 0 then reads
 * those of the others from their files. Returns 0, or -1 when rank 0 sent
 * a failure. */
int aim_sweep_run_workers(sweep *sw, int status)
{
    int pending[MAX_POINTS], npending = 0, share[MAX_POINTS], nshare = 0;
    for (int p = 0; p < sw->npoints; p++)
        if (!sw->done[p])
            pending[npending++] = p;
    if (aim_ranks_share(status, pending, &npending, MAX_POINTS))
        return -1;
    for (int k = aim_ranks_rank(); k < npending; k += aim_ranks_count())
        share[nshare++] = pending[k];
    aim_progress *progress =
        aim_progress_begin("sweep", "", "point", sw->npoints, nshare,
                           sw->jobs < nshare ? sw->jobs : nshare, 1, NULL);
    const aim_pool_spec spec = {"sweep", sw->jobs, share, nshare, compute_point,
                                point_finished, sw, progress, NULL};
    aim_pool_run(&spec); /* the points left undone are counted by the caller */
    aim_progress_free(progress);
    aim_ranks_barrier(); /* every rank's point files are written */
    for (int k = 0; aim_ranks_rank() == 0 && k < npending; k++)
        if (!sw->done[pending[k]])
            point_finished(sw, pending[k], NAN); /* another rank's: its time not known */
    return 0;
}
