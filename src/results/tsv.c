/* aim_tsv: result files written through aim_atomic. */
#define _GNU_SOURCE /* fopencookie (glibc, musl) */

#include "tsv.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "digest.h"
#include "lines.h"
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

/* The digest line of a sealed file (aim_tsv_seal) */
static const char digest_tag[] = "# digest: ";

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

/* The metadata lines that aim_table_version and aim_table_config read back */
static const char version_tag[] = "# aimdyn ", config_tag[] = "# config ";

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

void aim_table_free(aim_table *t)
{
    if (!t)
        return;
    for (int i = 0; i < t->ncols; i++) {
        free(t->names[i]);
        if (t->header)
            free(t->header[i]);
    }
    for (size_t i = 0; t->text && i < (size_t)t->nrows * (size_t)t->ncols; i++)
        free(t->text[i]);
    for (int i = 0; i < t->nmeta; i++)
        free(t->meta[i]);
    free(t->names);
    free(t->header);
    free(t->data);
    free(t->seed);
    free(t->text);
    free(t->meta);
    memset(t, 0, sizeof *t);
}

int aim_table_column(const aim_table *t, const char *name)
{
    for (int i = 0; i < t->ncols; i++)
        if (strcmp(t->names[i], name) == 0)
            return i;
    return -1;
}

const char *aim_table_meta(const aim_table *t, const char *prefix)
{
    const size_t n = strlen(prefix);
    for (int i = 0; i < t->nmeta; i++)
        if (!strncmp(t->meta[i], prefix, n))
            return t->meta[i] + n;
    return NULL;
}

const char *aim_table_version(const aim_table *t)
{
    return aim_table_meta(t, version_tag);
}

/* A result table read back: its cells held as doubles take at most
 * MAX_CELLS (aim_table_read) x 8 = 256 MiB, and a file of as many bytes
 * holds fewer cells than that. */
#define TABLE_MAX_BYTES ((size_t)256 << 20)

int aim_tsv_file_version(const char *path, char *version, size_t n, char *err, size_t errlen)
{
    /* the cap of the whole table (aim_table_read): a seed or point file
     * of many grid points is larger than its first two lines */
    static const aim_lines_limits limits = {TABLE_MAX_BYTES, (size_t)1 << 16, 0,
                                            "a result file of aimdyn"};
    char *line = NULL;
    size_t len;
    aim_lines *in = aim_lines_open(path, &limits, err, errlen);
    int got = in ? aim_lines_next(in, &line, &len) : -1;
    /* the column line comes first, the version line after it; a file of
     * an earlier version has its version line first */
    if (got > 0 && line[0] != '#')
        got = aim_lines_next(in, &line, &len);
    int rc = -1;
    if (got < 0 && in)
        snprintf(err, errlen, "%s", aim_lines_error(in));
    else if (got == 0 || (got > 0 && strncmp(line, version_tag, sizeof version_tag - 1)))
        rc = 1;
    else if (got > 0) {
        snprintf(version, n, "%s", line + sizeof version_tag - 1);
        rc = 0;
    }
    aim_lines_close(in);
    return rc;
}

int aim_tsv_check_digest(const char *path, const char *what, char *err, size_t n)
{
    const aim_lines_limits limits = {(size_t)256 << 20, (size_t)1 << 20, 1, what};
    aim_lines *in = aim_lines_open(path, &limits, err, n);
    if (!in)
        return -1;
    const size_t tl = sizeof digest_tag - 1;
    uint64_t sum = AIM_DIGEST_START;
    char recorded[AIM_DIGEST_TEXT] = "";
    int found = 0, got;
    char *line;
    size_t len;
    while ((got = aim_lines_next(in, &line, &len)) > 0) {
        if (!found && len >= tl && !strncmp(line, digest_tag, tl)) {
            found = 1;
            snprintf(recorded, sizeof recorded, "%s", line + tl);
            if (len - tl != AIM_DIGEST_TEXT - 1 || !aim_digest_is_text(recorded))
                recorded[0] = '\0';
            continue;
        }
        sum = aim_digest_bytes(aim_digest_bytes(sum, line, len), "\n", 1);
    }
    int rc = -1;
    char actual[AIM_DIGEST_TEXT];
    snprintf(actual, sizeof actual, "fnv1a64:%016llx", (unsigned long long)sum);
    if (got < 0)
        snprintf(err, n, "%s", aim_lines_error(in));
    else if (!found) {
        snprintf(err, n, "%s: no '%sfnv1a64:...' line (cut short, or not written whole)",
                 path, digest_tag);
        rc = 1;
    } else if (!recorded[0])
        snprintf(err, n, "%s: its '%s' line is not 'fnv1a64:' and 16 hex digits", path,
                 digest_tag);
    else if (strcmp(recorded, actual))
        snprintf(err, n, "%s: its contents do not match its digest (%s recorded, %s now): "
                 "edited or damaged", path, recorded, actual);
    else
        rc = 0;
    aim_lines_close(in);
    return rc;
}

