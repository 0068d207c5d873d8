/* aim_compare: SGD seeds on the tau grid, statistics, ODE-vs-SGD gaps. */
#define _POSIX_C_SOURCE 200809L

#include "compare.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "family.h"
#include "gauss.h"
#include "holdout.h"
#include "hook.h"
#include "sgd.h"
#include "sgd_state.h"
#include "words.h"

/* The letter matrices of ab at the current state of sgd (see
 * aim_words_letters). */
static int letter_matrices(const aim_sgd *sgd, const aim_alphabet *ab, double *buf,
                           const double **mats)
{
    const double *U = NULL, *V = NULL;
    aim_sgd_untied_factors(sgd, &U, &V);
    return aim_words_letters(ab, aim_sgd_matrix(sgd, 0), aim_sgd_matrix(sgd, 1), U, V,
                             aim_sgd_dim(sgd), aim_sgd_columns(sgd), buf, mats);
}

const char *const aim_sgd_extra_names[AIM_SGD_EXTRA_COUNT] = {
    [AIM_SGD_RISK_GAUSS] = "risk_gauss",
    [AIM_SGD_RISK_HOLDOUT_SE] = "risk_holdout_se",
};

int aim_compare_run_sgd(const aim_config *cfg, int d, const double *tau,
                        int points, double *obs, int *reached)
{
    return aim_compare_run_sgd_moments(cfg, d, tau, points, obs, NULL, reached, NULL, NULL);
}

/* The observables of seed sgd at its current state into row, measured:
 * the order parameters from its matrices, the risk on the held-out
 * samples ho. When extra is not NULL, also the held-out standard error
 * and the Gaussian formula's risk on the measured order parameters (g,
 * the theory's expectation engine: used for that column only, so that no
 * measured number passes through it). Returns 0, 1 when the held-out
 * risk is not finite (a blow-up), -1 when the expectation engine fails
 * (message in g). */
static int measure(aim_gauss *g, aim_holdout *ho, const aim_sgd *sgd, double *row,
                   double *extra)
{
    aim_overlaps q;
    aim_sgd_overlaps(sgd, &q);
    aim_overlaps_observables(&q, row);
    double se;
    const int st = aim_holdout_risk(ho, sgd, &row[AIM_OBS_RISK], &se);
    if (!extra || st != 0)
        return st;
    extra[AIM_SGD_RISK_HOLDOUT_SE] = se;
    /* the risk alone: the formula's column needs no kernels */
    return aim_gauss_risk_at(g, &q, &extra[AIM_SGD_RISK_GAUSS]) != 0 ? -1 : 0;
}

int aim_compare_run_sgd_moments(const aim_config *cfg, int d, const double *tau,
                                int points, double *obs, double *extra, int *reached,
                                aim_sgd_moments *mom, const aim_compare_progress *progress)
{
    return aim_compare_run_sgd_checkpointed(cfg, d, tau, points, obs, extra, reached, mom,
                                            NULL, progress);
}

double aim_compare_seed_bytes(const aim_config *cfg, int d, int moment_len)
{
    const double D = d, p = aim_sgd_columns_for(cfg, d);
    /* the student's parameter arrays, and the teacher's factors: those of
     * a student of the teacher's decomposition */
    const aim_state_arrays *own = aim_sgd_state_arrays(cfg->decomposition),
                           *drawn = aim_sgd_state_arrays(cfg->teacher.decomposition);
    /* the learned parameters and the teacher: a checkpoint's payload,
     * held twice while it is written (a growing buffer) */
    const double state = 8 * (D * D + (p > 0 ? own->count * D * p : D * D));
    /* the teacher's factors, drawn while the seed is made (src/students/draw.c) */
    const double pt = drawn->factored ? fmax(1.0, floor(cfg->teacher.rho * D + 0.5)) : 0;
    const double teacher = 8 * D * pt * drawn->count;
    /* aim_compare_run_sgd_checkpointed's letters, aim_words_measure's stack */
    const double moments =
        moment_len > 0 ? 8 * D * D * (4 + (moment_len > 2 ? moment_len - 2 : 0)) : 0;
    return aim_sgd_bytes(cfg, d) +
           aim_holdout_bytes(cfg->holdout, cfg->tokens, d, p > 0 ? p : D, own->count > 1) +
           fmax(teacher, 2 * state + moments);
}

