/* aim_mlimit: the high-dimensional limit of online SGD simulated with
 * matrices (theory/matrix.md). The student's factors (direct S, tied W,
 * untied U and V) and the teacher are D x D (D x rho D) matrices that move
 * by the Euler-Maruyama steps of the matrix SDE whose moment equations are
 * the whole, untruncated hierarchy:
 *     drift  -Gbar applied as the student's gradient, with
 *            Gbar = a_S S + b_S S^T + a_T S* + b_T S*^T,
 *     noise  sqrt(eta h) Z, Z = (c1 X + c2 X^T)/sqrt D, X i.i.d. N(0, 1),
 *            with c1^2 + c2^2 = K_Omega and 2 c1 c2 = K_Psi,
 * the kernels a_S .. K_Psi evaluated by the expectation engine at the
 * order parameters of the current matrices. Every moment is that of real
 * matrices (no closure, nothing to leave), and the moments converge to the
 * limit hierarchy's as D grows (error O(1/D)) and h shrinks (O(h)).
 * Raw centring (direct and untied): the stiff system at the d of the runs,
 * the mean sqrt(d) Tr S / D moving on the fast clock, lambda = sqrt(d) E_C
 * added to Gbar on the diagonal. */
#ifndef AIM_MLIMIT_H
#define AIM_MLIMIT_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "overlaps.h"
#include "words.h"

typedef struct aim_mlimit aim_mlimit;

/* The process at dimension D started from the initial matrices of seed
 * (src/students/draw.h: the very matrices SGD seed `seed` starts from at d = D;
 * in raw centring the teacher's mean shift is that of dimension d). d:
 * raw centring, the dimension of the runs (>= 1), ignored when centred.
 * NULL with the reason in err (size n). */
aim_mlimit *aim_mlimit_create(const aim_config *cfg, int D, double d, uint64_t seed,
                              char *err, size_t n);
void aim_mlimit_free(aim_mlimit *m);

/* The bytes one process of cfg at dimension D takes at its peak (its D x
 * D matrices, the student's factors, a trial step's copy, the letters of
 * its moments), from the configuration alone; 0 for a student it has no
 * process for. A double: no overflow at any size. */
double aim_mlimit_bytes(const aim_config *cfg, int D);

/* Advances by span in tau: equal steps no longer than hmax (raw
 * centring: also no longer than 0.2 over the mean's relaxation rate).
 * Returns 0; 1 on blow-up (Omega(S,S) or the mean not finite, or Omega
 * above cfg->blowup: the matrices are then those of the last step, and
 * aim_mlimit_error says where); -1 when the engine fails. */
int aim_mlimit_advance(aim_mlimit *m, double span, double hmax);

/* Order parameters of the current matrices. */
void aim_mlimit_overlaps(const aim_mlimit *m, aim_overlaps *q);

/* Every observable at the current matrices (the risk by the engine, as
 * the limit ODE computes it). Returns 0 or -1. */
int aim_mlimit_observables(aim_mlimit *m, double obs[AIM_OBS_COUNT]);

/* Moments Tr(w)/D of every word of ws up to length max_len (the
 * alphabet of the student's hierarchy: tied {S, T}, untied A, B, K, k,
 * T, t). Returns 0 or -1 (out of memory, or a letter the student lacks). */
int aim_mlimit_words(aim_mlimit *m, const aim_wordset *ws, int max_len,
                     double *moments);

/* The expected rate of change d m(w)/d tau of every word of ws up to
 * max_len at the current matrices, from `pairs` antithetic pairs of one
 * step (Z and -Z: the noise's linear part cancels exactly, its quadratic
 * part, the hierarchy's second-order terms, remains), for each of the nh
 * step sizes h[j] with the same noise draws (so that the rates at two
 * steps differ by the O(h) bias alone): rate[j * count + i], count =
 * aim_wordset_count(ws); words longer than max_len are not touched. The
 * state is left as it was. rate_se (may be NULL): the standard errors over
 * the pairs, same layout (NaN for one pair). Returns 0, 1 (blow-up) or
 * -1 (also for matrix.scheme = richardson: the drift is that of the Euler
 * step, of which the extrapolated scheme is made). The short-horizon drift
 * check of the process against the hierarchy (tests/test_mlimit.c). */
int aim_mlimit_drift(aim_mlimit *m, const double *h, int nh, int pairs,
                     const aim_wordset *ws, int max_len, double *rate, double *rate_se);

double aim_mlimit_tau(const aim_mlimit *m);
/* The steps taken so far (richardson: the steps of h, each made of one
 * step of h and two of h/2). */
long aim_mlimit_steps(const aim_mlimit *m);
/* The first tau at which |teacher overlap| reached cfg's
 * output.recovery_threshold, checked at every step and interpolated within
 * it; NAN while not reached. */
double aim_mlimit_recovery_time(const aim_mlimit *m);
const char *aim_mlimit_error(const aim_mlimit *m);

#endif
