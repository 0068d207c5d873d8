/* aim_config: the run configuration (model, student, teacher, training,
 * ode, sgd, output), read from an INI file with --set overrides.
 *
 * Every key, its default and its allowed range are documented in
 * docs/config.md; aim_config_describe() prints the same table. */
#ifndef AIM_CONFIG_H
#define AIM_CONFIG_H

#include <stddef.h>
#include <stdio.h>

#include "config_types.h"

/* Defaults: the built-in example (direct, centred, T = 2,
 * sigma = He1 + He2/sqrt 2). */
void aim_config_defaults(aim_config *cfg);

/* A configuration on the heap holding the defaults, for callers that
 * cannot size an aim_config themselves (a foreign-function interface such
 * as Python's ctypes); NULL when out of memory. Free it with
 * aim_config_free (NULL is allowed). */
aim_config *aim_config_new(void);
void aim_config_free(aim_config *cfg);

/* Reads an INI file on top of whatever cfg holds (normally the
 * defaults). Returns 0, or -1 with err filled ("FILE:LINE: section.key =
 * "value": reason; allowed: ..."); cfg is unchanged on error. path may be
 * NULL (cfg untouched). Besides [section] key = value, a top-level
 * "section.key = value" line is accepted, so aim_config_write's output
 * with an empty prefix is itself a config file. */
int aim_config_load(aim_config *cfg, const char *path, aim_config_error *err);

/* Applies one "section.key=value" override (cfg unchanged on error).
 * Returns 0 or -1. */
int aim_config_set(aim_config *cfg, const char *assignment,
                   aim_config_error *err);

/* Writes every key as "PREFIXsection.key = value" lines (output
 * metadata; prefix NULL = ""); reals with %.17g, so the text reloads
 * bit-identically. */
void aim_config_write(const aim_config *cfg, FILE *out, const char *prefix);

/* The value of the key name ("section.key") as aim_config_write writes
 * it, into buf (size n). Returns 0, or -1 with err filled (may be NULL)
 * for an unknown key or a buf too small for the value. */
int aim_config_get(const aim_config *cfg, const char *name, char *buf, size_t n,
                   aim_config_error *err);

/* Prints the key reference table (used by --help). */
void aim_config_describe(FILE *out);

/* Number of columns p = round(rho d), at least 1, for a matrix spec. */
int aim_config_columns(const aim_matrix_spec *spec, int d);

/* The matrix process's Euler-Maruyama step in tau: matrix.dtau, or
 * training.horizon / 512 when it is 0. */
double aim_config_matrix_step(const aim_config *cfg);

#endif
