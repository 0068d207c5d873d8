/* The configuration's key table: every key with its section, default,
 * allowed values, help text, setter and getter, and the text helpers the
 * setters share. config.c parses and validates through it, config_write.c
 * writes and describes it, docs/config.md documents it for humans; one
 * table, so that they cannot drift apart. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_linalg.h>

#include "config_keys.h"
#include "digest.h"

/* ------------------------------------------------------------------ */
/* Small helpers                                                       */
/* ------------------------------------------------------------------ */

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

bool aim_config_is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' ||
           c == '\v';
}

static bool is_sep(char c) { return aim_config_is_space(c) || c == ',' || c == ';'; }

/* Copies s[0..len) into buf (size n), trimmed, one layer of matching
 * double quotes removed. Returns -1 if it does not fit. */
int aim_config_clean_value(char *buf, size_t n, const char *s, size_t len)
{
    while (len > 0 && aim_config_is_space(*s)) {
        s++;
        len--;
    }
    while (len > 0 && aim_config_is_space(s[len - 1]))
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

void aim_config_append(char *buf, size_t n, const char *fmt, ...)
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
void aim_config_append_value(char *buf, size_t n, const char *value)
{
    size_t len = strlen(value);
    if (len <= AIM_CONFIG_VALUE_SHOWN)
        aim_config_append(buf, n, "\"%s\"", value);
    else
        aim_config_append(buf, n, "\"%.*s...\" (%zu characters)", AIM_CONFIG_VALUE_SHOWN, value,
                          len);
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
    if (end == s || *end != '\0' || aim_config_is_space(*s)) {
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
        char sub[AIM_CONFIG_WHY];
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

enum {
    LO_OPEN = 1,  /* lower bound excluded */
    HI_OPEN = 2,  /* upper bound excluded */
    NO_LO = 4,    /* no lower bound */
    NO_HI = 8,    /* no upper bound */
    ZERO_OK = 16, /* 0 allowed besides the range (0 = automatic) */
};

#define FIELD(ptr, k, type) ((type *)((char *)(ptr) + (k)->offset))
#define CFIELD(ptr, k, type) ((const type *)((const char *)(ptr) + (k)->offset))

static int range_ok(const aim_config_key *k, double v)
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

static int set_real(const aim_config_key *k, aim_config *cfg, const char *text,
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

static void get_real(const aim_config_key *k, const aim_config *cfg, char *buf, size_t n)
{
    fmt_real(buf, n, *CFIELD(cfg, k, double));
}

static int set_int(const aim_config_key *k, aim_config *cfg, const char *text,
                   char *why, size_t n)
{
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (*text == '\0' || aim_config_is_space(*text) || end == text || *end != '\0') {
        double dummy;
        char sub[AIM_CONFIG_WHY];
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

static void get_int(const aim_config_key *k, const aim_config *cfg, char *buf, size_t n)
{
    snprintf(buf, n, "%d", *CFIELD(cfg, k, int));
}

static int set_u64(const aim_config_key *k, aim_config *cfg, const char *text,
                   char *why, size_t n)
{
    char *end;
    errno = 0;
    if (*text == '-') {
        snprintf(why, n, "out of range");
        return -1;
    }
    unsigned long long v = strtoull(text, &end, 10);
    if (*text == '\0' || aim_config_is_space(*text) || *text == '+' || end == text ||
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

static void get_u64(const aim_config_key *k, const aim_config *cfg, char *buf, size_t n)
{
    snprintf(buf, n, "%" PRIu64, *CFIELD(cfg, k, uint64_t));
}

static int set_bool(const aim_config_key *k, aim_config *cfg, const char *text,
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

static void get_bool(const aim_config_key *k, const aim_config *cfg, char *buf, size_t n)
{
    snprintf(buf, n, "%s", *CFIELD(cfg, k, int) ? "true" : "false");
}

static int set_enum(const aim_config_key *k, aim_config *cfg, const char *text,
                    char *why, size_t n)
{
    for (const aim_config_enum_name *e = k->names; e->name; e++) {
        if (same_word(text, e->name)) {
            *FIELD(cfg, k, int) = e->value;
            return 0;
        }
    }
    snprintf(why, n, "unknown value");
    return -1;
}

static void get_enum(const aim_config_key *k, const aim_config *cfg, char *buf, size_t n)
{
    int v = *CFIELD(cfg, k, int);
    for (const aim_config_enum_name *e = k->names; e->name; e++) {
        if (e->value == v) {
            snprintf(buf, n, "%s", e->name);
            return;
        }
    }
    snprintf(buf, n, "(invalid %d)", v);
}

static int set_string(const aim_config_key *k, aim_config *cfg, const char *text,
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
        if (text[i] == ';' && i > 0 && aim_config_is_space(text[i - 1])) {
            snprintf(why, n, "';' after a space not allowed");
            return -1;
        }
    }
    memcpy(FIELD(cfg, k, char), text, len + 1);
    return 0;
}

/* Strings are quoted when the INI reader would otherwise change them. */
static void get_string(const aim_config_key *k, const aim_config *cfg, char *buf, size_t n)
{
    const char *s = CFIELD(cfg, k, char);
    size_t len = strlen(s);
    bool quote = len == 0 || aim_config_is_space(s[0]) || aim_config_is_space(s[len - 1]) ||
                 s[0] == '"' || strchr(s, ';') != NULL;
    snprintf(buf, n, quote ? "\"%s\"" : "%s", s);
}

/* --- custom keys --- */

static const aim_config_enum_name decomposition_names[] = {
    {"direct", AIM_DIRECT}, {"tied", AIM_TIED}, {"untied", AIM_UNTIED}, {NULL, 0}};
static const aim_config_enum_name centring_names[] = {
    {"centred", AIM_CENTRED}, {"raw", AIM_RAW}, {NULL, 0}};
static const aim_config_enum_name output_names[] = {
    {"elementwise", AIM_ELEMENTWISE}, {"softmax", AIM_SOFTMAX}, {NULL, 0}};
static const aim_config_enum_name fold_names[] = {
    {"none", AIM_FOLD_NONE}, {"mean", AIM_FOLD_MEAN}, {"overlap", AIM_FOLD_OVERLAP}, {NULL, 0}};
static const aim_config_enum_name grid_names[] = {
    {"linear", AIM_GRID_LINEAR}, {"log", AIM_GRID_LOG}, {NULL, 0}};
static const aim_config_enum_name rule_names[] = {
    {"auto", AIM_RULE_AUTO}, {"generic", AIM_RULE_GENERIC}, {NULL, 0}};
static const aim_config_enum_name beyond_names[] = {
    {"matrix", AIM_BEYOND_MATRIX}, {"stop", AIM_BEYOND_STOP}, {NULL, 0}};
static const aim_config_enum_name closure_names[] = {{"aligned", AIM_CLOSURE_ALIGNED},
                                          {"cumulant", AIM_CLOSURE_CUMULANT},
                                          {"free", AIM_CLOSURE_FREE},
                                          {"initial", AIM_CLOSURE_INITIAL},
                                          {"psd", AIM_CLOSURE_PSD},
                                          {"quadrature", AIM_CLOSURE_QUADRATURE},
                                          {NULL, 0}};
static const aim_config_enum_name start_names[] = {
    {"exact", AIM_START_EXACT}, {"seed", AIM_START_SEED}, {"file", AIM_START_FILE},
    {NULL, 0}};
static const aim_config_enum_name mean_names[] = {
    {"stiff", AIM_MEAN_STIFF}, {"adiabatic", AIM_MEAN_ADIABATIC}, {NULL, 0}};
static const aim_config_enum_name solver_names[] = {{"auto", AIM_SOLVER_AUTO},
                                         {"dense", AIM_SOLVER_DENSE},
                                         {"krylov", AIM_SOLVER_KRYLOV},
                                         {NULL, 0}};
static const aim_config_enum_name method_names[] = {
    {"auto", AIM_METHOD_AUTO}, {"matrix", AIM_METHOD_MATRIX}, {NULL, 0}};

/* model.decomposition is the student's: kept in both places. */
static int set_model_decomposition(const aim_config_key *k, aim_config *cfg,
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

static int set_activation(const aim_config_key *k, aim_config *cfg, const char *text,
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
    static const aim_config_enum_name names[] = {{"hermite", AIM_ACT_HERMITE},
                                      {"tanh", AIM_ACT_TANH},
                                      {"erf", AIM_ACT_ERF},
                                      {"relu", AIM_ACT_RELU},
                                      {NULL, 0}};
    for (const aim_config_enum_name *e = names; e->name; e++) {
        if (same_word(text, e->name)) {
            cfg->activation = (aim_activation)e->value;
            return 0;
        }
    }
    snprintf(why, n, "unknown value");
    return -1;
}

static void get_activation(const aim_config_key *k, const aim_config *cfg, char *buf,
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

static int set_hermite(const aim_config_key *k, aim_config *cfg, const char *text,
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

static void get_hermite(const aim_config_key *k, const aim_config *cfg, char *buf,
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
        aim_config_append(buf, n, "%s%s", i ? " " : "", num);
    }
}

/* Covariance text -> matrix. tokens < 0: check what does not depend on
 * the number of tokens (explicit matrices are checked completely, at
 * their own size). Returns 0, or -1 with why filled. norm (may be NULL)
 * receives the normalised text. */
int aim_config_covariance_parse(const char *text, int tokens, double *cov,
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
        if (aim_config_clean_value(rtext, sizeof rtext, text + elen, strlen(text + elen)) != 0) {
            snprintf(why, n, "equicorrelated:R: R is not a number");
            return -1;
        }
        double R;
        char sub[AIM_CONFIG_WHY];
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
            char sub[AIM_CONFIG_WHY];
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
                aim_config_append(norm, norm_n, "%s%s", i ? " " : "", num);
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

static int set_covariance(const aim_config_key *k, aim_config *cfg, const char *text,
                          char *why, size_t n)
{
    (void)k;
    char norm[sizeof cfg->covariance];
    if (aim_config_covariance_parse(text, -1, NULL, norm, sizeof norm, why, n) != 0)
        return -1;
    memcpy(cfg->covariance, norm, sizeof norm);
    return 0;
}

static void get_covariance(const aim_config_key *k, const aim_config *cfg, char *buf,
                           size_t n)
{
    (void)k;
    snprintf(buf, n, "%s", cfg->covariance);
}

static int set_name(const aim_config_key *k, aim_config *cfg, const char *text,
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
static int set_dir(const aim_config_key *k, aim_config *cfg, const char *text, char *why, size_t n)
{
    if (text[0] == '|' || text[0] == '<') {
        snprintf(why, n, "starts with '%c', which gnuplot would run as a shell command",
                 text[0]);
        return -1;
    }
    return set_string(k, cfg, text, why, n);
}

/* a path, or empty: none */
static int set_optional_path(const aim_config_key *k, aim_config *cfg, const char *text,
                             char *why, size_t n)
{
    if (text[0] == '\0') {
        FIELD(cfg, k, char)[0] = '\0';
        return 0;
    }
    return set_string(k, cfg, text, why, n);
}

static int set_start_digest(const aim_config_key *k, aim_config *cfg, const char *text,
                            char *why, size_t n)
{
    /* get_string writes the empty value quoted, and validation sets what
     * it wrote */
    if (!strcmp(text, "\"\"")) {
        FIELD(cfg, k, char)[0] = '\0';
        return 0;
    }
    if (text[0] && !aim_digest_is_text(text)) {
        snprintf(why, n, "not a digest as aimdyn records it");
        return -1;
    }
    return set_optional_path(k, cfg, text, why, n);
}

/* none | all | a comma-separated list of tau >= 0, kept as the shortest
 * texts that read back to the same doubles (whether they are grid points
 * is checked by aim_config_validate) */
static int set_save_state(const aim_config_key *k, aim_config *cfg, const char *text,
                          char *why, size_t n)
{
    char norm[sizeof cfg->save_state] = "";
    if (same_word(text, "none") || same_word(text, "all")) {
        snprintf(norm, sizeof norm, "%s", same_word(text, "all") ? "all" : "none");
    } else {
        const char *p = text;
        while (1) {
            const char *comma = strchr(p, ',');
            const size_t len = comma ? (size_t)(comma - p) : strlen(p);
            char item[64], why_real[AIM_CONFIG_WHY], real[40];
            double tau;
            if (aim_config_clean_value(item, sizeof item, p, len) ||
                parse_real(item, &tau, why_real, sizeof why_real) || tau < 0) {
                snprintf(why, n, "'%.*s' is not a tau >= 0", (int)(len < 40 ? len : 40), p);
                return -1;
            }
            fmt_real(real, sizeof real, tau);
            if (strlen(norm) + strlen(real) + 2 >= sizeof norm) {
                snprintf(why, n, "too long a list (at most %zu characters)", sizeof norm - 1);
                return -1;
            }
            aim_config_append(norm, sizeof norm, "%s%s", norm[0] ? "," : "", real);
            if (!comma)
                break;
            p = comma + 1;
        }
    }
    (void)k;
    memcpy(cfg->save_state, norm, sizeof norm);
    return 0;
}

aim_config_type aim_config_key_type(const aim_config_key *k)
{
    if (k->set == set_real)
        return AIM_CONFIG_REAL;
    if (k->set == set_int)
        return AIM_CONFIG_INTEGER;
    if (k->set == set_u64)
        return AIM_CONFIG_UNSIGNED;
    if (k->set == set_bool)
        return AIM_CONFIG_BOOLEAN;
    return AIM_CONFIG_TEXT;
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

/* The first grid step of the smallest horizon, 1e-100 / 99999 (the
 * most training.points), stays far above 1e-154 = sqrt(DBL_MIN), where
 * CVODE's products of two step sizes underflow and it fails with
 * "tstop is behind current t" (measured on the default example: a
 * horizon of 1e-155 fails, 1e-152 integrates). */
#define TAU_MIN 1e-100
#define TAU_WHY "below about 1e-150 CVODE's step arithmetic underflows"

/* the columns p = round(rho d) are an int at every d up to 20000 (sgd.d) */
#define RHO_MAX 1e5
#define RHO_WHY "p = round(rho d) columns: an integer at every d up to sgd.d's 20000"

const aim_config_key aim_config_keys[] = {
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
    REAL("student", "rho", student.rho, "1", 0, RHO_MAX, LO_OPEN,
         "a real number in (0, 1e5] (" RHO_WHY ")", "tied/untied width: p = round(rho d) columns"),
    REAL("student", "scale", student.scale, "0.25", 0, SCALE_MAX, LO_OPEN,
         "a real number in (0, 1e6] (" SCALE_WHY ")", "init scale v: entries N(0, v/d)"),
    REAL("student", "scale_v", student.scale_v, "0", 0, SCALE_MAX, LO_OPEN | ZERO_OK,
         "0 (the same as student.scale) or a real number in (0, 1e6] (" SCALE_WHY ")",
         "untied: init scale v_V of V (U uses student.scale); unequal scales "
         "make the balance condition of hierarchy.balance hold"),
    REAL("student", "overlap", student.overlap, "0", 0, 1, HI_OPEN,
         "a real number in [0, 1), at most the largest overlap the student and teacher "
         "families reach (theory/model.md sec. 4)",
         "informed start: teacher overlap at tau = 0 (0: the random start); the student's "
         "matrices mix the teacher's with fresh Gaussian ones"),

    /* [teacher] */
    ENUM("teacher", "decomposition", teacher.decomposition, "direct",
         decomposition_names, "direct | tied | untied",
         "teacher S*: direct, W W^T or U V^T"),
    BOOL("teacher", "symmetric", teacher.symmetric, "false",
         "direct only: symmetric S*"),
    REAL("teacher", "rho", teacher.rho, "1", 0, RHO_MAX, LO_OPEN,
         "a real number in (0, 1e5] (" RHO_WHY ")", "tied/untied width: p* = round(rho d) columns"),
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
    REAL("training", "horizon", horizon, "0.3", TAU_MIN, 0, NO_HI,
         "a real number >= 1e-100 (" TAU_WHY ")", "tau_max, in slow time tau = n eta / d^2"),
    INT("training", "points", points, "31", 2, 100000, 0,
        "an integer in 2..100000", "points of the tau grid (output and SGD "
        "measurements), tau = 0 included"),
    ENUM("training", "grid", grid, "linear", grid_names, "linear | log",
         "tau grid: linear, or 0 then geometric from training.grid_start"),
    REAL("training", "grid_start", grid_start, "0.001", TAU_MIN, 0, NO_HI,
         "a real number >= 1e-100 (and < training.horizon for a log grid; " TAU_WHY ")",
         "first positive tau of a log grid"),

    {"training", "start_file", "",
     "empty (none) or the path of a state saved by aimdyn sgd --save-state (< 512 "
     "characters) of the same student, d, tokens, columns, symmetric switch and centring",
     "a saved SGD state every run starts from, as tau = 0: the ODE from the order "
     "parameters or moments measured on its matrices (hierarchy.start = file), SGD "
     "continued from its teacher and student with the data of sgd.seed (docs/tables.md)",
     set_optional_path, get_string, offsetof(aim_config, start_file),
     sizeof(((aim_config *)0)->start_file), 0, 0, 0, NULL},
    {"training", "start_digest", "",
     "empty (set from the file when the state is read) or fnv1a64: and 16 lower-case hex "
     "digits, the digest of training.start_file's bytes",
     "the content digest of the saved state: recorded in every output, so that a rerun, "
     "a resumed seed or a kept checkpoint refuses a state replaced at the same path",
     set_start_digest, get_string, offsetof(aim_config, start_digest),
     sizeof(((aim_config *)0)->start_digest), 0, 0, 0, NULL},

    /* [ode] */
    REAL("ode", "rtol", rtol, "1e-6", 1e-14, 1e-1, 0,
         "a real number in [1e-14, 0.1]", "relative tolerance of the integrator"),
    REAL("ode", "atol", atol, "1e-9", 1e-16, 1, 0, "a real number in [1e-16, 1]",
         "absolute tolerance of the integrator"),
    INT("ode", "quad_nodes", quad_nodes, "0", 2, 64, ZERO_OK,
        "0 (automatic) or an integer in 2..64 (>= 2 x Hermite degree)",
        "Gauss-Hermite nodes per dimension (elementwise outputs)"),
    INT("ode", "max_steps", max_steps, "1000000", 10, 100000000, 0,
        "an integer in 10..100000000",
        "internal steps the integrator may take between two grid points before it gives up "
        "(CV_TOO_MUCH_WORK)"),
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
         "dense up to 200 equations (every tied order) and GMRES above (untied from "
         "order 4), the measured crossover (theory/untied.md sec. 12)"),
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
         "aligned | cumulant | free | initial | psd | quadrature",
         "tied (untied: theory/untied.md sec. 5): words longer than M get: "
         "aligned = the mixed free cumulants "
         "of S = c S* + X, X free from S*, c the spectral regression "
         "coefficient; cumulant = mixed free cumulants above M set to 0; "
         "free = their value if S and S* were free; initial = their value "
         "at tau = 0; psd (tied only) = the aligned values, then every student word "
         "moved to the nearest values whose moment matrices are positive "
         "semi-definite, as those of real matrices are (theory/tied.md sec. 13); "
         "quadrature (tied only) = every student word the moment of a pair of real "
         "symmetric matrices built from the tracked words (non-commutative Gauss "
         "quadrature, theory/tied.md sec. 14)"),
    ENUM("hierarchy", "start", start, "exact", start_names,
         "exact | seed | file (file: with training.start_file, which sets it when it is not given)",
         "tied and untied: initial moments: exact large-d values of the Gaussian start, "
         "measured from the initial matrices of SGD seed sgd.seed at sgd.d, or measured "
         "on the saved state training.start_file"),
    ENUM("hierarchy", "mean", mean_mode, "stiff", mean_names, "stiff | adiabatic",
         "untied, raw centring: the fast mean integrated with the moments at "
         "the finite d of ode.d (0: --d or sgd.d) (stiff), or on its critical "
         "manifold dR/dm = 0 "
         "after a fast phase with frozen moments (adiabatic limit)"),
    REAL("hierarchy", "tol", tol, "0.05", 0, 1, ZERO_OK,
         "0 (never stop) or a real number in [0, 1]",
         "tied and untied, M >= 3: the run stops where the truncation error estimate "
         "from orders M-3..M (overlap absolute, risk relative) first exceeds it, where "
         "those orders do not converge in M, or where the order M-1 run stopped or failed "
         "in CVODE (no estimate) (columns overlap_trunc, risk_trunc; theory/matrix.md sec. "
         "6)"),
    ENUM("hierarchy", "beyond", beyond, "matrix", beyond_names, "matrix | stop",
         "tied and untied: where the hierarchy fails (its truncation error estimate "
         "passes hierarchy.tol or its orders do not converge in M, its moments leave "
         "those of real matrices, or CVODE gives up on it): matrix = "
         "the rows from there on are the matrix limit process's (ode.method = matrix, "
         "matrix.d, matrix.replicas; run over the whole grid, exit 0 if it reaches the "
         "end; theory/matrix.md sec. 7); stop = the run ends there (exit 3); recovery "
         "always stops (its weak-recovery times are the hierarchy's)"),
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
    REAL("output", "checkpoint", checkpoint, "60", 0, 86400, 0,
         "a real number in 0..86400 (seconds)",
         "sgd and compare: an unfinished seed keeps its state at the first grid point after "
         "this much CPU time since its last checkpoint (0: at every grid point), so that a "
         "rerun continues it from there"),
    {"output", "save_state", "none",
     "none, all, or a comma-separated list of grid points tau",
     "sgd and compare: the grid points at which every seed's matrices are saved, "
     "DIR/NAME-sgd-dD-seedK-tauX.state (docs/tables.md), for training.start_file",
     set_save_state, get_string, offsetof(aim_config, save_state),
     sizeof(((aim_config *)0)->save_state), 0, 0, 0, NULL},
    ENUM("output", "fold", fold, "none", fold_names, "none | mean | overlap",
         "sgd, compare and ode.method = matrix, for an even output map (sigma(-h) = "
         "sigma(h)): every seed or replica whose final student mean (mean) or teacher "
         "overlap (overlap) is negative is mirrored, S -> -S (the columns odd in S change "
         "sign), before the mean and standard error are taken (theory/matrix.md sec. 3)"),
};

const int aim_config_nkeys = (int)(sizeof aim_config_keys / sizeof aim_config_keys[0]);
_Static_assert(sizeof aim_config_keys / sizeof aim_config_keys[0] <= AIM_CONFIG_MAX_KEYS,
               "raise AIM_CONFIG_MAX_KEYS");

static const char *const sections[] = {"model", "training",  "student", "teacher",
                                       "ode",   "matrix",    "hierarchy", "sgd",
                                       "output"};
#define NSECTIONS ((int)(sizeof sections / sizeof sections[0]))

bool aim_config_known_section(const char *s, size_t len)
{
    for (int i = 0; i < NSECTIONS; i++)
        if (strlen(sections[i]) == len && !strncmp(s, sections[i], len))
            return true;
    return false;
}

/* Appends " model, training, ..." (the sections a file may have). */
void aim_config_append_sections(char *msg, size_t n)
{
    for (int i = 0; i < NSECTIONS; i++)
        aim_config_append(msg, n, "%s %s", i ? "," : "", sections[i]);
}

int aim_config_find_key(const char *section, const char *key)
{
    for (int i = 0; i < aim_config_nkeys; i++)
        if (strcmp(aim_config_keys[i].section, section) == 0 &&
            strcmp(aim_config_keys[i].key, key) == 0)
            return i;
    return -1;
}

int aim_config_key_index(const char *section, const char *key) /* must exist */
{
    int i = aim_config_find_key(section, key);
    if (i < 0)
        abort();
    return i;
}
