/* What ode, sgd and compare share: the ODE file, the SGD runs of one
 * dimension and their median weak-recovery time. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "compare.h"
#include "fold.h"
#include "grid.h"
#include "model.h"
#include "ode.h"
#include "recovery.h"
#include "seeds.h"
#include "sgd.h"
#include "trajectory.h"
#include "tsv.h"
#include "words.h"

/* CVODE's counters, as the sidecar names them, in aim_ode_stats' order. */
static const char *const counter_names[] = {"steps",          "rhs_evals",
                                            "linear_setups",  "jacobian_evals",
                                            "jacobian_rhs_evals", "error_test_failures",
                                            "nonlinear_iterations", "nonlinear_failures"};
enum { NCOUNTERS = (int)(sizeof counter_names / sizeof counter_names[0]) };

static void counter_values(const aim_ode_stats *st, long values[NCOUNTERS])
{
    const long v[NCOUNTERS] = {st->steps,          st->rhs_evals,
                               st->linear_setups,  st->jacobian_evals,
                               st->jacobian_rhs_evals, st->error_test_failures,
                               st->nonlinear_iterations, st->nonlinear_failures};
    memcpy(values, v, sizeof v);
}

int aim_cli_record_integrations(aim_tsv *tsv, const char *prefix, int n,
                                const aim_ode_stats *stats)
{
    for (int i = 0; i < n; i++) {
        long values[NCOUNTERS];
        char what[sizeof stats[i].what + 256];
        counter_values(&stats[i], values);
        snprintf(what, sizeof what, "%s%s", prefix, stats[i].what);
        if (aim_tsv_integration(tsv, what, NCOUNTERS, counter_names, values))
            return -1;
    }
    return 0;
}

static const char integration_prefix[] = "# cvode: ";

void aim_cli_put_integrations(FILE *f, int n, const aim_ode_stats *stats)
{
    for (int i = 0; i < n; i++) {
        long values[NCOUNTERS];
        counter_values(&stats[i], values);
        fprintf(f, "%s%s:", integration_prefix, stats[i].what);
        for (int k = 0; k < NCOUNTERS; k++)
            fprintf(f, "%s %s %ld", k ? "," : "", counter_names[k], values[k]);
        fputc('\n', f);
    }
}

/* One "# cvode: WHAT: steps N, ..." line (without its prefix) into st:
 * WHAT up to the last ": steps " (a WHAT may hold ": "). Returns 0 or -1. */
static int parse_integration(const char *line, aim_ode_stats *st)
{
    const char *at = NULL;
    for (const char *p = strstr(line, ": steps "); p; p = strstr(p + 1, ": steps "))
        at = p;
    if (!at || (size_t)(at - line) >= sizeof st->what)
        return -1;
    long v[NCOUNTERS];
    int end = -1;
    if (sscanf(at + 2, "steps %ld, rhs_evals %ld, linear_setups %ld, jacobian_evals %ld, "
                       "jacobian_rhs_evals %ld, error_test_failures %ld, "
                       "nonlinear_iterations %ld, nonlinear_failures %ld%n",
               &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &end) != NCOUNTERS ||
        end < 0 || (at[2 + end] && at[2 + end] != '\n'))
        return -1;
    for (int k = 0; k < NCOUNTERS; k++)
        if (v[k] < 0)
            return -1;
    *st = (aim_ode_stats){.steps = v[0], .rhs_evals = v[1], .linear_setups = v[2],
                          .jacobian_evals = v[3], .jacobian_rhs_evals = v[4],
                          .error_test_failures = v[5], .nonlinear_iterations = v[6],
                          .nonlinear_failures = v[7]};
    memcpy(st->what, line, (size_t)(at - line));
    return 0;
}

