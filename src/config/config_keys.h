/* The configuration's key table and the text helpers of its setters,
 * shared by the parser and validator (config.c), the table itself
 * (config_keys.c) and the metadata writer (config_write.c). Internal to
 * the library: the public interface is config.h. */
#ifndef AIM_CONFIG_KEYS_H
#define AIM_CONFIG_KEYS_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"

#define AIM_CONFIG_WHY 256          /* reason texts */
#define AIM_CONFIG_VALUE_SHOWN 160  /* longest value quoted in a message */

typedef struct {
    const char *name;
    int value;
} aim_config_enum_name;

typedef struct aim_config_key aim_config_key;
/* A setter parses text into cfg (0), or fills why and returns -1
 * (cfg then possibly partly changed: callers work on copies). */
typedef int (*aim_config_key_setter)(const aim_config_key *k, aim_config *cfg, const char *text,
                          char *why, size_t n);
/* A getter formats the current value so that the setter reads it back
 * bit-identically. */
typedef void (*aim_config_key_getter)(const aim_config_key *k, const aim_config *cfg, char *buf,
                           size_t n);

struct aim_config_key {
    const char *section;
    const char *key;
    const char *def;     /* default, as text (applied through the setter) */
    const char *allowed; /* allowed values, as text */
    const char *help;
    aim_config_key_setter set;
    aim_config_key_getter get;
    size_t offset;       /* field in aim_config (generic setters) */
    size_t size;         /* strings: buffer size */
    double lo, hi;       /* numeric range */
    unsigned flags;
    const aim_config_enum_name *names; /* enums */
};

extern const aim_config_key aim_config_keys[];
extern const int aim_config_nkeys;

/* How a key's value is typed in a JSON sidecar (src/results/sidecar.c). */
typedef enum {
    AIM_CONFIG_TEXT,
    AIM_CONFIG_REAL,
    AIM_CONFIG_INTEGER,
    AIM_CONFIG_UNSIGNED, /* 64-bit: above INT64_MAX no JSON library integer holds it */
    AIM_CONFIG_BOOLEAN
} aim_config_type;
aim_config_type aim_config_key_type(const aim_config_key *k);

/* The index of section.key in aim_config_keys, or -1; key_index: one that
 * must exist (aborts otherwise: a programming error). */
int aim_config_find_key(const char *section, const char *key);
int aim_config_key_index(const char *section, const char *key);
/* A section a file may have (its name s[0..len)); the list of them,
 * appended to msg. */
bool aim_config_known_section(const char *s, size_t len);
void aim_config_append_sections(char *msg, size_t n);

/* Appends to buf (size n, NUL-terminated) what fits. */
__attribute__((format(printf, 3, 4))) void aim_config_append(char *buf, size_t n,
                                                             const char *fmt, ...);
/* Appends a value in quotes, shortened if very long. */
void aim_config_append_value(char *buf, size_t n, const char *value);
/* s[0..len) trimmed, one layer of matching double quotes removed, into buf
 * (size n); -1 when it does not fit. */
int aim_config_clean_value(char *buf, size_t n, const char *s, size_t len);
bool aim_config_is_space(char c);
/* model.covariance's text for `tokens` tokens into cov (tokens^2) and its
 * normalised text into norm (may be NULL); 0, or -1 with the reason in
 * why. */
int aim_config_covariance_parse(const char *text, int tokens, double *cov, char *norm,
                                size_t norm_n, char *why, size_t n);

#endif
