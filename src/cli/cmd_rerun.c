/* aimdyn rerun: a result file made again from its JSON sidecar (its
 * command line and configuration), by the same version of aimdyn. */
#define _DEFAULT_SOURCE /* realpath */

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "sidecar.h"
#include "version.h"

/* The commands whose result files come from one configuration, loaded
 * once by aim_cli_load_config (a sweep's points each have their own). */
static int supported(const char *cmd)
{
    static const char *const ok[] = {"ode", "sgd", "compare", "recovery"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        if (!strcmp(cmd, ok[i]))
            return 1;
    return 0;
}

static int ends_with(const char *s, const char *tail)
{
    const size_t n = strlen(s), k = strlen(tail);
    return n >= k && !strcmp(s + n - k, tail);
}

/* The folder part of path into buf: "." when there is none. */
static void folder_of(const char *path, char *buf, size_t n)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(buf, n, ".");
    else if (slash == path)
        snprintf(buf, n, "/");
    else
        snprintf(buf, n, "%.*s", (int)(slash - path), path);
}

/* a and b name the same existing folder */
static int same_folder(const char *a, const char *b)
{
    char ra[PATH_MAX], rb[PATH_MAX];
    return realpath(a, ra) && realpath(b, rb) && !strcmp(ra, rb);
}

int aim_cmd_rerun(int argc, char **argv, int (*run)(int, char **))
{
    const char *out = NULL;
    const aim_cli_option options[] = {{AIM_OPT("out", AIM_OPT_TEXT, 1), .target = &out}};
    const aim_cli_spec spec = {"rerun", options, 1, aim_cli_usage_to_stdout, 1,
                               "one FILE: a result table NAME.tsv or its sidecar NAME.json"};
    aim_cli_args args;
    const int parsed = aim_cli_parse(&spec, argc, argv, &args);
    const char *file = parsed == 0 && args.noperands == 1 ? args.operand[0] : NULL;
    aim_cli_args_free(&args);
    if (parsed)
        return parsed > 0 ? 0 : AIM_EXIT_USAGE;
    if (!file) {
        fprintf(stderr, "aimdyn rerun: needs FILE, a result table NAME.tsv or its sidecar "
                        "NAME.json (see `aimdyn rerun --help`)\n");
        return AIM_EXIT_USAGE;
    }
    if (out && !*out) {
        fprintf(stderr, "aimdyn rerun: --out '': not allowed; allowed: a folder\n");
        return AIM_EXIT_USAGE;
    }
    char json[4200], err[4400];
    if (ends_with(file, ".json"))
        snprintf(json, sizeof json, "%s", file);
    else if (aim_sidecar_path(file, json, sizeof json)) {
        fprintf(stderr, "aimdyn rerun: '%s': path too long\n", file);
        return AIM_EXIT_USAGE;
    }
    aim_sidecar_record rec;
    if (aim_sidecar_read(json, &rec, err, sizeof err)) {
        fprintf(stderr, "aimdyn rerun: %s\n", err);
        return AIM_EXIT_USAGE;
    }
    int rc = AIM_EXIT_USAGE;
    const char *cmd = rec.argv[1];
    char folder[4200];
    folder_of(json, folder, sizeof folder);
    if (out)
        snprintf(folder, sizeof folder, "%s", out);
    aim_config_error why;
    char assignment[4300];
    snprintf(assignment, sizeof assignment, "output.dir=%s", folder);
    if (strcmp(rec.version, AIM_VERSION))
        fprintf(stderr, "aimdyn rerun: %s was written by aimdyn %s, this is aimdyn %s; rerun it "
                        "with aimdyn %s (another version may compute other numbers)\n", json,
                rec.version, AIM_VERSION, rec.version);
    else if (!supported(cmd))
        fprintf(stderr, "aimdyn rerun: %s was written by `aimdyn %s`; allowed: files of ode, "
                        "sgd, compare and recovery (run a %s's recorded command line "
                        "itself)\n", json, cmd, cmd);
    /* the recorded folder's own text where it is the same folder, so
     * that the '# config output.dir' line is the same too */
    else if (!same_folder(folder, rec.cfg.dir) && aim_config_set(&rec.cfg, assignment, &why))
        fprintf(stderr, "aimdyn rerun: --out %s: %s\n", folder, why.message);
    else if (aim_sidecar_set_command_line(rec.argc, rec.argv))
        fprintf(stderr, "aimdyn rerun: out of memory\n");
    else {
        /* getopt reorders the array it parses: a copy, the record keeps
         * its own */
        char **copy = malloc(sizeof *copy * ((size_t)rec.argc + 1));
        if (!copy) {
            fprintf(stderr, "aimdyn rerun: out of memory\n");
        } else {
            memcpy(copy, rec.argv, sizeof *copy * ((size_t)rec.argc + 1));
            aim_cli_use_recorded_config(&rec.cfg);
            rc = run(rec.argc, copy);
            aim_cli_use_recorded_config(NULL);
            free(copy);
        }
    }
    aim_sidecar_record_free(&rec);
    return rc;
}
