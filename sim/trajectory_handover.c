/* hierarchy.beyond = matrix (theory/matrix.md sec. 7): a hierarchy that
 * failed as a truncation continues as the matrix limit process, run once
 * per configuration (kept in a reuse for the later orders) and put on the
 * hierarchy's branch. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_check.h"
#include "fold.h"
#include "model.h"
#include "trajectory_internal.h"

/* Text added to report->message (cut at its size). */
__attribute__((format(printf, 2, 3))) static void append_message(aim_ode_report *report,
                                                                 const char *fmt, ...)
{
    const size_t used = strlen(report->message);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(report->message + used, sizeof report->message - used, fmt, ap);
    va_end(ap);
}

/* The highest order, at most cfg->order, whose tracked words number at
 * most AIM_HANDOVER_WORDS: the words the hand-over's process writes
 * (longer words are NaN in its rows). Each word is one D x D matrix
 * product per output point and replica (after shared prefixes): at
 * untied M = 7 (25 245 words, D = 400, 46 points, 4 replicas) measuring
 * them all had not finished after 13 minutes of CPU, where the process's
 * steps with 235 words take about one
 * (validate/results/RESULTS_late.md sec. 10); every tied order has at
 * most 198 words (M = 10), untied order 4 235. */
static int handover_words_order(const aim_config *cfg)
{
    aim_config c = *cfg;
    int order = 1;
    while (order < cfg->order) {
        c.order = order + 1;
        int *tracked = NULL, count = 0;
        aim_wordset *ws = aim_trajectory_i_matrix_words(&c, &tracked, &count);
        free(tracked);
        aim_wordset_free(ws);
        if (!ws || count > AIM_HANDOVER_WORDS)
            break;
        order++;
    }
    return order;
}

/* The matrix limit process of mcfg at d on tau (its words, when wanted,
 * up to mcfg->order at least): the one kept in reuse when it is that run
 * with words to that order, else run, into reuse (words to the highest
 * order its runs ask for, so that the next order finds them) or, without
 * one, into *own (clear it after). NULL when out of memory. */
static const aim_trajectory_kept_matrix *matrix_process(const aim_config *mcfg, int d,
                                                        const double *tau, int want_words,
                                                        aim_trajectory_reuse *reuse,
                                                        aim_trajectory_kept_matrix *own)
{
    const int points = mcfg->points;
    aim_config run = *mcfg;
    char *key = NULL;
    size_t len = 0;
    if (reuse && reuse->highest > run.order)
        run.order = reuse->highest;
    run.order = handover_words_order(&run);
    if (reuse) {
        aim_config unordered = *mcfg;
        unordered.order = 0; /* the process is the same at every order */
        if (aim_trajectory_i_config_key(&unordered, &key, &len))
            return NULL;
        const aim_trajectory_kept_matrix *k = &reuse->matrix;
        if (k->key && k->key_len == len && !memcmp(k->key, key, len) && k->d == d &&
            !memcmp(k->tau, tau, sizeof *tau * (size_t)points) && k->words >= run.order) {
            free(key);
            return k;
        }
        aim_trajectory_i_kept_matrix_clear(&reuse->matrix);
        own = &reuse->matrix;
        want_words = 1;
    }
    own->key = key;
    own->key_len = len;
    own->d = d;
    own->words = run.order;
    own->tau = malloc(sizeof *own->tau * (size_t)points);
    own->obs = malloc(sizeof *own->obs * (size_t)points * AIM_OBS_COUNT);
    if (!own->tau || !own->obs) {
        aim_trajectory_i_kept_matrix_clear(own);
        return NULL;
    }
    memcpy(own->tau, tau, sizeof *tau * (size_t)points);
    /* run.method is matrix: what aim_trajectory_run_full would do */
    aim_trajectory_moments *moments = want_words ? &own->moments : NULL;
    aim_trajectory_i_report_clear(&own->report, moments);
    aim_trajectory_i_run_matrix(&run, d, tau, own->obs, moments, &own->report);
    return own;
}

