/* aim_cli: configuration loading and checks shared by the commands. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "config_check.h"
#include "compare.h"
#include "gauss.h"
#include "hierarchy.h"
#include "progress.h"
#include "ranks.h"
#include "threading.h"

const char *const aim_cli_usage_common =
    "  --set section.key=value  override one configuration key (repeatable)\n"
    "  --out DIR                output directory (output.dir, default out)\n"
    "  --name NAME              file stem (output.name, default aimdyn)\n"
    "  --quiet                  standard error only for warnings and errors: no\n"
    "                           progress, no notes (standard output unchanged)\n"
    "  -h, --help               this help\n"
    "CONFIG.ini may be - : the configuration read from standard input.\n";

const char *aim_cli_usage_threads(void)
{
    static char text[1024];
    snprintf(text, sizeof text,
             "  --threads N              threads of the expectation engine's quasi-random\n"
             "                           rule, and of the matrix process's replicas (run\n"
             "                           N at a time), 1..%d (default: OMP_NUM_THREADS,\n"
             "                           else the cores this process may use: %d here);\n"
             "                           the results are the same, bit for bit, for every\n"
             "                           N. Idle threads sleep (OMP_WAIT_POLICY=passive\n"
             "                           unless it is set). Worker processes (--jobs) run\n"
             "                           one each unless --threads is given: keep jobs x\n"
             "                           threads at most the cores\n",
             AIM_GAUSS_MAX_THREADS, aim_threading_default());
    return text;
}

/* What building the largest hierarchy allowed cost, measured with
 * /usr/bin/time (`aimdyn hierarchy --order 7`, untied, general teacher)
 * on the shared 2-core development machine under a load of 10-18: 25.5 s
 * of CPU time (3 min 53 s wall) and 1.39 GB (docs/config.md) */
#define BUILD_COST                                                                   \
    "for scale, `aimdyn hierarchy` at untied order 7 (25245 equations) took 25.5 s " \
    "of CPU time and 1.39 GB of memory when measured (docs/config.md)"

int aim_cli_hierarchy_fits(const char *cmd, const aim_config *cfg, int order)
{
    /* the largest size noted so far: a sweep loads a configuration per point */
    static double noted = 0.0;
    const aim_model_ops *ops = aim_model_ops_of(cfg);
    if (!ops->hierarchy)
        return 0;
    aim_alphabet ab;
    ops->alphabet(cfg, &ab);
    const char *kind = ops->name;
    const double equations = aim_hierarchy_equations(&ab, "Tt", order);
    if (equations > AIM_HIERARCHY_MAX_EQUATIONS) {
        int fits = order;
        while (fits > 1 && aim_hierarchy_equations(&ab, "Tt", fits) > AIM_HIERARCHY_MAX_EQUATIONS)
            fits--;
        fprintf(stderr, "aimdyn %s: hierarchy.order = %d: the %s hierarchy of this order has "
                        "%.0f equations; allowed: at most %d equations (the untied order-7 "
                        "hierarchy), hierarchy.order <= %d for this student and teacher (the "
                        "size grows about 5-fold per order, the time and memory to build it "
                        "faster: see docs/config.md)\n",
                cmd, order, kind, equations, AIM_HIERARCHY_MAX_EQUATIONS, fits);
        return -1;
    }
    if (equations >= AIM_HIERARCHY_LARGE_EQUATIONS && equations > noted) {
        noted = equations;
        aim_progress_note("aimdyn %s: note: hierarchy.order = %d: the %s hierarchy of this "
                          "order has %.0f equations, built before the run starts; " BUILD_COST
                          "\n", cmd, order, kind, equations);
    }
    return 0;
}

static const aim_config *recorded_config;

void aim_cli_use_recorded_config(const aim_config *cfg)
{
    recorded_config = cfg;
}

