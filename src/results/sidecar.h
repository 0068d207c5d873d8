/* aim_sidecar: the JSON file beside every result table (NAME-ode.tsv ->
 * NAME-ode.json), renamed into place together with its table (aim_tsv,
 * aim_atomic), so that neither is left without the other. It holds what
 * the table's '#' lines hold, typed, and what they do not: the exact
 * command line, the library versions and CVODE's counters
 * (docs/config.md, "The JSON sidecar"). `aimdyn rerun` reads it back.
 *
 * Written with jansson (Debian's libjansson-dev) rather than by hand:
 * JSON string escaping and UTF-8 checks are easy to get subtly wrong. */
#ifndef AIM_SIDECAR_H
#define AIM_SIDECAR_H

#include <stddef.h>

#include "atomic.h"
#include "config.h"

/* The format's name, first key of every sidecar. */
#define AIM_SIDECAR_FORMAT "aimdyn sidecar 1"

/* The command line that every sidecar of the process records (argv
 * copied; the last call wins). Returns 0, or -1 when out of memory. */
int aim_sidecar_set_command_line(int argc, char *const argv[]);

typedef struct aim_sidecar aim_sidecar;

/* A sidecar for the table at path (its final name), written by command
 * under cfg (NULL: a table of no one configuration). NULL when out of
 * memory (said). */
aim_sidecar *aim_sidecar_create(const char *path, const char *command, const aim_config *cfg);
void aim_sidecar_free(aim_sidecar *sc);

/* Adds one CVODE integration to the sidecar's "cvode" list: what it was
 * (e.g. "trajectory") and its n counters, names[i] = values[i]. Returns
 * 0, or -1 when out of memory. */
int aim_sidecar_add_integration(aim_sidecar *sc, const char *what, int n,
                                const char *const names[], const long values[]);

/* Adds name to the files of the run (its "outputs"). Returns 0, or -1
 * when out of memory. */
int aim_sidecar_add_output(aim_sidecar *sc, const char *name);

/* The sidecar's path of the table path: its extension (".tsv") replaced
 * by ".json", or ".json" appended. Returns 0, or -1 when it does not fit
 * in n. */
int aim_sidecar_path(const char *path, char *buf, size_t n);

/* Writes sc as JSON into f. Returns 0, or -1 (said). */
int aim_sidecar_write(const aim_sidecar *sc, aim_atomic_file *f);

/* A sidecar read back: the version that wrote it, its command line
 * (argv, NULL-terminated), the command word and the configuration. */
typedef struct {
    char *version;
    char *command;
    int argc;
    char **argv;
    aim_config cfg;
} aim_sidecar_record;

/* Reads the sidecar at path (a regular file of at most 16 MiB): every
 * key of the configuration present and accepted by the configuration's
 * own setters. Returns 0, or -1 with the reason and what is allowed in
 * err (size n). */
int aim_sidecar_read(const char *path, aim_sidecar_record *rec, char *err, size_t n);
void aim_sidecar_record_free(aim_sidecar_record *rec);

#endif
