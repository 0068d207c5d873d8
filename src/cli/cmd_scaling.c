/* aimdyn scaling: how the number of samples to weak recovery grows with
 * the dimension d, measured on per-seed SGD files at several d. Per d the
 * median n_wr with an order-statistic confidence interval; over all
 * recovered seeds a power-law fit of log n_wr against log d, the two
 * one-constant laws of the theory (n ~ d^2, n ~ d^2 log d) and the
 * log-law of the finite-d escape in tau; optionally compared with the
 * predictions of `aimdyn recovery`. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_fit.h>

#include "cli.h"
#include "config.h"
#include "plot.h"
#include "recovery.h"
#include "trajectory.h"
#include "tsv.h"

#define CMD "aimdyn scaling"

/* A confidence interval of the median needs binomial coverage of at
 * least this; the fits' intervals are two-sided t intervals of it. */
#define LEVEL 0.95

/* A fitted exponent equal to a law's exponent up to round-off counts as
 * inside the interval (exact synthetic data give an interval of width 0). */
#define ROUNDOFF 1e-9

static const char usage[] =
    "usage: aimdyn scaling --sgd FILE [--sgd FILE]... [--predict FILE]... [--label TEXT]\n"
    "                      [--figure STEM] [--threshold X] [--out DIR] [--name NAME]\n"
    "\n"
    "How does the number of samples needed for weak recovery grow with the\n"
    "dimension d? Reads per-seed SGD files NAME-sgd-dD-seeds.tsv (written by\n"
    "`aimdyn sgd` or `aimdyn compare`), one per d. For every seed the weak-recovery\n"
    "time tau_wr is the first tau with |teacher overlap| >= X (default: the\n"
    "output.recovery_threshold recorded in the files, which must agree),\n"
    "linearly interpolated between grid points, and its sample count is\n"
    "n_wr = tau_wr d^2 / eta with the d (sgd.d) and learning rate (training.eta)\n"
    "recorded in its file, so the files may follow an eta(d) schedule such as\n"
    "eta ~ 1/log d. A seed that never reaches X is censored: n_wr > n at its\n"
    "last finite grid point. A seed that blew up (its rows stop early, or its\n"
    "overlap is NaN from some tau on, as `aimdyn sgd` writes it) is censored where\n"
    "its overlap was last finite, not at the horizon; a seed whose overlap is NaN\n"
    "from its first row is not valid input.\n"
    "\n"
    "Per d: seeds, recovered seeds, the median n_wr, defined when more than half\n"
    "of the seeds recovered and every censored seed's last finite tau is at\n"
    "least both middle order statistics (a seed that blew up earlier might have\n"
    "recovered below them: \"none (blow-ups)\"), its distribution-free confidence\n"
    "interval [n_(l), n_(N+1-l)] from the order statistics of the N seeds (the\n"
    "narrowest with binomial coverage >= 95 %, printed with its exact coverage;\n"
    "needs N >= 6; an end that a censored seed leaves unknown is open, \"> n\"),\n"
    "the median tau_wr and eta.\n"
    "\n"
    "Fits, by least squares on log n_wr of every recovered seed at every d\n"
    "(they need recovered seeds at 2 or more d; censored seeds are left out,\n"
    "which biases the exponent low when the largest d have censored seeds):\n"
    "  n = c d^a           power law: a, its standard error, its 95 % t interval\n"
    "  n = c d^2           one constant: tau_wr independent of d at a fixed eta\n"
    "  n = c d^2 log d     one constant: the paper's weak-recovery scale\n"
    "  tau_wr = A + B log d  on tau_wr per seed: the finite-d escape from a random\n"
    "                      start overlap of order 1/d takes a time growing like log d\n"
    "Each law's residual sum of squares of ln n_wr (RSS) is printed; the power\n"
    "law's is never larger than that of n = c d^2 (it has one more parameter).\n"
    "Rule: a law is \"supported\" when the 95 % interval of a contains its\n"
    "exponent (to round-off): 2 for d^2; for d^2 log d the exponent that law\n"
    "gives the power-law fit, the least-squares slope of ln(d^2 ln d) against\n"
    "ln d over the same seeds' d (about 2 + 1/ln d). B = 0 (tau_wr independent\n"
    "of d) is supported when B's 95 % interval contains 0.\n"
    "Over a narrow range of d both laws can be supported: read the numbers.\n"
    "\n"
    "options:\n"
    "  --sgd FILE       a per-seed SGD file (repeatable, at least one; one per d)\n"
    "  --predict FILE   predictions of `aimdyn recovery`: a TSV with the columns d and\n"
    "                   n_wr_predicted (nan: no escape predicted), one row per d;\n"
    "                   repeatable, rows merged (each d once). Printed against the\n"
    "                   measured medians (relative gap (measured - predicted) /\n"
    "                   predicted) and drawn on the figure\n"
    "  --label TEXT     what the runs are (the figure's title and the file's metadata)\n"
    "  --threshold X    weak-recovery threshold on |overlap|; allowed 0 < X <= 1\n"
    "                   (default: the files' output.recovery_threshold)\n"
    "  --figure STEM    STEM.png and STEM.svg (gnuplot; its script kept as STEM.gp):\n"
    "                   n_wr against d on log-log axes, medians with their intervals, the seeds as faint points, the\n"
    "                   power law, the predictions (without gnuplot: a warning, the\n"
    "                   TSV is still written); STEM may not start with '|' or '<'\n"
    "  --out DIR        output directory (default out)\n"
    "  --name NAME      file stem (default aimdyn: DIR/aimdyn-scaling.tsv)\n"
    "  --quiet          standard error only for warnings and errors\n"
    "  -h, --help       this help\n"
    "\n"
    "Writes DIR/NAME-scaling.tsv: one row per d (columns d, eta, seeds, recovered,\n"
    "n_horizon, median_n_wr, ci_lo, ci_hi, ci_level, median_tau_wr, n_wr_predicted,\n"
    "rel_gap; ci_lo, ci_hi = inf: not measured, a censored seed's n_wr; nan: not\n"
    "defined), and '#' lines with the inputs, the threshold, every seed's\n"
    "tau_wr and n_wr (or where it was censored, and whether it blew up), the\n"
    "medians not defined because of blow-ups, and the fits.\n"
    "\n"
    "Example (the runs of `sh validate/campaigns/campaign_recovery.sh scaling`):\n"
    "  aimdyn scaling --label \"tied He2, eta = 0.02\" \\\n"
    "      --sgd validate/runs_recovery/tied-he2-sgd-d100-seeds.tsv \\\n"
    "      --sgd validate/runs_recovery/tied-he2-sgd-d200-seeds.tsv \\\n"
    "      --sgd validate/runs_recovery/tied-he2-sgd-d400-seeds.tsv \\\n"
    "      --predict out/tied-recovery.tsv --figure fig/scaling-tied\n"
    "\n"
    "scaling computes no seed: it reads their files in one process. The seeds\n"
    "are computed by `aimdyn sgd --jobs N` (worker processes with one BLAS\n"
    "thread each, OPENBLAS_NUM_THREADS=1; default the online cores).\n"
    "\n"
    "The TSV and the figure replace the old ones together (a figure in another\n"
    "folder than --out right after the TSV). Exit status: 0 done,\n"
    "1 bad usage or input, or another run writing the same files (nothing\n"
    "written), 2 run-time failure (a figure that gnuplot failed to draw: the TSV\n"
    "is written, an old figure at STEM removed).\n";

