/* aim_untied: the ODE of untied attention (S = U V^T, U and V d x rho d)
 * in the slow time tau = n eta / d^2: the moment hierarchy in the letters
 * A = U U^T, B = V V^T, K = U V^T, k = V U^T and the teacher T (and its
 * transpose t unless S* is symmetric), truncated at order M =
 * cfg->order with the closure cfg->closure (theory/untied.md).
 *
 * State: the moments m(w) = Tr(w)/d of every word of length 1..M with a
 * student letter, shortest first. The slot of the word K carries
 *   - centred indices: m(K) = Tr S/d;
 *   - raw, stiff: the index mean m = Tr S/sqrt d, integrated with
 *     its fast rate (of order d) at that finite d;
 *   - raw, adiabatic: m(K), which is 0 in the limit; the mean sits
 *     on the critical manifold dR/dm = 0 (a GSL root, tracked from the
 *     last one), and lambda, the identity part of G, is what keeps it
 *     there. */
#ifndef AIM_UNTIED_H
#define AIM_UNTIED_H

#include <stddef.h>

#include "config.h"
#include "gauss.h"
#include "hierarchy.h"
#include "overlaps.h"

typedef struct aim_untied aim_untied;

/* d: the dimension of the runs, needed in raw centring (> 0): the stiff
 * system (cfg->mean_mode) is integrated at that finite d (mean equation,
 * teacher-mean terms), the adiabatic one in the limit; in both the start
 * mean is 0, or the typical size sqrt(rho v v_V/d) of Tr S/sqrt d when 0
 * is an unstable critical point of the fast flow. Centred
 * indices ignore d (limit). NULL with a message in err (size n) on
 * failure. The start is the exact large-d one of independent Gaussian
 * U, V, S*. */
aim_untied *aim_untied_create(const aim_config *cfg, double d, aim_gauss_rule rule,
                              char *err, size_t n);
void aim_untied_free(aim_untied *m);
/* The expectation engine (its point count and kernel error estimate). */
aim_gauss *aim_untied_gauss(aim_untied *m);

const aim_hierarchy *aim_untied_hierarchy(const aim_untied *m);
int aim_untied_size(const aim_untied *m);
const char *aim_untied_state_name(void *m, int i);
/* "m(w)" for state component i, also for the slot of K, which carries
 * the mean in the stiff raw system (output files write m(K) = mean /
 * sqrt d in raw centring, comparable with SGD's m(K)); the index of that
 * slot. */
const char *aim_untied_moment_name(void *m, int i);
int aim_untied_k_slot(const aim_untied *m);
/* Leading state components of length <= 2 (watched for blow-up). */
int aim_untied_order_parameters(const aim_untied *m);

/* Replaces the start by measured moments (e.g. of an SGD seed; same
 * indexing) and, in raw centring, the student mean measured with them. */
void aim_untied_set_start(aim_untied *m, const double *moments, double mean);
void aim_untied_initial(const aim_untied *m, double *y);
/* The start's moments of every word up to M + 1 (the exact large-d ones,
 * or those set by aim_untied_set_start; indexed like the word set). */
const double *aim_untied_start_moments(const aim_untied *m);
/* The student mean at the start (raw centring; 0 when centred). */
double aim_untied_start_mean(const aim_untied *m);

/* Balance condition of the paper's Corollary 4: |tA_k(0) - tB_k(0)| >=
 * cfg->balance for k = 1..M, tA_k = m(A^k), tB_k = m(B^k). Returns the
 * number of violated k, listed with their values in msg (size n). */
int aim_untied_balance(const aim_untied *m, char *msg, size_t n);

/* d y/d tau split into first-order (with the lambda terms), noise and
 * decay parts (any may be NULL). Returns 0 or -1 (aim_untied_error). */
int aim_untied_terms(aim_untied *m, const double *y, double *gradient, double *noise,
                     double *decay);
int aim_untied_rhs(aim_untied *m, const double *y, double *dy);
/* The same from the moments of every word up to length M + 1 and the
 * student mean (raw; ignored when centred), no closure involved: the
 * drift tests evaluate the rules at measured moments. In the adiabatic
 * mode the mean is not used: lambda is the value that holds m(K). */
