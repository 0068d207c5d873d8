/* aim_pool: forked workers fed by a pipe of task numbers (see pool.h).
 * Processes rather than threads: the SGD and ODE code keep per-process
 * state (the signal guard's registry, OpenBLAS's thread count) and a
 * worker that crashes must not take the others with it. */
#include "pool.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <cblas.h>

#include "atomic.h"
#include "cli.h"
#include "gauss.h"
#include "guard.h"
#include "hook.h"
#include "ranks.h"
#include "trajectory.h"
#include "tsv.h"
#include "version.h"

/* What a worker reports through the pipe of finished tasks: a task
 * finished, or how far it is (40 bytes, less than PIPE_BUF: one atomic
 * pipe write, never mixed with another worker's). */
typedef struct {
    int finished;    /* 1: the task is done; 0: a progress report */
    int worker, task;
    int done, total; /* grid points */
    double work;     /* units done (SGD steps) */
    double seconds;  /* the task's wall time so far */
} report;

/* A worker's own: where its reports go, and about which task. */
static struct {
    int fd;      /* -1: not in a worker */
    int reports; /* progress reports wanted (spec->progress) */
    int worker, task;
    double start;
} in_worker = {-1, 0, 0, 0, 0.0};

int aim_pool_default_jobs(void)
{
    /* in an MPI job the ranks are the parallelism, launched one per core
     * and bound (docs/scaling.md): more workers per rank would share cores */
    if (aim_ranks_count() > 1)
        return 1;
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    return cores < 1 ? 1 : cores > AIM_POOL_MAX_JOBS ? AIM_POOL_MAX_JOBS : (int)cores;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Sends a report on the worker's task. Returns 0, or -1 when
 * the parent is gone (the write fails or raises SIGPIPE). */
static int send_report(int finished, int done, int total, double work)
{
    report r;
    memset(&r, 0, sizeof r); /* no stray bytes in the padding */
    r.finished = finished;
    r.worker = in_worker.worker;
    r.task = in_worker.task;
    r.done = done;
    r.total = total;
    r.work = work;
    r.seconds = now() - in_worker.start;
    return write(in_worker.fd, &r, sizeof r) == (ssize_t)sizeof r ? 0 : -1;
}

void aim_pool_report(int done, int total, double work)
{
    if (in_worker.fd >= 0 && in_worker.reports)
        send_report(0, done, total, work);
}

/* A worker (number w): takes task numbers from the queue until it is
 * empty, computes each and reports it. Leaves with _exit: the parent's
 * stdio buffers and atexit work are not its own. */
static _Noreturn void worker(const aim_pool_spec *spec, int w, int queue, int results,
                             pid_t parent)
{
    aim_atomic_after_fork(); /* a rerun need not wait for a killed run's workers */
#ifdef __linux__
    /* a worker ends with its parent (killed) rather than computing on */
    prctl(PR_SET_PDEATHSIG, SIGTERM);
#endif
    /* one BLAS thread per worker: the workers are the parallelism (the
     * environment variable for any library the worker may load later) */
    setenv("OPENBLAS_NUM_THREADS", "1", 1);
#ifdef AIM_HAVE_OPENBLAS_THREADS
    openblas_set_num_threads(1);
#endif
    /* and one engine thread, unless --threads asked for more and the
     * parent has not run the engine on threads (aim_gauss_after_fork) */
    if (!aim_cli_threads_explicit())
        aim_gauss_set_threads(1);
    aim_gauss_after_fork();
    /* the pool shows the campaign: a task's own run shows no progress */
    aim_trajectory_set_progress(NULL, NULL);
    in_worker.fd = results;
    in_worker.reports = spec->progress != NULL;
    in_worker.worker = w;
    aim_hook_event("worker-start", "worker", w + 1, NULL, 0);
    for (;;) {
        if (getppid() != parent) /* the parent is gone (elsewhere than Linux too) */
            _exit(AIM_EXIT_RUNTIME);
        int task;
        ssize_t n = read(queue, &task, sizeof task);
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0)
            _exit(0);
        if (n != (ssize_t)sizeof task || task < 0 || task >= AIM_POOL_MAX_TASKS) {
            fprintf(stderr, "aimdyn %s: worker %ld: cannot read the queue of tasks\n",
                    spec->cmd, (long)getpid());
            _exit(AIM_EXIT_RUNTIME);
        }
        in_worker.task = task;
        in_worker.start = now();
        aim_pool_report(0, 0, 0.0); /* shown as taken at once */
        if (spec->run(spec->ctx, task))
            _exit(AIM_EXIT_RUNTIME);
        /* once the parent is gone (killed) this write fails or raises
         * SIGPIPE, so a killed run does not compute on in the background */
        if (send_report(1, 0, 0, 0.0))
            _exit(AIM_EXIT_RUNTIME);
    }
}