int aim_cli_get_integrations(const aim_table *t, const char *cmd, const char *path,
                             aim_ode_stats stats[AIM_ODE_MAX_INTEGRATIONS])
{
    const size_t len = sizeof integration_prefix - 1;
    int n = 0;
    for (int i = 0; i < t->nmeta; i++) {
        const char *line = t->meta[i];
        if (strncmp(line, integration_prefix, len))
            continue;
        if (n == AIM_ODE_MAX_INTEGRATIONS || parse_integration(line + len, &stats[n])) {
            fprintf(stderr, "aimdyn %s: %s: '%.*s': %s; allowed: at most %d lines \"%sWHAT: "
                            "steps N, rhs_evals N, ...\" (CVODE's 8 counters, >= 0)\n", cmd,
                    path, (int)strcspn(line, "\n"), line,
                    n == AIM_ODE_MAX_INTEGRATIONS ? "one integration too many"
                                                  : "not CVODE's counters",
                    AIM_ODE_MAX_INTEGRATIONS, integration_prefix);
            return -1;
        }
        n++;
    }
    return n;
}

/* The "# folded" line of a folded average of n runs (SGD seeds, matrix
 * replicas; run r has seed cfg->seed + r): how many were mirrored, and
 * their seeds (after the label, e.g. " (seeds)"). */
static void put_folded_line(FILE *f, const aim_config *cfg, int n, const int *sign,
                            const char *runs, const char *label)
{
    int mirrored = 0;
    for (int r = 0; r < n; r++)
        mirrored += sign[r] < 0;
    fprintf(f, "# folded (output.fold = %s): %d of %d %s mirrored (S -> -S: the columns odd "
               "in S negated) before the mean and standard error, those whose %s at their "
               "last grid point is negative%s:",
            cfg->fold == AIM_FOLD_MEAN ? "mean" : "overlap", mirrored, n, runs,
            aim_fold_what(cfg), label);
    for (int r = 0; r < n; r++)
        if (sign[r] < 0)
            fprintf(f, " %llu", (unsigned long long)(cfg->seed + (uint64_t)r));
    fputs(mirrored ? "\n" : " none\n", f);
}

/* The "# fold" line of the SGD files: the seeds' signs (seeds file) or
 * the mirrored seeds (summary). */
static void put_fold_line(FILE *f, const aim_config *cfg, const int *sign, int summary)
{
    if (cfg->fold == AIM_FOLD_NONE)
        return;
    if (summary) {
        put_folded_line(f, cfg, cfg->seeds, sign, "seeds", "");
        return;
    }
    fprintf(f, "# fold (output.fold = %s): each seed's sign, -1 for the seeds the summary "
               "mirrors (%s at their last grid point negative); these rows are unfolded:",
            cfg->fold == AIM_FOLD_MEAN ? "mean" : "overlap", aim_fold_what(cfg));
    for (int s = 0; s < cfg->seeds; s++)
        fprintf(f, " %llu %+d", (unsigned long long)(cfg->seed + (uint64_t)s), sign[s]);
    fputc('\n', f);
}

/* The matrix process of cfg as the ODE file's metadata names it, with the
 * steps its replicas took on average. */
static void put_matrix_process(FILE *f, const aim_config *cfg, double steps)
{
    fprintf(f, "D = %d, %d replicas (seeds %llu..), ", cfg->matrix_d, cfg->replicas,
            (unsigned long long)cfg->seed);
    if (cfg->scheme == AIM_SCHEME_EULER)
        fprintf(f, "Euler-Maruyama steps of %.6g", aim_config_matrix_step(cfg));
    else if (cfg->matrix_dtau > 0.0)
        fprintf(f, "steps of %.6g extrapolated from two of half their length "
                   "(matrix.scheme = richardson)", cfg->matrix_dtau);
    else
        fprintf(f, "steps extrapolated from two of half their length (matrix.scheme = "
                   "richardson), their length controlled by matrix.step_tol = %g",
                cfg->matrix_step_tol);
    fprintf(f, "; %.1f steps a replica", steps);
}

/* Writes DIR/NAME-ode.tsv into path: renamed into place now (set NULL)
 * or with set. */