int aim_untied_terms_at(aim_untied *m, const double *moments, double mean,
                        double *gradient, double *noise, double *decay);
/* aim_untied_terms_at with the part of the first-order terms that comes
 * from the identity part of a raw G, lambda c m(Q rest P) (theory/untied.md
 * sec. 2), also in mean_part (raw centring; 0 when centred; may be NULL).
 * It is included in gradient. */
int aim_untied_terms_split_at(aim_untied *m, const double *moments, double mean,
                              double *gradient, double *mean_part, double *noise,
                              double *decay);
/* Moments of every word (lengths 0..M + 1) at state y, closure applied.
 * -1 (the message in the error) where the closure fails
 * (aim_truncation_close): the long words are then not the closure's. The
 * right-hand side and the observables fail there; the margins and the
 * overlap, which CVODE's root finding needs as plain values, go on with
 * the closure's prior (the failed right-hand side stops the run). */
int aim_untied_moments(aim_untied *m, const double *y, double *moments);
/* The student's index mean at y: the state (stiff), the critical point
 * m*(q) (adiabatic), 0 (centred). Returns 0 or -1. */
int aim_untied_mean(aim_untied *m, const double *y, double *mean);
/* The fast clock of the adiabatic limit: dm/dt = -(m(A) + m(B))
 * E[sum e_ab C_ab] at the start moments. Returns 0 or -1. */
int aim_untied_fast_rate(aim_untied *m, double mean, double *rate);
/* Starts the root tracking of the adiabatic mean at the critical point
 * reached from mean by the fast flow at the start moments. Returns 0 or
 * -1. */
int aim_untied_settle(aim_untied *m, double mean);
/* The validity margins at y (theory/stops.md sec. 1): continuous, >= 0
 * while the low moments can be those of real U, V (m(A^k), m(B^k) of
 * positive semi-definite matrices, k <= 2) and the teacher overlap is
 * within [-1, 1]; aim_untied_margin_count entries, each named by
 * aim_untied_margin_text. aim_untied_check: 0 when all are >= 0, else -1
 * with the reason. */
int aim_untied_margin_count(const aim_untied *m);
void aim_untied_margins(aim_untied *m, const double *y, double *g);
const char *aim_untied_margin_text(const aim_untied *m, int k);
int aim_untied_check(aim_untied *m, const double *y);
/* The teacher overlap at y: a function of the moments alone (the mean
 * enters the indices, not the traceless parts), so the same along the
 * adiabatic composite as on the slow state. */
double aim_untied_overlap(aim_untied *m, const double *y);
/* 1 when the last right-hand side failed because its moments were not
 * those of any pair of matrices (the order parameters not a covariance):
 * a truncation that left the valid moments; AIM_UNTIED_RUNAWAY when the
 * adiabatic mean found no critical point (the risk decreases without
 * bound in the mean); 0 otherwise. */
#define AIM_UNTIED_RUNAWAY 2
int aim_untied_left_valid(const aim_untied *m);
/* Observables at y; with a given mean (not NAN) instead of
 * aim_untied_mean's. Returns 0 or -1. */
int aim_untied_observables(aim_untied *m, const double *y, double obs[AIM_OBS_COUNT]);
int aim_untied_observables_with_mean(aim_untied *m, const double *y, double mean,
                                     double obs[AIM_OBS_COUNT]);
const char *aim_untied_error(const aim_untied *m);
/* What one evaluation leaves for the next: the adiabatic root's starting
 * guess and the kernel cache. Kept across a side computation (a path's
 * observables while CVODE is between grid points, sim/trajectory_run.c), the
 * right-hand sides after it are those of a run without it, bit for bit. */
typedef struct {
    double root, cached_root;
    int cached;
    aim_overlaps cached_q;
    double cached_k[AIM_KERNEL_COUNT];
} aim_untied_memo;
void aim_untied_memo_save(const aim_untied *m, aim_untied_memo *memo);
void aim_untied_memo_restore(aim_untied *m, const aim_untied_memo *memo);

#endif