/* Says how a worker ended unless it ended well; returns 0 when it did. */
static int report_worker(const char *cmd, pid_t pid, int status)
{
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    if (WIFEXITED(status))
        fprintf(stderr, "aimdyn %s: worker %ld failed (exit status %d)\n", cmd, (long)pid,
                WEXITSTATUS(status));
    else
        fprintf(stderr, "aimdyn %s: worker %ld killed by signal %d\n", cmd, (long)pid,
                WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    return -1;
}

/* The queue of task numbers, the pipe of reports and, when the progress
 * is live on a terminal, the pipe of the workers' stderr (else {-1, -1}). */
static int open_pipes(const aim_pool_spec *spec, int queue[2], int results[2], int relay[2])
{
    relay[0] = relay[1] = -1;
    if (pipe(queue) == 0) {
        if (pipe(results) == 0) {
            if (!aim_progress_live(spec->progress) || pipe(relay) == 0)
                return 0;
            close(results[0]);
            close(results[1]);
        }
        close(queue[0]);
        close(queue[1]);
    }
    fprintf(stderr, "aimdyn %s: cannot create a pipe: %s\n", spec->cmd, strerror(errno));
    return -1;
}

/* In the parent: the workers' reports, and their stderr into the live
 * progress, until every worker has ended (both pipes at their end). */
static int gather(const aim_pool_spec *spec, int results, int relay, int *interrupted)
{
    aim_progress *p = spec->progress;
    struct pollfd fds[2] = {{results, POLLIN, 0}, {relay, POLLIN, 0}};
    /* a live block is redrawn while no report comes (its times tick);
     * poll is not restarted after a signal handler (SA_RESTART or not), so
     * a signal ends the wait at once, and the timeout covers one that
     * comes just before it */
    const int timeout_ms = aim_progress_live(p) ? 250 : 500;
    *interrupted = 0;
    while (fds[0].fd >= 0 || fds[1].fd >= 0) {
        if ((*interrupted = aim_guard_pending() != 0))
            return 0;
        const int ready = poll(fds, 2, timeout_ms);
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready < 0) {
            fprintf(stderr, "aimdyn %s: cannot wait for the workers' reports: %s\n", spec->cmd,
                    strerror(errno));
            return -1;
        }
        aim_progress_tick(p);
        if (fds[1].fd >= 0 && fds[1].revents) {
            char text[1024];
            const ssize_t n = read(relay, text, sizeof text);
            if (n > 0)
                aim_progress_relay(p, text, (size_t)n);
            else if (n == 0 || errno != EINTR)
                fds[1].fd = -1;
        }
        if (fds[0].fd >= 0 && fds[0].revents) {
            report r;
            const ssize_t n = read(results, &r, sizeof r);
            if (n < 0 && errno == EINTR)
                continue;
            if (n != (ssize_t)sizeof r) {
                fds[0].fd = -1; /* every worker has ended */
                aim_hook_event("pool-reports-ended", NULL, 0, NULL, 0);
            } else if (r.finished) {
                aim_progress_finished(p, r.worker, r.task, r.seconds);
                if (spec->finished)
                    spec->finished(spec->ctx, r.task, r.seconds);
            } else {
                aim_progress_update(p, r.worker, r.task, r.done, r.total, r.work, r.seconds);
            }
        }
    }
    return 0;
}

