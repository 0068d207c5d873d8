/* aim_atomic, single files: a result file written to a temporary name
 * beside its final one and renamed into place whole (aim_atomic_create,
 * aim_atomic_replace), and the path and sync helpers that the other parts
 * of aim_atomic share (atomic_internal.h). The lowest part: it calls none
 * of the others (atomic_journal.c, atomic_lock.c, atomic_set.c).
 *
 * Written here rather than taken from a library: no Debian C library
 * offers atomic sets of files with a journal. */
#define _GNU_SOURCE /* flock, strndup */

#include "atomic.h"
#include "atomic_internal.h"

#include "guard.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- paths ---- */

/* "dir/.base" + tail for path "dir/base" (malloc'd). */
static char *hidden_name(const char *path, const char *tail)
{
    const char *slash = strrchr(path, '/');
    const size_t dirlen = slash ? (size_t)(slash - path) + 1 : 0;
    const size_t n = strlen(path) + strlen(tail) + 2;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%.*s.%s%s", (int)dirlen, path, path + dirlen, tail);
    return s;
}

/* dir + "/." + name + tail (malloc'd) */
char *aim_atomic_name_file(const char *dir, const char *name, const char *tail)
{
    const size_t n = strlen(dir) + strlen(name) + strlen(tail) + 3;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%s/.%s%s", dir, name, tail);
    return s;
}

/* The directory part of path (malloc'd): "." when there is none. */
char *aim_atomic_dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return strdup(".");
    if (slash == path)
        return strdup("/");
    return strndup(path, (size_t)(slash - path));
}

int aim_atomic_sync_dir(const char *path)
{
    char *dir = aim_atomic_dir_of(path);
    if (!dir) {
        errno = ENOMEM;
        return -1;
    }
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    free(dir);
    if (fd < 0)
        return -1;
    /* some file systems cannot sync a directory: nothing to wait for */
    int rc = fsync(fd) != 0 && errno != EINVAL ? -1 : 0;
    const int err = errno;
    close(fd);
    errno = err;
    return rc;
}

/* fd is open on the file that path names now (a cleaner may have removed
 * a temporary between its creation and its lock). */
int aim_atomic_same_file(int fd, const char *path)
{
    struct stat a, b;
    return fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev &&
           a.st_ino == b.st_ino;
}


/* Syncs the directory open on fd. Returns 0, or -1 (errno set). */
int aim_atomic_sync_fd(int fd)
{
    /* some file systems cannot sync a directory: nothing to wait for */
    return fsync(fd) != 0 && errno != EINVAL ? -1 : 0;
}

int aim_atomic_write_all(int fd, const char *buf, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, buf, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        buf += w;
        n -= (size_t)w;
    }
    return 0;
}

/* ---- single files ---- */


void aim_atomic_file_free(aim_atomic_file *f, int remove_temp)
{
    aim_guard_enter();
    if (remove_temp)
        unlink(f->temp);
    if (f->fd >= 0)
        close(f->fd);
    aim_guard_drop(f->guard);
    aim_guard_leave();
    free(f->temp);
    free(f->final);
    free(f);
}

int aim_atomic_write(aim_atomic_file *f, const void *buf, size_t n)
{
    return aim_atomic_write_all(f->fd, buf, n);
}

aim_atomic_file *aim_atomic_create(const char *final)
{
    aim_atomic_file *f = calloc(1, sizeof *f);
    if (f) {
        f->fd = f->guard = -1;
        f->final = strdup(final);
        f->temp = hidden_name(final, ".XXXXXX");
    }
    if (!f || !f->final || !f->temp) {
        fprintf(stderr, "aimdyn: out of memory\n");
        if (f) {
            free(f->final);
            free(f->temp);
            free(f);
        }
        return NULL;
    }
    struct stat st;
    if (lstat(final, &st) == 0 && S_ISDIR(st.st_mode)) {
        fprintf(stderr, "aimdyn: cannot write '%s': a directory of that name is in the way\n",
                final);
        aim_atomic_file_free(f, 0);
        return NULL;
    }
    const size_t n = strlen(f->temp);
    int err = 0;
    aim_guard_enter();
    /* the lock on the temporary file tells a cleaner (aim_atomic_clean)
     * that its writer is alive */
    for (int tries = 0; tries < 8; tries++) {
        memcpy(f->temp + n - 6, "XXXXXX", 6);
        f->fd = mkstemp(f->temp);
        if (f->fd < 0) {
            err = errno;
            break;
        }
        if (fcntl(f->fd, F_SETFD, FD_CLOEXEC) != 0 || flock(f->fd, LOCK_EX) != 0) {
            err = errno;
            unlink(f->temp);
            close(f->fd);
            f->fd = -1;
            break;
        }
        if (aim_atomic_same_file(f->fd, f->temp))
            break;
        err = ENOENT; /* a cleaner removed it between its creation and its lock */
        close(f->fd);
        f->fd = -1;
    }
    if (f->fd >= 0 && (f->guard = aim_guard_add(f->temp)) < 0) {
        err = ENOMEM;
        unlink(f->temp);
        close(f->fd);
        f->fd = -1;
    }
    aim_guard_leave();
    if (f->fd < 0) {
        fprintf(stderr, "aimdyn: cannot create a temporary file for '%s': %s\n", final,
                strerror(err));
        aim_atomic_file_free(f, 0);
        return NULL;
    }
    /* mkstemp creates mode 0600; a result gets the usual 0666 & ~umask */
    const mode_t mask = umask(0);
    umask(mask);
    if (fchmod(f->fd, 0666 & ~mask) != 0) {
        fprintf(stderr, "aimdyn: cannot set the mode of '%s': %s\n", f->temp, strerror(errno));
        aim_atomic_file_free(f, 1);
        return NULL;
    }
    return f;
}

int aim_atomic_fd(const aim_atomic_file *f)
{
    return f->fd;
}

const char *aim_atomic_temp(const aim_atomic_file *f)
{
    return f->temp;
}

const char *aim_atomic_final(const aim_atomic_file *f)
{
    return f->final;
}

void aim_atomic_discard(aim_atomic_file *f)
{
    if (f)
        aim_atomic_file_free(f, 1);
}

int aim_atomic_sync_file(const aim_atomic_file *f)
{
    if (fsync(f->fd) != 0 && errno != EINVAL) {
        fprintf(stderr, "aimdyn: cannot write '%s': %s\n", f->final, strerror(errno));
        return -1;
    }
    return 0;
}

int aim_atomic_replace(aim_atomic_file *f)
{
    if (aim_atomic_sync_file(f)) {
        aim_atomic_file_free(f, 1);
        return -1;
    }
    if (rename(f->temp, f->final) != 0) {
        fprintf(stderr, "aimdyn: cannot rename '%s' to '%s': %s\n", f->temp, f->final,
                strerror(errno));
        aim_atomic_file_free(f, 1);
        return -1;
    }
    int rc = 0;
    if (aim_atomic_sync_dir(f->final) != 0) {
        fprintf(stderr, "aimdyn: cannot sync the directory of '%s': %s\n", f->final,
                strerror(errno));
        rc = -1;
    }
    aim_atomic_file_free(f, 0);
    return rc;
}
