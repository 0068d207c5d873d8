#include "normal.h"

#include <math.h>

#include "outmap.h" /* AIM_VECTOR_CLONES */

/* Wichura's algorithm AS 241 (PPND16, Applied Statistics 37, 1988): a
 * rational function of degree 7/7 in three regions of the probability,
 * the one GSL's gsl_cdf_ugaussian_Pinv evaluates. Each rational function
 * is evaluated as GSL does (numerator and denominator by Horner's rule
 * from the highest coefficient, then one division), and the program is
 * compiled without contraction into fused multiply-adds (-std=c17), so
 * every quantile is GSL's bit for bit (tests/test_normal.c). The last
 * central denominator coefficient is GSL's, 5226.495278852854561, not the
 * published 5226.495278852545925 (the two differ in the 12th digit,
 * moving a quantile by at most a few parts in 1e14): the point sets stay
 * those GSL's quantile made before. */
static const double central_num[8] = {
    3.387132872796366608,   133.14166789178437745,  1971.5909503065514427,
    13731.693765509461125,  45921.953931549871457,  67265.770927008700853,
    33430.575583588128105,  2509.0809287301226727};
static const double central_den[8] = {
    1.0,                    42.313330701600911252,  687.1870074920579083,
    5394.1960214247511077,  21213.794301586595867,  39307.89580009271061,
    28729.085735721942674,  5226.495278852854561};
static const double middle_num[8] = {
    1.42343711074968357734,  4.6303378461565452959,   5.7694972214606914055,
    3.64784832476320460504,  1.27045825245236838258,  0.24178072517745061177,
    0.0227238449892691845833, 7.7454501427834140764e-4};
static const double middle_den[8] = {
    1.0,                     2.05319162663775882187,  1.6763848301838038494,
    0.68976733498510000455,  0.14810397642748007459,  0.0151986665636164571966,
    5.475938084995344946e-4, 1.05075007164441684324e-9};
static const double far_num[8] = {
    6.6579046435011037772,   5.4637849111641143699,   1.7848265399172913358,
    0.29656057182850489123,  0.026532189526576123093, 0.0012426609473880784386,
    2.71155556874348757815e-5, 2.01033439929228813265e-7};
static const double far_den[8] = {
    1.0,                     0.59983220655588793769,  0.13692988092273580531,
    0.0148753612908506148525, 7.868691311456132591e-4, 1.8463183175100546818e-5,
    1.4215117583164458887e-7, 2.04426310338993978564e-15};

static inline double rational(const double num[8], const double den[8], double x)
{
    double u = num[7], v = den[7];
    for (int i = 6; i >= 0; i--) {
        u = x * u + num[i];
        v = x * v + den[i];
    }
    return u / v;
}

/* The tails, |p - 1/2| > 0.425 (a logarithm and a square root each). */
static double tail_quantile(double p)
{
    if (p <= 0.0)
        return -INFINITY;
    if (p >= 1.0)
        return INFINITY;
    const double r = sqrt(-log(p < 0.5 ? p : 1.0 - p));
    const double x = r <= 5.0 ? rational(middle_num, middle_den, r - 1.6)
                              : rational(far_num, far_den, r - 5.0);
    return p < 0.5 ? -x : x;
}

/* Blocks of BLOCK numbers: the central rule over a whole block in one
 * loop without branches (vector instructions: 85 % of uniform
 * probabilities fall there), then the block's tails one by one. */
enum { BLOCK = 256 };

AIM_VECTOR_CLONES
void aim_normal_quantiles(double *p, size_t n)
{
    for (size_t b0 = 0; b0 < n; b0 += BLOCK) {
        const size_t nb = n - b0 < BLOCK ? n - b0 : BLOCK;
        double *x = p + b0, prob[BLOCK];
        for (size_t i = 0; i < nb; i++) {
            prob[i] = x[i];
            const double q = x[i] - 0.5;
            x[i] = q * rational(central_num, central_den, 0.180625 - q * q);
        }
        for (size_t i = 0; i < nb; i++)
            if (!(fabs(prob[i] - 0.5) <= 0.425))
                x[i] = tail_quantile(prob[i]);
    }
}
