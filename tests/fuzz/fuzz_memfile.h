/* The fuzz input as a file: aimdyn's readers take a path, so each input
 * is written to an in-memory file (memfd) and read back through
 * /proc/self/fd/N, a regular file as far as they can tell. */
#ifndef AIM_FUZZ_MEMFILE_H
#define AIM_FUZZ_MEMFILE_H

#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

typedef struct {
    int fd;
    char path[64];
} fuzz_memfile;

/* Replaces the file's content with data[0 .. size-1]; aborts on failure
 * (a broken harness, not a finding). */
static inline const char *fuzz_memfile_put(fuzz_memfile *m, const uint8_t *data, size_t size)
{
    if (m->fd <= 0) {
        m->fd = memfd_create("aimdyn-fuzz", 0);
        if (m->fd < 0)
            abort();
        snprintf(m->path, sizeof m->path, "/proc/self/fd/%d", m->fd);
    }
    if (ftruncate(m->fd, 0) != 0 || pwrite(m->fd, data, size, 0) != (ssize_t)size)
        abort();
    return m->path;
}

#endif
