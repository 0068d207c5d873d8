/* aimdyn sweep: the grid of configurations and its points' files. Every
 * point's configuration is put together and checked before anything
 * runs; a point's result is a file of its own in DIR/NAME-sweep.d/,
 * written atomically with that configuration, and a rerun keeps the files
 * that record the same configuration and version (resume). */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gauss.h"
#include "hook.h"
#include "memory.h"
#include "model.h"
#include "progress.h"
#include "sweep_internal.h"
#include "trajectory.h"
#include "tsv.h"
#include "version.h"

/* Columns of a point's result, in its own file and in the table (after
 * the varied keys). */
const char aim_sweep_result_header[] =
    "status\ttau_wr\tn_wr\ttau_end\toverlap_end\trisk_end\tmessage";

/* ---- points and their configurations ---- */

/* Index of vary list v's value at point p; the first key varies slowest
 * (the table reads like nested loops in --vary order). */
int aim_sweep_value_index(const sweep *sw, int p, int v)
{
    return p / sw->vary[v].stride % sw->vary[v].count;
}

const char *aim_sweep_point_value(const sweep *sw, int p, int v)
{
    return sw->vary[v].values[aim_sweep_value_index(sw, p, v)];
}

/* "model.activation=he2, training.eta=0.05" (cut at n - 1 characters) */
void aim_sweep_point_label(const sweep *sw, int p, char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int v = 0; v < sw->nvary && used < n; v++) {
        int len = snprintf(buf + used, n - used, "%s%s=%s", v ? ", " : "", sw->vary[v].key,
                           aim_sweep_point_value(sw, p, v));
        used += len > 0 ? (size_t)len : 0;
    }
}

/* CONFIG then --set, without the cross-key checks: the base of a sweep
 * need not be valid on its own (e.g. untied with hierarchy.order = 1
 * while the sweep varies the order from 2). */
int aim_sweep_load_base(sweep *sw)
{
    aim_config_error err;
    aim_config_defaults(&sw->base);
    int rc = aim_config_load(&sw->base, sw->path, &err);
    for (int i = 0; rc == 0 && i < sw->nsets; i++)
        rc = aim_config_set(&sw->base, sw->sets[i], &err);
    if (rc)
        fprintf(stderr, "aimdyn sweep: %s\n", err.message);
    return rc;
}

/* Each value on its own on top of the base, so that a bad key or value
 * is named with its --vary before any point is put together. */
int aim_sweep_check_values(const sweep *sw)
{
    for (int v = 0; v < sw->nvary; v++)
        for (int i = 0; i < sw->vary[v].count; i++) {
            aim_config c = sw->base;
            aim_config_error err;
            char a[TEXT_LEN];
            snprintf(a, sizeof a, "%s=%s", sw->vary[v].key, sw->vary[v].values[i]);
            if (aim_config_set(&c, a, &err) == 0)
                continue;
            /* aim_config_set's message starts "--set ASSIGNMENT: ": here
             * the option is --vary, named before it */
            const char *msg = err.message;
            const size_t alen = strlen(a);
            if (!strncmp(msg, "--set ", 6) && !strncmp(msg + 6, a, alen) &&
                !strncmp(msg + 6 + alen, ": ", 2))
                msg += 8 + alen;
            fprintf(stderr, "aimdyn sweep: --vary %s: value \"%s\": %s\n", sw->vary[v].arg,
                    sw->vary[v].values[i], msg);
            return -1;
        }
    return 0;
}

/* Every point's configuration: CONFIG, --set, then its assignments
 * (kept in sw->assign, which lives as long as sw->sets points into it),
 * validated; the first invalid point is a usage error naming it. */
