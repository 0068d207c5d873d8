/* aim_tsv, the writer: a result table written through aim_atomic, its
 * column line first and its '#' metadata after it (the column_first
 * stream), a sealed file with its digest line, its JSON sidecar made and
 * committed with it; the output folder prepared and locked. The lower
 * part of aim_tsv: the reader (tsv_read.c) calls it, never the reverse. */
#define _GNU_SOURCE /* fopencookie (glibc, musl) */

#include "tsv.h"
#include "tsv_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "digest.h"
#include "sidecar.h"
#include "version.h"

struct aim_tsv {
    FILE *stream;          /* the writer's stream (column_first_write) */
    aim_atomic_file *file; /* the temporary file and the final name */
    int fd;                /* a duplicate of the file's descriptor */
    char *head;            /* the lines held back until the column line */
    size_t head_len, head_cap;
    size_t scanned;        /* head[0 .. scanned-1]: complete '#' lines */
    int passing;           /* the column line is out: bytes go straight to fd */
    int discarding;        /* aborted: nothing more to write */
    aim_sidecar *sidecar;  /* made by aim_tsv_metadata */
    int scratch;           /* aim_tsv_scratch: no sidecar */
    int sealed;            /* aim_tsv_seal: held whole, written with its digest */
    int failed;            /* the sidecar could not be made */
};

/* write(2) of all n bytes; 0, or -1 with errno set. */
static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        const ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* The column line first: a writer writes its '#' metadata lines, its
 * column line and its rows in the order it composes them; the stream
 * holds the '#' lines back until the column line is complete, then writes
 * the column line, the held '#' lines and from there on passes every byte
 * through. numpy.genfromtxt(names=True) and pandas.read_csv take the
 * first line of a file as its column names, so it must be the column
 * line; stdio has no stream that reorders lines, hence this one
 * (fopencookie). Returns size, or 0 with errno set (what fopencookie
 * asks of a failed write). */
static ssize_t column_first_write(void *cookie, const char *buf, size_t size)
{
    aim_tsv *tsv = cookie;
    if (tsv->discarding)
        return (ssize_t)size;
    if (tsv->passing)
        return write_all(tsv->fd, buf, size) ? 0 : (ssize_t)size;
    if (tsv->head_len + size > tsv->head_cap) {
        size_t cap = tsv->head_cap ? 2 * tsv->head_cap : 4096;
        while (cap < tsv->head_len + size)
            cap *= 2;
        char *h = realloc(tsv->head, cap);
        if (!h) {
            errno = ENOMEM;
            return 0;
        }
        tsv->head = h;
        tsv->head_cap = cap;
    }
    memcpy(tsv->head + tsv->head_len, buf, size);
    tsv->head_len += size;
    while (!tsv->sealed) {
        const char *start = tsv->head + tsv->scanned;
        const char *nl = memchr(start, '\n', tsv->head_len - tsv->scanned);
        if (!nl)
            return (ssize_t)size;
        const size_t end = (size_t)(nl - tsv->head) + 1;
        if (*start == '#') {
            tsv->scanned = end;
            continue;
        }
        /* the column line, the '#' lines before it, what follows it */
        const int rc = write_all(tsv->fd, start, end - tsv->scanned) ||
                       write_all(tsv->fd, tsv->head, tsv->scanned) ||
                       write_all(tsv->fd, tsv->head + end, tsv->head_len - end);
        free(tsv->head);
        tsv->head = NULL;
        tsv->passing = 1;
        return rc ? 0 : (ssize_t)size;
    }
    return (ssize_t)size; /* sealed: held whole until the close */
}

/* A sealed file, held whole: its column line, the '#' lines written
 * before it, the digest line, then the rest (the rows), the digest over
 * every byte of the file but its own line's, in the file's order. */
