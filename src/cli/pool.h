/* aim_pool: independent numbered tasks (a sweep's points, the SGD seeds
 * of one d, recovery's finite-d seeds of one d) computed by forked worker
 * processes, and what their result files share: the check of a kept file
 * (version, configuration) and, for seeds, one folder per d whose files
 * a rerun resumes from (aim_pool_run_seeds).
 *
 * The task numbers still to do are written into a pipe before any worker
 * starts; a free worker takes the next one, so that a slow task does not
 * hold the others up. A worker computes its task, keeps the result in a
 * file of its own (written atomically, recording the configuration and
 * the version) and reports the task's number and wall time through a
 * second pipe, which also carries its progress reports. The parent reads
 * the results back from the files, in task order, so that what it
 * assembles does not depend on the number of workers. Workers run with one BLAS thread each (the workers are the
 * parallelism), and one engine thread unless --threads was given
 * (aim_cli_threads) and the parent has not run the engine on threads
 * (aim_gauss_after_fork), end with the parent (killed or not) and release the
 * output locks they inherited. */
#ifndef AIM_POOL_H
#define AIM_POOL_H

#include <stddef.h>
#include <stdint.h>

#include "atomic.h"
#include "config.h"
#include "progress.h"
#include "tsv.h"

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
    /* NULL, or in the parent, as each task is reported finished (in the
     * order they finish): seconds is the task's wall time in its worker. */
    void (*finished)(void *ctx, int task, double seconds);
    void *ctx;
    /* NULL, or what the campaign shows while it runs (progress.h): each
     * task's start, its parts (aim_pool_report) and its end; finished
     * (aim_progress_finish) once the workers are done. When it is live on
     * a terminal, the workers' stderr reaches it through a pipe. */
    aim_progress *progress;
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

/* In a worker, during spec->run: its task has reached `done` of `total`
 * grid points, `work` units (SGD steps) into it; shown by the parent's
 * spec->progress. Nothing outside a worker. A report is one atomic pipe
 * write, like a task's end, so that the workers' records never mix. */
void aim_pool_report(int done, int total, double work);

/* ---- what a task's result file records, to be resumed ---- */

/* The "# config" lines of cfg that decide a result: all but output.dir,
 * output.name and output.checkpoint, so that a moved or renamed output
 * directory, or another checkpoint interval, still resumes (malloc'd;
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

/* The folder that keeps the finished seeds of cfg's KIND run ("sgd",
 * "recovery") at d, DIR/.NAME-KIND-dD.seeds, into buf. Returns 0, or -1
 * after a message "aimdyn CMD: ...". */
int aim_pool_seeds_dir(const char *cmd, const aim_config *cfg, const char *kind, int d,
                       char *buf, size_t n);

/* The file of seed in the folder dir, dir/seed-K.tsv, into buf. Returns
 * 0, or -1 after a message. */
int aim_pool_seed_path(const char *cmd, const char *dir, uint64_t seed, char *buf, size_t n);

/* The seeds of one d (sgd's, recovery's), each kept in its file in dir
 * (aim_pool_seeds_dir) as it finishes: what a command does with them. */
typedef struct {
    const char *cmd;
    int jobs, d, seeds;
    uint64_t first_seed; /* the seed of index 0 (sgd.seed) */
    const char *dir;
    /* Seed index s from its kept file into the command's results: 0; 1
     * when there is none (or one to compute again, said); -1 after a
     * message. */
    int (*read)(void *ctx, int s);
    int (*run)(void *ctx, int s); /* in a worker, as aim_pool_spec's */
    void *ctx;
    /* what the progress shows of one seed: work_per_seed units of
     * work_unit ("steps", reported by the worker with aim_pool_report);
     * work_unit NULL: a seed is the unit of work */
    double work_per_seed;
    const char *work_unit;
    /* NULL, or as aim_pool_spec's: says what an interrupted run kept */
    void (*interrupted)(void *ctx);
} aim_pool_seeds_spec;

/* Reads the kept seeds (said), computes the others on the pool, reads them
 * back, and adds every seed file to set's removals. Under MPI (ranks.h)
 * rank 0 reads the kept seeds, every rank computes its share of the
 * others, and rank 0 alone reads them all back. Returns 0; 1 on a rank
 * other than 0 once its share is written; -1 after a message (the seeds
 * that finished stay kept: rerun to resume). */
int aim_pool_run_seeds(const aim_pool_seeds_spec *spec, aim_atomic_set *set);

/* After the commit of the run's files: removes that folder, then empty
 * (a warning when it cannot). */
void aim_pool_seeds_remove_dir(const char *cmd, const aim_config *cfg, const char *kind,
                               int d);

/* A kept result file at path (a task's, resumed by a rerun of cfg), of
 * kind: 1 when there is none, or one of another aimdyn version (said:
 * "NOUN computed again"); -1 when it is not of kind or was written by a
 * run of another configuration (said: remove the folder dir or choose
 * another --name); 0 with its table in *t (free with aim_table_free). */
int aim_pool_read_kept(const char *cmd, const char *path, const aim_table_kind *kind,
                       const aim_config *cfg, const char *dir, const char *noun,
                       aim_table *t);

#endif