int aim_compare_run_sgd_checkpointed(const aim_config *cfg, int d, const double *tau,
                                     int points, double *obs, double *extra, int *reached,
                                     aim_sgd_moments *mom, const aim_sgd_checkpoints *ck,
                                     const aim_compare_progress *progress)
{
    int seeds = cfg->seeds;
    if (seeds <= 0 || points <= 0) {
        fprintf(stderr, "aimdyn: SGD: need seeds > 0 and points > 0\n");
        return -1;
    }
    double *all = NULL; /* every word of mom->ws at one grid point */
    double *letters = NULL; /* the computed letter matrices */
    if (mom && (!(all = malloc(sizeof *all * (size_t)aim_wordset_count(mom->ws))) ||
                !(letters = malloc(sizeof *letters * 4 * (size_t)d * (size_t)d)))) {
        free(all);
        fprintf(stderr, "aimdyn: SGD at d = %d: out of memory (the moments' letters)\n", d);
        return -1;
    }
    /* the expectation engine only for the formula's column */
    aim_gauss *g =
        extra ? aim_gauss_create(cfg, cfg->rule, aim_family_symmetric_pair(cfg)) : NULL;
    if (extra && !g) {
        free(all);
        free(letters);
        fprintf(stderr, "aimdyn: SGD: cannot create the expectation "
                        "engine\n");
        return -1;
    }

    int rc = 0;
    for (int s = 0; s < seeds && rc == 0; s++) {
        uint64_t seed = cfg->seed + (uint64_t)s;
        aim_sgd *sgd = aim_sgd_create(cfg, d, seed);
        aim_holdout *ho = sgd ? aim_holdout_create(sgd, seed, cfg->holdout) : NULL;
        if (!ho) {
            fprintf(stderr, "aimdyn: cannot set up SGD seed %llu "
                            "at d = %d (said above)\n",
                    (unsigned long long)seed, d);
            aim_sgd_free(sgd);
            rc = -1;
            break;
        }
        double *row = obs + (size_t)s * (size_t)points * AIM_OBS_COUNT;
        double *xrow = extra ? extra + (size_t)s * (size_t)points * AIM_SGD_EXTRA_COUNT
                             : NULL;
        int i = ck ? ck->resume(ck->ctx, s, sgd) : 0;
        if (i < 0) {
            aim_holdout_free(ho);
            aim_sgd_free(sgd);
            rc = -1;
            break;
        }
        for (; i < points; i++) {
            long target = aim_sgd_steps_for(cfg, d, tau[i]);
            long todo = target - aim_sgd_steps(sgd);
            if (todo > 0) {
                int adv = aim_sgd_advance(sgd, todo);
                if (adv == 1) {
                            fprintf(stderr,
                            "aimdyn: warning: SGD seed %llu (d = %d) blew up "
                            "before tau = %g (step %ld): Omega(S,S) or the mean "
                            "passed ode.blowup or became non-finite; NaN from "
                            "there on\n",
                            (unsigned long long)seed, d, tau[i],
                            aim_sgd_steps(sgd));
                    break;
                } else if (adv != 0) {
                            fprintf(stderr, "aimdyn: SGD seed %llu failed "
                                    "at tau = %g\n",
                            (unsigned long long)seed, tau[i]);
                    rc = -1;
                    break;
                }
            }
            const int st = measure(g, ho, sgd, row + (size_t)i * AIM_OBS_COUNT,
                                   xrow ? xrow + (size_t)i * AIM_SGD_EXTRA_COUNT : NULL);
            if (st > 0) {
                    fprintf(stderr,
                        "aimdyn: warning: SGD seed %llu (d = %d) blew up at tau = %g: "
                        "its risk on the held-out samples is not finite; NaN from there "
                        "on\n", (unsigned long long)seed, d, tau[i]);
                break;
            }
            if (st < 0) {
                    fprintf(stderr, "aimdyn: SGD seed %llu, tau = %g: "
                                "observables: %s\n",
                        (unsigned long long)seed, tau[i], aim_gauss_error(g));
                rc = -1;
                break;
            }
            if (mom) {
                const double *mats[AIM_ALPHABET_MAX];
                if (letter_matrices(sgd, aim_wordset_alphabet(mom->ws), letters, mats) ||
                    aim_words_measure(mom->ws, aim_wordset_max_len(mom->ws), mats, d, all)) {
                    fprintf(stderr, "aimdyn: SGD seed %llu: out of memory measuring "
                                    "moments\n", (unsigned long long)seed);
                    rc = -1;
                    break;
                }
                double *mrow = mom->values + ((size_t)s * points + (size_t)i) * mom->count;
                for (int k = 0; k < mom->count; k++)
                    mrow[k] = all[mom->words[k]];
            }
            if (ck && ck->save(ck->ctx, s, i, sgd)) {
                rc = -1;
                break;
            }
            aim_hook_event("sgd-point", "seed", (long)seed, "k", i + 1);
            if (progress)
                progress->point(progress->ctx, i + 1, points, aim_sgd_steps(sgd));
        }
        reached[s] = i;
        for (int j = i; j < points; j++) {
            for (int k = 0; k < AIM_OBS_COUNT; k++)
                row[(size_t)j * AIM_OBS_COUNT + k] = NAN;
            for (int k = 0; xrow && k < AIM_SGD_EXTRA_COUNT; k++)
                xrow[(size_t)j * AIM_SGD_EXTRA_COUNT + k] = NAN;
            for (int k = 0; mom && k < mom->count; k++)
                mom->values[((size_t)s * points + (size_t)j) * mom->count + k] = NAN;
        }
        aim_holdout_free(ho);
        aim_sgd_free(sgd);
        if (rc != 0)
            break;
    }
    aim_gauss_free(g);
    free(all);
    free(letters);
    return rc;
}

