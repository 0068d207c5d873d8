/* The options of ode, sgd and compare (and hierarchy's, plot's --d and
 * --order lists): parsed once into run_options. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "grid.h"
#include "model.h"
#include "model.h"
#include "sgd.h"
#include "tsv.h"

const char *const aim_cli_student_names[MAX_STUDENTS] = {"direct", "tied", "untied"};

/* compare --students LIST: the configuration of each student, in the
 * order given, from the common one; -1 after a message. The teacher,
 * data, seeds and learning rate are those of cfg for all of them (SGD
 * draws its teacher and samples from streams that do not depend on the
 * student, src/draw.h). */
static int parse_students(const char *list, run_options *ro)
{
    char buf[64];
    if (snprintf(buf, sizeof buf, "%s", list) >= (int)sizeof buf) {
        fprintf(stderr, "aimdyn compare: --students %.60s...: too long; allowed: a comma-separated "
                        "list of direct, tied, untied\n", list);
        return -1;
    }
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int k = -1;
        for (int i = 0; i < MAX_STUDENTS; i++)
            if (!strcmp(tok, aim_cli_student_names[i]))
                k = i;
        for (int s = 0; k >= 0 && s < ro->nstudents; s++)
            if ((int)ro->student_cfg[s].decomposition == k) {
                fprintf(stderr, "aimdyn compare: --students %s: '%s' given twice\n", list, tok);
                return -1;
            }
        if (k < 0) {
            fprintf(stderr, "aimdyn compare: --students %s: unknown student '%s'; allowed: a "
                            "comma-separated list of direct, tied, untied\n", list, tok);
            return -1;
        }
        aim_config *c = &ro->student_cfg[ro->nstudents++];
        *c = ro->cfg;
        char set[64];
        aim_config_error err;
        snprintf(set, sizeof set, "model.decomposition=%s", tok);
        if (aim_config_set(c, set, &err) || aim_config_validate(c, &err)) {
            fprintf(stderr, "aimdyn compare: --students %s: the %s student: %s\n", list, tok,
                    err.message);
            return -1;
        }
        char name[sizeof c->name];
        snprintf(name, sizeof name, "%s", ro->cfg.name);
        snprintf(c->name, sizeof c->name, "%.100s-%s", name, tok);
    }
    if (ro->nstudents == 0) {
        fprintf(stderr, "aimdyn compare: --students '%s': empty; allowed: a comma-separated list "
                        "of direct, tied, untied\n", list);
        return -1;
    }
    return 0;
}

/* Parses a list option's integer (--d, --order) into list, increasing. */
int aim_cli_add_to_list(const char *cmd, const char *opt, const char *arg, long lo,
                       long hi, int *list, int *count, int max)
{
    char *end;
    long v = strtol(arg, &end, 10);
    if (*end || end == arg || v < lo || v > hi) {
        fprintf(stderr, "aimdyn %s: %s %s: not allowed; allowed: an integer from %ld to %ld\n",
                cmd, opt, arg, lo, hi);
        return -1;
    }
    if (*count == max) {
        fprintf(stderr, "aimdyn %s: %s given too often (at most %d)\n", cmd, opt, max);
        return -1;
    }
    if (*count > 0 && v <= list[*count - 1]) {
        fprintf(stderr, "aimdyn %s: %s %ld: values must be given in increasing "
                        "order without repeats\n", cmd, opt, v);
        return -1;
    }
    list[(*count)++] = (int)v;
    return 0;
}

/* Online SGD measures at the grid points, each a later step than the one
 * before: otherwise its files would give one state several tau (at
 * eta = 1e6 a run takes no step at all). Returns 0, or -1 after a message
 * naming the keys. */