int aim_pool_run(const aim_pool_spec *spec)
{
    if (spec->ntasks <= 0)
        return 0;
    if (spec->ntasks > AIM_POOL_MAX_TASKS) {
        fprintf(stderr, "aimdyn %s: %d tasks; at most %d fit the queue\n", spec->cmd,
                spec->ntasks, AIM_POOL_MAX_TASKS);
        return -1;
    }
    const int jobs = spec->jobs < spec->ntasks ? spec->jobs : spec->ntasks;
    int queue[2], results[2], relay[2];
    if (open_pipes(spec, queue, results, relay))
        return -1;
    /* the whole queue at once, before any worker starts: it fits in the
     * pipe (AIM_POOL_MAX_TASKS), so the write does not wait for a reader;
     * workers see its end once it is empty */
    const size_t bytes = sizeof(int) * (size_t)spec->ntasks;
    const ssize_t put = write(queue[1], spec->tasks, bytes);
    close(queue[1]);
    pid_t pids[AIM_POOL_MAX_JOBS];
    int started = 0, rc = 0;
    /* A signal waits while the workers are started, stopped and waited
     * for: one that came between two forks ended this process at once,
     * before its critical section, and left the workers it had started
     * to end by themselves, after it (their files still there when its
     * exit status was known). Each worker leaves the section as it
     * starts. */
    aim_guard_enter();
    if (put != (ssize_t)bytes) {
        fprintf(stderr, "aimdyn %s: cannot queue the tasks: %s\n", spec->cmd, strerror(errno));
        rc = -1;
    } else {
        fflush(stdout); /* not written twice by the children */
        fflush(stderr);
        const pid_t parent = getpid();
        for (; started < jobs; started++) {
            pid_t pid = fork();
            if (pid == 0) {
                aim_guard_after_fork();
                close(results[0]);
                if (relay[1] >= 0) {
                    /* its messages above the live block, not through it */
                    dup2(relay[1], STDERR_FILENO);
                    close(relay[0]);
                    close(relay[1]);
                }
                worker(spec, started, queue[0], results[1], parent);
            }
            if (pid < 0) {
                fprintf(stderr, "aimdyn %s: cannot start worker %d of %d: %s\n", spec->cmd,
                        started + 1, jobs, strerror(errno));
                rc = -1;
                break;
            }
            pids[started] = pid;
            aim_hook_event("worker-forked", "worker", started + 1, NULL, 0);
        }
    }
    close(queue[0]);
    close(results[1]);
    if (relay[1] >= 0)
        close(relay[1]);
    int interrupted = 0;
    if (gather(spec, results[0], relay[0], &interrupted))
        rc = -1;
    close(results[0]);
    if (relay[0] >= 0)
        close(relay[0]);
    for (int w = 0; interrupted && w < started; w++)
        kill(pids[w], SIGTERM);
    int status[AIM_POOL_MAX_JOBS];
    for (int w = 0; w < started; w++)
        while (waitpid(pids[w], &status[w], 0) < 0)
            if (errno != EINTR) {
                status[w] = -1;
                break;
            }
    /* A signal sent to the whole process group (Ctrl-C) can close the
     * workers' pipes before gather sees it: the last read meets the end
     * of the pipe and the loop ends without looking again. Once a worker
     * it killed has been waited for, the kernel has queued the same
     * signal to this process too (a worker's exit waits for the kill to
     * have reached the whole group), and its handler has run. */
    if (!interrupted)
        interrupted = aim_guard_pending() != 0;
    for (int w = 0; !interrupted && w < started; w++)
        if (report_worker(spec->cmd, pids[w], status[w]))
            rc = -1;
    aim_progress_finish(spec->progress);
    if (interrupted && spec->interrupted)
        spec->interrupted(spec->ctx);
    aim_guard_leave(); /* interrupted: the process ends here, by the signal */
    return rc;
}

/* ---- result files ---- */

/* output.dir and output.name say where the files go, output.checkpoint
 * how often a seed's state is kept, output.save_state which states are
 * saved beside them, output.fold how the seeds are averaged (a seed's
 * file is unfolded), not what is in them; every other key
 * may decide a result (output.recovery_threshold decides tau_wr). */
static int result_config_line(const char *line)
{
    return !strncmp(line, "# config ", 9) && strncmp(line + 9, "output.dir ", 11) != 0 &&
           strncmp(line + 9, "output.name ", 12) != 0 &&
           strncmp(line + 9, "output.checkpoint ", 18) != 0 &&
           strncmp(line + 9, "output.save_state ", 18) != 0 &&
           strncmp(line + 9, "output.fold ", 12) != 0;
}