static int write_sealed(aim_tsv *tsv)
{
    const char *h = tsv->head;
    const size_t len = tsv->head_len;
    size_t held = 0; /* h[0 .. held-1]: the '#' lines before the column line */
    while (held < len && h[held] == '#') {
        const char *nl = memchr(h + held, '\n', len - held);
        held = nl ? (size_t)(nl - h) + 1 : len;
    }
    const char *nl = held < len ? memchr(h + held, '\n', len - held) : NULL;
    const size_t column_end = nl ? (size_t)(nl - h) + 1 : len;
    uint64_t sum = aim_digest_bytes(AIM_DIGEST_START, h + held, column_end - held);
    sum = aim_digest_bytes(sum, h, held);
    sum = aim_digest_bytes(sum, h + column_end, len - column_end);
    char line[64];
    const int n = snprintf(line, sizeof line, "%sfnv1a64:%016llx\n", digest_tag,
                           (unsigned long long)sum);
    return write_all(tsv->fd, h + held, column_end - held) || write_all(tsv->fd, h, held) ||
           write_all(tsv->fd, line, (size_t)n) ||
           write_all(tsv->fd, h + column_end, len - column_end);
}

/* A file without a column line is written as it came. */
static int column_first_close(void *cookie)
{
    aim_tsv *tsv = cookie;
    int rc = 0;
    if (tsv->sealed && !tsv->discarding)
        rc = write_sealed(tsv);
    else if (!tsv->passing && !tsv->discarding)
        rc = write_all(tsv->fd, tsv->head, tsv->head_len);
    const int err = errno;
    free(tsv->head);
    tsv->head = NULL;
    if (close(tsv->fd) != 0 && !rc)
        return -1;
    errno = err;
    return rc;
}

/* mkdir -p for the directory part of path. Returns 0 or -1 (reported). */
static int make_parent_dirs(const char *path)
{
    char *dir = strdup(path);
    if (!dir) {
        fprintf(stderr, "aimdyn: out of memory\n");
        return -1;
    }
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir) { /* current directory or "/" */
        free(dir);
        return 0;
    }
    *slash = '\0';

    int rc = 0;
    /* Create every prefix ending before a '/', then the whole dir. */
    for (char *p = dir + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char saved = *p;
        *p = '\0';
        if (mkdir(dir, 0777) != 0) {
            int err = errno;
            struct stat st;
            if (err != EEXIST) {
                fprintf(stderr, "aimdyn: cannot create directory '%s': %s\n",
                        dir, strerror(err));
                rc = -1;
            } else if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
                fprintf(stderr, "aimdyn: cannot create directory '%s': %s\n",
                        dir, strerror(ENOTDIR));
                rc = -1;
            }
        }
        *p = saved;
        if (rc != 0 || saved == '\0')
            break;
    }
    free(dir);
    return rc;
}

aim_tsv *aim_tsv_open(const char *path)
{
    if (!path || !*path || path[strlen(path) - 1] == '/') {
        fprintf(stderr, "aimdyn: invalid output file name '%s'\n",
                path ? path : "(null)");
        return NULL;
    }
    if (make_parent_dirs(path) != 0)
        return NULL;
    aim_tsv *tsv = calloc(1, sizeof *tsv);
    if (!tsv) {
        fprintf(stderr, "aimdyn: out of memory\n");
        return NULL;
    }
    if (!(tsv->file = aim_atomic_create(path))) {
        free(tsv);
        return NULL;
    }
    static const cookie_io_functions_t column_first = {NULL, column_first_write, NULL,
                                                       column_first_close};
    tsv->fd = dup(aim_atomic_fd(tsv->file));
    if (tsv->fd < 0 || !(tsv->stream = fopencookie(tsv, "w", column_first))) {
        fprintf(stderr, "aimdyn: cannot open '%s': %s\n", aim_atomic_temp(tsv->file),
                strerror(errno));
        if (tsv->fd >= 0)
            close(tsv->fd);
        aim_atomic_discard(tsv->file);
        free(tsv);
        return NULL;
    }
    return tsv;
}

FILE *aim_tsv_stream(aim_tsv *tsv)
{
    return tsv->stream;
}

void aim_tsv_metadata(aim_tsv *tsv, const char *command, const aim_config *cfg)
{
    FILE *out = tsv->stream;
    fprintf(out, "%s%s\n", version_tag, AIM_VERSION);
    if (command)
        fprintf(out, "# command: %s\n", command);
    /* No timestamps, host names or timings: identical runs give
     * identical files. */
    fprintf(out, "# date-free\n");
    if (cfg)
        aim_config_write(cfg, out, config_tag);
    if (!tsv->scratch && !tsv->sidecar &&
        !(tsv->sidecar = aim_sidecar_create(aim_atomic_final(tsv->file), command, cfg)))
        tsv->failed = 1;
}

