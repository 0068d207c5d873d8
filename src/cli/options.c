/* The options of ode, sgd and compare (and hierarchy's, plot's --d and
 * --order lists): parsed once into run_options. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "config_check.h"
#include "gauss.h"
#include "grid.h"
#include "memory.h"
#include "pool.h"
#include "progress.h"
#include "ranks.h"
#include "model.h"
#include "sgd.h"
#include "sgd_state.h"
#include "state.h"
#include "tsv.h"
#include "version.h"

const char *const aim_cli_student_names[MAX_STUDENTS] = {"direct", "tied", "untied"};

/* compare --students LIST: the configuration of each student, in the
 * order given, from the common one; -1 after a message. The teacher,
 * data, seeds and learning rate are those of cfg for all of them (SGD
 * draws its teacher and samples from streams that do not depend on the
 * student, src/students/draw.h). */
static int parse_students(const char *list, run_options *ro)
{
    int picked[MAX_STUDENTS], count;
    if (aim_cli_name_list("compare", "--students", list, aim_cli_student_names, MAX_STUDENTS,
                          picked, &count))
        return -1;
    for (int i = 0; i < count; i++) {
        const char *student = aim_cli_student_names[picked[i]];
        aim_config *c = &ro->student_cfg[ro->nstudents++];
        *c = ro->cfg;
        char set[64];
        aim_config_error err;
        snprintf(set, sizeof set, "model.decomposition=%s", student);
        if (aim_config_set(c, set, &err) || aim_config_validate(c, &err)) {
            fprintf(stderr, "aimdyn compare: --students %s: the %s student: %s\n", list,
                    student, err.message);
            return -1;
        }
        char name[sizeof c->name];
        snprintf(name, sizeof name, "%s", ro->cfg.name);
        snprintf(c->name, sizeof c->name, "%.100s-%s", name, student);
    }
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

/* The keys of a saved state's configuration that shape the dynamics it
 * continues: the model, the teacher and the learning rate. The others
 * differ between the run that saved it and one that starts from it by
 * design (the horizon and grid, the start itself, how the SGD side, the
 * ODE or the output are run). */
static int dynamics_key(const char *line)
{
    static const char *const prefixes[] = {"model.", "teacher.", "training.eta ",
                                           "training.gamma "};
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (!strncmp(line, prefixes[i], strlen(prefixes[i])))
            return 1;
    return 0;
}

/* A note when the run that saved st had another model, teacher or
 * learning rate than cfg: each such key with both values. Lines are
 * matched by key, so a state of another version (keys added or gone)
 * is compared on the keys both know. */
static void note_other_configuration(const char *cmd, const aim_config *cfg,
                                     const aim_state *st)
{
    static const char tag[] = "# config ";
    char *here = NULL, *diff = NULL;
    size_t here_len = 0, diff_len = 0;
    FILE *m = open_memstream(&here, &here_len), *d = NULL;
    if (m)
        aim_config_write(cfg, m, tag);
    if (!m || fclose(m) || !(d = open_memstream(&diff, &diff_len))) {
        free(here);
        return; /* out of memory: a note is not worth failing the run */
    }
    for (const char *there = aim_state_config_lines(st); *there;) {
        const size_t len = strcspn(there, "\n");
        const char *line = there + sizeof tag - 1, *eq = strstr(line, " = ");
        if (!strncmp(there, tag, sizeof tag - 1) && eq && eq < there + len && dynamics_key(line)) {
            const int key_len = (int)(eq - line);
            for (const char *h = here; *h; h += strcspn(h, "\n") + 1) {
                const size_t hl = strcspn(h, "\n");
                const char *hline = h + sizeof tag - 1;
                if (strncmp(hline, line, (size_t)key_len + 3))
                    continue;
                if (hl != len || strncmp(h, there, len))
                    fprintf(d, "%s%.*s there, %.*s here", ftell(d) > 0 ? "; " : "",
                            (int)(len - (sizeof tag - 1)), line,
                            (int)(hl - (sizeof tag - 1) - (size_t)key_len - 3),
                            hline + key_len + 3);
                break;
            }
        }
        there += len + (there[len] == '\n');
    }
    if (fclose(d) == 0 && diff_len)
        aim_progress_note("aimdyn %s: note: training.start_file = '%s' was saved by a run of "
                          "another model, teacher or learning rate (%s): its matrices are "
                          "used as they are\n", cmd, cfg->start_file, diff);
    free(diff);
    free(here);
}

/* A saved state (training.start_file) read once, its digest recorded, and
 * checked against the run at each of its dimensions and students, before
 * anything is computed: 0, or -1 after a message naming the key, the file
 * and the mismatch. */
static int start_fits(const char *cmd, run_options *ro)
{
    if (!ro->cfg.start_file[0])
        return 0;
    char err[1400];
    aim_state *st = aim_state_read(ro->cfg.start_file, aim_sgd_state_arrays, err, sizeof err);
    int rc = st ? 0 : -1;
    if (!st)
        fprintf(stderr, "aimdyn %s: training.start_file: %s\n", cmd, err);
    else if (strcmp(aim_state_version(st), AIM_VERSION))
        aim_progress_note("aimdyn %s: note: training.start_file = '%s' was saved by aimdyn %s, "
                          "this is aimdyn %s: its matrices are read as they are (the state "
                          "format is the same; the results may differ from that version's)\n",
                          cmd, ro->cfg.start_file,
                          aim_state_version(st)[0] ? aim_state_version(st) : "(not named)",
                          AIM_VERSION);
    if (st)
        note_other_configuration(cmd, &ro->cfg, st);
    /* the digest the run records (training.start_digest), unless given:
     * a given one (a rerun's, a config file's) is checked below */
    if (st && !ro->cfg.start_digest[0]) {
        snprintf(ro->cfg.start_digest, sizeof ro->cfg.start_digest, "%s", aim_state_digest(st));
        for (int s = 0; s < ro->nstudents; s++)
            snprintf(ro->student_cfg[s].start_digest, sizeof ro->student_cfg[s].start_digest,
                     "%s", aim_state_digest(st));
    }
    for (int s = 0; rc == 0 && s < (ro->nstudents ? ro->nstudents : 1); s++)
        for (int j = 0; rc == 0 && j < ro->ndims; j++)
            if ((rc = aim_state_check(st, ro->nstudents ? &ro->student_cfg[s] : &ro->cfg,
                                      ro->dims[j], err, sizeof err)))
                fprintf(stderr, "aimdyn %s: %s\n", cmd, err);
    aim_state_free(st);
    return rc;
}

/* The memory of the run's SGD seeds (sgd_seeds) at each of its
 * dimensions and students, and of its matrix limit process, against the
 * machine's (memory.h): 0, or -1 after a message. */
static int memory_fits(const char *cmd, const run_options *ro, int sgd_seeds)
{
    int moment_len = 0; /* the SGD files' moments: words up to the largest order */
    for (int q = 0; q < ro->norders; q++)
        moment_len = ro->orders[q] > moment_len ? ro->orders[q] : moment_len;
    for (int s = 0; s < (ro->nstudents ? ro->nstudents : 1); s++) {
        const aim_config *cfg = ro->nstudents ? &ro->student_cfg[s] : &ro->cfg;
        const int words = aim_model_ops_of(cfg)->hierarchy ? moment_len : 0;
        for (int j = 0; sgd_seeds && j < ro->ndims; j++)
            if (aim_cli_sgd_memory_fits(cmd, cfg, ro->dims[j], ro->jobs, words))
                return -1;
        if (aim_cli_matrix_memory_fits(cmd, cfg, 1, aim_gauss_threads()))
            return -1;
        /* a hierarchy's start measured on SGD seed sgd.seed, at each d */
        const int seeded = aim_model_ops_of(cfg)->hierarchy && cfg->start == AIM_START_SEED;
        for (int j = 0; seeded && j < ro->ndims; j++)
            if (aim_cli_start_memory_fits(cmd, cfg, ro->dims[j], 1))
                return -1;
    }
    return 0;
}

/* Parses [CONFIG] and the options of ode, sgd and compare. Returns 0, 1
 * after printing help, or -1 on a usage error. */
int aim_cli_parse_run_options(const char *cmd, int argc, char **argv,
                             run_options *ro)
{
    const int is_compare = !strcmp(cmd, "compare"), is_sgd = !strcmp(cmd, "sgd");
    const int is_hierarchy = !strcmp(cmd, "hierarchy");
    const char *students = NULL;
    int d_given = 0, students_given = 0;
    memset(ro, 0, sizeof *ro);
    ro->jobs = aim_pool_default_jobs();
    /* --out, --name, --seeds, --generic and (for ode and sgd) --d and
     * --order are shorthands for assignments; compare's --d and --order
     * are lists of runs */
    const aim_cli_option assign_d = {AIM_OPT("d", AIM_OPT_ASSIGN, 1), .assign = "sgd.d=",
                                     .given = &d_given};
    const aim_cli_option list_d = {AIM_OPT("d", AIM_OPT_INTEGERS, 1), .lo = 8, .hi = 20000,
                                   .target = ro->dims, .count = &ro->ndims,
                                   .max_count = MAX_DIMS};
    const aim_cli_option assign_order = {AIM_OPT("order", AIM_OPT_ASSIGN, 1),
                                         .assign = "hierarchy.order=",
                                         .given = &ro->order_given};
    const aim_cli_option list_order = {AIM_OPT("order", AIM_OPT_INTEGERS, 1), .lo = 1, .hi = 10,
                                       .target = ro->orders, .count = &ro->norders,
                                       .max_count = MAX_ORDERS, .given = &ro->order_given};
    const aim_cli_option elsewhere_d = {AIM_OPT("d", AIM_OPT_ELSEWHERE, 1)},
                         elsewhere_order = {AIM_OPT("order", AIM_OPT_ELSEWHERE, 1)};
    const aim_cli_option_kind assign_unless_hierarchy =
        is_hierarchy ? AIM_OPT_ELSEWHERE : AIM_OPT_ASSIGN;
    const aim_cli_option options[] = {
        {AIM_OPT("set", AIM_OPT_ASSIGN, 1), .assign = ""},
        {AIM_OPT("out", assign_unless_hierarchy, 1), .assign = "output.dir="},
        {AIM_OPT("name", assign_unless_hierarchy, 1), .assign = "output.name="},
        is_hierarchy ? elsewhere_d : is_compare ? list_d : assign_d,
        {AIM_OPT("seeds", is_sgd || is_compare ? AIM_OPT_ASSIGN : AIM_OPT_ELSEWHERE, 1),
         .assign = "sgd.seeds="},
        {AIM_OPT("save-state", is_sgd || is_compare ? AIM_OPT_ASSIGN : AIM_OPT_ELSEWHERE, 1),
         .assign = "output.save_state="},
        {AIM_OPT("start", is_hierarchy ? AIM_OPT_ELSEWHERE : AIM_OPT_ASSIGN, 1),
         .assign = "training.start_file="},
        {AIM_OPT("generic", is_sgd || is_hierarchy ? AIM_OPT_ELSEWHERE : AIM_OPT_ASSIGN, 0),
         .assign = "ode.rule=generic"},
        is_sgd ? elsewhere_order : is_compare ? list_order : assign_order,
        {AIM_OPT("latex", is_hierarchy ? AIM_OPT_FLAG : AIM_OPT_ELSEWHERE, 0),
         .target = &ro->latex, .bits = 1},
        {AIM_OPT("students", is_compare ? AIM_OPT_TEXT : AIM_OPT_ELSEWHERE, 1),
         .target = &students, .given = &students_given},
        {AIM_OPT("jobs", is_sgd || is_compare ? AIM_OPT_INTEGER : AIM_OPT_ELSEWHERE, 1),
         .lo = 1, .hi = AIM_POOL_MAX_JOBS, .allowed = " (worker processes)",
         .target = &ro->jobs},
        is_hierarchy ? (aim_cli_option){AIM_OPT("threads", AIM_OPT_ELSEWHERE, 1)}
                     : aim_cli_threads};
    const aim_cli_spec spec = {cmd, options, (int)(sizeof options / sizeof options[0]),
                               aim_cli_usage_to_stdout, 1, "one CONFIG.ini at most"};
    aim_cli_args args;
    int rc = aim_cli_parse(&spec, argc, argv, &args);
    if (rc == 0 && d_given > 1) {
        fprintf(stderr, "aimdyn %s: --d given twice: %s runs at one dimension; allowed: "
                        "one --d (compare takes several)\n", cmd, cmd);
        rc = -1;
    }
    if (rc == 0 && students_given > 1) {
        fprintf(stderr, "aimdyn compare: --students given twice (one list: e.g. "
                        "--students direct,tied,untied)\n");
        rc = -1;
    }
    if (rc == 0 && aim_cli_load_config(cmd, args.noperands ? args.operand[0] : NULL, args.sets,
                                       args.nsets, &ro->cfg))
        rc = -1;
    aim_cli_args_free(&args);
    if (rc)
        return rc;
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
    if (!is_hierarchy && memory_fits(cmd, ro, is_sgd || is_compare))
        return -1;
    if (!is_hierarchy && start_fits(cmd, ro))
        return -1;
    /* the other ranks of an MPI job write seed files only, once rank 0
     * has taken the locks (ranks.h) */
    if (is_hierarchy || aim_ranks_rank() != 0)
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
