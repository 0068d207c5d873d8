/* aim_tsv: result files written through aim_atomic. */
#define _POSIX_C_SOURCE 200809L

#include "tsv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "version.h"

struct aim_tsv {
    FILE *stream;          /* on a duplicate of the file's descriptor */
    aim_atomic_file *file; /* the temporary file and the final name */
};

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
    const int fd = dup(aim_atomic_fd(tsv->file));
    if (fd < 0 || !(tsv->stream = fdopen(fd, "w"))) {
        fprintf(stderr, "aimdyn: cannot open '%s': %s\n", aim_atomic_temp(tsv->file),
                strerror(errno));
        if (fd >= 0)
            close(fd);
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
    fprintf(out, "# aimdyn %s\n", AIM_VERSION);
    if (command)
        fprintf(out, "# command: %s\n", command);
    /* No timestamps, host names or timings: identical runs give
     * identical files. */
    fprintf(out, "# date-free\n");
    if (cfg)
        aim_config_write(cfg, out, "# config ");
}

/* Flushes and closes the stream; frees tsv. The file, or NULL with the
 * reason on stderr (the file discarded). */
static aim_atomic_file *close_stream(aim_tsv *tsv)
{
    aim_atomic_file *file = tsv->file;
    int err = 0;
    if (fflush(tsv->stream) != 0 || ferror(tsv->stream))
        err = errno ? errno : EIO;
    if (fclose(tsv->stream) != 0 && !err)
        err = errno;
    free(tsv);
    if (err) {
        fprintf(stderr, "aimdyn: cannot write '%s': %s\n", aim_atomic_final(file),
                strerror(err));
        aim_atomic_discard(file);
        return NULL;
    }
    return file;
}

int aim_tsv_commit(aim_tsv *tsv)
{
    aim_atomic_file *file = close_stream(tsv);
    return file ? aim_atomic_replace(file) : -1;
}

int aim_tsv_add_to(aim_tsv *tsv, aim_atomic_set *set)
{
    aim_atomic_file *file = close_stream(tsv);
    return file ? aim_atomic_set_add(set, file) : -1;
}

void aim_tsv_abort(aim_tsv *tsv)
{
    if (!tsv)
        return;
    fclose(tsv->stream);
    aim_atomic_discard(tsv->file);
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

void aim_table_free(aim_table *t)
{
    if (!t)
        return;
    for (int i = 0; i < t->ncols; i++)
        free(t->names[i]);
    free(t->names);
    free(t->data);
    memset(t, 0, sizeof *t);
}

int aim_table_column(const aim_table *t, const char *name)
{
    for (int i = 0; i < t->ncols; i++)
        if (strcmp(t->names[i], name) == 0)
            return i;
    return -1;
}

/* Splits line (modified in place) at tabs into at most max fields. */
static int split_tabs(char *line, char **fields, int max)
{
    int n = 0;
    char *p = line;
    for (;;) {
        if (n == max)
            return -1;
        fields[n++] = p;
        char *tab = strchr(p, '\t');
        if (!tab)
            break;
        *tab = '\0';
        p = tab + 1;
    }
    return n;
}

int aim_table_read(const char *path, aim_table *t)
{
    enum { MAX_FIELDS = 4096 };
    memset(t, 0, sizeof *t);
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "aimdyn: cannot read '%s': %s\n", path, strerror(errno));
        return -1;
    }
    char *line = NULL, **fields = malloc(sizeof *fields * MAX_FIELDS);
    size_t cap = 0, rows_cap = 0;
    long lineno = 0;
    ssize_t len;
    int rc = -1;
    if (!fields)
        goto fail;
    while ((len = getline(&line, &cap, f)) >= 0) {
        lineno++;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = '\0';
        if (line[0] == '#') {
            int order;
            if (sscanf(line, "# tied hierarchy: order M = %d", &order) == 1)
                t->order = order;
            continue;
        }
        if (len == 0)
            continue;
        int n = split_tabs(line, fields, MAX_FIELDS);
        if (n < 0) {
            fprintf(stderr, "aimdyn: %s:%ld: more than %d columns\n", path, lineno, MAX_FIELDS);
            goto fail;
        }
        if (!t->names) { /* the header */
            t->names = calloc((size_t)n, sizeof *t->names);
            if (!t->names)
                goto oom;
            t->ncols = n;
            for (int i = 0; i < n; i++)
                if (!(t->names[i] = strdup(fields[i])))
                    goto oom;
            continue;
        }
        if (n != t->ncols) {
            fprintf(stderr, "aimdyn: %s:%ld: %d columns where the header has %d\n", path,
                    lineno, n, t->ncols);
            goto fail;
        }
        if ((size_t)t->nrows == rows_cap) {
            rows_cap = rows_cap ? 2 * rows_cap : 64;
            double *d = realloc(t->data, sizeof *d * rows_cap * (size_t)n);
            if (!d)
                goto oom;
            t->data = d;
        }
        for (int i = 0; i < n; i++) {
            char *end;
            double v = strtod(fields[i], &end);
            if (end == fields[i] || *end) {
                fprintf(stderr, "aimdyn: %s:%ld: column %s: \"%s\" is not a number\n", path,
                        lineno, t->names[i], fields[i]);
                goto fail;
            }
            t->data[(size_t)t->nrows * n + i] = v;
        }
        t->nrows++;
    }
    if (!t->names) {
        fprintf(stderr, "aimdyn: %s: no header line (not an aimdyn result file)\n", path);
        goto fail;
    }
    rc = 0;
    goto done;
oom:
    fprintf(stderr, "aimdyn: out of memory reading '%s'\n", path);
fail:
    aim_table_free(t);
done:
    free(line);
    free(fields);
    fclose(f);
    return rc;
}