void aim_tsv_scratch(aim_tsv *tsv)
{
    tsv->scratch = 1;
}

void aim_tsv_seal(aim_tsv *tsv)
{
    tsv->sealed = 1;
}

int aim_tsv_integration(aim_tsv *tsv, const char *what, int n, const char *const names[],
                        const long values[])
{
    if (tsv->sidecar && aim_sidecar_add_integration(tsv->sidecar, what, n, names, values)) {
        fprintf(stderr, "aimdyn: out of memory (the JSON sidecar of '%s')\n",
                aim_atomic_final(tsv->file));
        tsv->failed = 1;
        return -1;
    }
    return 0;
}

/* Flushes and closes the stream; frees tsv, its sidecar into *sidecar
 * (NULL: none). The file, or NULL with the reason on stderr (the file
 * and the sidecar discarded). */
static aim_atomic_file *close_stream(aim_tsv *tsv, aim_sidecar **sidecar)
{
    aim_atomic_file *file = tsv->file;
    int err = 0;
    if (fflush(tsv->stream) != 0 || ferror(tsv->stream))
        err = errno ? errno : EIO;
    if (fclose(tsv->stream) != 0 && !err)
        err = errno;
    const int failed = tsv->failed;
    *sidecar = tsv->sidecar;
    free(tsv);
    if (err)
        fprintf(stderr, "aimdyn: cannot write '%s': %s\n", aim_atomic_final(file),
                strerror(err));
    if (err || failed) {
        aim_atomic_discard(file);
        aim_sidecar_free(*sidecar);
        *sidecar = NULL;
        return NULL;
    }
    return file;
}

typedef struct {
    aim_sidecar *sidecar;
    char *table; /* its final path */
} pending_sidecar;

static void pending_free(void *ctx)
{
    pending_sidecar *p = ctx;
    aim_sidecar_free(p->sidecar);
    free(p->table);
    free(p);
}

/* The name of path as seen from the folder of table: its base name when
 * they share that folder, else path itself. */
static const char *beside(const char *table, const char *path)
{
    const char *ts = strrchr(table, '/'), *ps = strrchr(path, '/');
    const size_t tl = ts ? (size_t)(ts - table) : 0, pl = ps ? (size_t)(ps - path) : 0;
    return tl == pl && !strncmp(table, path, tl) ? path + (ps ? pl + 1 : 0) : path;
}

/* At the set's commit, when its files are known: the sidecar lists them
 * (the tables and figures; each table's sidecar is beside it) and joins
 * the set. */
static int write_sidecar(aim_atomic_set *set, void *ctx)
{
    const pending_sidecar *p = ctx;
    for (int i = 0; i < aim_atomic_set_count(set); i++) {
        const char *f = aim_atomic_set_final(set, i);
        const size_t n = f ? strlen(f) : 0;
        if (n && !(n > 5 && !strcmp(f + n - 5, ".json")) &&
            aim_sidecar_add_output(p->sidecar, beside(p->table, f))) {
            fprintf(stderr, "aimdyn: out of memory (the JSON sidecar of '%s')\n", p->table);
            return -1;
        }
    }
    char path[4200];
    if (aim_sidecar_path(p->table, path, sizeof path)) {
        fprintf(stderr, "aimdyn: the sidecar path of '%s' is too long\n", p->table);
        return -1;
    }
    aim_atomic_file *json = aim_atomic_create(path);
    if (!json || aim_sidecar_write(p->sidecar, json)) {
        aim_atomic_discard(json);
        return -1;
    }
    return aim_atomic_set_add(set, json);
}

/* Adds file to set, and its sidecar (may be NULL) to be written when set
 * is committed. Returns 0 or -1 (said; the sidecar freed). */
static int add_with_sidecar(aim_atomic_set *set, aim_atomic_file *file, aim_sidecar *sidecar)
{
    pending_sidecar *p = sidecar ? calloc(1, sizeof *p) : NULL;
    if (sidecar && (!p || !(p->table = strdup(aim_atomic_final(file))))) {
        fprintf(stderr, "aimdyn: out of memory\n");
        free(p);
        aim_sidecar_free(sidecar);
        aim_atomic_discard(file);
        return -1;
    }
    if (aim_atomic_set_add(set, file)) {
        if (p)
            pending_free(p);
        return -1;
    }
    if (!p)
        return 0;
    p->sidecar = sidecar;
    return aim_atomic_set_on_commit(set, write_sidecar, pending_free, p);
}

