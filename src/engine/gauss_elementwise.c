/* The Gaussian expectation engine's rule for elementwise output maps: per
 * entry, the expectations over its 2-dimensional law, and per pair of
 * entries E[e_p e_r] over their 4-dimensional one, by Gauss-Hermite
 * product rules, or in closed form (gauss_closed.c: relu, erf). */
#include <stdlib.h>

#include <gsl/gsl_integration.h>

#include "gauss_internal.h"

int aim_gauss_hermite_rule(int n, double **x, double **w)
{
    /* weight exp(-x^2/2): GSL's Hermite rule with a = 0, b = 1/2 */
    gsl_integration_fixed_workspace *ws =
        gsl_integration_fixed_alloc(gsl_integration_fixed_hermite, (size_t)n,
                                    0.0, 0.5, 0.0, 0.0);
    if (!ws)
        return -1;
    *x = malloc(sizeof(double) * (size_t)n);
    *w = malloc(sizeof(double) * (size_t)n);
    if (!*x || !*w) {
        gsl_integration_fixed_free(ws);
        return -1;
    }
    const double *nodes = gsl_integration_fixed_nodes(ws);
    const double *weights = gsl_integration_fixed_weights(ws);
    double total = 0.0;
    for (int i = 0; i < n; i++)
        total += weights[i];
    /* Exactly symmetric nodes and weights (GSL's come from an eigenvalue
     * solver, symmetric only to round-off), so that odd integrands
     * cancel exactly in aim_gauss_eval_elementwise: an invariant manifold of the
     * limit ODE then stays exactly invariant. */
    for (int i = 0; i < n; i++) {
        const int j = n - 1 - i;
        (*x)[i] = 0.5 * (nodes[i] - nodes[j]);
        (*w)[i] = 0.5 * (weights[i] + weights[j]) / total;
    }
    gsl_integration_fixed_free(ws);
    return 0;
}

int aim_gauss_polynomial_nodes(const aim_config *cfg)
{
    /* e_p e_q has degree 4D - 2 for a degree-D series; n nodes integrate
     * degree 2n - 1 exactly. */
    int n = 2 * cfg->hermite_degree;
    return n < 2 ? 2 : n;
}

/* Covariance of h_p(S_i) and h_q(S_j), p = (a, b), q = (c, d). */
static double index_cov(const aim_gauss *g, const aim_overlaps *q, int p, int i,
                        int r, int j)
{
    const int T = g->T;
    const int a = p / T, b = p % T, c = r / T, d = r % T;
    return g->C[a * T + c] * g->C[b * T + d] * q->omega[i][j] +
           g->C[a * T + d] * g->C[b * T + c] * q->psi[i][j];
}

/* ---- elementwise rule ------------------------------------------------ */

static double entry_error(const aim_gauss *g, double u, double ustar)
{
    return (aim_outmap_sigma(g->map, u) - aim_outmap_sigma(g->map, ustar)) *
           aim_outmap_dsigma(g->map, u);
}

/* The law of (h_p(S), h_p(S*), h_r(S), h_r(S*)) for two different entries
 * p, r: means mu, covariance V and lower factor F. Returns 0, or -1 when
 * its covariance is not positive semi-definite. */
static int pair_law(const aim_gauss *g, const aim_overlaps *q, int p, int r, double mu[4],
                    double V[16], double F[16])
{
    const int ent[4] = {p, p, r, r}, mat[4] = {0, 1, 0, 1};
    for (int x = 0; x < 4; x++) {
        mu[x] = g->C[ent[x]] * q->mean[mat[x]];
        for (int y = 0; y < 4; y++)
            V[x * 4 + y] = index_cov(g, q, ent[x], mat[x], ent[y], mat[y]);
    }
    return aim_gauss_chol_semidefinite(4, V, F);
}

/* E[e_p e_r] for two different entries: a Gauss-Hermite product rule over
 * the active coordinates of their law (pair_law), or the closed form.
 * Label noise is independent across entries and drops out. */
static int pair_moment(aim_gauss *g, const aim_overlaps *q, int p, int r,
                       double *out)
{
    double F[16], V[16], mu[4];
    if (pair_law(g, q, p, r, mu, V, F))
        return -1;
    if (g->orthant) {
        *out = aim_gauss_closed_pair(g, mu, V);
        return 0;
    }
    int active[4], na = 0;
    for (int x = 0; x < 4; x++)
        if (F[x * 4 + x] > 0.0)
            active[na++] = x;
    const int n = g->n4;
    long total = 1;
    for (int k = 0; k < na; k++)
        total *= n;
    double sum = 0.0;
    for (long idx = 0; idx < total; idx++) {
        double z[4] = {0, 0, 0, 0}, w = 1.0;
        long rest = idx;
        for (int k = 0; k < na; k++) {
            int node = (int)(rest % n);
            rest /= n;
            z[active[k]] = g->x4[node];
            w *= g->w4[node];
        }
        double h[4];
        for (int x = 0; x < 4; x++) {
            h[x] = mu[x];
            for (int y = 0; y <= x; y++)
                h[x] += F[x * 4 + y] * z[y];
        }
        sum += w * entry_error(g, h[0], h[1]) * entry_error(g, h[2], h[3]);
    }
    *out = sum;
    return 0;
}

