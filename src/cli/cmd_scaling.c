/* aimdyn scaling: how the number of samples to weak recovery grows with
 * the dimension d, measured on per-seed SGD files at several d. Per d the
 * median n_wr with an order-statistic confidence interval; over all
 * recovered seeds a power-law fit of log n_wr against log d, the two
 * one-constant laws of the theory (n ~ d^2, n ~ d^2 log d) and the
 * log-law of the finite-d escape in tau; optionally compared with the
 * predictions of `aimdyn recovery`.
 *
 * This file: the options and the run. Reading the files: scaling_read.c;
 * the statistics and the fits: scaling_fit.c; stdout, the TSV and the
 * figure: scaling_output.c (what they share: scaling_internal.h). */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "config.h"
#include "plot.h"
#include "scaling_internal.h"
#include "tsv.h"

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
    if (!(runs = aim_scaling_read_runs(&o)) || aim_scaling_read_predictions(&o, &pred, &npred) ||
        aim_tsv_prepare_dir(&o.out) || (o.figure && aim_cli_lock_figure(o.figure, NULL)))
        goto done;

    exit_code = AIM_EXIT_RUNTIME;
    fits ft;
    if (!(rows = aim_scaling_merge_rows(runs, o.nsgd, pred, npred, &nrows)) ||
        aim_scaling_fit_laws(runs, o.nsgd, &ft))
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
    aim_scaling_print_table(&o, rows, nrows);
    aim_scaling_print_fits(&ft, o.nsgd, ft.points ? censored : 0, eta_varies);
    if (npred)
        aim_scaling_print_predictions(rows, nrows);

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
        aim_scaling_write_tsv(&o, cmdline, runs, o.nsgd, rows, nrows, &ft, path, sizeof path,
                              set) ||
        (o.figure &&
         (fig = aim_scaling_write_figure(&o, runs, o.nsgd, rows, nrows, &ft, drawn)) != 0 &&
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
    aim_scaling_free_runs(runs, o.nsgd);
    free(pred);
    free(rows);
    free(cmdline);
    free(o.sgd);
    free(o.predict);
    return exit_code;
}
