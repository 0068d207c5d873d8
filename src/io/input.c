/* aim_input (see input.h). Written here rather than taken from a
 * library: fopen, json_load_file and getline all block on a FIFO and
 * read a device without end. */
#define _GNU_SOURCE /* O_NOFOLLOW, O_CLOEXEC with openat */

#include "input.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* "SHOWN: why; allowed: WHAT of at most N bytes" into err */
static void refuse(const char *shown, const char *why, const aim_input_kind *kind, char *err,
                   size_t n)
{
    snprintf(err, n, "%s: %s; allowed: %s of at most %zu bytes", shown, why, kind->what,
             kind->max_bytes);
}

int aim_input_open(int dirfd, const char *path, const char *shown, const aim_input_kind *kind,
                   off_t *size, char *err, size_t n)
{
    if (!shown)
        shown = path;
    /* without O_NONBLOCK, opening a FIFO waits for a writer forever */
    const int flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC | (kind->no_symlink ? O_NOFOLLOW : 0);
    const int fd = openat(dirfd, path, flags);
    if (fd < 0) {
        const int e = errno;
        char why[200];
        if (e == ELOOP && kind->no_symlink)
            snprintf(why, sizeof why, "a symbolic link (aimdyn makes none in its folders)");
        else
            snprintf(why, sizeof why, "cannot open: %s", strerror(e));
        refuse(shown, why, kind, err, n);
        errno = e;
        return -1;
    }
    struct stat st;
    int e = 0;
    char why[200] = "";
    if (fstat(fd, &st) != 0) {
        e = errno;
        snprintf(why, sizeof why, "%s", strerror(e));
    } else if (S_ISDIR(st.st_mode)) {
        e = EISDIR;
        snprintf(why, sizeof why, "a directory, not a regular file");
    } else if (!S_ISREG(st.st_mode)) {
        e = EINVAL;
        snprintf(why, sizeof why, "not a regular file (a device, a pipe or a socket)");
    } else if ((unsigned long long)st.st_size > kind->max_bytes) {
        e = EFBIG;
        snprintf(why, sizeof why, "%lld bytes", (long long)st.st_size);
    } else if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0) {
        e = errno;
        snprintf(why, sizeof why, "%s", strerror(e));
    }
    if (why[0]) {
        refuse(shown, why, kind, err, n);
        close(fd);
        errno = e;
        return -1;
    }
    *size = st.st_size;
    return fd;
}

int aim_input_read(int dirfd, const char *path, const char *shown, const aim_input_kind *kind,
                   char **text, size_t *len, char *err, size_t n)
{
    *text = NULL;
    *len = 0;
    off_t size;
    const int fd = aim_input_open(dirfd, path, shown, kind, &size, err, n);
    if (fd < 0)
        return -1;
    /* room for the size fstat gave and a byte more, to see the end (or
     * that the file grew) */
    size_t cap = (size_t)size + 2, got = 0;
    char *buf = malloc(cap);
    const char *why = buf ? NULL : "out of memory";
    while (!why) {
        if (got + 1 == cap) {
            if (got > kind->max_bytes) {
                why = "grew past the cap while it was read";
                break;
            }
            const size_t grown = cap * 2 < kind->max_bytes + 2 ? cap * 2 : kind->max_bytes + 2;
            char *p = realloc(buf, grown);
            if (!p) {
                why = "out of memory";
                break;
            }
            buf = p;
            cap = grown;
        }
        const ssize_t r = read(fd, buf + got, cap - 1 - got);
        if (r == 0)
            break;
        if (r < 0 && errno != EINTR)
            why = strerror(errno);
        else if (r > 0)
            got += (size_t)r;
    }
    close(fd);
    if (!why && got > kind->max_bytes)
        why = "grew past the cap while it was read";
    if (why) {
        refuse(shown ? shown : path, why, kind, err, n);
        free(buf);
        errno = EIO;
        return -1;
    }
    buf[got] = '\0';
    *text = buf;
    *len = got;
    return 0;
}
