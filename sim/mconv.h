/* aim_mconv: how successive truncation orders converge in M at one grid
 * point, and the error of the highest order that this allows one to state
 * (theory/matrix.md sec. 6). */
#ifndef AIM_MCONV_H
#define AIM_MCONV_H

typedef enum {
    AIM_MCONV_RESOLUTION,  /* the last step is at the runs' numerical resolution */
    AIM_MCONV_TWO_ORDERS,  /* one step only: the estimate assumes alternation */
    AIM_MCONV_ALTERNATING, /* steps alternate in sign and shrink: the limit lies
                              between the last two orders */
    AIM_MCONV_MONOTONE,    /* steps of one sign that shrink: a geometric tail */
    AIM_MCONV_STALLED      /* a resolved last step no smaller than the one
                              two orders before (one before, with two steps):
                              no bound on the error */
} aim_mconv_kind;

/* steps[0 .. count - 1] (count >= 1): the differences x_k - x_(k-1)
 * between consecutive orders, the highest order's last, in the units of
 * the estimate (overlap absolute, risk relative to the highest order's);
 * resolution: the largest step that the runs' numerical errors could make
 * by themselves (> 0). *estimate: the error estimate of the highest order
 * (for AIM_MCONV_STALLED its last step, a lower bound, not a bound). NaN
 * steps (a lower order that had stopped) give NaN and
 * AIM_MCONV_RESOLUTION. */
aim_mconv_kind aim_mconv_estimate(const double *steps, int count, double resolution,
                                  double *estimate);

#endif
