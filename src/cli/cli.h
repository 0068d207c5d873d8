/* aim_cli: what the command modules of the aimdyn front end share
 * (exit codes, configuration loading, the options and runs of ode, sgd
 * and compare, help texts). Each command lives in its own file
 * (cmd_NAME.c) and main() dispatches on the command name. */
#ifndef AIM_CLI_H
#define AIM_CLI_H

#include "atomic.h"
#include "config.h"

enum { AIM_EXIT_USAGE = 1, AIM_EXIT_RUNTIME = 2, AIM_EXIT_BLOWUP = 3 };

/* AIM_RECOVERY_THRESHOLD, the weak-recovery threshold */
#include "trajectory.h"
#include "tsv.h"

/* The help lines of --set, --out, --name and --help. */
extern const char *const aim_cli_usage_common;

/* cfg = defaults, then the file at path (NULL: the built-in default
 * example), then the assignments sets[0 .. nsets-1] ("section.key=value")
 * in order, then validation. Returns 0, or -1 after printing
 * "aimdyn CMD: reason" to stderr. */
int aim_cli_load_config(const char *cmd, const char *path, const char *const *sets,
                        int nsets, aim_config *cfg);

/* `aimdyn rerun`: while cfg is not NULL, aim_cli_load_config takes cfg
 * (a sidecar's recorded configuration) in place of the file and the
 * assignments of the command line. */
void aim_cli_use_recorded_config(const aim_config *cfg);

/* The order-M hierarchy of cfg's student is counted before it is built
 * (aim_hierarchy_equations): above AIM_HIERARCHY_MAX_EQUATIONS it is
 * refused, from AIM_HIERARCHY_LARGE_EQUATIONS on its size and the
 * measured cost of building it are noted on stderr. Returns 0, or -1
 * after a message naming hierarchy.order, the size and the largest order
 * allowed. aim_cli_load_config checks hierarchy.order with it. */
int aim_cli_hierarchy_fits(const char *cmd, const aim_config *cfg, int order);

/* A figure stem given on the command line (option opt, e.g. --figure):
 * one line, a file name after its last '/', and not starting with '|' or
 * '<' (gnuplot would run the rest as a shell command). Returns 0, or -1
 * after a message naming the option, the value and what is allowed. */
int aim_cli_check_figure(const char *cmd, const char *opt, const char *stem);

/* An input file handed to gnuplot (plot --ode, --sgd): not starting with
 * '|' or '<'. Returns 0, or -1 after a message. */
int aim_cli_check_input(const char *cmd, const char *opt, const char *path);

/* Takes the output lock of a figure stem (its directory and file name:
 * aim_atomic_lock) and, when set is not NULL, makes the set that its
 * files join. Returns 0, 1 when another run holds the lock, -1 (said). */
int aim_cli_lock_figure(const char *stem, aim_atomic_set **set);

/* ---- the options of every command (cli_options.c) ---- */

#define AIM_CLI_MAX_SETS 64 /* configuration assignments on one command line */

/* What an option is. */
typedef enum {
    /* a configuration assignment, so that the configuration in every
     * result file is the one that ran: assign "" is --set KEY=VALUE, else
     * assign is a shorthand's prefix and the value follows ("output.dir="
     * for --out); without a value, assign is the whole assignment
     * ("ode.rule=generic" for --generic) */
    AIM_OPT_ASSIGN,
    AIM_OPT_INTEGER,   /* in [lo, hi] (allowed: a note after the range) into
                          the int target, or with assign an assignment */
    AIM_OPT_INTEGERS,  /* repeatable, increasing, in [lo, hi]: the int array
                          target, *count of at most max_count */
    AIM_OPT_REAL,      /* > min (min_open) or >= min, <= max, into the double
                          target; allowed says what is */
    AIM_OPT_TEXT,      /* a value (a file, a stem) into the const char *
                          target; the last one given */
    AIM_OPT_TEXTS,     /* repeatable: the const char * array target, *count
                          of at most max_count */
    AIM_OPT_FLAG,      /* no value: the int target |= bits */
    AIM_OPT_OWN,       /* the command's own: own(target, value), 0 or -1
                          after a message */
    AIM_OPT_ELSEWHERE  /* an option of other commands: refused with "does not
                          apply to this command" */
} aim_cli_option_kind;

