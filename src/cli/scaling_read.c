/* aimdyn scaling: reading the inputs. Per --sgd file its d, eta and
 * horizon from the recorded configuration and per seed the weak-recovery
 * time (or where the seed was censored); the --predict files' rows. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "scaling_internal.h"
#include "trajectory.h"
#include "tsv.h"

/* By d, then in the order given (qsort need not be stable; a refusal of
 * two files at one d names them in the order of the command line). */
int aim_scaling_compare_ints(int x, int y)
{
    return (x > y) - (x < y);
}

static int compare_runs(const void *a, const void *b)
{
    const sgd_run *x = a, *y = b;
    return x->d != y->d ? aim_scaling_compare_ints(x->d, y->d)
                        : aim_scaling_compare_ints(x->order, y->order);
}

static int compare_predictions(const void *a, const void *b)
{
    const prediction *x = a, *y = b;
    return x->d != y->d ? aim_scaling_compare_ints(x->d, y->d)
                        : aim_scaling_compare_ints(x->order, y->order);
}

/* ---- reading the SGD files ---- */

/* d and eta from the recorded configuration (aim_table_config: every
 * "# config" line parsed and range-checked by the configuration's own
 * rules; sgd.d and training.eta must be there), the horizon
 * (training.horizon; -inf when the line is absent: then the rows give
 * it) and the weak-recovery threshold (output.recovery_threshold; its
 * default when absent, as in files made before the key). Returns 0, or -1
 * after a message. */
static int recorded_config(const aim_table *t, const char *path, int *d, double *eta,
                           double *horizon, double *threshold)
{
    static const char *const needed[] = {"sgd.d", "training.eta"};
    *horizon = -INFINITY;
    for (int k = 0; k < 2; k++) {
        char prefix[64];
        snprintf(prefix, sizeof prefix, "# config %s = ", needed[k]);
        if (!aim_table_meta(t, prefix)) {
            fprintf(stderr, CMD ": --sgd %s: no '# config %s = ...' line; allowed: a per-seed "
                            "file NAME-sgd-dD-seeds.tsv written by `aimdyn sgd`\n", path,
                    needed[k]);
            return -1;
        }
    }
    aim_config cfg;
    aim_config_error err;
    if (aim_table_config(t, &cfg, &err)) {
        fprintf(stderr, CMD ": --sgd %s: recorded configuration not usable: %s\n", path,
                err.message);
        return -1;
    }
    if (aim_table_meta(t, "# config training.horizon = "))
        *horizon = cfg.horizon;
    *d = cfg.d;
    *eta = cfg.eta;
    *threshold = cfg.recovery_threshold;
    return 0;
}

/* The seeds of a table: rows grouped by consecutive equal seed numbers
 * (tau increases within a seed: aim_table_read). Fills run's per-seed
 * arrays. */
