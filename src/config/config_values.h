/* A configuration key's description and the setters and getters
 * (config_values.c) that read and write its value as text; the key table
 * (config_keys.c) is built from them. Internal to the library: the public
 * interface is config.h. */
#ifndef AIM_CONFIG_VALUES_H
#define AIM_CONFIG_VALUES_H

#include <stddef.h>

#include "config_types.h"

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

/* The numeric range of a key [lo, hi] (flags). */
enum {
    AIM_CONFIG_LO_OPEN = 1,  /* lower bound excluded */
    AIM_CONFIG_HI_OPEN = 2,  /* upper bound excluded */
    AIM_CONFIG_NO_LO = 4,    /* no lower bound */
    AIM_CONFIG_NO_HI = 8,    /* no upper bound */
    AIM_CONFIG_ZERO_OK = 16, /* 0 allowed besides the range (0 = automatic) */
};

/* Bound of the scale-type keys, derived in theory/stops.md sec. 4: with
 * scales and coefficients at most 1e6 (and order parameters at most 1e15,
 * config_keys.c) the expectation engine's largest number stays below
 * 1e150 and every rate below the largest double. */
#define AIM_CONFIG_SCALE_MAX 1e6

/* The generic kinds: a real or an int (field at offset) in the key's
 * range, a 64-bit unsigned, a boolean, an enum (names), a string (size). */
int aim_config_set_real(const aim_config_key *k, aim_config *cfg, const char *text, char *why,
                        size_t n);
void aim_config_get_real(const aim_config_key *k, const aim_config *cfg, char *buf, size_t n);
int aim_config_set_int(const aim_config_key *k, aim_config *cfg, const char *text, char *why,
                       size_t n);
void aim_config_get_int(const aim_config_key *k, const aim_config *cfg, char *buf, size_t n);
int aim_config_set_u64(const aim_config_key *k, aim_config *cfg, const char *text, char *why,
                       size_t n);
void aim_config_get_u64(const aim_config_key *k, const aim_config *cfg, char *buf, size_t n);
int aim_config_set_bool(const aim_config_key *k, aim_config *cfg, const char *text, char *why,
                        size_t n);
void aim_config_get_bool(const aim_config_key *k, const aim_config *cfg, char *buf, size_t n);
int aim_config_set_enum(const aim_config_key *k, aim_config *cfg, const char *text, char *why,
                        size_t n);
void aim_config_get_enum(const aim_config_key *k, const aim_config *cfg, char *buf, size_t n);
void aim_config_get_string(const aim_config_key *k, const aim_config *cfg, char *buf, size_t n);

/* The keys with a parser of their own. */
int aim_config_set_model_decomposition(const aim_config_key *k, aim_config *cfg, const char *text,
                                       char *why, size_t n);
int aim_config_set_activation(const aim_config_key *k, aim_config *cfg, const char *text,
                              char *why, size_t n);
void aim_config_get_activation(const aim_config_key *k, const aim_config *cfg, char *buf,
                               size_t n);
int aim_config_set_hermite(const aim_config_key *k, aim_config *cfg, const char *text, char *why,
                           size_t n);
void aim_config_get_hermite(const aim_config_key *k, const aim_config *cfg, char *buf, size_t n);
int aim_config_set_covariance(const aim_config_key *k, aim_config *cfg, const char *text,
                              char *why, size_t n);
void aim_config_get_covariance(const aim_config_key *k, const aim_config *cfg, char *buf,
                               size_t n);
int aim_config_set_name(const aim_config_key *k, aim_config *cfg, const char *text, char *why,
                        size_t n);
int aim_config_set_dir(const aim_config_key *k, aim_config *cfg, const char *text, char *why,
                       size_t n);
int aim_config_set_optional_path(const aim_config_key *k, aim_config *cfg, const char *text,
                                 char *why, size_t n);
int aim_config_set_start_digest(const aim_config_key *k, aim_config *cfg, const char *text,
                                char *why, size_t n);
int aim_config_set_save_state(const aim_config_key *k, aim_config *cfg, const char *text,
                              char *why, size_t n);

/* How a key's value is typed in a JSON sidecar (src/results/sidecar.c). */
typedef enum {
    AIM_CONFIG_TEXT,
    AIM_CONFIG_REAL,
    AIM_CONFIG_INTEGER,
    AIM_CONFIG_UNSIGNED, /* 64-bit: above INT64_MAX no JSON library integer holds it */
    AIM_CONFIG_BOOLEAN
} aim_config_type;
aim_config_type aim_config_key_type(const aim_config_key *k);

/* model.covariance's text for `tokens` tokens into cov (tokens^2) and its
 * normalised text into norm (may be NULL); 0, or -1 with the reason in
 * why. */
int aim_config_covariance_parse(const char *text, int tokens, double *cov, char *norm,
                                size_t norm_n, char *why, size_t n);

#endif
