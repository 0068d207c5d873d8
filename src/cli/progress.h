/* aim_progress: what a campaign of tasks on the worker pool (the SGD
 * seeds of one d, a sweep's points) or a stage of one long run (an ODE:
 * aim_progress_stage_begin) shows on stderr while it runs, and --quiet.
 *
 * On a terminal (isatty(stderr)) a live block, redrawn in place at most
 * four times a second: a campaign line (tasks done, the share of the work
 * done, the rate, the ETA from the work left at the rate so far) and one
 * line per worker (its task, the grid points it reached, its rate, the
 * task's time). Workers' own messages reach the terminal through the
 * parent (aim_progress_relay), above the block, so that neither garbles
 * the other. Off a terminal, plain campaign lines: at most one every
 * AIM_PROGRESS_PLAIN_SECONDS, and one when the campaign ends.
 *
 * With --quiet (aim_progress_set_quiet) stderr carries only warnings and
 * errors: no progress, no notes (aim_progress_note). Standard output, the
 * command's result, is not affected. Progress goes to stderr only: no
 * result file depends on it. */
#ifndef AIM_PROGRESS_H
#define AIM_PROGRESS_H

#include <stddef.h>

enum { AIM_PROGRESS_PLAIN_SECONDS = 30 };

typedef struct aim_progress aim_progress;

void aim_progress_set_quiet(int quiet);
int aim_progress_quiet(void);

/* A note (what a run did or resumed, not a warning or an error) on
 * stderr, unless --quiet; above the live block when there is one. */
void aim_progress_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A note of a run in progress from the library (aim_trajectory_set_notes:
 * a hierarchy's progress, a hand-over, a replica done), as
 * aim_progress_note: "aimdyn: TEXT". */
void aim_progress_library_note(void *ctx, const char *text);

/* A warning (a result is missing or not to be trusted as it stands) on
 * stderr, --quiet or not; above the live block when there is one. */
void aim_progress_warning(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A campaign of ntasks tasks on `workers` workers, shown as "aimdyn CMD:
 * LABEL: 3/8 UNITs": the task numbers are 0..of-1 (shown 1..of), each task
 * work_per_task units of work_unit ("steps"; NULL: a task is the unit of
 * work and has no parts). NULL when --quiet or out of memory: every
 * function here takes NULL as "show nothing". */
aim_progress *aim_progress_begin(const char *cmd, const char *label, const char *unit, int of,
                                 int ntasks, int workers, double work_per_task,
                                 const char *work_unit);

/* Whether p draws a live block (the pool then relays its workers' stderr
 * and calls aim_progress_tick). */
int aim_progress_live(const aim_progress *p);

/* Worker w (0..workers-1) is at `done` of `total` grid points of task,
 * `work` units into it after `seconds` (done = 0: it has just taken it). */
void aim_progress_update(aim_progress *p, int w, int task, int done, int total, double work,
                         double seconds);

/* Worker w finished task after seconds. */
void aim_progress_finished(aim_progress *p, int w, int task, double seconds);

/* Redraws the live block when it is due (the pool's idle wake-ups). */
void aim_progress_tick(aim_progress *p);

/* n bytes a worker wrote to its stderr: shown above the block, whole
 * lines at a time (the rest is kept for the next call, or for
 * aim_progress_finish). */
void aim_progress_relay(aim_progress *p, const char *text, size_t n);

/* The campaign's end: clears the live block and prints the final
 * campaign line (tasks done, work done, the wall time). */
void aim_progress_finish(aim_progress *p);

void aim_progress_free(aim_progress *p);

/* A stage of one run, reported by the library as it goes
 * (aim_trajectory_set_progress: an ODE's hierarchy on the grid, the
 * matrix limit process's replicas on the engine's threads; ctx: the
 * command's name): a campaign of `tasks` tasks (the replicas; 1) on
 * `threads` threads, each task work_per_task units of work_unit (grid
 * points; tau). It is shown only once it is long, so that a short run's
 * stderr stays quiet: when, after AIM_PROGRESS_JUDGE_SECONDS, the work
 * done so far says that the whole takes AIM_PROGRESS_LONG_SECONDS or
 * more (or AIM_PROGRESS_LONG_SECONDS have passed), a line says so with
 * its ETA; then the campaign's lines as above, without a rate (a stage's
 * work is not steps), a line per thread on a terminal when it has more
 * than one, and a last line with the share of the work done and the wall
 * time. aim_progress_stage_end ends and frees it. */
enum { AIM_PROGRESS_JUDGE_SECONDS = 1, AIM_PROGRESS_LONG_SECONDS = 5 };
void *aim_progress_stage_begin(void *ctx, const char *label, const char *unit, int tasks,
                               int threads, double work_per_task, const char *work_unit);
/* On thread `thread`, task has reached grid point done of total, work
 * units into it (0: it has just begun). */
void aim_progress_stage_update(void *stage, int thread, int task, int done, int total,
                               double work);
void aim_progress_stage_finished(void *stage, int thread, int task);
void aim_progress_stage_end(void *stage);

/* Reads AIMDYN_TEST_PROGRESS (docs/testing.md): "every" makes every stage
 * long from its first report, with a plain line at each report off a
 * terminal, so that a test sees a long run's lines without a long run.
 * Returns 0 when it is unset, empty or "every"; -1 after a message. */
int aim_progress_init(void);

#endif
