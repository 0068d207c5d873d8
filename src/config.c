/* aim_config: INI reading, --set overrides, validation, metadata writing
 * and the key reference, all driven by one table of keys (keys[] below),
 * so that parsing, writing, --help and the checks cannot drift apart.
 * docs/config.md documents the same table for humans. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_linalg.h>
#include <gsl/gsl_matrix.h>
#include <ini.h>

#include "lines.h"

/* ------------------------------------------------------------------ */
/* Small helpers                                                       */
/* ------------------------------------------------------------------ */

#define WHY_SIZE 256   /* reason texts */
#define VALUE_SHOWN 160 /* longest value quoted in a message */

/* Bounds of the scale-type keys and of the blow-up level, derived in
 * theory/stops.md sec. 4: with scales and coefficients at most 1e6 and
 * order parameters at most 1e15, the expectation engine's largest
 * number stays below 1e150 and every rate below the largest double. */
#define SCALE_MAX 1e6
#define BLOWUP_MAX 1e15
#define SCALE_WHY                                                                  \
    "a variance scale; bounded so that every expectation stays finite up to the " \
    "blow-up level: theory/stops.md sec. 4"

static int lower(int c) { return (c >= 'A' && c <= 'Z') ? c - 'A' + 'a' : c; }

static bool same_word(const char *a, const char *b) /* ASCII, no case */
{
    while (*a && *b && lower((unsigned char)*a) == lower((unsigned char)*b)) {
        a++;
        b++;
    }
    return *a == '\0' && *b == '\0';
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' ||
           c == '\v';
}

static bool is_sep(char c) { return is_space(c) || c == ',' || c == ';'; }

/* Copies s[0..len) into buf (size n), trimmed, one layer of matching
 * double quotes removed. Returns -1 if it does not fit. */
static int clean_value(char *buf, size_t n, const char *s, size_t len)
{
    while (len > 0 && is_space(*s)) {
        s++;
        len--;
    }
    while (len > 0 && is_space(s[len - 1]))
        len--;
    if (len >= 2 && s[0] == '"' && s[len - 1] == '"') {
        s++;
        len -= 2;
    }
    if (len >= n)
        return -1;
    memcpy(buf, s, len);
    buf[len] = '\0';
    return 0;
}

__attribute__((format(printf, 3, 4))) static void
append(char *buf, size_t n, const char *fmt, ...)
{
    size_t used = strlen(buf);
    if (used + 1 >= n)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + used, n - used, fmt, ap);
    va_end(ap);
}

/* Appends a value in quotes, shortened if very long. */
static void append_value(char *buf, size_t n, const char *value)
{
    size_t len = strlen(value);
    if (len <= VALUE_SHOWN)
        append(buf, n, "\"%s\"", value);
    else
        append(buf, n, "\"%.*s...\" (%zu characters)", VALUE_SHOWN, value, len);
}

/* %.17g always reads back bit-identically; the shortest %.Ng (N <= 17)
 * that does so is used, so that 0.1 is written "0.1". */
static void fmt_real(char *buf, size_t n, double x)
{
    for (int prec = 1; prec < 17; prec++) {
        snprintf(buf, n, "%.*g", prec, x);
        if (strtod(buf, NULL) == x && signbit(strtod(buf, NULL)) == signbit(x))
            return;
    }
    snprintf(buf, n, "%.17g", x);
}

/* Whole-string finite real. */
static int parse_real(const char *s, double *out, char *why, size_t n)
{
    if (*s == '\0') {
        snprintf(why, n, "empty: not a number");
        return -1;
    }
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || is_space(*s)) {
        snprintf(why, n, "not a number");
        return -1;
    }
    if (!isfinite(v)) {
        snprintf(why, n, "not finite");
        return -1;
    }
    *out = v;
    return 0;
}

/* Splits a list of reals separated by spaces, commas or semicolons.
 * Returns the count, or -1 with why filled. */
static int parse_list(const char *s, double *vals, int max, char *why, size_t n)
{
    int count = 0;
    char tok[128];
    while (*s) {
        while (*s && is_sep(*s))
            s++;
        if (!*s)
            break;
        size_t len = 0;
        while (s[len] && !is_sep(s[len]))
            len++;
        if (len >= sizeof tok) {
            snprintf(why, n, "not a number: \"%.40s...\"", s);
            return -1;
        }
        memcpy(tok, s, len);
        tok[len] = '\0';
        s += len;
        if (count >= max) {
            snprintf(why, n, "too many numbers (at most %d)", max);
            return -1;
        }
        char sub[WHY_SIZE];
        if (parse_real(tok, &vals[count], sub, sizeof sub) != 0) {
            snprintf(why, n, "%s: \"%s\"", sub, tok);
            return -1;
        }
        count++;
    }
    if (count == 0) {
        snprintf(why, n, "no numbers given");
        return -1;
    }
    return count;
}

/* ------------------------------------------------------------------ */
/* The key table                                                       */
/* ------------------------------------------------------------------ */

typedef struct {
    const char *name;
    int value;
} enum_name;

typedef struct key_def key_def;
/* A setter parses text into cfg (0), or fills why and returns -1
 * (cfg then possibly partly changed: callers work on copies). */
typedef int (*key_setter)(const key_def *k, aim_config *cfg, const char *text,
                          char *why, size_t n);
/* A getter formats the current value so that the setter reads it back
 * bit-identically. */
typedef void (*key_getter)(const key_def *k, const aim_config *cfg, char *buf,
                           size_t n);

enum {
    LO_OPEN = 1,  /* lower bound excluded */
    HI_OPEN = 2,  /* upper bound excluded */
    NO_LO = 4,    /* no lower bound */
    NO_HI = 8,    /* no upper bound */
    ZERO_OK = 16, /* 0 allowed besides the range (0 = automatic) */
};

struct key_def {
    const char *section;
    const char *key;
    const char *def;     /* default, as text (applied through the setter) */
    const char *allowed; /* allowed values, as text */
    const char *help;
    key_setter set;
    key_getter get;
    size_t offset;       /* field in aim_config (generic setters) */
    size_t size;         /* strings: buffer size */
    double lo, hi;       /* numeric range */
    unsigned flags;
    const enum_name *names; /* enums */
};

#define FIELD(ptr, k, type) ((type *)((char *)(ptr) + (k)->offset))
#define CFIELD(ptr, k, type) ((const type *)((const char *)(ptr) + (k)->offset))

static int range_ok(const key_def *k, double v)
{
    if (v == 0.0 && (k->flags & ZERO_OK))
        return 1;
    if (!(k->flags & NO_LO)) {
        if ((k->flags & LO_OPEN) ? !(v > k->lo) : !(v >= k->lo))
            return 0;
    }
    if (!(k->flags & NO_HI)) {
        if ((k->flags & HI_OPEN) ? !(v < k->hi) : !(v <= k->hi))
            return 0;
    }
    return 1;
}

/* --- generic kinds --- */

static int set_real(const key_def *k, aim_config *cfg, const char *text,
                    char *why, size_t n)
{
    double v;
    if (parse_real(text, &v, why, n) != 0)
        return -1;
    if (!range_ok(k, v)) {
        snprintf(why, n, "out of range");
        return -1;
    }
    *FIELD(cfg, k, double) = v;
    return 0;
}

static void get_real(const key_def *k, const aim_config *cfg, char *buf, size_t n)
{
    fmt_real(buf, n, *CFIELD(cfg, k, double));
}

static int set_int(const key_def *k, aim_config *cfg, const char *text,
                   char *why, size_t n)
{
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (*text == '\0' || is_space(*text) || end == text || *end != '\0') {
        double dummy;
        char sub[WHY_SIZE];
        if (parse_real(text, &dummy, sub, sizeof sub) == 0)
            snprintf(why, n, "not an integer");
        else
            snprintf(why, n, "not an integer (%s)", sub);
        return -1;
    }
    if (errno == ERANGE || !range_ok(k, (double)v)) {
        snprintf(why, n, "out of range");
        return -1;
    }
    *FIELD(cfg, k, int) = (int)v;
    return 0;
}

static void get_int(const key_def *k, const aim_config *cfg, char *buf, size_t n)
{
    snprintf(buf, n, "%d", *CFIELD(cfg, k, int));
}