void aim_compare_stats(int seeds, int points, const double *obs, double *mean,
                       double *stderr_)
{
    aim_compare_stats_n(seeds, points, AIM_OBS_COUNT, obs, mean, stderr_);
}

void aim_compare_stats_n(int seeds, int points, int width, const double *obs,
                         double *mean, double *stderr_)
{
    for (int i = 0; i < points; i++) {
        for (int k = 0; k < width; k++) {
            size_t off = (size_t)i * width + (size_t)k;
            size_t stride = (size_t)points * width;
            int n = 0;
            double sum = 0;
            for (int s = 0; s < seeds; s++) {
                double x = obs[(size_t)s * stride + off];
                if (!isnan(x)) {
                    sum += x;
                    n++;
                }
            }
            if (n == 0) {
                mean[off] = NAN;
                stderr_[off] = NAN;
                continue;
            }
            double m = sum / n;
            double ss = 0;
            for (int s = 0; s < seeds; s++) {
                double x = obs[(size_t)s * stride + off];
                if (!isnan(x))
                    ss += (x - m) * (x - m);
            }
            mean[off] = m;
            stderr_[off] = n > 1 ? sqrt(ss / (n - 1)) / sqrt((double)n) : 0.0;
        }
    }
}

aim_gap aim_compare_gap(int points, const double *tau, const double *ode, size_t ode_stride,
                        const double *mean, const double *stderr_, size_t stride)
{
    /* NaN = nothing compared (no point with an SGD mean / stderr). */
    aim_gap gp = {NAN, NAN, NAN, NAN};
    for (int i = 0; i < points; i++) {
        const double m = mean[(size_t)i * stride], o = ode[(size_t)i * ode_stride];
        if (isnan(m))
            continue;
        /* An ODE that stopped (NaN) where SGD did not is an infinite
         * gap, not a skipped point. */
        double gap = isnan(o) ? INFINITY : fabs(o - m);
        if (isnan(gp.max_abs) || gap > gp.max_abs) {
            gp.max_abs = gap;
            gp.tau_abs = tau[i];
        }
        double se = stderr_[(size_t)i * stride];
        if (se > 0) {
            double z = gap / se;
            if (isnan(gp.max_z) || z > gp.max_z) {
                gp.max_z = z;
                gp.tau_z = tau[i];
            }
        }
    }
    return gp;
}

void aim_compare_gaps(int points, const double *tau, const double *ode,
                      const double *mean, const double *stderr_,
                      aim_gap gaps[AIM_OBS_COUNT])
{
    for (int k = 0; k < AIM_OBS_COUNT; k++)
        gaps[k] = aim_compare_gap(points, tau, ode + k, AIM_OBS_COUNT, mean + k, stderr_ + k,
                                  AIM_OBS_COUNT);
}

/* 3 standard errors: a per-point level; over a grid of ~25 correlated
 * points the largest |z| of a correct ODE with no bias passes it in a few
 * per cent of runs. The exponent bands split at the geometric midpoints
 * of the laws 1/d, d^-1/2 and d^0. */
