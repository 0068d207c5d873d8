/* aim_fold: mirror-image runs folded onto one branch (output.fold).
 *
 * With an output map even in the index (sigma(-h) = sigma(h)) the loss
 * of S and of -S is the same for every sample, and the initial law of
 * the student is symmetric, so SGD seeds and matrix-process replicas
 * split between a branch and its mirror image; averaged as they are,
 * the quantities odd in S cancel. Folding mirrors every run whose final
 * student mean (output.fold = mean) or final teacher overlap (overlap)
 * is negative, S -> -S: the columns odd in S change sign, the even ones
 * are unchanged (theory/matrix.md sec. 3, theory/untied.md sec. 4). */
#ifndef AIM_FOLD_H
#define AIM_FOLD_H

#include "config.h"
#include "overlaps.h"

/* Whether observable k (an AIM_OBS_ index) is odd in S: the teacher
 * overlap, Omega(S, S*), Psi(S, S*), the trace and the mean. */
int aim_fold_obs_odd(int k);

/* Whether the moment of word w is odd in S: an odd number of student
 * letters (S; for untied students K = U V^T and k = V U^T, which change
 * sign with U, while A = U U^T and B = V V^T do not). */
int aim_fold_word_odd(const char *w);

/* The sign a run is folded with, from its observables at the last grid
 * point it reached (obs, AIM_OBS_COUNT values): -1 when cfg->fold asks
 * for folding and the folding observable there is negative, else +1
 * (no folding, a positive or zero value, or NaN). */
int aim_fold_sign(const aim_config *cfg, const double *obs);

/* The name of cfg->fold's observable, for the output's comments:
 * "student mean", "teacher overlap" (cfg->fold != AIM_FOLD_NONE). */
const char *aim_fold_what(const aim_config *cfg);

#endif
