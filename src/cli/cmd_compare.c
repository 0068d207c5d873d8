/* aimdyn compare: the ODE against SGD, with figures and the agreement
 * table. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "compare.h"
#include "grid.h"
#include "seeds.h"
#include "model.h"
#include "ode.h"
#include "plot.h"
#include "ranks.h"
#include "sgd.h"
#include "trajectory.h"
#include "tsv.h"
#include "words.h"

/* Below this many seeds gap/se is not read as a standard score: the
 * standard error itself comes from seeds - 1 degrees of freedom. */
enum { MIN_SEEDS = 8 };

static const char *few_seeds_text(char *buf, size_t n, int seeds)
{
    snprintf(buf, n,
             "only %d seed%s: the standard error is estimated from %d degree%s of freedom "
             "(its own relative error about 1/sqrt(2(seeds - 1)) = %.2g), so gap/se is no "
             "standard score; use sgd.seeds >= %d",
             seeds, seeds == 1 ? "" : "s", seeds - 1, seeds == 2 ? "" : "s",
             seeds > 1 ? 1.0 / sqrt(2.0 * (seeds - 1)) : INFINITY, MIN_SEEDS);
    return buf;
}

/* What one student's comparison leaves for the figure of all students:
 * per d, its ODE file (of the last order) and its SGD file, as the
 * temporary names the figure reads before the set is committed, and as
 * their final names, which its kept gnuplot script names. */
typedef struct {
    const char *ode[MAX_DIMS], *sgd[MAX_DIMS];
    char ode_final[MAX_DIMS][1024], sgd_final[MAX_DIMS][1024];
    int blowup, figure_failed;
} compare_result;

/* The configuration of the SGD seeds of a student (cfg) at d: the last
 * order compared (a direct student compares one), so that its moments
 * are measured for the longest words. */
static aim_config sgd_config_of(const run_options *ro, const aim_config *cfg, int d)
{
    aim_config sgd_cfg = *cfg;
    sgd_cfg.d = d;
    sgd_cfg.order = ro->orders[aim_model_ops_of(cfg)->hierarchy ? ro->norders - 1 : 0];
    return sgd_cfg;
}

/* The comparison of one student (cfg: its configuration, cfg->name its
 * file stem) at every d and order of ro: ODE and SGD files, the figure of
 * each d and the agreement table, all into set; "wrote" lines into
 * wrote. Returns 0, or -1 after a message (nothing committed). */
