/* The quasi-random rule's kernel error estimate: the spread of copies of
 * the rule under other random shifts, at the first and the last state
 * evaluated, and ode.kernel_tol's choice of the point count by it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_cdf.h>

#include "gauss_internal.h"

/* ode.kernel_tol: the point counts tried, 1024 4^k */
#define TOL_FIRST_POINTS 1024

/* The state of a kernel error estimate: its factors (aim_gauss_state_factors) and
 * the rule's own estimate there, every E[e_p yc_j] included (ref). */
typedef struct {
    const aim_overlaps *q;
    double Fs[4], Fa[4];
    qmc_estimate ref;
} spread_state;

/* The estimated relative error of the rule at npts points, at each of
 * the nstates states st[i] into out[i]: REPLICATES copies of the rule
 * under other random shifts (qmc_points), each a draw from the law the
 * rule's own shift was drawn from, so that their spread (standard
 * deviation s) estimates the rule's typical error; the rule's error over
 * s is Student-t distributed with REPLICATES - 1 degrees of freedom, and
 * t s (t its two-sided ESTIMATE_CONFIDENCE quantile) bounds it at that
 * confidence. Per group of kernels (the risk; K_omega; K_psi; the drift
 * kernels E[e] and E[e Y]), that bound relative to the group's largest
 * value in the rule's estimate st[i].ref; the largest over the groups.
 * Each copy is made once and evaluated at every state, all in one
 * buffer: the copies are not kept (their memory, fresh, cost more to
 * fill than they do to make again where another engine needs them).
 * Returns 0 or -1. */
static int kernel_spread(aim_gauss *g, int npts, int nstates, const spread_state *st,
                         double *out)
{
    const int T2 = g->T2, nlat = g->nlat, ndrift = T2 + T2 * nlat, nvec = 3 + ndrift;
    double *vals = malloc(sizeof(double) * (size_t)nstates * REPLICATES * nvec);
    double *eyc = malloc(sizeof(double) * (size_t)T2 * nlat);
    double *yc = aim_gauss_set_memory((size_t)npts * nlat);
    double shifts[REPLICATES * 4 * MAXT2]; /* rows of 2 T^2, the first nlat used */
    int rc = -1;
    if (!vals || !eyc || !yc ||
        aim_gauss_random_shifts(REPLICATE_SEED, REPLICATES, 2 * T2, shifts))
        goto done;
    for (int r = 0; r < REPLICATES; r++) {
        if (aim_gauss_fill_rule(g, npts, shifts + (size_t)r * 2 * T2, yc))
            goto done;
        for (int i = 0; i < nstates; i++) {
            qmc_estimate est = {.eyc = eyc};
            if (aim_gauss_qmc_sum(g, yc, npts, st[i].q, st[i].Fs, st[i].Fa, &est))
                goto done;
            double *v = vals + ((size_t)i * REPLICATES + r) * nvec;
            v[0] = est.risk;
            v[1] = est.k_omega;
            v[2] = est.k_psi;
            memcpy(v + 3, est.err, sizeof(double) * (size_t)T2);
            memcpy(v + 3 + T2, eyc, sizeof(double) * (size_t)T2 * nlat);
        }
    }
    const double t = gsl_cdf_tdist_Pinv(0.5 + 0.5 * ESTIMATE_CONFIDENCE, REPLICATES - 1);
    for (int i = 0; i < nstates; i++) {
        const qmc_estimate *ref = &st[i].ref;
        double scale[4] = {fabs(ref->risk), fabs(ref->k_omega), fabs(ref->k_psi), 0.0};
        for (int p = 0; p < T2; p++)
            scale[3] = fmax(scale[3], fabs(ref->err[p]));
        for (int j = 0; j < T2 * nlat; j++)
            scale[3] = fmax(scale[3], fabs(ref->eyc[j]));
        const double *vi = vals + (size_t)i * REPLICATES * nvec;
        double worst = 0.0;
        for (int j = 0; j < nvec; j++) {
            double mean = 0.0, var = 0.0;
            for (int r = 0; r < REPLICATES; r++)
                mean += vi[(size_t)r * nvec + j] / REPLICATES;
            for (int r = 0; r < REPLICATES; r++) {
                const double dev = vi[(size_t)r * nvec + j] - mean;
                var += dev * dev / (REPLICATES - 1);
            }
            const double bound = t * sqrt(var), sc = scale[j < 3 ? j : 3];
            if (bound > 0.0)
                worst = fmax(worst, sc > 0.0 ? bound / sc : INFINITY);
        }
        out[i] = worst;
    }
    rc = 0;
done:
    free(yc);
    free(vals);
    free(eyc);
    return rc;
}

