/* The Gaussian expectation engine's closed forms of the relu and erf
 * output maps (theory/direct.md sec. 3.6): an entry's expectations over
 * its 2-dimensional law and a pair's E[e_p e_r] over its 4-dimensional
 * one, in place of the Gauss-Hermite rule of gauss_elementwise.c. relu:
 * orthant moments (orthant.c); erf: Gaussian tilts of the law by
 * exp(-u^2), then E[erf] and E[erf erf] by the bivariate normal
 * distribution. */
#include <math.h>
#include <string.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_sf_erf.h>

#include "gauss_internal.h"
#include "orthant.h"

int aim_gauss_closed_map(const aim_config *cfg)
{
    return cfg->output == AIM_ELEMENTWISE &&
           (cfg->activation == AIM_ACT_RELU || cfg->activation == AIM_ACT_ERF);
}

/* ---- relu ------------------------------------------------------------ */

/* E[W_i W_j 1{W_k > 0, k in mask}] of the law (mu, V) of n coordinates */
static double moment(const aim_gauss *g, int n, const double *mu, const double *V,
                     unsigned mask, int i, int j)
{
    return aim_orthant_moment(g->orthant, n, mu, V, mask, i, j);
}

/* An entry of law X = mu_0 + F_00 z_0, Y = mu_1 + F_10 z_0 + F_11 z_1
 * (student X, teacher Y): e = 1{X > 0} (X - Y^+). */
static void relu_entry(const aim_gauss *g, const double mu[2], const double F[4],
                       double acc[SUMS])
{
    const double V[4] = {F[0] * F[0], F[0] * F[2], F[0] * F[2], F[2] * F[2] + F[3] * F[3]};
    enum { X = 0, Y = 1 };
    const unsigned x = 1u << X, y = 1u << Y, both = x | y;
    const double px = moment(g, 2, mu, V, x, -1, -1);          /* P(X > 0) */
    const double pq = moment(g, 2, mu, V, both, -1, -1);       /* P(X > 0, Y > 0) */
    const double ex = moment(g, 2, mu, V, x, X, -1);           /* E[X^+] */
    const double exx = moment(g, 2, mu, V, x, X, X);           /* E[(X^+)^2] */
    const double eyy = moment(g, 2, mu, V, y, Y, Y);           /* E[(Y^+)^2] */
    const double eyq = moment(g, 2, mu, V, both, Y, -1);       /* E[Y 1_Q] */
    const double exyq = moment(g, 2, mu, V, both, X, Y);       /* E[X Y 1_Q] */
    const double eyyq = moment(g, 2, mu, V, both, Y, Y);       /* E[Y^2 1_Q] */
    acc[SUM_E] = ex - eyq;
    acc[SUM_EE] = exx - 2.0 * exyq + eyyq;
    acc[SUM_DD] = px;
    acc[SUM_RR] = exx + eyy - 2.0 * exyq;
    /* E[e z] = F^T E[grad e]: d/dX e = 1{X > 0} - delta(X) Y^+, d/dY e =
     * -1{X > 0, Y > 0}; F_00 times X's density at 0 is phi(mu_0 / F_00),
     * and Y given X = 0 has mean mu_1 - F_10 mu_0 / F_00, variance F_11^2 */
    double kink = 0.0;
    if (F[0] > 0.0) {
        const double a = mu[0] / F[0], m = mu[1] - F[2] * a, v = F[3] * F[3];
        kink = exp(-0.5 * a * a) / sqrt(2.0 * M_PI) * moment(g, 1, &m, &v, 1u, 0, -1);
    }
    acc[SUM_EZ0] = F[0] * px - kink - F[2] * pq;
    acc[SUM_EZ1] = -F[3] * pq;
}

/* E[e_p e_r] for the law of (X_p, Y_p, X_r, Y_r): e_p e_r = X_p X_r 1{X_p,
 * X_r} - X_p Y_r 1{X_p, X_r, Y_r} - Y_p X_r 1{X_p, Y_p, X_r} + Y_p Y_r 1{all},
 * 1{...} the indicator that those are positive. */
static double relu_pair(const aim_gauss *g, const double mu[4], const double V[16])
{
    return moment(g, 4, mu, V, 0x5u, 0, 2) - moment(g, 4, mu, V, 0xdu, 0, 3) -
           moment(g, 4, mu, V, 0x7u, 1, 2) + moment(g, 4, mu, V, 0xfu, 1, 3);
}