static int set_u64(const key_def *k, aim_config *cfg, const char *text,
                   char *why, size_t n)
{
    char *end;
    errno = 0;
    if (*text == '-') {
        snprintf(why, n, "out of range");
        return -1;
    }
    unsigned long long v = strtoull(text, &end, 10);
    if (*text == '\0' || is_space(*text) || *text == '+' || end == text ||
        *end != '\0') {
        snprintf(why, n, "not an unsigned integer");
        return -1;
    }
    if (errno == ERANGE) {
        snprintf(why, n, "out of range");
        return -1;
    }
    *FIELD(cfg, k, uint64_t) = (uint64_t)v;
    return 0;
}

static void get_u64(const key_def *k, const aim_config *cfg, char *buf, size_t n)
{
    snprintf(buf, n, "%" PRIu64, *CFIELD(cfg, k, uint64_t));
}

static int set_bool(const key_def *k, aim_config *cfg, const char *text,
                    char *why, size_t n)
{
    static const char *yes[] = {"true", "yes", "1"};
    static const char *no[] = {"false", "no", "0"};
    for (int i = 0; i < 3; i++) {
        if (same_word(text, yes[i])) {
            *FIELD(cfg, k, int) = 1;
            return 0;
        }
        if (same_word(text, no[i])) {
            *FIELD(cfg, k, int) = 0;
            return 0;
        }
    }
    snprintf(why, n, "not a boolean");
    return -1;
}

static void get_bool(const key_def *k, const aim_config *cfg, char *buf, size_t n)
{
    snprintf(buf, n, "%s", *CFIELD(cfg, k, int) ? "true" : "false");
}

static int set_enum(const key_def *k, aim_config *cfg, const char *text,
                    char *why, size_t n)
{
    for (const enum_name *e = k->names; e->name; e++) {
        if (same_word(text, e->name)) {
            *FIELD(cfg, k, int) = e->value;
            return 0;
        }
    }
    snprintf(why, n, "unknown value");
    return -1;
}

static void get_enum(const key_def *k, const aim_config *cfg, char *buf, size_t n)
{
    int v = *CFIELD(cfg, k, int);
    for (const enum_name *e = k->names; e->name; e++) {
        if (e->value == v) {
            snprintf(buf, n, "%s", e->name);
            return;
        }
    }
    snprintf(buf, n, "(invalid %d)", v);
}

static int set_string(const key_def *k, aim_config *cfg, const char *text,
                      char *why, size_t n)
{
    size_t len = strlen(text);
    if (len == 0) {
        snprintf(why, n, "empty");
        return -1;
    }
    if (len >= k->size) {
        snprintf(why, n, "too long (at most %zu characters)", k->size - 1);
        return -1;
    }
    for (size_t i = 0; i < len; i++) {
        if ((unsigned char)text[i] < 0x20 || text[i] == 0x7f) {
            snprintf(why, n, "control character not allowed");
            return -1;
        }
        /* in a file this would start an inline comment */
        if (text[i] == ';' && i > 0 && is_space(text[i - 1])) {
            snprintf(why, n, "';' after a space not allowed");
            return -1;
        }
    }
    memcpy(FIELD(cfg, k, char), text, len + 1);
    return 0;
}

/* Strings are quoted when the INI reader would otherwise change them. */
static void get_string(const key_def *k, const aim_config *cfg, char *buf, size_t n)
{
    const char *s = CFIELD(cfg, k, char);
    size_t len = strlen(s);
    bool quote = len == 0 || is_space(s[0]) || is_space(s[len - 1]) ||
                 s[0] == '"' || strchr(s, ';') != NULL;
    snprintf(buf, n, quote ? "\"%s\"" : "%s", s);
}

/* --- custom keys --- */

static const enum_name decomposition_names[] = {
    {"direct", AIM_DIRECT}, {"tied", AIM_TIED}, {"untied", AIM_UNTIED}, {NULL, 0}};
static const enum_name centring_names[] = {
    {"centred", AIM_CENTRED}, {"raw", AIM_RAW}, {NULL, 0}};
static const enum_name output_names[] = {
    {"elementwise", AIM_ELEMENTWISE}, {"softmax", AIM_SOFTMAX}, {NULL, 0}};
static const enum_name grid_names[] = {
    {"linear", AIM_GRID_LINEAR}, {"log", AIM_GRID_LOG}, {NULL, 0}};
static const enum_name rule_names[] = {
    {"auto", AIM_RULE_AUTO}, {"generic", AIM_RULE_GENERIC}, {NULL, 0}};
static const enum_name closure_names[] = {{"aligned", AIM_CLOSURE_ALIGNED},
                                          {"cumulant", AIM_CLOSURE_CUMULANT},
                                          {"free", AIM_CLOSURE_FREE},
                                          {"initial", AIM_CLOSURE_INITIAL},
                                          {NULL, 0}};
static const enum_name start_names[] = {
    {"exact", AIM_START_EXACT}, {"seed", AIM_START_SEED}, {NULL, 0}};
static const enum_name mean_names[] = {
    {"stiff", AIM_MEAN_STIFF}, {"adiabatic", AIM_MEAN_ADIABATIC}, {NULL, 0}};
static const enum_name solver_names[] = {{"auto", AIM_SOLVER_AUTO},
                                         {"dense", AIM_SOLVER_DENSE},
                                         {"krylov", AIM_SOLVER_KRYLOV},
                                         {NULL, 0}};
static const enum_name method_names[] = {
    {"auto", AIM_METHOD_AUTO}, {"matrix", AIM_METHOD_MATRIX}, {NULL, 0}};

/* model.decomposition is the student's: kept in both places. */
static int set_model_decomposition(const key_def *k, aim_config *cfg,
                                   const char *text, char *why, size_t n)
{
    if (set_enum(k, cfg, text, why, n) != 0)
        return -1;
    cfg->student.decomposition = cfg->decomposition;
    cfg->student.mean = 0.0;
    return 0;
}

static void set_hermite_unit(aim_config *cfg, int degree)
{
    for (int i = 0; i < AIM_MAX_HERMITE; i++)
        cfg->hermite[i] = (i == degree) ? 1.0 : 0.0;
    cfg->hermite_degree = degree;
}

static int hermite_unit_degree(const aim_config *cfg) /* e_N -> N, else -1 */
{
    int deg = cfg->hermite_degree;
    if (deg < 1 || deg > 4 || cfg->hermite[deg] != 1.0)
        return -1;
    for (int i = 0; i < AIM_MAX_HERMITE; i++)
        if (i != deg && cfg->hermite[i] != 0.0)
            return -1;
    return deg;
}

static int set_activation(const key_def *k, aim_config *cfg, const char *text,
                          char *why, size_t n)
{
    (void)k;
    static const char *he[] = {"he1", "he2", "he3", "he4"};
    for (int i = 0; i < 4; i++) {
        if (same_word(text, he[i])) {
            cfg->activation = AIM_ACT_HERMITE;
            set_hermite_unit(cfg, i + 1);
            return 0;
        }
    }
    static const enum_name names[] = {{"hermite", AIM_ACT_HERMITE},
                                      {"tanh", AIM_ACT_TANH},
                                      {"erf", AIM_ACT_ERF},
                                      {"relu", AIM_ACT_RELU},
                                      {NULL, 0}};
    for (const enum_name *e = names; e->name; e++) {
        if (same_word(text, e->name)) {
            cfg->activation = (aim_activation)e->value;
            return 0;
        }
    }
    snprintf(why, n, "unknown value");
    return -1;
}

static void get_activation(const key_def *k, const aim_config *cfg, char *buf,
                           size_t n)
{
    (void)k;
    switch (cfg->activation) {
    case AIM_ACT_HERMITE: {
        int deg = hermite_unit_degree(cfg);
        if (deg > 0)
            snprintf(buf, n, "he%d", deg);
        else
            snprintf(buf, n, "hermite");
        return;
    }
    case AIM_ACT_TANH: snprintf(buf, n, "tanh"); return;
    case AIM_ACT_ERF: snprintf(buf, n, "erf"); return;
    case AIM_ACT_RELU: snprintf(buf, n, "relu"); return;
    }
    snprintf(buf, n, "(invalid %d)", (int)cfg->activation);
}

