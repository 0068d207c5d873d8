/* aim_atomic, output locks and folder checks: the lock file that keeps
 * two runs from writing the same files (aim_atomic_lock), which completes
 * the journals that killed runs left in its folder; and the check of a
 * folder that aimdyn makes inside an output folder
 * (aim_atomic_inner_folder). Calls atomic_journal.c and atomic.c only. */
#define _GNU_SOURCE /* flock, O_NOFOLLOW, dirfd, strndup */

#include "atomic.h"
#include "atomic_internal.h"

#include "guard.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- output locks ---- */

/* A lock file holds the process id of its holder, which writes it once
 * it holds the lock: nothing, or decimal digits and a line break. */
enum { LOCK_TEXT_MAX = 32 };

/* Why the file open on fd is not a lock file of aimdyn (NULL: it is one):
 * a lock taken through it would truncate and overwrite what it holds. */
static const char *not_a_lock(int fd)
{
    struct stat st;
    char text[LOCK_TEXT_MAX + 1];
    if (fstat(fd, &st) != 0)
        return "a file that cannot be looked at";
    if (!S_ISREG(st.st_mode))
        return "not a regular file (a device, a pipe or a socket)";
    if (st.st_nlink > 1)
        return "a file with other names too (a hard link)";
    if (st.st_size > LOCK_TEXT_MAX)
        return "a file of other data (longer than a process id)";
    const ssize_t n = pread(fd, text, sizeof text - 1, 0);
    if (n < 0)
        return "a file that cannot be read";
    for (ssize_t i = 0; i < n; i++)
        if (!(text[i] >= '0' && text[i] <= '9') && !(text[i] == '\n' && i == n - 1))
            return "a file of other data (not a process id)";
    return NULL;
}

/* Takes the lock file at path (created if needed, never through a
 * symbolic link): its descriptor; LOCK_HELD when another process holds it
 * (its pid, if it wrote one, in *holder); LOCK_REFUSED when path is not a
 * lock file of aimdyn (*why says what it is; nothing written to it);
 * LOCK_FAILED on failure (errno set). The lock file is removed when
 * released, so a lock taken on a file that its holder removed meanwhile
 * is taken again on the new file. */
int aim_atomic_take_lock(const char *path, long *holder, const char **why)
{
    for (int tries = 0; tries < 8; tries++) {
        int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd < 0 && errno == EEXIST) {
            fd = open(path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
            if (fd < 0 && errno == ENOENT)
                continue; /* removed by its holder between the two opens */
        }
        if (fd < 0) {
            *why = errno == ELOOP    ? "a symbolic link"
                   : errno == EISDIR ? "a directory"
                   : errno == ENXIO  ? "a socket"
                                     : NULL;
            return *why ? LOCK_REFUSED : LOCK_FAILED;
        }
        if ((*why = not_a_lock(fd))) {
            close(fd);
            return LOCK_REFUSED;
        }
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            const int err = errno;
            char buf[LOCK_TEXT_MAX] = "";
            if (err == EWOULDBLOCK && pread(fd, buf, sizeof buf - 1, 0) > 0)
                *holder = strtol(buf, NULL, 10);
            close(fd);
            errno = err;
            return err == EWOULDBLOCK ? LOCK_HELD : LOCK_FAILED;
        }
        if (aim_atomic_same_file(fd, path))
            return fd;
        close(fd);
    }
    errno = EAGAIN;
    return LOCK_FAILED;
}

void aim_atomic_lock_refused(const char *path, const char *why)
{
    fprintf(stderr, "aimdyn: the lock '%s' is %s; allowed: a lock file that aimdyn made (a "
                    "regular file that holds a process id), or none: nothing was written "
                    "through it; look at it and remove it\n", path, why);
}

/* Completes every journal in dir whose run is gone: own's (its lock is
 * held), and another name's when its lock is free (taken for the
 * moment). So no run writes beside a set that an earlier run left
 * half-renamed, whatever its lock (e.g. a compare killed during its
 * renames, then an sgd at one of its d). Returns 0 or -1 (said). */
