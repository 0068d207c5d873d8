/* Gaussian expectation engine; the derivation of every formula used here
 * is in theory/direct.md, section "Computing the expectations". This part
 * makes and frees an engine, evaluates it at a state (by the rule of
 * gauss_elementwise.c or gauss_sum.c) and reads the kernels; the parts
 * are listed in gauss_internal.h. */
#include "gauss.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_linalg.h>

#include "gauss_internal.h"

/* Nodes of the automatic Gauss-Hermite rules for non-polynomial maps:
 * entry integrals are 2-dimensional, pair integrals 4-dimensional. */
#define AUTO_NODES_2D 48
#define AUTO_NODES_4D 12
/* Cap of the pair rule: n^4 points per pair. 16 nodes keep it exact for
 * every allowed Hermite series (degree <= 8) and bound its cost. */
#define MAX_NODES_4D 16

/* Index tables of the packed entries (see struct aim_gauss), the
 * work space, and the point set of npts points. Returns 0 or -1. */
static int generic_setup(aim_gauss *g, int npts, int symmetric)
{
    const int T = g->T, T2 = g->T2;
    g->nsym = T * (T + 1) / 2;
    g->nanti = T * (T - 1) / 2;
    g->nlat = symmetric ? 2 * g->nsym : 2 * T2;
    int is = 0, ia = 0;
    for (int e = 0; e < T; e++)
        for (int f = e; f < T; f++, is++) {
            g->sym_at[e * T + f] = g->sym_at[f * T + e] = is;
            g->anti_at[e * T + f] = g->anti_at[f * T + e] = f > e ? ia : 0;
            g->anti_sign[e * T + f] = f > e ? 1.0 : 0.0;
            g->anti_sign[f * T + e] = f > e ? -1.0 : 0.0;
            if (f > e)
                ia++;
        }
    g->c_diagonal = 1;
    for (int a = 0; a < T; a++)
        for (int b = 0; b < T; b++)
            if (a != b && g->C[a * T + b] != 0.0)
                g->c_diagonal = 0;
    g->npts = npts;
    g->eyc = malloc(sizeof(double) * (size_t)T2 * g->nlat);
    g->chunk_eyc = malloc(sizeof(double) * (size_t)MAX_CHUNKS * T2 * g->nlat);
    if (!g->eyc || !g->chunk_eyc || aim_gauss_thread_work(g, 1) ||
        aim_gauss_random_shifts(RULE_SEED, 1, 2 * T2, g->shift))
        return -1;
    if (aim_gauss_packing_matrix(g))
        return -1;
    g->yc = aim_gauss_shared_rule(g, npts);
    return g->yc ? 0 : -1;
}

aim_gauss *aim_gauss_create(const aim_config *cfg, aim_gauss_rule rule, int symmetric)
{
    aim_gauss *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->T = cfg->tokens;
    g->T2 = g->T * g->T;
    g->kernel_tol = cfg->kernel_tol;
    g->kernel_err = NAN;
    g->noise = cfg->noise;
    memcpy(g->C, cfg->cov, sizeof g->C);
    gsl_matrix_view Lv = gsl_matrix_view_array(g->L, (size_t)g->T, (size_t)g->T);
    memcpy(g->L, cfg->cov, sizeof(double) * (size_t)g->T2);
    if (gsl_linalg_cholesky_decomp1(&Lv.matrix) != GSL_SUCCESS)
        goto fail;
    for (int i = 0; i < g->T; i++) /* keep the lower triangle only */
        for (int j = i + 1; j < g->T; j++)
            g->L[i * g->T + j] = 0.0;

    g->map = aim_outmap_create(cfg);
    if (!g->map)
        goto fail;
    double *key = g->integrand;
    key[0] = (double)cfg->output;
    key[1] = (double)cfg->activation;
    key[2] = cfg->beta;
    key[3] = cfg->noise;
    memcpy(key + 4, cfg->hermite, sizeof cfg->hermite);
    memcpy(key + 4 + AIM_MAX_HERMITE, cfg->cov, sizeof(double) * MAXT2);
    g->activation = cfg->activation;
    g->elementwise = aim_outmap_is_elementwise(g->map) && rule != AIM_RULE_GENERIC;
    /* relu and erf: closed forms (theory/direct.md sec. 3.6); relu's kink
     * defeats Gauss-Hermite (errors of order 1e-2 at 48 nodes), and erf's
     * are exact where Gauss-Hermite's pairs took 12^4 points */
    if (g->elementwise && rule == AIM_RULE_AUTO && aim_gauss_closed_map(cfg)) {
        g->orthant = aim_orthant_create();
        if (!g->orthant)
            goto fail;
    } else if (g->elementwise) {
        int poly = cfg->activation == AIM_ACT_HERMITE;
        g->n2 = cfg->quad_nodes ? cfg->quad_nodes
                                : (poly ? aim_gauss_polynomial_nodes(cfg) : AUTO_NODES_2D);
        g->n4 = cfg->quad_nodes ? cfg->quad_nodes
                                : (poly ? aim_gauss_polynomial_nodes(cfg) : AUTO_NODES_4D);
        if (g->n4 > MAX_NODES_4D)
            g->n4 = MAX_NODES_4D;
        if (aim_gauss_hermite_rule(g->n2, &g->x2, &g->w2) ||
            aim_gauss_hermite_rule(g->n4, &g->x4, &g->w4))
            goto fail;
    } else {
        if (generic_setup(g, g->kernel_tol > 0.0 ? aim_gauss_first_points(g) : cfg->qmc_points,
                          symmetric))
            goto fail;
    }
    return g;
fail:
    aim_gauss_free(g);
    return NULL;
}