static int set_hermite(const key_def *k, aim_config *cfg, const char *text,
                       char *why, size_t n)
{
    (void)k;
    double c[AIM_MAX_HERMITE];
    int count = parse_list(text, c, AIM_MAX_HERMITE, why, n);
    if (count < 0)
        return -1;
    int degree = -1;
    for (int i = 0; i < count; i++)
        if (c[i] != 0.0)
            degree = i;
    if (degree < 0) {
        snprintf(why, n, "all coefficients are zero");
        return -1;
    }
    for (int i = 0; i < count; i++)
        if (fabs(c[i]) > SCALE_MAX) {
            snprintf(why, n, "coefficient c%d = %g is larger than 1e6 in size", i, c[i]);
            return -1;
        }
    for (int i = 0; i < AIM_MAX_HERMITE; i++)
        cfg->hermite[i] = i < count ? c[i] : 0.0;
    cfg->hermite_degree = degree;
    return 0;
}

static void get_hermite(const key_def *k, const aim_config *cfg, char *buf,
                        size_t n)
{
    (void)k;
    buf[0] = '\0';
    int last = cfg->hermite_degree;
    if (last < 0 || last >= AIM_MAX_HERMITE)
        last = AIM_MAX_HERMITE - 1;
    for (int i = 0; i <= last; i++) {
        char num[40];
        fmt_real(num, sizeof num, cfg->hermite[i]);
        append(buf, n, "%s%s", i ? " " : "", num);
    }
}

/* Covariance text -> matrix. tokens < 0: check what does not depend on
 * the number of tokens (explicit matrices are checked completely, at
 * their own size). Returns 0, or -1 with why filled. norm (may be NULL)
 * receives the normalised text. */
static int covariance_parse(const char *text, int tokens, double *cov,
                            char *norm, size_t norm_n, char *why, size_t n)
{
    static const char equi[] = "equicorrelated:";
    if (same_word(text, "identity")) {
        if (norm)
            snprintf(norm, norm_n, "identity");
        if (cov && tokens > 0)
            for (int a = 0; a < tokens; a++)
                for (int b = 0; b < tokens; b++)
                    cov[a * tokens + b] = (a == b) ? 1.0 : 0.0;
        return 0;
    }

    double vals[AIM_MAX_TOKENS * AIM_MAX_TOKENS];
    int T;
    size_t elen = sizeof equi - 1;
    bool is_equi = strlen(text) >= elen;
    for (size_t i = 0; is_equi && i < elen; i++)
        if (lower((unsigned char)text[i]) != equi[i])
            is_equi = false;
    if (is_equi) {
        char rtext[128];
        if (clean_value(rtext, sizeof rtext, text + elen, strlen(text + elen)) != 0) {
            snprintf(why, n, "equicorrelated:R: R is not a number");
            return -1;
        }
        double R;
        char sub[WHY_SIZE];
        if (parse_real(rtext, &R, sub, sizeof sub) != 0) {
            snprintf(why, n, "equicorrelated:R: R is %s", sub);
            return -1;
        }
        if (!(R < 1.0) || !(R > -1.0)) {
            snprintf(why, n, "equicorrelated:R needs -1/(T-1) < R < 1");
            return -1;
        }
        if (tokens > 1 && !(R > -1.0 / (tokens - 1))) {
            snprintf(why, n,
                     "equicorrelated:R needs R > -1/(T-1) = %.6g for T = %d "
                     "(model.tokens)",
                     -1.0 / (tokens - 1), tokens);
            return -1;
        }
        if (norm) {
            char num[40];
            fmt_real(num, sizeof num, R);
            snprintf(norm, norm_n, "equicorrelated:%s", num);
        }
        if (tokens < 0)
            return 0;
        T = tokens;
        for (int a = 0; a < T; a++)
            for (int b = 0; b < T; b++)
                vals[a * T + b] = (a == b) ? 1.0 : R;
    } else {
        int count = parse_list(text, vals, AIM_MAX_TOKENS * AIM_MAX_TOKENS, why, n);
        if (count < 0) {
            char sub[WHY_SIZE];
            snprintf(sub, sizeof sub, "%s", why);
            snprintf(why, n, "not identity, equicorrelated:R or a list of numbers (%s)",
                     sub);
            return -1;
        }
        T = 1;
        while (T * T < count)
            T++;
        if (T * T != count) {
            snprintf(why, n, "%d numbers do not form a square matrix", count);
            return -1;
        }
        if (tokens > 0 && T != tokens) {
            snprintf(why, n,
                     "%d numbers given, but model.tokens = %d needs %d (T*T)",
                     count, tokens, tokens * tokens);
            return -1;
        }
        for (int a = 0; a < T; a++) {
            char x[40], y[40];
            if (vals[a * T + a] != 1.0) {
                fmt_real(x, sizeof x, vals[a * T + a]);
                snprintf(why, n, "diagonal entry (%d,%d) is %s, not 1", a + 1,
                         a + 1, x);
                return -1;
            }
            for (int b = 0; b < a; b++) {
                if (vals[a * T + b] != vals[b * T + a]) {
                    fmt_real(x, sizeof x, vals[a * T + b]);
                    fmt_real(y, sizeof y, vals[b * T + a]);
                    snprintf(why, n,
                             "not symmetric: entry (%d,%d) = %s but (%d,%d) = %s",
                             a + 1, b + 1, x, b + 1, a + 1, y);
                    return -1;
                }
            }
        }
        if (norm) {
            norm[0] = '\0';
            for (int i = 0; i < count; i++) {
                char num[40];
                fmt_real(num, sizeof num, vals[i]);
                append(norm, norm_n, "%s%s", i ? " " : "", num);
            }
        }
    }

    /* Positive definiteness: Cholesky. */
    gsl_matrix *m = gsl_matrix_alloc((size_t)T, (size_t)T);
    if (!m) {
        snprintf(why, n, "out of memory");
        return -1;
    }
    for (int a = 0; a < T; a++)
        for (int b = 0; b < T; b++)
            gsl_matrix_set(m, (size_t)a, (size_t)b, vals[a * T + b]);
    gsl_error_handler_t *old = gsl_set_error_handler_off();
    int status = gsl_linalg_cholesky_decomp1(m);
    gsl_set_error_handler(old);
    gsl_matrix_free(m);
    if (status != GSL_SUCCESS) {
        snprintf(why, n, "not positive definite");
        return -1;
    }
    if (cov && tokens > 0)
        memcpy(cov, vals, sizeof(double) * (size_t)(T * T));
    return 0;
}

static int set_covariance(const key_def *k, aim_config *cfg, const char *text,
                          char *why, size_t n)
{
    (void)k;
    char norm[sizeof cfg->covariance];
    if (covariance_parse(text, -1, NULL, norm, sizeof norm, why, n) != 0)
        return -1;
    memcpy(cfg->covariance, norm, sizeof norm);
    return 0;
}

static void get_covariance(const key_def *k, const aim_config *cfg, char *buf,
                           size_t n)
{
    (void)k;
    snprintf(buf, n, "%s", cfg->covariance);
}

