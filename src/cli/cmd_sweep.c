/* aimdyn sweep: the limit ODE's weak-recovery time over a grid of
 * configurations (the Cartesian product of one to three --vary lists)
 * and its phase diagram.
 *
 * Every point is checked before anything runs. The points still to do
 * are then shared among forked worker processes through a pipe of point
 * numbers (a free worker takes the next one, so a slow corner of the
 * grid does not hold the others up). Each result is a small file of its
 * own in DIR/NAME-sweep.d/, written atomically with the point's full
 * configuration, so that a rerun keeps what an interrupted sweep
 * finished; the workers end with the parent (killed or not). The parent
 * reports progress as the workers finish points, then assembles
 * DIR/NAME-sweep.tsv and draws DIR/NAME-sweep.png/.svg, which replace the
 * old table and heatmap together.
 * No file records a timing: the same sweep gives the same files, bit for
 * bit; the wall times go to stdout and stderr only. */
#include <ctype.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "atomic.h"
#include "compare.h"
#include "config.h"
#include "grid.h"
#include "hook.h"
#include "memory.h"
#include "model.h"
#include "plot.h"
#include "pool.h"
#include "progress.h"
#include "ranks.h"
#include "trajectory.h"
#include "tsv.h"
#include "version.h"
#include "words.h"

enum {
    MAX_VARY = 3,      /* x axis, y axis, panels */
    MAX_VALUES = 64,   /* per --vary */
    MAX_POINTS = AIM_POOL_MAX_TASKS,
    MAX_JOBS = AIM_POOL_MAX_JOBS,
    TEXT_LEN = 4096    /* an assignment or a point's label */
};

/* Columns of a point's result, in its own file and in the table (after
 * the varied keys). */
static const char result_header[] =
    "status\ttau_wr\tn_wr\ttau_end\toverlap_end\trisk_end\tmessage";

/* A point's file: not there yet, there from an earlier run, or written
 * by this one. */
enum { NOT_DONE = 0, KEPT, COMPUTED };

typedef struct {
    char key[96];     /* section.key */
    const char *arg;  /* the option's text, for messages */
    char *list;       /* a copy of the values, split in place */
    const char *values[MAX_VALUES];
    int count;
    int stride; /* points between successive values */
} vary_list;

/* One point's outcome, as its file records it. */
typedef struct {
    char status[16]; /* recovered | not-by-horizon | blow-up | failed */
    double tau_wr, n_wr, tau_end, overlap, risk;
    double seconds; /* the integration's wall time: this run's points only,
                       never in a file */
    int kernel_points;   /* the engine's (aim_ode_report), for the */
    double kernel_error; /* file's "# kernels:" line */
    char message[800]; /* "-" when none */
    int integrations;  /* CVODE's, as the point's file carries them to the table's sidecar */
    aim_ode_stats stats[AIM_ODE_MAX_INTEGRATIONS];
} point_result;

typedef struct {
    const char *path; /* CONFIG; NULL: the built-in default */
    aim_cli_args args; /* --set, --out and --name as assignments */
    /* args' assignments in order, then room for a point's */
    const char *sets[AIM_CLI_MAX_SETS + MAX_VARY];
    char assign[MAX_VARY][TEXT_LEN]; /* a point's assignments, while checked */
    int nsets;
    vary_list vary[MAX_VARY];
    int nvary, jobs, npoints;
    int finished;       /* points done (kept or computed), for progress */
    aim_config base;    /* CONFIG + --set, for the table's metadata */
    aim_config *cfg;    /* per point */
    point_result *res;  /* per point */
    char *done;         /* per point: NOT_DONE, KEPT or COMPUTED */
    char dir[1024];     /* DIR/NAME-sweep.d */
} sweep;

