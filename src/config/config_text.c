/* The configuration's text helpers: words compared without case, values
 * trimmed and quoted, messages appended to, reals read and written so
 * that they read back bit-identically. They know nothing of the
 * configuration: the setters (config_values.c), the parser (config.c) and
 * the check (src/students/config_check.c) build on them. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_text.h"

int aim_config_lower(int c) { return (c >= 'A' && c <= 'Z') ? c - 'A' + 'a' : c; }

bool aim_config_same_word(const char *a, const char *b) /* ASCII, no case */
{
    while (*a && *b &&
           aim_config_lower((unsigned char)*a) == aim_config_lower((unsigned char)*b)) {
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
void aim_config_fmt_real(char *buf, size_t n, double x)
{
    for (int prec = 1; prec < 17; prec++) {
        snprintf(buf, n, "%.*g", prec, x);
        if (strtod(buf, NULL) == x && signbit(strtod(buf, NULL)) == signbit(x))
            return;
    }
    snprintf(buf, n, "%.17g", x);
}

/* Whole-string finite real. */
int aim_config_parse_real(const char *s, double *out, char *why, size_t n)
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
int aim_config_parse_list(const char *s, double *vals, int max, char *why, size_t n)
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
        if (aim_config_parse_real(tok, &vals[count], sub, sizeof sub) != 0) {
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
