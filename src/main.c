/* aimdyn: command-line front end. Each subcommand reads a configuration
 * (file + --set overrides), runs one stage of the pipeline and writes
 * TSV files (atomically) and figures. Exit status: 0 success, 1 bad
 * usage or configuration (nothing run, nothing written), 2 run-time
 * failure (no result file left), 3 blow-up (the file records it). */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>

#include "cli.h"
#include "compare.h"
#include "config.h"
#include "grid.h"
#include "ode.h"
#include "plot.h"
#include "recovery.h"
#include "sgd.h"
#include "trajectory.h"
#include "tsv.h"
#include "tied.h"
#include "untied.h"
#include "version.h"
#include "words.h"

#define MAX_DIMS 8
#define MAX_ORDERS 10
#define MAX_STUDENTS 3 /* direct, tied, untied */

static const char *const usage_main =
    "aimdyn " AIM_VERSION " - how fast, and whether at all, an attention layer learns\n"
    "\n"
    "usage: aimdyn COMMAND [CONFIG.ini] [options]\n"
    "\n"
    "commands:\n"
    "  ode      integrate the high-dimensional limit ODE (SUNDIALS CVODE)\n"
    "  sgd      run online SGD at finite d over several seeds\n"
    "  compare  both, plus the agreement table and the figure\n"
    "  hierarchy print the generated moment hierarchy (tied and untied students)\n"
    "  agreement the agreement table of existing ode and sgd result files\n"
    "  plot     draw the figure from existing ode/sgd result files\n"
    "  recovery will it learn, and after how many samples: escape conditions,\n"
    "           weak-recovery time, the finite-d escape and its scaling in d\n"
    "  sweep    predicted weak-recovery times over a grid of configurations\n"
    "           (parallel, resumable) and their heatmap\n"
    "  scaling  weak-recovery samples against d from SGD runs: fitted\n"
    "           exponents, the laws they support, the figure\n"
    "  keys     print every configuration key with its default and range\n"
    "\n"
    "Without CONFIG.ini the built-in default example is used (direct\n"
    "attention, centred, T = 2, sigma = He1 + He2/sqrt 2). Every key can be\n"
    "overridden with --set section.key=value; see `aimdyn keys` and\n"
    "docs/config.md. `aimdyn COMMAND --help` lists the command's options.\n"
    "\n"
    "Examples:\n"
    "  aimdyn compare                              # the default example\n"
    "  aimdyn ode examples/direct_he2.ini --set training.eta=0.05\n"
    "  aimdyn compare examples/direct_he1he2_T2.ini --d 400 --d 800\n"
    "  aimdyn compare examples/tied_softmax_T4.ini --order 1 --order 2 --order 3\n"
    "  aimdyn hierarchy examples/tied_softmax_T4.ini --order 3 --latex\n"
    "\n"
    "Exit status: 0 done, 1 bad usage or configuration, or another run writing\n"
    "into the same output.dir and output.name (nothing written), 2 run-time\n"
    "failure (the files of an earlier run left as they were) or gnuplot failed\n"
    "(the tables written, no figure), 3 blow-up (recorded), 128 + N ended by\n"
    "signal N (SIGINT 130, SIGTERM 143: nothing temporary left; a run killed\n"
    "with SIGKILL is cleaned up after by the next run of the same name).\n"
    "A run's files replace those of an earlier run together or not at all\n"
    "(README.md, \"Failures and interruptions\").\n";

static void print_usage(FILE *out, const char *cmd)
{
    if (!cmd) {
        fputs(usage_main, out);
        return;
    }
    if (!strcmp(cmd, "ode"))
        fprintf(out,
                "usage: aimdyn ode [CONFIG.ini] [options]\n\n"
                "Integrates the limit ODE on the training grid (training.points\n"
                "points up to training.horizon in tau = n eta / d^2) and writes\n"
                "DIR/NAME-ode.tsv: tau, n, t, risk, teacher overlap and all order\n"
                "parameters. Prints the weak-recovery time (first tau with\n"
                "|overlap| >= output.recovery_threshold, by root finding). A run that\n"
                "stops early (blow-up, or a hierarchy that left the valid moments) keeps\n"
                "its rows, says why in the file's # status line, and exits 3\n"
                "(theory/stops.md).\n\n"
                "options:\n"
                "  --d D                    dimension for the sample count n = tau d^2/eta\n"
                "                           and for the raw-mode mean (default sgd.d;\n"
                "                           ode.d overrides it for the mean)\n"
                "  --generic                quasi-random rule for every output map\n"
                "                           (ode.rule = generic)\n"
                "                           (default: Gauss-Hermite for elementwise maps)\n"
                "  --order M                tied, untied: truncation order (hierarchy.order)\n"
                "Tied and untied students also get one column per tracked moment m(w) = Tr(w)/d.\n"
                "%s",
                aim_cli_usage_common);
    else if (!strcmp(cmd, "sgd"))
        fprintf(out,
                "usage: aimdyn sgd [CONFIG.ini] [options]\n\n"
                "Runs online SGD (MODEL.md sec. 5) for sgd.seeds seeds at dimension\n"
                "sgd.d, measuring every observable on the training grid: the order\n"
                "parameters exactly from the matrices, the risk on sgd.holdout held-out\n"
                "samples per seed (risk_gauss: the Gaussian formula on the measured\n"
                "order parameters, for comparison). Writes DIR/NAME-sgd-dD.tsv (mean\n"
                "and standard error per observable) and DIR/NAME-sgd-dD-seeds.tsv\n"
                "(every seed).\n\n"
                "options:\n"
                "  --d D                    dimension (sgd.d, default 200)\n"
                "  --seeds N                number of seeds (sgd.seeds, default 8)\n"
                "%s",
                aim_cli_usage_common);
    else if (!strcmp(cmd, "compare"))
        fprintf(out,
                "usage: aimdyn compare [CONFIG.ini] [options]\n\n"
                "Runs the ODE and SGD at each dimension, writes their files (as\n"
                "`ode` and `sgd` do), the agreement table DIR/NAME-agreement.tsv\n"
                "(largest gap per observable in absolute terms and in SGD standard\n"
                "errors, weak-recovery times) and the figures\n"
                "DIR/NAME-compare-dD.png/.svg (risk and overlap: ODE over SGD).\n"
                "All these files replace those of an earlier run together, once every d\n"
                "is done: a compare that fails or is interrupted changes nothing. If gnuplot\n"
                "fails, the tables are written, an old figure of the name removed, and the\n"
                "exit status is 2; without gnuplot the same with a warning, status 0.\n\n"
                "options:\n"
                "  --d D                    a dimension (repeatable; default sgd.d)\n"
                "  --seeds N                seeds per dimension (sgd.seeds)\n"
                "  --generic                quasi-random rule for every output map\n"
                "                           (ode.rule = generic)\n"
                "  --order M                tied, untied: a truncation order (repeatable, increasing;\n"
                "                           default hierarchy.order): one ODE per order,\n"
                "                           files NAME-MM-..., every order in the figure\n"
                "                           and in the agreement table\n"
                "  --students LIST          several students of the same teacher, data, seeds\n"
                "                           and learning rate, LIST a comma-separated subset of\n"
                "                           direct,tied,untied (model.decomposition of each):\n"
                "                           the files of each as above under NAME-STUDENT, and\n"
                "                           per d the figure NAME-students-dD (each student's\n"
                "                           ODE of the last order over its SGD). Tied students\n"
                "                           need a symmetric teacher and centred indices, e.g.\n"
                "                           examples/students_he2.ini\n"
                "%s",
                aim_cli_usage_common);
    else if (!strcmp(cmd, "hierarchy"))
        fprintf(out,
                "usage: aimdyn hierarchy [CONFIG.ini] [--order M] [--latex] [--set ...]\n\n"
                "Prints the moment hierarchy that `ode` integrates for a tied student\n"
                "(S = W W^T, letters S and T = S*) or an untied one (S = U V^T, letters\n"
                "A = U U^T, B = V V^T, K = U V^T, k = V U^T, T and t = S*^T): for every\n"
                "tracked word w (length 1..M, at least one student letter) the\n"
                "generated right-hand side of d m(w)/dtau, m(w) = Tr(w)/d, in terms of\n"
                "the scalar kernels of the expectation engine (lambda: the raw mean),\n"
                "and the number of equations and terms. Words of length M + 1 are\n"
                "closed with hierarchy.closure. Derivation: theory/tied.md,\n"
                "theory/untied.md.\n\n"
                "options:\n"
                "  --order M                truncation order (hierarchy.order, default 4)\n"
                "  --latex                  LaTeX (align*) instead of plain text\n"
                "  --set section.key=value  override one configuration key (repeatable)\n");
    else if (!strcmp(cmd, "plot"))
        fprintf(out,
                "usage: aimdyn plot [--ode FILE [--label L]]... [--sgd FILE]... --figure STEM\n"
                "                   [--log-tau] [--samples D] [--mean]\n\n"
                "Draws risk and teacher overlap against tau from existing result\n"
                "files (either may be omitted) into STEM.png and STEM.svg; several\n"
                "--ode files (e.g. one per hierarchy order) share the figure, each\n"
                "with its --label if given, over one SGD summary; with one --sgd per\n"
                "--ode (paired in order, e.g. one per activation) each pair is a case\n"
                "in its own colour;\n"
                "--log-tau puts tau on a log axis (for log grids: the fast phase);\n"
                "--samples D puts the samples n / d^2 on a log axis, the files being\n"
                "for d = D (NAME-ode.tsv written with --d D, NAME-sgd-dD.tsv);\n"
                "--mean adds a panel with the student mean (raw centring).\n"
                "The PNG and SVG replace the old pair together, once gnuplot has drawn\n"
                "both completely; if it fails (exit status 2) the old figure stays.\n"
                "STEM and the files may not start with '|' or '<'.\n"
                "example (the paper's Figure 3 from validate/campaign_untied.sh):\n"
                "  aimdyn plot --samples 400 --figure fig3 \\\n"
                "      --ode fig3-he1-M4-d400-ode.tsv --sgd fig3-he1-sgd-d400.tsv --label He1 \\\n"
                "      --ode fig3-he2-M4-d400-ode.tsv --sgd fig3-he2-sgd-d400.tsv --label He2\n");
    else if (!strcmp(cmd, "agreement"))
        fprintf(out,
                "usage: aimdyn agreement --sgd FILE --ode FILE [--ode FILE]... [--upto TAU]\n\n"
                "Prints, for each ODE result file, the largest gap of every observable\n"
                "to the SGD mean of an SGD summary file (NAME-sgd-dD.tsv) on their\n"
                "common tau grid: absolute, in SGD standard errors and relative to the\n"
                "ODE's largest value (risk: against the risk measured on held-out\n"
                "samples; risk_gauss, where the file has it: against the Gaussian\n"
                "formula on SGD's order parameters). --upto limits the comparison to\n"
                "tau <= TAU. An ODE that stopped early (blow-up, or a hierarchy that\n"
                "left the valid moments) has an infinite gap where SGD goes on. Used\n"
                "to compare several hierarchy orders or closures with one set of SGD\n"
                "runs.\n");
    else if (!strcmp(cmd, "keys"))
        fprintf(out, "usage: aimdyn keys\n\nPrints every configuration key.\n");
}