void aim_gauss_free(aim_gauss *g)
{
    if (!g)
        return;
    aim_outmap_free(g->map);
    aim_orthant_free(g->orthant);
    free(g->x2);
    free(g->w2);
    free(g->x4);
    free(g->w4);
    aim_gauss_release_rule(g->yc);
    free(g->pack);
    free(g->work);
    free(g->chunk_eyc);
    free(g->eyc);
    free(g->teacher_f);
    free(g);
}

const char *aim_gauss_error(const aim_gauss *g) { return g->error; }

static int eval_generic(aim_gauss *g, const aim_overlaps *q)
{
    if (aim_gauss_engine_factors(g, q, g->Fs, g->Fa))
        return -1;
    /* every E[e_p yc_j] at the first state: the kernel error estimate
     * compares them */
    qmc_estimate est = {.eyc = g->have_first ? NULL : g->eyc};
    if (aim_gauss_qmc_sum(g, g->yc, g->npts, q, g->Fs, g->Fa, &est))
        return -1;
    if (!g->have_first) {
        g->first = *q;
        g->have_first = 1;
        if (g->kernel_tol > 0.0 && aim_gauss_choose_points(g, q, &est))
            return -1;
    }
    g->last = *q;
    g->risk = est.risk;
    g->k_omega = est.k_omega;
    g->k_psi = est.k_psi;
    memcpy(g->err, est.err, sizeof g->err);
    memcpy(g->eyd, est.eyd, sizeof g->eyd);
    return 0;
}

/* 0 when q's Omega and Psi are finite; else -1 with the message set. */
static int check_finite(aim_gauss *g, const aim_overlaps *q)
{
    g->error[0] = '\0';
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            if (!isfinite(q->omega[i][j]) || !isfinite(q->psi[i][j])) {
                snprintf(g->error, sizeof g->error,
                         "non-finite order parameter (Omega or Psi [%d][%d])", i, j);
                return -1;
            }
    return 0;
}

/* -1, with the message for a q that is no covariance. */
static int refuse_state(aim_gauss *g, const aim_overlaps *q)
{
    snprintf(g->error, sizeof g->error,
             "order parameters are not a valid covariance%s: Omega = "
             "[%g %g; %g %g], Psi = [%g %g; %g %g]",
             g->nlat < 2 * g->T2 ? " of a symmetric (tied) student and teacher, Psi = Omega" : "",
             q->omega[0][0], q->omega[0][1], q->omega[1][0], q->omega[1][1],
             q->psi[0][0], q->psi[0][1], q->psi[1][0], q->psi[1][1]);
    return -1;
}

int aim_gauss_eval(aim_gauss *g, const aim_overlaps *q)
{
    if (check_finite(g, q))
        return -1;
    if (g->elementwise ? aim_gauss_eval_elementwise(g, q) : eval_generic(g, q))
        return refuse_state(g, q);
    if (!isfinite(g->risk) || !isfinite(g->k_omega) || !isfinite(g->k_psi)) {
        snprintf(g->error, sizeof g->error, "non-finite Gaussian expectation");
        return -1;
    }
    return 0;
}

int aim_gauss_risk_at(aim_gauss *g, const aim_overlaps *q, double *risk)
{
    /* the first state of the quasi-random rule fixes its point count */
    if (!g->elementwise && !g->have_first) {
        if (aim_gauss_eval(g, q))
            return -1;
        *risk = g->risk;
        return 0;
    }
    if (check_finite(g, q))
        return -1;
    double Fs[4], Fa[4];
    qmc_estimate est = {.risk_only = 1};
    if (g->elementwise ? aim_gauss_risk_elementwise(g, q, risk)
                       : aim_gauss_engine_factors(g, q, Fs, Fa) ||
                             aim_gauss_qmc_sum(g, g->yc, g->npts, q, Fs, Fa, &est))
        return refuse_state(g, q);
    if (!g->elementwise)
        *risk = est.risk;
    if (!isfinite(*risk)) {
        snprintf(g->error, sizeof g->error, "non-finite Gaussian expectation");
        return -1;
    }
    return 0;
}