enum { VERDICT_Z = 3 };

static int stands_out(const aim_gap *g)
{
    return g && isfinite(g->max_abs) && g->max_abs > 0 && g->max_z > VERDICT_Z;
}

const char *aim_compare_verdict(const aim_gap *g, const aim_gap *prev, int d_prev, int d)
{
    if (isnan(g->max_abs))
        return "no_data";
    if (g->max_abs == 0)
        return "exact";
    if (isinf(g->max_abs))
        return "ode_stopped";
    if (isnan(g->max_z))
        return "no_data";
    if (g->max_z <= VERDICT_Z)
        return "within_3se";
    if (!stands_out(prev) || d_prev <= 0 || d_prev >= d)
        return "above_3se";
    const double exponent = log(g->max_abs / prev->max_abs) / log((double)d_prev / d);
    return exponent >= 0.75 ? "1/d" : exponent >= 0.25 ? "1/sqrt_d" : "not_falling";
}

int aim_compare_measure_words(const aim_sgd *sgd, const aim_wordset *ws, int max_len,
                              double *moments)
{
    const int d = aim_sgd_dim(sgd);
    double *letters = malloc(sizeof *letters * 4 * (size_t)d * (size_t)d);
    const double *mats[AIM_ALPHABET_MAX];
    int rc = !letters || letter_matrices(sgd, aim_wordset_alphabet(ws), letters, mats) ||
             aim_words_measure(ws, max_len, mats, d, moments);
    free(letters);
    return rc ? -1 : 0;
}

double *aim_compare_seed_moments(const aim_config *cfg, int d, const aim_alphabet *ab,
                                 int max_len)
{
    aim_wordset *ws = aim_wordset_create(ab, max_len);
    aim_sgd *sgd = ws ? aim_sgd_create(cfg, d, cfg->seed) : NULL;
    double *moments = ws ? malloc(sizeof *moments * (size_t)aim_wordset_count(ws)) : NULL;
    if (!ws || !sgd || !moments || aim_compare_measure_words(sgd, ws, max_len, moments)) {
        fprintf(stderr, "aimdyn: cannot measure the start of SGD seed %llu at d = %d "
                        "(%s)\n", (unsigned long long)cfg->seed, d,
                ws && !sgd ? "its matrices could not be made: said above" : "out of memory");
        free(moments);
        moments = NULL;
    }
    aim_sgd_free(sgd);
    aim_wordset_free(ws);
    return moments;
}

void aim_compare_alphabet(const aim_config *cfg, aim_alphabet *ab)
{
    const aim_model_ops *ops = aim_model_ops_of(cfg);
    if (ops && ops->alphabet)
        ops->alphabet(cfg, ab);
    else /* a closed ODE's two matrices: the student and the teacher */
        *ab = (aim_alphabet){"ST", "ST"};
}

double *aim_compare_seed_start(const aim_config *cfg, int d)
{
    aim_alphabet ab;
    aim_compare_alphabet(cfg, &ab);
    return aim_compare_seed_moments(cfg, d, &ab, cfg->order + 1);
}

int aim_compare_measure_start(const aim_config *cfg, int d, uint64_t seed,
                              aim_measured_start *start, char *err, size_t n)
{
    aim_config c = *cfg;
    c.seed = seed;
    memset(start, 0, sizeof *start);
    if (!aim_model_ops_of(cfg)->hierarchy) {
        aim_overlaps *q = malloc(sizeof *q);
        aim_sgd *sgd = q ? aim_sgd_create(&c, d, seed) : NULL;
        if (!sgd) {
            free(q);
            snprintf(err, n, "could not draw the matrices of seed %llu at d = %d",
                     (unsigned long long)seed, d);
            return -1;
        }
        aim_sgd_overlaps(sgd, q);
        aim_sgd_free(sgd);
        start->q = q;
        return 0;
    }
    c.start = AIM_START_SEED;
    if (!(start->moments = aim_compare_seed_start(&c, d))) {
        snprintf(err, n, "could not measure the start of seed %llu at d = %d",
                 (unsigned long long)seed, d);
        return -1;
    }
    return 0;
}

void aim_compare_release_start(aim_measured_start *start)
{
    /* the storage aim_compare_measure_start allocated */
    free((void *)start->q);
    free((void *)start->moments);
    memset(start, 0, sizeof *start);
}
