/* Orthant probabilities and moments of normal vectors of up to 4
 * coordinates; the derivations are in theory/direct.md sec. 3.6. */
#include "orthant.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_integration.h>

/* Gauss-Legendre nodes of Owen's T on [0, a], |a| <= 1: the integrand is
 * analytic but for poles at x = +-i, so the rule converges like 4.6^-2n
 * (the Bernstein ellipse of [0, 1] through i); 20 nodes are exact to
 * round-off for |h| up to about 8, and above it T < 1e-14 (tests). */
#define OWEN_NODES 20
/* Nodes of Plackett's integrals over theta (section 3.6), on [0, asin
 * rho] with theta = asin(rho) (1 - (1 - x)^2), which clusters them at the
 * path's end, where a nearly singular correlation matrix makes the
 * integrand steep: against adaptive quadrature (tests/test_orthant.c)
 * 32 nodes are within 2e-11 on random laws (4e-13 at 48), and within 3e-7
 * where three coordinates are within 2e-6 of correlation 1. */
#define PATH_NODES 32
/* A variance below this fraction of the law's largest is zero (the
 * engine's semidefinite factors count pivots the same way), and two
 * coordinates of the mask whose correlation is within DUPLICATE of 1 are
 * one: the exact duplicates of the index laws (h_ab = h_ba of a symmetric
 * matrix) differ by round-off. */
#define TINY 1e-13
#define DUPLICATE 1e-12

struct aim_orthant {
    double owen_x[OWEN_NODES], owen_w[OWEN_NODES];
    double path_x[PATH_NODES], path_w[PATH_NODES];
};

static int nodes(int n, double *x, double *w)
{
    gsl_integration_glfixed_table *t = gsl_integration_glfixed_table_alloc((size_t)n);
    if (!t)
        return -1;
    for (int i = 0; i < n; i++)
        gsl_integration_glfixed_point(0.0, 1.0, (size_t)i, &x[i], &w[i], t);
    gsl_integration_glfixed_table_free(t);
    return 0;
}

aim_orthant *aim_orthant_create(void)
{
    aim_orthant *o = malloc(sizeof *o);
    if (!o || nodes(OWEN_NODES, o->owen_x, o->owen_w) ||
        nodes(PATH_NODES, o->path_x, o->path_w)) {
        free(o);
        return NULL;
    }
    return o;
}

void aim_orthant_free(aim_orthant *o) { free(o); }

static double Phi(double x) { return gsl_cdf_ugaussian_P(x); }
static double Q(double x) { return gsl_cdf_ugaussian_Q(x); }

/* T(h, a) for h >= 0 and 0 <= a <= 1, by the Gauss-Legendre rule. */
static double owen_small(const aim_orthant *o, double h, double a)
{
    double s = 0.0;
    for (int i = 0; i < OWEN_NODES; i++) {
        const double x = a * o->owen_x[i], y = 1.0 + x * x;
        s += o->owen_w[i] * exp(-0.5 * h * h * y) / y;
    }
    return a * s / (2.0 * M_PI);
}

/* T(h, b / h), zero counted as positive in the sign of h (section 3.6):
 * for |b| <= |h| the rule above, else by T(h, a) + T(ah, 1/a) = (Phi(h)
 * Q(ah) + Q(h) Phi(ah)) / 2 (h, a >= 0), written so that nothing cancels
 * in the tails. T is even in h and odd in a. */
static double owen_ratio(const aim_orthant *o, double h, double b)
{
    const double ah = fabs(h), ab = fabs(b);
    const double sign = (b < 0.0) != (h < 0.0) ? -1.0 : 1.0;
    if (ab <= ah)
        return ah > 0.0 ? sign * owen_small(o, ah, ab / ah) : 0.0;
    return sign * (0.5 * (Phi(ah) * Q(ab) + Q(ah) * Phi(ab)) - owen_small(o, ab, ah / ab));
}

double aim_orthant_owen_t(const aim_orthant *o, double h, double a)
{
    return h == 0.0 ? atan(a) / (2.0 * M_PI) : owen_ratio(o, h, a * h);
}