static int compare_student(const run_options *ro, const aim_config *cfg, aim_atomic_set *set,
                           FILE *wrote, compare_result *res)
{
    const int points = cfg->points, tied = aim_model_ops_of(cfg)->hierarchy;
    /* a direct student has one closed ODE whatever the orders asked for
     * the others (compare --students) */
    const int nord = tied ? ro->norders : 1;
    const int *orders = ro->orders;
    aim_alphabet ab;
    aim_compare_alphabet(cfg, &ab);
    const int nruns = ro->ndims * nord;
    const size_t block = (size_t)points * AIM_OBS_COUNT;
    double *tau = malloc(sizeof(double) * (size_t)points);
    double *ode = malloc(sizeof(double) * block * (size_t)nruns);
    double *mean = malloc(sizeof(double) * block * (size_t)ro->ndims);
    double *se = malloc(sizeof(double) * block * (size_t)ro->ndims);
    const size_t xblock = (size_t)points * AIM_SGD_EXTRA_COUNT;
    double *xmean = malloc(sizeof(double) * xblock * (size_t)ro->ndims);
    double *xse = malloc(sizeof(double) * xblock * (size_t)ro->ndims);
    aim_gap(*gaps)[AIM_OBS_COUNT] = malloc(sizeof *gaps * (size_t)nruns);
    aim_gap gauss_gaps[MAX_DIMS * MAX_ORDERS]; /* the ODE risk against risk_gauss */
    double *start = NULL;
    aim_measured_start direct_start = {0};
    int rc = -1;
    aim_tsv *tsv = NULL;
    /* each order's run serves the next one's truncation error estimate */
    aim_trajectory_reuse *reuse = aim_trajectory_reuse_create();
    int highest = 0;
    if (!tau || !ode || !mean || !se || !xmean || !xse || !gaps || !reuse) {
        fprintf(stderr, "aimdyn compare: out of memory\n");
        goto done;
    }
    for (int q = 0; q < nord; q++)
        if (tied && orders[q] > highest)
            highest = orders[q];
    aim_trajectory_reuse_orders(reuse, highest);
    aim_grid_fill(cfg, tau);
    double twr_ode[MAX_DIMS * MAX_ORDERS], twr_sgd[MAX_DIMS];
    int recovered[MAX_DIMS];
    const int no_gnuplot = !aim_plot_available();
    for (int j = 0; j < ro->ndims; j++) {
        const int d = ro->dims[j];
        char ode_paths[MAX_ORDERS][1024], labels[MAX_ORDERS][32];
        const char *ode_list[MAX_ORDERS], *ode_final[MAX_ORDERS], *label_list[MAX_ORDERS];
        char sgd_path[1024], stem[1024], suffix[64];
        const aim_config sgd_cfg = sgd_config_of(ro, cfg, d);
        /* a seed start is measured once per d, up to the longest words
         * used: the word sets of lower orders are its leading entries */
        free(start);
        start = NULL;
        if (tied && (cfg->start == AIM_START_SEED || cfg->start == AIM_START_FILE) &&
            !(start = aim_compare_seed_moments(cfg, d, &ab, orders[nord - 1] + 1)))
            goto done;
        /* a direct student's start from a saved state: its order parameters */
        aim_compare_release_start(&direct_start);
        char why[1200];
        if (!tied && cfg->start_file[0] &&
            aim_compare_measure_start(cfg, d, cfg->seed, &direct_start, why, sizeof why)) {
            fprintf(stderr, "aimdyn compare: %s\n", why);
            goto done;
        }
        for (int q = 0; q < nord; q++) {
            const int r = j * nord + q;
            aim_config per_run = *cfg;
            per_run.d = d;
            if (tied)
                per_run.order = orders[q];
            /* one ODE file per d (n differs) and per order */
            char name[sizeof per_run.name];
            snprintf(name, sizeof name, "%s", cfg->name);
            if (nord > 1)
                snprintf(per_run.name, sizeof per_run.name, "%.100s-M%d", name, orders[q]);
            snprintf(name, sizeof name, "%s", per_run.name);
            if (ro->ndims > 1)
                snprintf(per_run.name, sizeof per_run.name, "%.110s-d%d", name, d);
            aim_ode_report rep;
            aim_trajectory_moments mom;
            if (aim_trajectory_run_reusing(&per_run, d, tau,
                                           start ? &(aim_measured_start){.moments = start}
                                           : direct_start.q ? &direct_start : NULL,
                                           ode + r * block, &mom, &rep, reuse) == AIM_ODE_FAILED) {
                fprintf(stderr, "aimdyn compare: ODE: %s\n", rep.message);
                aim_trajectory_moments_free(&mom);
                goto done;
            }
            if (rep.status == AIM_ODE_BLOWUP) {
                fprintf(stderr, "aimdyn compare: ODE: %s\n", rep.message);
                res->blowup = 1;
            }
            twr_ode[r] = rep.tau_wr;
            int written = aim_cli_write_ode_file(&per_run, d, tau, ode + r * block, &mom, &rep,
                                         ode_paths[q], sizeof ode_paths[q], set);
            aim_trajectory_moments_free(&mom);
            if (written)
                goto done;
            fprintf(wrote, "wrote %s\n", ode_paths[q]);
            if (cfg->method == AIM_METHOD_MATRIX)
                snprintf(labels[q], sizeof labels[q], "matrix process, D = %d", cfg->matrix_d);
            else
                snprintf(labels[q], sizeof labels[q], "ODE, M = %d", orders[q]);
            ode_list[q] = aim_atomic_set_temp(set, ode_paths[q]); /* drawn before the commit */
            ode_final[q] = ode_paths[q];
            label_list[q] = labels[q];
        }
        res->ode[j] = ode_list[nord - 1];
        snprintf(res->ode_final[j], sizeof res->ode_final[j], "%s", ode_paths[nord - 1]);
        int sgd_status = aim_cli_run_sgd("compare", ro->jobs, &sgd_cfg, d, tau, mean + j * block, se + j * block,
                                 xmean + j * xblock, xse + j * xblock, &twr_sgd[j],
                                 &recovered[j], sgd_path, sizeof sgd_path, set);
        if (sgd_status < 0)
            goto done;
        res->blowup |= sgd_status > 0;
        fprintf(wrote, "wrote %s\n", sgd_path);
        for (int q = 0; q < nord; q++) {
            const int r = j * nord + q;
            aim_compare_gaps(points, tau, ode + r * block, mean + j * block, se + j * block,
                             gaps[r]);
            gauss_gaps[r] = aim_compare_gap(points, tau, ode + r * block + AIM_OBS_RISK,
                                            AIM_OBS_COUNT,
                                            xmean + j * xblock + AIM_SGD_RISK_GAUSS,
                                            xse + j * xblock + AIM_SGD_RISK_GAUSS,
                                            AIM_SGD_EXTRA_COUNT);
        }
        snprintf(suffix, sizeof suffix, "compare-d%d", d);
        if (aim_tsv_path(stem, sizeof stem, cfg, suffix, ""))
            goto done;
        const char *sgd_list[] = {aim_atomic_set_temp(set, sgd_path)}, *sgd_final[] = {sgd_path};
        res->sgd[j] = sgd_list[0];
        snprintf(res->sgd_final[j], sizeof res->sgd_final[j], "%s", sgd_path);
        const aim_plot_spec spec = {.ode = ode_list, .ode_final = ode_final,
                                    .labels = tied ? label_list : NULL, .n_ode = nord,
                                    .sgd = sgd_list, .sgd_final = sgd_final, .n_sgd = 1,
                                    .flags = (cfg->grid == AIM_GRID_LOG ? AIM_PLOT_LOG_TAU : 0) |
                                             (cfg->centring == AIM_RAW ? AIM_PLOT_MEAN : 0)};
        if (!no_gnuplot && aim_plot_figure(&spec, stem, set) == 0)
            fprintf(wrote, "wrote %s.png, %s.svg and %s.gp (its gnuplot script)\n", stem,
                    stem, stem);
        else if (aim_plot_stale(set, stem)) /* an old figure would show other data */
            goto done;
        else
            res->figure_failed |= !no_gnuplot;
    }

    char path[1024];
    if (aim_tsv_path(path, sizeof path, cfg, "agreement", "tsv") || !(tsv = aim_tsv_open(path)))
        goto done;
    fprintf(wrote, "wrote %s\n", path);
    FILE *f = aim_tsv_stream(tsv);
    /* the configuration that ran: the --d and --order given, not the
     * file's sgd.d and hierarchy.order (which they replace) */
    const aim_config last = sgd_config_of(ro, cfg, ro->dims[ro->ndims - 1]);
    aim_tsv_metadata(tsv, "compare", &last);
    fprintf(f, "# agreement of the limit ODE with the SGD mean over %d seeds "
               "(theory/model.md sec. 9)\n", cfg->seeds);
    if (ro->ndims > 1 || nord > 1)
        fprintf(f, "# the configuration above is that of the largest d (sgd.d) and the highest "
                   "order compared (hierarchy.order); each row names its d and order\n");
    char few[256];
    if (cfg->seeds < MIN_SEEDS)
        fprintf(f, "# warning: %s\n", few_seeds_text(few, sizeof few, cfg->seeds));
    fprintf(f, "# gap_ratio: this d's largest gap over the previous d's, same order "
               "(1/d bias: ~ d_prev/d)\n");
    fprintf(f, "# order: the hierarchy's truncation order M (tied, untied); 0 for a closed ODE\n");
    fprintf(f, "# verdict: within_3se (largest z <= 3), else how the gap fell from the previous "
               "d: 1/d, 1/sqrt_d or not_falling (exponent a of d^-a from gap_ratio, split at "
               "3/4 and 1/4), above_3se (no previous d standing out), ode_stopped, exact, "
               "no_data (theory/model.md sec. 9)\n");
    fprintf(f, "# risk: the ODE risk against the SGD risk measured on held-out samples; "
               "risk_gauss: the ODE risk against the Gaussian formula on the SGD's measured "
               "order parameters (theory/measurement.md)\n");
    for (int j = 0; j < ro->ndims; j++)
        for (int q = 0; q < nord; q++) {
            char a[32], b[32];
            fprintf(f, "# weak recovery (|overlap| >= %g) at d = %d, order %d: ODE tau = %s "
                       "(root finding), SGD median tau = %s (%d of %d seeds recovered; "
                       "interpolated between grid points, its error in the SGD file)\n",
                    cfg->recovery_threshold, ro->dims[j], tied ? orders[q] : 0,
                    aim_cli_tau_text(a, sizeof a, twr_ode[j * nord + q], "not reached"),
                    aim_cli_tau_text(b, sizeof b, twr_sgd[j], "not defined"), recovered[j],
                    cfg->seeds);
        }
    fprintf(f, "observable\td\torder\tmax_gap\ttau_at_max_gap\tmax_gap_in_se\ttau_at_max_z"
               "\trel_gap\tgap_ratio\tverdict\n");
    printf("\n%s\n%-10s %6s %5s %12s %10s %12s %10s %10s  %s\n", cfg->name, "observable", "d",
           "M", "max_gap", "at_tau", "gap/se", "rel_gap", "ratio", "verdict");
    for (int k = 0; k < AIM_OBS_COUNT; k++)
        for (int gauss = 0; gauss <= (k == AIM_OBS_RISK); gauss++) /* risk, then risk_gauss */
            for (int q = 0; q < nord; q++)
                for (int j = 0; j < ro->ndims; j++) {
                    const int r = j * nord + q, prev = (j - 1) * nord + q;
                    const aim_gap *g = gauss ? &gauss_gaps[r] : &gaps[r][k];
                    const aim_gap *gp = j == 0 ? NULL : gauss ? &gauss_gaps[prev] : &gaps[prev][k];
                    const char *name = gauss ? aim_sgd_extra_names[AIM_SGD_RISK_GAUSS]
                                             : aim_obs_names[k];
                    double scale = 0.0;
                    for (int i = 0; i < points; i++)
                        scale = fmax(scale, fabs(ode[r * block + (size_t)i * AIM_OBS_COUNT + k]));
                    double rel = scale > 0 ? g->max_abs / scale : NAN;
                    double ratio = gp && gp->max_abs > 0 ? g->max_abs / gp->max_abs : NAN;
                    int order = tied ? orders[q] : 0;
                    const char *verdict =
                        aim_compare_verdict(g, gp, j ? ro->dims[j - 1] : 0, ro->dims[j]);
                    fprintf(f, "%s\t%d\t%d\t%.6g\t%.6g\t%.6g\t%.6g\t%.6g\t%.6g\t%s\n", name,
                            ro->dims[j], order, g->max_abs, g->tau_abs, g->max_z, g->tau_z, rel,
                            ratio, verdict);
                    printf("%-10s %6d %5d %12.4g %10.4g %12.3g %10.3g %10.3g  %s\n", name,
                           ro->dims[j], order, g->max_abs, g->tau_abs, g->max_z, rel, ratio,
                           verdict);
                }
    for (int j = 0; j < ro->ndims; j++)
        for (int q = 0; q < nord; q++) {
            char order[32] = "";
            if (tied)
                snprintf(order, sizeof order, ", M = %d", orders[q]);
            char a[32], b[32];
            printf("weak recovery (|overlap| >= %g) at d = %d%s: ODE tau = %s, SGD "
                   "median tau = %s (%d of %d seeds)\n", cfg->recovery_threshold, ro->dims[j],
                   order, aim_cli_tau_text(a, sizeof a, twr_ode[j * nord + q], "not reached"),
                   aim_cli_tau_text(b, sizeof b, twr_sgd[j], "not defined"), recovered[j],
                   cfg->seeds);
        }
    rc = aim_tsv_add_to(tsv, set);
    tsv = NULL;
done:
    if (tsv)
        aim_tsv_abort(tsv);
    aim_trajectory_reuse_free(reuse);
    free(start);
    aim_compare_release_start(&direct_start);
    free(tau);
    free(ode);
    free(mean);
    free(se);
    free(xmean);
    free(xse);
    free(gaps);
    return rc;
}