int aim_sweep_check_points(sweep *sw)
{
    sw->cfg = malloc(sizeof *sw->cfg * (size_t)sw->npoints);
    sw->res = calloc((size_t)sw->npoints, sizeof *sw->res);
    sw->done = calloc((size_t)sw->npoints, 1);
    if (!sw->cfg || !sw->res || !sw->done) {
        fprintf(stderr, "aimdyn sweep: out of memory\n");
        return -1;
    }
    /* the points run on the pool's workers: one engine thread each unless
     * --threads is given (src/cli/pool.c) */
    const int worker_threads = aim_cli_threads_explicit() ? aim_gauss_threads() : 1;
    for (int p = 0; p < sw->npoints; p++) {
        for (int v = 0; v < sw->nvary; v++) {
            snprintf(sw->assign[v], TEXT_LEN, "%s=%s", sw->vary[v].key,
                     aim_sweep_point_value(sw, p, v));
            sw->sets[sw->nsets + v] = sw->assign[v];
        }
        char label[TEXT_LEN], cmd[TEXT_LEN + 64];
        aim_sweep_point_label(sw, p, label, sizeof label);
        snprintf(cmd, sizeof cmd, "sweep: point %d/%d (%s)", p + 1, sw->npoints, label);
        if (aim_cli_load_config(cmd, sw->path, sw->sets, sw->nsets + sw->nvary, &sw->cfg[p]) ||
            aim_cli_matrix_memory_fits(cmd, &sw->cfg[p], sw->jobs, worker_threads) ||
            (aim_model_ops_of(&sw->cfg[p])->hierarchy && sw->cfg[p].start == AIM_START_SEED &&
             aim_cli_start_memory_fits(cmd, &sw->cfg[p], sw->cfg[p].d, sw->jobs)))
            return -1;
    }
    return 0;
}

/* ---- point files ---- */

int aim_sweep_point_path(const sweep *sw, int p, char *buf, size_t n)
{
    int len = snprintf(buf, n, "%s/point-%04d.tsv", sw->dir, p + 1);
    if (len < 0 || (size_t)len >= n) {
        fprintf(stderr, "aimdyn sweep: output path too long: '%s/point-%04d.tsv'\n", sw->dir,
                p + 1);
        return -1;
    }
    return 0;
}

/* aim_sweep_read_point's outcomes besides 0 and -1 */
enum { OTHER_VERSION = 1 };

/* Reads a point file: its result and, when config is not NULL, its
 * result-deciding configuration lines (malloc'd). Returns 0; OTHER_VERSION
 * when another version of aimdyn wrote it (its version in version[0 ..
 * n-1], nothing else read); or -1 when it is not a complete point file
 * (reported). */
int aim_sweep_read_point(const char *path, point_result *r, char **config, char *version,
                         size_t n)
{
    static const char *const columns[] = {"status", "tau_wr", "n_wr", "tau_end",
                                          "overlap_end", "risk_end", "message", NULL};
    static const char *const text[] = {"status", "message", NULL};
    static const aim_table_kind kind = {"a point file of a sweep (one row: status, tau_wr, "
                                        "n_wr, tau_end, overlap_end, risk_end, message)",
                                        columns, text};
    static const char *const statuses[] = {"recovered", "not-by-horizon", "blow-up", "failed"};
    const int v = aim_pool_check_version("sweep", path, kind.what, version, n);
    if (v)
        return v;
    aim_table t;
    if (aim_table_read(path, &kind, &t))
        return -1;
    const int ks = aim_table_column(&t, "status"), km = aim_table_column(&t, "message");
    int known = 0;
    for (int i = 0; t.nrows == 1 && i < 4; i++)
        known |= !strcmp(t.text[ks], statuses[i]);
    if (t.ncols != 7 || t.nrows != 1 || !known) {
        fprintf(stderr, "aimdyn sweep: %s: %s; allowed: %s\n", path,
                known ? "not one row of the 7 columns" : "no known status", kind.what);
        aim_table_free(&t);
        return -1;
    }
    *r = (point_result){.tau_wr = t.data[aim_table_column(&t, "tau_wr")],
                        .n_wr = t.data[aim_table_column(&t, "n_wr")],
                        .tau_end = t.data[aim_table_column(&t, "tau_end")],
                        .overlap = t.data[aim_table_column(&t, "overlap_end")],
                        .risk = t.data[aim_table_column(&t, "risk_end")],
                        .seconds = NAN}; /* not recorded */
    snprintf(r->status, sizeof r->status, "%s", t.text[ks]);
    snprintf(r->message, sizeof r->message, "%s", t.text[km]);
    int rc = 0;
    if ((r->integrations = aim_cli_get_integrations(&t, "sweep", path, r->stats)) < 0)
        rc = -1;
    if (rc == 0 && config) { /* the result-deciding configuration lines */
        aim_config recorded;
        aim_config_error err;
        if (aim_table_config(&t, &recorded, &err)) {
            fprintf(stderr, "aimdyn sweep: %s: %s\n", path, err.message);
            rc = -1;
        } else if (!(*config = aim_pool_config_lines(&recorded))) {
            fprintf(stderr, "aimdyn sweep: out of memory\n");
            rc = -1;
        }
    }
    aim_table_free(&t);
    return rc;
}