/* The key of a "# config KEY = VALUE" line: its length after the tag. */
static size_t config_key_length(const char *line)
{
    const char *eq = strstr(line, " = ");
    return eq ? (size_t)(eq - line) : strlen(line);
}

/* A "# config" line of t with the key of line (both with the tag), or NULL. */
static const char *config_line_of(const aim_table *t, const char *line)
{
    const size_t k = config_key_length(line);
    for (int i = 0; i < t->nmeta; i++)
        if (!strncmp(t->meta[i], line, k) && !strncmp(t->meta[i] + k, " = ", 3))
            return t->meta[i];
    return NULL;
}

/* What is wrong with t's "# config" lines, where the lines expected
 * (aim_config_write) differ from them first: into why (size n). */
static void config_difference(const aim_table *t, const char *expected, char *why, size_t n)
{
    const char *there = NULL;
    int i = 0;
    for (; i < t->nmeta; i++) {
        if (strncmp(t->meta[i], config_tag, sizeof config_tag - 1))
            continue;
        const size_t len = strcspn(expected, "\n");
        if (!*expected || strlen(t->meta[i]) != len || strncmp(t->meta[i], expected, len)) {
            there = t->meta[i];
            break;
        }
        expected += len + 1;
    }
    const int wl = (int)strcspn(expected, "\n");
    if (!there && !*expected)
        return; /* the same lines */
    if (!*expected)
        snprintf(why, n, "an extra line '%.300s'", there);
    else if (!there || !config_line_of(t, expected))
        snprintf(why, n, "no '%.*s' line (a missing key is not taken as its default)",
                 (int)config_key_length(expected), expected);
    else
        snprintf(why, n, "'%.300s' where aimdyn writes '%.*s' (a repeated, moved or "
                 "rewritten line)", there, wl > 300 ? 300 : wl, expected);
}

int aim_table_config_whole(const aim_table *t, char *why, size_t n)
{
    aim_config cfg;
    aim_config_error err;
    if (aim_table_config(t, &cfg, &err)) {
        snprintf(why, n, "%s", err.message);
        return -1;
    }
    char *expected = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&expected, &len);
    if (m)
        aim_config_write(&cfg, m, config_tag);
    if (!m || fclose(m)) {
        snprintf(why, n, "out of memory");
        free(expected);
        return -1;
    }
    why[0] = '\0';
    config_difference(t, expected, why, n);
    free(expected);
    return why[0] ? -1 : 0;
}

int aim_table_config(const aim_table *t, aim_config *cfg, aim_config_error *err)
{
    aim_config_defaults(cfg);
    for (int i = 0; i < t->nmeta; i++) {
        const char *line = t->meta[i];
        if (strncmp(line, config_tag, sizeof config_tag - 1))
            continue;
        const char *key = line + sizeof config_tag - 1, *eq = strstr(key, " = ");
        if (!eq) {
            snprintf(err->message, sizeof err->message, "%.900s: no ' = '; allowed: "
                     "\"%sKEY = VALUE\" (aimdyn's metadata)", line, config_tag);
            return -1;
        }
        /* "KEY=VALUE", the assignment aim_config_set takes */
        const size_t klen = (size_t)(eq - key);
        char *assignment = malloc(strlen(key));
        if (!assignment) {
            snprintf(err->message, sizeof err->message, "out of memory");
            return -1;
        }
        snprintf(assignment, strlen(key), "%.*s=%s", (int)klen, key, eq + 3);
        aim_config_error why;
        const int rc = aim_config_set(cfg, assignment, &why);
        if (rc) {
            /* aim_config_set names the option: "--set ASSIGNMENT: reason" */
            const size_t alen = strlen(assignment);
            const char *reason = why.message;
            if (!strncmp(reason, "--set ", 6) && !strncmp(reason + 6, assignment, alen))
                reason += 6 + alen;
            snprintf(err->message, sizeof err->message, "%.400s%s%.600s", line,
                     reason == why.message ? ": " : "", reason);
        }
        free(assignment);
        if (rc)
            return -1;
    }
    return 0;
}