double aim_orthant_bvn(const aim_orthant *o, double h, double k, double rho)
{
    if (h == -INFINITY || k == -INFINITY)
        return 0.0;
    if (h == INFINITY)
        return Phi(k);
    if (k == INFINITY)
        return Phi(h);
    if (rho >= 1.0)
        return Phi(fmin(h, k));
    if (rho <= -1.0)
        return h + k > 0.0 ? Phi(h) - Q(k) : 0.0;
    if (h == 0.0 && k == 0.0)
        return 0.25 + asin(rho) / (2.0 * M_PI);
    /* k - rho h as (k - h) + (1 - rho) h for rho >= 0 (as (k + h) - (1 +
     * rho) h below): 1 -+ rho is exact near +-1, where k - rho h cancels */
    const double r = sqrt((1.0 - rho) * (1.0 + rho));
    const double bh = rho >= 0.0 ? (k - h) + (1.0 - rho) * h : (k + h) - (1.0 + rho) * h;
    const double bk = rho >= 0.0 ? (h - k) + (1.0 - rho) * k : (h + k) - (1.0 + rho) * k;
    const double t = owen_ratio(o, h, bh / r) + owen_ratio(o, k, bk / r);
    const double delta = (h < 0.0) != (k < 0.0) ? 0.5 : 0.0;
    return 0.5 * (Phi(h) + Phi(k)) - t - delta;
}

/* P(U < x) for U ~ N(0, v), v >= 0 (v = 0: a step, 1/2 at 0). */
static double below(double x, double v)
{
    if (v > 0.0)
        return Phi(x / sqrt(v));
    return x > 0.0 ? 1.0 : x < 0.0 ? 0.0 : 0.5;
}

/* P(U < x, V < y) for (U, V) centred with variances vx, vy >= 0 and
 * covariance cxy. */
static double below2(const aim_orthant *o, double x, double y, double vx, double vy, double cxy)
{
    if (!(vx > 0.0))
        return below(x, 0.0) * below(y, vy);
    if (!(vy > 0.0))
        return below(x, vx) * below(y, 0.0);
    double rho = cxy / sqrt(vx * vy);
    rho = rho > 1.0 ? 1.0 : rho < -1.0 ? -1.0 : rho;
    return aim_orthant_bvn(o, x / sqrt(vx), y / sqrt(vy), rho);
}

/* One of Plackett's integrals (section 3.6): over theta in [0, asin
 * R_il] of exp(-(h_i^2 - 2 h_i h_l sin theta + h_l^2) / (2 cos^2
 * theta)) / (2 pi) times the probability of the rest given Z_i = h_i,
 * Z_l = h_l on the path at t = sin theta / R_il, which rest(...) returns
 * from s = sin theta, cos^2 theta and t. */
typedef double (*rest_fn)(const aim_orthant *o, const void *ctx, double s, double c2, double t);

static double path_integral(const aim_orthant *o, double hi, double hl, double rho,
                            rest_fn rest, const void *ctx)
{
    if (rho == 0.0)
        return 0.0;
    const double top = asin(rho > 1.0 ? 1.0 : rho < -1.0 ? -1.0 : rho);
    double sum = 0.0;
    for (int q = 0; q < PATH_NODES; q++) {
        const double u = 1.0 - o->path_x[q], th = top * (1.0 - u * u);
        const double s = sin(th), c = cos(th), c2 = c * c;
        const double e = exp(-(hi * hi - 2.0 * hi * hl * s + hl * hl) / (2.0 * c2));
        if (e > 0.0)
            sum += o->path_w[q] * 2.0 * u * e * rest(o, ctx, s, c2, s / rho);
    }
    return top * sum / (2.0 * M_PI);
}

/* The conditional law of Z_x given (Z_i, Z_l) = (h_i, h_l), whose
 * correlation is s: Z_x's covariances with them are bx = (b_xi, b_xl). */
static double cond_mean(const double bx[2], double s, double c2, double hi, double hl)
{
    return ((bx[0] - s * bx[1]) * hi + (bx[1] - s * bx[0]) * hl) / c2;
}

static double cond_cov(const double bx[2], const double by[2], double s, double c2)
{
    return (bx[0] * by[0] - s * (bx[0] * by[1] + bx[1] * by[0]) + bx[1] * by[1]) / c2;
}

/* three coordinates: Z_i alone, Z_l and Z_m the block */
typedef struct {
    double hi, hl, hm, r_im, r_lm;
} rest3;

static double rest_of_three(const aim_orthant *o, const void *ctx, double s, double c2, double t)
{
    (void)o;
    const rest3 *c = ctx;
    const double b[2] = {t * c->r_im, c->r_lm};
    return below(c->hm - cond_mean(b, s, c2, c->hi, c->hl), 1.0 - cond_cov(b, b, s, c2));
}