double aim_gauss_risk(const aim_gauss *g) { return g->risk; }
int aim_gauss_points(const aim_gauss *g) { return g->elementwise ? 0 : g->npts; }

int aim_gauss_closed_forms(const aim_config *cfg)
{
    return cfg->rule == AIM_RULE_AUTO && aim_gauss_closed_map(cfg);
}

double aim_gauss_noise_omega(const aim_gauss *g) { return g->k_omega; }
double aim_gauss_noise_psi(const aim_gauss *g) { return g->k_psi; }

double aim_gauss_error_mean(const aim_gauss *g)
{
    double s = 0.0;
    for (int p = 0; p < g->T2; p++)
        s += g->C[p] * g->err[p];
    return s;
}

double aim_gauss_error_index(const aim_gauss *g, const double omega_b[2],
                             const double psi_b[2], double mean_b,
                             int transpose)
{
    const int T = g->T, T2 = g->T2;
    double s = 0.0;
    if (g->elementwise) {
        for (int p = 0; p < T2; p++) {
            const double c2 = g->C[p] * g->C[p];
            double cov[2], coef[2];
            for (int i = 0; i < 2; i++)
                cov[i] = transpose ? c2 * omega_b[i] + psi_b[i]
                                   : omega_b[i] + c2 * psi_b[i];
            aim_gauss_forward_solve(2, g->F2[p], cov, coef);
            s += mean_b * g->C[p] * g->err[p] + coef[0] * g->ez2[p][0] +
                 coef[1] * g->ez2[p][1];
        }
        return s;
    }
    double gs[2], ga[2], cs[2], ca[2];
    for (int i = 0; i < 2; i++) { /* the teacher first, as in the factors */
        gs[i] = 0.5 * (omega_b[1 - i] + psi_b[1 - i]);
        ga[i] = 0.5 * (omega_b[1 - i] - psi_b[1 - i]);
    }
    aim_gauss_forward_solve(2, g->Fs, gs, cs);
    aim_gauss_forward_solve(2, g->Fa, ga, ca);
    const double coef[4] = {cs[0], cs[1], ca[0], ca[1]};
    for (int p = 0; p < T2; p++) {
        const int r = transpose ? (p % T) * T + p / T : p;
        s += mean_b * g->C[r] * g->err[p];
        /* E[e_p Y_k,r]: Y_k,p^T = Y_k,p for the symmetric k = 0, 1 and
         * -Y_k,p for the antisymmetric k = 2, 3 */
        for (int k = 0; k < 4; k++)
            s += coef[k] * (k >= 2 && r != p ? -g->eyd[k][p] : g->eyd[k][p]);
    }
    return s;
}

void aim_gauss_kernel_values(const aim_gauss *g, double v[AIM_GAUSS_KERNEL_VALUES])
{
    /* the directions B of the drift kernels, (Omega, Psi) with the
     * student and the teacher: (e_i, e_i), then (e_i, 0) */
    static const double dir[4][2][2] = {
        {{1, 0}, {1, 0}}, {{0, 1}, {0, 1}}, {{1, 0}, {0, 0}}, {{0, 1}, {0, 0}}};
    v[0] = aim_gauss_risk(g);
    v[1] = aim_gauss_noise_omega(g);
    v[2] = aim_gauss_noise_psi(g);
    v[3] = aim_gauss_error_mean(g);
    for (int k = 0; k < 4; k++)
        for (int t = 0; t < 2; t++)
            v[4 + 2 * k + t] = aim_gauss_error_index(g, dir[k][0], dir[k][1], 0.0, t);
}

void aim_gauss_kernel_gaps(const double v[AIM_GAUSS_KERNEL_VALUES],
                           const double ref[AIM_GAUSS_KERNEL_VALUES],
                           double gaps[AIM_GAUSS_KERNEL_GROUPS])
{
    /* the groups: the risk, K_omega, K_psi, the drift kernels v[3..] */
    for (int k = 0; k < AIM_GAUSS_KERNEL_GROUPS; k++) {
        const int to = k < 3 ? k + 1 : AIM_GAUSS_KERNEL_VALUES;
        double scale = 0.0, worst = 0.0;
        for (int j = k; j < to; j++) {
            scale = fmax(scale, fabs(ref[j]));
            worst = fmax(worst, fabs(v[j] - ref[j]));
        }
        gaps[k] = worst > 0.0 ? (scale > 0.0 ? worst / scale : INFINITY) : 0.0;
    }
}

int aim_gauss_observables(aim_gauss *g, const aim_overlaps *q,
                          double obs[AIM_OBS_COUNT])
{
    aim_overlaps_observables(q, obs);
    return aim_gauss_risk_at(g, q, &obs[AIM_OBS_RISK]);
}
