/* aim_normal: the standard normal quantile of many probabilities at once.
 *
 * Written here rather than called from GSL point by point because the
 * quasi-random point sets need millions of quantiles per run:
 * gsl_cdf_ugaussian_Pinv, one function call and two rational functions
 * evaluated through a loop over coefficient arrays per number, took 16 ns
 * a number, about a tenth of the T = 4 softmax example's run. The same
 * algorithm over blocks of numbers lets the compiler use vector
 * instructions for the common central region; the numbers are GSL's, bit
 * for bit. */
#ifndef AIM_NORMAL_H
#define AIM_NORMAL_H

#include <stddef.h>

/* p[i] <- Phi^-1(p[i]) for i < n, in place: gsl_cdf_ugaussian_Pinv(p[i])
 * exactly (-inf at 0, +inf at 1). Probabilities outside [0, 1] or NaN
 * are the caller's to avoid. */
void aim_normal_quantiles(double *p, size_t n);

#endif
