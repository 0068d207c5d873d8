/* aim_compare: several SGD seeds on the tau grid -> mean and standard
 * error per observable, and the agreement of an ODE trajectory with
 * them (theory/model.md sec. 9). */
#ifndef AIM_COMPARE_H
#define AIM_COMPARE_H

#include "config.h"
#include "model.h"
#include "overlaps.h"
#include "sgd.h"
#include "words.h"

/* Runs cfg->seeds seeds of online SGD at dimension d on the grid tau
 * (points entries) and stores every observable:
 * obs[(s * points + i) * AIM_OBS_COUNT + k]. Each is measured on the
 * seed: the order parameters from its matrices, the risk on its
 * cfg->holdout held-out samples (validate/holdout.h). A seed that blows
 * up has NaN from the blow-up on, and reached[s] is the number of points
 * it reached. Returns 0, or -1 on failure (message on stderr). */
int aim_compare_run_sgd(const aim_config *cfg, int d, const double *tau,
                        int points, double *obs, int *reached);

/* Per-seed quantities of the SGD files beside the observables the ODE
 * shares: the Gaussian risk formula on the seed's measured order
 * parameters (not a measurement of the risk: its gap to the measured
 * risk is the finite-d non-Gaussian effect), and the standard error of
 * the seed's held-out risk over its samples. */
enum {
    AIM_SGD_RISK_GAUSS = 0,
    AIM_SGD_RISK_HOLDOUT_SE,
    AIM_SGD_EXTRA_COUNT
};

/* Their column names: "risk_gauss", "risk_holdout_se". */
extern const char *const aim_sgd_extra_names[AIM_SGD_EXTRA_COUNT];

/* Moments Tr(w)/d of every word of ws of length <= max_len at the
 * current state of sgd, from the dense matrices of its letters (S or K
 * the student, k its transpose, T the teacher, t its transpose, A = U U^T,
 * B = V V^T). Returns 0, or -1 (out of memory, or a letter this student
 * does not have). */
int aim_compare_measure_words(const aim_sgd *sgd, const aim_wordset *ws, int max_len,
                              double *moments);

/* The letters of a tied ({"ST", "ST"}) or untied (aim_untied_alphabet)
 * student's moment hierarchy. */
void aim_compare_alphabet(const aim_config *cfg, aim_alphabet *ab);

/* The start of cfg's tied or untied hierarchy (order cfg->order) measured
 * on SGD seed cfg->seed at dimension d: aim_compare_seed_moments of its
 * alphabet up to length cfg->order + 1. NULL with a message on stderr. */
double *aim_compare_seed_start(const aim_config *cfg, int d);

/* The start of cfg's student measured on the initial matrices of SGD seed
 * `seed` at dimension d, as the plain value the ODE layer consumes: a
 * direct student's order parameters, a hierarchy's moments. Its storage
 * is malloc'ed; free it with aim_compare_release_start. Returns 0, or -1
 * with the reason in err (size n). The aim_start_source of sim/recovery.h
 * takes these two functions. */
int aim_compare_measure_start(const aim_config *cfg, int d, uint64_t seed,
                              aim_measured_start *start, char *err, size_t n);
void aim_compare_release_start(aim_measured_start *start);

/* Moments Tr(w)/d of every word of the alphabet ab (tied {"ST", "ST"},
 * untied aim_untied_alphabet) of length 0..max_len, measured from the
 * initial matrices of SGD seed cfg->seed at dimension d (aim_wordset
 * order): the start of a hierarchy compared with that one seed. Returns
 * a malloc'ed array, or NULL with a message on stderr. */
double *aim_compare_seed_moments(const aim_config *cfg, int d, const aim_alphabet *ab,
                                 int max_len);

/* Moments of a tied or untied student measured with the observables:
 * Tr(w)/d of the words words[0..count-1] (indices into ws, whose
 * alphabet is the hierarchy's), values[(s * points + i) * count + j];
 * NaN past a blow-up. */
typedef struct {
    const aim_wordset *ws;
    int count;
    const int *words;
    double *values;
} aim_sgd_moments;

/* Told after each grid point a seed reaches: done of total points, the
 * seed's steps so far. For a progress display: nothing measured passes
 * through it. */
typedef struct {
    void (*point)(void *ctx, int done, int total, long steps);
    void *ctx;
} aim_compare_progress;