typedef struct {
    const char **sgd, **predict;
    int nsgd, npredict;
    const char *label, *figure;
    double threshold; /* NAN until given or read from the files */
    int threshold_given;
    aim_config out; /* output.dir and output.name only */
} options;

/* One --sgd file: its d and eta, and per seed the recovery time. */
typedef struct {
    const char *path;
    int order; /* position among the --sgd files */
    int d;
    double eta;
    int nseeds, recovered;
    uint64_t *seed;  /* seed numbers, as recorded */
    double *tau_wr;  /* NaN: censored */
    double *tau_end; /* the last grid point with a finite overlap */
    double tau_max;  /* the recorded horizon (or the last grid point of any
                        seed's rows, if later) */
    /* the linear interpolation's error over the recovered seeds: the
     * largest grid spacing around a crossing, the largest curvature
     * estimate (aim_trajectory_recovery_error) */
    double interp_error[2];
} sgd_run;

/* What is reported per d. NaN: not defined. */
typedef struct {
    double median_n, median_tau;
    double ci_lo, ci_hi, ci_level; /* inf: not measured (a censored seed) */
    double lo_bound, hi_bound;     /* what an inf end is known to exceed, in n */
    double candidate_n; /* the median were every censored seed beyond the
                           horizon: NaN unless the seeds that blew up
                           leave the median undefined */
} dim_stats;

/* One prediction row and the file it came from. */
typedef struct {
    int d;
    double n;
    const char *path;
    int order; /* position among all rows read */
} prediction;

/* A row of the output: a d with SGD runs, a prediction, or both. */
typedef struct {
    int d;
    const sgd_run *run; /* NULL: no --sgd at this d */
    dim_stats st;
    double predicted; /* NaN: none or no escape predicted */
    int has_prediction;
} dim_row;

/* The fits over the recovered seeds; with points == 0 (no fit) only
 * points and dims are set. NaN: not defined (no interval from 2 seeds). */
typedef struct {
    int points, dims;
    double a, log_c, a_se, a_lo, a_hi, rss;   /* n = c d^a */
    double log_c2, rss2;                      /* n = c d^2 */
    double log_c2l, rss2l, a2l;               /* n = c d^2 log d */
    double A, B, B_se, B_lo, B_hi, tau_rss;   /* tau_wr = A + B log d */
} fits;