/* On a rank other than 0 of an MPI job (ranks.h): its share of the SGD
 * seeds of every student and d, in the order rank 0 runs them; rank 0
 * solves the ODEs and writes every file. */
static int compare_rank_share(const run_options *ro)
{
    for (int s = 0; s < (ro->nstudents ? ro->nstudents : 1); s++)
        for (int j = 0; j < ro->ndims; j++) {
            const aim_config *student = ro->nstudents ? &ro->student_cfg[s] : &ro->cfg;
            const aim_config sgd_cfg = sgd_config_of(ro, student, ro->dims[j]);
            if (aim_cli_sgd_share("compare", ro->jobs, &sgd_cfg, ro->dims[j]))
                return AIM_EXIT_RUNTIME;
        }
    return 0;
}

/* compare --students: per d one figure NAME-students-dD of every
 * student's ODE (its last order) over its SGD, a colour per student. */
static int compare_students_figure(const run_options *ro, const compare_result *res,
                                   aim_atomic_set *set, FILE *wrote, int *failed)
{
    const aim_config *cfg = &ro->cfg;
    const char *labels[MAX_STUDENTS];
    for (int s = 0; s < ro->nstudents; s++)
        labels[s] = aim_model_ops_of(&ro->student_cfg[s])->name;
    for (int j = 0; j < ro->ndims; j++) {
        const char *ode[MAX_STUDENTS], *sgd[MAX_STUDENTS], *ode_final[MAX_STUDENTS],
            *sgd_final[MAX_STUDENTS];
        for (int s = 0; s < ro->nstudents; s++) {
            ode[s] = res[s].ode[j];
            sgd[s] = res[s].sgd[j];
            ode_final[s] = res[s].ode_final[j];
            sgd_final[s] = res[s].sgd_final[j];
        }
        char stem[1024], suffix[64];
        snprintf(suffix, sizeof suffix, "students-d%d", ro->dims[j]);
        if (aim_tsv_path(stem, sizeof stem, cfg, suffix, ""))
            return -1;
        const aim_plot_spec spec = {.ode = ode, .ode_final = ode_final, .labels = labels,
                                    .n_ode = ro->nstudents, .sgd = sgd,
                                    .sgd_final = sgd_final, .n_sgd = ro->nstudents,
                                    .flags = cfg->grid == AIM_GRID_LOG ? AIM_PLOT_LOG_TAU : 0};
        if (aim_plot_available() && aim_plot_figure(&spec, stem, set) == 0)
            fprintf(wrote, "wrote %s.png, %s.svg and %s.gp (its gnuplot script)\n", stem,
                    stem, stem);
        else if (aim_plot_stale(set, stem))
            return -1;
        else
            *failed |= aim_plot_available();
    }
    return 0;
}

