/* aim_cli_parse: the one option loop of every command. Each command
 * describes its options in a table (aim_cli_option); this file owns the
 * getopt_long loop, the configuration assignments (--set and its
 * shorthands), integer and real values with their ranges, repeatable
 * lists, --help and the shared wording of every usage error. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gauss.h"
#include "progress.h"
#include "threading.h"

enum { MAX_OPTIONS = 24, ASSIGN_LEN = 4096, HELP = 'h', QUIET = 'q', FIRST_ID = 256 };

/* --threads: the value given, 0 when not given (its range starts at 1);
 * given twice, the option layer refuses it as every one-value option */
static int threads_value;

const aim_cli_option aim_cli_threads = {
    AIM_OPT("threads", AIM_OPT_INTEGER, 1), .lo = 1, .hi = AIM_GAUSS_MAX_THREADS,
    .allowed = " (the expectation engine's threads)", .target = &threads_value};

int aim_cli_threads_explicit(void) { return threads_value > 0; }

/* The engine's threads once a command line with --threads is parsed: its
 * value, else OMP_NUM_THREADS (a number, or OpenMP's list of one per
 * nesting level, whose first is the engine's level), else the cores this
 * process may use (aim_threading_default). On more than one, idle threads
 * are made to sleep (aim_threading_passive: aimdyn may start itself
 * again). Returns 0, or -1 after a message naming the option or
 * variable, its value and what is allowed. */
static int set_threads(const char *cmd)
{
    long v = threads_value;
    const char *env = getenv("OMP_NUM_THREADS");
    if (!v && env && *env) {
        char *end;
        errno = 0;
        v = strtol(env, &end, 10);
        if (errno || end == env || (*end && *end != ',') || v < 1 ||
            v > AIM_GAUSS_MAX_THREADS) {
            fprintf(stderr, "aimdyn %s: OMP_NUM_THREADS=%s: not allowed; allowed: an integer "
                            "from 1 to %d, or a list of them whose first counts (the "
                            "expectation engine's threads; or give --threads N)\n",
                    cmd, env, AIM_GAUSS_MAX_THREADS);
            return -1;
        }
    }
    if (!v)
        v = aim_threading_default();
    if (aim_gauss_set_threads((int)v))
        return -1;
    aim_threading_passive(cmd);
    return 0;
}

/* "png, svg, pdf" into f */
static void put_names(FILE *f, const char *const names[], int n)
{
    for (int i = 0; i < n; i++)
        fprintf(f, "%s%s", i ? ", " : "", names[i]);
}

int aim_cli_name_list(const char *cmd, const char *option, const char *value,
                      const char *const names[], int n, int *picked, int *count)
{
    *count = 0;
    for (const char *p = value;; p++) {
        const size_t len = strcspn(p, ",");
        int k = 0;
        while (k < n && (strlen(names[k]) != len || strncmp(names[k], p, len)))
            k++;
        int repeated = 0;
        for (int i = 0; k < n && i < *count; i++)
            repeated |= picked[i] == k;
        if (k == n || repeated) {
            fprintf(stderr, "aimdyn %s: %s %s: ", cmd, option, value);
            if (len == 0)
                fprintf(stderr, "an empty name");
            else
                fprintf(stderr, "'%.*s' %s", (int)len, p, repeated ? "given twice" : "unknown");
            fprintf(stderr, "; allowed: ");
            put_names(stderr, names, n);
            fprintf(stderr, ", comma-separated, each at most once\n");
            return -1;
        }
        picked[(*count)++] = k;
        p += len;
        if (!*p)
            return 0;
    }
}

/* Parses a list option's integer (--d, --order) into list, increasing. */
static int add_to_list(const char *cmd, const aim_cli_option *o, const char *arg)
{
    int *list = o->target, *count = o->count;
    char *end;
    errno = 0;
    long v = strtol(arg, &end, 10);
    if (errno || *end || end == arg || v < o->lo || v > o->hi) {
        fprintf(stderr, "aimdyn %s: --%s %s: not allowed; allowed: an integer from %ld to %ld\n",
                cmd, o->name, arg, o->lo, o->hi);
        return -1;
    }
    if (*count == o->max_count) {
        fprintf(stderr, "aimdyn %s: --%s given too often (at most %d)\n", cmd, o->name,
                o->max_count);
        return -1;
    }
    if (*count > 0 && v <= list[*count - 1]) {
        fprintf(stderr, "aimdyn %s: --%s %ld: values must be given in increasing "
                        "order without repeats\n", cmd, o->name, v);
        return -1;
    }
    list[(*count)++] = (int)v;
    return 0;
}

