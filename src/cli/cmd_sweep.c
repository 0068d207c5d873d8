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
 * bit; the wall times go to stdout and stderr only.
 *
 * This file: the options, and the run from the checks to the exit status.
 * The points' configurations and files: sweep_points.c; computing them on
 * the workers: sweep_pool.c; the table, the heatmap and the summary:
 * sweep_report.c (what they share: sweep_internal.h). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atomic.h"
#include "cli.h"
#include "config.h"
#include "plot.h"
#include "pool.h"
#include "ranks.h"
#include "sweep_internal.h"
#include "tsv.h"

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
           aim_cli_usage_threads(), aim_cli_usage_common);
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

static void sweep_free(sweep *sw)
{
    for (int v = 0; v < sw->nvary; v++)
        free(sw->vary[v].list);
    aim_cli_args_free(&sw->args);
    free(sw->cfg);
    free(sw->res);
    free(sw->done);
}


/* Everything after the checks: resume (reading only, so that a usage
 * error still writes nothing), compute, assemble, draw. */
static int run_sweep(sweep *sw, double t0)
{
    if (aim_sweep_point_dir(sw))
        return AIM_EXIT_USAGE;
    /* rank 0 alone reads and prepares the point folder (ranks.h) */
    const int root = aim_ranks_rank() == 0;
    const int kept = root ? aim_sweep_keep_finished(sw) : 0;
    const int prepared = kept >= 0 && (!root || aim_sweep_prepare_dirs(sw) == 0);
    sw->finished = kept;
    if (aim_sweep_run_workers(sw, prepared ? 0 : -1) || !prepared)
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
        aim_sweep_write_table(sw, path, sizeof path, set)) {
        aim_atomic_set_free(set);
        return AIM_EXIT_RUNTIME;
    }
    int heatmap_failed = 0;
    const int no_gnuplot = !aim_plot_available();
    if (no_gnuplot || aim_sweep_draw_heatmap(sw, stem, set) != 0) {
        heatmap_failed = !no_gnuplot;
        /* an old heatmap would show other results */
        if (aim_plot_stale(set, stem)) {
            aim_atomic_set_free(set);
            return AIM_EXIT_RUNTIME;
        }
    }
    if (aim_atomic_set_commit(set))
        return AIM_EXIT_RUNTIME;
    aim_sweep_print_summary(sw, sw->npoints - kept, aim_sweep_now() - t0);
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
    return aim_sweep_result_status(sw, heatmap_failed);
}

int aim_cmd_sweep(int argc, char **argv)
{
    const double t0 = aim_sweep_now();
    sweep sw;
    memset(&sw, 0, sizeof sw);
    int rc = parse_options(argc, argv, &sw);
    if (rc == 0)
        rc = aim_sweep_load_base(&sw) || aim_sweep_check_values(&sw) ||
                     aim_sweep_check_points(&sw)
                 ? -1
                 : 0;
    int exit_code = rc > 0 ? 0 : rc < 0 ? AIM_EXIT_USAGE : run_sweep(&sw, t0);
    sweep_free(&sw);
    return exit_code;
}
