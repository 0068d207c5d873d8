/* aim_state: saved SGD states (see state.h), their reader and checks
 * (the writer is state_write.c: the reader of files from elsewhere, a
 * fuzz target, stays apart from SGD). Text rather than the binary of a
 * checkpoint (src/cli/checkpoint.h): a state is a result meant to move
 * between machines and versions, and "%a" hex floats are exact in any
 * byte order. */
#include "state.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>


#include "digest.h"
#include "state_format.h"

struct aim_state {
    uint64_t seed;
    double tau;
    long step;
    int d, decomposition, columns, tokens, symmetric, centring;
    int nparams;
    double *teacher;
    double *params[2];
    size_t len[2];
    char digest[AIM_DIGEST_TEXT]; /* of the file's bytes */
    char version[64];             /* its "# aimdyn VERSION" line's; "" when none */
};

int aim_state_path(const aim_config *cfg, int d, uint64_t seed, double tau, char *buf, size_t n)
{
    const int w = snprintf(buf, n, "%s/%s-sgd-d%d-seed%llu-tau%g.state", cfg->dir, cfg->name,
                           d, (unsigned long long)seed, tau);
    return w < 0 || (size_t)w >= n ? -1 : 0;
}

void aim_state_free(aim_state *st)
{
    if (!st)
        return;
    free(st->teacher);
    free(st->params[0]);
    free(st->params[1]);
    free(st);
}

/* The reading of one file: its stream, its current line and number. */
typedef struct {
    FILE *f;
    const char *path;
    char *line;
    size_t cap;
    long number;
    char *err;
    size_t n;
    char *version; /* the "# aimdyn VERSION" line's version, when met */
    size_t version_n;
} reader;

/* A '#' line: the version of aimdyn that wrote the state, when it names
 * it (state_write.c: "# aimdyn VERSION" after "# aimdyn saved state") */
static void note_version(reader *r)
{
    static const char tag[] = "# aimdyn ";
    if (!strncmp(r->line, tag, sizeof tag - 1) && strncmp(r->line, "# aimdyn saved state", 20))
        snprintf(r->version, r->version_n, "%.*s", (int)strcspn(r->line + sizeof tag - 1, "\r\n"),
                 r->line + sizeof tag - 1);
}

/* The next line that is not a '#' line, without its newline; 0, or -1
 * (said: the file ends there, cut short) */
static int next_line(reader *r, const char *wanted)
{
    ssize_t got;
    do {
        got = getline(&r->line, &r->cap, r->f);
        r->number++;
        if (got > 0 && r->line[0] == '#')
            note_version(r);
    } while (got > 0 && r->line[0] == '#');
    if (got <= 0) {
        snprintf(r->err, r->n, "%s: ends at line %ld, before %s (cut short, or not a state "
                               "file of aimdyn sgd --save-state)", r->path, r->number, wanted);
        return -1;
    }
    const int newline = r->line[got - 1] == '\n';
    if (newline)
        r->line[got - 1] = '\0';
    if (strlen(r->line) != (size_t)got - (size_t)newline)
        r->line[0] = '\0'; /* a NUL byte inside: refused by the caller's match */
    return 0;
}

/* "NAME\tVALUE": the value, or NULL (said) */
static const char *field(reader *r, const char *name)
{
    if (next_line(r, name))
        return NULL;
    const size_t k = strlen(name);
    if (strncmp(r->line, name, k) || r->line[k] != '\t' || r->line[k + 1] == '\0') {
        snprintf(r->err, r->n, "%s:%ld: expected the line '%s<TAB>value', found '%.60s'",
                 r->path, r->number, name, r->line);
        return NULL;
    }
    return r->line + k + 1;
}

static int int_field(reader *r, const char *name, long lo, long hi, long *out)
{
    const char *v = field(r, name);
    if (!v)
        return -1;
    char *end;
    errno = 0;
    const long x = strtol(v, &end, 10);
    if (end == v || *end || errno || x < lo || x > hi) {
        snprintf(r->err, r->n, "%s:%ld: %s = '%.40s': not an integer in %ld..%ld", r->path,
                 r->number, name, v, lo, hi);
        return -1;
    }
    *out = x;
    return 0;
}

static int name_field(reader *r, const char *name, const char *const *names, int count,
                      int *out)
{
    const char *v = field(r, name);
    if (!v)
        return -1;
    for (int i = 0; i < count; i++)
        if (!strcmp(v, names[i])) {
            *out = i;
            return 0;
        }
    snprintf(r->err, r->n, "%s:%ld: %s = '%.40s': unknown; allowed: %s%s%s", r->path,
             r->number, name, v, names[0], count > 1 ? ", " : "", count > 1 ? names[1] : "");
    if (count > 2)
        snprintf(r->err + strlen(r->err), r->n - strlen(r->err), ", %s", names[2]);
    return -1;
}