/* Appends the assignment prefix value ("output.dir=" "DIR") to args. */
static int add_assignment(const char *cmd, aim_cli_args *args, const char *prefix,
                          const char *value)
{
    if (args->nsets == AIM_CLI_MAX_SETS) {
        fprintf(stderr, "aimdyn %s: too many overrides (at most %d)\n", cmd, AIM_CLI_MAX_SETS);
        return -1;
    }
    const size_t len = strlen(prefix) + strlen(value);
    if (len >= ASSIGN_LEN) {
        fprintf(stderr, "aimdyn %s: override '%.60s...' too long (at most %d characters)\n",
                cmd, value, ASSIGN_LEN - 1);
        return -1;
    }
    char *set = malloc(len + 1);
    if (!set) {
        fprintf(stderr, "aimdyn %s: out of memory\n", cmd);
        return -1;
    }
    memcpy(set, prefix, strlen(prefix));
    memcpy(set + strlen(prefix), value, strlen(value) + 1);
    args->owned[args->nsets] = set;
    args->sets[args->nsets++] = set;
    return 0;
}

/* One option's value (arg NULL for one without). Returns 0 or -1 (said). */
static int take(const char *cmd, const aim_cli_option *o, const char *arg, int argc,
                char **argv, aim_cli_args *args)
{
    char *end;
    if (o->given)
        (*o->given)++;
    switch (o->kind) {
    case AIM_OPT_ASSIGN:
        if (!arg)
            return add_assignment(cmd, args, o->assign, "");
        if (!*o->assign && !strchr(arg, '=')) {
            fprintf(stderr, "aimdyn %s: --%s %s: no '='; allowed: one argument KEY=VALUE "
                            "(e.g. --%s %s=%s; `aimdyn keys` lists the keys)\n",
                    cmd, o->name, arg, o->name, arg,
                    optind < argc && argv[optind][0] != '-' ? argv[optind] : "VALUE");
            return -1;
        }
        if (!strcmp(o->assign, "output.dir=") && !strcmp(arg, "-")) {
            fprintf(stderr, "aimdyn %s: --%s -: the results are several files, not a stream; "
                            "allowed: a folder (created if missing)\n", cmd, o->name);
            return -1;
        }
        return add_assignment(cmd, args, o->assign, arg);
    case AIM_OPT_INTEGER: {
        errno = 0;
        long v = strtol(arg, &end, 10);
        if (errno || *end || end == arg || v < o->lo || v > o->hi) {
            fprintf(stderr, "aimdyn %s: --%s %s: not allowed; allowed: an integer from %ld to "
                            "%ld%s\n", cmd, o->name, arg, o->lo, o->hi,
                    o->allowed ? o->allowed : "");
            return -1;
        }
        if (!o->assign) {
            *(int *)o->target = (int)v;
            return 0;
        }
        char text[32];
        snprintf(text, sizeof text, "%ld", v);
        return add_assignment(cmd, args, o->assign, text);
    }
    case AIM_OPT_INTEGERS: return add_to_list(cmd, o, arg);
    case AIM_OPT_REAL: {
        errno = 0;
        double v = strtod(arg, &end);
        if (errno || *end || end == arg || !(o->min_open ? v > o->min : v >= o->min) ||
            !(v <= o->max)) {
            fprintf(stderr, "aimdyn %s: --%s %s: not allowed; allowed: %s\n", cmd, o->name, arg,
                    o->allowed);
            return -1;
        }
        *(double *)o->target = v;
        return 0;
    }
    case AIM_OPT_TEXT: *(const char **)o->target = arg; return 0;
    case AIM_OPT_TEXTS:
        if (*o->count == o->max_count) {
            fprintf(stderr, "aimdyn %s: --%s given more than %d times\n", cmd, o->name,
                    o->max_count);
            return -1;
        }
        ((const char **)o->target)[(*o->count)++] = arg;
        return 0;
    case AIM_OPT_FLAG: *(int *)o->target |= o->bits; return 0;
    case AIM_OPT_OWN: return o->own(o->target, arg);
    case AIM_OPT_ELSEWHERE:
        fprintf(stderr, "aimdyn %s: option --%s does not apply to this command "
                        "(see `aimdyn %s --help`)\n", cmd, o->name, cmd);
        return -1;
    }
    return -1;
}

