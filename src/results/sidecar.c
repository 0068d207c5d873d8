/* aim_sidecar: JSON sidecars of the result tables, through jansson. */
#define _POSIX_C_SOURCE 200809L

#include "sidecar.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gsl/gsl_version.h>
#include <jansson.h>
#include <sundials/sundials_version.h>
#ifdef AIM_HAVE_OPENBLAS_CONFIG
#include <cblas.h>
#endif

#include "config_keys.h"
#include "input.h"
#include "version.h"

struct aim_sidecar {
    json_t *root;
};

/* ---- the command line ---- */

static json_t *command_line;      /* array of strings */
static int command_line_exact = 1; /* every argument valid UTF-8 */

/* s as a JSON string: as is when it is UTF-8; else each byte that is not
 * part of a valid sequence becomes U+FFFD (and *exact is cleared). */
static json_t *utf8_string(const char *s, int *exact)
{
    json_t *j = json_string(s);
    if (j)
        return j;
    *exact = 0;
    const size_t n = strlen(s);
    char *t = malloc(3 * n + 1);
    if (!t)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        /* the longest valid sequence at i: jansson judges it */
        size_t len = 0;
        for (size_t l = 1; l <= 4 && i + l <= n && !len; l++) {
            json_t *probe = json_stringn(s + i, l);
            if (probe)
                len = l;
            json_decref(probe);
        }
        if (len) {
            memcpy(t + k, s + i, len);
            k += len;
            i += len;
        } else {
            memcpy(t + k, "\xEF\xBF\xBD", 3);
            k += 3;
            i++;
        }
    }
    j = json_stringn(t, k);
    free(t);
    return j;
}

int aim_sidecar_set_command_line(int argc, char *const argv[])
{
    json_t *a = json_array();
    int exact = 1;
    for (int i = 0; a && i < argc; i++)
        if (json_array_append_new(a, utf8_string(argv[i], &exact))) {
            json_decref(a);
            a = NULL;
        }
    if (!a)
        return -1;
    json_decref(command_line);
    command_line = a;
    command_line_exact = exact;
    return 0;
}

/* ---- writing ---- */

static json_t *libraries(void)
{
    char sundials[64] = "";
    if (SUNDIALSGetVersion(sundials, (int)sizeof sundials) != 0)
        snprintf(sundials, sizeof sundials, "unknown");
    json_t *lib = json_pack("{s:s, s:s, s:s, s:s}", "sundials", sundials, "gsl", gsl_version,
                            "cblas", AIM_CBLAS_PACKAGE, "jansson", jansson_version_str());
#ifdef AIM_HAVE_OPENBLAS_CONFIG
    if (lib && json_object_set_new(lib, "openblas_config", json_string(openblas_get_config()))) {
        json_decref(lib);
        lib = NULL;
    }
#endif
    return lib;
}

/* One key's value, typed as the key table says; a real that JSON cannot
 * hold (inf, nan) and an unsigned integer above INT64_MAX are kept as
 * their text. */
static json_t *typed_value(const aim_config_key *k, const char *text)
{
    char *end;
    switch (aim_config_key_type(k)) {
    case AIM_CONFIG_REAL: {
        const double v = strtod(text, &end);
        return isfinite(v) && !*end ? json_real(v) : json_string(text);
    }
    case AIM_CONFIG_INTEGER:
        return json_integer(strtoll(text, NULL, 10));
    case AIM_CONFIG_UNSIGNED: {
        const unsigned long long v = strtoull(text, NULL, 10);
        return v <= INT64_MAX ? json_integer((json_int_t)v) : json_string(text);
    }
    case AIM_CONFIG_BOOLEAN:
        return json_boolean(!strcmp(text, "true"));
    case AIM_CONFIG_TEXT:
        break;
    }
    return json_string(text);
}

/* {"section": {"key": value, ...}, ...}, every key of the table */
static json_t *configuration(const aim_config *cfg)
{
    json_t *all = json_object();
    for (int i = 0; all && i < aim_config_nkeys; i++) {
        const aim_config_key *k = &aim_config_keys[i];
        char text[2200];
        k->get(k, cfg, text, sizeof text);
        json_t *section = json_object_get(all, k->section);
        if (!section && json_object_set_new(all, k->section, section = json_object()))
            section = NULL;
        if (!section || json_object_set_new(section, k->key, typed_value(k, text))) {
            json_decref(all);
            all = NULL;
        }
    }
    return all;
}

/* The seeds of cfg's runs: sgd.seed, sgd.seed + 1, ... (sgd.seeds of
 * them); kept as text above INT64_MAX, as sgd.seed is. */
