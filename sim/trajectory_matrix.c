/* ode.method = matrix as a trajectory: the matrix limit process's
 * replicas run on the grid (on the engine's threads), folded and averaged,
 * with the hierarchy's tracked words measured in each (theory/matrix.md). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fold.h"
#include "gauss.h"
#include "mlimit.h"
#include "model.h"
#include "omp_directive.h"
#include "trajectory_internal.h"

/* The tracked words of cfg's hierarchy at order cfg->order (every word of
 * length 1..M with a letter the student moves, in word-set order), as the
 * truncated hierarchy names its state: the matrix method writes the same
 * columns. ws is created here; *tracked is malloc'ed. */
aim_wordset *aim_trajectory_i_matrix_words(const aim_config *cfg, int **tracked, int *count)
{
    *tracked = NULL;
    *count = 0;
    const aim_model_ops *ops = aim_model_ops_of(cfg);
    if (!ops->hierarchy)
        return NULL;
    aim_alphabet ab;
    ops->alphabet(cfg, &ab);
    const char *moving = ops->moving;
    aim_wordset *ws = aim_wordset_create(&ab, cfg->order);
    if (!ws || !(*tracked = malloc(sizeof **tracked * (size_t)aim_wordset_count(ws)))) {
        aim_wordset_free(ws);
        return NULL;
    }
    for (int i = 1; i < aim_wordset_count(ws); i++)
        if (strpbrk(aim_wordset_word(ws, i), moving))
            (*tracked)[(*count)++] = i;
    return ws;
}

/* Sum and sum of squares of one replica's row into acc (2 x width). */
static void accumulate(double *acc, const double *row, int width)
{
    for (int k = 0; k < width; k++) {
        acc[k] += row[k];
        acc[width + k] += row[k] * row[k];
    }
}

/* What one replica of aim_trajectory_i_run_matrix gave: rows 0 ..
 * reached - 1 of its observables and tracked words (width each); rc 0 when
 * it ran the whole grid, > 0 when it blew up, < 0 when it failed, with
 * message and the tau it stopped at; made 0 when it could not be set up
 * (message says why). */
typedef struct {
    double *rows;
    int made, reached, rc;
    long steps;
    double tau, twr;
    char message[512];
} replica_result;

/* Replica r of aim_trajectory_i_run_matrix (seed cfg->seed + r) on the
 * grid tau into out (out->rows: points x width), each grid point reported
 * to stage. */
static void run_replica(const aim_config *cfg, int D, double d_raw, double h0, const double *tau,
                        const aim_wordset *ws, const int *tracked, int count, int r,
                        replica_result *out, void *stage)
{
    const int points = cfg->points, width = AIM_OBS_COUNT + count;
    const int nw = ws ? aim_wordset_count(ws) : 0;
    double *all = malloc(sizeof *all * ((size_t)nw + 1));
    double *row = malloc(sizeof *row * (size_t)width);
    char err[256] = "out of memory";
    aim_mlimit *m =
        all && row ? aim_mlimit_create(cfg, D, d_raw, cfg->seed + (uint64_t)r, err, sizeof err)
                   : NULL;
    out->made = m != NULL;
    if (!m) {
        snprintf(out->message, sizeof out->message,
                 "could not set up the matrix limit process: %s", err);
        free(all);
        free(row);
        aim_trajectory_i_stage_finished(stage, r);
        return;
    }
    int i = 0, rc = 0;
    for (; i < points; i++) {
        if (i > 0 && (rc = aim_mlimit_advance(m, tau[i] - tau[i - 1], h0)) != 0)
            break;
        if (aim_mlimit_observables(m, row) || (ws && aim_mlimit_words(m, ws, cfg->order, all))) {
            rc = -1;
            break;
        }
        for (int k = 0; k < count; k++)
            row[AIM_OBS_COUNT + k] = all[tracked[k]];
        memcpy(out->rows + (size_t)i * width, row, sizeof *row * (size_t)width);
        aim_trajectory_i_stage_update(stage, r, i, points - 1, tau[i] - tau[0]);
    }
    aim_trajectory_i_stage_finished(stage, r);
    out->reached = i;
    out->rc = rc;
    out->twr = aim_mlimit_recovery_time(m);
    out->steps = aim_mlimit_steps(m);
    if (rc) {
        snprintf(out->message, sizeof out->message, "%s",
                 rc < 0 && !aim_mlimit_error(m)[0] ? "out of memory" : aim_mlimit_error(m));
        out->tau = aim_mlimit_tau(m);
    } else {
        aim_trajectory_i_note("matrix limit process: replica %d/%d done (D = %d)", r + 1,
                              cfg->replicas, D);
    }
    aim_mlimit_free(m);
    free(all);
    free(row);
}