/* A matrix block "matrix NAME ROWS COLS" and its rows, into a (malloc'd) */
static int read_matrix(reader *r, const char *name, int rows, int cols, double **a)
{
    char want[64];
    snprintf(want, sizeof want, "matrix\t%s\t%d\t%d", name, rows, cols);
    if (next_line(r, "a matrix"))
        return -1;
    if (strcmp(r->line, want)) {
        snprintf(r->err, r->n, "%s:%ld: expected the matrix '%s' (%d x %d) of this state's "
                               "student and d, found '%.60s'",
                 r->path, r->number, name, rows, cols, r->line);
        return -1;
    }
    if (!(*a = malloc(sizeof **a * (size_t)rows * (size_t)cols))) {
        snprintf(r->err, r->n, "%s: out of memory for a %d x %d matrix", r->path, rows, cols);
        return -1;
    }
    for (int i = 0; i < rows; i++) {
        if (next_line(r, "the end of a matrix"))
            return -1;
        char *p = r->line;
        for (int j = 0; j < cols; j++) {
            char *end;
            const double x = strtod(p, &end);
            const char after = j + 1 < cols ? '\t' : '\0';
            if (end == p || *end != after || !isfinite(x) || isspace((unsigned char)*p)) {
                snprintf(r->err, r->n, "%s:%ld: matrix %s, row %d, column %d: not a finite "
                                       "number followed by %s", r->path, r->number, name,
                         i + 1, j + 1, after ? "a tab" : "the end of the line");
                return -1;
            }
            (*a)[(size_t)i * cols + j] = x;
            p = end + (after ? 1 : 0);
        }
    }
    return 0;
}

aim_state *aim_state_read(const char *path, char *err, size_t n)
{
    aim_state *st = calloc(1, sizeof *st);
    reader r = {fopen(path, "r"), path, NULL, 0, 0, err, n, st ? st->version : NULL,
                st ? sizeof st->version : 0};
    if (!st || !r.f) {
        snprintf(err, n, "cannot read the state '%s': %s", path,
                 st ? strerror(errno) : "out of memory");
        if (r.f)
            fclose(r.f);
        free(st);
        return NULL;
    }
    long format, d, columns, tokens, symmetric, step;
    const char *seed_text, *tau_text;
    char *end;
    int ok = int_field(&r, "format", 1, 1000, &format) == 0;
    if (ok && format != FORMAT) {
        snprintf(err, n, "%s: a state of format %ld; this aimdyn reads format %d", path, format,
                 FORMAT);
        ok = 0;
    }
    if (ok && (ok = (seed_text = field(&r, "seed")) != NULL)) {
        errno = 0;
        st->seed = strtoull(seed_text, &end, 10);
        if ((ok = !(*end || errno || *seed_text == '-' || *seed_text == ' ')) == 0)
            snprintf(err, n, "%s:%ld: seed = '%.40s': not an unsigned 64-bit integer", path,
                     r.number, seed_text);
    }
    if (ok && (ok = (tau_text = field(&r, "tau")) != NULL)) {
        st->tau = strtod(tau_text, &end);
        if ((ok = !*end && isfinite(st->tau) && st->tau >= 0) == 0)
            snprintf(err, n, "%s:%ld: tau = '%.40s': not a finite number >= 0", path, r.number,
                     tau_text);
    }
    ok = ok && int_field(&r, "step", 0, 1000000000000L, &step) == 0 &&
         int_field(&r, "d", 8, 20000, &d) == 0 &&
         name_field(&r, "decomposition", decomposition_names, 3, &st->decomposition) == 0 &&
         int_field(&r, "columns", 0, 1000000, &columns) == 0 &&
         int_field(&r, "tokens", 1, AIM_MAX_TOKENS, &tokens) == 0 &&
         int_field(&r, "symmetric", 0, 1, &symmetric) == 0 &&
         name_field(&r, "centring", centring_names, 2, &st->centring) == 0;
    if (ok) {
        st->step = step;
        st->d = (int)d;
        st->columns = (int)columns;
        st->tokens = (int)tokens;
        st->symmetric = (int)symmetric;
        if ((st->decomposition == AIM_DIRECT) != (columns == 0)) {
            snprintf(err, n, "%s: columns = %ld for a %s student (0 for direct, >= 1 for the "
                             "factored ones)", path, columns,
                     decomposition_names[st->decomposition]);
            ok = 0;
        }
    }
    /* every value takes at least two bytes ("0" and a tab or newline):
     * a header that declares more than the file can hold is refused
     * before its matrices are allocated */
    struct stat info;
    const double values = (double)st->d * st->d +
                          (st->decomposition == AIM_UNTIED ? 2.0 : 1.0) * st->d *
                              (st->decomposition == AIM_DIRECT ? st->d : st->columns);
    if (ok && fstat(fileno(r.f), &info) == 0 && 2.0 * values > (double)info.st_size) {
        snprintf(err, n, "%s: %.0f values declared (d = %d, columns = %d), more than its %lld "
                         "bytes can hold (cut short)", path, values, st->d, st->columns,
                 (long long)info.st_size);
        ok = 0;
    }
    ok = ok && read_matrix(&r, "teacher", st->d, st->d, &st->teacher) == 0;
    static const char *const param_names[3][2] = {{"S", NULL}, {"W", NULL}, {"U", "V"}};
    st->nparams = st->decomposition == AIM_UNTIED ? 2 : 1;
    const int cols = st->decomposition == AIM_DIRECT ? st->d : st->columns;
    for (int k = 0; ok && k < st->nparams; k++) {
        ok = read_matrix(&r, param_names[st->decomposition][k], st->d, cols, &st->params[k]) ==
             0;
        st->len[k] = (size_t)st->d * (size_t)cols;
    }
    if (ok && (ok = next_line(&r, "the line 'end'") == 0) && (ok = !strcmp(r.line, "end")) == 0)
        snprintf(err, n, "%s:%ld: expected 'end' after the last matrix, found '%.60s'", path,
                 r.number, r.line);
    if (ok && (ok = getline(&r.line, &r.cap, r.f) < 0) == 0)
        snprintf(err, n, "%s:%ld: text after the line 'end'", path, r.number + 1);
    if (ok && (ok = !ferror(r.f)) == 0)
        snprintf(err, n, "cannot read the state '%s': read error", path);
    free(r.line);
    fclose(r.f);
    ok = ok && aim_digest_file(path, st->digest, err, n) == 0;
    if (!ok) {
        aim_state_free(st);
        return NULL;
    }
    return st;
}

