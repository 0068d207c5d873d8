/* Internal to `aimdyn scaling`: the runs, the rows and the fits that
 * its parts share (cmd_scaling.c: the options and the run;
 * scaling_read.c: the SGD and prediction files; scaling_fit.c: the
 * statistics per d and the fits; scaling_output.c: stdout, the TSV and
 * the figure). Not installed. */
#ifndef AIM_SCALING_INTERNAL_H
#define AIM_SCALING_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "atomic.h"
#include "config.h"

/* the prefix of every message */
#define CMD "aimdyn scaling"

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

/* scaling_read.c: the SGD and prediction files */
int aim_scaling_compare_ints(int x, int y);
void aim_scaling_free_runs(sgd_run *runs, int n);
sgd_run *aim_scaling_read_runs(options *o);
int aim_scaling_read_predictions(const options *o, prediction **pred, int *n);

/* scaling_fit.c: the statistics per d and the fits */
int aim_scaling_fit_laws(const sgd_run *runs, int nruns, fits *f);
dim_row *aim_scaling_merge_rows(sgd_run *runs, int nruns, const prediction *pred, int npred,
                                int *nrows);

/* scaling_output.c: stdout, the TSV and the figure */
void aim_scaling_print_table(const options *o, const dim_row *rows, int nrows);
void aim_scaling_print_fits(const fits *f, int nruns, int censored, int eta_varies);
void aim_scaling_print_predictions(const dim_row *rows, int nrows);
int aim_scaling_write_tsv(const options *o, const char *cmdline, const sgd_run *runs,
                          int nruns, const dim_row *rows, int nrows, const fits *ft,
                          char *path, size_t size, aim_atomic_set *set);
int aim_scaling_write_figure(const options *o, const sgd_run *runs, int nruns,
                             const dim_row *rows, int nrows, const fits *ft,
                             aim_atomic_set *set);

#endif