/* ---- erf ------------------------------------------------------------- */

/* The law (mu, V) of n <= 4 coordinates tilted by exp(-sum_k d_k u_k^2):
 * E[exp(-sum d_k u_k^2) f(u)] = z E'[f(u)] with u ~ N(mu', V') under E'
 * (section 3.6): with G = diag(sqrt d) and M = I/2 + G V G, V' = V - V G
 * M^-1 G V, mu' = mu - V G M^-1 G mu and z = det(2 M)^-1/2 exp(-(G mu)^T
 * M^-1 (G mu) / 2); returns z. M >= I/2, so its Cholesky factor exists. */
static double tilt(int n, const double *mu, const double *V, const double *d, double *mu_t,
                   double *V_t)
{
    int act[AIM_ORTHANT_MAX] = {0}, a = 0;
    for (int k = 0; k < n; k++)
        if (d[k] > 0.0)
            act[a++] = k;
    double L[16] = {0}, GV[4][AIM_ORTHANT_MAX], Gm[4], det = 1.0;
    for (int x = 0; x < a; x++) {
        const double gx = sqrt(d[act[x]]);
        Gm[x] = gx * mu[act[x]];
        for (int k = 0; k < n; k++)
            GV[x][k] = gx * V[act[x] * n + k];
    }
    /* M = L L^T */
    for (int x = 0; x < a; x++)
        for (int y = 0; y <= x; y++) {
            double s = (x == y ? 0.5 : 0.0) + sqrt(d[act[y]]) * GV[x][act[y]];
            for (int k = 0; k < y; k++)
                s -= L[x * 4 + k] * L[y * 4 + k];
            if (x == y) {
                L[x * 4 + x] = sqrt(s);
                det *= 2.0 * s;
            } else {
                L[x * 4 + y] = s / L[y * 4 + y];
            }
        }
    /* W = L^-1 G V (a x n) and w = L^-1 G mu, by forward substitution:
     * V G M^-1 G V = W^T W, V G M^-1 G mu = W^T w */
    double W[4][AIM_ORTHANT_MAX], w[4];
    for (int x = 0; x < a; x++) {
        w[x] = Gm[x];
        for (int k = 0; k < n; k++)
            W[x][k] = GV[x][k];
        for (int y = 0; y < x; y++) {
            w[x] -= L[x * 4 + y] * w[y];
            for (int k = 0; k < n; k++)
                W[x][k] -= L[x * 4 + y] * W[y][k];
        }
        w[x] /= L[x * 4 + x];
        for (int k = 0; k < n; k++)
            W[x][k] /= L[x * 4 + x];
    }
    double quad = 0.0;
    for (int x = 0; x < a; x++)
        quad += w[x] * w[x];
    for (int k = 0; k < n; k++) {
        mu_t[k] = mu[k];
        for (int x = 0; x < a; x++)
            mu_t[k] -= W[x][k] * w[x];
        for (int l = 0; l < n; l++) {
            V_t[k * n + l] = V[k * n + l];
            for (int x = 0; x < a; x++)
                V_t[k * n + l] -= W[x][k] * W[x][l];
        }
    }
    return exp(-0.5 * quad) / sqrt(det);
}

/* E[erf(u_k)] = erf(mu_k / sqrt(1 + 2 V_kk)) */
static double erf_mean(int n, const double *mu, const double *V, int k)
{
    return gsl_sf_erf(mu[k] / sqrt(1.0 + 2.0 * V[k * n + k]));
}

/* E[erf'(u_k)] = 2 / sqrt(pi) E[exp(-u_k^2)] */
static double erf_slope(int n, const double *mu, const double *V, int k)
{
    const double s = 1.0 + 2.0 * V[k * n + k];
    return M_2_SQRTPI * exp(-mu[k] * mu[k] / s) / sqrt(s);
}

/* E[erf(u_k) erf(u_l)] = 4 Phi_2(h_k, h_l; kappa) - 2 Phi(h_k) - 2 Phi(h_l)
 * + 1 with h = mu / sqrt(1/2 + V), kappa = V_kl / sqrt((1/2 + V_kk) (1/2
 * + V_ll)), a correlation strictly inside (-1, 1) */