/* Splits line (modified in place) at tabs into *fields (grown to hold
 * them, *cap entries); the number of fields, -1 when there are more than
 * max or memory runs out. */
static int split_tabs(char *line, char ***fields, size_t *cap, int max)
{
    size_t n = 1;
    for (const char *p = line; (p = strchr(p, '\t')); p++)
        n++;
    if (n > (size_t)max)
        return -1;
    if (n > *cap) {
        char **f = realloc(*fields, sizeof *f * n);
        if (!f)
            return -1;
        *fields = f;
        *cap = n;
    }
    char *p = line;
    for (size_t i = 0; i < n; i++) {
        (*fields)[i] = p;
        char *tab = strchr(p, '\t');
        if (tab) {
            *tab = '\0';
            p = tab + 1;
        }
    }
    return (int)n;
}

static int in_list(const char *const *list, const char *name)
{
    for (; list && *list; list++)
        if (!strcmp(*list, name))
            return 1;
    return 0;
}

static int ends_with(const char *s, const char *tail)
{
    const size_t n = strlen(s), m = strlen(tail);
    return n >= m && !strcmp(s + n - m, tail);
}

/* How a column's values are checked (aim_table_read). */
enum { PLAIN = 0, TEXT, SEED, TAU, OVERLAP, STDERR };

static int column_role(const char *name, const aim_table_kind *kind)
{
    if (in_list(kind->text_columns, name))
        return TEXT;
    if (!strcmp(name, "seed"))
        return SEED;
    if (!strcmp(name, "tau"))
        return TAU;
    if (ends_with(name, "_se"))
        return STDERR;
    if (!strcmp(name, "overlap") || !strncmp(name, "overlap_", 8) || ends_with(name, "_overlap"))
        return OVERLAP;
    return PLAIN;
}

/* A seed as written: decimal digits only, at most 2^64 - 1; no double
 * on the way, which would merge seeds above 2^53. */
static int parse_seed(const char *s, uint64_t *v)
{
    uint64_t x = 0;
    if (!*s)
        return -1;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return -1;
        const unsigned digit = (unsigned)(*s - '0');
        if (x > (UINT64_MAX - digit) / 10)
            return -1;
        x = 10 * x + digit;
    }
    *v = x;
    return 0;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* An empty or repeated name among names[0 .. n-1] (reordered), or NULL. */
static const char *repeated_name(char **names, int n)
{
    qsort(names, (size_t)n, sizeof *names, compare_names);
    for (int i = 0; i < n; i++)
        if (!*names[i] || (i > 0 && !strcmp(names[i], names[i - 1])))
            return names[i];
    return NULL;
}

/* Grows an array of n elements of size sz to hold one more; 0 or -1. */
static int grow(void **array, size_t n, size_t *cap, size_t sz)
{
    if (n < *cap)
        return 0;
    size_t c = *cap ? 2 * *cap : 64;
    void *p = realloc(*array, c * sz);
    if (!p)
        return -1;
    *array = p;
    *cap = c;
    return 0;
}