static int compare_doubles(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* By d, then in the order given (qsort need not be stable; a refusal of
 * two files at one d names them in the order of the command line). */
static int compare_ints(int x, int y)
{
    return (x > y) - (x < y);
}

static int compare_runs(const void *a, const void *b)
{
    const sgd_run *x = a, *y = b;
    return x->d != y->d ? compare_ints(x->d, y->d) : compare_ints(x->order, y->order);
}

static int compare_predictions(const void *a, const void *b)
{
    const prediction *x = a, *y = b;
    return x->d != y->d ? compare_ints(x->d, y->d) : compare_ints(x->order, y->order);
}

static int has_line_break(const char *s)
{
    return strpbrk(s, "\r\n") != NULL;
}

/* ---- options ---- */

static void print_usage(const char *cmd)
{
    (void)cmd;
    fputs(usage, stdout);
}

/* Returns 0, 1 after printing the help, or -1 after a usage message. */
static int parse_options(int argc, char **argv, options *o)
{
    aim_config_defaults(&o->out);
    o->threshold = NAN;
    o->threshold_given = 0;
    const aim_cli_option table[] = {
        {AIM_OPT("sgd", AIM_OPT_TEXTS, 1), .target = o->sgd, .count = &o->nsgd,
         .max_count = argc},
        {AIM_OPT("predict", AIM_OPT_TEXTS, 1), .target = o->predict, .count = &o->npredict,
         .max_count = argc},
        {AIM_OPT("label", AIM_OPT_TEXT, 1), .target = &o->label},
        {AIM_OPT("figure", AIM_OPT_TEXT, 1), .target = &o->figure},
        {AIM_OPT("threshold", AIM_OPT_REAL, 1), .min = 0, .min_open = 1, .max = 1,
         .allowed = "a number X with 0 < X <= 1 (the |teacher overlap| of weak recovery; "
                    "default the files' output.recovery_threshold)",
         .target = &o->threshold, .given = &o->threshold_given},
        {AIM_OPT("out", AIM_OPT_ASSIGN, 1), .assign = "output.dir="},
        {AIM_OPT("name", AIM_OPT_ASSIGN, 1), .assign = "output.name="}};
    const aim_cli_spec spec = {"scaling", table, (int)(sizeof table / sizeof table[0]),
                               print_usage, 0, "every file comes after --sgd or --predict"};
    aim_cli_args args;
    int rc = aim_cli_parse(&spec, argc, argv, &args);
    /* the configuration's own checks of output.dir and output.name */
    aim_config_error err;
    for (int i = 0; rc == 0 && i < args.nsets; i++)
        if (aim_config_set(&o->out, args.sets[i], &err)) {
            fprintf(stderr, CMD ": %s\n", err.message);
            rc = -1;
        }
    aim_cli_args_free(&args);
    if (rc)
        return rc;
    if (o->nsgd == 0) {
        fprintf(stderr, CMD ": no --sgd FILE; allowed: one or more per-seed SGD files "
                        "NAME-sgd-dD-seeds.tsv (see `aimdyn scaling --help`)\n");
        return -1;
    }
    if ((o->label && has_line_break(o->label)) || (o->figure && has_line_break(o->figure))) {
        fprintf(stderr, CMD ": --%s contains a line break; allowed: one line of text\n",
                o->label && has_line_break(o->label) ? "label" : "figure");
        return -1;
    }
    /* the directory too, before anything is written rather than after the TSV */
    if (o->figure && aim_cli_check_figure("scaling", "--figure", o->figure))
        return -1;
    return 0;
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

static void free_runs(sgd_run *runs, int n)
{
    for (int i = 0; runs && i < n; i++) {
        free(runs[i].seed);
        free(runs[i].tau_wr);
        free(runs[i].tau_end);
    }
    free(runs);
}

/* Reads every --sgd file, sorted by d; refuses two files with one d. */
static sgd_run *read_runs(options *o)
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
            free_runs(runs, o->nsgd);
            return NULL;
        }
    }
    qsort(runs, (size_t)o->nsgd, sizeof *runs, compare_runs);
    for (int i = 1; i < o->nsgd; i++)
        if (runs[i].d == runs[i - 1].d) {
            fprintf(stderr, CMD ": --sgd %s and --sgd %s are both at d = %d; allowed: one "
                            "file per d\n", runs[i - 1].path, runs[i].path, runs[i].d);
            free_runs(runs, o->nsgd);
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
static int read_predictions(const options *o, prediction **pred, int *n)
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

/* ---- statistics ---- */

/* Order-statistic interval of the median of n seeds: [X_(l), X_(n+1-l)]
 * covers it with probability 1 - 2 P(B <= l-1), B ~ Binomial(n, 1/2),
 * whatever the distribution. The largest l with coverage >= LEVEL; 0
 * when even l = 1 falls short (n < 6). */
static int median_interval(int n, double *coverage)
{
    int l = 0;
    *coverage = NAN;
    for (int k = 1; 2 * k <= n + 1; k++) {
        const double tail = gsl_cdf_binomial_P((unsigned)(k - 1), 0.5, (unsigned)n);
        if (1 - 2 * tail < LEVEL)
            break;
        l = k;
        *coverage = 1 - 2 * tail;
    }
    return l;
}

/* A seed among the order statistics: its tau_wr, or for a censored seed
 * the last tau where it was seen not to have recovered (its tau_wr is
 * larger). */
typedef struct {
    double tau;
    int censored;
} seed_value;

static int compare_seed_values(const void *a, const void *b)
{
    const seed_value *x = a, *y = b;
    /* at equal tau the censored seed second: its tau_wr is larger */
    return x->tau != y->tau ? compare_doubles(&x->tau, &y->tau)
                            : compare_ints(x->censored, y->censored);
}

/* The order statistics of the seeds' tau_wr: the k-th smallest is
 * measured when the k smallest values in v (sorted) are all recovered
 * (a seed that blew up early may sort before recovered ones); otherwise
 * it is only known to exceed v[k - 1]: inf, with that bound. */
static double order_statistic(const seed_value *v, int known, int k, double to_n,
                              double *bound)
{
    *bound = v[k - 1].tau * to_n;
    return k <= known ? *bound : INFINITY;
}

static int dim_statistics(const sgd_run *run, dim_stats *st)
{
    const int n = run->nseeds;
    seed_value *v = malloc(sizeof *v * (size_t)n);
    if (!v) {
        fprintf(stderr, CMD ": out of memory\n");
        return -1;
    }
    for (int s = 0; s < n; s++) {
        const int censored = isnan(run->tau_wr[s]);
        v[s] = (seed_value){censored ? run->tau_end[s] : run->tau_wr[s], censored};
    }
    qsort(v, (size_t)n, sizeof *v, compare_seed_values);
    int known = 0; /* the order statistics measured: X_(1) .. X_(known) */
    while (known < n && !v[known].censored)
        known++;
    const double to_n = (double)run->d * run->d / run->eta; /* n = tau d^2 / eta */
    /* the median stands when both middle order statistics, up to
     * X_(n/2 + 1), are measured (aim_recovery_median: every seed that did
     * not recover was followed beyond them); else what it would be were
     * every censored seed beyond the horizon */
    st->median_tau = aim_recovery_median(n, run->tau_wr, run->tau_end);
    st->median_n = st->median_tau * to_n;
    st->candidate_n =
        isnan(st->median_tau) ? aim_recovery_median(n, run->tau_wr, NULL) * to_n : NAN;
    const int l = median_interval(n, &st->ci_level);
    st->ci_lo = l ? order_statistic(v, known, l, to_n, &st->lo_bound) : NAN;
    st->ci_hi = l ? order_statistic(v, known, n + 1 - l, to_n, &st->hi_bound) : NAN;
    free(v);
    return 0;
}

/* log c and the RSS of log n = log c + offset: the one free constant is
 * the mean residual. */
static void one_constant_law(int n, const double *y, const double *offset, double *log_c,
                             double *rss)
{
    double mean = 0.0;
    for (int i = 0; i < n; i++)
        mean += (y[i] - offset[i]) / n;
    *rss = 0.0;
    for (int i = 0; i < n; i++)
        *rss += (y[i] - offset[i] - mean) * (y[i] - offset[i] - mean);
    *log_c = mean;
}

/* y = c0 + c1 x by least squares, with c1's standard error and LEVEL
 * t interval (NaN with two points: no degree of freedom left). */
static int line_fit(int n, const double *x, const double *y, double *c0, double *c1,
                    double *se, double *lo, double *hi, double *rss)
{
    double cov00, cov01, cov11;
    int status = gsl_fit_linear(x, 1, y, 1, (size_t)n, c0, c1, &cov00, &cov01, &cov11, rss);
    if (status) {
        fprintf(stderr, CMD ": least-squares fit failed: %s\n", gsl_strerror(status));
        return -1;
    }
    *se = *lo = *hi = NAN;
    if (n > 2) {
        *se = sqrt(cov11);
        const double t = gsl_cdf_tdist_Pinv(0.5 + LEVEL / 2, n - 2);
        *lo = *c1 - t * *se;
        *hi = *c1 + t * *se;
    }
    return 0;
}

/* All fits over the recovered seeds of every run. f->points = 0 when
 * fewer than two d have a recovered seed (no fit). */
static int fit_laws(const sgd_run *runs, int nruns, fits *f)
{
    int n = 0;
    f->dims = 0;
    for (int r = 0; r < nruns; r++) {
        n += runs[r].recovered;
        f->dims += runs[r].recovered > 0;
    }
    f->points = f->dims >= 2 ? n : 0;
    if (!f->points)
        return 0;
    double *x = malloc(sizeof(double) * (size_t)n), *y = malloc(sizeof(double) * (size_t)n);
    double *tau = malloc(sizeof(double) * (size_t)n), *off = malloc(sizeof(double) * (size_t)n);
    int rc = -1;
    if (!x || !y || !tau || !off) {
        fprintf(stderr, CMD ": out of memory\n");
        goto done;
    }
    int i = 0;
    for (int r = 0; r < nruns; r++)
        for (int s = 0; s < runs[r].nseeds; s++) {
            if (isnan(runs[r].tau_wr[s]))
                continue;
            const double d = runs[r].d;
            x[i] = log(d);
            tau[i] = runs[r].tau_wr[s];
            y[i] = log(tau[i] * d * d / runs[r].eta);
            i++;
        }
    if (line_fit(n, x, y, &f->log_c, &f->a, &f->a_se, &f->a_lo, &f->a_hi, &f->rss) ||
        line_fit(n, x, tau, &f->A, &f->B, &f->B_se, &f->B_lo, &f->B_hi, &f->tau_rss))
        goto done;
    for (i = 0; i < n; i++)
        off[i] = 2 * x[i];
    one_constant_law(n, y, off, &f->log_c2, &f->rss2);
    for (i = 0; i < n; i++) /* sgd.d >= 8, so log d > 0 */
        off[i] = 2 * x[i] + log(x[i]);
    one_constant_law(n, y, off, &f->log_c2l, &f->rss2l);
    /* the exponent d^2 log d itself gives the power-law fit: the slope of
     * ln(d^2 ln d) against ln d over the same seeds' d */
    double c0, se, lo, hi, rss;
    if (line_fit(n, x, off, &c0, &f->a2l, &se, &lo, &hi, &rss))
        goto done;
    rc = 0;
done:
    free(x);
    free(y);
    free(tau);
    free(off);
    return rc;
}

/* "yes", "no", or "undecided" without an interval. */
static const char *inside(double lo, double hi, double v)
{
    if (isnan(lo) || isnan(hi))
        return "undecided (no interval from 2 seeds)";
    return lo - ROUNDOFF <= v && v <= hi + ROUNDOFF ? "yes" : "no";
}

/* ---- output ---- */

/* v with %.4g, "none" when not defined. */
static const char *num(char *buf, size_t n, double v)
{
    if (isnan(v))
        snprintf(buf, n, "none");
    else
        snprintf(buf, n, "%.4g", v);
    return buf;
}

/* Rows: the union of the d with runs and with predictions, sorted. */
static dim_row *merge_rows(sgd_run *runs, int nruns, const prediction *pred, int npred,
                           int *nrows)
{
    dim_row *rows = calloc((size_t)(nruns + npred), sizeof *rows);
    if (!rows) {
        fprintf(stderr, CMD ": out of memory\n");
        return NULL;
    }
    int i = 0, j = 0, n = 0;
    while (i < nruns || j < npred) {
        dim_row *row = &rows[n++];
        const int take_run = i < nruns && (j >= npred || runs[i].d <= pred[j].d);
        const int take_pred = j < npred && (i >= nruns || pred[j].d <= runs[i].d);
        row->st = (dim_stats){NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN};
        row->predicted = NAN;
        if (take_run) {
            row->d = runs[i].d;
            row->run = &runs[i++];
            if (dim_statistics(row->run, &row->st)) {
                free(rows);
                return NULL;
            }
        }
        if (take_pred) {
            row->d = pred[j].d;
            row->predicted = pred[j++].n;
            row->has_prediction = 1;
        }
    }
    *nrows = n;
    return rows;
}

static double rel_gap(const dim_row *row)
{
    return (row->st.median_n - row->predicted) / row->predicted;
}

static double n_horizon(const sgd_run *run)
{
    return run->tau_max * run->d * run->d / run->eta;
}

/* A censored seed that stopped before the horizon: it blew up. */
static int blew_up(const sgd_run *run, int s)
{
    return isnan(run->tau_wr[s]) && run->tau_end[s] < run->tau_max;
}

/* The interval as text: "[lo, hi] (99.2 %)", an open end "> n". */
static void interval_text(char *buf, size_t size, const dim_row *row)
{
    char lo[32], hi[32];
    if (isnan(row->st.ci_level)) {
        snprintf(buf, size, "none (fewer than 6 seeds)");
        return;
    }
    if (isinf(row->st.ci_lo))
        snprintf(lo, sizeof lo, "> %.4g", row->st.lo_bound);
    else
        snprintf(lo, sizeof lo, "%.4g", row->st.ci_lo);
    if (isinf(row->st.ci_hi))
        snprintf(hi, sizeof hi, "> %.4g", row->st.hi_bound);
    else
        snprintf(hi, sizeof hi, "%.4g", row->st.ci_hi);
    snprintf(buf, size, "[%s, %s] (%.1f %%)", lo, hi, 100 * row->st.ci_level);
}

static void print_table(const options *o, const dim_row *rows, int nrows)
{
    char b1[32], b2[32], ci[96];
    printf("weak recovery: first tau with |overlap| >= %g, linearly interpolated; "
           "n_wr = tau_wr d^2 / eta\n", o->threshold);
    if (o->label)
        printf("runs: %s\n", o->label);
    printf("\n%6s %10s %5s %9s %15s  %-36s %12s %12s\n", "d", "eta", "seeds", "recovered",
           "median n_wr", "confidence interval of the median", "median tau", "horizon n");
    for (int i = 0; i < nrows; i++) {
        const sgd_run *run = rows[i].run;
        if (!run)
            continue;
        const int blocked = !isnan(rows[i].st.candidate_n);
        interval_text(ci, sizeof ci, &rows[i]);
        printf("%6d %10.4g %5d %9d %15s  %-36s %12s %12.4g\n", run->d, run->eta, run->nseeds,
               run->recovered,
               blocked ? "none (blow-ups)" : num(b1, sizeof b1, rows[i].st.median_n), ci,
               num(b2, sizeof b2, rows[i].st.median_tau), n_horizon(run));
    }
    for (int i = 0; i < nrows; i++) {
        const sgd_run *run = rows[i].run;
        if (!run || run->recovered == run->nseeds)
            continue;
        /* seeds that blew up are censored at their own last finite point */
        printf("d = %d: censored (not recovered by n = %.4g):", run->d, n_horizon(run));
        const char *sep = run->nseeds - run->recovered > 1 ? " seeds" : " seed";
        for (int s = 0; s < run->nseeds; s++)
            if (isnan(run->tau_wr[s])) {
                printf("%s %" PRIu64, sep, run->seed[s]);
                if (blew_up(run, s))
                    printf(" (blow-up: stopped early, at n = %.4g)",
                           run->tau_end[s] * run->d * run->d / run->eta);
                sep = ",";
            }
        putchar('\n');
        if (!isnan(rows[i].st.candidate_n))
            printf("d = %d: median not defined (blow-ups): a seed that blew up stopped below "
                   "the median n = %.4g of the others, and might have recovered before it\n",
                   run->d, rows[i].st.candidate_n);
        else if (isnan(rows[i].st.median_n))
            printf("d = %d: median not reached by n = %.4g (%d of %d seeds recovered)\n",
                   run->d, n_horizon(run), run->recovered, run->nseeds);
    }
}

static void print_fits(const fits *f, int nruns, int censored, int eta_varies)
{
    char b[4][32];
    putchar('\n');
    if (!f->points) {
        printf("no fit: recovered seeds at %d d (of %d); the fits need 2 or more\n", f->dims,
               nruns);
        return;
    }
    printf("fits on log n_wr of %d recovered seeds at %d d", f->points, f->dims);
    if (censored)
        printf(" (%d censored seeds left out: at the largest d this biases a low)", censored);
    printf(":\n  n = c d^a          a = %.4g, s.e. %s, 95 %% interval [%s, %s]; c = %.4g; "
           "RSS = %.4g\n",
           f->a, num(b[0], 32, f->a_se), num(b[1], 32, f->a_lo), num(b[2], 32, f->a_hi),
           exp(f->log_c), f->rss);
    printf("  n = c d^2          c = %.4g; RSS = %.4g; exponent 2 in the interval "
           "(supported): %s\n", exp(f->log_c2), f->rss2, inside(f->a_lo, f->a_hi, 2.0));
    printf("  n = c d^2 log d    c = %.4g; RSS = %.4g; its exponent over these d (slope of "
           "ln(d^2 ln d) on ln d) %.4g in the interval (supported): %s\n", exp(f->log_c2l),
           f->rss2l, f->a2l, inside(f->a_lo, f->a_hi, f->a2l));
    printf("  tau_wr = A + B log d  A = %.4g, B = %.4g, s.e. %s, 95 %% interval [%s, %s]; "
           "B = 0 (tau_wr independent of d) in the interval: %s\n", f->A, f->B,
           num(b[0], 32, f->B_se), num(b[1], 32, f->B_lo), num(b[2], 32, f->B_hi),
           inside(f->B_lo, f->B_hi, 0.0));
    if (eta_varies)
        printf("  (eta differs between the files: tau_wr compares different learning "
               "rates; n = c d^2 no longer means tau_wr independent of d)\n");
    printf("rule: a law is supported when the 95 %% interval of a contains its exponent; "
           "RSS = residual sum of squares of ln n_wr\n");
}

static void print_predictions(const dim_row *rows, int nrows)
{
    char b[3][32];
    printf("\npredicted (aimdyn recovery) against the measured median n_wr:\n%6s %14s %14s "
           "%12s\n", "d", "predicted", "measured", "rel. gap");
    for (int i = 0; i < nrows; i++) {
        const dim_row *row = &rows[i];
        if (!row->has_prediction)
            continue;
        printf("%6d %14s %14s %12s\n", row->d,
               isnan(row->predicted) ? "no escape" : num(b[0], 32, row->predicted),
               row->run ? num(b[1], 32, row->st.median_n) : "no --sgd",
               num(b[2], 32, rel_gap(row)));
    }
    printf("(rel. gap = (measured - predicted) / predicted; none where either is missing)\n");
}

/* The command line, quoted where a word would not survive a shell. */
static char *command_line(int argc, char **argv)
{
    size_t n = sizeof "aimdyn";
    for (int i = 0; i < argc; i++) /* a space, two quotes, each ' as '\'' */
        n += 4 * strlen(argv[i]) + 3;
    char *s = malloc(n), *p = s;
    if (!s)
        return NULL;
    p += sprintf(p, "aimdyn");
    for (int i = 0; i < argc; i++) {
        const int quote = !*argv[i] || strpbrk(argv[i], " \t'\"\\$`*?;&|<>()") != NULL;
        *p++ = ' ';
        if (quote)
            *p++ = '\'';
        for (const char *c = argv[i]; *c; c++) {
            if (quote && *c == '\'') {
                memcpy(p, "'\\''", 4);
                p += 4;
            } else {
                *p++ = *c;
            }
        }
        if (quote)
            *p++ = '\'';
    }
    *p = '\0';
    return s;
}

static void write_fit_lines(FILE *f, const fits *ft)
{
    if (!ft->points) {
        fprintf(f, "# fit: none (recovered seeds at %d d; the fits need 2 or more)\n",
                ft->dims);
        return;
    }
    fprintf(f, "# fit data: ln n_wr of %d recovered seeds at %d d, least squares\n",
            ft->points, ft->dims);
    fprintf(f, "# fit n = c d^a: a = %.10g, a_se = %.10g, a_ci95 = %.10g %.10g, c = %.10g, "
               "rss = %.10g\n", ft->a, ft->a_se, ft->a_lo, ft->a_hi, exp(ft->log_c), ft->rss);
    fprintf(f, "# fit n = c d^2: c = %.10g, rss = %.10g, exponent = 2, supported = %s\n",
            exp(ft->log_c2), ft->rss2, inside(ft->a_lo, ft->a_hi, 2.0));
    fprintf(f, "# fit n = c d^2 log d: c = %.10g, rss = %.10g, exponent = %.10g (least-squares "
               "slope of ln(d^2 ln d) on ln d over the fitted seeds), supported = %s\n",
            exp(ft->log_c2l), ft->rss2l, ft->a2l, inside(ft->a_lo, ft->a_hi, ft->a2l));
    fprintf(f, "# fit tau_wr = A + B log d: A = %.10g, B = %.10g, B_se = %.10g, B_ci95 = "
               "%.10g %.10g, rss = %.10g, B = 0 inside = %s\n", ft->A, ft->B, ft->B_se,
            ft->B_lo, ft->B_hi, ft->tau_rss, inside(ft->B_lo, ft->B_hi, 0.0));
    fprintf(f, "# rule: a law is supported when the 95 %% interval of a contains its exponent "
               "(2; for d^2 log d the slope of ln(d^2 ln d) on ln d over the fitted seeds); "
               "nan: not defined (2 seeds)\n");
}

/* DIR/NAME-scaling.tsv into set */
static int write_tsv(const options *o, const char *cmdline, const sgd_run *runs, int nruns,
                     const dim_row *rows, int nrows, const fits *ft, char *path, size_t size,
                     aim_atomic_set *set)
{
    aim_tsv *tsv;
    if (aim_tsv_path(path, size, &o->out, "scaling", "tsv") || !(tsv = aim_tsv_open(path)))
        return -1;
    FILE *f = aim_tsv_stream(tsv);
    aim_tsv_metadata(tsv, cmdline, NULL);
    fprintf(f, "# scaling: weak recovery = first tau with |overlap| >= threshold, linearly "
               "interpolated; n_wr = tau_wr d^2 / eta\n# threshold = %.10g\n", o->threshold);
    if (o->label)
        fprintf(f, "# label = %s\n", o->label);
    for (int r = 0; r < nruns; r++)
        fprintf(f, "# sgd %s: d = %d, eta = %.10g, seeds = %d\n", runs[r].path, runs[r].d,
                runs[r].eta, runs[r].nseeds);
    for (int r = 0; r < nruns; r++)
        fprintf(f, "# interpolation error of tau_wr at d = %d: at most the grid spacing around "
                   "a crossing (largest %.3g), estimated h^2 |f''|/(8 |f'|) <= %.3g "
                   "(theory/stops.md sec. 5)\n",
                runs[r].d, runs[r].interp_error[0], runs[r].interp_error[1]);
    for (int i = 0; i < o->npredict; i++)
        fprintf(f, "# predict %s\n", o->predict[i]);
    for (int r = 0; r < nruns; r++)
        for (int s = 0; s < runs[r].nseeds; s++) {
            const double to_n = (double)runs[r].d * runs[r].d / runs[r].eta;
            if (isnan(runs[r].tau_wr[s]))
                fprintf(f, "# seed d = %d, seed = %" PRIu64 ": censored, %stau_end = %.10g, n_end = "
                           "%.10g\n", runs[r].d, runs[r].seed[s],
                        blew_up(&runs[r], s) ? "blow-up (stopped early), " : "",
                        runs[r].tau_end[s], runs[r].tau_end[s] * to_n);
            else
                fprintf(f, "# seed d = %d, seed = %" PRIu64 ": tau_wr = %.10g, n_wr = %.10g\n",
                        runs[r].d, runs[r].seed[s], runs[r].tau_wr[s],
                        runs[r].tau_wr[s] * to_n);
        }
    for (int i = 0; i < nrows; i++)
        if (!isnan(rows[i].st.candidate_n))
            fprintf(f, "# median d = %d: not defined (blow-ups): a seed that blew up stopped "
                       "below the median n = %.10g of the others\n", rows[i].d,
                    rows[i].st.candidate_n);
    write_fit_lines(f, ft);
    fprintf(f, "# columns: ci_lo, ci_hi = order-statistic interval of the median with coverage "
               "ci_level (inf: not measured, a censored seed's n_wr); rel_gap = (median - "
               "predicted) / predicted; nan: not defined\n");
    fputs("d\teta\tseeds\trecovered\tn_horizon\tmedian_n_wr\tci_lo\tci_hi\tci_level\t"
          "median_tau_wr\tn_wr_predicted\trel_gap\n", f);
    for (int i = 0; i < nrows; i++) {
        const dim_row *row = &rows[i];
        const sgd_run *run = row->run;
        fprintf(f, "%d\t%.10g\t%d\t%d\t%.10g\t%.10g\t%.10g\t%.10g\t%.10g\t%.10g\t%.10g\t%.10g\n",
                row->d, run ? run->eta : NAN, run ? run->nseeds : 0, run ? run->recovered : 0,
                run ? n_horizon(run) : NAN, row->st.median_n, row->st.ci_lo, row->st.ci_hi,
                row->st.ci_level, row->st.median_tau, row->predicted, rel_gap(row));
    }
    return aim_tsv_add_to(tsv, set);
}

/* The figure into set; 0, 1 when gnuplot is missing (warned), -1 on
 * failure. */
static int write_figure(const options *o, const sgd_run *runs, int nruns, const dim_row *rows,
                        int nrows, const fits *ft, aim_atomic_set *set)
{
    if (!aim_plot_available()) {
        fprintf(stderr, CMD ": warning: gnuplot not found, no figure (install gnuplot-nox); "
                        "the TSV is written and an old figure %s.png/.svg is removed\n",
                o->figure);
        return 1;
    }
    int nseeds = 0, npred = 0;
    for (int r = 0; r < nruns; r++)
        nseeds += runs[r].recovered;
    for (int i = 0; i < nrows; i++)
        npred += rows[i].has_prediction;
    const size_t nd = (size_t)nrows + 1, ns = (size_t)nseeds + 1;
    double *d = malloc(sizeof(double) * nd), *med = malloc(sizeof(double) * nd);
    double *lo = malloc(sizeof(double) * nd), *hi = malloc(sizeof(double) * nd);
    double *pd = malloc(sizeof(double) * nd), *pn = malloc(sizeof(double) * nd);
    double *sd = malloc(sizeof(double) * ns), *sn = malloc(sizeof(double) * ns);
    int rc = -1;
    if (!d || !med || !lo || !hi || !pd || !pn || !sd || !sn) {
        fprintf(stderr, CMD ": out of memory\n");
        goto done;
    }
    int nm = 0, np = 0, k = 0;
    for (int i = 0; i < nrows; i++) {
        if (rows[i].run) {
            d[nm] = rows[i].d;
            med[nm] = rows[i].st.median_n;
            lo[nm] = rows[i].st.ci_lo;
            hi[nm++] = rows[i].st.ci_hi;
        }
        if (rows[i].has_prediction) {
            pd[np] = rows[i].d;
            pn[np++] = rows[i].predicted;
        }
    }
    for (int r = 0; r < nruns; r++)
        for (int s = 0; s < runs[r].nseeds; s++)
            if (!isnan(runs[r].tau_wr[s])) {
                sd[k] = runs[r].d;
                sn[k++] = runs[r].tau_wr[s] * runs[r].d * runs[r].d / runs[r].eta;
            }
    char key[160] = "";
    if (ft->points && isnan(ft->a_se))
        snprintf(key, sizeof key, "power law n = c d^{a}, a = %.3g", ft->a);
    else if (ft->points)
        snprintf(key, sizeof key, "power law n = c d^{a}, a = %.3g +- %.2g", ft->a, ft->a_se);
    const aim_plot_scaling_spec sp = {nm, d, med, lo, hi, nseeds, sd, sn,
                                      ft->points ? exp(ft->log_c) : NAN,
                                      ft->points ? ft->a : NAN, key, npred, pd, pn, o->label};
    rc = aim_plot_scaling(&sp, o->figure, set);
done:
    free(d);
    free(med);
    free(lo);
    free(hi);
    free(pd);
    free(pn);
    free(sd);
    free(sn);
    return rc;
}

int aim_cmd_scaling(int argc, char **argv)
{
    options o = {0};
    o.sgd = malloc(sizeof(char *) * (size_t)(argc + 1));
    o.predict = malloc(sizeof(char *) * (size_t)(argc + 1));
    sgd_run *runs = NULL;
    prediction *pred = NULL;
    dim_row *rows = NULL;
    char *cmdline = NULL;
    int npred = 0, nrows = 0, exit_code = AIM_EXIT_USAGE;
    if (!o.sgd || !o.predict) {
        fprintf(stderr, CMD ": out of memory\n");
        exit_code = AIM_EXIT_RUNTIME;
        goto done;
    }
    int parsed = parse_options(argc, argv, &o);
    if (parsed) {
        exit_code = parsed > 0 ? 0 : AIM_EXIT_USAGE;
        goto done;
    }
    if (!(runs = read_runs(&o)) || read_predictions(&o, &pred, &npred) ||
        aim_tsv_prepare_dir(&o.out) || (o.figure && aim_cli_lock_figure(o.figure, NULL)))
        goto done;

    exit_code = AIM_EXIT_RUNTIME;
    fits ft;
    if (!(rows = merge_rows(runs, o.nsgd, pred, npred, &nrows)) || fit_laws(runs, o.nsgd, &ft))
        goto done;
    if (!(cmdline = command_line(argc, argv))) {
        fprintf(stderr, CMD ": out of memory\n");
        goto done;
    }
    int censored = 0, eta_varies = 0;
    for (int r = 0; r < o.nsgd; r++) {
        censored += runs[r].nseeds - runs[r].recovered;
        eta_varies |= runs[r].eta != runs[0].eta;
    }
    print_table(&o, rows, nrows);
    print_fits(&ft, o.nsgd, ft.points ? censored : 0, eta_varies);
    if (npred)
        print_predictions(rows, nrows);

    /* the TSV and the figure replace the old ones together; a figure
     * that cannot be drawn must not stay beside the new TSV. A figure in
     * another folder has a set of its own there (a journal names the
     * files of its own folder only), committed right after the TSV's. */
    char path[1100];
    aim_atomic_set *set = aim_atomic_set_create(o.out.dir, o.out.name), *figset = NULL;
    aim_atomic_set *drawn = set;
    if (set && o.figure && !aim_atomic_set_in_folder(set, o.figure))
        drawn = aim_cli_lock_figure(o.figure, &figset) == 0 ? figset : NULL;
    int fig = 0;
    if (!drawn ||
        write_tsv(&o, cmdline, runs, o.nsgd, rows, nrows, &ft, path, sizeof path, set) ||
        (o.figure && (fig = write_figure(&o, runs, o.nsgd, rows, nrows, &ft, drawn)) != 0 &&
         aim_plot_stale(drawn, o.figure))) {
        aim_atomic_set_free(set);
        aim_atomic_set_free(figset);
        goto done;
    }
    const int committed = aim_atomic_set_commit(set);
    if (committed || (figset && aim_atomic_set_commit(figset))) {
        if (committed)
            aim_atomic_set_free(figset);
        goto done;
    }
    printf("\nwrote %s\n", path);
    if (o.figure && fig == 0)
        printf("wrote %s.png, %s.svg and %s.gp (its gnuplot script)\n", o.figure, o.figure,
               o.figure);
    if (fig < 0)
        fprintf(stderr, CMD ": the figure could not be drawn (see above); the TSV is written "
                        "and an old figure %s.png/.svg is removed\n", o.figure);
    exit_code = fig < 0 ? AIM_EXIT_RUNTIME : 0;
done:
    free_runs(runs, o.nsgd);
    free(pred);
    free(rows);
    free(cmdline);
    free(o.sgd);
    free(o.predict);
    return exit_code;
}