typedef struct {
    aim_config cfg;
    int dims[MAX_DIMS], ndims; /* compare's dimensions; else sgd.d */
    int orders[MAX_ORDERS], norders; /* compare's truncation orders */
    int order_given;           /* --order appeared */
    int latex;                 /* hierarchy: LaTeX output */
    /* compare --students: each student's configuration (model.decomposition
     * and output.name NAME-STUDENT set, validated) */
    aim_config student_cfg[MAX_STUDENTS];
    int nstudents;
} run_options;

static const char *const student_names[] = {"direct", "tied", "untied"};

/* compare --students LIST: the configuration of each student, in the
 * order given, from the common one; -1 after a message. The teacher,
 * data, seeds and learning rate are those of cfg for all of them (SGD
 * draws its teacher and samples from streams that do not depend on the
 * student, src/draw.h). */
static int parse_students(const char *list, run_options *ro)
{
    char buf[64];
    if (snprintf(buf, sizeof buf, "%s", list) >= (int)sizeof buf) {
        fprintf(stderr, "aimdyn compare: --students %.60s...: too long; allowed: a comma-separated "
                        "list of direct, tied, untied\n", list);
        return -1;
    }
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int k = -1;
        for (int i = 0; i < MAX_STUDENTS; i++)
            if (!strcmp(tok, student_names[i]))
                k = i;
        for (int s = 0; k >= 0 && s < ro->nstudents; s++)
            if ((int)ro->student_cfg[s].decomposition == k) {
                fprintf(stderr, "aimdyn compare: --students %s: '%s' given twice\n", list, tok);
                return -1;
            }
        if (k < 0) {
            fprintf(stderr, "aimdyn compare: --students %s: unknown student '%s'; allowed: a "
                            "comma-separated list of direct, tied, untied\n", list, tok);
            return -1;
        }
        aim_config *c = &ro->student_cfg[ro->nstudents++];
        *c = ro->cfg;
        char set[64];
        aim_config_error err;
        snprintf(set, sizeof set, "model.decomposition=%s", tok);
        if (aim_config_set(c, set, &err) || aim_config_validate(c, &err)) {
            fprintf(stderr, "aimdyn compare: --students %s: the %s student: %s\n", list, tok,
                    err.message);
            return -1;
        }
        char name[sizeof c->name];
        snprintf(name, sizeof name, "%s", ro->cfg.name);
        snprintf(c->name, sizeof c->name, "%.100s-%s", name, tok);
    }
    if (ro->nstudents == 0) {
        fprintf(stderr, "aimdyn compare: --students '%s': empty; allowed: a comma-separated list "
                        "of direct, tied, untied\n", list);
        return -1;
    }
    return 0;
}

/* Parses a list option's integer (--d, --order) into list, increasing. */
static int add_to_list(const char *cmd, const char *opt, const char *arg, long lo,
                       long hi, int *list, int *count, int max)
{
    char *end;
    long v = strtol(arg, &end, 10);
    if (*end || end == arg || v < lo || v > hi) {
        fprintf(stderr, "aimdyn %s: %s %s: not allowed; allowed: an integer from %ld to %ld\n",
                cmd, opt, arg, lo, hi);
        return -1;
    }
    if (*count == max) {
        fprintf(stderr, "aimdyn %s: %s given too often (at most %d)\n", cmd, opt, max);
        return -1;
    }
    if (*count > 0 && v <= list[*count - 1]) {
        fprintf(stderr, "aimdyn %s: %s %ld: values must be given in increasing "
                        "order without repeats\n", cmd, opt, v);
        return -1;
    }
    list[(*count)++] = (int)v;
    return 0;
}

/* Online SGD measures at the grid points, each a later step than the one
 * before: otherwise its files would give one state several tau (at
 * eta = 1e6 a run takes no step at all). Returns 0, or -1 after a message
 * naming the keys. */
static int sgd_grid_usable(const char *cmd, const aim_config *cfg, int d)
{
    double *tau = malloc(sizeof(double) * (size_t)cfg->points);
    if (!tau) {
        fprintf(stderr, "aimdyn %s: out of memory\n", cmd);
        return -1;
    }
    aim_grid_fill(cfg, tau);
    int i = 1;
    while (i < cfg->points &&
           aim_sgd_steps_for(cfg, d, tau[i]) > aim_sgd_steps_for(cfg, d, tau[i - 1]))
        i++;
    if (i < cfg->points)
        fprintf(stderr, "aimdyn %s: training.eta = %g, training.horizon = %g, training.points "
                        "= %d at d = %d: online SGD takes %ld steps in all (n = tau d^2 / eta), "
                        "and the grid points tau = %g and %g fall on the same step %ld; "
                        "allowed: at least one step between successive grid points (a smaller "
                        "training.eta, fewer training.points, a longer training.horizon%s)\n",
                cmd, cfg->eta, cfg->horizon, cfg->points, d,
                aim_sgd_steps_for(cfg, d, cfg->horizon), tau[i - 1], tau[i],
                aim_sgd_steps_for(cfg, d, tau[i]),
                cfg->grid == AIM_GRID_LOG ? " or a larger training.grid_start" : "");
    free(tau);
    return i < cfg->points ? -1 : 0;
}

/* Parses [CONFIG] and the options of ode, sgd and compare. Returns 0, 1
 * after printing help, or -1 on a usage error. */