/* An option that sets one value (a number, a file, a shorthand for one
 * key) may be given once: a second value would silently replace the
 * first. --set, lists, flags and the commands' own options may repeat;
 * an option that counts itself (given) says its own rule. */
static int sets_one_value(const aim_cli_option *o)
{
    if (o->given || !o->has_value)
        return 0;
    switch (o->kind) {
    case AIM_OPT_ASSIGN: return o->assign[0] != '\0';
    case AIM_OPT_INTEGER:
    case AIM_OPT_REAL:
    case AIM_OPT_TEXT: return 1;
    default: return 0;
    }
}

int aim_cli_parse(const aim_cli_spec *spec, int argc, char **argv, aim_cli_args *args)
{
    struct option longopts[MAX_OPTIONS + 3];
    const char *first[MAX_OPTIONS] = {NULL};
    int n = 0;
    memset(args, 0, sizeof *args);
    for (; n < spec->noptions && n < MAX_OPTIONS; n++)
        longopts[n] = (struct option){spec->options[n].name,
                                      spec->options[n].has_value ? required_argument
                                                                 : no_argument,
                                      NULL, FIRST_ID + n};
    longopts[n++] = (struct option){"help", no_argument, NULL, HELP};
    /* every command's: stderr keeps only warnings and errors */
    longopts[n++] = (struct option){"quiet", no_argument, NULL, QUIET};
    longopts[n] = (struct option){NULL, 0, NULL, 0};
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        if (c == HELP) {
            spec->help(spec->cmd);
            return 1;
        }
        if (c == QUIET) {
            aim_progress_set_quiet(1);
            continue;
        }
        if (c < FIRST_ID || c >= FIRST_ID + spec->noptions) {
            fprintf(stderr, "aimdyn %s: see `aimdyn %s --help`\n", spec->cmd, spec->cmd);
            return -1;
        }
        const aim_cli_option *o = &spec->options[c - FIRST_ID];
        if (sets_one_value(o)) {
            if (first[c - FIRST_ID]) {
                fprintf(stderr, "aimdyn %s: --%s given twice (%s, then %s); allowed: once "
                                "(only --set and the list options repeat)\n", spec->cmd,
                        o->name, first[c - FIRST_ID], optarg);
                return -1;
            }
            first[c - FIRST_ID] = optarg;
        }
        if (take(spec->cmd, o, o->has_value ? optarg : NULL, argc, argv, args))
            return -1;
    }
    for (int i = 0; i < spec->noptions; i++)
        if (spec->options[i].target == &threads_value && set_threads(spec->cmd))
            return -1;
    for (; optind < argc; optind++) {
        if (args->noperands < spec->max_operands) {
            args->operand[args->noperands++] = argv[optind];
            continue;
        }
        if (!spec->unexpected) {
            args->extra = 1;
            return 0;
        }
        fprintf(stderr, "aimdyn %s: unexpected argument '%s' (%s)\n", spec->cmd, argv[optind],
                spec->unexpected);
        return -1;
    }
    return 0;
}

void aim_cli_args_free(aim_cli_args *args)
{
    for (int i = 0; i < args->nsets; i++)
        free(args->owned[i]);
    memset(args, 0, sizeof *args);
}

int aim_cli_parse_files(const char *cmd, const aim_cli_option *options, int noptions, int argc,
                        char **argv, int *extra)
{
    const aim_cli_spec spec = {cmd, options, noptions, aim_cli_usage_to_stdout, 0, NULL};
    aim_cli_args args;
    const int rc = aim_cli_parse(&spec, argc, argv, &args);
    *extra = args.extra;
    aim_cli_args_free(&args);
    return rc;
}