int aim_cli_write_ode_file(const aim_config *cfg, int d, const double *tau,
                          const double *obs, const aim_trajectory_moments *mom,
                          const aim_ode_report *rep, char *path, size_t pathlen,
                          aim_atomic_set *set)
{
    if (aim_tsv_path(path, pathlen, cfg, "ode", "tsv"))
        return -1;
    aim_tsv *tsv = aim_tsv_open(path);
    if (!tsv)
        return -1;
    FILE *f = aim_tsv_stream(tsv);
    aim_tsv_metadata(tsv, "ode", cfg);
    if (aim_cli_record_integrations(tsv, "", rep->integrations, rep->stats)) {
        aim_tsv_abort(tsv);
        return -1;
    }
    const int matrix = cfg->method == AIM_METHOD_MATRIX;
    if (matrix) {
        fputs("# ode: the limit process simulated with matrices (theory/matrix.md): ", f);
        put_matrix_process(f, cfg, rep->matrix_steps);
        fprintf(f, "; the columns are replica means%s\n",
                mom && mom->obs_se ? ", X_se their standard errors" : "");
    }
    if (matrix && mom && mom->fold_sign)
        put_folded_line(f, cfg, cfg->replicas, mom->fold_sign, "replicas", " (seeds)");
    if (!matrix)
        fprintf(f, "# ode: %s; n = tau d^2 / eta and t = tau d for d = %d\n",
                aim_model_limit_text(cfg), d);
    aim_model_describe(cfg, mom ? mom->count : 0, rep->start_mean, matrix, f);
    if (rep->warning[0])
        fprintf(f, "# warning: balance condition (hierarchy.balance = %g) violated: %s\n",
                cfg->balance, rep->warning);
    aim_trajectory_kernel_line(f, cfg, rep->kernel_points, rep->kernel_error);
    if (rep->status == AIM_ODE_BLOWUP)
        fprintf(f, "# status: %s\n", rep->message);
    else
        fprintf(f, "# status: complete\n");
    if (rep->handed_over) {
        fprintf(f, "# hand-over: %s; the rows from tau = %.6g on are the matrix limit "
                   "process's (hierarchy.beyond = matrix; theory/matrix.md sec. 7): ",
                rep->handover_why, rep->handover);
        put_matrix_process(f, cfg, rep->matrix_steps);
        fprintf(f, ", X_se their standard errors (NaN before), overlap_trunc and risk_trunc "
                   "NaN from there%s%s",
                rep->handover_fold[0] ? "; " : "", rep->handover_fold);
        if (!isnan(rep->handover_seam_tau))
            fprintf(f, "; the seam: at tau = %.6g, the hierarchy's last row, the process "
                       "differs from it by %+.4g (s.e. %.2g) in the overlap and by %+.3g %% "
                       "(s.e. %.2g %%) in the risk",
                    rep->handover_seam_tau, rep->handover_seam[0], rep->handover_seam_se[0],
                    100 * rep->handover_seam[1], 100 * rep->handover_seam_se[1]);
        if (rep->handover_order > 0 && rep->handover_order < cfg->order)
            fprintf(f, "; the process measures the words up to length %d only (the longer "
                       "ones NaN in its rows: at most %d words a point, theory/matrix.md "
                       "sec. 7)",
                    rep->handover_order, AIM_HANDOVER_WORDS);
        fputc('\n', f);
    }
    if (mom && mom->trunc) {
        fprintf(f, "# truncation error estimate from orders %d to %d (theory/matrix.md sec. 6): "
                   "overlap_trunc absolute, risk_trunc relative to risk; the last step "
                   "|x_M - x_(M-1)| where the orders alternate, the geometric tail where they "
                   "converge from one side; the run stops where one passes hierarchy.tol = %g "
                   "or where the orders do not converge in M (0: never)",
                cfg->order - mom->trunc_orders, cfg->order, cfg->tol);
        if (mom->trunc_points > 0)
            fprintf(f, "; the lower orders on %d quasi-random points", mom->trunc_points);
        fputc('\n', f);
        if (!isnan(mom->trunc_stall))
            fprintf(f, "# truncation error estimate: the orders do not converge in M at tau = "
                       "%.6g (first such row): there and at rows like it the estimate is the "
                       "last step, a lower bound, not a bound\n",
                    mom->trunc_stall);
        if (!isnan(mom->trunc_stop))
            fprintf(f, "# truncation error estimate: the order-%d run stopped at tau = %.6g "
                       "(NaN from there: no estimate): %s\n",
                    cfg->order - 1, mom->trunc_stop, mom->trunc_stop_why);
    }
    char twr[32];
    if (isnan(rep->tau_wr_se))
        fprintf(f, "# weak recovery (|overlap| >= %g) at tau = %s\n", cfg->recovery_threshold,
                aim_cli_tau_text(twr, sizeof twr, rep->tau_wr, "not reached"));
    else
        fprintf(f, "# weak recovery (|overlap| >= %g) at tau = %.6g +- %.2g (mean crossing of "
                   "the replicas, with its standard error)\n",
                cfg->recovery_threshold, rep->tau_wr, rep->tau_wr_se);
    fputs("tau\tn\tt", f);
    for (int k = 0; k < AIM_OBS_COUNT; k++)
        fprintf(f, "\t%s", aim_obs_names[k]);
    char safe[300];
    for (int k = 0; mom && k < mom->count; k++)
        fprintf(f, "\t%s", aim_tsv_column_name(mom->names[k], safe, sizeof safe));
    for (int k = 0; mom && mom->obs_se && k < AIM_OBS_COUNT; k++)
        fprintf(f, "\t%s_se", aim_obs_names[k]);
    if (mom && mom->trunc)
        fputs("\toverlap_trunc\trisk_trunc", f);
    fputc('\n', f);
    for (int i = 0; i < rep->reached; i++) {
        fprintf(f, "%.10g\t%.10g\t%.10g", tau[i], tau[i] * d * (double)d / cfg->eta,
                tau[i] * d);
        for (int k = 0; k < AIM_OBS_COUNT; k++)
            fprintf(f, "\t%.10g", obs[(size_t)i * AIM_OBS_COUNT + k]);
        for (int k = 0; mom && k < mom->count; k++)
            fprintf(f, "\t%.10g", mom->values[(size_t)i * mom->count + k]);
        for (int k = 0; mom && mom->obs_se && k < AIM_OBS_COUNT; k++)
            fprintf(f, "\t%.10g", mom->obs_se[(size_t)i * AIM_OBS_COUNT + k]);
        if (mom && mom->trunc)
            fprintf(f, "\t%.4g\t%.4g", mom->trunc[2 * (size_t)i], mom->trunc[2 * (size_t)i + 1]);
        fputc('\n', f);
    }
    return set ? aim_tsv_add_to(tsv, set) : aim_tsv_commit(tsv);
}

