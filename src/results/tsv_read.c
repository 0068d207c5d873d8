/* aim_tsv, the reader: a result table read back and checked (its rows,
 * columns and '#' metadata, aim_table_read), the version and the digest
 * of a file, and the configuration that its "# config" lines record.
 * Calls the writer (tsv.c) for aim_tsv_column_name only. */
#include "tsv.h"
#include "tsv_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "digest.h"
#include "lines.h"

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
