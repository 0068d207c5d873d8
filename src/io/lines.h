/* aim_lines: a text file read line by line within stated limits. Every
 * file aimdyn reads (the configuration, the result files read back by
 * agreement, plot, scaling and a sweep's resume; saved states) goes
 * through it (and it opens them with aim_input_open), so that
 * a device, a FIFO, a directory, a huge file, an endless line, a NUL
 * byte, a read error or a truncated last line each get one clear message
 * instead of a hang, gigabytes of memory or a silently shortened value. */
#ifndef AIM_LINES_H
#define AIM_LINES_H

#include <stddef.h>

typedef struct aim_lines aim_lines;

typedef struct {
    size_t max_bytes;       /* the whole file */
    size_t max_line;        /* one line, without its line break */
    int need_final_newline; /* a last line without '\n' is an error (a
                               file aimdyn wrote always ends with one) */
    const char *what;       /* what the file should be, for messages:
                               "an INI configuration file" */
} aim_lines_limits;

/* Opens path, refusing what is not a regular file or is larger than
 * max_bytes. NULL with "PATH: reason; allowed: WHAT" in err (size n).
 * limits must outlive the reader. */
aim_lines *aim_lines_open(const char *path, const aim_lines_limits *limits, char *err,
                          size_t n);

/* The same for standard input (a pipe too), named "standard input" in
 * messages. It is read once, whole, within max_bytes; every later reader
 * gets the same text (a sweep loads its configuration once per point). */
aim_lines *aim_lines_open_stdin(const aim_lines_limits *limits, char *err, size_t n);

/* The next line, without its line break (a '\r' before it is kept),
 * NUL-terminated, valid until the next call: 1 with *line and *len set,
 * 0 at the end of the file, -1 on an error, described by
 * aim_lines_error ("PATH:LINE: reason"). */
int aim_lines_next(aim_lines *f, char **line, size_t *len);

/* Replaces f's limits from the next line on (limits must outlive the
 * reader): a file whose header says how long its lines may be. */
void aim_lines_limit(aim_lines *f, const aim_lines_limits *limits);

/* The size of the file when it was opened (-1 for standard input). */
long long aim_lines_size(const aim_lines *f);

/* Number of the line last returned (1 for the first). */
long aim_lines_number(const aim_lines *f);

const char *aim_lines_error(const aim_lines *f);

void aim_lines_close(aim_lines *f);

#endif