/* Median over seeds of the weak-recovery time (aim_recovery_median: a
 * seed that blew up before the median without recovering leaves it
 * undefined). */
double aim_cli_median_recovery(const aim_config *cfg, const double *tau, const double *obs,
                              const int *reached, int *recovered, double error[2])
{
    const int points = cfg->points, seeds = cfg->seeds;
    double *t = malloc(sizeof(double) * 2 * (size_t)seeds);
    if (!t)
        return NAN;
    double *stop = t + seeds;
    *recovered = 0;
    for (int s = 0; s < seeds; s++) {
        t[s] = aim_trajectory_recovery_time(
            points, tau, obs + (size_t)s * points * AIM_OBS_COUNT + AIM_OBS_OVERLAP,
            AIM_OBS_COUNT, cfg->recovery_threshold);
        stop[s] = reached[s] > 0 ? tau[reached[s] - 1] : -INFINITY;
        *recovered += isfinite(t[s]);
        /* the largest interpolation error bound and estimate over seeds */
        double spacing, curvature;
        aim_trajectory_recovery_error(
            points, tau, obs + (size_t)s * points * AIM_OBS_COUNT + AIM_OBS_OVERLAP,
            AIM_OBS_COUNT, cfg->recovery_threshold, &spacing, &curvature);
        if (s == 0)
            error[0] = error[1] = NAN;
        error[0] = isnan(error[0]) || spacing > error[0] ? spacing : error[0];
        error[1] = isnan(error[1]) || curvature > error[1] ? curvature : error[1];
    }
    double med = aim_recovery_median(seeds, t, stop);
    free(t);
    return med;
}

/* output.fold: each seed's sign (aim_fold_sign at the last grid point
 * it reached: a seed that blew up is folded by its last finite row),
 * and the seeds' observables and moments with the mirrored seeds' odd
 * columns negated, into fobs and fmom (the seeds' own arrays stay as
 * measured: the per-seed table is written unfolded). */