int aim_cli_load_config(const char *cmd, const char *path, const char *const *sets,
                        int nsets, aim_config *cfg)
{
    aim_config_error err;
    int rc = 0;
    if (recorded_config) {
        *cfg = *recorded_config;
    } else {
        aim_config_defaults(cfg);
        if (path && !strcmp(path, "-") && aim_ranks_count() > 1) {
            fprintf(stderr, "aimdyn %s: configuration -: standard input reaches rank 0 only "
                            "under MPI; allowed: a configuration file that every rank reads\n",
                    cmd);
            return -1;
        }
        rc = aim_config_load(cfg, path, &err);
        for (int i = 0; rc == 0 && i < nsets; i++)
            rc = aim_config_set(cfg, sets[i], &err);
    }
    if (rc == 0)
        rc = aim_config_validate(cfg, &err);
    if (rc) {
        fprintf(stderr, "aimdyn %s: %s\n", cmd, err.message);
        return -1;
    }
    /* a saved state starts one run: ode, sgd and compare read it */
    if (cfg->start_file[0] && strcmp(cmd, "ode") && strcmp(cmd, "sgd") &&
        strcmp(cmd, "compare") && strcmp(cmd, "hierarchy")) {
        fprintf(stderr, "aimdyn %s: training.start_file = '%s': %s does not start from a saved "
                        "state; allowed: training.start_file empty (ode, sgd and compare read "
                        "it)\n", cmd, cfg->start_file, cmd);
        return -1;
    }
    return aim_cli_hierarchy_fits(cmd, cfg, cfg->order);
}

/* gnuplot runs a file name that starts with '|' (output) or '<' (data)
 * as a shell command: such names are refused where the user gives them,
 * and every name reaches gnuplot with "./" in front anyway (plot.c). */
static int runs_as_command(const char *cmd, const char *opt, const char *value)
{
    if (value[0] != '|' && value[0] != '<')
        return 0;
    fprintf(stderr, "aimdyn %s: %s %s: not allowed: gnuplot would run a name that starts with "
                    "'%c' as a shell command; allowed: a file name that does not start with "
                    "'|' or '<'\n", cmd, opt, value, value[0]);
    return 1;
}

/* Why stem cannot name a figure (into why, n bytes), or 0 when it can:
 * one line, a file name after the last '/', a directory that exists and
 * is writable. */
static int figure_stem_refused(const char *stem, char *why, size_t n)
{
    const size_t len = strlen(stem);
    if (len == 0 || stem[len - 1] == '/') {
        snprintf(why, n, "no file name after the directory part");
        return 1;
    }
    if (strpbrk(stem, "\r\n")) {
        snprintf(why, n, "a line break in the name");
        return 1;
    }
    const char *slash = strrchr(stem, '/');
    char *dir = !slash ? strdup(".") : slash == stem ? strdup("/")
                                                     : strndup(stem, (size_t)(slash - stem));
    if (!dir) {
        snprintf(why, n, "out of memory");
        return 1;
    }
    const int refused = access(dir, W_OK) != 0;
    if (refused)
        snprintf(why, n, "its directory '%s': %s", dir, strerror(errno));
    free(dir);
    return refused;
}

int aim_cli_check_figure(const char *cmd, const char *opt, const char *stem)
{
    if (runs_as_command(cmd, opt, stem))
        return -1;
    char why[600];
    if (figure_stem_refused(stem, why, sizeof why)) {
        fprintf(stderr, "aimdyn %s: %s '%s': not allowed (%s); allowed: a file stem on one "
                        "line in an existing writable directory, a directory part and a file "
                        "name (STEM.png, STEM.svg and its gnuplot script STEM.gp are written)\n",
                cmd, opt, stem, why);
        return -1;
    }
    return 0;
}

int aim_cli_check_input(const char *cmd, const char *opt, const char *path)
{
    return runs_as_command(cmd, opt, path) ? -1 : 0;
}

int aim_cli_lock_figure(const char *stem, aim_atomic_set **set)
{
    const char *slash = strrchr(stem, '/');
    char *dir = !slash ? strdup(".") : slash == stem ? strdup("/")
                                                     : strndup(stem, (size_t)(slash - stem));
    const char *base = slash ? slash + 1 : stem;
    if (!dir) {
        fprintf(stderr, "aimdyn: out of memory\n");
        return -1;
    }
    int rc = aim_atomic_lock(dir, base, "choose another figure stem");
    if (rc == 0 && set && !(*set = aim_atomic_set_create(dir, base)))
        rc = -1;
    free(dir);
    return rc;
}

const char *aim_cli_tau_text(char *buf, size_t n, double tau, const char *none)
{
    if (isnan(tau))
        snprintf(buf, n, "%s", none);
    else
        snprintf(buf, n, "%.6g", tau);
    return buf;
}