/* ode.method = matrix: the limit process at dimension matrix.d, replicas
 * averaged (theory/matrix.md). A replica that blows up ends the run at the
 * last point every replica reached (a mean over survivors would be
 * biased). With output.fold, a replica is folded by its sign at the last
 * point it reached (src/results/fold.h): its rows are kept until it ends. */
aim_ode_status aim_trajectory_i_run_matrix(const aim_config *cfg, int d, const double *tau,
                                           double *obs, aim_trajectory_moments *moments,
                                           aim_ode_report *report)
{
    const double d_raw = cfg->ode_d > 0 ? cfg->ode_d : (double)d;
    const int points = cfg->points, R = cfg->replicas, D = cfg->matrix_d;
    const double h0 = aim_config_matrix_step(cfg);
    int *tracked = NULL, count = 0;
    aim_wordset *ws = aim_trajectory_i_matrix_words(cfg, &tracked, &count);
    const int width = AIM_OBS_COUNT + count;
    double *acc = calloc((size_t)points * 2 * width, sizeof *acc);
    /* every replica's rows */
    double *rows = malloc(sizeof *rows * (size_t)R * points * width);
    replica_result *res = calloc((size_t)R, sizeof *res);
    int *odd = malloc(sizeof *odd * (size_t)width);
    int *sign = calloc((size_t)R, sizeof *sign);
    int reached = points, crossed = 0;
    double twr_sum = 0.0, twr_sq = 0.0;
    if ((aim_model_ops_of(cfg)->hierarchy && !ws) || !acc || !rows || !res || !odd || !sign) {
        snprintf(report->message, sizeof report->message, "out of memory");
        goto done;
    }
    for (int k = 0; k < width; k++)
        odd[k] = k < AIM_OBS_COUNT
                     ? aim_fold_obs_odd(k)
                     : aim_fold_word_odd(aim_wordset_word(ws, tracked[k - AIM_OBS_COUNT]));
    /* the replicas on the engine's threads (--threads), each its own
     * process and engine; their results are then taken in replica order,
     * so that the file is the same on any number of threads */
    int threads = aim_gauss_threads() < R ? aim_gauss_threads() : R;
    if (threads > 1)
        aim_gauss_team_started();
    /* its progress: each replica's share of tau done (a replica's time
     * goes as the tau it covers) */
    char label[64];
    snprintf(label, sizeof label, "matrix limit process (D = %d)", D);
    void *stage =
        aim_trajectory_i_stage_begin(label, "replica", R, threads, tau[points - 1] - tau[0], "tau");
    OMP(omp parallel for schedule(dynamic, 1) num_threads(threads) if (threads > 1))
    for (int r = 0; r < R; r++) {
        res[r].rows = rows + (size_t)r * points * width;
        run_replica(cfg, D, d_raw, h0, tau, ws, tracked, count, r, &res[r], stage);
    }
    aim_trajectory_i_stage_end(stage);
    for (int r = 0; r < R; r++) {
        const replica_result *x = &res[r];
        if (!x->made) {
            snprintf(report->message, sizeof report->message, "%s", x->message);
            goto done;
        }
        const int i = x->reached;
        /* rows 0 .. i - 1 are the replica's, folded by the last of them */
        sign[r] = i > 0 ? aim_fold_sign(cfg, x->rows + (size_t)(i - 1) * width) : 1;
        for (int j = 0; j < i; j++) {
            double *y = x->rows + (size_t)j * width;
            for (int k = 0; k < width && sign[r] < 0; k++)
                y[k] = odd[k] ? -y[k] : y[k];
            accumulate(acc + (size_t)j * 2 * width, y, width);
        }
        report->matrix_steps += (double)x->steps / R;
        crossed += !isnan(x->twr);
        twr_sum += isnan(x->twr) ? 0.0 : x->twr;
        twr_sq += isnan(x->twr) ? 0.0 : x->twr * x->twr;
        if (x->rc) {
            snprintf(report->message, sizeof report->message, "replica %d (seed %llu): %.400s",
                     r + 1, (unsigned long long)(cfg->seed + (uint64_t)r), x->message);
            report->tau = x->tau;
            if (x->rc < 0)
                goto done;
            report->status = AIM_ODE_BLOWUP;
            if (i < reached)
                reached = i;
            break;
        }
    }
    if (report->status != AIM_ODE_BLOWUP) {
        report->status = AIM_ODE_OK;
        report->tau = tau[points - 1];
    }
    report->reached = reached;
    /* weak recovery: the replicas' mean crossing time, when every replica
     * crossed (a mean over the early ones would be biased) */
    if (report->status == AIM_ODE_OK && crossed == R) {
        report->tau_wr = twr_sum / R;
        report->tau_wr_se =
            R > 1 ? sqrt(fmax(twr_sq / R - report->tau_wr * report->tau_wr, 0.0) / (R - 1))
                  : NAN;
    }
    if (moments && !(moments->names = calloc((size_t)count + 1, sizeof *moments->names))) {
        report->status = AIM_ODE_FAILED;
        snprintf(report->message, sizeof report->message, "out of memory");
        goto done;
    }
    if (moments && cfg->fold != AIM_FOLD_NONE) {
        moments->fold_sign = sign;
        sign = NULL;
    }
    if (moments) {
        moments->count = count;
        moments->values = malloc(sizeof(double) * ((size_t)points * count + 1));
        moments->obs_se = R > 1 ? malloc(sizeof(double) * (size_t)points * AIM_OBS_COUNT) : NULL;
        int ok = moments->values && (R == 1 || moments->obs_se);
        for (int k = 0; ok && k < count; k++) {
            const char *w = aim_wordset_word(ws, tracked[k]);
            ok = (moments->names[k] = malloc(strlen(w) + 4)) != NULL;
            if (ok)
                sprintf(moments->names[k], "m(%s)", w);
        }
        if (!ok) {
            aim_trajectory_moments_free(moments);
            report->status = AIM_ODE_FAILED;
            snprintf(report->message, sizeof report->message, "out of memory");
            goto done;
        }
    }
    for (int i = 0; i < points; i++) {
        const double *a = acc + (size_t)i * 2 * width;
        for (int k = 0; k < width; k++) {
            const double mean = a[k] / R;
            const double se = R > 1 ? sqrt(fmax(a[width + k] / R - mean * mean, 0.0) * R /
                                           (R - 1) / R)
                                    : NAN;
            const double v = i < reached ? mean : NAN;
            if (k < AIM_OBS_COUNT) {
                obs[(size_t)i * AIM_OBS_COUNT + k] = v;
                if (moments && moments->obs_se)
                    moments->obs_se[(size_t)i * AIM_OBS_COUNT + k] = i < reached ? se : NAN;
            } else if (moments) {
                moments->values[(size_t)i * count + (k - AIM_OBS_COUNT)] = v;
            }
        }
    }
done:
    aim_wordset_free(ws);
    free(tracked);
    free(acc);
    free(rows);
    free(res);
    free(odd);
    free(sign);
    return report->status;
}
