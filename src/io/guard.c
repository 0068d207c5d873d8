/* aim_guard: the files and the child that a signal must clean up.
 *
 * The registry of files (and the child) changes only inside a critical
 * section of the main thread. A signal handler (in any thread: OpenBLAS
 * has its own) cleans up only after it has moved the state from IDLE to
 * DYING, so it never sees the registry half-changed; a signal that comes
 * during a critical section is left pending and handled when it ends.
 * Written here: it has to know this program's files and child. */
#define _POSIX_C_SOURCE 200809L

#include "guard.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "the signal handler needs lock-free atomics");

enum { IDLE, BUSY, DYING };
static atomic_int state = IDLE;
static atomic_int pending; /* a signal that came during a critical section */
static int depth;          /* nesting of critical sections (main thread) */

typedef struct {
    char *path;  /* NULL: a free entry */
    pid_t owner; /* its creator: a forked sweep worker inherits the parent's */
} entry;

static entry *files;
static int nfiles;
static pid_t child_pid, child_owner;

static const int guarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
#define NGUARDED ((int)(sizeof guarded / sizeof guarded[0]))

/* Kills the child, removes this process's files and ends the process by
 * sig. Async-signal-safe. */
static _Noreturn void remove_and_die(int sig)
{
    const pid_t self = getpid();
    if (child_pid > 0 && child_owner == self) {
        kill(child_pid, SIGKILL);
        while (waitpid(child_pid, NULL, 0) < 0 && errno == EINTR)
            ;
    }
    for (int i = 0; i < nfiles; i++)
        if (files[i].path && files[i].owner == self)
            unlink(files[i].path);
    static struct sigaction dfl; /* zero: SIG_DFL, no flags */
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    sigset_t only;
    sigemptyset(&only);
    sigaddset(&only, sig);
    sigprocmask(SIG_UNBLOCK, &only, NULL);
    raise(sig);
    _exit(128 + sig);
}

static void on_signal(int sig)
{
    const int saved = errno;
    for (;;) {
        int expected = IDLE;
        if (atomic_compare_exchange_strong(&state, &expected, DYING))
            remove_and_die(sig);
        if (expected == DYING) /* another thread is ending the process */
            break;
        atomic_store(&pending, sig);
        if (atomic_load(&state) == BUSY) /* handled when the section ends */
            break;
    }
    errno = saved;
}

static void remove_at_exit(void)
{
    const pid_t self = getpid();
    for (int i = 0; i < nfiles; i++)
        if (files[i].path && files[i].owner == self)
            unlink(files[i].path);
}

/* Installs the handler once (a signal ignored on entry, e.g. SIGHUP
 * under nohup, stays ignored). */
static void install(void)
{
    static int installed;
    if (installed)
        return;
    installed = 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < NGUARDED; i++)
        sigaddset(&sa.sa_mask, guarded[i]);
    for (int i = 0; i < NGUARDED; i++) {
        struct sigaction old;
        if (sigaction(guarded[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
            continue;
        sigaction(guarded[i], &sa, NULL);
    }
    atexit(remove_at_exit);
}

void aim_guard_enter(void)
{
    if (depth++ > 0)
        return;
    for (;;) {
        int expected = IDLE;
        if (atomic_compare_exchange_strong(&state, &expected, BUSY))
            break;
        pause(); /* DYING: another thread is ending the process */
    }
    install();
}

void aim_guard_leave(void)
{
    if (--depth > 0)
        return;
    atomic_store(&state, IDLE);
    const int sig = atomic_exchange(&pending, 0);
    if (sig) {
        int expected = IDLE;
        if (atomic_compare_exchange_strong(&state, &expected, DYING))
            remove_and_die(sig);
        for (;;)
            pause();
    }
}

int aim_guard_pending(void) { return atomic_load(&pending); }

void aim_guard_after_fork(void)
{
    if (depth == 0)
        return;
    depth = 1;
    aim_guard_leave();
}

int aim_guard_add(const char *path)
{
    int i = 0;
    while (i < nfiles && files[i].path)
        i++;
    if (i == nfiles) {
        entry *grown = realloc(files, sizeof *files * (size_t)(nfiles + 16));
        if (!grown)
            return -1;
        files = grown;
        memset(files + nfiles, 0, sizeof *files * 16);
        nfiles += 16;
    }
    if (!(files[i].path = strdup(path)))
        return -1;
    files[i].owner = getpid();
    return i;
}

void aim_guard_drop(int i)
{
    if (i < 0)
        return;
    free(files[i].path);
    files[i].path = NULL;
}

int aim_guard_holds(const char *path)
{
    const pid_t self = getpid();
    for (int i = 0; i < nfiles; i++)
        if (files[i].path && files[i].owner == self && !strcmp(files[i].path, path))
            return 1;
    return 0;
}

pid_t aim_guard_spawn(const char *exe, char *const argv[], int stdin_fd)
{
    aim_guard_enter();
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid == 0) {
        /* async-signal-safe calls only until exec */
#ifdef __linux__
        prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
        if (getppid() != parent)
            _exit(126);
        static struct sigaction dfl;
        sigemptyset(&dfl.sa_mask);
        for (int i = 0; i < NGUARDED; i++) {
            struct sigaction old;
            if (sigaction(guarded[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
                sigaction(guarded[i], &dfl, NULL);
        }
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        if (stdin_fd != STDIN_FILENO && dup2(stdin_fd, STDIN_FILENO) < 0)
            _exit(126);
        execv(exe, argv);
        _exit(127);
    }
    const int err = errno;
    if (pid > 0) {
        child_pid = pid;
        child_owner = parent;
    }
    aim_guard_leave();
    errno = err;
    return pid;
}

int aim_guard_wait(pid_t pid, int *status)
{
    int rc;
    while ((rc = waitpid(pid, status, 0) < 0 ? -1 : 0) != 0 && errno == EINTR)
        ;
    const int err = errno;
    aim_guard_enter();
    if (child_pid == pid)
        child_pid = 0;
    aim_guard_leave();
    errno = err;
    return rc;
}