static void fold_seeds(const aim_config *cfg, int points, const int *reached,
                       const double *obs, const aim_sgd_moments *mom, int *sign, double *fobs,
                       double *fmom)
{
    const int seeds = cfg->seeds, M = mom ? mom->count : 0;
    for (int s = 0; s < seeds; s++) {
        const int last = reached[s] > 0 ? reached[s] - 1 : 0;
        sign[s] = aim_fold_sign(cfg, obs + ((size_t)s * points + last) * AIM_OBS_COUNT);
        for (int i = 0; i < points; i++) {
            const size_t o = ((size_t)s * points + i) * AIM_OBS_COUNT;
            for (int k = 0; k < AIM_OBS_COUNT; k++)
                fobs[o + k] = sign[s] < 0 && aim_fold_obs_odd(k) ? -obs[o + k] : obs[o + k];
            const size_t m = ((size_t)s * points + i) * M;
            for (int k = 0; k < M; k++) {
                const int odd = aim_fold_word_odd(aim_wordset_word(mom->ws, mom->words[k]));
                fmom[m + k] = sign[s] < 0 && odd ? -mom->values[m + k] : mom->values[m + k];
            }
        }
    }
}

int aim_cli_run_sgd(const char *cmd, int jobs, const aim_config *cfg, int d, const double *tau,
                    double *mean,
                   double *se, double *xmean, double *xse, double *median_wr,
                   int *recovered, char *summary_path, size_t pathlen, aim_atomic_set *set)
{
    const int points = cfg->points, seeds = cfg->seeds, X = AIM_SGD_EXTRA_COUNT;
    double *obs = malloc(sizeof(double) * (size_t)seeds * points * AIM_OBS_COUNT);
    double *extra = malloc(sizeof(double) * (size_t)seeds * points * X);
    int *reached = malloc(sizeof(int) * (size_t)seeds);
    int rc = -1;
    aim_tsv *tsv = NULL;
    /* a tied student's moments: every word in S and S* of length 1..M
     * with at least one S (the words the order-M hierarchy tracks) */
    aim_sgd_moments mom = {0};
    aim_wordset *ws = NULL;
    int *words = NULL;
    double *mmean = NULL, *mse = NULL, *fobs = NULL, *fmom = NULL;
    int *sign = malloc(sizeof(int) * (size_t)seeds);
    if (!obs || !extra || !reached || !sign) {
        fprintf(stderr, "aimdyn sgd: out of memory\n");
        goto done;
    }
    if (aim_model_ops_of(cfg)->hierarchy) {
        aim_alphabet ab;
        aim_compare_alphabet(cfg, &ab);
        ws = aim_wordset_create(&ab, cfg->order);
        int count = ws ? aim_wordset_count(ws) : 0;
        words = malloc(sizeof(int) * (size_t)(count + 1));
        if (!ws || !words) {
            fprintf(stderr, "aimdyn sgd: out of memory\n");
            goto done;
        }
        for (int i = 1; i < count; i++)
            if (strpbrk(aim_wordset_word(ws, i), "SABKk"))
                words[mom.count++] = i;
        mom.ws = ws;
        mom.words = words;
        size_t cells = (size_t)points * mom.count;
        mom.values = malloc(sizeof(double) * cells * (size_t)seeds);
        mmean = malloc(sizeof(double) * cells);
        mse = malloc(sizeof(double) * cells);
        if (!mom.values || !mmean || !mse) {
            fprintf(stderr, "aimdyn sgd: out of memory\n");
            goto done;
        }
    }
    const int seeds_status = aim_seeds_run(cmd, cfg, d, tau, jobs, obs, extra, reached,
                                           ws ? &mom : NULL, set);
    if (seeds_status) {
        rc = seeds_status > 0 ? AIM_CLI_SGD_ELSEWHERE : -1;
        goto done;
    }
    fobs = malloc(sizeof(double) * (size_t)seeds * points * AIM_OBS_COUNT);
    fmom = malloc(sizeof(double) * ((size_t)seeds * points * mom.count + 1));
    if (!fobs || !fmom) {
        fprintf(stderr, "aimdyn sgd: out of memory\n");
        goto done;
    }
    fold_seeds(cfg, points, reached, obs, ws ? &mom : NULL, sign, fobs, fmom);
    aim_compare_stats(seeds, points, fobs, mean, se);
    aim_compare_stats_n(seeds, points, X, extra, xmean, xse);
    if (ws)
        aim_compare_stats_n(seeds, points, mom.count, fmom, mmean, mse);
    double wr_error[2] = {NAN, NAN};
    *median_wr = aim_cli_median_recovery(cfg, tau, obs, reached, recovered, wr_error);
    int all_reached = points;
    for (int s = 0; s < seeds; s++)
        if (reached[s] < all_reached)
            all_reached = reached[s];
    for (size_t i = (size_t)all_reached * AIM_OBS_COUNT; i < (size_t)points * AIM_OBS_COUNT; i++)
        mean[i] = se[i] = NAN;
    for (size_t i = (size_t)all_reached * X; i < (size_t)points * X; i++)
        xmean[i] = xse[i] = NAN;
    for (size_t i = (size_t)all_reached * mom.count; ws && i < (size_t)points * mom.count; i++)
        mmean[i] = mse[i] = NAN;

    char suffix[64], path[1024], name[300];
    snprintf(suffix, sizeof suffix, "sgd-d%d-seeds", d);
    if (aim_tsv_path(path, sizeof path, cfg, suffix, "tsv") || !(tsv = aim_tsv_open(path)))
        goto done;
    FILE *f = aim_tsv_stream(tsv);
    aim_tsv_metadata(tsv, "sgd", cfg);
    fprintf(f, "# sgd: d = %d, seeds %llu .. %llu\n", d, (unsigned long long)cfg->seed,
            (unsigned long long)(cfg->seed + (uint64_t)seeds - 1));
    fprintf(f, "# risk: measured on %d held-out samples per seed; risk_holdout_se: its "
               "standard error over them; risk_gauss: the Gaussian formula on the seed's "
               "order parameters (theory/measurement.md)\n", cfg->holdout);
    put_fold_line(f, cfg, sign, 0);
    fputs("seed\ttau\tn", f);
    for (int k = 0; k < AIM_OBS_COUNT; k++)
        fprintf(f, "\t%s", aim_obs_names[k]);
    for (int k = 0; k < X; k++)
        fprintf(f, "\t%s", aim_sgd_extra_names[k]);
    for (int k = 0; k < mom.count; k++)
        fprintf(f, "\t%s", aim_seeds_moment_column(ws, words[k], name, sizeof name));
    fputc('\n', f);
    for (int s = 0; s < seeds; s++)
        for (int i = 0; i < reached[s]; i++) {
            fprintf(f, "%llu\t%.10g\t%ld", (unsigned long long)(cfg->seed + (uint64_t)s),
                    tau[i], aim_sgd_steps_for(cfg, d, tau[i]));
            for (int k = 0; k < AIM_OBS_COUNT; k++)
                fprintf(f, "\t%.10g", obs[((size_t)s * points + i) * AIM_OBS_COUNT + k]);
            for (int k = 0; k < X; k++)
                fprintf(f, "\t%.10g", extra[((size_t)s * points + i) * X + k]);
            for (int k = 0; k < mom.count; k++)
                fprintf(f, "\t%.10g", mom.values[((size_t)s * points + i) * mom.count + k]);
            fputc('\n', f);
        }
    int added = aim_tsv_add_to(tsv, set);
    tsv = NULL;
    if (added)
        goto done;

    snprintf(suffix, sizeof suffix, "sgd-d%d", d);
    if (aim_tsv_path(summary_path, pathlen, cfg, suffix, "tsv") ||
        !(tsv = aim_tsv_open(summary_path)))
        goto done;
    f = aim_tsv_stream(tsv);
    aim_tsv_metadata(tsv, "sgd", cfg);
    fprintf(f, "# sgd: d = %d, %d seeds from %llu; mean and standard error over the seeds\n",
            d, seeds, (unsigned long long)cfg->seed);
    char med[32];
    fprintf(f, "# weak recovery (|overlap| >= %g): %d of %d seeds, median tau = %s; each "
               "seed's crossing linearly interpolated between grid points, error at most the "
               "spacing around it (largest %.3g), estimated h^2 |f''|/(8 |f'|) <= %.3g "
               "(theory/stops.md sec. 5)\n",
            cfg->recovery_threshold, *recovered, seeds,
            aim_cli_tau_text(med, sizeof med, *median_wr, "not defined"), wr_error[0],
            wr_error[1]);
    fprintf(f, "# risk: measured on %d held-out samples per seed (risk_se includes their "
               "noise); risk_gauss: the Gaussian formula on the measured order parameters; "
               "risk_holdout_se: the seeds' held-out standard errors (theory/measurement.md)\n",
            cfg->holdout);
    for (int s = 0; s < seeds; s++)
        if (reached[s] < points)
            fprintf(f, "# seed %llu blew up after tau = %g\n",
                    (unsigned long long)(cfg->seed + (uint64_t)s), tau[reached[s] - 1]);
    put_fold_line(f, cfg, sign, 1);
    fputs("tau\tn", f);
    for (int k = 0; k < AIM_OBS_COUNT; k++)
        fprintf(f, "\t%s_mean\t%s_se", aim_obs_names[k], aim_obs_names[k]);
    for (int k = 0; k < X; k++)
        fprintf(f, "\t%s_mean\t%s_se", aim_sgd_extra_names[k], aim_sgd_extra_names[k]);
    for (int k = 0; k < mom.count; k++) {
        aim_seeds_moment_column(ws, words[k], name, sizeof name);
        fprintf(f, "\t%s_mean\t%s_se", name, name);
    }
    fputc('\n', f);
    for (int i = 0; i < points; i++) {
        fprintf(f, "%.10g\t%ld", tau[i], aim_sgd_steps_for(cfg, d, tau[i]));
        for (int k = 0; k < AIM_OBS_COUNT; k++)
            fprintf(f, "\t%.10g\t%.10g", mean[(size_t)i * AIM_OBS_COUNT + k],
                    se[(size_t)i * AIM_OBS_COUNT + k]);
        for (int k = 0; k < X; k++)
            fprintf(f, "\t%.10g\t%.10g", xmean[(size_t)i * X + k], xse[(size_t)i * X + k]);
        for (int k = 0; k < mom.count; k++)
            fprintf(f, "\t%.10g\t%.10g", mmean[(size_t)i * mom.count + k],
                    mse[(size_t)i * mom.count + k]);
        fputc('\n', f);
    }
    rc = aim_tsv_add_to(tsv, set);
    tsv = NULL;
    if (rc == 0 && all_reached < points)
        rc = 1;
done:
    if (tsv)
        aim_tsv_abort(tsv);
    free(obs);
    free(extra);
    free(reached);
    free(sign);
    free(fobs);
    free(fmom);
    free(mom.values);
    free(mmean);
    free(mse);
    free(words);
    aim_wordset_free(ws);
    return rc;
}

int aim_cli_sgd_share(const char *cmd, int jobs, const aim_config *cfg, int d)
{
    const size_t cells = (size_t)cfg->points * AIM_OBS_COUNT,
                 xcells = (size_t)cfg->points * AIM_SGD_EXTRA_COUNT;
    double *tau = malloc(sizeof(double) * (size_t)cfg->points);
    double *mean = malloc(sizeof(double) * cells), *se = malloc(sizeof(double) * cells);
    double *xmean = malloc(sizeof(double) * xcells), *xse = malloc(sizeof(double) * xcells);
    int rc = -1;
    if (!tau || !mean || !se || !xmean || !xse) {
        fprintf(stderr, "aimdyn %s: out of memory\n", cmd);
    } else {
        double median_wr;
        int recovered;
        char path[1024];
        aim_grid_fill(cfg, tau);
        const int st = aim_cli_run_sgd(cmd, jobs, cfg, d, tau, mean, se, xmean, xse,
                                       &median_wr, &recovered, path, sizeof path, NULL);
        rc = st == AIM_CLI_SGD_ELSEWHERE ? 0 : -1;
    }
    free(tau);
    free(mean);
    free(se);
    free(xmean);
    free(xse);
    return rc;
}
