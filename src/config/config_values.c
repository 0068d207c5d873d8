/* The setters and getters of the configuration's keys: the generic kinds
 * (reals and integers in a range, booleans, enums, strings) and the keys
 * with a parser of their own (activation, Hermite coefficients,
 * covariance, paths, names, saved-state points). The key table
 * (config_keys.c) names them; they know nothing of the table. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_linalg.h>

#include "config_text.h"
#include "config_values.h"
#include "digest.h"

#define FIELD(ptr, k, type) ((type *)((char *)(ptr) + (k)->offset))
#define CFIELD(ptr, k, type) ((const type *)((const char *)(ptr) + (k)->offset))

static int range_ok(const aim_config_key *k, double v)
{
    if (v == 0.0 && (k->flags & AIM_CONFIG_ZERO_OK))
        return 1;
    if (!(k->flags & AIM_CONFIG_NO_LO)) {
        if ((k->flags & AIM_CONFIG_LO_OPEN) ? !(v > k->lo) : !(v >= k->lo))
            return 0;
    }
    if (!(k->flags & AIM_CONFIG_NO_HI)) {
        if ((k->flags & AIM_CONFIG_HI_OPEN) ? !(v < k->hi) : !(v <= k->hi))
            return 0;
    }
    return 1;
}

/* --- generic kinds --- */

int aim_config_set_real(const aim_config_key *k, aim_config *cfg, const char *text, char *why,
                        size_t n)
{
    double v;
    if (aim_config_parse_real(text, &v, why, n) != 0)
        return -1;
    if (!range_ok(k, v)) {
        snprintf(why, n, "out of range");
        return -1;
    }
    *FIELD(cfg, k, double) = v;
    return 0;
}

void aim_config_get_real(const aim_config_key *k, const aim_config *cfg, char *buf, size_t n)
{
    aim_config_fmt_real(buf, n, *CFIELD(cfg, k, double));
}

