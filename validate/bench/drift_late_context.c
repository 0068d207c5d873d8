/* drift_late's shared pieces (drift_late_context.h): the reference's tau,
 * the tracked words, the right-hand side at given moments, the quadrature
 * closure's moments and the overlap's gradient. */
#include "drift_late_context.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

double drift_late_ref_tau(const ctx *c, int r)
{
    return c->ref.x[(size_t)r * c->ref.cols + c->col_tau];
}

/* Tracked words of every word vector (the state y). */
void drift_late_tracked_of(const ctx *c, const double *mom, double *y)
{
    for (int k = 0; k < c->n; k++)
        y[k] = mom[aim_hierarchy_tracked(c->h, k)];
}

/* The right-hand side at every word's moment mom (no closure). */
int drift_late_rhs_at(ctx *c, const double *mom, double *dy)
{
    double *g = malloc(sizeof *g * 3 * (size_t)c->n);
    if (!g)
        return -1;
    int st = aim_tied_terms_at(c->m, mom, g, g + c->n, g + 2 * c->n);
    for (int k = 0; k < c->n && !st; k++)
        dy[k] = g[k] + g[c->n + k] + g[2 * c->n + k];
    if (st)
        fprintf(stderr, "drift_late: %s\n", aim_tied_error(c->m));
    free(g);
    return st;
}

/* Every word's moment from the tracked words y, closed by the quadrature
 * at the given floor (the prior of the even-M completion: the aligned
 * closure, as src/hierarchy/truncation.c does). */
int drift_late_quadrature_moments(ctx *c, aim_quadrature *q, const double *y, double *mom)
{
    aim_tied_moments(c->m, y, mom);
    return aim_quadrature_close(q, mom) > 0 ? 0 : -1;
}

/* d overlap / d (m(S), m(SS), m(ST)) at mom, analytically. */
void drift_late_overlap_gradient(const ctx *c, const double *mom, double grad[3])
{
    const int w_t = aim_wordset_find(c->ws, "T"), w_tt = aim_wordset_find(c->ws, "TT");
    const double s = mom[c->w_s], ss = mom[c->w_ss], st = mom[c->w_st];
    const double t = mom[w_t], tt = mom[w_tt];
    const double a = st - s * t, b = ss - s * s, e = tt - t * t;
    const double rho = a / sqrt(b * e);
    grad[0] = -t / sqrt(b * e) + rho * s / b;
    grad[1] = -0.5 * rho / b;
    grad[2] = 1.0 / sqrt(b * e);
}
