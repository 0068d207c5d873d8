/* aim_pool: independent numbered tasks (a sweep's points, the SGD seeds
 * of one d) computed by forked worker processes, and what their result
 * files share.
 *
 * The task numbers still to do are written into a pipe before any worker
 * starts; a free worker takes the next one, so that a slow task does not
 * hold the others up. A worker computes its task, keeps the result in a
 * file of its own (written atomically, recording the configuration and
 * the version) and reports the task's number and wall time through a
 * second pipe. The parent reads the results back from the files, in task
 * order, so that what it assembles does not depend on the number of
 * workers. Workers run with one BLAS thread each (the workers are the
 * parallelism), end with the parent (killed or not) and release the
 * output locks they inherited. */
#ifndef AIM_POOL_H
#define AIM_POOL_H

#include "config.h"

enum {
    AIM_POOL_MAX_JOBS = 64,
    /* the queue of task numbers (4 bytes each) is written whole before any
     * worker reads it, so it must fit in the pipe's capacity, or the write
     * never returns: 4000 bytes fit in one page, the least a Linux pipe
     * holds (default 64 KiB) */
    AIM_POOL_MAX_TASKS = 1000
};

typedef struct {
    const char *cmd;  /* for messages: "aimdyn CMD: ..." */
    int jobs;         /* worker processes, 1..AIM_POOL_MAX_JOBS (at most ntasks run) */
    const int *tasks; /* the task numbers to compute, 0..AIM_POOL_MAX_TASKS-1 */
    int ntasks;
    /* In a worker: computes task and writes its result file. Returns 0, or
     * -1 after a message (the worker then ends, its task undone). */
    int (*run)(void *ctx, int task);
    /* In the parent, as each task is reported finished (in the order they
     * finish): seconds is the task's wall time in its worker. */
    void (*finished)(void *ctx, int task, double seconds);
    void *ctx;
    /* Optional, in the parent after SIGINT, SIGTERM, SIGHUP or SIGQUIT
     * has stopped the workers (see aim_pool_run): says what was kept. */
    void (*interrupted)(void *ctx);
} aim_pool_spec;

/* The default number of workers: the online cores, within
 * 1..AIM_POOL_MAX_JOBS. */
int aim_pool_default_jobs(void);

/* Runs spec's tasks on min(jobs, ntasks) workers and waits for them all.
 * Returns 0 when every worker ended well, -1 when one failed, was killed
 * or could not be started (said; its tasks, or some, stay undone).
 * SIGINT, SIGTERM, SIGHUP or SIGQUIT meanwhile (to the parent or to the
 * process group) stop the run cleanly: the workers are sent SIGTERM
 * (each removes its temporary files and ends: a result or checkpoint
 * file is either whole or not there) and waited for, spec->interrupted
 * is called, and the process then ends by the signal (aim_guard: its
 * temporary and lock files removed), so a shell sees 128 + the signal. */
int aim_pool_run(const aim_pool_spec *spec);

/* ---- what a task's result file records, to be resumed ---- */

/* The "# config" lines of cfg that decide a result: all but output.*,
 * so that a moved or renamed output directory still resumes (malloc'd;
 * NULL when out of memory). */
char *aim_pool_config_lines(const aim_config *cfg);

/* The first line where two aim_pool_config_lines texts differ, as
 * "there KEY = A, here KEY = B", into buf (empty when none). */
void aim_pool_first_difference(const char *there, const char *here, char *buf, size_t n);

/* The version in a result file's first line "# aimdyn VERSION" into
 * version[0 .. n-1], what names what the file should be. Returns 0 when it
 * is this aimdyn's version, 1 when another's, -1 when the line is not
 * there (said, "aimdyn CMD: ..."). */
int aim_pool_check_version(const char *cmd, const char *path, const char *what,
                           char *version, size_t n);

#endif
