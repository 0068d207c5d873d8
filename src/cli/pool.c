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
#include "guard.h"
#include "tsv.h"
#include "version.h"

/* What a worker reports through the pipe of finished tasks: the task's
 * number and its wall time (16 bytes: one atomic pipe write). */
typedef struct {
    int task;
    double seconds;
} finished_task;

int aim_pool_default_jobs(void)
{
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    return cores < 1 ? 1 : cores > AIM_POOL_MAX_JOBS ? AIM_POOL_MAX_JOBS : (int)cores;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A worker: takes task numbers from the queue until it is empty,
 * computes each and reports it. Leaves with _exit: the parent's stdio
 * buffers and atexit work are not its own. */
static _Noreturn void worker(const aim_pool_spec *spec, int queue, int results, pid_t parent)
{
    aim_atomic_after_fork(); /* a rerun need not wait for a killed run's workers */
#ifdef __linux__
    /* a worker ends with its parent (killed) rather than computing on */
    prctl(PR_SET_PDEATHSIG, SIGTERM);
#endif
    /* one BLAS thread per worker: the workers are the parallelism (the
     * environment variable for any library the worker may load later) */
    setenv("OPENBLAS_NUM_THREADS", "1", 1);
    openblas_set_num_threads(1);
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
        const double t0 = now();
        if (spec->run(spec->ctx, task))
            _exit(AIM_EXIT_RUNTIME);
        /* once the parent is gone (killed) this write fails or raises
         * SIGPIPE, so a killed run does not compute on in the background */
        finished_task done;
        memset(&done, 0, sizeof done); /* no stray bytes in the padding */
        done.task = task;
        done.seconds = now() - t0;
        if (write(results, &done, sizeof done) != (ssize_t)sizeof done)
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

/* The queue of task numbers and the pipe of finished ones. */
static int open_pipes(const char *cmd, int queue[2], int results[2])
{
    if (pipe(queue) == 0) {
        if (pipe(results) == 0)
            return 0;
        close(queue[0]);
        close(queue[1]);
    }
    fprintf(stderr, "aimdyn %s: cannot create a pipe: %s\n", cmd, strerror(errno));
    return -1;
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
    int queue[2], results[2];
    if (open_pipes(spec->cmd, queue, results))
        return -1;
    /* the whole queue at once, before any worker starts: it fits in the
     * pipe (AIM_POOL_MAX_TASKS), so the write does not wait for a reader;
     * workers see its end once it is empty */
    const size_t bytes = sizeof(int) * (size_t)spec->ntasks;
    const ssize_t put = write(queue[1], spec->tasks, bytes);
    close(queue[1]);
    pid_t pids[AIM_POOL_MAX_JOBS];
    int started = 0, rc = 0;
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
                close(results[0]);
                worker(spec, queue[0], results[1], parent);
            }
            if (pid < 0) {
                fprintf(stderr, "aimdyn %s: cannot start worker %d of %d: %s\n", spec->cmd,
                        started + 1, jobs, strerror(errno));
                rc = -1;
                break;
            }
            pids[started] = pid;
        }
    }
    close(queue[0]);
    close(results[1]);
    /* a signal waits while the workers are stopped and waited for */
    aim_guard_enter();
    int interrupted = 0;
    for (;;) {
        /* poll is not restarted after a signal handler (SA_RESTART or
         * not): a signal ends the wait at once; the timeout covers one
         * that comes just before it */
        struct pollfd ready = {results[0], POLLIN, 0};
        if ((interrupted = aim_guard_pending() != 0))
            break;
        const int got = poll(&ready, 1, 500);
        if (got < 0 && errno != EINTR)
            break;
        if (got <= 0)
            continue;
        finished_task done;
        ssize_t n = read(results[0], &done, sizeof done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n != (ssize_t)sizeof done)
            break; /* every worker has ended */
        spec->finished(spec->ctx, done.task, done.seconds);
    }
    close(results[0]);
    for (int w = 0; interrupted && w < started; w++)
        kill(pids[w], SIGTERM);
    for (int w = 0; w < started; w++) {
        int status;
        while (waitpid(pids[w], &status, 0) < 0)
            if (errno != EINTR) {
                status = -1;
                break;
            }
        if (!interrupted && report_worker(spec->cmd, pids[w], status))
            rc = -1;
    }
    if (interrupted && spec->interrupted)
        spec->interrupted(spec->ctx);
    aim_guard_leave(); /* interrupted: the process ends here, by the signal */
    return rc;
}

/* ---- result files ---- */

static int result_config_line(const char *line)
{
    return !strncmp(line, "# config ", 9) && strncmp(line + 9, "output.", 7) != 0;
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