static int parse_run_options(const char *cmd, int argc, char **argv,
                             run_options *ro)
{
    static const struct option longopts[] = {
        {"set", required_argument, NULL, 's'},
        {"out", required_argument, NULL, 'o'},
        {"name", required_argument, NULL, 'n'},
        {"d", required_argument, NULL, 'd'},
        {"seeds", required_argument, NULL, 'S'},
        {"generic", no_argument, NULL, 'g'},
        {"order", required_argument, NULL, 'O'},
        {"latex", no_argument, NULL, 'L'},
        {"students", required_argument, NULL, 'T'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    /* --set assignments in order; --out, --name, --seeds, --generic and
     * (for ode and sgd) --d are shorthands for assignments, so that the
     * configuration written into every result file is the one that ran. */
    enum { MAX_SETS = 64, SET_LEN = 4096 };
    static char sets[MAX_SETS][SET_LEN];
    int nsets = 0;
    memset(ro, 0, sizeof *ro);
    optind = 1;
    int c;
    const int is_compare = !strcmp(cmd, "compare"), is_sgd = !strcmp(cmd, "sgd");
    const int is_hierarchy = !strcmp(cmd, "hierarchy");
    const char *students = NULL;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        const char *misplaced = (c == 'S' && !is_sgd && !is_compare) ? "--seeds"
                                : (c == 'g' && (is_sgd || is_hierarchy)) ? "--generic"
                                : (c == 'O' && is_sgd) ? "--order"
                                : (c == 'L' && !is_hierarchy) ? "--latex"
                                : (c == 'T' && !is_compare) ? "--students"
                                : (is_hierarchy && (c == 'o' || c == 'n' || c == 'd'))
                                    ? "--out, --name or --d"
                                    : NULL;
        if (misplaced) {
            fprintf(stderr, "aimdyn %s: option %s does not apply to this command "
                            "(see `aimdyn %s --help`)\n", cmd, misplaced, cmd);
            return -1;
        }
        if (c == 'L') {
            ro->latex = 1;
            continue;
        }
        if (c == 'T') {
            if (students) {
                fprintf(stderr, "aimdyn compare: --students given twice (one list: e.g. "
                                "--students direct,tied,untied)\n");
                return -1;
            }
            students = optarg;
            continue;
        }
        if (c == 'O')
            ro->order_given = 1;
        if (c == 'O' && is_compare) {
            if (add_to_list(cmd, "--order", optarg, 1, 10, ro->orders, &ro->norders,
                            MAX_ORDERS))
                return -1;
            continue;
        }
        const char *key = c == 's'   ? ""
                          : c == 'o' ? "output.dir="
                          : c == 'n' ? "output.name="
                          : c == 'S' ? "sgd.seeds="
                          : c == 'g' ? "ode.rule=generic"
                          : c == 'O' ? "hierarchy.order="
                          : c == 'd' && !is_compare ? "sgd.d="
                                                    : NULL;
        if (key) {
            if (nsets == MAX_SETS) {
                fprintf(stderr, "aimdyn %s: too many overrides (at most %d)\n", cmd, MAX_SETS);
                return -1;
            }
            int len = snprintf(sets[nsets++], SET_LEN, "%s%s", key, c == 'g' ? "" : optarg);
            if (len < 0 || len >= SET_LEN) {
                fprintf(stderr, "aimdyn %s: override '%.60s...' too long (at most %d characters)\n",
                        cmd, optarg, SET_LEN - 1);
                return -1;
            }
            continue;
        }
        switch (c) {
        case 'd': /* compare: one or more dimensions, increasing (the gap
                   * ratios compare successive d) */
            if (add_to_list(cmd, "--d", optarg, 8, 20000, ro->dims, &ro->ndims, MAX_DIMS))
                return -1;
            break;
        case 'h':
            print_usage(stdout, cmd);
            return 1;
        default:
            fprintf(stderr, "aimdyn %s: see `aimdyn %s --help`\n", cmd, cmd);
            return -1;
        }
    }
    const char *path = NULL;
    if (optind < argc)
        path = argv[optind++];
    if (optind < argc) {
        fprintf(stderr, "aimdyn %s: unexpected argument '%s' (one CONFIG.ini at most)\n",
                cmd, argv[optind]);
        return -1;
    }
    const char *set_list[MAX_SETS];
    for (int i = 0; i < nsets; i++)
        set_list[i] = sets[i];
    if (aim_cli_load_config(cmd, path, set_list, nsets, &ro->cfg))
        return -1;
    if (students && parse_students(students, ro))
        return -1;
    if (ro->order_given && ro->cfg.decomposition == AIM_DIRECT && !is_hierarchy &&
        !ro->nstudents) {
        fprintf(stderr, "aimdyn %s: --order applies to tied and untied students only "
                        "(model.decomposition = tied | untied)\n", cmd);
        return -1;
    }
    /* compare's --order list replaces hierarchy.order, which the load checked */
    for (int q = 0; is_compare && ro->cfg.decomposition != AIM_DIRECT && q < ro->norders; q++)
        if (aim_cli_hierarchy_fits(cmd, &ro->cfg, ro->orders[q]))
            return -1;
    if (ro->ndims == 0)
        ro->dims[ro->ndims++] = ro->cfg.d;
    for (int j = 0; (is_sgd || is_compare) && j < ro->ndims; j++)
        if (sgd_grid_usable(cmd, &ro->cfg, ro->dims[j]))
            return -1;
    if (ro->norders == 0)
        ro->orders[ro->norders++] = ro->cfg.order;
    if (is_hierarchy)
        return 0;
    /* the output locks of the files the run writes: sgd's at its d only,
     * so that runs at different d may share a name; compare's all */
    char sgd_files[32];
    for (int j = 0; j < ro->ndims; j++)
        for (int s = 0; s < (ro->nstudents ? ro->nstudents : 1); s++) {
            if (ro->nstudents)
                snprintf(sgd_files, sizeof sgd_files, "%s-sgd-d%d",
                         student_names[ro->student_cfg[s].decomposition], ro->dims[j]);
            else
                snprintf(sgd_files, sizeof sgd_files, "sgd-d%d", ro->dims[j]);
            if ((is_sgd || is_compare) && aim_tsv_prepare_for(&ro->cfg, sgd_files))
                return -1;
        }
    return is_sgd || !aim_tsv_prepare_dir(&ro->cfg) ? 0 : -1;
}

static const char *closure_name(aim_closure c)
{
    return c == AIM_CLOSURE_ALIGNED    ? "aligned"
           : c == AIM_CLOSURE_CUMULANT ? "cumulant"
           : c == AIM_CLOSURE_FREE     ? "free"
                                       : "initial";
}

/* Writes DIR/NAME-ode.tsv into path: renamed into place now (set NULL)
 * or with set. */
static int write_ode_file(const aim_config *cfg, int d, const double *tau,
                          const double *obs, const aim_trajectory_moments *mom,
                          const aim_ode_report *rep, char *path, size_t pathlen,
                          aim_atomic_set *set)
{
    if (aim_tsv_path(path, pathlen, cfg, "ode", "tsv"))
        return -1;
    aim_tsv *tsv = aim_tsv_open(path);
    if (!tsv)
        return -1;
    FILE *f = aim_tsv_stream(tsv);
    aim_tsv_metadata(tsv, "ode", cfg);
    const int untied_stiff = cfg->decomposition == AIM_UNTIED && cfg->centring == AIM_RAW &&
                             cfg->mean_mode == AIM_MEAN_STIFF;
    if (cfg->method == AIM_METHOD_MATRIX)
        fprintf(f, "# ode: the limit process simulated with matrices (theory/matrix.md): "
                   "D = %d, %d replicas (seeds %llu..), Euler-Maruyama step %.6g; the "
                   "columns are replica means%s\n",
                cfg->matrix_d, cfg->replicas, (unsigned long long)cfg->seed,
                cfg->matrix_dtau > 0.0 ? cfg->matrix_dtau : cfg->horizon / 512.0,
                mom && mom->obs_se ? ", X_se their standard errors" : "");
    else
    fprintf(f, "# ode: %s; n = tau d^2 / eta and t = tau d for d = %d\n",
            untied_stiff ? "the stiff system at the finite d of ode.d (or sgd.d)"
            : cfg->centring == AIM_RAW && cfg->decomposition == AIM_UNTIED
                ? "limit d -> infinity; the mean's start and fast phase at this d"
            : cfg->centring == AIM_RAW ? "limit d -> infinity for the order parameters, finite d "
                                         "for the raw mean"
                                       : "limit d -> infinity",
            d);
    const char *start_text =
        cfg->start == AIM_START_SEED ? "measured from SGD seed sgd.seed at sgd.d" : "exact";
    if (cfg->decomposition == AIM_TIED && cfg->method != AIM_METHOD_MATRIX)
        fprintf(f, "# tied hierarchy: order M = %d (%d equations), closure %s, start %s; "
                   "m(w) = Tr(w)/d, S student, T teacher\n",
                cfg->order, mom ? mom->count : 0, closure_name(cfg->closure), start_text);
    if (cfg->decomposition == AIM_UNTIED && cfg->method != AIM_METHOD_MATRIX) {
        fprintf(f, "# untied hierarchy: order M = %d (%d equations), closure %s, start %s; "
                   "m(w) = Tr(w)/d, A = U U^T, B = V V^T (m(A^k) = tA_k, m(B^k) = tB_k), "
                   "K = U V^T = S, k = V U^T, T teacher, t its transpose\n",
                cfg->order, mom ? mom->count : 0, closure_name(cfg->closure), start_text);
        if (cfg->centring == AIM_RAW)
            fprintf(f, "# mean: %s\n",
                    cfg->mean_mode == AIM_MEAN_ADIABATIC
                        ? "adiabatic limit: the fast phase on t = d tau with frozen moments, "
                          "then the critical manifold dR/dm = 0 on tau (composite)"
                        : "stiff system at finite d, integrated with the moments");
    }
    if (cfg->decomposition == AIM_UNTIED && cfg->centring == AIM_RAW)
        fprintf(f, "# start: student mean Tr S/sqrt d = %.6g (0, or its typical size "
                   "sqrt(rho v v_V/d) when 0 is an unstable critical point of the fast "
                   "flow; measured for a seed start)\n",
                rep->start_mean);
    if (rep->warning[0])
        fprintf(f, "# warning: balance condition (hierarchy.balance = %g) violated: %s\n",
                cfg->balance, rep->warning);
    aim_trajectory_kernel_line(f, cfg, rep->kernel_points, rep->kernel_error);
    if (rep->status == AIM_ODE_BLOWUP)
        fprintf(f, "# status: %s\n", rep->message);
    else
        fprintf(f, "# status: complete\n");
    if (mom && mom->trunc)
        fprintf(f, "# truncation error estimate: overlap_trunc = |overlap_M - overlap_(M-1)|, "
                   "risk_trunc = |risk_M - risk_(M-1)| / risk_M (M - 1 = %d); the run stops "
                   "where one passes hierarchy.tol = %g (0: never)\n",
                cfg->order - 1, cfg->tol);
    if (mom && mom->trunc && !isnan(mom->trunc_stop))
        fprintf(f, "# truncation error estimate: the order-%d run stopped at tau = %.6g (NaN "
                   "from there: no estimate)\n",
                cfg->order - 1, mom->trunc_stop);
    if (isnan(rep->tau_wr_se))
        fprintf(f, "# weak recovery (|overlap| >= %g) at tau = %.6g\n", cfg->recovery_threshold,
                rep->tau_wr);
    else
        fprintf(f, "# weak recovery (|overlap| >= %g) at tau = %.6g +- %.2g (mean crossing of "
                   "the replicas, with its standard error)\n",
                cfg->recovery_threshold, rep->tau_wr, rep->tau_wr_se);
    fputs("tau\tn\tt", f);
    for (int k = 0; k < AIM_OBS_COUNT; k++)
        fprintf(f, "\t%s", aim_obs_names[k]);
    for (int k = 0; mom && k < mom->count; k++)
        fprintf(f, "\t%s", mom->names[k]);
    for (int k = 0; mom && mom->obs_se && k < AIM_OBS_COUNT; k++)
        fprintf(f, "\t%s_se", aim_obs_names[k]);
    if (mom && mom->trunc)
        fputs("\toverlap_trunc\trisk_trunc", f);
    fputc('\n', f);
    for (int i = 0; i < rep->reached; i++) {
        fprintf(f, "%.10g\t%.10g\t%.10g", tau[i], tau[i] * d * (double)d / cfg->eta,
                tau[i] * d);
        for (int k = 0; k < AIM_OBS_COUNT; k++)
            fprintf(f, "\t%.10g", obs[(size_t)i * AIM_OBS_COUNT + k]);
        for (int k = 0; mom && k < mom->count; k++)
            fprintf(f, "\t%.10g", mom->values[(size_t)i * mom->count + k]);
        for (int k = 0; mom && mom->obs_se && k < AIM_OBS_COUNT; k++)
            fprintf(f, "\t%.10g", mom->obs_se[(size_t)i * AIM_OBS_COUNT + k]);
        if (mom && mom->trunc)
            fprintf(f, "\t%.4g\t%.4g", mom->trunc[2 * (size_t)i], mom->trunc[2 * (size_t)i + 1]);
        fputc('\n', f);
    }
    return set ? aim_tsv_add_to(tsv, set) : aim_tsv_commit(tsv);
}

static int cmd_ode(int argc, char **argv)
{
    run_options ro;
    int rc = parse_run_options("ode", argc, argv, &ro);
    if (rc)
        return rc > 0 ? 0 : AIM_EXIT_USAGE;
    const aim_config *cfg = &ro.cfg;
    double *tau = malloc(sizeof(double) * (size_t)cfg->points);
    double *obs = malloc(sizeof(double) * (size_t)cfg->points * AIM_OBS_COUNT);
    if (!tau || !obs) {
        free(tau);
        free(obs);
        fprintf(stderr, "aimdyn ode: out of memory\n");
        return AIM_EXIT_RUNTIME;
    }
    aim_grid_fill(cfg, tau);
    aim_ode_report rep;
    aim_trajectory_moments mom;
    double *start = NULL;
    if (cfg->decomposition != AIM_DIRECT && cfg->start == AIM_START_SEED &&
        !(start = aim_compare_seed_start(cfg, ro.dims[0]))) {
        free(tau);
        free(obs);
        return AIM_EXIT_RUNTIME;
    }
    aim_ode_status st = aim_trajectory_run_full(cfg, ro.dims[0], tau, start, obs, &mom, &rep);
    free(start);
    if (rep.warning[0])
        fprintf(stderr, "aimdyn ode: warning: the balance condition |tA_k(0) - tB_k(0)| >= "
                        "hierarchy.balance = %g of the paper's Corollary 4 fails for %s\n",
                cfg->balance, rep.warning);
    int exit_code = 0;
    if (st == AIM_ODE_FAILED || rep.reached < 1) {
        fprintf(stderr, "aimdyn ode: %s\n", rep.message);
        exit_code = AIM_EXIT_RUNTIME;
    } else {
        char path[1024];
        if (write_ode_file(cfg, ro.dims[0], tau, obs, &mom, &rep, path, sizeof path, NULL)) {
            exit_code = AIM_EXIT_RUNTIME;
        } else {
            const double *last = obs + (size_t)(rep.reached - 1) * AIM_OBS_COUNT;
            const double twr = rep.tau_wr;
            printf("wrote %s\n", path);
            printf("tau = %g: risk = %.6g, teacher overlap = %.6g\n",
                   tau[rep.reached - 1], last[AIM_OBS_RISK], last[AIM_OBS_OVERLAP]);
            if (isnan(twr))
                printf("weak recovery (|overlap| >= %g): not reached by tau = %g\n",
                       cfg->recovery_threshold, tau[rep.reached - 1]);
            else
                printf("weak recovery (|overlap| >= %g): tau = %.6g, n = %.4g samples at d = %d\n",
                       cfg->recovery_threshold, twr, twr * ro.dims[0] * (double)ro.dims[0] / cfg->eta,
                       ro.dims[0]);
            if (st == AIM_ODE_BLOWUP) {
                fprintf(stderr, "aimdyn ode: %s\n", rep.message);
                exit_code = AIM_EXIT_BLOWUP;
            }
        }
    }
    aim_trajectory_moments_free(&mom);
    free(tau);
    free(obs);
    return exit_code;
}

static int cmd_hierarchy(int argc, char **argv)
{
    run_options ro;
    int rc = parse_run_options("hierarchy", argc, argv, &ro);
    if (rc)
        return rc > 0 ? 0 : AIM_EXIT_USAGE;
    if (ro.cfg.decomposition == AIM_DIRECT) {
        fprintf(stderr, "aimdyn hierarchy: model.decomposition = direct has no moment "
                        "hierarchy (direct attention closes in Omega, Psi and the "
                        "trace: theory/direct.md); allowed: model.decomposition = tied | "
                        "untied\n");
        return AIM_EXIT_USAGE;
    }
    char err[256];
    if (ro.cfg.decomposition == AIM_UNTIED) {
        aim_untied *model = aim_untied_create(&ro.cfg, ro.cfg.d, ro.cfg.rule, err, sizeof err);
        if (!model) {
            fprintf(stderr, "aimdyn hierarchy: %s\n", err);
            return AIM_EXIT_RUNTIME;
        }
        aim_hierarchy_print(aim_untied_hierarchy(model), stdout, ro.latex);
        aim_untied_free(model);
        return 0;
    }
    aim_tied *model = aim_tied_create(&ro.cfg, ro.cfg.rule, err, sizeof err);
    if (!model) {
        fprintf(stderr, "aimdyn hierarchy: %s\n", err);
        return AIM_EXIT_RUNTIME;
    }
    aim_hierarchy_print(aim_tied_hierarchy(model), stdout, ro.latex);
    aim_tied_free(model);
    return 0;
}

/* Median over seeds of the weak-recovery time (aim_recovery_median: a
 * seed that blew up before the median without recovering leaves it
 * undefined). */
static double median_recovery(const aim_config *cfg, const double *tau, const double *obs,
                              const int *reached, int *recovered, double error[2])
{
    const int points = cfg->points, seeds = cfg->seeds;
    double *t = malloc(sizeof(double) * 2 * (size_t)seeds);
    if (!t)
        return NAN;
    double *stop = t + seeds;
    *recovered = 0;
    for (int s = 0; s < seeds; s++) {
        t[s] = aim_trajectory_recovery_time(
            points, tau, obs + (size_t)s * points * AIM_OBS_COUNT + AIM_OBS_OVERLAP,
            AIM_OBS_COUNT, cfg->recovery_threshold);
        stop[s] = reached[s] > 0 ? tau[reached[s] - 1] : -INFINITY;
        *recovered += isfinite(t[s]);
        /* the largest interpolation error bound and estimate over seeds */
        double spacing, curvature;
        aim_trajectory_recovery_error(
            points, tau, obs + (size_t)s * points * AIM_OBS_COUNT + AIM_OBS_OVERLAP,
            AIM_OBS_COUNT, cfg->recovery_threshold, &spacing, &curvature);
        if (s == 0)
            error[0] = error[1] = NAN;
        error[0] = isnan(error[0]) || spacing > error[0] ? spacing : error[0];
        error[1] = isnan(error[1]) || curvature > error[1] ? curvature : error[1];
    }
    double med = aim_recovery_median(seeds, t, stop);
    free(t);
    return med;
}

/* SGD at dimension d: runs the seeds, writes the per-seed and summary
 * files into set (renamed into place when it is committed). mean/se
 * receive the summary (points x OBS) and xmean/xse that of the SGD-only
 * extras (points x AIM_SGD_EXTRA_COUNT): NaN from the first point a
 * blown-up seed did not reach, since a mean over the surviving seeds only
 * would be biased towards the stable ones. Returns 0, 1 when a seed blew
 * up (files written), -1 on failure. */
static int run_sgd(const aim_config *cfg, int d, const double *tau, double *mean,
                   double *se, double *xmean, double *xse, double *median_wr,
                   int *recovered, char *summary_path, size_t pathlen, aim_atomic_set *set)
{
    const int points = cfg->points, seeds = cfg->seeds, X = AIM_SGD_EXTRA_COUNT;
    double *obs = malloc(sizeof(double) * (size_t)seeds * points * AIM_OBS_COUNT);
    double *extra = malloc(sizeof(double) * (size_t)seeds * points * X);
    int *reached = malloc(sizeof(int) * (size_t)seeds);
    int rc = -1;
    aim_tsv *tsv = NULL;
    /* a tied student's moments: every word in S and S* of length 1..M
     * with at least one S (the words the order-M hierarchy tracks) */
    aim_sgd_moments mom = {0};
    aim_wordset *ws = NULL;
    int *words = NULL;
    double *mmean = NULL, *mse = NULL;
    if (!obs || !extra || !reached) {
        fprintf(stderr, "aimdyn sgd: out of memory\n");
        goto done;
    }
    if (cfg->decomposition != AIM_DIRECT) {
        aim_alphabet ab;
        aim_compare_alphabet(cfg, &ab);
        ws = aim_wordset_create(&ab, cfg->order);
        int count = ws ? aim_wordset_count(ws) : 0;
        words = malloc(sizeof(int) * (size_t)(count + 1));
        if (!ws || !words) {
            fprintf(stderr, "aimdyn sgd: out of memory\n");
            goto done;
        }
        for (int i = 1; i < count; i++)
            if (strpbrk(aim_wordset_word(ws, i), "SABKk"))
                words[mom.count++] = i;
        mom.ws = ws;
        mom.words = words;
        size_t cells = (size_t)points * mom.count;
        mom.values = malloc(sizeof(double) * cells * (size_t)seeds);
        mmean = malloc(sizeof(double) * cells);
        mse = malloc(sizeof(double) * cells);
        if (!mom.values || !mmean || !mse) {
            fprintf(stderr, "aimdyn sgd: out of memory\n");
            goto done;
        }
    }
    if (aim_compare_run_sgd_moments(cfg, d, tau, points, obs, extra, reached,
                                    ws ? &mom : NULL))
        goto done;
    aim_compare_stats(seeds, points, obs, mean, se);
    aim_compare_stats_n(seeds, points, X, extra, xmean, xse);
    if (ws)
        aim_compare_stats_n(seeds, points, mom.count, mom.values, mmean, mse);
    double wr_error[2] = {NAN, NAN};
    *median_wr = median_recovery(cfg, tau, obs, reached, recovered, wr_error);
    int all_reached = points;
    for (int s = 0; s < seeds; s++)
        if (reached[s] < all_reached)
            all_reached = reached[s];
    for (size_t i = (size_t)all_reached * AIM_OBS_COUNT; i < (size_t)points * AIM_OBS_COUNT; i++)
        mean[i] = se[i] = NAN;
    for (size_t i = (size_t)all_reached * X; i < (size_t)points * X; i++)
        xmean[i] = xse[i] = NAN;
    for (size_t i = (size_t)all_reached * mom.count; ws && i < (size_t)points * mom.count; i++)
        mmean[i] = mse[i] = NAN;

    char suffix[64], path[1024];
    snprintf(suffix, sizeof suffix, "sgd-d%d-seeds", d);
    if (aim_tsv_path(path, sizeof path, cfg, suffix, "tsv") || !(tsv = aim_tsv_open(path)))
        goto done;
    FILE *f = aim_tsv_stream(tsv);
    aim_tsv_metadata(tsv, "sgd", cfg);
    fprintf(f, "# sgd: d = %d, seeds %llu .. %llu\n", d, (unsigned long long)cfg->seed,
            (unsigned long long)(cfg->seed + (uint64_t)seeds - 1));
    fprintf(f, "# risk: measured on %d held-out samples per seed; risk_holdout_se: its "
               "standard error over them; risk_gauss: the Gaussian formula on the seed's "
               "order parameters (theory/measurement.md)\n", cfg->holdout);
    fputs("seed\ttau\tn", f);
    for (int k = 0; k < AIM_OBS_COUNT; k++)
        fprintf(f, "\t%s", aim_obs_names[k]);
    for (int k = 0; k < X; k++)
        fprintf(f, "\t%s", aim_sgd_extra_names[k]);
    for (int k = 0; k < mom.count; k++)
        fprintf(f, "\tm(%s)", aim_wordset_word(ws, words[k]));
    fputc('\n', f);
    for (int s = 0; s < seeds; s++)
        for (int i = 0; i < reached[s]; i++) {
            fprintf(f, "%llu\t%.10g\t%ld", (unsigned long long)(cfg->seed + (uint64_t)s),
                    tau[i], aim_sgd_steps_for(cfg, d, tau[i]));
            for (int k = 0; k < AIM_OBS_COUNT; k++)
                fprintf(f, "\t%.10g", obs[((size_t)s * points + i) * AIM_OBS_COUNT + k]);
            for (int k = 0; k < X; k++)
                fprintf(f, "\t%.10g", extra[((size_t)s * points + i) * X + k]);
            for (int k = 0; k < mom.count; k++)
                fprintf(f, "\t%.10g", mom.values[((size_t)s * points + i) * mom.count + k]);
            fputc('\n', f);
        }
    int added = aim_tsv_add_to(tsv, set);
    tsv = NULL;
    if (added)
        goto done;

    snprintf(suffix, sizeof suffix, "sgd-d%d", d);
    if (aim_tsv_path(summary_path, pathlen, cfg, suffix, "tsv") ||
        !(tsv = aim_tsv_open(summary_path)))
        goto done;
    f = aim_tsv_stream(tsv);
    aim_tsv_metadata(tsv, "sgd", cfg);
    fprintf(f, "# sgd: d = %d, %d seeds from %llu; mean and standard error over the seeds\n",
            d, seeds, (unsigned long long)cfg->seed);
    fprintf(f, "# weak recovery (|overlap| >= %g): %d of %d seeds, median tau = %.6g; each "
               "seed's crossing linearly interpolated between grid points, error at most the "
               "spacing around it (largest %.3g), estimated h^2 |f''|/(8 |f'|) <= %.3g "
               "(theory/stops.md sec. 5)\n",
            cfg->recovery_threshold, *recovered, seeds, *median_wr, wr_error[0], wr_error[1]);
    fprintf(f, "# risk: measured on %d held-out samples per seed (risk_se includes their "
               "noise); risk_gauss: the Gaussian formula on the measured order parameters; "
               "risk_holdout_se: the seeds' held-out standard errors (theory/measurement.md)\n",
            cfg->holdout);
    for (int s = 0; s < seeds; s++)
        if (reached[s] < points)
            fprintf(f, "# seed %llu blew up after tau = %g\n",
                    (unsigned long long)(cfg->seed + (uint64_t)s), tau[reached[s] - 1]);
    fputs("tau\tn", f);
    for (int k = 0; k < AIM_OBS_COUNT; k++)
        fprintf(f, "\t%s_mean\t%s_se", aim_obs_names[k], aim_obs_names[k]);
    for (int k = 0; k < X; k++)
        fprintf(f, "\t%s_mean\t%s_se", aim_sgd_extra_names[k], aim_sgd_extra_names[k]);
    for (int k = 0; k < mom.count; k++)
        fprintf(f, "\tm(%s)_mean\tm(%s)_se", aim_wordset_word(ws, words[k]),
                aim_wordset_word(ws, words[k]));
    fputc('\n', f);
    for (int i = 0; i < points; i++) {
        fprintf(f, "%.10g\t%ld", tau[i], aim_sgd_steps_for(cfg, d, tau[i]));
        for (int k = 0; k < AIM_OBS_COUNT; k++)
            fprintf(f, "\t%.10g\t%.10g", mean[(size_t)i * AIM_OBS_COUNT + k],
                    se[(size_t)i * AIM_OBS_COUNT + k]);
        for (int k = 0; k < X; k++)
            fprintf(f, "\t%.10g\t%.10g", xmean[(size_t)i * X + k], xse[(size_t)i * X + k]);
        for (int k = 0; k < mom.count; k++)
            fprintf(f, "\t%.10g\t%.10g", mmean[(size_t)i * mom.count + k],
                    mse[(size_t)i * mom.count + k]);
        fputc('\n', f);
    }
    rc = aim_tsv_add_to(tsv, set);
    tsv = NULL;
    if (rc == 0 && all_reached < points)
        rc = 1;
done:
    if (tsv)
        aim_tsv_abort(tsv);
    free(obs);
    free(extra);
    free(reached);
    free(mom.values);
    free(mmean);
    free(mse);
    free(words);
    aim_wordset_free(ws);
    return rc;
}

static int cmd_sgd(int argc, char **argv)
{
    run_options ro;
    int rc = parse_run_options("sgd", argc, argv, &ro);
    if (rc)
        return rc > 0 ? 0 : AIM_EXIT_USAGE;
    aim_config *cfg = &ro.cfg;
    const int points = cfg->points;
    double *tau = malloc(sizeof(double) * (size_t)points);
    double *mean = malloc(sizeof(double) * (size_t)points * AIM_OBS_COUNT);
    double *se = malloc(sizeof(double) * (size_t)points * AIM_OBS_COUNT);
    double *xmean = malloc(sizeof(double) * (size_t)points * AIM_SGD_EXTRA_COUNT);
    double *xse = malloc(sizeof(double) * (size_t)points * AIM_SGD_EXTRA_COUNT);
    int exit_code = AIM_EXIT_RUNTIME;
    char path[1024];
    /* the per-seed and the summary file replace the old pair together,
     * under the lock of NAME-sgd-dD (parse_run_options) */
    char set_name[sizeof cfg->name + 32];
    snprintf(set_name, sizeof set_name, "%s-sgd-d%d", cfg->name, ro.dims[0]);
    aim_atomic_set *set = aim_atomic_set_create(cfg->dir, set_name);
    if (tau && mean && se && xmean && xse && set) {
        aim_grid_fill(cfg, tau);
        double twr;
        int recovered;
        int st = run_sgd(cfg, ro.dims[0], tau, mean, se, xmean, xse, &twr, &recovered, path,
                         sizeof path, set);
        if (st < 0)
            aim_atomic_set_free(set);
        else if (aim_atomic_set_commit(set) != 0)
            st = -1;
        set = NULL;
        if (st >= 0) {
            const double *last = mean + (size_t)(points - 1) * AIM_OBS_COUNT;
            printf("wrote %s\n", path);
            printf("tau = %g: risk = %.6g, teacher overlap = %.6g (means over %d seeds)\n",
                   tau[points - 1], last[AIM_OBS_RISK], last[AIM_OBS_OVERLAP], cfg->seeds);
            printf("weak recovery (|overlap| >= %g): %d of %d seeds, median tau = %.4g\n",
                   cfg->recovery_threshold, recovered, cfg->seeds, twr);
            exit_code = st > 0 ? AIM_EXIT_BLOWUP : 0;
        }
    }
    aim_atomic_set_free(set);
    free(tau);
    free(mean);
    free(se);
    free(xmean);
    free(xse);
    return exit_code;
}

/* What one student's comparison leaves for the figure of all students:
 * per d, its ODE file (of the last order) and its SGD file, as the
 * temporary names the figure reads before the set is committed. */
typedef struct {
    const char *ode[MAX_DIMS], *sgd[MAX_DIMS];
    int blowup, figure_failed;
} compare_result;

/* The comparison of one student (cfg: its configuration, cfg->name its
 * file stem) at every d and order of ro: ODE and SGD files, the figure of
 * each d and the agreement table, all into set; "wrote" lines into
 * wrote. Returns 0, or -1 after a message (nothing committed). */
static int compare_student(const run_options *ro, const aim_config *cfg, aim_atomic_set *set,
                           FILE *wrote, compare_result *res)
{
    const int points = cfg->points, tied = cfg->decomposition != AIM_DIRECT;
    /* a direct student has one closed ODE whatever the orders asked for
     * the others (compare --students) */
    const int nord = tied ? ro->norders : 1;
    const int *orders = ro->orders;
    aim_alphabet ab;
    aim_compare_alphabet(cfg, &ab);
    const int nruns = ro->ndims * nord;
    const size_t block = (size_t)points * AIM_OBS_COUNT;
    double *tau = malloc(sizeof(double) * (size_t)points);
    double *ode = malloc(sizeof(double) * block * (size_t)nruns);
    double *mean = malloc(sizeof(double) * block * (size_t)ro->ndims);
    double *se = malloc(sizeof(double) * block * (size_t)ro->ndims);
    const size_t xblock = (size_t)points * AIM_SGD_EXTRA_COUNT;
    double *xmean = malloc(sizeof(double) * xblock * (size_t)ro->ndims);
    double *xse = malloc(sizeof(double) * xblock * (size_t)ro->ndims);
    aim_gap(*gaps)[AIM_OBS_COUNT] = malloc(sizeof *gaps * (size_t)nruns);
    aim_gap gauss_gaps[MAX_DIMS * MAX_ORDERS]; /* the ODE risk against risk_gauss */
    double *start = NULL;
    int rc = -1;
    aim_tsv *tsv = NULL;
    if (!tau || !ode || !mean || !se || !xmean || !xse || !gaps) {
        fprintf(stderr, "aimdyn compare: out of memory\n");
        goto done;
    }
    aim_grid_fill(cfg, tau);
    double twr_ode[MAX_DIMS * MAX_ORDERS], twr_sgd[MAX_DIMS];
    int recovered[MAX_DIMS];
    const int no_gnuplot = !aim_plot_available();
    for (int j = 0; j < ro->ndims; j++) {
        const int d = ro->dims[j];
        char ode_paths[MAX_ORDERS][1024], labels[MAX_ORDERS][32];
        const char *ode_list[MAX_ORDERS], *label_list[MAX_ORDERS];
        char sgd_path[1024], stem[1024], suffix[64];
        aim_config sgd_cfg = *cfg;
        sgd_cfg.d = d;
        sgd_cfg.order = orders[nord - 1]; /* SGD moments for the longest words */
        /* a seed start is measured once per d, up to the longest words
         * used: the word sets of lower orders are its leading entries */
        free(start);
        start = NULL;
        if (tied && cfg->start == AIM_START_SEED &&
            !(start = aim_compare_seed_moments(cfg, d, &ab, orders[nord - 1] + 1)))
            goto done;
        for (int q = 0; q < nord; q++) {
            const int r = j * nord + q;
            aim_config per_run = *cfg;
            per_run.d = d;
            if (tied)
                per_run.order = orders[q];
            /* one ODE file per d (n differs) and per order */
            char name[sizeof per_run.name];
            snprintf(name, sizeof name, "%s", cfg->name);
            if (nord > 1)
                snprintf(per_run.name, sizeof per_run.name, "%.100s-M%d", name, orders[q]);
            snprintf(name, sizeof name, "%s", per_run.name);
            if (ro->ndims > 1)
                snprintf(per_run.name, sizeof per_run.name, "%.110s-d%d", name, d);
            aim_ode_report rep;
            aim_trajectory_moments mom;
            if (aim_trajectory_run_full(&per_run, d, tau, start, ode + r * block, &mom, &rep) ==
                AIM_ODE_FAILED) {
                fprintf(stderr, "aimdyn compare: ODE: %s\n", rep.message);
                aim_trajectory_moments_free(&mom);
                goto done;
            }
            if (rep.status == AIM_ODE_BLOWUP) {
                fprintf(stderr, "aimdyn compare: ODE: %s\n", rep.message);
                res->blowup = 1;
            }
            twr_ode[r] = rep.tau_wr;
            int written = write_ode_file(&per_run, d, tau, ode + r * block, &mom, &rep,
                                         ode_paths[q], sizeof ode_paths[q], set);
            aim_trajectory_moments_free(&mom);
            if (written)
                goto done;
            fprintf(wrote, "wrote %s\n", ode_paths[q]);
            if (cfg->method == AIM_METHOD_MATRIX)
                snprintf(labels[q], sizeof labels[q], "matrix process, D = %d", cfg->matrix_d);
            else
                snprintf(labels[q], sizeof labels[q], "ODE, M = %d", orders[q]);
            ode_list[q] = aim_atomic_set_temp(set, ode_paths[q]); /* drawn before the commit */
            label_list[q] = labels[q];
        }
        res->ode[j] = ode_list[nord - 1];
        int sgd_status = run_sgd(&sgd_cfg, d, tau, mean + j * block, se + j * block,
                                 xmean + j * xblock, xse + j * xblock, &twr_sgd[j],
                                 &recovered[j], sgd_path, sizeof sgd_path, set);
        if (sgd_status < 0)
            goto done;
        res->blowup |= sgd_status > 0;
        fprintf(wrote, "wrote %s\n", sgd_path);
        for (int q = 0; q < nord; q++) {
            const int r = j * nord + q;
            aim_compare_gaps(points, tau, ode + r * block, mean + j * block, se + j * block,
                             gaps[r]);
            gauss_gaps[r] = aim_compare_gap(points, tau, ode + r * block + AIM_OBS_RISK,
                                            AIM_OBS_COUNT,
                                            xmean + j * xblock + AIM_SGD_RISK_GAUSS,
                                            xse + j * xblock + AIM_SGD_RISK_GAUSS,
                                            AIM_SGD_EXTRA_COUNT);
        }
        snprintf(suffix, sizeof suffix, "compare-d%d", d);
        if (aim_tsv_path(stem, sizeof stem, cfg, suffix, ""))
            goto done;
        const char *sgd_list[] = {aim_atomic_set_temp(set, sgd_path)};
        res->sgd[j] = sgd_list[0];
        const aim_plot_spec spec = {ode_list, tied ? label_list : NULL, nord, sgd_list, 1, 0.0,
                                    (cfg->grid == AIM_GRID_LOG ? AIM_PLOT_LOG_TAU : 0) |
                                        (cfg->centring == AIM_RAW ? AIM_PLOT_MEAN : 0)};
        if (!no_gnuplot && aim_plot_figure(&spec, stem, set) == 0)
            fprintf(wrote, "wrote %s.png and %s.svg\n", stem, stem);
        else if (aim_plot_stale(set, stem)) /* an old figure would show other data */
            goto done;
        else
            res->figure_failed |= !no_gnuplot;
    }

    char path[1024];
    if (aim_tsv_path(path, sizeof path, cfg, "agreement", "tsv") || !(tsv = aim_tsv_open(path)))
        goto done;
    fprintf(wrote, "wrote %s\n", path);
    FILE *f = aim_tsv_stream(tsv);
    aim_tsv_metadata(tsv, "compare", cfg);
    fprintf(f, "# agreement of the limit ODE with the SGD mean over %d seeds (MODEL.md sec. 8)\n",
            cfg->seeds);
    fprintf(f, "# gap_ratio: this d's largest gap over the previous d's, same order "
               "(1/d bias: ~ d_prev/d)\n");
    fprintf(f, "# order: the hierarchy's truncation order M (tied, untied); 0 for a closed ODE\n");
    fprintf(f, "# risk: the ODE risk against the SGD risk measured on held-out samples; "
               "risk_gauss: the ODE risk against the Gaussian formula on the SGD's measured "
               "order parameters (theory/measurement.md)\n");
    for (int j = 0; j < ro->ndims; j++)
        for (int q = 0; q < nord; q++)
            fprintf(f, "# weak recovery (|overlap| >= %g) at d = %d, order %d: ODE tau = %.6g "
                       "(root finding), SGD median tau = %.6g (%d of %d seeds recovered; "
                       "interpolated between grid points, its error in the SGD file)\n",
                    cfg->recovery_threshold, ro->dims[j], tied ? orders[q] : 0,
                    twr_ode[j * nord + q], twr_sgd[j], recovered[j], cfg->seeds);
    fprintf(f, "observable\td\torder\tmax_gap\ttau_at_max_gap\tmax_gap_in_se\ttau_at_max_z"
               "\trel_gap\tgap_ratio\n");
    printf("\n%s\n%-10s %6s %5s %12s %10s %12s %10s %10s\n", cfg->name, "observable", "d", "M",
           "max_gap", "at_tau", "gap/se", "rel_gap", "ratio");
    for (int k = 0; k < AIM_OBS_COUNT; k++)
        for (int gauss = 0; gauss <= (k == AIM_OBS_RISK); gauss++) /* risk, then risk_gauss */
            for (int q = 0; q < nord; q++)
                for (int j = 0; j < ro->ndims; j++) {
                    const int r = j * nord + q, prev = (j - 1) * nord + q;
                    const aim_gap *g = gauss ? &gauss_gaps[r] : &gaps[r][k];
                    const aim_gap *gp = j == 0 ? NULL : gauss ? &gauss_gaps[prev] : &gaps[prev][k];
                    const char *name = gauss ? aim_sgd_extra_names[AIM_SGD_RISK_GAUSS]
                                             : aim_obs_names[k];
                    double scale = 0.0;
                    for (int i = 0; i < points; i++)
                        scale = fmax(scale, fabs(ode[r * block + (size_t)i * AIM_OBS_COUNT + k]));
                    double rel = scale > 0 ? g->max_abs / scale : NAN;
                    double ratio = gp && gp->max_abs > 0 ? g->max_abs / gp->max_abs : NAN;
                    int order = tied ? orders[q] : 0;
                    fprintf(f, "%s\t%d\t%d\t%.6g\t%.6g\t%.6g\t%.6g\t%.6g\t%.6g\n", name,
                            ro->dims[j], order, g->max_abs, g->tau_abs, g->max_z, g->tau_z, rel,
                            ratio);
                    printf("%-10s %6d %5d %12.4g %10.4g %12.3g %10.3g %10.3g\n", name,
                           ro->dims[j], order, g->max_abs, g->tau_abs, g->max_z, rel, ratio);
                }
    for (int j = 0; j < ro->ndims; j++)
        for (int q = 0; q < nord; q++) {
            char order[32] = "";
            if (tied)
                snprintf(order, sizeof order, ", M = %d", orders[q]);
            printf("weak recovery (|overlap| >= %g) at d = %d%s: ODE tau = %.4g, SGD "
                   "median tau = %.4g (%d of %d seeds)\n", cfg->recovery_threshold, ro->dims[j],
                   order, twr_ode[j * nord + q], twr_sgd[j], recovered[j], cfg->seeds);
        }
    rc = aim_tsv_add_to(tsv, set);
    tsv = NULL;
done:
    if (tsv)
        aim_tsv_abort(tsv);
    free(start);
    free(tau);
    free(ode);
    free(mean);
    free(se);
    free(xmean);
    free(xse);
    free(gaps);
    return rc;
}

/* compare --students: per d one figure NAME-students-dD of every
 * student's ODE (its last order) over its SGD, a colour per student. */
static int compare_students_figure(const run_options *ro, const compare_result *res,
                                   aim_atomic_set *set, FILE *wrote, int *failed)
{
    const aim_config *cfg = &ro->cfg;
    const char *labels[MAX_STUDENTS];
    for (int s = 0; s < ro->nstudents; s++)
        labels[s] = student_names[ro->student_cfg[s].decomposition];
    for (int j = 0; j < ro->ndims; j++) {
        const char *ode[MAX_STUDENTS], *sgd[MAX_STUDENTS];
        for (int s = 0; s < ro->nstudents; s++) {
            ode[s] = res[s].ode[j];
            sgd[s] = res[s].sgd[j];
        }
        char stem[1024], suffix[64];
        snprintf(suffix, sizeof suffix, "students-d%d", ro->dims[j]);
        if (aim_tsv_path(stem, sizeof stem, cfg, suffix, ""))
            return -1;
        const aim_plot_spec spec = {ode, labels, ro->nstudents, sgd, ro->nstudents, 0.0,
                                    cfg->grid == AIM_GRID_LOG ? AIM_PLOT_LOG_TAU : 0};
        if (aim_plot_available() && aim_plot_figure(&spec, stem, set) == 0)
            fprintf(wrote, "wrote %s.png and %s.svg\n", stem, stem);
        else if (aim_plot_stale(set, stem))
            return -1;
        else
            *failed |= aim_plot_available();
    }
    return 0;
}

static int cmd_compare(int argc, char **argv)
{
    run_options ro;
    int rc = parse_run_options("compare", argc, argv, &ro);
    if (rc)
        return rc > 0 ? 0 : AIM_EXIT_USAGE;
    const aim_config *cfg = &ro.cfg;
    int exit_code = AIM_EXIT_RUNTIME;
    /* every file of the run (ODE, SGD, agreement, figures; every student)
     * waits in the set and replaces the files of an earlier run together,
     * or none does; their names are said once they are in place */
    aim_atomic_set *set = aim_atomic_set_create(cfg->dir, cfg->name);
    char *wrote_text = NULL;
    size_t wrote_len = 0;
    FILE *wrote = open_memstream(&wrote_text, &wrote_len);
    compare_result res[MAX_STUDENTS];
    memset(res, 0, sizeof res);
    if (!set || !wrote) {
        fprintf(stderr, "aimdyn compare: out of memory\n");
        goto done;
    }
    const int nst = ro.nstudents ? ro.nstudents : 1;
    int blowup = 0, figure_failed = 0;
    for (int s = 0; s < nst; s++) {
        aim_config student = ro.nstudents ? ro.student_cfg[s] : *cfg;
        if (compare_student(&ro, &student, set, wrote, &res[s]))
            goto done;
        blowup |= res[s].blowup;
        figure_failed |= res[s].figure_failed;
    }
    if (ro.nstudents && compare_students_figure(&ro, res, set, wrote, &figure_failed))
        goto done;
    if (fflush(wrote))
        goto done;
    int committed = aim_atomic_set_commit(set);
    set = NULL;
    if (committed != 0)
        goto done;
    fputs(wrote_text, stdout);
    if (!aim_plot_available())
        fprintf(stderr, "aimdyn compare: warning: gnuplot not found, no figure (install "
                        "gnuplot-nox); the tables are written and an old figure of this name "
                        "is removed\n");
    if (figure_failed)
        fprintf(stderr, "aimdyn compare: the figure could not be drawn (see above); the tables "
                        "are written and an old figure of this name is removed\n");
    exit_code = figure_failed ? AIM_EXIT_RUNTIME : blowup ? AIM_EXIT_BLOWUP : 0;
done:
    if (set)
        fprintf(stderr, "aimdyn compare: nothing written: the files of an earlier run are "
                        "unchanged\n");
    aim_atomic_set_free(set);
    if (wrote)
        fclose(wrote);
    free(wrote_text);
    return exit_code;
}

static int cmd_plot(int argc, char **argv)
{
    static const struct option longopts[] = {{"ode", required_argument, NULL, 'o'},
                                             {"label", required_argument, NULL, 'L'},
                                             {"sgd", required_argument, NULL, 's'},
                                             {"figure", required_argument, NULL, 'f'},
                                             {"log-tau", no_argument, NULL, 'l'},
                                             {"mean", no_argument, NULL, 'm'},
                                             {"samples", required_argument, NULL, 'n'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    const char *ode[MAX_ORDERS], *labels[MAX_ORDERS], *sgd[MAX_ORDERS], *stem = NULL;
    int c, flags = 0, nodes = 0, nlabels = 0, nsgd = 0;
    double samples_d = 0.0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'o':
        case 'L':
        case 's': {
            int *count = c == 'o' ? &nodes : c == 'L' ? &nlabels : &nsgd;
            const char **list = c == 'o' ? ode : c == 'L' ? labels : sgd;
            if (*count == MAX_ORDERS) {
                fprintf(stderr, "aimdyn plot: %s given more than %d times\n",
                        c == 'o' ? "--ode" : c == 'L' ? "--label" : "--sgd", MAX_ORDERS);
                return AIM_EXIT_USAGE;
            }
            list[(*count)++] = optarg;
            break;
        }
        case 'f': stem = optarg; break;
        case 'l': flags |= AIM_PLOT_LOG_TAU; break;
        case 'm': flags |= AIM_PLOT_MEAN; break;
        case 'n': {
            char *end;
            samples_d = strtod(optarg, &end);
            if (end == optarg || *end || !(samples_d >= 1.0) || !isfinite(samples_d)) {
                fprintf(stderr, "aimdyn plot: --samples \"%s\": the dimension d of the files; "
                                "allowed: a number >= 1\n", optarg);
                return AIM_EXIT_USAGE;
            }
            break;
        }
        case 'h': print_usage(stdout, "plot"); return 0;
        default:
            fprintf(stderr, "aimdyn plot: see `aimdyn plot --help`\n");
            return AIM_EXIT_USAGE;
        }
    }
    if (optind < argc || !stem || (!nodes && !nsgd)) {
        fprintf(stderr, "aimdyn plot: needs --figure STEM and at least one of --ode FILE, "
                        "--sgd FILE (see `aimdyn plot --help`)\n");
        return AIM_EXIT_USAGE;
    }
    if (aim_cli_check_figure("plot", "--figure", stem))
        return AIM_EXIT_USAGE;
    for (int i = 0; i < nodes + nsgd; i++)
        if (aim_cli_check_input("plot", i < nodes ? "--ode" : "--sgd",
                                i < nodes ? ode[i] : sgd[i - nodes]))
            return AIM_EXIT_USAGE;
    for (int i = 0; i < nlabels; i++)
        if (strchr(labels[i], '\n') || strchr(labels[i], '\r')) {
            fprintf(stderr, "aimdyn plot: --label %d contains a line break; allowed: one line "
                            "of text\n", i + 1);
            return AIM_EXIT_USAGE;
        }
    if (nlabels && nlabels != nodes) {
        fprintf(stderr, "aimdyn plot: %d --label for %d --ode files: give one label per "
                        "ODE file, or none\n", nlabels, nodes);
        return AIM_EXIT_USAGE;
    }
    if (nsgd > 1 && nsgd != nodes) {
        fprintf(stderr, "aimdyn plot: %d --sgd for %d --ode files: give one SGD file for all "
                        "ODE files, or one per ODE file (paired in order)\n", nsgd, nodes);
        return AIM_EXIT_USAGE;
    }
    const aim_plot_spec sp = {ode, nlabels ? labels : NULL, nodes, sgd, nsgd, samples_d, flags};
    if (aim_plot_check_inputs(&sp))
        return AIM_EXIT_USAGE;
    aim_atomic_set *set = NULL;
    const int locked = aim_cli_lock_figure(stem, &set);
    if (locked)
        return locked > 0 ? AIM_EXIT_USAGE : AIM_EXIT_RUNTIME;
    /* on failure the old figure stays as it was */
    if (aim_plot_figure(&sp, stem, set)) {
        aim_atomic_set_free(set);
        return AIM_EXIT_RUNTIME;
    }
    if (aim_atomic_set_commit(set))
        return AIM_EXIT_RUNTIME;
    printf("wrote %s.png and %s.svg\n", stem, stem);
    return 0;
}

/* What agreement reads: an ODE file (sgd = 0) or an SGD summary (sgd =
 * 1), with tau and every observable (X, or X_mean and X_se). */
typedef struct {
    char names[2 * AIM_OBS_COUNT][32];
    const char *columns[2 * AIM_OBS_COUNT + 2];
    aim_table_kind kind;
} result_kind;

static void result_kind_init(result_kind *r, int sgd)
{
    int n = 0;
    r->columns[n++] = "tau";
    for (int k = 0; k < AIM_OBS_COUNT; k++)
        for (int j = 0; j < (sgd ? 2 : 1); j++) {
            char *name = r->names[sgd ? 2 * k + j : k];
            snprintf(name, sizeof r->names[0], sgd ? (j ? "%s_se" : "%s_mean") : "%s",
                     aim_obs_names[k]);
            r->columns[n++] = name;
        }
    r->columns[n] = NULL;
    r->kind = (aim_table_kind){sgd ? "an SGD summary file NAME-sgd-dD.tsv (tau, and X_mean, "
                                     "X_se for every observable X)"
                                   : "an ODE result file NAME-ode.tsv (tau and every observable)",
                               r->columns, NULL};
}

/* Observables of a result file read as result_kind on its tau grid
 * (points x OBS), the SGD summary's means and standard errors when sgd is
 * set. Returns the number of rows. */
static int table_observables(const aim_table *t, int sgd, double upto, double *tau, double *a,
                             double *b, int max_rows)
{
    const int kt = aim_table_column(t, "tau");
    int ka[AIM_OBS_COUNT], kb[AIM_OBS_COUNT];
    for (int k = 0; k < AIM_OBS_COUNT; k++) {
        char name[64];
        snprintf(name, sizeof name, sgd ? "%s_mean" : "%s", aim_obs_names[k]);
        ka[k] = aim_table_column(t, name);
        snprintf(name, sizeof name, "%s_se", aim_obs_names[k]);
        kb[k] = aim_table_column(t, name);
    }
    int rows = 0;
    for (int i = 0; i < t->nrows && rows < max_rows; i++) {
        const double *row = t->data + (size_t)i * t->ncols;
        if (row[kt] > upto)
            break;
        tau[rows] = row[kt];
        for (int k = 0; k < AIM_OBS_COUNT; k++) {
            a[(size_t)rows * AIM_OBS_COUNT + k] = row[ka[k]];
            if (sgd)
                b[(size_t)rows * AIM_OBS_COUNT + k] = row[kb[k]];
        }
        rows++;
    }
    return rows;
}

static int cmd_agreement(int argc, char **argv)
{
    static const struct option longopts[] = {{"ode", required_argument, NULL, 'o'},
                                             {"sgd", required_argument, NULL, 's'},
                                             {"upto", required_argument, NULL, 'u'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    const char *ode[MAX_ORDERS], *sgd = NULL;
    int c, nodes = 0;
    double upto = INFINITY;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        char *end;
        switch (c) {
        case 'o':
            if (nodes == MAX_ORDERS) {
                fprintf(stderr, "aimdyn agreement: --ode given more than %d times\n", MAX_ORDERS);
                return AIM_EXIT_USAGE;
            }
            ode[nodes++] = optarg;
            break;
        case 's': sgd = optarg; break;
        case 'u':
            upto = strtod(optarg, &end);
            if (*end || end == optarg || !(upto > 0)) {
                fprintf(stderr, "aimdyn agreement: --upto %s: not allowed; allowed: a real "
                                "number > 0 (the last tau compared)\n", optarg);
                return AIM_EXIT_USAGE;
            }
            break;
        case 'h': print_usage(stdout, "agreement"); return 0;
        default:
            fprintf(stderr, "aimdyn agreement: see `aimdyn agreement --help`\n");
            return AIM_EXIT_USAGE;
        }
    }
    if (optind < argc || !sgd || !nodes) {
        fprintf(stderr, "aimdyn agreement: needs --sgd FILE and at least one --ode FILE "
                        "(see `aimdyn agreement --help`)\n");
        return AIM_EXIT_USAGE;
    }
    result_kind sgd_kind, ode_kind;
    result_kind_init(&sgd_kind, 1);
    result_kind_init(&ode_kind, 0);
    aim_table ts;
    if (aim_table_read(sgd, &sgd_kind.kind, &ts))
        return AIM_EXIT_USAGE;
    const size_t cells = (size_t)ts.nrows * AIM_OBS_COUNT + 1;
    double *tau_s = malloc(sizeof(double) * ((size_t)ts.nrows + 1)),
           *tau_o = malloc(sizeof(double) * ((size_t)ts.nrows + 1));
    double *mean = malloc(sizeof(double) * cells), *se = malloc(sizeof(double) * cells),
           *obs = malloc(sizeof(double) * cells);
    int exit_code = AIM_EXIT_USAGE;
    if (!tau_s || !tau_o || !mean || !se || !obs) {
        fprintf(stderr, "aimdyn agreement: out of memory\n");
        exit_code = AIM_EXIT_RUNTIME;
        goto done;
    }
    int ns = table_observables(&ts, 1, upto, tau_s, mean, se, ts.nrows);
    if (ns < 1) {
        fprintf(stderr, "aimdyn agreement: %s: no row up to --upto; allowed: an SGD summary "
                        "file NAME-sgd-dD.tsv with a row at tau <= --upto\n", sgd);
        goto done;
    }
    printf("%-28s %-10s %12s %10s %10s %10s\n", "ode file", "observable", "max_gap", "at_tau",
           "gap/se", "rel_gap");
    for (int j = 0; j < nodes; j++) {
        aim_table to;
        if (aim_table_read(ode[j], &ode_kind.kind, &to))
            goto done;
        int no = table_observables(&to, 0, upto, tau_o, obs, NULL, ns);
        int same = 1;
        for (int i = 0; same && i < ns; i++) /* a stopped ODE has fewer rows */
            same = i >= no || fabs(tau_o[i] - tau_s[i]) <= 1e-9 * fmax(1.0, fabs(tau_s[i]));
        if (!same) {
            fprintf(stderr, "aimdyn agreement: %s and %s are not on the same tau grid "
                            "(compare files made with the same training.horizon, "
                            "training.points and training.grid)\n", ode[j], sgd);
            aim_table_free(&to);
            goto done;
        }
        for (size_t i = (size_t)(no > 0 ? no : 0) * AIM_OBS_COUNT; i < (size_t)ns * AIM_OBS_COUNT; i++)
            obs[i] = NAN; /* past a stop: an infinite gap */
        aim_gap gaps[AIM_OBS_COUNT];
        aim_compare_gaps(ns, tau_s, obs, mean, se, gaps);
        const char *base = strrchr(ode[j], '/') ? strrchr(ode[j], '/') + 1 : ode[j];
        for (int k = 0; k < AIM_OBS_COUNT; k++) {
            int raw_mean = 0; /* the mean is a row of its own in raw centring only */
            for (int i = 0; k == AIM_OBS_MEAN && i < ns; i++)
                raw_mean |= mean[(size_t)i * AIM_OBS_COUNT + k] != 0.0;
            if (k == AIM_OBS_MEAN && !raw_mean)
                continue;
            double scale = 0.0;
            for (int i = 0; i < no; i++)
                scale = fmax(scale, fabs(obs[(size_t)i * AIM_OBS_COUNT + k]));
            printf("%-28.28s %-10s %12.4g %10.4g %10.3g %10.3g\n", base, aim_obs_names[k],
                   gaps[k].max_abs, gaps[k].tau_abs, gaps[k].max_z,
                   scale > 0 ? gaps[k].max_abs / scale : NAN);
            /* the ODE risk against the Gaussian formula on SGD's order
             * parameters, where the file has it (theory/measurement.md) */
            const int cgm = k == AIM_OBS_RISK ? aim_table_column(&ts, "risk_gauss_mean") : -1;
            const int cgs = aim_table_column(&ts, "risk_gauss_se");
            if (cgm >= 0 && cgs >= 0) {
                aim_gap g = aim_compare_gap(ns, tau_s, obs + k, AIM_OBS_COUNT, ts.data + cgm,
                                            ts.data + cgs, (size_t)ts.ncols);
                printf("%-28.28s %-10s %12.4g %10.4g %10.3g %10.3g\n", base, "risk_gauss",
                       g.max_abs, g.tau_abs, g.max_z, scale > 0 ? g.max_abs / scale : NAN);
            }
        }
        /* tracked moments m(w) present in both files (tied and untied) */
        for (int c = 0; c < to.ncols; c++) {
            char name[160];
            if (strncmp(to.names[c], "m(", 2) != 0)
                continue;
            snprintf(name, sizeof name, "%s_mean", to.names[c]);
            int cm = aim_table_column(&ts, name);
            snprintf(name, sizeof name, "%s_se", to.names[c]);
            int cs = aim_table_column(&ts, name);
            if (cm < 0 || cs < 0)
                continue;
            double scale = 0.0;
            for (int i = 0; i < ns; i++) { /* the ODE column, NaN past its end */
                obs[i] = i < no ? to.data[(size_t)i * to.ncols + c] : NAN;
                if (!isnan(obs[i]))
                    scale = fmax(scale, fabs(obs[i]));
            }
            aim_gap g = aim_compare_gap(ns, tau_s, obs, 1, ts.data + cm, ts.data + cs,
                                        (size_t)ts.ncols);
            printf("%-28.28s %-10s %12.4g %10.4g %10.3g %10.3g\n", base, to.names[c],
                   g.max_abs, g.tau_abs, g.max_z, scale > 0 ? g.max_abs / scale : NAN);
        }
        aim_table_free(&to);
    }
    exit_code = 0;
done:
    aim_table_free(&ts);
    free(tau_s);
    free(tau_o);
    free(mean);
    free(se);
    free(obs);
    return exit_code;
}

static int run_command(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        print_usage(argc < 2 ? stderr : stdout, NULL);
        return argc < 2 ? AIM_EXIT_USAGE : 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("aimdyn %s\n", AIM_VERSION);
        return 0;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "ode"))
        return cmd_ode(argc - 1, argv + 1);
    if (!strcmp(cmd, "sgd"))
        return cmd_sgd(argc - 1, argv + 1);
    if (!strcmp(cmd, "compare"))
        return cmd_compare(argc - 1, argv + 1);
    if (!strcmp(cmd, "plot"))
        return cmd_plot(argc - 1, argv + 1);
    if (!strcmp(cmd, "hierarchy"))
        return cmd_hierarchy(argc - 1, argv + 1);
    if (!strcmp(cmd, "agreement"))
        return cmd_agreement(argc - 1, argv + 1);
    if (!strcmp(cmd, "recovery"))
        return aim_cmd_recovery(argc - 1, argv + 1);
    if (!strcmp(cmd, "sweep"))
        return aim_cmd_sweep(argc - 1, argv + 1);
    if (!strcmp(cmd, "scaling"))
        return aim_cmd_scaling(argc - 1, argv + 1);
    if (!strcmp(cmd, "keys")) {
        if (argc > 2) {
            print_usage(stdout, "keys");
            return strcmp(argv[2], "--help") && strcmp(argv[2], "-h") ? AIM_EXIT_USAGE : 0;
        }
        aim_config_describe(stdout);
        return 0;
    }
    fprintf(stderr, "aimdyn: unknown command '%s'; allowed: ode, sgd, compare, hierarchy, agreement, plot, recovery, sweep, scaling, keys "
                    "(see aimdyn --help)\n", cmd);
    return AIM_EXIT_USAGE;
}

/* What a command printed is checked once, here: stdout is buffered, so a
 * full disk (> /dev/full) shows only when it is flushed. A write error
 * is a run-time failure (exit 2), even after an otherwise complete run or
 * a recorded blow-up; a usage error or failure keeps its own status. */
static int finish_stdout(int rc)
{
    errno = 0;
    const int flushed = fflush(stdout) == 0 && !ferror(stdout);
    int err = errno;
    if (fclose(stdout) != 0 && flushed)
        err = errno;
    else if (flushed)
        return rc;
    fprintf(stderr, "aimdyn: cannot write to standard output: %s\n",
            strerror(err ? err : EIO));
    return rc == AIM_EXIT_USAGE || rc == AIM_EXIT_RUNTIME ? rc : AIM_EXIT_RUNTIME;
}

int main(int argc, char **argv)
{
    /* GSL's default handler aborts; every GSL status is checked instead,
     * and out-of-range special-function values surface as non-finite
     * numbers that the blow-up checks report. */
    gsl_set_error_handler_off();
    return finish_stdout(run_command(argc, argv));
}