int aim_cli_sgd_grid_usable(const char *cmd, const aim_config *cfg, int d)
{
    double *tau = malloc(sizeof(double) * (size_t)cfg->points);
    if (!tau) {
        fprintf(stderr, "aimdyn %s: out of memory\n", cmd);
        return -1;
    }
    aim_grid_fill(cfg, tau);
    int i = 1;
    while (i < cfg->points &&
           aim_sgd_steps_for(cfg, d, tau[i]) > aim_sgd_steps_for(cfg, d, tau[i - 1]))
        i++;
    if (i < cfg->points)
        fprintf(stderr, "aimdyn %s: training.eta = %g, training.horizon = %g, training.points "
                        "= %d at d = %d: online SGD takes %ld steps in all (n = tau d^2 / eta), "
                        "and the grid points tau = %g and %g fall on the same step %ld; "
                        "allowed: at least one step between successive grid points (a smaller "
                        "training.eta, fewer training.points, a longer training.horizon%s)\n",
                cmd, cfg->eta, cfg->horizon, cfg->points, d,
                aim_sgd_steps_for(cfg, d, cfg->horizon), tau[i - 1], tau[i],
                aim_sgd_steps_for(cfg, d, tau[i]),
                cfg->grid == AIM_GRID_LOG ? " or a larger training.grid_start" : "");
    free(tau);
    return i < cfg->points ? -1 : 0;
}

/* Parses [CONFIG] and the options of ode, sgd and compare. Returns 0, 1
 * after printing help, or -1 on a usage error. */