/* The seam a figure shows at the hand-over: the process (on the
 * hierarchy's branch) minus the hierarchy at the hierarchy's last row,
 * cut - 1, in the overlap and in the risk relative to the hierarchy's,
 * with the process's standard errors (se: NULL with one replica). */
static void record_seam(const double *tau, const double *obs, const double *mobs,
                        const double *se, int cut, int branch, aim_ode_report *report)
{
    report->handover_seam_tau = NAN;
    for (int k = 0; k < 2; k++)
        report->handover_seam[k] = report->handover_seam_se[k] = NAN;
    if (cut < 1)
        return;
    const size_t row = (size_t)(cut - 1) * AIM_OBS_COUNT;
    const double hier_risk = obs[row + AIM_OBS_RISK];
    report->handover_seam_tau = tau[cut - 1];
    report->handover_seam[0] =
        (branch < 0 ? -1 : 1) * mobs[row + AIM_OBS_OVERLAP] - obs[row + AIM_OBS_OVERLAP];
    report->handover_seam[1] = (mobs[row + AIM_OBS_RISK] - hier_risk) / hier_risk;
    if (se) {
        report->handover_seam_se[0] = se[row + AIM_OBS_OVERLAP];
        report->handover_seam_se[1] = se[row + AIM_OBS_RISK] / fabs(hier_risk);
    }
}

/* hierarchy.beyond = matrix (theory/matrix.md sec. 7): a hierarchy that
 * failed at grid point report->reached, by its truncation error estimate
 * or by leaving the moments of real matrices, continues as the matrix
 * limit process. That process is run over the whole grid from its own
 * start (it has no state to take over from a truncation: the words longer
 * than M are what failed; the same run for every order, kept in reuse) and
 * its rows, with their replica standard errors, replace the missing ones;
 * the rows before are the hierarchy's, untouched. */
