#include "mconv.h"

#include <math.h>

aim_mconv_kind aim_mconv_estimate(const double *steps, int count, double resolution,
                                  double *estimate)
{
    for (int k = 0; k < count; k++)
        if (isnan(steps[k])) {
            *estimate = NAN;
            return AIM_MCONV_RESOLUTION;
        }
    const double last = fabs(steps[count - 1]);
    *estimate = last;
    if (last <= resolution)
        return AIM_MCONV_RESOLUTION;
    if (count == 1)
        return AIM_MCONV_TWO_ORDERS;
    /* the contraction per order: over two orders where three steps are
     * known, since odd and even orders err by different amounts (a step
     * |x_M - x_(M-1)| = e_M + e_(M-1) about an alternated limit shrinks
     * two orders on when each parity's error does, not always one on) */
    const double earlier = fabs(steps[count == 2 ? 0 : count - 3]);
    const double ratio = last / fmax(earlier, resolution);
    if (ratio >= 1.0)
        return AIM_MCONV_STALLED;
    const double rate = count == 2 ? ratio : sqrt(ratio);
    if (steps[count - 1] * steps[count - 2] < 0.0)
        return AIM_MCONV_ALTERNATING;
    /* x_inf - x_M = d_M (r + r^2 + ...) = d_M r / (1 - r); never below
     * the last step, which bounds the error of an alternating sequence
     * and is all that the rate's point estimate can be trusted to */
    *estimate = last * fmax(1.0, rate / (1.0 - rate));
    return AIM_MCONV_MONOTONE;
}