typedef struct {
    const char *name; /* the long name, without "--" */
    aim_cli_option_kind kind;
    int has_value;
    const char *assign;
    long lo, hi;
    double min, max;
    int min_open;
    const char *allowed;
    void *target;
    int *count, max_count;
    int bits;
    int *given; /* when not NULL, counts the times the option was given */
    int (*own)(void *target, const char *value);
} aim_cli_option;

/* --threads N, the expectation engine's threads (aim_gauss_set_threads),
 * for a command's table: once its command line is parsed, the engine
 * runs on N threads, else on OMP_NUM_THREADS, else on
 * aim_threading_default (an OMP_NUM_THREADS that is not one number is
 * a usage error); on more than one, idle threads sleep
 * (aim_threading_passive). aim_cli_threads_explicit: whether --threads
 * was given (the pool's workers run one thread otherwise). */
extern const aim_cli_option aim_cli_threads;
int aim_cli_threads_explicit(void);
/* Its help lines, with the default's count on this machine. */
const char *aim_cli_usage_threads(void);

/* A comma-separated list of names out of names[0 .. n-1] (plot --format
 * png,pdf, --panels, compare --students): each one's index, in the order
 * given, into picked (room for n), their number into *count. Returns 0,
 * or -1 after "aimdyn CMD: OPTION VALUE: ..." naming an empty or unknown
 * name or one given twice, and what is allowed. */
int aim_cli_name_list(const char *cmd, const char *option, const char *value,
                      const char *const names[], int n, int *picked, int *count);

/* The start of a table entry: name, kind, whether it takes a value; the
 * rest by field name. */
#define AIM_OPT(name_, kind_, has_value_) .name = (name_), .kind = (kind_), .has_value = (has_value_)

/* A command's options: its table, its help (--help, -h) and its
 * operands: at most max_operands, and after them an "unexpected
 * argument" error saying unexpected (NULL: the command says it, seeing
 * aim_cli_args.extra). */
typedef struct {
    const char *cmd;
    const aim_cli_option *options;
    int noptions;
    void (*help)(const char *cmd);
    int max_operands;
    const char *unexpected;
} aim_cli_spec;

/* What the command line gave besides the options' targets. */
typedef struct {
    const char *sets[AIM_CLI_MAX_SETS]; /* the assignments, in order */
    char *owned[AIM_CLI_MAX_SETS];
    int nsets;
    const char *operand[1];
    int noperands;
    int extra; /* an operand beyond max_operands (unexpected NULL) */
} aim_cli_args;

/* The one option loop: getopt_long over spec's table, each value checked
 * and stored as its kind says, every usage error "aimdyn CMD: ..." on
 * stderr naming the option, the value and what is allowed. Returns 0, 1
 * after printing the help, or -1 after a usage error; args is then
 * released with aim_cli_args_free. */
int aim_cli_parse(const aim_cli_spec *spec, int argc, char **argv, aim_cli_args *args);
void aim_cli_args_free(aim_cli_args *args);

/* aim_cli_parse for a command of files and values only (plot,
 * agreement): no assignments, its help from usage.c, and *extra set
 * when an operand was given (the command names what it needs). */
int aim_cli_parse_files(const char *cmd, const aim_cli_option *options, int noptions, int argc,
                        char **argv, int *extra);

/* ---- what ode, sgd, compare, hierarchy and plot share (options.c,
 * runs.c, usage.c) ---- */

#define MAX_DIMS 8
#define MAX_ORDERS 10
#define MAX_STUDENTS 3 /* direct, tied, untied */

/* "direct", "tied", "untied": compare --students */
extern const char *const aim_cli_student_names[MAX_STUDENTS];

/* The options of ode, sgd, compare and hierarchy. */
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
    int jobs; /* sgd, compare: worker processes for the seeds of one d */
} run_options;

/* Online SGD measures at the grid points, each a later step than the one
 * before: otherwise its files would give one state several tau (at
 * eta = 1e6 a run takes no step at all). Returns 0, or -1 after a message
 * naming the keys. */
int aim_cli_sgd_grid_usable(const char *cmd, const aim_config *cfg, int d);

/* Parses [CONFIG] and the options of ode, sgd and compare. Returns 0, 1
 * after printing help, or -1 on a usage error. */
int aim_cli_parse_run_options(const char *cmd, int argc, char **argv,
                             run_options *ro);