static void print_help(const char *cmd)
{
    (void)cmd;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    printf("usage: aimdyn sweep [CONFIG.ini] --vary KEY=V1,V2,... [--vary ...] [options]\n\n"
           "Where, and how fast, does the attention layer learn over a grid of\n"
           "configurations? At every point the limit ODE is integrated as `aimdyn ode`\n"
           "does; the sweep records the predicted weak-recovery time tau_wr (the first\n"
           "tau with |teacher overlap| >= output.recovery_threshold, by root finding),\n"
           "the samples n_wr = tau_wr d^2/eta at d = sgd.d, and draws the phase\n"
           "diagram of tau_wr as a heatmap.\n\n"
           "The grid is the Cartesian product of the --vary lists. A point's\n"
           "configuration is CONFIG, then every --set, then the point's values; every\n"
           "point is checked before anything runs. With hierarchy.start = seed (tied and\n"
           "untied students only; a direct student always starts from the exact limit)\n"
           "a point starts from the moments measured on SGD seed sgd.seed at d = sgd.d.\n\n"
           "options:\n"
           "  --vary KEY=V1,V2,...     a configuration key (see `aimdyn keys`) and its\n"
           "                           values, separated by commas (1 to 3 times: the x\n"
           "                           axis, the y axis, one panel per value; at most %d\n"
           "                           values each, %d points); write a value that\n"
           "                           contains commas (model.hermite, model.covariance)\n"
           "                           with spaces or semicolons instead\n"
           "  --jobs N                 worker processes, 1..%d (default: the online\n"
           "                           cores, %ld here; 1 per rank under mpirun, whose\n"
           "                           ranks share the points: docs/scaling.md)\n"
           "%s%s\n"
           "Output (DIR = output.dir, NAME = output.name):\n"
           "  DIR/NAME-sweep.d/point-NNNN.tsv  one file per point: its full configuration\n"
           "                           and its result, written as the point finishes\n"
           "  DIR/NAME-sweep.tsv       one row per point: the varied values, status\n"
           "                           (recovered, not-by-horizon, blow-up, failed),\n"
           "                           tau_wr, n_wr, tau_end (the last tau reached),\n"
           "                           overlap_end, risk_end (there) and message\n"
           "  DIR/NAME-sweep.png/.svg  the heatmap (its gnuplot script: .gp): x = the\n"
           "                           first key, y = the second,\n"
           "                           a panel per value of the third; colour = tau_wr\n"
           "                           (log scale when it spans more than a factor 10),\n"
           "                           grey = not by training.horizon, blow-up\n"
           "                           or failed\n"
           "The files record no timing: the same sweep writes the same files, bit for\n"
           "bit. Wall times (per point, in all, and the speed-up of the workers) are\n"
           "printed on stderr and stdout only.\n\n"
           "Resuming: rerunning the same command keeps every point whose file records\n"
           "the same configuration (output.dir and output.name aside) and the same\n"
           "aimdyn version, and computes the others; a point written by another\n"
           "version, or whose status is failed, is computed again (said on stderr).\n"
           "An interrupted sweep (Ctrl-C, kill) leaves complete point files only. A\n"
           "point file of another configuration is an error: remove DIR/NAME-sweep.d\n"
           "or choose another --name.\n\n"
           "Examples:\n"
           "  aimdyn sweep --vary model.activation=he1,he2,he3 --vary training.eta=0.02,0.05,0.1\n"
           "      the default example: He1 recovers at tau ~ 0.012 at every rate; He2\n"
           "      does not leave the uninformative start in the limit ODE (finite-d SGD\n"
           "      does escape it, in a time growing with d: see `aimdyn recovery`); He3\n"
           "      blows up at the larger rates\n"
           "  aimdyn sweep examples/tied_he2.ini --vary model.activation=he1,he2,he3 \\\n"
           "      --vary model.decomposition=direct,tied,untied --vary training.eta=0.005,0.01\n"
           "      activation against decomposition, a panel per rate: only the tied\n"
           "      student recovers with He2\n"
           "  A tied student needs a symmetric teacher (tied_he2.ini has one; elsewhere\n"
           "  --set teacher.decomposition=tied) and centred indices; an untied student\n"
           "  hierarchy.order >= 2. Hierarchies of high order take seconds per point.\n\n"
           "Exit status: 0 every point ran to its horizon or recovered; 1 bad usage or\n"
           "an invalid point (nothing run or written); 2 run-time failure: a point's\n"
           "integration failed (the table is still written, its row says failed, a\n"
           "rerun computes it again), a worker failed or a file could not be written\n"
           "(finished points are kept: rerun to complete the sweep), or gnuplot failed\n"
           "to draw the heatmap (the table is written, an old heatmap of the name\n"
           "removed); 3 no failure, but a point blew up (recorded in the table: status\n"
           "blow-up). Without gnuplot: a warning, no heatmap (an old one removed), the\n"
           "exit status as otherwise. The table and the heatmap replace the old ones\n"
           "together. Interrupted (130, 143) or killed, a sweep leaves no temporary\n"
           "file but those of a SIGKILL, which the next run removes; its workers end\n"
           "with it.\n",
           MAX_VALUES, MAX_POINTS, MAX_JOBS, cores,
           aim_cli_usage_threads, aim_cli_usage_common);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- options ---- */

/* Without the white space around it (in place), as the configuration
 * trims keys and values. */
static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

/* --vary KEY=V1,V2,...: the key's form, the value list (no empty value,
 * no repeat); the values themselves are checked later, on top of CONFIG
 * and --set. */
static int parse_vary(void *target, const char *arg)
{
    sweep *sw = target;
    if (sw->nvary == MAX_VARY) {
        fprintf(stderr, "aimdyn sweep: --vary %s: --vary given more than %d times; allowed: "
                        "1 to %d varied keys (x axis, y axis, panels)\n",
                arg, MAX_VARY, MAX_VARY);
        return -1;
    }
    vary_list *v = &sw->vary[sw->nvary];
    const char *eq = strchr(arg, '=');
    /* the key as the configuration reads it (aim_config_set trims it), so
     * that " output.dir" or "training.eta " is checked as that key */
    char key[sizeof v->key] = "";
    if (eq && (size_t)(eq - arg) < sizeof key) {
        memcpy(key, arg, (size_t)(eq - arg));
        key[eq - arg] = '\0';
    }
    snprintf(v->key, sizeof v->key, "%s", trim(key));
    const char *dot = strchr(v->key, '.');
    if (!eq || !dot || dot == v->key || !dot[1]) {
        fprintf(stderr, "aimdyn sweep: --vary %s: expected KEY=V1,V2,... with KEY a "
                        "configuration key section.key (see `aimdyn keys`)\n", arg);
        return -1;
    }
    if (!strncmp(v->key, "output.", 7)) {
        fprintf(stderr, "aimdyn sweep: --vary %s: %s does not change the dynamics; allowed: "
                        "any key but output.* (use --out and --name)\n", arg, v->key);
        return -1;
    }
    for (int w = 0; w < sw->nvary; w++)
        if (!strcmp(sw->vary[w].key, v->key)) {
            fprintf(stderr, "aimdyn sweep: --vary %s: %s is already varied (--vary %s); "
                            "allowed: each key once, with all its values\n",
                    arg, v->key, sw->vary[w].arg);
            return -1;
        }
    if (strpbrk(eq + 1, "\t\r\n")) {
        fprintf(stderr, "aimdyn sweep: --vary %s: a value contains a tab or a line break; "
                        "allowed: values on one line, separated by commas\n", arg);
        return -1;
    }
    if (!(v->list = strdup(eq + 1))) {
        fprintf(stderr, "aimdyn sweep: out of memory\n");
        return -1;
    }
    v->arg = arg;
    v->count = 0;
    sw->nvary++; /* from here on, the list is freed with the sweep */
    char *p = v->list;
    for (;;) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = '\0';
        const char *value = trim(p);
        if (!*value) {
            fprintf(stderr, "aimdyn sweep: --vary %s: %s; allowed: V1,V2,... separated by "
                            "commas, none empty\n",
                    arg, eq[1] ? "an empty value" : "no values");
            return -1;
        }
        for (int i = 0; i < v->count; i++)
            if (!strcmp(v->values[i], value)) {
                fprintf(stderr, "aimdyn sweep: --vary %s: value \"%s\" given twice; allowed: "
                                "distinct values\n", arg, value);
                return -1;
            }
        if (v->count == MAX_VALUES) {
            fprintf(stderr, "aimdyn sweep: --vary %s: more than %d values; allowed: at most %d\n",
                    arg, MAX_VALUES, MAX_VALUES);
            return -1;
        }
        v->values[v->count++] = value;
        if (!comma)
            return 0;
        p = comma + 1;
    }
}