int aim_state_check(const aim_state *st, const aim_config *cfg, int d, char *err, size_t n)
{
    const int p = cfg->decomposition == AIM_DIRECT ? 0 : aim_config_columns(&cfg->student, d);
    const char *what = NULL;
    char file[64] = "", run[64] = "";
    if (st->decomposition != (int)cfg->decomposition) {
        what = "model.decomposition";
        snprintf(file, sizeof file, "%s", decomposition_names[st->decomposition]);
        snprintf(run, sizeof run, "%s", decomposition_names[cfg->decomposition]);
    } else if (st->d != d) {
        what = "the dimension (sgd.d, --d)";
        snprintf(file, sizeof file, "%d", st->d);
        snprintf(run, sizeof run, "%d", d);
    } else if (st->tokens != cfg->tokens) {
        what = "model.tokens";
        snprintf(file, sizeof file, "%d", st->tokens);
        snprintf(run, sizeof run, "%d", cfg->tokens);
    } else if (st->columns != p) {
        what = "the columns p = round(student.rho d)";
        snprintf(file, sizeof file, "%d", st->columns);
        snprintf(run, sizeof run, "%d", p);
    } else if (st->symmetric != cfg->student.symmetric) {
        what = "student.symmetric";
        snprintf(file, sizeof file, "%s", st->symmetric ? "true" : "false");
        snprintf(run, sizeof run, "%s", cfg->student.symmetric ? "true" : "false");
    } else if (st->centring != (int)cfg->centring) {
        what = "model.centring";
        snprintf(file, sizeof file, "%s", centring_names[st->centring]);
        snprintf(run, sizeof run, "%s", centring_names[cfg->centring]);
    }
    if (!what && cfg->start_digest[0] && strcmp(cfg->start_digest, st->digest)) {
        snprintf(err, n, "training.start_digest = %s, but the state training.start_file = '%s' "
                         "has the digest %s: it is not the state the recorded run started "
                         "from (replaced at its path?); allowed: that state, or "
                         "training.start_digest empty to start from this one",
                 cfg->start_digest, cfg->start_file, st->digest);
        return -1;
    }
    if (!what)
        return 0;
    snprintf(err, n, "training.start_file = '%s': %s is %s in the saved state and %s in this "
                     "run; allowed: a state saved with %s as this run's",
             cfg->start_file, what, file, run, what);
    return -1;
}

int aim_state_dim(const aim_state *st) { return st->d; }
const char *aim_state_digest(const aim_state *st) { return st->digest; }
const char *aim_state_version(const aim_state *st) { return st->version; }
uint64_t aim_state_seed(const aim_state *st) { return st->seed; }
double aim_state_tau(const aim_state *st) { return st->tau; }
long aim_state_step(const aim_state *st) { return st->step; }
const double *aim_state_teacher(const aim_state *st) { return st->teacher; }

int aim_state_params(const aim_state *st, const double *arrays[2], size_t len[2])
{
    for (int k = 0; k < st->nparams; k++) {
        arrays[k] = st->params[k];
        len[k] = st->len[k];
    }
    return st->nparams;
}