int aim_cli_parse_run_options(const char *cmd, int argc, char **argv,
                             run_options *ro)
{
    static const struct option longopts[] = {
        {"set", required_argument, NULL, 's'},
        {"out", required_argument, NULL, 'o'},
        {"name", required_argument, NULL, 'n'},
        {"d", required_argument, NULL, 'd'},
        {"seeds", required_argument, NULL, 'S'},
        {"generic", no_argument, NULL, 'g'},
        {"order", required_argument, NULL, 'O'},
        {"latex", no_argument, NULL, 'L'},
        {"students", required_argument, NULL, 'T'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    /* --set assignments in order; --out, --name, --seeds, --generic and
     * (for ode and sgd) --d are shorthands for assignments, so that the
     * configuration written into every result file is the one that ran. */
    enum { MAX_SETS = 64, SET_LEN = 4096 };
    static char sets[MAX_SETS][SET_LEN];
    int nsets = 0, single_d = 0;
    memset(ro, 0, sizeof *ro);
    optind = 1;
    int c;
    const int is_compare = !strcmp(cmd, "compare"), is_sgd = !strcmp(cmd, "sgd");
    const int is_hierarchy = !strcmp(cmd, "hierarchy");
    const char *students = NULL;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        const char *misplaced = (c == 'S' && !is_sgd && !is_compare) ? "--seeds"
                                : (c == 'g' && (is_sgd || is_hierarchy)) ? "--generic"
                                : (c == 'O' && is_sgd) ? "--order"
                                : (c == 'L' && !is_hierarchy) ? "--latex"
                                : (c == 'T' && !is_compare) ? "--students"
                                : (is_hierarchy && (c == 'o' || c == 'n' || c == 'd'))
                                    ? "--out, --name or --d"
                                    : NULL;
        if (misplaced) {
            fprintf(stderr, "aimdyn %s: option %s does not apply to this command "
                            "(see `aimdyn %s --help`)\n", cmd, misplaced, cmd);
            return -1;
        }
        if (c == 'L') {
            ro->latex = 1;
            continue;
        }
        if (c == 'T') {
            if (students) {
                fprintf(stderr, "aimdyn compare: --students given twice (one list: e.g. "
                                "--students direct,tied,untied)\n");
                return -1;
            }
            students = optarg;
            continue;
        }
        if (c == 'O')
            ro->order_given = 1;
        if (c == 'O' && is_compare) {
            if (aim_cli_add_to_list(cmd, "--order", optarg, 1, 10, ro->orders, &ro->norders,
                            MAX_ORDERS))
                return -1;
            continue;
        }
        if (c == 's' && !strchr(optarg, '=')) {
            fprintf(stderr, "aimdyn %s: --set %s: no '='; allowed: one argument KEY=VALUE "
                            "(e.g. --set %s=%s; `aimdyn keys` lists the keys)\n",
                    cmd, optarg, optarg,
                    optind < argc && argv[optind][0] != '-' ? argv[optind] : "VALUE");
            return -1;
        }
        if (c == 'o' && !strcmp(optarg, "-")) {
            fprintf(stderr, "aimdyn %s: --out -: the results are several files, not a stream; "
                            "allowed: a folder (created if missing)\n", cmd);
            return -1;
        }
        if (c == 'd' && !is_compare && single_d++) {
            fprintf(stderr, "aimdyn %s: --d given twice: %s runs at one dimension; allowed: "
                            "one --d (compare takes several)\n", cmd, cmd);
            return -1;
        }
        const char *key = c == 's'   ? ""
                          : c == 'o' ? "output.dir="
                          : c == 'n' ? "output.name="
                          : c == 'S' ? "sgd.seeds="
                          : c == 'g' ? "ode.rule=generic"
                          : c == 'O' ? "hierarchy.order="
                          : c == 'd' && !is_compare ? "sgd.d="
                                                    : NULL;
        if (key) {
            if (nsets == MAX_SETS) {
                fprintf(stderr, "aimdyn %s: too many overrides (at most %d)\n", cmd, MAX_SETS);
                return -1;
            }
            int len = snprintf(sets[nsets++], SET_LEN, "%s%s", key, c == 'g' ? "" : optarg);
            if (len < 0 || len >= SET_LEN) {
                fprintf(stderr, "aimdyn %s: override '%.60s...' too long (at most %d characters)\n",
                        cmd, optarg, SET_LEN - 1);
                return -1;
            }
            continue;
        }
        switch (c) {
        case 'd': /* compare: one or more dimensions, increasing (the gap
                   * ratios compare successive d) */
            if (aim_cli_add_to_list(cmd, "--d", optarg, 8, 20000, ro->dims, &ro->ndims, MAX_DIMS))
                return -1;
            break;
        case 'h':
            aim_cli_usage(stdout, cmd);
            return 1;
        default:
            fprintf(stderr, "aimdyn %s: see `aimdyn %s --help`\n", cmd, cmd);
            return -1;
        }
    }
    const char *path = NULL;
    if (optind < argc)
        path = argv[optind++];
    if (optind < argc) {
        fprintf(stderr, "aimdyn %s: unexpected argument '%s' (one CONFIG.ini at most)\n",
                cmd, argv[optind]);
        return -1;
    }
    const char *set_list[MAX_SETS];
    for (int i = 0; i < nsets; i++)
        set_list[i] = sets[i];
    if (aim_cli_load_config(cmd, path, set_list, nsets, &ro->cfg))
        return -1;
    if (students && parse_students(students, ro))
        return -1;
    const int hierarchy = aim_model_ops_of(&ro->cfg)->hierarchy;
    if (ro->order_given && !hierarchy && !is_hierarchy &&
        !ro->nstudents) {
        fprintf(stderr, "aimdyn %s: --order applies to tied and untied students only "
                        "(model.decomposition = tied | untied)\n", cmd);
        return -1;
    }
    /* compare's --order list replaces hierarchy.order, which the load checked */
    for (int q = 0; is_compare && hierarchy && q < ro->norders; q++)
        if (aim_cli_hierarchy_fits(cmd, &ro->cfg, ro->orders[q]))
            return -1;
    if (ro->ndims == 0)
        ro->dims[ro->ndims++] = ro->cfg.d;
    for (int j = 0; (is_sgd || is_compare) && j < ro->ndims; j++)
        if (aim_cli_sgd_grid_usable(cmd, &ro->cfg, ro->dims[j]))
            return -1;
    if (ro->norders == 0)
        ro->orders[ro->norders++] = ro->cfg.order;
    if (is_hierarchy)
        return 0;
    /* the output locks of the files the run writes: sgd's at its d only,
     * so that runs at different d may share a name; compare's all */
    char sgd_files[32];
    for (int j = 0; j < ro->ndims; j++)
        for (int s = 0; s < (ro->nstudents ? ro->nstudents : 1); s++) {
            if (ro->nstudents)
                snprintf(sgd_files, sizeof sgd_files, "%s-sgd-d%d",
                         aim_model_ops_of(&ro->student_cfg[s])->name, ro->dims[j]);
            else
                snprintf(sgd_files, sizeof sgd_files, "sgd-d%d", ro->dims[j]);
            if ((is_sgd || is_compare) && aim_tsv_prepare_for(&ro->cfg, sgd_files))
                return -1;
        }
    return is_sgd || !aim_tsv_prepare_dir(&ro->cfg) ? 0 : -1;
}
