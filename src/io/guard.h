/* aim_guard: what a signal must clean up. On SIGINT, SIGTERM, SIGHUP or
 * SIGQUIT the process kills its child (gnuplot), removes the files it
 * registered here (temporary and lock files, aim_atomic) and ends by the
 * same signal; a signal that comes inside a critical section waits until
 * the section ends (e.g. a set's renames). At a normal exit the files
 * still registered are removed too. The handler is installed with the
 * first critical section. Call from the main thread (other threads may
 * take the signals). */
#ifndef AIM_GUARD_H
#define AIM_GUARD_H

#include <sys/types.h>

/* A critical section (nestable): signals wait until it ends. The
 * registry below changes only inside one. */
void aim_guard_enter(void);
void aim_guard_leave(void);

/* Inside a critical section: the signal that came during it and waits
 * for its end (0: none), so that a long section (a pool of workers
 * waited for) can end early and tidily. */
int aim_guard_pending(void);

/* In a child just forked inside a critical section: leaves the
 * parent's sections (they are not the child's to end), and ends the
 * child by a signal that came meanwhile. */
void aim_guard_after_fork(void);

/* Registers path (copied) for removal by a signal; its entry, or -1 when
 * out of memory. Only the process that registered a file removes it (a
 * forked worker inherits the registry). */
int aim_guard_add(const char *path);

/* Unregisters an entry of aim_guard_add (-1: nothing). */
void aim_guard_drop(int entry);

/* 1 when this process registered path. */
int aim_guard_holds(const char *path);

/* Starts the program exe (a path) with argv and stdin_fd as its standard
 * input. It is killed when this process ends by a signal above or dies
 * (Linux: PR_SET_PDEATHSIG). Returns its pid, or -1 (errno set). */
pid_t aim_guard_spawn(const char *exe, char *const argv[], int stdin_fd);

/* Waits for a child of aim_guard_spawn. Returns 0 with its wait status,
 * or -1 (errno set). */
int aim_guard_wait(pid_t pid, int *status);

#endif