static int seeds_from_table(const aim_table *t, sgd_run *run, double threshold)
{
    const int kt = aim_table_column(t, "tau"), ko = aim_table_column(t, "overlap");
    const size_t nc = (size_t)t->ncols;
    int nseeds = 0;
    for (int i = 0; i < t->nrows; i++)
        nseeds += i == 0 || t->seed[i] != t->seed[i - 1];
    if (nseeds == 0) {
        fprintf(stderr, CMD ": --sgd %s: no data rows\n", run->path);
        return -1;
    }
    run->seed = malloc(sizeof *run->seed * (size_t)nseeds);
    run->tau_wr = malloc(sizeof(double) * (size_t)nseeds);
    run->tau_end = malloc(sizeof(double) * (size_t)nseeds);
    double *tau = malloc(sizeof(double) * (size_t)t->nrows);
    if (!run->seed || !run->tau_wr || !run->tau_end || !tau) {
        fprintf(stderr, CMD ": out of memory\n");
        free(tau);
        return -1;
    }
    int rc = 0;
    run->tau_max = -INFINITY;
    for (int i = 0, s = 0; rc == 0 && i < t->nrows; s++) {
        const uint64_t id = t->seed[i];
        int end = i;
        for (; end < t->nrows && t->seed[end] == id; end++)
            tau[end - i] = t->data[end * nc + kt];
        for (int j = 0; rc == 0 && j < s; j++)
            if (run->seed[j] == id) {
                fprintf(stderr, CMD ": --sgd %s: the rows of seed %" PRIu64 " are not "
                                "together\n", run->path, id);
                rc = -1;
            }
        /* `aimdyn sgd` writes NaN only past a blow-up: the seed stops at
         * its first NaN overlap, which must not be its first row */
        int finite = 0;
        while (rc == 0 && i + finite < end && !isnan(t->data[(i + finite) * nc + ko]))
            finite++;
        if (rc == 0 && finite == 0) {
            fprintf(stderr, CMD ": --sgd %s: seed %" PRIu64 ": the overlap is NaN from its "
                            "first row (tau = %g) on; allowed: per-seed rows of `aimdyn sgd`, "
                            "which are NaN only past a blow-up\n", run->path, id, tau[0]);
            rc = -1;
        }
        if (rc)
            break;
        run->seed[s] = id;
        run->tau_end[s] = tau[finite - 1];
        run->tau_max = fmax(run->tau_max, tau[end - i - 1]);
        run->tau_wr[s] = aim_trajectory_recovery_time(finite, tau, t->data + i * nc + ko, nc,
                                                      threshold);
        double spacing, curvature;
        aim_trajectory_recovery_error(finite, tau, t->data + i * nc + ko, nc, threshold,
                                      &spacing, &curvature);
        if (s == 0)
            run->interp_error[0] = run->interp_error[1] = NAN;
        if (isnan(run->interp_error[0]) || spacing > run->interp_error[0])
            run->interp_error[0] = spacing;
        if (isnan(run->interp_error[1]) || curvature > run->interp_error[1])
            run->interp_error[1] = curvature;
        if (run->tau_wr[s] <= 0) { /* n_wr = 0 has no logarithm */
            fprintf(stderr, CMD ": --sgd %s: seed %" PRIu64 " has |overlap| >= %g already at "
                            "tau = %g; allowed: a --threshold above the initial overlap (of "
                            "order 1/d)\n", run->path, id, threshold, run->tau_wr[s]);
            rc = -1;
        }
        run->recovered += !isnan(run->tau_wr[s]);
        run->nseeds = s + 1;
        i = end;
    }
    free(tau);
    return rc;
}

/* threshold: --threshold, or (not given) the files' recorded one, which
 * the first file sets and the others must repeat. */
static int read_sgd_file(sgd_run *run, double *threshold, int given)
{
    static const char *const columns[] = {"seed", "tau", "overlap", NULL};
    static const aim_table_kind kind = {
        "a per-seed file NAME-sgd-dD-seeds.tsv of `aimdyn sgd` (columns seed, tau, overlap), "
        "not the summary NAME-sgd-dD.tsv", columns, NULL};
    double horizon, recorded;
    aim_table t;
    if (aim_table_read(run->path, &kind, &t)) {
        fprintf(stderr, CMD ": --sgd %s: not a readable result file (see above)\n", run->path);
        return -1;
    }
    int rc = recorded_config(&t, run->path, &run->d, &run->eta, &horizon, &recorded);
    if (rc == 0 && !given && !isnan(*threshold) && recorded != *threshold) {
        fprintf(stderr, CMD ": --sgd %s records output.recovery_threshold = %g, an earlier "
                        "--sgd file %g; allowed: files made with one threshold, or "
                        "--threshold X for all\n", run->path, recorded, *threshold);
        rc = -1;
    }
    if (rc == 0 && !given)
        *threshold = recorded;
    if (rc == 0)
        rc = seeds_from_table(&t, run, *threshold);
    /* every seed blew up: the rows stop before the horizon the run was
     * for, which is where a seed that did not blow up would stop */
    run->tau_max = fmax(run->tau_max, horizon);
    aim_table_free(&t);
    return rc;
}