/* Returns 0, 1 after printing the help, or -1 on a usage error. */
static int parse_options(int argc, char **argv, sweep *sw)
{
    sw->jobs = aim_pool_default_jobs();
    const aim_cli_option options[] = {
        {AIM_OPT("vary", AIM_OPT_OWN, 1), .target = sw, .own = parse_vary},
        {AIM_OPT("jobs", AIM_OPT_INTEGER, 1), .lo = 1, .hi = MAX_JOBS,
         .allowed = " (worker processes)", .target = &sw->jobs},
        {AIM_OPT("set", AIM_OPT_ASSIGN, 1), .assign = ""},
        {AIM_OPT("out", AIM_OPT_ASSIGN, 1), .assign = "output.dir="},
        {AIM_OPT("name", AIM_OPT_ASSIGN, 1), .assign = "output.name="},
        aim_cli_threads};
    const aim_cli_spec spec = {"sweep", options, (int)(sizeof options / sizeof options[0]),
                               print_help, 1, "one CONFIG.ini at most"};
    const int rc = aim_cli_parse(&spec, argc, argv, &sw->args);
    if (rc)
        return rc;
    sw->path = sw->args.noperands ? sw->args.operand[0] : NULL;
    for (sw->nsets = 0; sw->nsets < sw->args.nsets; sw->nsets++)
        sw->sets[sw->nsets] = sw->args.sets[sw->nsets];
    if (sw->nvary == 0) {
        fprintf(stderr, "aimdyn sweep: no --vary KEY=V1,V2,...; a sweep needs 1 to %d varied "
                        "keys (see `aimdyn sweep --help`)\n", MAX_VARY);
        return -1;
    }
    sw->npoints = 1;
    for (int v = sw->nvary - 1; v >= 0; v--) {
        sw->vary[v].stride = sw->npoints;
        sw->npoints *= sw->vary[v].count;
        if (sw->npoints > MAX_POINTS) {
            fprintf(stderr, "aimdyn sweep: the grid has more than %d points; allowed: at most "
                            "%d (split the sweep with --name)\n", MAX_POINTS, MAX_POINTS);
            return -1;
        }
    }
    return 0;
}