static double erf_product(const aim_gauss *g, int n, const double *mu, const double *V, int k,
                          int l)
{
    const double sk = sqrt(0.5 + V[k * n + k]), sl = sqrt(0.5 + V[l * n + l]);
    const double hk = mu[k] / sk, hl = mu[l] / sl;
    return 4.0 * aim_orthant_bvn(g->orthant, hk, hl, V[k * n + l] / (sk * sl)) -
           2.0 * gsl_cdf_ugaussian_P(hk) - 2.0 * gsl_cdf_ugaussian_P(hl) + 1.0;
}

/* E[(erf u_k - erf u_l)(erf u_i - erf u_j)] */
static double erf_gap_product(const aim_gauss *g, int n, const double *mu, const double *V,
                              int k, int l, int i, int j)
{
    return erf_product(g, n, mu, V, k, i) - erf_product(g, n, mu, V, k, j) -
           erf_product(g, n, mu, V, l, i) + erf_product(g, n, mu, V, l, j);
}

/* An entry: e = (erf X - erf Y) erf'(X), erf'(x) = 2 exp(-x^2) / sqrt(pi) */
static void erf_entry(const aim_gauss *g, const double mu[2], const double F[4],
                      double acc[SUMS])
{
    const double V[4] = {F[0] * F[0], F[0] * F[2], F[0] * F[2], F[2] * F[2] + F[3] * F[3]};
    static const double d1[2] = {1.0, 0.0}, d2[2] = {2.0, 0.0}, d11[2] = {1.0, 1.0};
    double m1[2], V1[4], m2[2], V2[4], m11[2], V11[4];
    const double z1 = tilt(2, mu, V, d1, m1, V1); /* weight exp(-X^2) */
    const double z2 = tilt(2, mu, V, d2, m2, V2); /* exp(-2 X^2) */
    const double z11 = tilt(2, mu, V, d11, m11, V11); /* exp(-X^2 - Y^2) */
    const double c = M_2_SQRTPI, c2 = c * c;
    const double gap1 = erf_mean(2, m1, V1, 0) - erf_mean(2, m1, V1, 1);
    acc[SUM_E] = c * z1 * gap1;
    acc[SUM_DD] = c2 * z2;
    acc[SUM_EE] = c2 * z2 * erf_gap_product(g, 2, m2, V2, 0, 1, 0, 1);
    acc[SUM_RR] = erf_gap_product(g, 2, mu, V, 0, 1, 0, 1);
    /* E[grad e]: d/dX e = erf'(X)^2 - 2 X erf'(X) (erf X - erf Y), whose
     * second part is c z1 E'[X (erf X - erf Y)] by Stein's lemma under the
     * tilted law; d/dY e = -erf'(X) erf'(Y) */
    const double x_gap = m1[0] * gap1 + V1[0] * erf_slope(2, m1, V1, 0) -
                         V1[1] * erf_slope(2, m1, V1, 1);
    const double dx = c2 * z2 - 2.0 * c * z1 * x_gap, dy = -c2 * z11;
    acc[SUM_EZ0] = F[0] * dx + F[2] * dy;
    acc[SUM_EZ1] = F[3] * dy;
}

static double erf_pair(const aim_gauss *g, const double mu[4], const double V[16])
{
    static const double d[4] = {1.0, 0.0, 1.0, 0.0};
    double mt[4], Vt[16];
    const double z = tilt(4, mu, V, d, mt, Vt);
    return M_2_SQRTPI * M_2_SQRTPI * z * erf_gap_product(g, 4, mt, Vt, 0, 1, 2, 3);
}

/* ---- the rule --------------------------------------------------------- */

void aim_gauss_closed_entry(const aim_gauss *g, const double mu[2], const double F[4],
                            double acc[SUMS])
{
    memset(acc, 0, sizeof(double) * SUMS);
    if (g->activation == AIM_ACT_RELU)
        relu_entry(g, mu, F, acc);
    else
        erf_entry(g, mu, F, acc);
}

double aim_gauss_closed_pair(const aim_gauss *g, const double mu[4], const double V[16])
{
    return g->activation == AIM_ACT_RELU ? relu_pair(g, mu, V) : erf_pair(g, mu, V);
}