char *aim_pool_config_lines(const aim_config *cfg)
{
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    if (!m)
        return NULL;
    aim_config_write(cfg, m, "# config ");
    if (fclose(m)) {
        free(text);
        return NULL;
    }
    char *w = text;
    for (char *line = text; *line;) {
        char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) + 1 : strlen(line);
        if (result_config_line(line)) {
            memmove(w, line, n);
            w += n;
        }
        line += n;
    }
    *w = '\0';
    return text;
}

/* both texts have one line per key in the same order */
void aim_pool_first_difference(const char *a, const char *b, char *buf, size_t n)
{
    buf[0] = '\0';
    while (*a && *b) {
        size_t la = strcspn(a, "\n"), lb = strcspn(b, "\n");
        if (la != lb || strncmp(a, b, la)) {
            snprintf(buf, n, "there %.*s, here %.*s", (int)la - 9, a + 9, (int)lb - 9, b + 9);
            return;
        }
        a += la + (a[la] == '\n');
        b += lb + (b[lb] == '\n');
    }
}

int aim_pool_check_version(const char *cmd, const char *path, const char *what,
                           char *version, size_t n)
{
    char err[1400];
    const int rc = aim_tsv_file_version(path, version, n, err, sizeof err);
    if (rc < 0)
        fprintf(stderr, "aimdyn %s: %s\n", cmd, err);
    else if (rc > 0)
        fprintf(stderr, "aimdyn %s: %s:1: no '# aimdyn VERSION' line; allowed: %s\n", cmd,
                path, what);
    else
        return strcmp(version, AIM_VERSION) ? 1 : 0;
    return -1;
}

int aim_pool_read_kept(const char *cmd, const char *path, const aim_table_kind *kind,
                       const aim_config *cfg, const char *dir, const char *noun,
                       aim_table *t)
{
    char version[128];
    if (access(path, F_OK) != 0)
        return 1;
    const int v = aim_pool_check_version(cmd, path, kind->what, version, sizeof version);
    if (v > 0)
        fprintf(stderr, "%s: %s was written by aimdyn %s, this is aimdyn %s: %s computed "
                        "again\n", cmd, path, version, AIM_VERSION, noun);
    if (v)
        return v;
    if (aim_table_read(path, kind, t))
        return -1;
    aim_config recorded;
    aim_config_error err;
    char *there = NULL, *here = aim_pool_config_lines(cfg);
    int rc = -1;
    if (!here)
        fprintf(stderr, "aimdyn %s: out of memory\n", cmd);
    else if (aim_table_config(t, &recorded, &err))
        fprintf(stderr, "aimdyn %s: %s: %s\n", cmd, path, err.message);
    else if (!(there = aim_pool_config_lines(&recorded)))
        fprintf(stderr, "aimdyn %s: out of memory\n", cmd);
    else if (strcmp(there, here)) {
        char diff[2048];
        aim_pool_first_difference(there, here, diff, sizeof diff);
        fprintf(stderr, "aimdyn %s: %s was written by a run of another configuration (%s); "
                        "remove the folder %s or choose another --name\n", cmd, path, diff,
                dir);
    } else {
        rc = 0;
    }
    free(here);
    free(there);
    if (rc)
        aim_table_free(t);
    return rc;
}

int aim_pool_seeds_dir(const char *cmd, const aim_config *cfg, const char *kind, int d,
                       char *buf, size_t n)
{
    aim_config hidden = *cfg;
    char suffix[64];
    snprintf(hidden.name, sizeof hidden.name, ".%.*s", (int)sizeof hidden.name - 2, cfg->name);
    snprintf(suffix, sizeof suffix, "%s-d%d", kind, d);
    if (aim_tsv_path(buf, n, &hidden, suffix, "seeds")) {
        fprintf(stderr, "aimdyn %s: output path too long for the seed folder of d = %d\n", cmd,
                d);
        return -1;
    }
    return 0;
}