/* ---- points and their configurations ---- */

/* Index of vary list v's value at point p; the first key varies slowest
 * (the table reads like nested loops in --vary order). */
static int value_index(const sweep *sw, int p, int v)
{
    return p / sw->vary[v].stride % sw->vary[v].count;
}

static const char *point_value(const sweep *sw, int p, int v)
{
    return sw->vary[v].values[value_index(sw, p, v)];
}

/* "model.activation=he2, training.eta=0.05" (cut at n - 1 characters) */
static void point_label(const sweep *sw, int p, char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int v = 0; v < sw->nvary && used < n; v++) {
        int len = snprintf(buf + used, n - used, "%s%s=%s", v ? ", " : "", sw->vary[v].key,
                           point_value(sw, p, v));
        used += len > 0 ? (size_t)len : 0;
    }
}

/* CONFIG then --set, without the cross-key checks: the base of a sweep
 * need not be valid on its own (e.g. untied with hierarchy.order = 1
 * while the sweep varies the order from 2). */
static int load_base(sweep *sw)
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
static int check_values(const sweep *sw)
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
static int check_points(sweep *sw)
{
    sw->cfg = malloc(sizeof *sw->cfg * (size_t)sw->npoints);
    sw->res = calloc((size_t)sw->npoints, sizeof *sw->res);
    sw->done = calloc((size_t)sw->npoints, 1);
    if (!sw->cfg || !sw->res || !sw->done) {
        fprintf(stderr, "aimdyn sweep: out of memory\n");
        return -1;
    }
    for (int p = 0; p < sw->npoints; p++) {
        for (int v = 0; v < sw->nvary; v++) {
            snprintf(sw->assign[v], TEXT_LEN, "%s=%s", sw->vary[v].key,
                     point_value(sw, p, v));
            sw->sets[sw->nsets + v] = sw->assign[v];
        }
        char label[TEXT_LEN], cmd[TEXT_LEN + 64];
        point_label(sw, p, label, sizeof label);
        snprintf(cmd, sizeof cmd, "sweep: point %d/%d (%s)", p + 1, sw->npoints, label);
        if (aim_cli_load_config(cmd, sw->path, sw->sets, sw->nsets + sw->nvary, &sw->cfg[p]) ||
            aim_cli_matrix_memory_fits(cmd, &sw->cfg[p], sw->jobs) ||
            (aim_model_ops_of(&sw->cfg[p])->hierarchy && sw->cfg[p].start == AIM_START_SEED &&
             aim_cli_start_memory_fits(cmd, &sw->cfg[p], sw->cfg[p].d, sw->jobs)))
            return -1;
    }
    return 0;
}