/* A point's values agree with each other and with its configuration, as
 * run_point writes them: NaN throughout when failed; else tau_end in
 * [0, horizon], a weak-recovery time (for recovered always, for a
 * blow-up maybe) in [0, tau_end] with n_wr = tau_wr d^2 / eta. Returns 0,
 * or -1 after a message. */
static int point_consistent(const char *path, const point_result *r, const aim_config *cfg)
{
    /* the file holds %.10g of each value */
    const double rel = 1e-9;
    const int failed = !strcmp(r->status, "failed");
    const int recovered = !strcmp(r->status, "recovered");
    const int has_wr = !isnan(r->tau_wr);
    const double n_wr = r->tau_wr * cfg->d * (double)cfg->d / cfg->eta;
    const char *why =
        failed ? (isnan(r->tau_wr) && isnan(r->n_wr) && isnan(r->tau_end) && isnan(r->overlap) &&
                          isnan(r->risk)
                      ? NULL
                      : "a failed point with values")
        : !(r->tau_end >= 0 && r->tau_end <= cfg->horizon * (1 + rel))
            ? "tau_end outside [0, training.horizon]"
        : has_wr != isfinite(r->n_wr) || (recovered && !has_wr) ||
                (!strcmp(r->status, "not-by-horizon") && has_wr)
            ? "the status, tau_wr and n_wr disagree"
        : has_wr && !(r->tau_wr >= 0 && r->tau_wr <= r->tau_end)
            ? "tau_wr outside [0, tau_end]"
        : has_wr && !(fabs(r->n_wr - n_wr) <= rel * n_wr)
            ? "n_wr is not tau_wr sgd.d^2 / training.eta"
            : NULL;
    if (why)
        fprintf(stderr, "aimdyn sweep: %s: %s (status %s, tau_wr %.10g, n_wr %.10g, tau_end "
                        "%.10g); allowed: a point file as `aimdyn sweep` writes it\n",
                path, why, r->status, r->tau_wr, r->n_wr, r->tau_end);
    return why ? -1 : 0;
}

void aim_sweep_put_result(FILE *f, const point_result *r)
{
    fprintf(f, "%s\t%.10g\t%.10g\t%.10g\t%.10g\t%.10g\t%s\n", r->status, r->tau_wr, r->n_wr,
            r->tau_end, r->overlap, r->risk, r->message);
}

/* Ctrl-C or kill between opening a result file and renaming it into
 * place would leave its temporary file behind: those signals wait until
 * the file is complete. */
static void hold_signals(sigset_t *old)
{
    sigset_t hold;
    sigemptyset(&hold);
    sigaddset(&hold, SIGINT);
    sigaddset(&hold, SIGTERM);
    sigaddset(&hold, SIGHUP);
    sigaddset(&hold, SIGQUIT);
    sigprocmask(SIG_BLOCK, &hold, old);
}

int aim_sweep_write_point(const sweep *sw, int p, const point_result *r)
{
    char path[1100], label[TEXT_LEN];
    if (aim_sweep_point_path(sw, p, path, sizeof path))
        return -1;
    aim_sweep_point_label(sw, p, label, sizeof label);
    sigset_t old;
    hold_signals(&old);
    int rc = -1;
    aim_tsv *tsv = aim_tsv_open(path);
    if (tsv) {
        FILE *f = aim_tsv_stream(tsv);
        aim_tsv_metadata(tsv, "sweep", &sw->cfg[p]);
        if (aim_cli_record_integrations(tsv, "", r->integrations, r->stats)) {
            aim_tsv_abort(tsv);
            sigprocmask(SIG_SETMASK, &old, NULL);
            return -1;
        }
        aim_trajectory_kernel_line(f, &sw->cfg[p], r->kernel_points, r->kernel_error);
        aim_cli_put_integrations(f, r->integrations, r->stats);
        fprintf(f, "# sweep point %d of %d: %s\n%s\n", p + 1, sw->npoints, label,
                aim_sweep_result_header);
        aim_sweep_put_result(f, r);
        rc = aim_tsv_commit(tsv);
    }
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (rc == 0)
        aim_hook_event("sweep-point-done", "point", p + 1, NULL, 0);
    return rc;
}