/* 1 when 4 times npts points (ode.kernel_tol's next count) would pass the
 * cap on the stored point set at T tokens, else 0. */
static int points_capped(int T, int npts) { return 4L * npts * 2 * T * T > MAX_STORED; }

int aim_gauss_points_capped(const aim_config *cfg, int points)
{
    return points_capped(cfg->tokens, points);
}

/* The point count for ode.kernel_tol to start from: 1024 4^k, at least
 * the 64 T^2 that whitening needs (src/students/config_check.c). */
int aim_gauss_first_points(const aim_gauss *g)
{
    int n = TOL_FIRST_POINTS;
    while (n < 64 * g->T2)
        n *= 4;
    return n;
}

/* ode.kernel_tol at the first state evaluated (est the unshifted
 * estimate there at the current point count): 4 times the points until
 * the estimated error is at most kernel_tol, or the point set would pass
 * MAX_STORED numbers; est then recomputed, the estimate kept in
 * g->kernel_err. The point set stays fixed from here on, so that the
 * right-hand side stays a smooth function of the state. */
int aim_gauss_choose_points(aim_gauss *g, const aim_overlaps *q, qmc_estimate *est)
{
    spread_state st = {.q = q, .ref = *est};
    memcpy(st.Fs, g->Fs, sizeof st.Fs);
    memcpy(st.Fa, g->Fa, sizeof st.Fa);
    double err;
    if (kernel_spread(g, g->npts, 1, &st, &err))
        return -1;
    while (err > g->kernel_tol && !points_capped(g->T, g->npts)) {
        const double *yc = aim_gauss_shared_rule(g, 4 * g->npts);
        if (!yc)
            return -1;
        aim_gauss_release_rule(g->yc);
        g->yc = yc;
        g->npts *= 4;
        if (aim_gauss_qmc_sum(g, g->yc, g->npts, q, g->Fs, g->Fa, est))
            return -1;
        st.ref = *est;
        if (kernel_spread(g, g->npts, 1, &st, &err))
            return -1;
    }
    g->kernel_err = err;
    return 0;
}

/* The kernel error estimates of g's rule at the n (1 or 2) states q[i]
 * into err[i] (kernel_spread), each from the cache or made (those not
 * cached in one kernel_spread, on the same copies of the rule) and kept
 * there. Returns 0, or -1 (err NAN). */
static int estimate_at(aim_gauss *g, int n, const aim_overlaps *const q[2], double err[2])
{
    error_key key[2];
    spread_state st[2];
    int made[2], todo = 0, rc = 0;
    for (int i = 0; i < n; i++) {
        aim_gauss_kernel_error_key(g, q[i], &key[i]);
        if (aim_gauss_cached_kernel_error(&key[i], &err[i]))
            continue;
        spread_state *s = &st[todo];
        *s = (spread_state){.q = q[i],
                            .ref = {.eyc = malloc(sizeof(double) * (size_t)g->T2 * g->nlat)}};
        made[todo++] = i;
        rc = rc || !s->ref.eyc || aim_gauss_engine_factors(g, q[i], s->Fs, s->Fa) ||
             aim_gauss_qmc_sum(g, g->yc, g->npts, q[i], s->Fs, s->Fa, &s->ref);
    }
    double spread[2];
    if (todo > 0 && !rc)
        rc = kernel_spread(g, g->npts, todo, st, spread);
    for (int k = 0; k < todo; k++) {
        free(st[k].ref.eyc);
        err[made[k]] = rc ? NAN : spread[k];
        if (!rc)
            aim_gauss_keep_kernel_error(&key[made[k]], spread[k]);
    }
    return rc ? -1 : 0;
}

int aim_gauss_kernel_error(aim_gauss *g, double *err)
{
    *err = NAN;
    if (g->elementwise || !g->have_first)
        return 0;
    /* the first state's estimate (unless made for ode.kernel_tol) and
     * the last's, on the same copies of the rule */
    const aim_overlaps *states[2];
    double *into[2], at_last = NAN, found[2];
    int n = 0;
    if (isnan(g->kernel_err)) {
        into[n] = &g->kernel_err;
        states[n++] = &g->first;
    }
    if (memcmp(&g->last, &g->first, sizeof g->last) != 0) {
        into[n] = &at_last;
        states[n++] = &g->last;
    }
    if (n > 0 && estimate_at(g, n, states, found)) {
        snprintf(g->error, sizeof g->error, "out of memory for the kernel error estimate");
        return -1;
    }
    for (int i = 0; i < n; i++)
        *into[i] = found[i];
    *err = fmax(g->kernel_err, at_last);
    return 0;
}