void aim_trajectory_i_hand_over(const aim_config *cfg, int d, const double *tau, double *obs,
                                aim_trajectory_moments *moments, aim_trajectory_reuse *reuse,
                                aim_ode_report *report)
{
    const int points = cfg->points, cut = report->reached;
    snprintf(report->handover_why, sizeof report->handover_why, "%s", report->message);
    if (cfg->start_file[0]) {
        append_message(report, " (no hand-over to the matrix limit process: it cannot start "
                               "from training.start_file)");
        return;
    }
    aim_config mcfg = *cfg;
    mcfg.method = AIM_METHOD_MATRIX;
    aim_config_error err;
    if (aim_config_validate(&mcfg, &err)) {
        append_message(report, " (no hand-over to the matrix limit process: %s)", err.message);
        return;
    }
    /* With an output map even in the index the replicas split between a
     * branch and its mirror image (src/results/fold.h), and the hierarchy follows
     * one of them: the replicas are folded, then put on its branch. */
    if (mcfg.fold == AIM_FOLD_NONE) {
        aim_config folded = mcfg;
        folded.fold = cfg->centring == AIM_RAW ? AIM_FOLD_MEAN : AIM_FOLD_OVERLAP;
        if (aim_config_validate(&folded, &err) == 0)
            mcfg = folded;
    }
    const int branch =
        cut > 0 ? aim_fold_sign(&mcfg, obs + (size_t)(cut - 1) * AIM_OBS_COUNT) : 1;
    double *se =
        moments && !moments->obs_se ? malloc(sizeof *se * (size_t)points * AIM_OBS_COUNT) : NULL;
    if (moments && !moments->obs_se && !se) {
        append_message(report, " (no hand-over to the matrix limit process: out of memory)");
        return;
    }
    aim_trajectory_i_note(
        "%s; hierarchy.beyond = matrix: the matrix limit process (D = %d, %d replicas) "
        "continues from tau = %g",
        report->message, cfg->matrix_d, cfg->replicas, tau[cut]);
    aim_trajectory_kept_matrix own = {0};
    const aim_trajectory_kept_matrix *run =
        matrix_process(&mcfg, d, tau, moments != NULL, reuse, &own);
    if (!run) {
        append_message(report, " (no hand-over to the matrix limit process: out of memory)");
        free(se);
        return;
    }
    const double *mobs = run->obs;
    const aim_trajectory_moments mmom = run->moments;
    const aim_ode_report mrep = run->report;
    if (mrep.status == AIM_ODE_FAILED || mrep.reached <= cut) {
        append_message(report, " (the matrix limit process, run to hand over, %s: %s)",
                       mrep.status == AIM_ODE_FAILED ? "failed" : "stopped before that point",
                       mrep.message);
        free(se);
        aim_trajectory_i_kept_matrix_clear(&own);
        return;
    }
    record_seam(tau, obs, mobs, mmom.obs_se, cut, branch, report);
    for (int i = cut; i < mrep.reached; i++)
        for (int k = 0; k < AIM_OBS_COUNT; k++)
            obs[(size_t)i * AIM_OBS_COUNT + k] = (branch < 0 && aim_fold_obs_odd(k) ? -1 : 1) *
                                                 mobs[(size_t)i * AIM_OBS_COUNT + k];
    if (moments) {
        if (se) {
            for (size_t k = 0; k < (size_t)points * AIM_OBS_COUNT; k++)
                se[k] = NAN;
            moments->obs_se = se;
        }
        for (int i = cut; i < points; i++) {
            const int in = i < mrep.reached;
            for (int k = 0; k < AIM_OBS_COUNT; k++)
                moments->obs_se[(size_t)i * AIM_OBS_COUNT + k] =
                    in && mmom.obs_se ? mmom.obs_se[(size_t)i * AIM_OBS_COUNT + k] : NAN;
            /* the matrix method writes the hierarchy's words
             * (aim_trajectory_i_matrix_words) */
            for (int k = 0; k < moments->count; k++)
                moments->values[(size_t)i * moments->count + k] =
                    in && k < mmom.count && !strcmp(moments->names[k], mmom.names[k])
                        ? (branch < 0 && aim_fold_word_odd(moments->names[k]) ? -1 : 1) *
                              mmom.values[(size_t)i * mmom.count + k]
                        : NAN;
            if (moments->trunc)
                moments->trunc[2 * (size_t)i] = moments->trunc[2 * (size_t)i + 1] = NAN;
        }
    }
    report->handover_order = moments ? (run->words < cfg->order ? run->words : cfg->order) : 0;
    aim_trajectory_i_kept_matrix_clear(&own);
    aim_ode_stats_append(report, &mrep, "matrix limit process (hand-over)");
    if (mcfg.fold != AIM_FOLD_NONE)
        snprintf(report->handover_fold, sizeof report->handover_fold,
                 "its replicas folded by the sign of their final %s (output.fold = %s), then "
                 "put on the hierarchy's branch (%s %s at tau = %g)",
                 aim_fold_what(&mcfg), mcfg.fold == AIM_FOLD_MEAN ? "mean" : "overlap",
                 aim_fold_what(&mcfg), branch < 0 ? "negative" : "positive",
                 tau[cut > 0 ? cut - 1 : 0]);
    report->handed_over = 1;
    report->matrix_steps = mrep.matrix_steps;
    report->handover = tau[cut];
    report->status = mrep.status;
    report->stop = mrep.stop;
    report->tau = mrep.tau;
    report->reached = mrep.reached;
    snprintf(report->message, sizeof report->message, "%s", mrep.message);
    if (isnan(report->tau_wr))
        report->tau_wr = aim_trajectory_recovery_time(report->reached, tau,
                                                      obs + AIM_OBS_OVERLAP, AIM_OBS_COUNT,
                                                      cfg->recovery_threshold);
}