static int set_name(const key_def *k, aim_config *cfg, const char *text,
                    char *why, size_t n)
{
    for (const char *p = text; *p; p++) {
        char c = *p;
        bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                  (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
        if (!ok) {
            snprintf(why, n, "character '%c' not allowed", c);
            return -1;
        }
    }
    return set_string(k, cfg, text, why, n);
}

/* gnuplot runs a file name that starts with '|' or '<' as a shell
 * command, and the figures get their names from output.dir */
static int set_dir(const key_def *k, aim_config *cfg, const char *text, char *why, size_t n)
{
    if (text[0] == '|' || text[0] == '<') {
        snprintf(why, n, "starts with '%c', which gnuplot would run as a shell command",
                 text[0]);
        return -1;
    }
    return set_string(k, cfg, text, why, n);
}

/* --- the table --- */


#define REAL(sec, key, field, def, lo, hi, flags, allowed, help)                \
    {sec, key, def, allowed, help, set_real, get_real,                        \
     offsetof(aim_config, field), 0, lo, hi, flags, NULL}
#define INT(sec, key, field, def, lo, hi, flags, allowed, help)                 \
    {sec, key, def, allowed, help, set_int, get_int,                          \
     offsetof(aim_config, field), 0, lo, hi, flags, NULL}
#define BOOL(sec, key, field, def, help)                                        \
    {sec, key, def, "true | false (also yes | no, 1 | 0)", help, set_bool,    \
     get_bool, offsetof(aim_config, field), 0, 0, 0, 0, NULL}
#define ENUM(sec, key, field, def, names, allowed, help)                        \
    {sec, key, def, allowed, help, set_enum, get_enum,                        \
     offsetof(aim_config, field), 0, 0, 0, 0, names}
#define CUSTOM(sec, key, def, setter, getter, allowed, help)                    \
    {sec, key, def, allowed, help, setter, getter, 0, 0, 0, 0, 0, NULL}

static const key_def keys[] = {
    /* [model] */
    {"model", "decomposition", "direct", "direct | tied | untied",
     "student attention: S, W W^T or U V^T",
     set_model_decomposition, get_enum, offsetof(aim_config, decomposition), 0,
     0, 0, 0, decomposition_names},
    INT("model", "tokens", tokens, "2", 1, AIM_MAX_TOKENS, 0,
        "an integer in 1..8", "T, tokens per sample"),
    CUSTOM("model", "covariance", "identity", set_covariance, get_covariance,
           "identity | equicorrelated:R with -1/(T-1) < R < 1 | T*T numbers "
           "(row-major, separated by spaces, commas or semicolons): "
           "symmetric, unit diagonal, positive definite",
           "token covariance C (E[x_a x_b^T] = C_ab I)"),
    ENUM("model", "centring", centring, "centred", centring_names,
         "centred | raw",
         "indices h_ab = (x_a^T S x_b - c C_ab Tr S)/sqrt d with c = 1 "
         "(centred) or c = 0 (raw: the index mean Tr S/sqrt d is tracked)"),
    ENUM("model", "output", output, "elementwise", output_names,
         "elementwise | softmax",
         "output map f: sigma on every index, or row softmax"),
    CUSTOM("model", "activation", "hermite", set_activation, get_activation,
           "he1 | he2 | he3 | he4 | hermite | tanh | erf | relu",
           "sigma for elementwise outputs; heN sets model.hermite to the unit "
           "vector e_N, hermite uses model.hermite"),
    CUSTOM("model", "hermite", "0 1 0.70710678118654752", set_hermite,
           get_hermite,
           "1 to 9 real numbers c0 .. c8 (separated by spaces, commas or "
           "semicolons), not all zero, each at most 1e6 in size (theory/stops.md sec. 4)",
           "sigma = sum_k c_k He_k (probabilists' Hermite); used when "
           "model.activation = hermite or heN"),
    REAL("model", "beta", beta, "1", 0, 0, LO_OPEN | NO_HI,
         "a real number > 0", "softmax inverse temperature"),
    REAL("model", "noise", noise, "0", 0, SCALE_MAX, 0,
         "a real number in [0, 1e6] (a variance; bounded so that every expectation "
         "stays finite up to the blow-up level: theory/stops.md sec. 4)",
         "label noise variance Delta"),

    /* [student] */
    BOOL("student", "symmetric", student.symmetric, "false",
         "direct only: keep S symmetric"),
    REAL("student", "rho", student.rho, "1", 0, 0, LO_OPEN | NO_HI,
         "a real number > 0", "tied/untied width: p = round(rho d) columns"),
    REAL("student", "scale", student.scale, "0.25", 0, SCALE_MAX, LO_OPEN,
         "a real number in (0, 1e6] (" SCALE_WHY ")", "init scale v: entries N(0, v/d)"),
    REAL("student", "scale_v", student.scale_v, "0", 0, SCALE_MAX, LO_OPEN | ZERO_OK,
         "0 (the same as student.scale) or a real number in (0, 1e6] (" SCALE_WHY ")",
         "untied: init scale v_V of V (U uses student.scale); unequal scales "
         "make the balance condition of hierarchy.balance hold"),

    /* [teacher] */
    ENUM("teacher", "decomposition", teacher.decomposition, "direct",
         decomposition_names, "direct | tied | untied",
         "teacher S*: direct, W W^T or U V^T"),
    BOOL("teacher", "symmetric", teacher.symmetric, "false",
         "direct only: symmetric S*"),
    REAL("teacher", "rho", teacher.rho, "1", 0, 0, LO_OPEN | NO_HI,
         "a real number > 0", "tied/untied width: p* = round(rho d) columns"),
    REAL("teacher", "scale", teacher.scale, "1", 0, SCALE_MAX, LO_OPEN,
         "a real number in (0, 1e6] (" SCALE_WHY ")", "scale v*: entries N(0, v*/d)"),
    REAL("teacher", "mean", teacher.mean, "0", 0, 0, NO_LO | NO_HI,
         "a real number (non-zero only with model.centring = raw)",
         "teacher mean m*: adds (m*/sqrt d) I to S*"),

    /* [training] */
    REAL("training", "eta", eta, "0.1", 0, 0, LO_OPEN | NO_HI,
         "a real number > 0", "learning rate: SGD steps of eta/d"),
    REAL("training", "gamma", gamma, "0", 0, SCALE_MAX, 0,
         "a real number in [0, 1e6] (a decay rate per unit tau; bounded so that every "
         "rate stays finite up to the blow-up level: theory/stops.md sec. 4)",
         "weight decay (gamma/d)"),
    REAL("training", "horizon", horizon, "0.3", 0, 0, LO_OPEN | NO_HI,
         "a real number > 0", "tau_max, in slow time tau = n eta / d^2"),
    INT("training", "points", points, "31", 2, 100000, 0,
        "an integer in 2..100000", "points of the tau grid (output and SGD "
        "measurements), tau = 0 included"),
    ENUM("training", "grid", grid, "linear", grid_names, "linear | log",
         "tau grid: linear, or 0 then geometric from training.grid_start"),
    REAL("training", "grid_start", grid_start, "0.001", 0, 0, LO_OPEN | NO_HI,
         "a real number > 0 (and < training.horizon for a log grid)",
         "first positive tau of a log grid"),

    /* [ode] */
    REAL("ode", "rtol", rtol, "1e-6", 1e-14, 1e-1, 0,
         "a real number in [1e-14, 0.1]", "relative tolerance of the integrator"),
    REAL("ode", "atol", atol, "1e-9", 1e-16, 1, 0, "a real number in [1e-16, 1]",
         "absolute tolerance of the integrator"),
    INT("ode", "quad_nodes", quad_nodes, "0", 2, 64, ZERO_OK,
        "0 (automatic) or an integer in 2..64 (>= 2 x Hermite degree)",
        "Gauss-Hermite nodes per dimension (elementwise outputs)"),
    INT("ode", "qmc_points", qmc_points, "16384", 256, 4194304, 0,
        "an integer in 256..4194304", "quasi-random points (row softmax)"),
    REAL("ode", "kernel_tol", kernel_tol, "0", 1e-6, 0.1, ZERO_OK,
         "0 (use ode.qmc_points) or a real number in [1e-6, 0.1]",
         "relative kernel error of the quasi-random rule: its point count is "
         "chosen for it at the start (1024 x 4^k points)"),
    REAL("ode", "d", ode_d, "0", 1, 0, ZERO_OK | NO_HI,
         "0 (take sgd.d) or a real number >= 1",
         "finite d of the stiff raw-mode mean equation"),
    REAL("ode", "blowup", blowup, "10000", 0, BLOWUP_MAX, LO_OPEN,
         "a real number in (0, 1e15] (at |order parameter| = 1e15 the largest "
         "expectation, of a degree-8 Hermite map, is about 1e146, and every rate stays "
         "far below the largest double: theory/stops.md sec. 4)",
         "|order parameter| above which a run counts as blown up"),
    ENUM("ode", "rule", rule, "auto", rule_names, "auto | generic",
         "expectation rule: auto (Gauss-Hermite for smooth elementwise maps, "
         "quasi-random otherwise) or generic (quasi-random for every map)"),
    ENUM("ode", "linear_solver", solver, "auto", solver_names, "auto | dense | krylov",
         "linear solver of the integrator's Newton iterations: dense LU with a "
         "finite-difference Jacobian, or matrix-free GMRES (CVODE SPGMR); auto takes "
         "dense up to 150 equations and GMRES above (sim/ode.c)"),
    ENUM("ode", "method", method, "auto", method_names, "auto | matrix",
         "auto: the closed ODE (direct) or the moment hierarchy truncated at "
         "hierarchy.order (tied, untied); matrix: the limit process simulated with "
         "matrices of dimension matrix.d, every moment at once, no truncation "
         "(theory/matrix.md; centred indices)"),

    /* [matrix] */
    INT("matrix", "d", matrix_d, "400", 16, 4000, 0, "an integer in 16..4000",
        "ode.method = matrix: dimension D of the simulated matrices (error O(1/D), "
        "cost O(D^3) per step)"),
    INT("matrix", "replicas", replicas, "4", 1, 1000, 0, "an integer in 1..1000",
        "ode.method = matrix: independent runs averaged; replica r starts from the "
        "initial matrices of SGD seed sgd.seed + r at d = matrix.d"),
    REAL("matrix", "dtau", matrix_dtau, "0", 0, 0, ZERO_OK | LO_OPEN | NO_HI,
         "0 (training.horizon / 512) or a real number > 0",
         "ode.method = matrix: Euler-Maruyama time step in tau (error O(dtau))"),

    /* [hierarchy] */
    INT("hierarchy", "order", order, "4", 1, 10, 0, "an integer in 1..10",
        "tied and untied: truncation order M, the longest tracked word "
        "(theory/tied.md, theory/untied.md)"),
    ENUM("hierarchy", "closure", closure, "aligned", closure_names,
         "aligned | cumulant | free | initial",
         "tied (untied: theory/untied.md sec. 5): words longer than M get: "
         "aligned = the mixed free cumulants "
         "of S = c S* + X, X free from S*, c the spectral regression "
         "coefficient; cumulant = mixed free cumulants above M set to 0; "
         "free = their value if S and S* were free; initial = their value "
         "at tau = 0"),
    ENUM("hierarchy", "start", start, "exact", start_names, "exact | seed",
         "tied and untied: initial moments: exact large-d values of the Gaussian start, "
         "or measured from the initial matrices of SGD seed sgd.seed at sgd.d"),
    ENUM("hierarchy", "mean", mean_mode, "stiff", mean_names, "stiff | adiabatic",
         "untied, raw centring: the fast mean integrated with the moments at "
         "the finite d of ode.d (0: --d or sgd.d) (stiff), or on its critical "
         "manifold dR/dm = 0 "
         "after a fast phase with frozen moments (adiabatic limit)"),
    REAL("hierarchy", "tol", tol, "0.05", 0, 1, ZERO_OK,
         "0 (never stop) or a real number in [0, 1]",
         "tied and untied, M >= 3: the run stops where the truncation error estimate, "
         "|overlap_M - overlap_(M-1)| or |risk_M - risk_(M-1)| / risk_M, first exceeds "
         "it (columns overlap_trunc, risk_trunc; theory/matrix.md sec. 6)"),
    REAL("hierarchy", "balance", balance, "0.01", 0, 0, NO_HI,
         "a real number >= 0",
         "untied: c_bal of the balance condition |tA_k(0) - tB_k(0)| >= c_bal "
         "(k = 1..M, tA_k = m((U U^T)^k), tB_k = m((V V^T)^k)); violations are "
         "warned about, not refused"),

    /* [sgd] */
    INT("sgd", "d", d, "200", 8, 20000, 0, "an integer in 8..20000",
        "embedding dimension d of the SGD runs"),
    INT("sgd", "seeds", seeds, "8", 1, 1000, 0, "an integer in 1..1000",
        "independent runs (fresh teacher, init and data each)"),
    {"sgd", "seed", "1", "an unsigned 64-bit integer (0..18446744073709551615)",
     "base seed; run i uses seed + i", set_u64, get_u64, offsetof(aim_config, seed),
     0, 0, 0, 0, NULL},
    INT("sgd", "block", block, "64", 1, 1024, 0, "an integer in 1..1024",
        "SGD steps unrolled per block (1 = plain steps; same trajectory)"),
    INT("sgd", "holdout", holdout, "2000", 2, 1000000, 0, "an integer in 2..1000000",
        "held-out samples per seed, drawn once from a stream of their own, on which "
        "the risk is measured (theory/measurement.md)"),

    /* [output] */
    {"output", "dir", "out",
     "a directory path (non-empty, < 512 characters, not starting with '|' or '<', "
     "no ';' after a space)",
     "output directory (created if needed)", set_dir, get_string,
     offsetof(aim_config, dir), sizeof(((aim_config *)0)->dir), 0, 0, 0, NULL},
    {"output", "name", "aimdyn",
     "non-empty, only letters, digits and . _ - (< 128 characters)",
     "file stem of the results", set_name, get_string,
     offsetof(aim_config, name), sizeof(((aim_config *)0)->name), 0, 0, 0, NULL},
    REAL("output", "recovery_threshold", recovery_threshold, "0.1", 0, 1, LO_OPEN,
         "a real number in (0, 1] (|overlap| is a cosine, at most 1)",
         "weak recovery: the first tau at which |teacher overlap| reaches this "
         "(ODE, SGD, recovery, scaling and sweep alike)"),
};

#define NKEYS ((int)(sizeof keys / sizeof keys[0]))
_Static_assert(sizeof keys / sizeof keys[0] <= AIM_CONFIG_MAX_KEYS,
               "raise AIM_CONFIG_MAX_KEYS");

static const char *const sections[] = {"model", "training",  "student", "teacher",
                                       "ode",   "matrix",    "hierarchy", "sgd",
                                       "output"};
#define NSECTIONS ((int)(sizeof sections / sizeof sections[0]))

static bool known_section(const char *s)
{
    for (int i = 0; i < NSECTIONS; i++)
        if (strcmp(s, sections[i]) == 0)
            return true;
    return false;
}

/* Appends " model, training, ..." (the sections a file may have). */
static void append_sections(char *msg, size_t n)
{
    for (int i = 0; i < NSECTIONS; i++)
        append(msg, n, "%s %s", i ? "," : "", sections[i]);
}

static int find_key(const char *section, const char *key)
{
    for (int i = 0; i < NKEYS; i++)
        if (strcmp(keys[i].section, section) == 0 && strcmp(keys[i].key, key) == 0)
            return i;
    return -1;
}

static int key_index(const char *section, const char *key) /* must exist */
{
    int i = find_key(section, key);
    if (i < 0)
        abort();
    return i;
}

/* ------------------------------------------------------------------ */
/* Assignment (shared by files and --set)                              */
/* ------------------------------------------------------------------ */

/* Applies section.key = value. where: message prefix (without ": ").
 * On error fills msg (size n) and returns -1; on success returns the key
 * index. */
static int assign(aim_config *cfg, const char *section, const char *key,
                  const char *value, const char *where, char *msg, size_t n)
{
    msg[0] = '\0';
    if (!known_section(section)) {
        append(msg, n, "%s: [%s] %s = ", where, section, key);
        append_value(msg, n, value);
        append(msg, n, ": unknown section \"%s\"; allowed sections:", section);
        append_sections(msg, n);
        return -1;
    }
    int i = find_key(section, key);
    if (i < 0) {
        append(msg, n, "%s: %s.%s = ", where, section, key);
        append_value(msg, n, value);
        append(msg, n, ": unknown key \"%s\" in [%s]; allowed keys:", key, section);
        int first = 1;
        for (int j = 0; j < NKEYS; j++) {
            if (strcmp(keys[j].section, section) == 0) {
                append(msg, n, "%s %s", first ? "" : ",", keys[j].key);
                first = 0;
            }
        }
        return -1;
    }
    char why[WHY_SIZE];
    why[0] = '\0';
    if (keys[i].set(&keys[i], cfg, value, why, sizeof why) != 0) {
        append(msg, n, "%s: %s.%s = ", where, section, key);
        append_value(msg, n, value);
        append(msg, n, ": %s; allowed: %s", why, keys[i].allowed);
        return -1;
    }
    return i;
}

static void set_error(aim_config_error *err, const char *msg)
{
    if (err)
        snprintf(err->message, sizeof err->message, "%s", msg);
}

__attribute__((format(printf, 2, 3))) static void
errorf(aim_config_error *err, const char *fmt, ...)
{
    if (!err)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
}

/* ------------------------------------------------------------------ */
/* Defaults                                                            */
/* ------------------------------------------------------------------ */

void aim_config_defaults(aim_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    for (int i = 0; i < NKEYS; i++) {
        char why[WHY_SIZE];
        if (keys[i].set(&keys[i], cfg, keys[i].def, why, sizeof why) != 0) {
            fprintf(stderr, "aimdyn: bad built-in default %s.%s = \"%s\": %s\n",
                    keys[i].section, keys[i].key, keys[i].def, why);
            abort();
        }
        cfg->key_line[i] = 0;
    }
    char why[WHY_SIZE];
    if (covariance_parse(cfg->covariance, cfg->tokens, cfg->cov, NULL, 0, why,
                         sizeof why) != 0)
        abort();
    snprintf(cfg->source, sizeof cfg->source, "built-in default");
}

/* ------------------------------------------------------------------ */
/* Files                                                               */
/* ------------------------------------------------------------------ */

typedef struct {
    aim_config *cfg;
    const char *path;
    aim_lines *in;
    const char *text; /* the current line, for messages */
    size_t len, left; /* its length, and how much inih has not had yet */
    bool newline;     /* its line break is still to be handed over */
    int line;         /* its number */
    int cov_line;     /* line of the last model.covariance, 0 if none */
    bool failed;
    char message[sizeof(((aim_config_error *)0)->message)];
} parse_ctx;

/* Debian's libinih is built without INI_CALL_HANDLER_ON_NEW_SECTION: a
 * section header reaches the handler only through the keys under it, so
 * an unknown section without keys would pass unseen. The reader sees
 * every line and checks the headers itself, finding the name as inih
 * does: after '[' up to ']', unless an inline comment (" ;") comes
 * first (then inih reports the line as a syntax error). */
static int check_section_header(parse_ctx *ctx, const char *line)
{
    const char *s = line;
    if (ctx->line == 1 && !strncmp(s, "\xEF\xBB\xBF", 3)) /* a UTF-8 BOM, as inih */
        s += 3;
    while (is_space(*s))
        s++;
    if (*s != '[')
        return 0;
    const char *name = s + 1, *end = name;
    for (bool was_space = false; *end && *end != ']' && !(was_space && *end == ';'); end++)
        was_space = is_space(*end);
    if (*end != ']')
        return 0;
    const size_t len = (size_t)(end - name);
    for (int i = 0; i < NSECTIONS; i++)
        if (strlen(sections[i]) == len && !strncmp(name, sections[i], len))
            return 0;
    ctx->message[0] = '\0';
    append(ctx->message, sizeof ctx->message, "%s:%d: [%.*s]: unknown section; allowed "
           "sections:", ctx->path, ctx->line, (int)(len > VALUE_SHOWN ? VALUE_SHOWN : len),
           name);
    append_sections(ctx->message, sizeof ctx->message);
    ctx->failed = true;
    return -1;
}

/* inih's reader: the lines of ctx->in (aim_lines: bounded, NUL bytes
 * refused), each with its line break, in pieces of at most num - 1
 * bytes. The lines are at most ini_max_line - 3 bytes (aim_config_load),
 * so inih never cuts one. */
static char *reader(char *str, int num, void *stream)
{
    parse_ctx *ctx = stream;
    if (ctx->failed || num < 2)
        return NULL;
    if (ctx->left == 0 && !ctx->newline) {
        char *line;
        size_t len;
        int r = aim_lines_next(ctx->in, &line, &len);
        if (r < 0) {
            snprintf(ctx->message, sizeof ctx->message, "%s", aim_lines_error(ctx->in));
            ctx->failed = true;
        }
        if (r <= 0)
            return NULL;
        ctx->line = (int)aim_lines_number(ctx->in);
        ctx->text = line;
        ctx->len = ctx->left = len;
        ctx->newline = true;
        if (check_section_header(ctx, line))
            return NULL;
    }
    size_t n = ctx->left < (size_t)num - 1 ? ctx->left : (size_t)num - 1;
    memcpy(str, ctx->text + (ctx->len - ctx->left), n);
    ctx->left -= n;
    if (ctx->left == 0 && n < (size_t)num - 1) {
        str[n++] = '\n';
        ctx->newline = false;
    }
    str[n] = '\0';
    return str;
}

static int handler(void *user, const char *section, const char *name,
                   const char *value)
{
    parse_ctx *ctx = user;
    if (ctx->failed)
        return 0;
    char where[600];
    snprintf(where, sizeof where, "%s:%d", ctx->path, ctx->line);

    char sec[64], key[64], val[sizeof(((aim_config *)0)->covariance) + 64];
    const char *dot = strchr(name, '.');
    if (section[0] == '\0') {
        /* top-level "section.key = value" (written metadata) */
        if (!dot || dot == name || dot[1] == '\0' ||
            (size_t)(dot - name) >= sizeof sec) {
            snprintf(ctx->message, sizeof ctx->message,
                     "%s: %s = \"%.100s\": key outside any section; allowed: "
                     "[section] then key = value, or section.key = value",
                     where, name, value);
            ctx->failed = true;
            return 0;
        }
        memcpy(sec, name, (size_t)(dot - name));
        sec[dot - name] = '\0';
        snprintf(key, sizeof key, "%s", dot + 1);
    } else {
        snprintf(sec, sizeof sec, "%s", section);
        snprintf(key, sizeof key, "%s", name);
    }
    if (clean_value(val, sizeof val, value, strlen(value)) != 0) {
        snprintf(ctx->message, sizeof ctx->message,
                 "%s: %s.%s: value too long (%zu characters)", where, sec, key,
                 strlen(value));
        ctx->failed = true;
        return 0;
    }
    int i = assign(ctx->cfg, sec, key, val, where, ctx->message,
                   sizeof ctx->message);
    if (i < 0) {
        ctx->failed = true;
        return 0;
    }
    ctx->cfg->key_line[i] = ctx->line;
    if (strcmp(keys[i].key, "covariance") == 0 &&
        strcmp(keys[i].section, "model") == 0)
        ctx->cov_line = ctx->line;
    return 1;
}

int aim_config_load(aim_config *cfg, const char *path, aim_config_error *err)
{
    /* inih's line buffer (ini_max_line) holds a line, its "\r\n" and the
     * NUL; a configuration is a few dozen short lines, so 1 MiB is ample */
    enum { MAX_LINE = 1 << 16 };
    static const aim_lines_limits limits = {1 << 20, MAX_LINE - 3, 0,
                                            "an INI configuration file"};
    if (err)
        err->message[0] = '\0';
    if (!path)
        return 0;
    if (strlen(path) >= sizeof cfg->source) {
        errorf(err, "%.200s...: path too long", path);
        return -1;
    }
    char why[sizeof err->message];
    aim_lines *in = aim_lines_open(path, &limits, why, sizeof why);
    if (!in) {
        set_error(err, why);
        return -1;
    }

    aim_config work = *cfg;
    for (int i = 0; i < NKEYS; i++)
        if (work.key_line[i] > 0)
            work.key_line[i] = -2; /* lines of an earlier file */
    snprintf(work.source, sizeof work.source, "%s", path);

    parse_ctx ctx = {.cfg = &work, .path = path, .in = in};

    /* Debian's inih exposes its options as globals: long lines (explicit
     * covariances), no multi-line continuation, stop at the first error.
     * Saved and restored around the call. */
    bool s_stack = ini_use_stack, s_realloc = ini_allow_realloc,
         s_multi = ini_allow_multiline, s_stop = ini_stop_on_first_error,
         s_novalue = ini_allow_no_value;
    int s_max = ini_max_line, s_init = ini_initial_alloc;
    ini_use_stack = false;
    ini_allow_realloc = true;
    ini_initial_alloc = 512;
    ini_max_line = MAX_LINE;
    ini_allow_multiline = false;
    ini_stop_on_first_error = true;
    ini_allow_no_value = false;
    int rc = ini_parse_stream(reader, &ctx, handler, &ctx);
    ini_use_stack = s_stack;
    ini_allow_realloc = s_realloc;
    ini_initial_alloc = s_init;
    ini_max_line = s_max;
    ini_allow_multiline = s_multi;
    ini_stop_on_first_error = s_stop;
    ini_allow_no_value = s_novalue;

    if (ctx.failed) {
        set_error(err, ctx.message);
    } else if (rc == -2) {
        errorf(err, "%s: out of memory while reading", path);
    } else if (rc != 0) {
        /* inih stops at the first error, so the line last read is it */
        why[0] = '\0';
        append(why, sizeof why, "%s:%d: ", path, ctx.line);
        append_value(why, sizeof why, ctx.text);
        append(why, sizeof why, ": syntax error; allowed: [section], key = value, or a "
                                "comment (; or #)");
        set_error(err, why);
    }
    aim_lines_close(in);
    if (ctx.failed || rc != 0)
        return -1;
    /* A covariance given in this file must fit the tokens after it. */
    if (ctx.cov_line > 0) {
        char why[WHY_SIZE];
        if (covariance_parse(work.covariance, work.tokens, work.cov, NULL, 0,
                             why, sizeof why) != 0) {
            int i = key_index("model", "covariance");
            char msg[sizeof err->message];
            msg[0] = '\0';
            append(msg, sizeof msg, "%s:%d: model.covariance = ", path,
                   ctx.cov_line);
            append_value(msg, sizeof msg, work.covariance);
            append(msg, sizeof msg, ": %s; allowed: %s", why, keys[i].allowed);
            set_error(err, msg);
            return -1;
        }
    }
    *cfg = work;
    return 0;
}

/* ------------------------------------------------------------------ */
/* --set                                                               */
/* ------------------------------------------------------------------ */

int aim_config_set(aim_config *cfg, const char *assignment, aim_config_error *err)
{
    if (err)
        err->message[0] = '\0';
    const char *eq = strchr(assignment, '=');
    const char *dot = eq ? memchr(assignment, '.', (size_t)(eq - assignment)) : NULL;
    char lhs[160], sec[64], key[96];
    char val[sizeof(((aim_config *)0)->covariance) + 64];
    if (!eq || !dot) {
        errorf(err, "--set %.300s: expected section.key=value", assignment);
        return -1;
    }
    if (clean_value(lhs, sizeof lhs, assignment, (size_t)(eq - assignment)) != 0 ||
        clean_value(val, sizeof val, eq + 1, strlen(eq + 1)) != 0) {
        errorf(err, "--set %.300s: too long", assignment);
        return -1;
    }
    char *ldot = strchr(lhs, '.');
    if (!ldot || ldot == lhs || ldot[1] == '\0' ||
        (size_t)(ldot - lhs) >= sizeof sec || strlen(ldot + 1) >= sizeof key) {
        errorf(err, "--set %.300s: expected section.key=value", assignment);
        return -1;
    }
    memcpy(sec, lhs, (size_t)(ldot - lhs));
    sec[ldot - lhs] = '\0';
    snprintf(key, sizeof key, "%s", ldot + 1);

    char where[400];
    snprintf(where, sizeof where, "--set %.300s", assignment);
    aim_config work = *cfg;
    char msg[sizeof err->message];
    int i = assign(&work, sec, key, val, where, msg, sizeof msg);
    if (i < 0) {
        set_error(err, msg);
        return -1;
    }
    work.key_line[i] = -1;
    *cfg = work;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Validation                                                          */
/* ------------------------------------------------------------------ */

/* Order in which keys were set: default < earlier file < line < --set. */
static long origin_rank(const aim_config *cfg, int i)
{
    int l = cfg->key_line[i];
    if (l == -1)
        return 1L << 40;
    if (l == -2)
        return 1;
    return l > 0 ? 1 + (long)l : 0;
}

/* "FILE:LINE", "--set", ... for key i. */
static void origin_text(const aim_config *cfg, int i, char *buf, size_t n)
{
    int l = cfg->key_line[i];
    if (l > 0)
        snprintf(buf, n, "%s:%d", cfg->source, l);
    else if (l == -1)
        snprintf(buf, n, "--set");
    else if (l == -2)
        snprintf(buf, n, "an earlier config file");
    else
        snprintf(buf, n, "default");
}

/* Message about key i (located where it was set), optionally in
 * combination with key j (-1: none), then reason and what is allowed. */
static void combo_error(const aim_config *cfg, aim_config_error *err, int i,
                        int j, const char *reason, const char *allowed)
{
    if (!err)
        return;
    /* the later-set key locates the conflict */
    if (j >= 0 && origin_rank(cfg, j) > origin_rank(cfg, i)) {
        int t = i;
        i = j;
        j = t;
    }
    char *msg = err->message;
    size_t n = sizeof err->message;
    msg[0] = '\0';
    char vi[2200], vj[2200], where[600];
    keys[i].get(&keys[i], cfg, vi, sizeof vi);
    int l = cfg->key_line[i];
    if (l > 0)
        append(msg, n, "%s:%d: ", cfg->source, l);
    else if (l == -1)
        append(msg, n, "--set %s.%s=%.200s: ", keys[i].section, keys[i].key, vi);
    append(msg, n, "%s.%s = ", keys[i].section, keys[i].key);
    append_value(msg, n, vi);
    if (l == 0 || l == -2) {
        origin_text(cfg, i, where, sizeof where);
        append(msg, n, " (%s)", where);
    }
    if (j >= 0) {
        keys[j].get(&keys[j], cfg, vj, sizeof vj);
        origin_text(cfg, j, where, sizeof where);
        append(msg, n, " with %s.%s = ", keys[j].section, keys[j].key);
        append_value(msg, n, vj);
        append(msg, n, " (%s)", where);
    }
    append(msg, n, ": %s; allowed: %s", reason, allowed);
}

int aim_config_validate(aim_config *cfg, aim_config_error *err)
{
    if (err)
        err->message[0] = '\0';

    /* 1. every key in range (catches fields changed directly in code) */
    for (int i = 0; i < NKEYS; i++) {
        aim_config scratch = *cfg;
        char text[2200], why[WHY_SIZE];
        keys[i].get(&keys[i], cfg, text, sizeof text);
        if (keys[i].set(&keys[i], &scratch, text, why, sizeof why) != 0) {
            combo_error(cfg, err, i, -1, why, keys[i].allowed);
            return -1;
        }
    }
    int k_dec = key_index("model", "decomposition");
    int k_tokens = key_index("model", "tokens");
    int k_cov = key_index("model", "covariance");
    int k_centring = key_index("model", "centring");
    int k_hermite = key_index("model", "hermite");
    int k_tdec = key_index("teacher", "decomposition");
    int k_tmean = key_index("teacher", "mean");
    int k_ssym = key_index("student", "symmetric");
    int k_tsym = key_index("teacher", "symmetric");
    int k_gstart = key_index("training", "grid_start");
    int k_horizon = key_index("training", "horizon");
    int k_quad = key_index("ode", "quad_nodes");

    /* 2. covariance for the current tokens */
    double cov[AIM_MAX_TOKENS * AIM_MAX_TOKENS];
    char why[WHY_SIZE];
    if (covariance_parse(cfg->covariance, cfg->tokens, cov, NULL, 0, why,
                         sizeof why) != 0) {
        combo_error(cfg, err, k_cov, k_tokens, why, keys[k_cov].allowed);
        return -1;
    }

    /* 3. impossible combinations */
    if (cfg->centring == AIM_RAW && cfg->decomposition == AIM_TIED) {
        combo_error(cfg, err, k_dec, k_centring,
                    "tied attention needs centred indices (its positive "
                    "semi-definite S has Tr S ~ d, so a raw index mean of "
                    "order sqrt d; theory/model.md sec. 2)",
                    "model.centring = centred, or model.decomposition = direct "
                    "| untied");
        return -1;
    }
    if (cfg->centring == AIM_RAW && cfg->teacher.decomposition == AIM_TIED) {
        combo_error(cfg, err, k_tdec, k_centring,
                    "a tied teacher needs centred indices (its positive "
                    "semi-definite S* has Tr S* ~ d, so a raw index mean of "
                    "order sqrt d; theory/model.md sec. 2)",
                    "model.centring = centred, or teacher.decomposition = "
                    "direct | untied");
        return -1;
    }
    if (cfg->teacher.mean != 0.0 && cfg->centring == AIM_CENTRED) {
        combo_error(cfg, err, k_tmean, k_centring,
                    "a teacher mean is invisible to centred indices",
                    "teacher.mean = 0, or model.centring = raw");
        return -1;
    }
    if (cfg->student.symmetric && cfg->decomposition != AIM_DIRECT) {
        combo_error(cfg, err, k_ssym, k_dec,
                    "symmetric applies to direct students only (tied is "
                    "symmetric by construction, untied is not)",
                    "student.symmetric = false, or model.decomposition = direct");
        return -1;
    }
    if (cfg->teacher.symmetric && cfg->teacher.decomposition != AIM_DIRECT) {
        combo_error(cfg, err, k_tsym, k_tdec,
                    "symmetric applies to direct teachers only (tied is "
                    "symmetric by construction, untied is not)",
                    "teacher.symmetric = false, or teacher.decomposition = direct");
        return -1;
    }
    if (cfg->grid == AIM_GRID_LOG && !(cfg->grid_start < cfg->horizon)) {
        char reason[WHY_SIZE];
        snprintf(reason, sizeof reason,
                 "a log grid starts below the horizon (training.grid = log)");
        combo_error(cfg, err, k_gstart, k_horizon, reason,
                    "training.grid_start < training.horizon");
        return -1;
    }
    if (cfg->quad_nodes != 0 && cfg->output == AIM_ELEMENTWISE &&
        cfg->activation == AIM_ACT_HERMITE &&
        cfg->quad_nodes < 2 * cfg->hermite_degree) {
        char reason[WHY_SIZE], allowed[WHY_SIZE];
        snprintf(reason, sizeof reason,
                 "too few Gauss-Hermite nodes for a Hermite series of degree "
                 "%d (exact from 2 x degree = %d nodes)",
                 cfg->hermite_degree, 2 * cfg->hermite_degree);
        snprintf(allowed, sizeof allowed,
                 "ode.quad_nodes = 0 (automatic) or >= %d",
                 2 * cfg->hermite_degree);
        combo_error(cfg, err, k_quad, k_hermite, reason, allowed);
        return -1;
    }
    /* SGD runs that no machine can finish (and whose step counts would
     * overflow) are rejected rather than silently truncated. */
    const double steps = cfg->horizon * (double)cfg->d * cfg->d / cfg->eta;
    if (steps > 1e12) {
        char reason[WHY_SIZE];
        snprintf(reason, sizeof reason,
                 "the SGD run would take %.3g steps (training.horizon x sgd.d^2 / "
                 "training.eta)", steps);
        combo_error(cfg, err, k_horizon, key_index("training", "eta"), reason,
                    "at most 1e12 steps: a shorter horizon, a larger eta or a smaller sgd.d");
        return -1;
    }
    /* seed i is sgd.seed + i: the last one must not wrap around to 0 */
    if (cfg->seed > UINT64_MAX - (uint64_t)(cfg->seeds - 1)) {
        char reason[WHY_SIZE], allowed[WHY_SIZE];
        snprintf(reason, sizeof reason, "seeds sgd.seed .. sgd.seed + sgd.seeds - 1 pass "
                 "2^64 - 1 = %" PRIu64 " and would wrap around to 0", UINT64_MAX);
        snprintf(allowed, sizeof allowed, "sgd.seed <= %" PRIu64 " - (sgd.seeds - 1)",
                 UINT64_MAX);
        combo_error(cfg, err, key_index("sgd", "seed"), key_index("sgd", "seeds"), reason,
                    allowed);
        return -1;
    }
    /* the quasi-random rule whitens its point set: it needs clearly more
     * points than latent dimensions (2 T^2) */
    if (cfg->qmc_points < 64 * cfg->tokens * cfg->tokens) {
        char reason[WHY_SIZE], allowed[WHY_SIZE];
        snprintf(reason, sizeof reason,
                 "too few quasi-random points for T = %d (2 T^2 = %d latent dimensions)",
                 cfg->tokens, 2 * cfg->tokens * cfg->tokens);
        snprintf(allowed, sizeof allowed, "ode.qmc_points >= 64 T^2 = %d",
                 64 * cfg->tokens * cfg->tokens);
        combo_error(cfg, err, key_index("ode", "qmc_points"), k_tokens, reason, allowed);
        return -1;
    }

    /* The matrix process integrates the raw mean as the stiff system at
     * finite d (theory/matrix.md sec. 5). */
    if (cfg->method == AIM_METHOD_MATRIX && cfg->centring == AIM_RAW &&
        cfg->mean_mode == AIM_MEAN_ADIABATIC) {
        combo_error(cfg, err, key_index("ode", "method"), key_index("hierarchy", "mean"),
                    "the matrix limit process integrates the raw mean as the stiff system "
                    "at the finite d of the runs, not its adiabatic limit",
                    "hierarchy.mean = stiff with ode.method = matrix, or ode.method = auto");
        return -1;
    }

    /* The tied hierarchy has the letters S and S*, both symmetric. */
    if (cfg->decomposition == AIM_TIED &&
        !(cfg->teacher.decomposition == AIM_TIED ||
          (cfg->teacher.decomposition == AIM_DIRECT && cfg->teacher.symmetric))) {
        combo_error(cfg, err, k_tdec, k_dec,
                    "a tied student needs a symmetric teacher (its moment "
                    "hierarchy has the symmetric letters S and S*)",
                    "teacher.decomposition = tied, or teacher.decomposition = "
                    "direct with teacher.symmetric = true");
        return -1;
    }

    /* the untied order parameters Omega and Psi are words of length 2 */
    if (cfg->decomposition == AIM_UNTIED && cfg->order < 2) {
        combo_error(cfg, err, key_index("hierarchy", "order"), k_dec,
                    "the untied hierarchy needs words of length 2 (Omega and Psi of "
                    "S = U V^T are m(K k) and m(K K))",
                    "hierarchy.order >= 2");
        return -1;
    }

    cfg->student.decomposition = cfg->decomposition;
    cfg->student.mean = 0.0;
    memset(cfg->cov, 0, sizeof cfg->cov);
    memcpy(cfg->cov, cov, sizeof(double) * (size_t)(cfg->tokens * cfg->tokens));
    if (cfg->source[0] == '\0')
        snprintf(cfg->source, sizeof cfg->source, "built-in default");
    return 0;
}

/* ------------------------------------------------------------------ */
/* Writing and describing                                              */
/* ------------------------------------------------------------------ */

void aim_config_write(const aim_config *cfg, FILE *out, const char *prefix)
{
    if (!prefix)
        prefix = "";
    for (int i = 0; i < NKEYS; i++) {
        char text[2200];
        keys[i].get(&keys[i], cfg, text, sizeof text);
        fprintf(out, "%s%s.%s = %s\n", prefix, keys[i].section, keys[i].key, text);
    }
}

void aim_config_describe(FILE *out)
{
    fprintf(out,
            "Configuration keys (INI file: [section] then key = value; "
            "override with --set section.key=value).\n"
            "Full reference: docs/config.md.\n");
    const char *section = "";
    for (int i = 0; i < NKEYS; i++) {
        if (strcmp(section, keys[i].section) != 0) {
            section = keys[i].section;
            fprintf(out, "\n[%s]\n", section);
        }
        fprintf(out, "  %s.%s = %s\n", keys[i].section, keys[i].key, keys[i].def);
        fprintf(out, "      %s\n", keys[i].help);
        fprintf(out, "      allowed: %s\n", keys[i].allowed);
    }
}

int aim_config_columns(const aim_matrix_spec *spec, int d)
{
    double p = floor(spec->rho * (double)d + 0.5);
    if (!(p >= 1.0))
        return 1;
    if (p > (double)INT32_MAX)
        return INT32_MAX;
    return (int)p;
}