/* CVODE's counters of n integrations (an aim_ode_report's stats) into
 * the sidecar of tsv (aim_tsv_integration), each named prefix + its what
 * (e.g. "d = 100, seed 3: " + "trajectory"). Returns 0, or -1 (said). */
int aim_cli_record_integrations(aim_tsv *tsv, const char *prefix, int n,
                                const aim_ode_stats *stats);

/* The same counters as '#' lines "# cvode: WHAT: steps N, rhs_evals N,
 * ..." of a file that carries them from the worker that integrated to the
 * parent that writes the run's tables (a recovery seed's file, a sweep
 * point's), and read back from its table t (at path; cmd for messages)
 * into stats: their number, or -1 after a message naming the line. */
void aim_cli_put_integrations(FILE *f, int n, const aim_ode_stats *stats);
int aim_cli_get_integrations(const aim_table *t, const char *cmd, const char *path,
                             aim_ode_stats stats[AIM_ODE_MAX_INTEGRATIONS]);

/* Writes DIR/NAME-ode.tsv into path: renamed into place now (set NULL)
 * or with set. */
int aim_cli_write_ode_file(const aim_config *cfg, int d, const double *tau,
                          const double *obs, const aim_trajectory_moments *mom,
                          const aim_ode_report *rep, char *path, size_t pathlen,
                          aim_atomic_set *set);

/* Median over seeds of the weak-recovery time (aim_recovery_median: a
 * seed that blew up before the median without recovering leaves it
 * undefined). */
double aim_cli_median_recovery(const aim_config *cfg, const double *tau, const double *obs,
                              const int *reached, int *recovered, double error[2]);

/* SGD at dimension d: runs the seeds on jobs workers (aim_seeds: each
 * kept as it finishes, resumed by a rerun; the seed files are removed
 * when set is committed, aim_seeds_remove_dir then removes their
 * folder), writes the per-seed and summary
 * files into set (renamed into place when it is committed). mean/se
 * receive the summary (points x OBS) and xmean/xse that of the SGD-only
 * extras (points x AIM_SGD_EXTRA_COUNT): NaN from the first point a
 * blown-up seed did not reach, since a mean over the surviving seeds only
 * would be biased towards the stable ones. Returns 0, 1 when a seed blew
 * up (files written), AIM_CLI_SGD_ELSEWHERE on a rank other than 0 of an
 * MPI job (its share of the seeds written, nothing else: ranks.h), -1 on
 * failure. */
enum { AIM_CLI_SGD_ELSEWHERE = 2 };
int aim_cli_run_sgd(const char *cmd, int jobs, const aim_config *cfg, int d, const double *tau,
                    double *mean,
                   double *se, double *xmean, double *xse, double *median_wr,
                   int *recovered, char *summary_path, size_t pathlen, aim_atomic_set *set);

/* On a rank other than 0 of an MPI job (ranks.h): this rank's share of
 * the seeds that aim_cli_run_sgd(cmd, jobs, cfg, d, ...) runs on rank 0,
 * each written into its seed file; nothing else. Returns 0, or -1 after
 * a message. */
int aim_cli_sgd_share(const char *cmd, int jobs, const aim_config *cfg, int d);

void aim_cli_usage(FILE *out, const char *cmd);
/* aim_cli_usage(stdout, cmd): the --help of a command whose text is in usage.c */
void aim_cli_usage_to_stdout(const char *cmd);

/* A weak-recovery time for a reader: tau in %.6g, or `none` (e.g. "not
 * reached", "not defined") when it is NaN. Returns buf (size n). */
const char *aim_cli_tau_text(char *buf, size_t n, double tau, const char *none);

int aim_cmd_ode(int argc, char **argv);
int aim_cmd_hierarchy(int argc, char **argv);
int aim_cmd_sgd(int argc, char **argv);
int aim_cmd_compare(int argc, char **argv);
int aim_cmd_plot(int argc, char **argv);
int aim_cmd_agreement(int argc, char **argv);

int aim_cmd_recovery(int argc, char **argv);
int aim_cmd_sweep(int argc, char **argv);
int aim_cmd_scaling(int argc, char **argv);
/* run: the dispatcher of main.c, given the recorded command line */
int aim_cmd_rerun(int argc, char **argv, int (*run)(int, char **));

#endif
