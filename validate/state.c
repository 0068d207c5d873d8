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

#include "digest.h"
#include "lines.h"
#include "state_format.h"

struct aim_state {
    uint64_t seed;
    double tau;
    long step;
    int d, decomposition, columns, tokens, symmetric, centring;
    const aim_state_arrays *arrays; /* its student's, from the reader's layout */
    double *teacher;
    double *params[2];
    size_t len[2];
    char digest[AIM_DIGEST_TEXT]; /* of the file's bytes */
    char version[64];             /* its "# aimdyn VERSION" line's; "" when none */
    char *config;                 /* its "# config " lines, each with its '\n' */
    size_t config_len;
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
    free(st->config);
    free(st);
}

/* "%a" writes a double in at most 24 characters
 * ("-0x1.fffffffffffffp-1022"), and a tab or a line break follows each */
enum { VALUE_BYTES = 25 };

/* The header of a state (its comments and '# config' lines, whose values
 * take at most a few hundred characters each) before its matrices. */
enum { HEADER_LINE = 1 << 16 };
#define HEADER_MAX_BYTES ((size_t)1 << 20)

/* The largest state aimdyn writes: d = 20000 (the largest d a state may
 * declare), an untied student with p = d columns, 3 d^2 values of at most
 * VALUE_BYTES: 30 GB. Once its header is read, a state is held to the
 * size its own d and columns allow (state_fits). */
#define STATE_MAX_BYTES ((size_t)32 << 30)

static const char state_what[] = "a state file of aimdyn sgd --save-state";

/* The reading of one file: its lines, its current line and number, the
 * digest of the bytes read so far. */
typedef struct {
    aim_lines *in;
    const char *path;
    char *line;
    long number;
    uint64_t digest;
    char *err;
    size_t n;
    aim_state *st; /* what the '#' lines say: its version and configuration */
    int in_matrices; /* past the header: '#' lines there are skipped, not kept */
} reader;

/* A '#' line: the version of aimdyn that wrote the state, when it names
 * it (state_write.c: "# aimdyn VERSION" after "# aimdyn saved state"), or
 * a line of the configuration of the run that saved it (kept whole, for
 * aim_state_config_lines). 0, or -1 (out of memory, said). */
static int note_comment(reader *r)
{
    static const char tag[] = "# aimdyn ", config_tag[] = "# config ";
    aim_state *st = r->st;
    if (r->in_matrices)
        return 0;
    if (!strncmp(r->line, tag, sizeof tag - 1) && strncmp(r->line, "# aimdyn saved state", 20))
        snprintf(st->version, sizeof st->version, "%s", r->line + sizeof tag - 1);
    if (strncmp(r->line, config_tag, sizeof config_tag - 1))
        return 0;
    const size_t len = strlen(r->line);
    char *grown = realloc(st->config, st->config_len + len + 2);
    if (!grown) {
        snprintf(r->err, r->n, "%s: out of memory", r->path);
        return -1;
    }
    memcpy(grown + st->config_len, r->line, len);
    st->config_len += len;
    grown[st->config_len++] = '\n';
    grown[st->config_len] = '\0';
    st->config = grown;
    return 0;
}

/* The next line of r: 1 (r->line set), 0 at the end of the file, -1
 * (said). A line that ends in '\r' is refused: the file has Windows line
 * endings, which would otherwise show as a value with an invisible
 * character ("format = '1': not an integer"). */
static int raw_line(reader *r)
{
    size_t len;
    const int got = aim_lines_next(r->in, &r->line, &len);
    if (got < 0) {
        snprintf(r->err, r->n, "%s", aim_lines_error(r->in));
        return -1;
    }
    if (got == 0)
        return 0;
    r->number = aim_lines_number(r->in);
    /* every line ends with '\n' (need_final_newline): the file's bytes */
    r->digest = aim_digest_bytes(aim_digest_bytes(r->digest, r->line, len), "\n", 1);
    if (len > 0 && r->line[len - 1] == '\r') {
        snprintf(r->err, r->n, "%s:%ld: the line ends with a carriage return: the file has "
                               "CRLF (Windows) line endings; allowed: %s, with LF (Unix) line "
                               "endings (convert it, e.g. with dos2unix)",
                 r->path, r->number, state_what);
        return -1;
    }
    return 1;
}

/* The next line that is not a '#' line, without its newline; 0, or -1
 * (said: the file ends there, cut short, or cannot be read) */
