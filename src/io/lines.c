/* aim_lines: bounded line reading. Written here rather than with getline
 * or fgets: getline grows its buffer without bound (a file without line
 * breaks takes all memory) and neither tells a NUL byte from the end of
 * the line, so a value with a NUL in it would be cut short unseen. */
#define _POSIX_C_SOURCE 200809L

#include "lines.h"

#include "input.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { CHUNK = 1 << 14 };

struct aim_lines {
    FILE *fp;
    char *path;
    const aim_lines_limits *lim;
    char chunk[CHUNK];
    size_t pos, fill;  /* unread bytes: chunk[pos .. fill) */
    size_t total;      /* bytes read so far */
    long long size;    /* the file's size when it was opened */
    char *line;
    size_t cap;
    long number;
    int done, failed;
    char error[1200];
};

__attribute__((format(printf, 3, 4))) static int fail(aim_lines *f, long line,
                                                      const char *fmt, ...)
{
    int n = line > 0 ? snprintf(f->error, sizeof f->error, "%s:%ld: ", f->path, line)
                     : snprintf(f->error, sizeof f->error, "%s: ", f->path);
    va_list ap;
    va_start(ap, fmt);
    if (n >= 0 && (size_t)n < sizeof f->error)
        vsnprintf(f->error + n, sizeof f->error - (size_t)n, fmt, ap);
    va_end(ap);
    f->failed = 1;
    return -1;
}

/* Standard input's text, kept for the process's life (lines.h). */
static char *stdin_text;
static size_t stdin_len;

aim_lines *aim_lines_open_stdin(const aim_lines_limits *limits, char *err, size_t n)
{
    const char *why = NULL;
    if (!stdin_text) {
        size_t cap = 0, len = 0;
        char *text = NULL;
        for (;;) {
            if (len == cap) {
                cap = cap ? 2 * cap : CHUNK;
                char *p = realloc(text, cap);
                if (!p) {
                    why = "out of memory";
                    break;
                }
                text = p;
            }
            errno = 0;
            const size_t got = fread(text + len, 1, cap - len, stdin);
            len += got;
            if (len > limits->max_bytes) {
                free(text);
                snprintf(err, n, "standard input: more than %zu bytes; allowed: %s of at most "
                         "%zu bytes", limits->max_bytes, limits->what, limits->max_bytes);
                return NULL;
            }
            if (got == 0) {
                if (ferror(stdin))
                    why = strerror(errno ? errno : EIO);
                break;
            }
        }
        if (why) {
            free(text);
            snprintf(err, n, "standard input: %s; allowed: %s", why, limits->what);
            return NULL;
        }
        stdin_text = text;
        stdin_len = len;
    }
    /* fmemopen refuses a zero-length buffer (EINVAL, glibc before 2.22):
     * empty input is read from /dev/null */
    FILE *fp = stdin_len ? fmemopen(stdin_text, stdin_len, "r") : fopen("/dev/null", "r");
    aim_lines *f = fp ? calloc(1, sizeof *f) : NULL;
    if (f && (f->path = strdup("standard input"))) {
        f->fp = fp;
        f->lim = limits;
        f->size = -1;
        return f;
    }
    snprintf(err, n, "standard input: %s; allowed: %s", fp ? "out of memory" : strerror(errno),
             limits->what);
    free(f);
    if (fp)
        fclose(fp);
    return NULL;
}

aim_lines *aim_lines_open(const char *path, const aim_lines_limits *limits, char *err,
                          size_t n)
{
    const aim_input_kind kind = {limits->max_bytes, limits->what, 0};
    off_t size;
    const int fd = aim_input_open(AT_FDCWD, path, NULL, &kind, &size, err, n);
    if (fd < 0)
        return NULL;
    FILE *fp = fdopen(fd, "r");
    aim_lines *f = fp ? calloc(1, sizeof *f) : NULL;
    if (!f || !(f->path = strdup(path))) {
        snprintf(err, n, "%s: %s; allowed: %s", path, fp ? "out of memory" : strerror(errno),
                 limits->what);
        free(f);
        if (fp)
            fclose(fp);
        else
            close(fd);
        return NULL;
    }
    f->fp = fp;
    f->lim = limits;
    f->size = size;
    return f;
}

/* Room for len + 1 bytes in f->line, growing geometrically. */
static int reserve(aim_lines *f, size_t len)
{
    if (len < f->cap)
        return 0;
    size_t cap = f->cap ? f->cap : 256;
    while (cap <= len)
        cap *= 2;
    char *p = realloc(f->line, cap);
    if (!p)
        return fail(f, 0, "out of memory");
    f->line = p;
    f->cap = cap;
    return 0;
}

int aim_lines_next(aim_lines *f, char **line, size_t *len)
{
    if (f->failed)
        return -1;
    if (f->done)
        return 0;
    const aim_lines_limits *lim = f->lim;
    const long number = f->number + 1;
    size_t used = 0;
    int started = 0; /* bytes of this line were read */
    for (;;) {
        if (f->pos == f->fill) {
            errno = 0;
            f->fill = fread(f->chunk, 1, CHUNK, f->fp);
            f->pos = 0;
            if (f->fill == 0) {
                if (ferror(f->fp))
                    return fail(f, number, "read error: %s",
                                strerror(errno ? errno : EIO));
                f->done = 1;
                if (!started)
                    return 0;
                if (lim->need_final_newline)
                    return fail(f, number, "the last line has no line break (a truncated "
                                           "file?); allowed: %s, which ends with one",
                                lim->what);
                break;
            }
            f->total += f->fill;
            if (f->total > lim->max_bytes)
                return fail(f, 0, "more than %zu bytes; allowed: %s of at most %zu bytes",
                            lim->max_bytes, lim->what, lim->max_bytes);
        }
        const char *start = f->chunk + f->pos;
        const char *nl = memchr(start, '\n', f->fill - f->pos);
        const size_t take = nl ? (size_t)(nl - start) : f->fill - f->pos;
        if (used + take > lim->max_line)
            return fail(f, number, "line longer than %zu bytes; allowed: %s with lines of "
                                   "at most %zu bytes", lim->max_line, lim->what,
                        lim->max_line);
        if (reserve(f, used + take))
            return -1;
        memcpy(f->line + used, start, take);
        used += take;
        f->pos += take;
        started = 1;
        if (nl) {
            f->pos++;
            break;
        }
    }
    if (reserve(f, used))
        return -1;
    f->line[used] = '\0';
    f->number = number;
    const char *nul = memchr(f->line, '\0', used);
    if (nul)
        return fail(f, number, "a NUL byte at column %zu; allowed: %s, text without NUL bytes",
                    (size_t)(nul - f->line) + 1, lim->what);
    *line = f->line;
    *len = used;
    return 1;
}

void aim_lines_limit(aim_lines *f, const aim_lines_limits *limits)
{
    f->lim = limits;
}

long long aim_lines_size(const aim_lines *f)
{
    return f->size;
}

long aim_lines_number(const aim_lines *f)
{
    return f->number;
}

const char *aim_lines_error(const aim_lines *f)
{
    return f->error;
}

void aim_lines_close(aim_lines *f)
{
    if (!f)
        return;
    fclose(f->fp);
    free(f->line);
    free(f->path);
    free(f);
}