int aim_tsv_commit(aim_tsv *tsv)
{
    aim_sidecar *sidecar;
    aim_atomic_file *file = close_stream(tsv, &sidecar);
    if (!file)
        return -1;
    if (!sidecar)
        return aim_atomic_replace(file);
    aim_atomic_set *set = aim_atomic_set_own(aim_atomic_final(file));
    if (!set) {
        aim_atomic_discard(file);
        aim_sidecar_free(sidecar);
        return -1;
    }
    if (add_with_sidecar(set, file, sidecar)) {
        aim_atomic_set_free(set);
        return -1;
    }
    return aim_atomic_set_commit(set);
}

int aim_tsv_add_to(aim_tsv *tsv, aim_atomic_set *set)
{
    aim_sidecar *sidecar;
    aim_atomic_file *file = close_stream(tsv, &sidecar);
    return file ? add_with_sidecar(set, file, sidecar) : -1;
}

void aim_tsv_abort(aim_tsv *tsv)
{
    if (!tsv)
        return;
    tsv->discarding = 1;
    fclose(tsv->stream);
    aim_atomic_discard(tsv->file);
    aim_sidecar_free(tsv->sidecar);
    free(tsv);
}

int aim_tsv_path(char *buf, size_t n, const aim_config *cfg,
                 const char *suffix, const char *ext)
{
    const char *dir = cfg->dir;
    size_t dl = strlen(dir);
    const char *sep = (dl > 0 && dir[dl - 1] != '/') ? "/" : "";
    int has_suffix = suffix && *suffix;
    int has_ext = ext && *ext;
    int len = snprintf(buf, n, "%s%s%s%s%s%s%s", dir, sep, cfg->name,
                       has_suffix ? "-" : "", has_suffix ? suffix : "",
                       has_ext ? "." : "", has_ext ? ext : "");
    if (len < 0 || (size_t)len >= n) {
        fprintf(stderr,
                "aimdyn: output path too long (limit %zu): '%s%s%s%s%s%s%s'\n",
                n ? n - 1 : 0, dir, sep, cfg->name, has_suffix ? "-" : "",
                has_suffix ? suffix : "", has_ext ? "." : "",
                has_ext ? ext : "");
        if (n > 0)
            buf[0] = '\0';
        return -1;
    }
    return 0;
}

int aim_tsv_prepare_dir(const aim_config *cfg)
{
    return aim_tsv_prepare_for(cfg, NULL);
}

int aim_tsv_prepare_for(const aim_config *cfg, const char *suffix)
{
    char probe[1100];
    if (aim_tsv_path(probe, sizeof probe, cfg, "probe", "tsv") || make_parent_dirs(probe)) {
        fprintf(stderr, "aimdyn: output.dir = '%s' is unusable; allowed: a directory that "
                        "exists or can be created, and is writable\n", cfg->dir);
        return -1;
    }
    if (access(cfg->dir, W_OK) != 0) {
        fprintf(stderr, "aimdyn: output directory '%s' is not writable: %s (output.dir)\n",
                cfg->dir, strerror(errno));
        return -1;
    }
    char name[sizeof cfg->name + 64];
    snprintf(name, sizeof name, "%s%s%s", cfg->name, suffix ? "-" : "", suffix ? suffix : "");
    return aim_atomic_lock(cfg->dir, name,
                           "choose another output.dir or output.name (--out, --name)")
               ? -1
               : 0;
}

const char *aim_tsv_column_name(const char *name, char *buf, size_t n)
{
    size_t k = 0;
    if (n == 0)
        return buf;
    if (*name >= '0' && *name <= '9' && k + 1 < n)
        buf[k++] = '_';
    for (const char *c = name; *c && k + 1 < n; c++) {
        const int keep = (*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') ||
                         (*c >= '0' && *c <= '9');
        if (keep)
            buf[k++] = *c;
        else if (k == 0 || buf[k - 1] != '_')
            buf[k++] = '_';
    }
    /* "m(SST)" ends in the '_' of its ')' */
    if (k > 1 && buf[k - 1] == '_' && name[strlen(name) - 1] != '_')
        k--;
    buf[k] = '\0';
    return buf;
}