static int roll_forward_dir(const char *dir, const char *own)
{
    DIR *d = opendir(dir);
    if (!d) {
        if (errno == ENOENT)
            return 0;
        fprintf(stderr, "aimdyn: cannot read the directory '%s': %s\n", dir, strerror(errno));
        return -1;
    }
    char *names = NULL; /* the journals' file names, NUL-separated */
    size_t len = 0;
    FILE *m = open_memstream(&names, &len);
    struct dirent *de;
    while (m && (de = readdir(d)))
        if (aim_atomic_journal_name(de->d_name))
            fwrite(de->d_name, 1, strlen(de->d_name) + 1, m);
    if (!m || fclose(m)) {
        fprintf(stderr, "aimdyn: out of memory\n");
        closedir(d);
        return -1;
    }
    int rc = 0;
    for (size_t pos = 0; pos < len; pos += strlen(names + pos) + 1) {
        const char *journal = names + pos;
        /* ".NAME.journal": NAME */
        char *name = strndup(journal + 1, strlen(journal) - 9);
        char *lock = name ? aim_atomic_name_file(dir, name, ".lock") : NULL;
        long holder = 0;
        const char *why = NULL;
        const int mine = name && !strcmp(name, own);
        const int fd = !lock || mine ? LOCK_FAILED : aim_atomic_take_lock(lock, &holder, &why);
        if (!lock) {
            fprintf(stderr, "aimdyn: out of memory\n");
            rc = -1;
        } else if (fd == LOCK_REFUSED) {
            aim_atomic_lock_refused(lock, why);
            rc = -1;
        } else if ((mine || fd >= 0) && aim_atomic_roll_forward(dirfd(d), dir, journal) != 0) {
            rc = -1;
        }
        if (fd >= 0) {
            unlink(lock);
            close(fd);
        }
        free(name);
        free(lock);
    }
    closedir(d);
    free(names);
    return rc;
}

/* The descriptors of the locks this process took (kept open: a lock is
 * released when its process ends). */
static int lock_fds[16];
static int nlocks;

void aim_atomic_after_fork(void)
{
    for (int i = 0; i < nlocks; i++)
        close(lock_fds[i]);
    nlocks = 0;
}

int aim_atomic_lock(const char *dir, const char *name, const char *hint)
{
    char *path = aim_atomic_name_file(dir, name, ".lock");
    if (!path) {
        fprintf(stderr, "aimdyn: out of memory\n");
        return -1;
    }
    if (aim_guard_holds(path)) {
        free(path);
        return 0; /* held already */
    }
    long holder = 0;
    const char *why = NULL;
    aim_guard_enter();
    int fd = aim_atomic_take_lock(path, &holder, &why), guard = -1;
    int err = errno;
    if (fd >= 0 && (nlocks == (int)(sizeof lock_fds / sizeof lock_fds[0]) ||
                    (guard = aim_guard_add(path)) < 0)) {
        err = guard < 0 && nlocks < (int)(sizeof lock_fds / sizeof lock_fds[0]) ? ENOMEM
                                                                                 : EMFILE;
        unlink(path);
        close(fd);
        fd = LOCK_FAILED;
    }
    aim_guard_leave();
    int rc = 0;
    if (fd >= 0) {
        /* a lock file of aimdyn (aim_atomic_take_lock): its old process id, if any,
         * is replaced */
        char buf[LOCK_TEXT_MAX];
        const int n = snprintf(buf, sizeof buf, "%ld\n", (long)getpid());
        lock_fds[nlocks++] = fd;
        if (ftruncate(fd, 0) != 0 || pwrite(fd, buf, (size_t)n, 0) != n)
            fprintf(stderr, "aimdyn: warning: cannot write the process id into '%s'\n", path);
        /* a folder whose journals or temporaries are refused is left as
         * it is, its lock too */
        if (roll_forward_dir(dir, name) != 0 || aim_atomic_clean(dir, name) < 0) {
            aim_guard_enter();
            unlink(path);
            close(lock_fds[--nlocks]);
            aim_guard_drop(guard);
            aim_guard_leave();
            rc = -1;
        }
    } else if (fd == LOCK_HELD) {
        char who[64] = "";
        if (holder > 0)
            snprintf(who, sizeof who, " (process %ld)", holder);
        fprintf(stderr, "aimdyn: another aimdyn run%s is writing these files (it holds the lock "
                        "'%s'); wait until it ends, or %s\n", who, path, hint);
        rc = 1;
    } else if (fd == LOCK_REFUSED) {
        aim_atomic_lock_refused(path, why);
        rc = -1;
    } else {
        fprintf(stderr, "aimdyn: cannot lock '%s': %s\n", path, strerror(err ? err : ENOMEM));
        rc = -1;
    }
    free(path);
    return rc;
}

/* ---- folders inside an output folder ---- */

int aim_atomic_inner_folder(const char *dir)
{
    struct stat st;
    if (lstat(dir, &st) != 0) {
        if (errno == ENOENT)
            return 0;
        fprintf(stderr, "aimdyn: cannot look at the folder '%s': %s\n", dir, strerror(errno));
        return -1;
    }
    if (S_ISDIR(st.st_mode))
        return 0;
    fprintf(stderr, "aimdyn: '%s' is %s; allowed: the folder that aimdyn makes there, or "
                    "none: nothing was written through it; look at it and remove it\n", dir,
            S_ISLNK(st.st_mode) ? "a symbolic link" : "not a directory");
    return -1;
}