/* aim_compare_run_sgd that also stores the per-seed extras,
 * extra[(s * points + i) * AIM_SGD_EXTRA_COUNT + k] (NaN past a
 * blow-up), and measures moments; extra, mom and progress may be NULL. */
int aim_compare_run_sgd_moments(const aim_config *cfg, int d, const double *tau,
                                int points, double *obs, double *extra, int *reached,
                                aim_sgd_moments *mom, const aim_compare_progress *progress);

/* Checkpoints inside a seed (aim_compare_run_sgd_checkpointed). resume:
 * called once per seed s, after its aim_sgd and held-out samples are
 * made from its seed and before its first grid point; it may restore an
 * earlier state of sgd (aim_sgd_restore) with the seed's rows 0..i-1 of
 * obs, extra and mom->values, and returns the grid point i to continue
 * from (0: the start), or -1 (said). save: called after grid point i of
 * seed s is measured (rows 0..i filled); it may keep the state; returns
 * 0 or -1 (said). Both are called from the thread of the run. */
typedef struct {
    int (*resume)(void *ctx, int s, aim_sgd *sgd);
    int (*save)(void *ctx, int s, int i, const aim_sgd *sgd);
    void *ctx;
} aim_sgd_checkpoints;

/* The bytes one SGD seed of cfg at d takes at its peak in
 * aim_compare_run_sgd_checkpointed (aim_sgd_bytes, the held-out samples,
 * the teacher's factors while it is drawn, or the moments of words up to
 * moment_len letters, 0: none, and a checkpoint being written): what a
 * worker needs, from the configuration alone. */
double aim_compare_seed_bytes(const aim_config *cfg, int d, int moment_len);

/* aim_compare_run_sgd_moments with checkpoints (ck not NULL). */
int aim_compare_run_sgd_checkpointed(const aim_config *cfg, int d, const double *tau,
                                     int points, double *obs, double *extra, int *reached,
                                     aim_sgd_moments *mom, const aim_sgd_checkpoints *ck,
                                     const aim_compare_progress *progress);

/* Mean and standard error over the seeds that reached each point. */
void aim_compare_stats(int seeds, int points, const double *obs,
                       double *mean, double *stderr_);
/* The same for rows of any width (obs[(s * points + i) * width + k]). */
void aim_compare_stats_n(int seeds, int points, int width, const double *obs,
                         double *mean, double *stderr_);

typedef struct {
    double max_abs;  /* largest |ode - mean| over the grid */
    double tau_abs;  /* where it occurs */
    double max_z;    /* largest |ode - mean| / stderr (stderr > 0) */
    double tau_z;
} aim_gap;

/* The gap of one quantity: ode[i * ode_stride] against mean[i * stride]
 * and stderr_[i * stride] over the points where the mean is defined; an
 * ODE value that is NaN there (the ODE stopped) is an infinite gap. */
aim_gap aim_compare_gap(int points, const double *tau, const double *ode, size_t ode_stride,
                        const double *mean, const double *stderr_, size_t stride);

/* Per-observable gaps between an ODE trajectory (points x OBS) and the
 * SGD mean and standard error. */
void aim_compare_gaps(int points, const double *tau, const double *ode,
                      const double *mean, const double *stderr_,
                      aim_gap gaps[AIM_OBS_COUNT]);

/* What a gap says (theory/model.md sec. 9), as one word for a table:
 *   "exact"        no gap at all;
 *   "no_data"      nothing compared (no SGD mean, or no standard error);
 *   "ode_stopped"  the ODE stopped where SGD went on;
 *   "within_3se"   the largest z-score over the grid is at most 3: the gap
 *                  is not told apart from the seeds' scatter;
 *   "1/d", "1/sqrt_d", "not_falling"
 *                  the gap stands out (z > 3) and so did the previous d's
 *                  (prev, at d_prev < d): the exponent a of d^-a that takes
 *                  the one to the other, a = ln(ratio) / ln(d_prev / d), is
 *                  read as 1 (a >= 3/4), 1/2 (1/4 <= a < 3/4) or 0;
 *   "above_3se"    the gap stands out and there is no previous d whose gap
 *                  does (rerun at d/2 or 2d to read its law).
 * prev may be NULL. */
const char *aim_compare_verdict(const aim_gap *g, const aim_gap *prev, int d_prev, int d);

#endif
