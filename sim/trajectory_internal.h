/* Internal to the parts of aim_trajectory (sim/trajectory.c the driver,
 * trajectory_run.c one model's run on the grid, the notes and the crossing
 * time, trajectory_matrix.c the matrix method, trajectory_reuse.c the kept runs,
 * trajectory_estimate.c the truncation error estimate,
 * trajectory_handover.c the hand-over to the matrix limit process): what
 * one part calls or reads in another. Each function is described where it
 * is defined. Not part of the API (see trajectory.h). */
#ifndef AIM_TRAJECTORY_INTERNAL_H
#define AIM_TRAJECTORY_INTERNAL_H

#include <stddef.h>

#include "config.h"
#include "model.h"
#include "ode.h"
#include "trajectory.h"

/* ---- notes and progress (trajectory_run.c) */

/* A note of a run in progress, to the sink of aim_trajectory_set_notes. */
__attribute__((format(printf, 1, 2))) void aim_trajectory_i_note(const char *fmt, ...);

/* A stage of a run's progress, to the operations of
 * aim_trajectory_set_progress (NULL when none are set: every call below
 * takes it). The update and finished calls may come from the engine's
 * threads: they name their own thread. */
void *aim_trajectory_i_stage_begin(const char *label, const char *unit, int tasks, int threads,
                                   double work_per_task, const char *work_unit);
void aim_trajectory_i_stage_update(void *stage, int task, int done, int total, double work);
void aim_trajectory_i_stage_finished(void *stage, int task);
void aim_trajectory_i_stage_end(void *stage);
/* An ODE's stage (a hierarchy's, "order-M hierarchy"; else "direct
 * ODE"): one task, cfg->points - 1 grid intervals. */
void *aim_trajectory_i_ode_stage(const aim_config *cfg);

/* ---- one model integrated on the grid (trajectory_run.c) */

/* A run's report and moments before it starts: zeroed, the status
 * failed and the times and estimates NAN until the run sets them. */
void aim_trajectory_i_report_clear(aim_ode_report *report, aim_trajectory_moments *moments);

/* Who a run_model is for: the run itself, or a lower order of its
 * truncation error estimate. CVODE giving up after the start of a
 * hierarchy keeps the rows it wrote before, as a stopped run: for a
 * companion the estimate ends there, not the run it qualifies
 * (theory/matrix.md sec. 6); the run itself stops there
 * (AIM_STOP_SOLVER), or hands over. */
typedef enum { AIM_TRAJECTORY_RUN, AIM_TRAJECTORY_COMPANION } aim_trajectory_role;

/* A model's integration in progress (aim_trajectory_i_model_run_begin ..
 * aim_trajectory_i_model_run_end): the model, its states per grid point,
 * and its fast variable's path. */
typedef struct {
    aim_model *m;
    double *y0, *states, *fast;
    aim_ode_model om; /* the run holds its address */
    aim_ode_run *ode;
    aim_ode_report fast_report;
    int fast_failed;
} aim_trajectory_model_run;

int aim_trajectory_i_model_run_begin(aim_trajectory_model_run *r, const aim_config *cfg, int d,
                                     const double *tau, const aim_measured_start *start,
                                     aim_ode_report *report);
int aim_trajectory_i_model_run_row(aim_trajectory_model_run *r, int i, double *scratch,
                                   double *obs);
aim_ode_status aim_trajectory_i_model_run_end(aim_trajectory_model_run *r,
                                              const aim_config *cfg, const double *tau,
                                              double *obs, aim_trajectory_moments *moments,
                                              int estimate, aim_trajectory_role role,
                                              aim_ode_report *report);

/* ---- ode.method = matrix (trajectory_matrix.c) */

aim_wordset *aim_trajectory_i_matrix_words(const aim_config *cfg, int **tracked, int *count);
aim_ode_status aim_trajectory_i_run_matrix(const aim_config *cfg, int d, const double *tau,
                                           double *obs, aim_trajectory_moments *moments,
                                           aim_ode_report *report);

/* ---- the runs a reuse keeps (trajectory_reuse.c) */

/* One hierarchy run's observables before its own truncation cut, and what
 * identifies that run bit for bit: its configuration
 * (aim_trajectory_i_config_key), d, grid and start. key NULL: an empty
 * slot. */
typedef struct {
    char *key;
    size_t key_len;
    int d, count; /* count: start moments kept (0: the exact start) */
    double *tau, *start, *obs;
    aim_ode_report report;
} aim_trajectory_kept_run;

/* An order-M estimate reads orders M - 1 .. M - 3; they, and the order-M
 * run itself, are the next order's: twice that, so that no run the next
 * order reads is dropped before it does. */
enum { AIM_TRAJECTORY_REUSE_KEPT = 8 };

/* A hand-over's matrix limit process (theory/matrix.md sec. 7), the same
 * for every order of one configuration: what identifies it (its
 * configuration with the order left out, d, grid), its words measured up
 * to order words (those of every lower order are their leading columns),
 * and its result. key NULL: none kept. */
typedef struct {
    char *key;
    size_t key_len;
    int d, words;
    double *tau, *obs;
    aim_trajectory_moments moments;
    aim_ode_report report;
} aim_trajectory_kept_matrix;

struct aim_trajectory_reuse {
    int reused, next; /* next: the slot the next run kept takes */
    int highest;      /* the highest order the runs sharing it ask for, 0 unknown */
    aim_trajectory_kept_run runs[AIM_TRAJECTORY_REUSE_KEPT];
    aim_trajectory_kept_matrix matrix;
};

int aim_trajectory_i_config_key(const aim_config *cfg, char **key, size_t *len);
void aim_trajectory_i_kept_matrix_clear(aim_trajectory_kept_matrix *k);
const aim_trajectory_kept_run *aim_trajectory_i_reuse_find(const aim_trajectory_reuse *r,
                                                           const aim_config *cfg, int d,
                                                           const double *tau,
                                                           const aim_measured_start *start);
void aim_trajectory_i_reuse_keep(aim_trajectory_reuse *r, const aim_config *cfg, int d,
                                 const double *tau, const aim_measured_start *start,
                                 const double *obs, const aim_ode_report *report);

/* ---- the truncation error estimate (trajectory_estimate.c) */

void aim_trajectory_i_run_with_estimate(const aim_config *cfg, int d, const double *tau,
                                        const aim_measured_start *start,
                                        aim_trajectory_reuse *reuse, int stop_early,
                                        double *obs, aim_trajectory_moments *moments,
                                        aim_ode_report *report, double *raw,
                                        aim_ode_report *raw_report);

/* ---- the hand-over (trajectory_handover.c) */

void aim_trajectory_i_hand_over(const aim_config *cfg, int d, const double *tau, double *obs,
                                aim_trajectory_moments *moments, aim_trajectory_reuse *reuse,
                                aim_ode_report *report);

#endif