void aim_scaling_free_runs(sgd_run *runs, int n)
{
    for (int i = 0; runs && i < n; i++) {
        free(runs[i].seed);
        free(runs[i].tau_wr);
        free(runs[i].tau_end);
    }
    free(runs);
}

/* Reads every --sgd file, sorted by d; refuses two files with one d. */
sgd_run *aim_scaling_read_runs(options *o)
{
    sgd_run *runs = calloc((size_t)o->nsgd, sizeof *runs);
    if (!runs) {
        fprintf(stderr, CMD ": out of memory\n");
        return NULL;
    }
    for (int i = 0; i < o->nsgd; i++) {
        runs[i].path = o->sgd[i];
        runs[i].order = i;
        if (read_sgd_file(&runs[i], &o->threshold, o->threshold_given)) {
            aim_scaling_free_runs(runs, o->nsgd);
            return NULL;
        }
    }
    qsort(runs, (size_t)o->nsgd, sizeof *runs, compare_runs);
    for (int i = 1; i < o->nsgd; i++)
        if (runs[i].d == runs[i - 1].d) {
            fprintf(stderr, CMD ": --sgd %s and --sgd %s are both at d = %d; allowed: one "
                            "file per d\n", runs[i - 1].path, runs[i].path, runs[i].d);
            aim_scaling_free_runs(runs, o->nsgd);
            return NULL;
        }
    return runs;
}

/* ---- reading the predictions ---- */

/* Appends the rows of one --predict file to pred (capacity grown). */
static int read_prediction_file(const char *path, prediction **pred, int *n)
{
    static const char *const columns[] = {"d", "n_wr_predicted", NULL};
    static const aim_table_kind kind = {
        "a prediction file of `aimdyn recovery` with the columns d and n_wr_predicted",
        columns, NULL};
    aim_table t;
    if (aim_table_read(path, &kind, &t)) {
        fprintf(stderr, CMD ": --predict %s: not a readable result file (see above)\n", path);
        return -1;
    }
    const int kd = aim_table_column(&t, "d"), kn = aim_table_column(&t, "n_wr_predicted");
    int rc = 0;
    prediction *grown = realloc(*pred, sizeof **pred * (size_t)(*n + t.nrows + 1));
    if (!grown) {
        fprintf(stderr, CMD ": out of memory\n");
        rc = -1;
    }
    if (grown)
        *pred = grown;
    for (int i = 0; rc == 0 && i < t.nrows; i++) {
        const double d = t.data[(size_t)i * t.ncols + kd];
        const double v = t.data[(size_t)i * t.ncols + kn];
        if (!(d >= 1 && d <= 1e9 && d == floor(d)) || !(isnan(v) || (v > 0 && isfinite(v)))) {
            fprintf(stderr, CMD ": --predict %s: data row %d: d = %g, n_wr_predicted = %g; "
                            "allowed: an integer d >= 1 and a number > 0 (nan: no escape "
                            "predicted)\n", path, i + 1, d, v);
            rc = -1;
            break;
        }
        (*pred)[*n] = (prediction){(int)d, v, path, *n};
        ++*n;
    }
    aim_table_free(&t);
    return rc;
}

/* Every --predict file merged and sorted by d; each d at most once. */
int aim_scaling_read_predictions(const options *o, prediction **pred, int *n)
{
    *pred = NULL;
    *n = 0;
    for (int i = 0; i < o->npredict; i++)
        if (read_prediction_file(o->predict[i], pred, n))
            return -1;
    if (*n > 1)
        qsort(*pred, (size_t)*n, sizeof **pred, compare_predictions);
    for (int i = 1; i < *n; i++)
        if ((*pred)[i].d == (*pred)[i - 1].d) {
            fprintf(stderr, CMD ": --predict %s and --predict %s both predict d = %d; allowed: "
                            "each d once\n", (*pred)[i - 1].path, (*pred)[i].path,
                    (*pred)[i].d);
            return -1;
        }
    return 0;
}