static double p3(const aim_orthant *o, const double *h, const double R[3][3])
{
    if (h[0] == 0.0 && h[1] == 0.0 && h[2] == 0.0)
        return 0.125 + (asin(R[0][1]) + asin(R[0][2]) + asin(R[1][2])) / (4.0 * M_PI);
    /* Z_i alone: the one least correlated with the others, so that the
     * path carries the smaller correlations */
    int iso = 0;
    double best = INFINITY;
    for (int i = 0; i < 3; i++) {
        const double worst = fmax(fabs(R[i][(i + 1) % 3]), fabs(R[i][(i + 2) % 3]));
        if (worst < best) {
            best = worst;
            iso = i;
        }
    }
    const int j = (iso + 1) % 3, k = (iso + 2) % 3;
    double p = Phi(h[iso]) * aim_orthant_bvn(o, h[j], h[k], R[j][k]);
    for (int side = 0; side < 2; side++) {
        const int l = side ? k : j, m = side ? j : k;
        const rest3 c = {h[iso], h[l], h[m], R[iso][m], R[l][m]};
        p += path_integral(o, h[iso], h[l], R[iso][l], rest_of_three, &c);
    }
    return p;
}

/* four coordinates: blocks {i, m} and {l, n}, the path's pair (i, l) */
typedef struct {
    double hi, hl, hm, hn;
    double r_mi, r_ml, r_ni, r_nl, r_mn;
} rest4;

static double rest_of_four(const aim_orthant *o, const void *ctx, double s, double c2, double t)
{
    const rest4 *c = ctx;
    const double bm[2] = {c->r_mi, t * c->r_ml}, bn[2] = {t * c->r_ni, c->r_nl};
    return below2(o, c->hm - cond_mean(bm, s, c2, c->hi, c->hl),
                  c->hn - cond_mean(bn, s, c2, c->hi, c->hl), 1.0 - cond_cov(bm, bm, s, c2),
                  1.0 - cond_cov(bn, bn, s, c2), t * c->r_mn - cond_cov(bm, bn, s, c2));
}

static double p4(const aim_orthant *o, const double *h, const double R[4][4])
{
    /* the pairing whose largest correlation across the blocks is the
     * smallest: the blocks keep the large ones, exactly */
    static const int pairing[3][4] = {{0, 1, 2, 3}, {0, 2, 1, 3}, {0, 3, 1, 2}};
    int pick = 0;
    double best = INFINITY;
    for (int k = 0; k < 3; k++) {
        const int *b = pairing[k];
        double worst = 0.0;
        for (int x = 0; x < 2; x++)
            for (int y = 2; y < 4; y++)
                worst = fmax(worst, fabs(R[b[x]][b[y]]));
        if (worst < best) {
            best = worst;
            pick = k;
        }
    }
    const int *b = pairing[pick];
    double p = aim_orthant_bvn(o, h[b[0]], h[b[1]], R[b[0]][b[1]]) *
               aim_orthant_bvn(o, h[b[2]], h[b[3]], R[b[2]][b[3]]);
    for (int x = 0; x < 2; x++)
        for (int y = 2; y < 4; y++) {
            const int i = b[x], m = b[1 - x], l = b[y], n = b[5 - y];
            const rest4 c = {h[i], h[l], h[m], h[n], R[m][i], R[m][l], R[n][i], R[n][l], R[m][n]};
            p += path_integral(o, h[i], h[l], R[i][l], rest_of_four, &c);
        }
    return p;
}

/* ---- moments by Stein's lemma ----------------------------------------- */

typedef struct {
    int n;
    double mu[AIM_ORTHANT_MAX], V[AIM_ORTHANT_MAX * AIM_ORTHANT_MAX];
    double tiny; /* a variance below it is zero */
} law;

/* The mask with its constants and duplicates taken out (the header's
 * rules); -1 when a constant of the mask is <= 0, so that the indicator
 * is 0. */
static int reduce(const law *L, unsigned mask, unsigned *out)
{
    const int n = L->n;
    for (int k = 0; k < n; k++)
        if (mask >> k & 1u && L->V[k * n + k] <= L->tiny) {
            if (!(L->mu[k] > 0.0))
                return -1;
            mask &= ~(1u << k);
        }
    for (int k = 0; k < n; k++)
        for (int l = k + 1; l < n; l++) {
            if (!(mask >> k & 1u) || !(mask >> l & 1u))
                continue;
            const double sk = sqrt(L->V[k * n + k]), sl = sqrt(L->V[l * n + l]);
            if (L->V[k * n + l] < (1.0 - DUPLICATE) * sk * sl)
                continue;
            /* the same event up to the threshold: {Z < min(h_k, h_l)} */
            mask &= ~(1u << (L->mu[k] / sk < L->mu[l] / sl ? l : k));
        }
    *out = mask;
    return 0;
}

