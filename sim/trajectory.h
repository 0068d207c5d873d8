/* aim_trajectory: the configured model's limit ODE integrated on the
 * training grid, as observables per grid point (the path configuration
 * -> model -> CVODE -> observables shared by the CLI and the tests). */
#ifndef AIM_TRAJECTORY_H
#define AIM_TRAJECTORY_H

#include <stdio.h>

#include "config.h"
#include "gauss.h"
#include "model.h"
#include "ode.h"
#include "overlaps.h"

/* Where the notes of a run in progress go: the hand-over to the matrix
 * limit process, a replica of that process done. note(ctx, text) gets
 * one line without its newline; by default "aimdyn: TEXT" on stderr;
 * NULL: nowhere. Process-wide: set it before runs start (a process's
 * replicas note from the engine's threads, one at a time). */
void aim_trajectory_set_notes(void (*note)(void *ctx, const char *text), void *ctx);

/* Where a run's progress goes as it goes (the front end shows a long
 * one with its ETA). A run reports in stages: a hierarchy integrated on
 * the grid (label "order-M hierarchy": one task, its work the grid
 * intervals), the matrix limit process (its replicas the tasks, run
 * `threads` at a time, each one's work the span of tau). begin(ctx, ...)
 * returns the stage the other calls get (NULL: not shown); update says
 * that task, on thread `thread` (0 .. threads - 1), has reached grid
 * point done of total, work units into its work (0 as it begins);
 * finished that it has ended (at its end or where it stopped); end that
 * the stage has. The calls come one at a time (the replicas' from their
 * threads, in a critical section). Process-wide, set before runs start;
 * NULL (the default): nowhere. */
typedef struct {
    void *(*begin)(void *ctx, const char *label, const char *unit, int tasks, int threads,
                   double work_per_task, const char *work_unit);
    void (*update)(void *stage, int thread, int task, int done, int total, double work);
    void (*finished)(void *stage, int thread, int task);
    void (*end)(void *stage);
} aim_trajectory_progress_ops;
void aim_trajectory_set_progress(const aim_trajectory_progress_ops *ops, void *ctx);

/* Integrates on tau[0 .. cfg->points-1] and fills obs (points x
 * AIM_OBS_COUNT; NaN past a blow-up) with the expectation rule
 * cfg->rule. d is the dimension used by the
 * raw-mode mean equation when cfg->ode_d is 0. Returns the status; the
 * report says where and why it stopped. It starts from the exact large-d
 * start whatever hierarchy.start and training.start_file say: a measured
 * start (a seed's or a saved state's, aim_compare_measure_start) goes
 * through aim_trajectory_run_full. */
aim_ode_status aim_trajectory_run(const aim_config *cfg, int d,
                                  const double *tau, double *obs,
                                  aim_ode_report *report);

/* The moments of the tracked words of a hierarchy (tied students) at
 * every grid point reached. */
typedef struct {
    int count;      /* tracked words (0 for direct students) */
    char **names;   /* "m(SST)" */
    double *values; /* points x count; NaN past a blow-up */
    /* ode.method = matrix with two or more replicas: the standard error
     * of each observable's replica mean (points x AIM_OBS_COUNT); NULL
     * otherwise */
    double *obs_se;
    /* tied and untied hierarchies of order M >= 3: the truncation error
     * estimate per grid point from orders M - trunc_orders .. M
     * (theory/matrix.md sec. 6), of the overlap and of the risk relative
     * to risk_M (points x 2; NaN where the order M - 1 run had stopped);
     * NULL otherwise */
    double *trunc;
    int trunc_orders;  /* lower orders read: 1 (M = 3), 2 (M = 4), 3 */
    int trunc_points;  /* their quasi-random points, 0: the run's own rule */
    double trunc_stop; /* tau where the order M - 1 run stopped, NAN if it
                          ran through */
    char trunc_stop_why[256]; /* why it stopped there (its stop, or CVODE's failure) */
    double trunc_stall; /* first tau of a row written where the orders do
                           not converge in M (hierarchy.tol = 0 keeps it;
                           its estimate is no bound), NAN if none */
    /* ode.method = matrix with output.fold: each replica's sign (matrix.replicas
     * entries: -1 mirrored, +1 not, 0 not run after an earlier replica blew
     * up); NULL otherwise */
    int *fold_sign;
} aim_trajectory_moments;