static json_t *seeds(const aim_config *cfg)
{
    json_t *a = json_array();
    for (int i = 0; a && i < cfg->seeds; i++) {
        const uint64_t s = cfg->seed + (uint64_t)i;
        char text[32];
        snprintf(text, sizeof text, "%" PRIu64, s);
        if (json_array_append_new(a, s <= INT64_MAX ? json_integer((json_int_t)s)
                                                    : json_string(text))) {
            json_decref(a);
            a = NULL;
        }
    }
    return a;
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

int aim_sidecar_path(const char *path, char *buf, size_t n)
{
    const char *base = base_name(path), *dot = strrchr(base, '.');
    const size_t stem = dot && dot != base ? (size_t)(dot - path) : strlen(path);
    const int len = snprintf(buf, n, "%.*s.json", (int)stem, path);
    return len < 0 || (size_t)len >= n ? -1 : 0;
}

/* The working directory, against which the command line's relative paths
 * (a configuration file, --out) and a kept gnuplot script's file names
 * are read; null when it cannot be found (removed, or a path too long). */
static json_t *working_directory(void)
{
    char cwd[4096];
    int exact = 1;
    return getcwd(cwd, sizeof cwd) ? utf8_string(cwd, &exact) : json_null();
}

aim_sidecar *aim_sidecar_create(const char *path, const char *command, const aim_config *cfg)
{
    aim_sidecar *sc = calloc(1, sizeof *sc);
    int exact = command_line_exact;
    json_t *cmd = command ? utf8_string(command, &exact) : json_null();
    json_t *argv = command_line ? json_copy(command_line) : json_array();
    /* json_pack takes the references of its "o" values, also when it fails */
    if (sc)
        sc->root = json_pack("{s:s, s:s, s:o, s:o, s:b, s:o, s:o, s:s, s:[], s:[]}", "format",
                             AIM_SIDECAR_FORMAT, "aimdyn_version", AIM_VERSION, "command", cmd,
                             "command_line", argv, "command_line_exact", exact, "cwd",
                             working_directory(), "libraries", libraries(), "table",
                             base_name(path), "outputs", "cvode");
    else {
        json_decref(cmd);
        json_decref(argv);
    }
    if (sc && (!sc->root ||
               (cfg && (json_object_set_new(sc->root, "configuration", configuration(cfg)) ||
                        json_object_set_new(sc->root, "seeds", seeds(cfg)))))) {
        aim_sidecar_free(sc);
        sc = NULL;
    }
    if (!sc)
        fprintf(stderr, "aimdyn: out of memory (the JSON sidecar of '%s')\n", path);
    return sc;
}

void aim_sidecar_free(aim_sidecar *sc)
{
    if (!sc)
        return;
    json_decref(sc->root);
    free(sc);
}

int aim_sidecar_add_output(aim_sidecar *sc, const char *name)
{
    int exact = 1;
    return json_array_append_new(json_object_get(sc->root, "outputs"), utf8_string(name, &exact));
}

int aim_sidecar_add_integration(aim_sidecar *sc, const char *what, int n,
                                const char *const names[], const long values[])
{
    int exact = 1;
    json_t *one = json_pack("{s:o}", "integration", utf8_string(what, &exact));
    for (int i = 0; one && i < n; i++)
        if (json_object_set_new(one, names[i], json_integer((json_int_t)values[i]))) {
            json_decref(one);
            one = NULL;
        }
    return json_array_append_new(json_object_get(sc->root, "cvode"), one);
}

int aim_sidecar_write(const aim_sidecar *sc, aim_atomic_file *f)
{
    char *text = json_dumps(sc->root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    errno = 0;
    const int rc = text && aim_atomic_write(f, text, strlen(text)) == 0 &&
                           aim_atomic_write(f, "\n", 1) == 0
                       ? 0
                       : -1;
    if (rc)
        fprintf(stderr, "aimdyn: cannot write '%s': %s\n", aim_atomic_final(f),
                !text ? "out of memory" : strerror(errno ? errno : EIO));
    free(text);
    return rc;
}

/* ---- reading ---- */

/* A configuration value back to the text its key's setter reads (a real
 * to 17 digits: the same double). Returns 0, or -1 when of a JSON type
 * the key cannot hold. */
static int value_text(const json_t *v, char *buf, size_t n)
{
    if (json_is_string(v))
        snprintf(buf, n, "%s", json_string_value(v));
    else if (json_is_integer(v))
        snprintf(buf, n, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    else if (json_is_real(v))
        snprintf(buf, n, "%.17g", json_real_value(v));
    else if (json_is_boolean(v))
        snprintf(buf, n, "%s", json_is_true(v) ? "true" : "false");
    else
        return -1;
    return 0;
}

static int read_configuration(const json_t *all, aim_config *cfg, char *err, size_t n)
{
    aim_config_defaults(cfg);
    if (!json_is_object(all)) {
        snprintf(err, n, "no \"configuration\" object");
        return -1;
    }
    for (int i = 0; i < aim_config_nkeys; i++) {
        const aim_config_key *k = &aim_config_keys[i];
        const json_t *v = json_object_get(json_object_get(all, k->section), k->key);
        char text[2200], assignment[2400];
        aim_config_error why;
        if (!v || value_text(v, text, sizeof text)) {
            snprintf(err, n, "configuration %s.%s: %s", k->section, k->key,
                     v ? "not a string, number or boolean" : "missing");
            return -1;
        }
        snprintf(assignment, sizeof assignment, "%s.%s=%s", k->section, k->key, text);
        if (aim_config_set(cfg, assignment, &why)) {
            snprintf(err, n, "configuration: %s", why.message);
            return -1;
        }
    }
    return 0;
}

/* A sidecar holds the command line (at most ARG_MAX, 2 MiB on Linux by
 * default, and up to 6 times longer as JSON escapes), the configuration
 * and the list of output files: 16 MiB is room for all of that. */
#define SIDECAR_MAX_BYTES ((size_t)16 << 20)

int aim_sidecar_read(const char *path, aim_sidecar_record *rec, char *err, size_t n)
{
    static const char what[] = "the JSON sidecar that aimdyn writes beside each result "
                               "table (docs/config.md, \"The JSON sidecar\")";
    static const aim_input_kind kind = {SIDECAR_MAX_BYTES, what, 0};
    memset(rec, 0, sizeof *rec);
    char *text;
    size_t len;
    if (aim_input_read(AT_FDCWD, path, NULL, &kind, &text, &len, err, n))
        return -1;
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    free(text);
    if (!root) {
        snprintf(err, n, "%s:%d: %s; allowed: %s", path, jerr.line, jerr.text, what);
        return -1;
    }
    const json_t *format = json_object_get(root, "format"),
                 *version = json_object_get(root, "aimdyn_version"),
                 *command = json_object_get(root, "command"),
                 *argv = json_object_get(root, "command_line");
    char why[3000] = "";
    if (!json_is_string(format) || strcmp(json_string_value(format), AIM_SIDECAR_FORMAT))
        snprintf(why, sizeof why, "not an aimdyn sidecar (no \"format\": \"%s\")",
                 AIM_SIDECAR_FORMAT);
    else if (!json_is_string(version) || !json_is_string(command) || !json_is_array(argv) ||
             json_array_size(argv) < 2)
        snprintf(why, sizeof why, "no \"aimdyn_version\", \"command\" or \"command_line\"");
    else if (!json_is_true(json_object_get(root, "command_line_exact")))
        snprintf(why, sizeof why, "its command line was not valid UTF-8, so it is not "
                                  "recorded exactly");
    if (!why[0]) {
        rec->version = strdup(json_string_value(version));
        rec->command = strdup(json_string_value(command));
        rec->argc = (int)json_array_size(argv);
        rec->argv = calloc((size_t)rec->argc + 1, sizeof *rec->argv);
        for (int i = 0; rec->argv && i < rec->argc; i++) {
            const json_t *a = json_array_get(argv, (size_t)i);
            if (!json_is_string(a)) {
                snprintf(why, sizeof why, "command_line[%d] is not a string", i);
                break;
            }
            if (!(rec->argv[i] = strdup(json_string_value(a))))
                break;
        }
        if (!why[0] && (!rec->version || !rec->command || !rec->argv ||
                        !rec->argv[rec->argc - 1]))
            snprintf(why, sizeof why, "out of memory");
    }
    if (!why[0] &&
        read_configuration(json_object_get(root, "configuration"), &rec->cfg, why, sizeof why) ==
            0) {
        json_decref(root);
        return 0;
    }
    snprintf(err, n, "%s: %s; allowed: %s", path, why, what);
    json_decref(root);
    aim_sidecar_record_free(rec);
    return -1;
}

void aim_sidecar_record_free(aim_sidecar_record *rec)
{
    for (int i = 0; rec->argv && i < rec->argc; i++)
        free(rec->argv[i]);
    free(rec->argv);
    free(rec->version);
    free(rec->command);
    memset(rec, 0, sizeof *rec);
}
