/* aim_input: the one way aimdyn opens a file it reads (configurations,
 * tables, sidecars, saved states, checkpoints, seed and point files,
 * journals): a regular file of at most a stated size, checked on the
 * opened descriptor. A FIFO is opened without waiting for a writer and
 * refused; a device (/dev/zero), a directory or a socket is refused; a
 * file over its cap is refused before a byte is read. Every message names
 * the file, what is wrong and what is allowed. */
#ifndef AIM_INPUT_H
#define AIM_INPUT_H

#include <stddef.h>
#include <sys/types.h>

typedef struct {
    size_t max_bytes; /* the cap: larger files are refused */
    const char *what; /* what the file should be, for messages: "a checkpoint of aimdyn" */
    int no_symlink;   /* a symbolic link is refused (a file aimdyn keeps in an
                         output folder, which it never makes a link) */
} aim_input_kind;

/* Opens path (relative to the directory dirfd, or AT_FDCWD) for reading:
 * its descriptor (blocking, close-on-exec), its size in *size. -1 when
 * it is refused or cannot be opened, with "SHOWN: reason; allowed: WHAT
 * of at most N bytes" in err (size n; shown: the name for messages, NULL
 * for path) and errno set: ENOENT when there is no such file (for callers
 * to whom a missing file is no error), EFBIG over the cap, ELOOP a
 * refused symbolic link. */
int aim_input_open(int dirfd, const char *path, const char *shown, const aim_input_kind *kind,
                   off_t *size, char *err, size_t n);

/* The whole file, as aim_input_open opens it, into a malloc'd buffer
 * (*text, *len bytes, a NUL after them): 0, or -1 as aim_input_open (also
 * when the file grew past the cap while it was read, or on a read error). */
int aim_input_read(int dirfd, const char *path, const char *shown, const aim_input_kind *kind,
                   char **text, size_t *len, char *err, size_t n);

#endif