int aim_cmd_compare(int argc, char **argv)
{
    run_options ro;
    int rc = aim_cli_parse_run_options("compare", argc, argv, &ro);
    if (rc)
        return rc > 0 ? 0 : AIM_EXIT_USAGE;
    if (aim_ranks_rank() != 0)
        return compare_rank_share(&ro);
    const aim_config *cfg = &ro.cfg;
    int exit_code = AIM_EXIT_RUNTIME;
    char few[256];
    if (cfg->seeds < MIN_SEEDS)
        fprintf(stderr, "aimdyn compare: warning: %s\n",
                few_seeds_text(few, sizeof few, cfg->seeds));
    /* every file of the run (ODE, SGD, agreement, figures; every student)
     * waits in the set and replaces the files of an earlier run together,
     * or none does; their names are said once they are in place */
    aim_atomic_set *set = aim_atomic_set_create(cfg->dir, cfg->name);
    char *wrote_text = NULL;
    size_t wrote_len = 0;
    FILE *wrote = open_memstream(&wrote_text, &wrote_len);
    compare_result res[MAX_STUDENTS];
    memset(res, 0, sizeof res);
    if (!set || !wrote) {
        fprintf(stderr, "aimdyn compare: out of memory\n");
        goto done;
    }
    const int nst = ro.nstudents ? ro.nstudents : 1;
    int blowup = 0, figure_failed = 0;
    for (int s = 0; s < nst; s++) {
        aim_config student = ro.nstudents ? ro.student_cfg[s] : *cfg;
        if (compare_student(&ro, &student, set, wrote, &res[s]))
            goto done;
        blowup |= res[s].blowup;
        figure_failed |= res[s].figure_failed;
    }
    if (ro.nstudents && compare_students_figure(&ro, res, set, wrote, &figure_failed))
        goto done;
    if (fflush(wrote))
        goto done;
    int committed = aim_atomic_set_commit(set);
    set = NULL;
    if (committed != 0)
        goto done;
    for (int s = 0; s < nst; s++)
        for (int j = 0; j < ro.ndims; j++)
            aim_seeds_remove_dir("compare", ro.nstudents ? &ro.student_cfg[s] : cfg, ro.dims[j]);
    fputs(wrote_text, stdout);
    if (!aim_plot_available())
        fprintf(stderr, "aimdyn compare: warning: gnuplot not found, no figure (install "
                        "gnuplot-nox); the tables are written and an old figure of this name "
                        "is removed\n");
    if (figure_failed)
        fprintf(stderr, "aimdyn compare: the figure could not be drawn (see above); the tables "
                        "are written and an old figure of this name is removed\n");
    exit_code = figure_failed ? AIM_EXIT_RUNTIME : blowup ? AIM_EXIT_BLOWUP : 0;
done:
    if (set)
        fprintf(stderr, "aimdyn compare: nothing written: the files of an earlier run are "
                        "unchanged\n");
    aim_atomic_set_free(set);
    if (wrote)
        fclose(wrote);
    free(wrote_text);
    return exit_code;
}