/* ---- point files ---- */

static int point_path(const sweep *sw, int p, char *buf, size_t n)
{
    int len = snprintf(buf, n, "%s/point-%04d.tsv", sw->dir, p + 1);
    if (len < 0 || (size_t)len >= n) {
        fprintf(stderr, "aimdyn sweep: output path too long: '%s/point-%04d.tsv'\n", sw->dir,
                p + 1);
        return -1;
    }
    return 0;
}

/* read_point's outcomes besides 0 and -1 */
enum { OTHER_VERSION = 1 };

/* Reads a point file: its result and, when config is not NULL, its
 * result-deciding configuration lines (malloc'd). Returns 0; OTHER_VERSION
 * when another version of aimdyn wrote it (its version in version[0 ..
 * n-1], nothing else read); or -1 when it is not a complete point file
 * (reported). */
static int read_point(const char *path, point_result *r, char **config, char *version,
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

static void put_result(FILE *f, const point_result *r)
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

static int write_point(const sweep *sw, int p, const point_result *r)
{
    char path[1100], label[TEXT_LEN];
    if (point_path(sw, p, path, sizeof path))
        return -1;
    point_label(sw, p, label, sizeof label);
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
                result_header);
        put_result(f, r);
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
static int keep_finished(sweep *sw)
{
    int kept = 0;
    for (int p = 0; p < sw->npoints; p++) {
        char path[1100], label[TEXT_LEN], version[128];
        if (point_path(sw, p, path, sizeof path))
            return -1;
        if (access(path, F_OK) != 0)
            continue;
        char *there = NULL, *here = aim_pool_config_lines(&sw->cfg[p]);
        if (!here) {
            fprintf(stderr, "aimdyn sweep: out of memory\n");
            return -1;
        }
        point_label(sw, p, label, sizeof label);
        int rc = read_point(path, &sw->res[p], &there, version, sizeof version);
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

/* ---- computing a point ---- */

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
    const double t0 = now();
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
    r->seconds = now() - t0;
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
    return write_point(sw, p, &r);
}

static void report_progress(const sweep *sw, int p, int finished)
{
    const point_result *r = &sw->res[p];
    char label[TEXT_LEN], what[1024];
    point_label(sw, p, label, sizeof label);
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
    if (p >= 0 && p < sw->npoints && point_path(sw, p, path, sizeof path) == 0 &&
        read_point(path, &sw->res[p], NULL, version, sizeof version) == 0) {
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
static int run_workers(sweep *sw, int status)
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

/* ---- the table, the heatmap, the summary ---- */

/* The table into set. */
static int write_table(const sweep *sw, char *path, size_t n, aim_atomic_set *set)
{
    if (aim_tsv_path(path, n, &sw->base, "sweep", "tsv"))
        return -1;
    aim_tsv *tsv = aim_tsv_open(path);
    int rc = -1;
    if (tsv) {
        FILE *f = aim_tsv_stream(tsv);
        aim_tsv_metadata(tsv, "sweep", &sw->base);
        for (int p = 0; p < sw->npoints; p++) {
            char what[64];
            snprintf(what, sizeof what, "point %d of %d: ", p + 1, sw->npoints);
            if (aim_cli_record_integrations(tsv, what, sw->res[p].integrations,
                                            sw->res[p].stats)) {
                aim_tsv_abort(tsv);
                return -1;
            }
        }
        for (int v = 0; v < sw->nvary; v++) {
            fprintf(f, "# vary: %s =", sw->vary[v].key);
            for (int i = 0; i < sw->vary[v].count; i++)
                fprintf(f, "%s%s", i ? "," : " ", sw->vary[v].values[i]);
            fputc('\n', f);
        }
        fprintf(f, "# sweep: %d points, each the configuration above with its row's values; "
                   "the limit ODE as `aimdyn ode` integrates it\n"
                   "# tau_wr: first tau with |teacher overlap| >= %g (nan: not reached); "
                   "n_wr = tau_wr d^2 / eta at d = sgd.d; tau_end: the last grid point "
                   "reached, overlap_end and risk_end there\n",
                sw->npoints, sw->base.recovery_threshold);
        char name[sizeof sw->vary[0].key + 2];
        for (int v = 0; v < sw->nvary; v++) /* training.eta: column training_eta */
            fprintf(f, "%s\t", aim_tsv_column_name(sw->vary[v].key, name, sizeof name));
        fprintf(f, "%s\n", result_header);
        for (int p = 0; p < sw->npoints; p++) {
            for (int v = 0; v < sw->nvary; v++)
                fprintf(f, "%s\t", point_value(sw, p, v));
            put_result(f, &sw->res[p]);
        }
        rc = aim_tsv_add_to(tsv, set);
    }
    return rc;
}

/* The heatmap into set: cell (panel = value of the third key, row =
 * second, column = first) coloured by tau_wr and annotated. stem is
 * DIR/NAME-sweep. */
static int draw_heatmap(const sweep *sw, const char *stem, aim_atomic_set *set)
{
    const int nx = sw->vary[0].count, ny = sw->nvary > 1 ? sw->vary[1].count : 1;
    const int np = sw->nvary > 2 ? sw->vary[2].count : 1;
    double *value = malloc(sizeof(double) * (size_t)sw->npoints);
    char(*text)[40] = malloc(sizeof *text * (size_t)sw->npoints);
    const char **texts = malloc(sizeof *texts * (size_t)sw->npoints);
    int rc = -1;
    if (!value || !text || !texts) {
        fprintf(stderr, "aimdyn sweep: out of memory\n");
        goto done;
    }
    for (int p = 0; p < sw->npoints; p++) {
        const int i = value_index(sw, p, 0);
        const int j = sw->nvary > 1 ? value_index(sw, p, 1) : 0;
        const int k = sw->nvary > 2 ? value_index(sw, p, 2) : 0;
        const int c = (k * ny + j) * nx + i;
        const point_result *r = &sw->res[p];
        const int blowup = !strcmp(r->status, "blow-up");
        value[c] = r->tau_wr;
        if (isfinite(r->tau_wr))
            snprintf(text[c], sizeof text[c], "%.3g%s", r->tau_wr, blowup ? ", blow-up" : "");
        else if (blowup || !strcmp(r->status, "failed"))
            snprintf(text[c], sizeof text[c], "%s", r->status);
        else /* the ODE ran to the horizon without recovering */
            snprintf(text[c], sizeof text[c], "not by %.3g", r->tau_end);
        texts[c] = text[c];
    }
    char title[128];
    snprintf(title, sizeof title, "limit-ODE weak-recovery time tau_wr (|teacher overlap| >= %g)",
             sw->base.recovery_threshold);
    const aim_plot_heatmap_spec spec = {
        .title = title,
        .xlabel = sw->vary[0].key,
        .ylabel = sw->nvary > 1 ? sw->vary[1].key : "",
        .cblabel = "tau_wr",
        .panel_key = sw->nvary > 2 ? sw->vary[2].key : "",
        .x = sw->vary[0].values,
        .y = sw->nvary > 1 ? sw->vary[1].values : NULL,
        .panel = sw->nvary > 2 ? sw->vary[2].values : NULL,
        .nx = nx,
        .ny = ny,
        .npanels = np,
        .value = value,
        .text = texts};
    rc = aim_plot_heatmap(&spec, stem, set);
done:
    free(value);
    free(text);
    free(texts);
    return rc;
}

/* v with %.4g, or "none" where it is not defined (never a bare nan) */
static const char *shown(char buf[32], double v)
{
    return isnan(v) ? "none" : (snprintf(buf, 32, "%.4g", v), buf);
}

/* The table on stdout, and what the sweep cost: the wall time, and the
 * integrations' times summed over the points computed in this run. */
static void print_summary(const sweep *sw, int computed, double wall)
{
    int width[MAX_VARY];
    for (int v = 0; v < sw->nvary; v++) {
        width[v] = (int)strlen(sw->vary[v].key);
        for (int i = 0; i < sw->vary[v].count; i++)
            if ((int)strlen(sw->vary[v].values[i]) > width[v])
                width[v] = (int)strlen(sw->vary[v].values[i]);
    }
    for (int v = 0; v < sw->nvary; v++)
        printf("%-*s  ", width[v], sw->vary[v].key);
    printf("%-14s %10s %10s %10s\n", "status", "tau_wr", "n_wr", "tau_end");
    double ode = 0.0;
    for (int p = 0; p < sw->npoints; p++) {
        const point_result *r = &sw->res[p];
        char b[3][32];
        for (int v = 0; v < sw->nvary; v++)
            printf("%-*s  ", width[v], point_value(sw, p, v));
        printf("%-14s %10s %10s %10s\n", r->status, shown(b[0], r->tau_wr),
               shown(b[1], r->n_wr), shown(b[2], r->tau_end));
    }
    for (int p = 0; p < sw->npoints; p++)
        if (sw->done[p] == COMPUTED && !isnan(sw->res[p].seconds)) /* NaN: another rank's */
            ode += sw->res[p].seconds;
    printf("%d points (%d computed, %d kept from an earlier run), %d jobs: wall time %.2f s, "
           "ODE time %.2f s summed over the computed points%s",
           sw->npoints, computed, sw->npoints - computed, sw->jobs, wall, ode,
           aim_ranks_count() > 1 ? " of rank 0" : "");
    if (computed > 0 && wall > 0)
        printf(" (speed-up %.2f)", ode / wall);
    printf("\n");
}

static void sweep_free(sweep *sw)
{
    for (int v = 0; v < sw->nvary; v++)
        free(sw->vary[v].list);
    aim_cli_args_free(&sw->args);
    free(sw->cfg);
    free(sw->res);
    free(sw->done);
}

/* The name of DIR/NAME-sweep.d, short enough to be an output.dir. */
static int point_dir(sweep *sw)
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
static int prepare_dirs(const sweep *sw)
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

/* The exit status of a sweep whose table is written, its failed and
 * blown-up points said on stderr: a failed point or heatmap is a run-time
 * failure, else a blow-up is recorded as such. */
static int result_status(const sweep *sw, int heatmap_failed)
{
    int failed = 0, blowups = 0;
    for (int p = 0; p < sw->npoints; p++) {
        failed += !strcmp(sw->res[p].status, "failed");
        blowups += !strcmp(sw->res[p].status, "blow-up");
    }
    if (failed)
        fprintf(stderr, "aimdyn sweep: %d point%s could not be integrated (status failed; the "
                        "message column says why; a rerun computes %s again)\n", failed,
                failed > 1 ? "s" : "", failed > 1 ? "them" : "it");
    if (blowups)
        fprintf(stderr, "aimdyn sweep: %d point%s blew up (status blow-up, recorded in the "
                        "table)\n", blowups, blowups > 1 ? "s" : "");
    return failed || heatmap_failed ? AIM_EXIT_RUNTIME : blowups ? AIM_EXIT_BLOWUP : 0;
}

/* Everything after the checks: resume (reading only, so that a usage
 * error still writes nothing), compute, assemble, draw. */
static int run_sweep(sweep *sw, double t0)
{
    if (point_dir(sw))
        return AIM_EXIT_USAGE;
    /* rank 0 alone reads and prepares the point folder (ranks.h) */
    const int root = aim_ranks_rank() == 0;
    const int kept = root ? keep_finished(sw) : 0;
    const int prepared = kept >= 0 && (!root || prepare_dirs(sw) == 0);
    sw->finished = kept;
    if (run_workers(sw, prepared ? 0 : -1) || !prepared)
        return AIM_EXIT_USAGE;
    if (!root)
        return 0; /* rank 0 writes the table */
    int missing = 0;
    for (int p = 0; p < sw->npoints; p++)
        missing += !sw->done[p];
    if (missing) {
        fprintf(stderr, "aimdyn sweep: %d of %d points have no result (see above); rerun the "
                        "same command to compute them (the finished points are kept)\n",
                missing, sw->npoints);
        return AIM_EXIT_RUNTIME;
    }
    /* the table and the heatmap replace the old ones together */
    char path[1100], stem[1100];
    aim_atomic_set *set = aim_atomic_set_create(sw->base.dir, sw->base.name);
    if (!set || aim_tsv_path(stem, sizeof stem, &sw->base, "sweep", NULL) ||
        write_table(sw, path, sizeof path, set)) {
        aim_atomic_set_free(set);
        return AIM_EXIT_RUNTIME;
    }
    int heatmap_failed = 0;
    const int no_gnuplot = !aim_plot_available();
    if (no_gnuplot || draw_heatmap(sw, stem, set) != 0) {
        heatmap_failed = !no_gnuplot;
        /* an old heatmap would show other results */
        if (aim_plot_stale(set, stem)) {
            aim_atomic_set_free(set);
            return AIM_EXIT_RUNTIME;
        }
    }
    if (aim_atomic_set_commit(set))
        return AIM_EXIT_RUNTIME;
    print_summary(sw, sw->npoints - kept, now() - t0);
    printf("wrote %s\n", path);
    if (no_gnuplot)
        fprintf(stderr, "aimdyn sweep: warning: gnuplot not found, no heatmap (install "
                        "gnuplot-nox); the table is written and an old heatmap of this name "
                        "is removed\n");
    else if (heatmap_failed)
        fprintf(stderr, "aimdyn sweep: the heatmap could not be drawn (see above); the table "
                        "%s is written and an old heatmap of this name is removed\n", path);
    else
        printf("wrote %s.png, %s.svg and %s.gp (its gnuplot script)\n", stem, stem, stem);
    return result_status(sw, heatmap_failed);
}

int aim_cmd_sweep(int argc, char **argv)
{
    const double t0 = now();
    sweep sw;
    memset(&sw, 0, sizeof sw);
    int rc = parse_options(argc, argv, &sw);
    if (rc == 0)
        rc = load_base(&sw) || check_values(&sw) || check_points(&sw) ? -1 : 0;
    int exit_code = rc > 0 ? 0 : rc < 0 ? AIM_EXIT_USAGE : run_sweep(&sw, t0);
    sweep_free(&sw);
    return exit_code;
}