int aim_table_read(const char *path, const aim_table_kind *kind, aim_table *t)
{
    /* the cells held as doubles take at most 256 MiB, however short they
     * are in the file (aimdyn writes 10-17 characters a cell) */
    enum { MAX_FIELDS = 1 << 15, MAX_CELLS = 1 << 25 };
    static const aim_table_kind any = {"an aimdyn result file", NULL, NULL};
    if (!kind)
        kind = &any;
    const aim_lines_limits limits = {TABLE_MAX_BYTES, (size_t)1 << 20, 1, kind->what};
    memset(t, 0, sizeof *t);
    char msg[1400] = "";
    aim_lines *in = aim_lines_open(path, &limits, msg, sizeof msg);
    char **fields = NULL;
    size_t fields_cap = 0;
    int *role = NULL, seed_col = -1;
    size_t rows_cap = 0, meta_cap = 0;
    int rc = -1, r;
    char *line;
    size_t len;
    if (!in)
        goto fail;
    while ((r = aim_lines_next(in, &line, &len)) > 0) {
        const long lineno = aim_lines_number(in);
        if (len > 0 && line[len - 1] == '\r')
            line[--len] = '\0';
        if (line[0] == '#') {
            if (t->nrows > 0) {
                snprintf(msg, sizeof msg, "%s:%ld: a '#' line among the rows; allowed: %s "
                         "('#' lines before the first row)", path, lineno, kind->what);
                goto fail;
            }
            int order;
            if (sscanf(line, "# tied hierarchy: order M = %d", &order) == 1)
                t->order = order;
            if (grow((void **)&t->meta, (size_t)t->nmeta, &meta_cap, sizeof *t->meta) ||
                !(t->meta[t->nmeta] = strdup(line)))
                goto oom;
            t->nmeta++;
            continue;
        }
        if (len == 0) {
            snprintf(msg, sizeof msg, "%s:%ld: an empty line; allowed: %s (no empty lines)",
                     path, lineno, kind->what);
            goto fail;
        }
        const int n = split_tabs(line, &fields, &fields_cap, MAX_FIELDS);
        if (n < 0) {
            snprintf(msg, sizeof msg, "%s:%ld: more than %d columns (or out of memory); "
                     "allowed: %s", path, lineno, MAX_FIELDS, kind->what);
            goto fail;
        }
        if (!t->names) { /* the header */
            t->names = calloc((size_t)n, sizeof *t->names);
            t->header = calloc((size_t)n, sizeof *t->header);
            role = malloc(sizeof *role * (size_t)n);
            if (!t->names || !t->header || !role)
                goto oom;
            int text = 0;
            for (int i = 0; i < n; i++, t->ncols++) {
                /* a file of an earlier version named m(SST) what is now m_SST */
                const size_t size = strlen(fields[i]) + 2;
                t->header[i] = strdup(fields[i]);
                t->names[i] = malloc(size);
                if (!t->header[i] || !t->names[i]) { /* not counted: freed here */
                    free(t->header[i]);
                    free(t->names[i]);
                    t->header[i] = t->names[i] = NULL;
                    goto oom;
                }
                aim_tsv_column_name(fields[i], t->names[i], size);
                fields[i] = t->names[i];
                role[i] = column_role(fields[i], kind);
                text |= role[i] == TEXT;
            }
            const char *name = repeated_name(fields, n);
            if (name && *name) {
                /* the two names as the file has them: m(S) and m_S are both m_S */
                int first = 0, second = 0;
                while (strcmp(t->names[first], name))
                    first++;
                for (second = first + 1; strcmp(t->names[second], name); second++)
                    ;
                if (!strcmp(t->header[first], t->header[second]))
                    snprintf(msg, sizeof msg, "%s:%ld: a repeated column name \"%.100s\"; "
                             "allowed: %s, with distinct column names", path, lineno, name,
                             kind->what);
                else
                    snprintf(msg, sizeof msg, "%s:%ld: the column names \"%.100s\" and "
                             "\"%.100s\" both read as \"%.100s\"; allowed: %s, with column names "
                             "distinct as read (m(S) reads as m_S)", path, lineno,
                             t->header[first], t->header[second], name, kind->what);
                goto fail;
            }
            if (name) {
                snprintf(msg, sizeof msg, "%s:%ld: an empty column name; allowed: %s, with "
                         "distinct column names", path, lineno, kind->what);
                goto fail;
            }
            if (aim_table_column(t, "seed") >= 0 && !(t->seed = malloc(sizeof *t->seed)))
                goto oom;
            if (text && !(t->text = malloc(sizeof *t->text)))
                goto oom;
            seed_col = aim_table_column(t, "seed");
            continue;
        }
        if (n != t->ncols) {
            snprintf(msg, sizeof msg, "%s:%ld: %d columns where the header has %d; allowed: %s",
                     path, lineno, n, t->ncols, kind->what);
            goto fail;
        }
        const size_t row = (size_t)t->nrows, cap_before = rows_cap;
        if ((row + 1) * (size_t)n > MAX_CELLS) {
            snprintf(msg, sizeof msg, "%s:%ld: more than %d cells; allowed: %s", path, lineno,
                     MAX_CELLS, kind->what);
            goto fail;
        }
        if (row == rows_cap) {
            rows_cap = rows_cap ? 2 * rows_cap : 64;
            if (rows_cap * (size_t)n > MAX_CELLS)
                rows_cap = MAX_CELLS / (size_t)n;
            double *d = realloc(t->data, sizeof *d * rows_cap * (size_t)n);
            if (!d)
                goto oom;
            t->data = d;
            if (t->seed) {
                uint64_t *sd = realloc(t->seed, sizeof *sd * rows_cap);
                if (!sd)
                    goto oom;
                t->seed = sd;
            }
            if (t->text) {
                char **tx = realloc(t->text, sizeof *tx * rows_cap * (size_t)n);
                if (!tx)
                    goto oom;
                t->text = tx;
                memset(tx + cap_before * (size_t)n, 0,
                       sizeof *tx * (rows_cap - cap_before) * (size_t)n);
            }
        }
        /* counted before its cells, so that a refusal half way through the
         * row frees the text cells already kept */
        t->nrows++;
        double *cell = t->data + row * (size_t)n;
        /* first the seed: the tau of a row is checked within its seed */
        const int bad_seed = seed_col >= 0 && parse_seed(fields[seed_col], &t->seed[row]);
        for (int i = 0; i < n; i++) {
            const char *f = fields[i], *why = NULL;
            char *end;
            double v = NAN;
            if (role[i] == TEXT) {
                if (!(t->text[row * (size_t)n + i] = strdup(f)))
                    goto oom;
            } else if (role[i] == SEED) {
                if (bad_seed)
                    why = "not an unsigned 64-bit integer";
                else
                    v = (double)t->seed[row];
            } else {
                v = strtod(f, &end);
                if (end == f || *end)
                    why = "not a number";
            }
            if (!why && role[i] == TAU) {
                const int restart = row == 0 || (t->seed && t->seed[row] != t->seed[row - 1]);
                if (!isfinite(v) || v < 0)
                    why = "not a finite tau >= 0";
                else if (!restart && !(v > t->data[(row - 1) * (size_t)n + i]))
                    why = "not above the tau of the row before (tau must increase)";
            }
            if (!why && role[i] == OVERLAP && !(isnan(v) || fabs(v) <= 1))
                why = "a teacher overlap outside [-1, 1]";
            if (!why && role[i] == STDERR && !(isnan(v) || v >= 0))
                why = "a negative standard error";
            if (why) {
                snprintf(msg, sizeof msg, "%s:%ld: column %s: \"%.100s\": %s; allowed: %s", path,
                         lineno, t->names[i], f, why, kind->what);
                goto fail;
            }
            cell[i] = v;
        }
    }
    if (r < 0) {
        snprintf(msg, sizeof msg, "%s", aim_lines_error(in));
        goto fail;
    }
    if (!t->names) {
        snprintf(msg, sizeof msg, "%s: no header line; allowed: %s", path, kind->what);
        goto fail;
    }
    for (const char *const *c = kind->columns; c && *c; c++)
        if (aim_table_column(t, *c) < 0) {
            snprintf(msg, sizeof msg, "%s: no column '%s'; allowed: %s", path, *c, kind->what);
            goto fail;
        }
    rc = 0;
    goto done;
oom:
    snprintf(msg, sizeof msg, "%s: out of memory", path);
fail:
    if (!msg[0])
        snprintf(msg, sizeof msg, "%s: out of memory", path);
    fprintf(stderr, "aimdyn: %s\n", msg);
    aim_table_free(t);
done:
    aim_lines_close(in);
    free(fields);
    free(role);
    return rc;
}