/* The law of (h_p(S), h_p(S*)) of entry p: means mu and lower factor F.
 * Returns 0, or -1 when its covariance is not positive semi-definite. */
static int entry_law(const aim_gauss *g, const aim_overlaps *q, int p, double mu[2],
                     double F[4])
{
    double V[4];
    for (int x = 0; x < 2; x++) {
        mu[x] = g->C[p] * q->mean[x];
        for (int y = 0; y < 2; y++)
            V[x * 2 + y] = index_cov(g, q, p, x, p, y);
    }
    return aim_gauss_chol_semidefinite(2, V, F);
}

/* The entry rule's sums for an entry of law mu, F (entry_law); with
 * risk_only the last alone (SUM_RR), summed in the same order as with all
 * of them, so that the risk is the same number bit for bit. The node
 * pairs (x_i, -x_i) of z0 are summed first, so that integrands odd in z0
 * cancel exactly. */
static void entry_sums(const aim_gauss *g, const double mu[2], const double F[4],
                       int risk_only, double acc[SUMS])
{
    if (g->orthant) { /* the closed forms: all of them, at little cost */
        aim_gauss_closed_entry(g, mu, F, acc);
        return;
    }
    const int n = g->n2;
    for (int k = 0; k < SUMS; k++)
        acc[k] = 0.0;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < (n + 1) / 2; i++) {
            double pair[SUMS] = {0};
            for (int k = i; k <= n - 1 - i; k += (n - 1 - 2 * i > 0 ? n - 1 - 2 * i : 1)) {
                double w = g->w2[k] * g->w2[j], z0 = g->x2[k], z1 = g->x2[j];
                double u = mu[0] + F[0] * z0;
                double us = mu[1] + F[2] * z0 + F[3] * z1;
                double fu = aim_outmap_sigma(g->map, u);
                double fs = aim_outmap_sigma(g->map, us);
                pair[SUM_RR] += w * (fu - fs) * (fu - fs);
                if (risk_only)
                    continue;
                double du = aim_outmap_dsigma(g->map, u);
                double e = (fu - fs) * du;
                pair[SUM_E] += w * e;
                pair[SUM_EZ0] += w * e * z0;
                pair[SUM_EZ1] += w * e * z1;
                pair[SUM_EE] += w * e * e;
                pair[SUM_DD] += w * du * du;
            }
            for (int k = 0; k < SUMS; k++)
                acc[k] += pair[k];
        }
}

/* The weights of E[e_p e_r] in K_omega (*wo) and K_psi (*wp). */
static void pair_weights(const aim_gauss *g, int p, int r, double *wo, double *wp)
{
    const int T = g->T, a = p / T, b = p % T, c = r / T, d = r % T;
    *wo = g->C[a * T + c] * g->C[b * T + d];
    *wp = g->C[a * T + d] * g->C[b * T + c];
}

int aim_gauss_eval_elementwise(aim_gauss *g, const aim_overlaps *q)
{
    const int T2 = g->T2;
    double self[MAXT2]; /* E[e_p^2], label noise included */
    g->risk = 0.0;
    for (int p = 0; p < T2; p++) {
        double mu[2], acc[SUMS];
        if (entry_law(g, q, p, mu, g->F2[p]))
            return -1;
        entry_sums(g, mu, g->F2[p], 0, acc);
        g->err[p] = acc[SUM_E];
        g->ez2[p][0] = acc[SUM_EZ0];
        g->ez2[p][1] = acc[SUM_EZ1];
        self[p] = acc[SUM_EE] + g->noise * acc[SUM_DD];
        g->risk += 0.5 * acc[SUM_RR];
    }
    /* Noise kernels: only pairs with a non-zero weight are integrated. */
    g->k_omega = g->k_psi = 0.0;
    for (int p = 0; p < T2; p++)
        for (int r = p; r < T2; r++) {
            double wo, wp;
            pair_weights(g, p, r, &wo, &wp);
            if (wo == 0.0 && wp == 0.0)
                continue;
            double m;
            if (r == p)
                m = self[p];
            else if (pair_moment(g, q, p, r, &m))
                return -1;
            double mult = r == p ? 1.0 : 2.0;
            g->k_omega += mult * wo * m;
            g->k_psi += mult * wp * m;
        }
    return 0;
}

/* The risk of aim_gauss_eval_elementwise alone (the same number), without the pair
 * integrals: it refuses the same states, those where an entry's or a
 * weighted pair's law is not a covariance. */
int aim_gauss_risk_elementwise(const aim_gauss *g, const aim_overlaps *q, double *risk)
{
    const int T2 = g->T2;
    double r = 0.0;
    for (int p = 0; p < T2; p++) {
        double mu[2], F[4], acc[SUMS];
        if (entry_law(g, q, p, mu, F))
            return -1;
        entry_sums(g, mu, F, 1, acc);
        r += 0.5 * acc[SUM_RR];
    }
    for (int p = 0; p < T2; p++)
        for (int s = p + 1; s < T2; s++) {
            double wo, wp, mu[4], V[16], F[16];
            pair_weights(g, p, s, &wo, &wp);
            if ((wo != 0.0 || wp != 0.0) && pair_law(g, q, p, s, mu, V, F))
                return -1;
        }
    *risk = r;
    return 0;
}