void aim_trajectory_moments_free(aim_trajectory_moments *m);

/* aim_trajectory_run for any student. start: a measured start (e.g. an
 * SGD seed's initial matrices at dimension d: the finite-d start; its
 * field d is set here), NULL for the exact large-d one; moments (may be
 * NULL) receives the tracked moments of a hierarchy (free with
 * aim_trajectory_moments_free). */
aim_ode_status aim_trajectory_run_full(const aim_config *cfg, int d,
                                       const double *tau, const aim_measured_start *start,
                                       double *obs, aim_trajectory_moments *moments,
                                       aim_ode_report *report);

/* Successive orders of one hierarchy (compare --order 1 ... 5): the
 * order-M run's truncation error estimate integrates orders M - 1 .. M - 3
 * again, which the previous orders have just made. A reuse keeps the last
 * runs' observables (before their own truncation cut) with what identifies
 * each bit for bit (configuration but its name, d, grid, start moments),
 * and the next run's estimate takes them instead of integrating them
 * again: the same numbers, fewer integrations per order. */
typedef struct aim_trajectory_reuse aim_trajectory_reuse;
/* NULL when out of memory */
/* The most tracked words a hand-over's matrix process measures at each
 * output point (one D x D matrix product a word): it writes the words of
 * the highest order that has at most this many (every tied order, untied
 * orders up to 4), the longer ones NaN (aim_ode_report.handover_order). */
enum { AIM_HANDOVER_WORDS = 256 };

aim_trajectory_reuse *aim_trajectory_reuse_create(void);
void aim_trajectory_reuse_free(aim_trajectory_reuse *r);
/* The highest order the runs sharing r will ask for: a hierarchy that
 * fails and hands over (hierarchy.beyond = matrix) runs the matrix limit
 * process once, measuring the words up to that order (as far as
 * AIM_HANDOVER_WORDS allows), and every later order of the same
 * configuration takes it from r. */
void aim_trajectory_reuse_orders(aim_trajectory_reuse *r, int highest);
/* how many lower-order runs the estimates took from r */
int aim_trajectory_reused(const aim_trajectory_reuse *r);
/* aim_trajectory_run_full with a reuse (NULL: none). */
aim_ode_status aim_trajectory_run_reusing(const aim_config *cfg, int d, const double *tau,
                                          const aim_measured_start *start, double *obs,
                                          aim_trajectory_moments *moments,
                                          aim_ode_report *report, aim_trajectory_reuse *reuse);

/* At the exact large-d start of cfg's student: the observables obs0 and
 * d overlap/d tau from the right-hand side (d: the dimension of a raw
 * mean's equation when cfg->ode_d is 0). Returns 0, or -1 with the reason
 * in err (size n). */
int aim_trajectory_start_drift(const aim_config *cfg, int d, double obs0[AIM_OBS_COUNT],
                               double *drift, char *err, size_t n);

/* The metadata line "# kernels: ..." of a result file: the expectation
 * rule, its point count and estimated kernel error (an aim_ode_report's
 * kernel_points, kernel_error); nothing for ode.method = matrix. */
void aim_trajectory_kernel_line(FILE *f, const aim_config *cfg, int points, double error);

/* First tau at which |overlap| reaches threshold, linearly interpolated
 * between grid points; NaN when never (or NaN first). overlap[i * stride].
 * For measured curves (SGD); the ODE locates its crossing by root finding
 * (aim_ode_report.tau_wr). */
double aim_trajectory_recovery_time(int points, const double *tau,
                                    const double *overlap, size_t stride,
                                    double threshold);

/* The error of aim_trajectory_recovery_time's linear interpolation: the
 * spacing of the two grid points around the crossing (the crossing lies
 * between them when the overlap is monotone there) and the curvature
 * estimate h^2 |f''| / (8 |f'|), f = |overlap|, from the second and first
 * differences of the grid values (NaN when not crossed, or not
 * estimable: fewer than three points). */
void aim_trajectory_recovery_error(int points, const double *tau, const double *overlap,
                                   size_t stride, double threshold, double *spacing,
                                   double *curvature);

#endif