int aim_config_set_int(const aim_config_key *k, aim_config *cfg, const char *text, char *why,
                       size_t n)
{
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (*text == '\0' || aim_config_is_space(*text) || end == text || *end != '\0') {
        double dummy;
        char sub[AIM_CONFIG_WHY];
        if (aim_config_parse_real(text, &dummy, sub, sizeof sub) == 0)
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

void aim_config_get_int(const aim_config_key *k, const aim_config *cfg, char *buf, size_t n)
{
    snprintf(buf, n, "%d", *CFIELD(cfg, k, int));
}

int aim_config_set_u64(const aim_config_key *k, aim_config *cfg, const char *text, char *why,
                       size_t n)
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

void aim_config_get_u64(const aim_config_key *k, const aim_config *cfg, char *buf, size_t n)
{
    snprintf(buf, n, "%" PRIu64, *CFIELD(cfg, k, uint64_t));
}

int aim_config_set_bool(const aim_config_key *k, aim_config *cfg, const char *text, char *why,
                        size_t n)
{
    static const char *yes[] = {"true", "yes", "1"};
    static const char *no[] = {"false", "no", "0"};
    for (int i = 0; i < 3; i++) {
        if (aim_config_same_word(text, yes[i])) {
            *FIELD(cfg, k, int) = 1;
            return 0;
        }
        if (aim_config_same_word(text, no[i])) {
            *FIELD(cfg, k, int) = 0;
            return 0;
        }
    }
    snprintf(why, n, "not a boolean");
    return -1;
}

void aim_config_get_bool(const aim_config_key *k, const aim_config *cfg, char *buf, size_t n)
{
    snprintf(buf, n, "%s", *CFIELD(cfg, k, int) ? "true" : "false");
}

int aim_config_set_enum(const aim_config_key *k, aim_config *cfg, const char *text, char *why,
                        size_t n)
{
    for (const aim_config_enum_name *e = k->names; e->name; e++) {
        if (aim_config_same_word(text, e->name)) {
            *FIELD(cfg, k, int) = e->value;
            return 0;
        }
    }
    snprintf(why, n, "unknown value");
    return -1;
}

void aim_config_get_enum(const aim_config_key *k, const aim_config *cfg, char *buf, size_t n)
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

static int set_string(const aim_config_key *k, aim_config *cfg, const char *text, char *why,
                      size_t n)
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
void aim_config_get_string(const aim_config_key *k, const aim_config *cfg, char *buf, size_t n)
{
    const char *s = CFIELD(cfg, k, char);
    size_t len = strlen(s);
    bool quote = len == 0 || aim_config_is_space(s[0]) || aim_config_is_space(s[len - 1]) ||
                 s[0] == '"' || strchr(s, ';') != NULL;
    snprintf(buf, n, quote ? "\"%s\"" : "%s", s);
}

/* --- custom keys --- */

/* model.decomposition is the student's: kept in both places. */
int aim_config_set_model_decomposition(const aim_config_key *k, aim_config *cfg, const char *text,
                                       char *why, size_t n)
{
    if (aim_config_set_enum(k, cfg, text, why, n) != 0)
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

int aim_config_set_activation(const aim_config_key *k, aim_config *cfg, const char *text, char *why,
                              size_t n)
{
    (void)k;
    static const char *he[] = {"he1", "he2", "he3", "he4"};
    for (int i = 0; i < 4; i++) {
        if (aim_config_same_word(text, he[i])) {
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
        if (aim_config_same_word(text, e->name)) {
            cfg->activation = (aim_activation)e->value;
            return 0;
        }
    }
    snprintf(why, n, "unknown value");
    return -1;
}

void aim_config_get_activation(const aim_config_key *k, const aim_config *cfg, char *buf, size_t n)
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

int aim_config_set_hermite(const aim_config_key *k, aim_config *cfg, const char *text, char *why,
                           size_t n)
{
    (void)k;
    double c[AIM_MAX_HERMITE];
    int count = aim_config_parse_list(text, c, AIM_MAX_HERMITE, why, n);
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
        if (fabs(c[i]) > AIM_CONFIG_SCALE_MAX) {
            snprintf(why, n, "coefficient c%d = %g is larger than 1e6 in size", i, c[i]);
            return -1;
        }
    for (int i = 0; i < AIM_MAX_HERMITE; i++)
        cfg->hermite[i] = i < count ? c[i] : 0.0;
    cfg->hermite_degree = degree;
    return 0;
}

void aim_config_get_hermite(const aim_config_key *k, const aim_config *cfg, char *buf, size_t n)
{
    (void)k;
    buf[0] = '\0';
    int last = cfg->hermite_degree;
    if (last < 0 || last >= AIM_MAX_HERMITE)
        last = AIM_MAX_HERMITE - 1;
    for (int i = 0; i <= last; i++) {
        char num[40];
        aim_config_fmt_real(num, sizeof num, cfg->hermite[i]);
        aim_config_append(buf, n, "%s%s", i ? " " : "", num);
    }
}

/* Covariance text -> matrix. tokens < 0: check what does not depend on
 * the number of tokens (explicit matrices are checked completely, at
 * their own size). Returns 0, or -1 with why filled. norm (may be NULL)
 * receives the normalised text. */
int aim_config_covariance_parse(const char *text, int tokens, double *cov, char *norm,
                                size_t norm_n, char *why, size_t n)
{
    static const char equi[] = "equicorrelated:";
    if (aim_config_same_word(text, "identity")) {
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
        if (aim_config_lower((unsigned char)text[i]) != equi[i])
            is_equi = false;
    if (is_equi) {
        char rtext[128];
        if (aim_config_clean_value(rtext, sizeof rtext, text + elen, strlen(text + elen)) != 0) {
            snprintf(why, n, "equicorrelated:R: R is not a number");
            return -1;
        }
        double R;
        char sub[AIM_CONFIG_WHY];
        if (aim_config_parse_real(rtext, &R, sub, sizeof sub) != 0) {
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
            aim_config_fmt_real(num, sizeof num, R);
            snprintf(norm, norm_n, "equicorrelated:%s", num);
        }
        if (tokens < 0)
            return 0;
        T = tokens;
        for (int a = 0; a < T; a++)
            for (int b = 0; b < T; b++)
                vals[a * T + b] = (a == b) ? 1.0 : R;
    } else {
        int count = aim_config_parse_list(text, vals, AIM_MAX_TOKENS * AIM_MAX_TOKENS, why, n);
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
                aim_config_fmt_real(x, sizeof x, vals[a * T + a]);
                snprintf(why, n, "diagonal entry (%d,%d) is %s, not 1", a + 1,
                         a + 1, x);
                return -1;
            }
            for (int b = 0; b < a; b++) {
                if (vals[a * T + b] != vals[b * T + a]) {
                    aim_config_fmt_real(x, sizeof x, vals[a * T + b]);
                    aim_config_fmt_real(y, sizeof y, vals[b * T + a]);
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
                aim_config_fmt_real(num, sizeof num, vals[i]);
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

int aim_config_set_covariance(const aim_config_key *k, aim_config *cfg, const char *text, char *why,
                              size_t n)
{
    (void)k;
    char norm[sizeof cfg->covariance];
    if (aim_config_covariance_parse(text, -1, NULL, norm, sizeof norm, why, n) != 0)
        return -1;
    memcpy(cfg->covariance, norm, sizeof norm);
    return 0;
}

void aim_config_get_covariance(const aim_config_key *k, const aim_config *cfg, char *buf, size_t n)
{
    (void)k;
    snprintf(buf, n, "%s", cfg->covariance);
}

int aim_config_set_name(const aim_config_key *k, aim_config *cfg, const char *text, char *why,
                        size_t n)
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
int aim_config_set_dir(const aim_config_key *k, aim_config *cfg, const char *text, char *why,
                       size_t n)
{
    if (text[0] == '|' || text[0] == '<') {
        snprintf(why, n, "starts with '%c', which gnuplot would run as a shell command",
                 text[0]);
        return -1;
    }
    return set_string(k, cfg, text, why, n);
}

/* a path, or empty: none */
int aim_config_set_optional_path(const aim_config_key *k, aim_config *cfg, const char *text,
                                 char *why, size_t n)
{
    if (text[0] == '\0') {
        FIELD(cfg, k, char)[0] = '\0';
        return 0;
    }
    return set_string(k, cfg, text, why, n);
}

int aim_config_set_start_digest(const aim_config_key *k, aim_config *cfg, const char *text,
                                char *why, size_t n)
{
    /* aim_config_get_string writes the empty value quoted, and validation sets what
     * it wrote */
    if (!strcmp(text, "\"\"")) {
        FIELD(cfg, k, char)[0] = '\0';
        return 0;
    }
    if (text[0] && !aim_digest_is_text(text)) {
        snprintf(why, n, "not a digest as aimdyn records it");
        return -1;
    }
    return aim_config_set_optional_path(k, cfg, text, why, n);
}

/* none | all | a comma-separated list of tau >= 0, kept as the shortest
 * texts that read back to the same doubles (whether they are grid points
 * is checked by aim_config_validate) */
int aim_config_set_save_state(const aim_config_key *k, aim_config *cfg, const char *text, char *why,
                              size_t n)
{
    char norm[sizeof cfg->save_state] = "";
    if (aim_config_same_word(text, "none") || aim_config_same_word(text, "all")) {
        snprintf(norm, sizeof norm, "%s", aim_config_same_word(text, "all") ? "all" : "none");
    } else {
        const char *p = text;
        while (1) {
            const char *comma = strchr(p, ',');
            const size_t len = comma ? (size_t)(comma - p) : strlen(p);
            char item[64], why_real[AIM_CONFIG_WHY], real[40];
            double tau;
            if (aim_config_clean_value(item, sizeof item, p, len) ||
                aim_config_parse_real(item, &tau, why_real, sizeof why_real) || tau < 0) {
                snprintf(why, n, "'%.*s' is not a tau >= 0", (int)(len < 40 ? len : 40), p);
                return -1;
            }
            aim_config_fmt_real(real, sizeof real, tau);
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
    if (k->set == aim_config_set_real)
        return AIM_CONFIG_REAL;
    if (k->set == aim_config_set_int)
        return AIM_CONFIG_INTEGER;
    if (k->set == aim_config_set_u64)
        return AIM_CONFIG_UNSIGNED;
    if (k->set == aim_config_set_bool)
        return AIM_CONFIG_BOOLEAN;
    return AIM_CONFIG_TEXT;
}