/* Marks the points whose file already records their result under the
 * same configuration and version, and not as failed (those are computed
 * again, said on stderr). Reads only. Returns how many, or -1 when a file
 * is not a point file or belongs to another configuration (reported). */
int aim_sweep_keep_finished(sweep *sw)
{
    int kept = 0;
    for (int p = 0; p < sw->npoints; p++) {
        char path[1100], label[TEXT_LEN], version[128];
        if (aim_sweep_point_path(sw, p, path, sizeof path))
            return -1;
        if (access(path, F_OK) != 0)
            continue;
        char *there = NULL, *here = aim_pool_config_lines(&sw->cfg[p]);
        if (!here) {
            fprintf(stderr, "aimdyn sweep: out of memory\n");
            return -1;
        }
        aim_sweep_point_label(sw, p, label, sizeof label);
        int rc = aim_sweep_read_point(path, &sw->res[p], &there, version, sizeof version);
        if (rc == OTHER_VERSION) {
            aim_progress_note("sweep: point %d/%d (%s): written by aimdyn %s, this is aimdyn %s: "
                              "computed again\n", p + 1, sw->npoints, label, version, AIM_VERSION);
            free(here);
            continue;
        }
        if (rc)
            fprintf(stderr, "aimdyn sweep: %s is not a complete point file of a sweep; remove "
                            "the directory %s or choose another --name\n", path, sw->dir);
        else if (strcmp(there, here)) {
            char diff[2 * TEXT_LEN];
            aim_pool_first_difference(there, here, diff, sizeof diff);
            fprintf(stderr, "aimdyn sweep: %s records a different configuration than point "
                            "%d of this sweep (%s); remove the directory %s or choose another "
                            "--name\n", path, p + 1, diff, sw->dir);
            rc = -1;
        } else if (point_consistent(path, &sw->res[p], &sw->cfg[p])) {
            fprintf(stderr, "aimdyn sweep: %s is not a consistent point file of a sweep; "
                            "remove the directory %s or choose another --name\n", path,
                    sw->dir);
            rc = -1;
        }
        free(there);
        free(here);
        if (rc)
            return -1;
        if (!strcmp(sw->res[p].status, "failed")) {
            aim_progress_note("sweep: point %d/%d (%s): failed in an earlier run (%s): computed "
                              "again\n", p + 1, sw->npoints, label, sw->res[p].message);
            continue;
        }
        sw->done[p] = KEPT;
        kept++;
        aim_progress_note("sweep: point %d/%d (%s): kept from an earlier run\n", p + 1,
                sw->npoints, label);
    }
    return kept;
}

/* The name of DIR/NAME-sweep.d, short enough to be an output.dir. */
int aim_sweep_point_dir(sweep *sw)
{
    if (aim_tsv_path(sw->dir, sizeof sw->dir, &sw->base, "sweep.d", NULL))
        return -1;
    if (strlen(sw->dir) >= sizeof sw->base.dir) {
        fprintf(stderr, "aimdyn sweep: output path too long: '%s'\n", sw->dir);
        return -1;
    }
    return 0;
}

/* DIR and DIR/NAME-sweep.d: the point directory is checked here too, so
 * that an unusable one stops the sweep before it starts rather than
 * every worker at its first point; both are locked for NAME. */
int aim_sweep_prepare_dirs(const sweep *sw)
{
    aim_config points = sw->base;
    memcpy(points.dir, sw->dir, strlen(sw->dir) + 1);
    /* under the lock of NAME: the temporary point files of a killed
     * sweep (.point-NNNN.tsv.XXXXXX) are stale */
    return aim_tsv_prepare_dir(&sw->base) || aim_atomic_inner_folder(sw->dir) ||
                   aim_tsv_prepare_dir(&points) || aim_atomic_clean(sw->dir, "point") < 0
               ? -1
               : 0;
}
