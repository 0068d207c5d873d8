/* The configuration's text helpers (config_text.c): words without case,
 * values trimmed and quoted, messages appended to, reals as text. They
 * know nothing of the configuration itself. Internal to the library. */
#ifndef AIM_CONFIG_TEXT_H
#define AIM_CONFIG_TEXT_H

#include <stdbool.h>
#include <stddef.h>

#define AIM_CONFIG_WHY 256          /* reason texts */
#define AIM_CONFIG_VALUE_SHOWN 160  /* longest value quoted in a message */

/* c in lower case (ASCII); a and b the same word up to case. */
int aim_config_lower(int c);
bool aim_config_same_word(const char *a, const char *b);
bool aim_config_is_space(char c);

/* s[0..len) trimmed, one layer of matching double quotes removed, into buf
 * (size n); -1 when it does not fit. */
int aim_config_clean_value(char *buf, size_t n, const char *s, size_t len);
/* Appends to buf (size n, NUL-terminated) what fits. */
__attribute__((format(printf, 3, 4))) void aim_config_append(char *buf, size_t n,
                                                             const char *fmt, ...);
/* Appends a value in quotes, shortened if very long. */
void aim_config_append_value(char *buf, size_t n, const char *value);

/* x as the shortest %.Ng that reads back bit-identically, into buf. */
void aim_config_fmt_real(char *buf, size_t n, double x);
/* The whole string s as a finite real: 0, or -1 with why (size n) filled. */
int aim_config_parse_real(const char *s, double *out, char *why, size_t n);
/* A list of at most max reals separated by spaces, commas or semicolons:
 * their count, or -1 with why filled. */
int aim_config_parse_list(const char *s, double *vals, int max, char *why, size_t n);

#endif