int aim_pool_seed_path(const char *cmd, const char *dir, uint64_t seed, char *buf, size_t n)
{
    const int len = snprintf(buf, n, "%s/seed-%llu.tsv", dir, (unsigned long long)seed);
    if (len < 0 || (size_t)len >= n) {
        fprintf(stderr, "aimdyn %s: output path too long: '%s/seed-...'\n", cmd, dir);
        return -1;
    }
    return 0;
}

void aim_pool_seeds_remove_dir(const char *cmd, const aim_config *cfg, const char *kind, int d)
{
    char dir[1100];
    if (aim_pool_seeds_dir(cmd, cfg, kind, d, dir, sizeof dir) == 0 && rmdir(dir) != 0 &&
        errno != ENOENT)
        fprintf(stderr, "aimdyn %s: warning: cannot remove the seed folder %s: %s\n", cmd, dir,
                strerror(errno));
}

int aim_pool_run_seeds(const aim_pool_seeds_spec *spec, aim_atomic_set *set)
{
    const int rank = aim_ranks_rank(), ranks = aim_ranks_count();
    int *pending = malloc(sizeof(int) * (size_t)spec->seeds);
    int *share = malloc(sizeof(int) * (size_t)spec->seeds);
    if (!pending || !share) {
        fprintf(stderr, "aimdyn %s: out of memory\n", spec->cmd);
        free(pending);
        free(share);
        return -1;
    }
    int npending = 0, nshare = 0, rc = 0;
    /* rank 0 alone looks at the seed folder (the other ranks of an MPI
     * job, ranks.h, write there only once it has) */
    if (rank == 0) {
        /* the temporary files of a killed run's workers */
        if (access(spec->dir, F_OK) == 0 && aim_atomic_clean(spec->dir, "seed") < 0)
            rc = -1;
        for (int s = 0; s < spec->seeds && rc == 0; s++) {
            const int got = spec->read(spec->ctx, s);
            if (got < 0)
                rc = -1;
            else if (got > 0)
                pending[npending++] = s;
        }
    }
    rc = aim_ranks_share(rc, pending, &npending, spec->seeds);
    if (rc == 0 && rank == 0 && npending < spec->seeds)
        aim_progress_note("%s d=%d: %d of %d seeds resumed from %s (finished by an earlier "
                          "run)\n", spec->cmd, spec->d, spec->seeds - npending, spec->seeds,
                          spec->dir);
    /* this rank's seeds: every ranks-th of those to do, from its rank on */
    for (int k = rank; rc == 0 && k < npending; k += ranks)
        share[nshare++] = pending[k];
    if (rc == 0 && nshare > 0) {
        char label[32];
        snprintf(label, sizeof label, "d = %d", spec->d);
        aim_progress *progress =
            aim_progress_begin(spec->cmd, label, "seed", spec->seeds, nshare,
                               spec->jobs < nshare ? spec->jobs : nshare, spec->work_per_seed,
                               spec->work_unit);
        const aim_pool_spec pool = {spec->cmd, spec->jobs, share,    nshare,
                                    spec->run, NULL,       spec->ctx, progress,
                                    spec->interrupted};
        aim_pool_run(&pool); /* the seeds left undone are counted below */
        aim_progress_free(progress);
    }
    if (rc == 0)
        aim_ranks_barrier(); /* every rank's seed files are written */
    if (rc == 0 && rank != 0) {
        free(pending);
        free(share);
        return 1; /* rank 0 reads them */
    }
    int missing = 0;
    for (int k = 0; k < npending && rc == 0; k++) {
        const int got = spec->read(spec->ctx, pending[k]);
        missing += got > 0;
        rc = got < 0 ? -1 : 0;
    }
    if (rc == 0 && missing) {
        fprintf(stderr, "aimdyn %s: %d of %d seeds at d = %d have no result (see above); "
                        "rerun the same command to compute them (the finished seeds are "
                        "kept in %s)\n", spec->cmd, missing, spec->seeds, spec->d, spec->dir);
        rc = -1;
    }
    char path[1200];
    for (int s = 0; s < spec->seeds && rc == 0; s++)
        rc = aim_pool_seed_path(spec->cmd, spec->dir, spec->first_seed + (uint64_t)s, path,
                                sizeof path) == 0 && aim_atomic_set_remove(set, path) == 0
                 ? 0
                 : -1;
    free(pending);
    free(share);
    return rc;
}