static double probability(const aim_orthant *o, const law *L, unsigned mask)
{
    unsigned m;
    if (reduce(L, mask, &m))
        return 0.0;
    int idx[AIM_ORTHANT_MAX], c = 0;
    const int n = L->n;
    for (int k = 0; k < n; k++)
        if (m >> k & 1u)
            idx[c++] = k;
    double h[AIM_ORTHANT_MAX], sd[AIM_ORTHANT_MAX], R[AIM_ORTHANT_MAX][AIM_ORTHANT_MAX];
    for (int x = 0; x < c; x++) {
        sd[x] = sqrt(L->V[idx[x] * n + idx[x]]);
        h[x] = L->mu[idx[x]] / sd[x];
    }
    for (int x = 0; x < c; x++)
        for (int y = 0; y < c; y++) {
            double r = x == y ? 1.0 : L->V[idx[x] * n + idx[y]] / (sd[x] * sd[y]);
            R[x][y] = r > 1.0 ? 1.0 : r < -1.0 ? -1.0 : r;
        }
    switch (c) {
    case 0: return 1.0;
    case 1: return Phi(h[0]);
    case 2: return aim_orthant_bvn(o, h[0], h[1], R[0][1]);
    case 3: {
        double R3[3][3];
        for (int x = 0; x < 3; x++)
            for (int y = 0; y < 3; y++)
                R3[x][y] = R[x][y];
        return p3(o, h, R3);
    }
    default: return p4(o, h, R);
    }
}

/* The law given W_k = 0 into *C, and W_k's density at 0 (0 for a
 * constant). */
static double condition(const law *L, int k, law *C)
{
    const int n = L->n;
    const double vk = L->V[k * n + k];
    *C = *L;
    if (vk <= L->tiny)
        return 0.0;
    for (int x = 0; x < n; x++) {
        C->mu[x] = L->mu[x] - L->V[x * n + k] * L->mu[k] / vk;
        for (int y = 0; y < n; y++)
            C->V[x * n + y] = L->V[x * n + y] - L->V[x * n + k] * L->V[y * n + k] / vk;
    }
    return exp(-0.5 * L->mu[k] * L->mu[k] / vk) / sqrt(2.0 * M_PI * vk);
}

/* E[W_j 1_mask] (section 3.6: mu_j P + sum_k V_jk f_k(0) P(mask \ k |
 * W_k = 0)), and the probability into *p. */
static double first_moment(const aim_orthant *o, const law *L, unsigned mask, int j, double *p)
{
    unsigned m;
    if (reduce(L, mask, &m)) {
        *p = 0.0;
        return 0.0;
    }
    *p = probability(o, L, m);
    double s = L->mu[j] * *p;
    for (int k = 0; k < L->n; k++) {
        if (!(m >> k & 1u) || L->V[j * L->n + k] == 0.0)
            continue;
        law C;
        const double f = condition(L, k, &C);
        if (f > 0.0)
            s += L->V[j * L->n + k] * f * probability(o, &C, m & ~(1u << k));
    }
    return s;
}

/* E[W_i W_j 1_mask] = mu_i E[W_j 1_mask] + V_ij P + sum_k V_ik f_k(0)
 * E[W_j 1_{mask \ k} | W_k = 0] (section 3.6). */
static double second_moment(const aim_orthant *o, const law *L, unsigned mask, int i, int j)
{
    unsigned m;
    if (reduce(L, mask, &m))
        return 0.0;
    const int n = L->n;
    const double p = probability(o, L, m);
    double first = L->mu[j] * p, rest = L->V[i * n + j] * p;
    for (int k = 0; k < n; k++) {
        if (!(m >> k & 1u))
            continue;
        law C;
        const double f = condition(L, k, &C);
        if (!(f > 0.0))
            continue;
        double pk;
        const double fk = first_moment(o, &C, m & ~(1u << k), j, &pk);
        first += L->V[j * n + k] * f * pk;
        rest += L->V[i * n + k] * f * fk;
    }
    return L->mu[i] * first + rest;
}

double aim_orthant_moment(const aim_orthant *o, int n, const double *mu, const double *V,
                          unsigned mask, int i, int j)
{
    law L = {.n = n};
    double scale = 0.0;
    memcpy(L.mu, mu, sizeof(double) * (size_t)n);
    memcpy(L.V, V, sizeof(double) * (size_t)(n * n));
    for (int k = 0; k < n; k++)
        scale = fmax(scale, V[k * n + k]);
    L.tiny = TINY * (scale > 0.0 ? scale : 1.0);
    if (i < 0 && j < 0)
        return probability(o, &L, mask);
    if (i < 0 || j < 0) {
        double p;
        return first_moment(o, &L, mask, i < 0 ? j : i, &p);
    }
    return second_moment(o, &L, mask, i, j);
}