static int next_line(reader *r, const char *wanted)
{
    int got;
    while ((got = raw_line(r)) > 0 && r->line[0] == '#')
        if (note_comment(r))
            return -1;
    if (got == 0)
        snprintf(r->err, r->n, "%s: ends at line %ld, before %s (cut short, or not a state "
                               "file of aimdyn sgd --save-state)", r->path, r->number + 1,
                 wanted);
    return got > 0 ? 0 : -1;
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
    r->in_matrices = 1;
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

/* A header that declares more values than the file can hold is refused
 * before its matrices are allocated (every value takes at least two
 * bytes: "0" and a tab or a line break), and a file larger than those
 * values can take (VALUE_BYTES each, after a header of at most
 * HEADER_MAX_BYTES) before it is read; body: the limits of its matrices'
 * lines. 1, or 0 (said). */
static int state_fits(reader *r, const aim_state *st, aim_lines_limits *body)
{
    const int cols = st->arrays->factored ? st->columns : st->d;
    const double values = (double)st->d * st->d + (double)st->arrays->count * st->d * cols;
    const double most = (double)HEADER_MAX_BYTES + VALUE_BYTES * values;
    const long long size = aim_lines_size(r->in);
    if (2.0 * values > (double)size) {
        snprintf(r->err, r->n, "%s: %.0f values declared (d = %d, columns = %d), more than its "
                               "%lld bytes can hold (cut short)", r->path, values, st->d,
                 st->columns, size);
        return 0;
    }
    if ((double)size > most) {
        snprintf(r->err, r->n, "%s: %lld bytes; allowed: %s of at most %.0f bytes for its d = "
                               "%d and columns = %d (%.0f values of at most %d bytes after a "
                               "header of at most %zu bytes)", r->path, size, state_what, most,
                 st->d, st->columns, values, VALUE_BYTES, HEADER_MAX_BYTES);
        return 0;
    }
    *body = (aim_lines_limits){STATE_MAX_BYTES,
                               (size_t)VALUE_BYTES * (size_t)(cols > st->d ? cols : st->d),
                               1, state_what};
    aim_lines_limit(r->in, body);
    return 1;
}

aim_state *aim_state_read(const char *path, aim_state_layout layout, char *err, size_t n)
{
    static const aim_lines_limits header = {STATE_MAX_BYTES, HEADER_LINE, 1, state_what};
    aim_state *st = calloc(1, sizeof *st);
    reader r = {NULL, path, NULL, 0, AIM_DIGEST_START, err, n, st, 0};
    if (!st || !(r.in = aim_lines_open(path, &header, err, n))) {
        if (!st)
            snprintf(err, n, "cannot read the state '%s': out of memory", path);
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
        if (!(st->arrays = layout(st->decomposition))) {
            snprintf(err, n, "%s: no student for decomposition = %s", path,
                     decomposition_names[st->decomposition]);
            ok = 0;
        } else if (!st->arrays->factored != (columns == 0)) {
            snprintf(err, n, "%s: columns = %ld for a %s student (0 for direct, >= 1 for the "
                             "factored ones)", path, columns,
                     decomposition_names[st->decomposition]);
            ok = 0;
        }
    }
    aim_lines_limits body;
    ok = ok && state_fits(&r, st, &body);
    ok = ok && read_matrix(&r, "teacher", st->d, st->d, &st->teacher) == 0;
    const int cols = ok && st->arrays->factored ? st->columns : st->d;
    for (int k = 0; ok && k < st->arrays->count; k++) {
        ok = read_matrix(&r, st->arrays->names[k], st->d, cols, &st->params[k]) == 0;
        st->len[k] = (size_t)st->d * (size_t)cols;
    }
    if (ok && (ok = next_line(&r, "the line 'end'") == 0) && (ok = !strcmp(r.line, "end")) == 0)
        snprintf(err, n, "%s:%ld: expected 'end' after the last matrix, found '%.60s'", path,
                 r.number, r.line);
    if (ok) {
        const int more = raw_line(&r);
        if (more > 0)
            snprintf(err, n, "%s:%ld: text after the line 'end'", path, r.number);
        ok = more == 0;
    }
    aim_lines_close(r.in);
    if (ok)
        aim_digest_text(r.digest, st->digest);
    if (!ok) {
        aim_state_free(st);
        return NULL;
    }
    return st;
}

int aim_state_check(const aim_state *st, const aim_config *cfg, int d, char *err, size_t n)
{
    /* used once the decompositions agree: then st's student is cfg's */
    const int p = st->arrays->factored ? aim_config_columns(&cfg->student, d) : 0;
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

const char *aim_state_config_lines(const aim_state *st)
{
    return st->config ? st->config : "";
}
uint64_t aim_state_seed(const aim_state *st) { return st->seed; }
double aim_state_tau(const aim_state *st) { return st->tau; }
long aim_state_step(const aim_state *st) { return st->step; }
const double *aim_state_teacher(const aim_state *st) { return st->teacher; }

int aim_state_params(const aim_state *st, const double *arrays[2], size_t len[2])
{
    for (int k = 0; k < st->arrays->count; k++) {
        arrays[k] = st->params[k];
        len[k] = st->len[k];
    }
    return st->arrays->count;
}
