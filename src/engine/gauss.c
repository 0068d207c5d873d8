#define _DEFAULT_SOURCE /* madvise (set_memory): outside _XOPEN_SOURCE */
/* Gaussian expectation engine; the derivation of every formula used here
 * is in theory/direct.md, section "Computing the expectations". */
#include "gauss.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <gsl/gsl_blas.h>
#include <gsl/gsl_cdf.h>
#include <gsl/gsl_integration.h>
#include <gsl/gsl_linalg.h>
#include <gsl/gsl_qrng.h>
#include <gsl/gsl_rng.h>

#include "normal.h"
#include "omp_directive.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#define MAXT AIM_MAX_TOKENS
#define MAXT2 (MAXT * MAXT)

/* Nodes of the automatic Gauss-Hermite rules for non-polynomial maps:
 * entry integrals are 2-dimensional, pair integrals 4-dimensional. */
#define AUTO_NODES_2D 48
#define AUTO_NODES_4D 12
/* Cap of the pair rule: n^4 points per pair. 16 nodes keep it exact for
 * every allowed Hermite series (degree <= 8) and bound its cost. */
#define MAX_NODES_4D 16
/* Points per block of the generic rule: one dgemm of its E[e Y] part,
 * whose work space stays in cache. */
#define QMC_BLOCK 256
/* The point set is cut into at most MAX_CHUNKS chunks of whole blocks,
 * the unit of work of the engine's threads. Each chunk's sums are formed
 * block by block (block_sums), and the chunks' sums are added in chunk
 * order once all are done, whatever the thread count: the chunks depend
 * on the point count only, so that the results are bit for bit the same
 * on any number of threads, and no thread waits for another until the
 * end. */
#define MAX_CHUNKS 64
/* The rule is the point set shifted by one fixed random shift (seed
 * RULE_SEED): a draw from the same law as the REPLICATES copies shifted
 * by other random shifts (seed REPLICATE_SEED) whose spread estimates its
 * error. Unshifted, the rule's error was up to 3 times the copies'
 * (theory/direct.md sec. 3.5). Both fixed: the rule and the estimate are
 * reproducible. 8 copies give the spread to about 25 %; the estimate is
 * the Student-t bound at confidence ESTIMATE_CONFIDENCE on their 7
 * degrees of freedom. */
#define RULE_SEED 20
#define REPLICATES 8
#define REPLICATE_SEED 15
#define ESTIMATE_CONFIDENCE 0.95
/* ode.kernel_tol: the point counts tried, 1024 4^k, and the cap on the
 * stored point set (points x 2 T^2 doubles: 256 MiB). */
#define TOL_FIRST_POINTS 1024
#define MAX_STORED (1L << 25)
/* Point sets kept for reuse by later engines of the process (see
 * shared_rule: the rules; the kernel error estimate's copies are not
 * kept, kernel_spread), and kernel error estimates (see error_slot). */
#define RULE_SLOTS 24
/* the most numbers an engine keeps of its teacher's outputs (64 MiB;
 * as many as its point set has, 2 T^2 per point) */
#define TEACHER_KEPT_MAX (1L << 23)
#define ERROR_SLOTS 16

struct aim_gauss {
    int T, T2;
    double C[MAXT2], L[MAXT2]; /* token covariance and its Cholesky factor */
    double noise;
    aim_outmap *map;
    int elementwise; /* 1: per-entry Gauss-Hermite rule; 0: generic QMC */

    /* Gauss-Hermite nodes/weights for the standard normal (weights sum
     * to 1); n2 for entry integrals, n4 for pair integrals. */
    int n2, n4;
    double *x2, *w2, *x4, *w4;

    /* Generic rule: npts standard normal points z of dimension
     * 2 T^2, stored as what they become, Y_k = L Z_k L^T (which
     * does not depend on the state): per point the nsym independent
     * entries of the symmetric Y_0 and Y_1, then the nanti of the
     * antisymmetric Y_2 and Y_3 (latent_matrices' order). Entry q of Y_k
     * is yc[sym_at[q]] (k = 0, 1, plus k nsym) or anti_sign[q] times
     * yc[2 nsym + k' nanti + anti_at[q]] (k = 2 + k'). nlat of them are
     * stored: all 2 T^2, or for a symmetric student and teacher (tied:
     * Psi = Omega, so the antisymmetric coordinates carry no variance
     * and meet only zero coefficients) the 2 nsym symmetric ones, the
     * leading columns of the whole set (generic_setup). */
    int npts, nlat, nsym, nanti;
    const double *yc;             /* npts x nlat, shared (shared_rule) */
    double *pack;                 /* nlat x nlat: z -> packed Y (qmc_rule) */
    int sym_at[MAXT2], anti_at[MAXT2];
    double anti_sign[MAXT2];
    int c_diagonal;               /* C diagonal: the noise kernels in O(T^2) */
    /* per thread (work_threads of them): a block's e(z) - e(-z)
     * (QMC_BLOCK x T^2), for every E[e_p yc_j] */
    double *work;
    int work_threads;
    /* per chunk: its sums of diff_p yc_j (T^2 x nlat), for the kernel
     * error estimate (kernel_spread) */
    double *chunk_eyc;
    double *eyc;                  /* T^2 x nlat: sum of diff_p yc_j */
    /* Kernel error (aim_gauss_kernel_error) at the first state evaluated,
     * where the point count is also chosen when kernel_tol > 0; NAN until
     * estimated. */
    double kernel_tol, kernel_err;
    aim_overlaps first, last; /* the first and last states evaluated */
    int have_first;
    double shift[4 * MAXT2]; /* the rule's random shift (RULE_SEED) */
    /* what, beside the point set and the state, the kernels depend on:
     * the key of the kernel error cache */
    double integrand[AIM_MAX_HERMITE + 4 + MAXT2];

    /* Results of the last evaluation. */
    double risk, k_omega, k_psi;
    double err[MAXT2];          /* E[e_p] */
    /* generic: E[e_p Y_k,p] for Y = L Z L^T, Z the symmetric (k = 0, 1)
     * or antisymmetric (k = 2, 3) latent matrices: of E[e_p Y_k,q] the
     * drift kernels need q = p and q = p^T only, and Y_k,p^T = +-Y_k,p */
    double eyd[4][MAXT2];
    /* 2 x 2 lower factors, row-major, of the latent law with the teacher
     * first (state_factors) */
    double Fs[4], Fa[4];
    /* The teacher's outputs at every point of the rule (and its antithetic
     * image), as block_sums makes them, LANES points interleaved: with the
     * teacher first they do not depend on the student, so they are made
     * at the first evaluation and read at the next ones (while the key
     * stays: the rule, the teacher's mean and factor entries). NULL when
     * the set is too large to keep them (TEACHER_KEPT_MAX). */
    double *teacher_f;
    const double *teacher_yc;
    double teacher_key[3];
    int teacher_valid;
    /* elementwise: per entry, 2 x 2 factor and E[e_p z_j] */
    double F2[MAXT2][4];
    double ez2[MAXT2][2];

    char error[256];
};

/* Lower-triangular F (n x n, row-major) with F F^T = V for a positive
 * semidefinite V, n <= 4. GSL's Cholesky rejects singular matrices and
 * its pivoted variant reorders the latent coordinates, which would make
 * the quadrature rule jump with the state; here a column whose pivot is
 * negligible is set to zero instead, which keeps F continuous. A state at
 * the boundary (the student equal to the teacher, say) is approached by
 * the ODE, and trial steps may cross it by round-off: pivots down to
 * -1e-6 of the largest variance count as zero. Returns -1 when V is
 * further from positive semidefinite. The scale is V's largest variance,
 * or the caller's when V is one part of a larger covariance (the
 * antisymmetric part of a symmetric pair is zero up to round-off, and
 * its own scale would be that round-off). */
static int chol_semidefinite_scaled(int n, const double *V, double *F,
                                    double scale)
{
    for (int i = 0; i < n; i++)
        scale = fmax(scale, fabs(V[i * n + i]));
    const double tiny = 1e-13 * (scale > 0.0 ? scale : 1.0);
    memset(F, 0, sizeof(double) * (size_t)(n * n));
    for (int j = 0; j < n; j++) {
        double pivot = V[j * n + j];
        for (int k = 0; k < j; k++)
            pivot -= F[j * n + k] * F[j * n + k];
        if (pivot < -1e-6 * (scale > 0.0 ? scale : 1.0) || !isfinite(pivot))
            return -1;
        if (pivot <= tiny)
            continue;
        double root = sqrt(pivot);
        F[j * n + j] = root;
        for (int i = j + 1; i < n; i++) {
            double s = V[i * n + j];
            for (int k = 0; k < j; k++)
                s -= F[i * n + k] * F[j * n + k];
            F[i * n + j] = s / root;
        }
    }
    return 0;
}

static int chol_semidefinite(int n, const double *V, double *F)
{
    return chol_semidefinite_scaled(n, V, F, 0.0);
}

/* Solves F c = g by forward substitution; coordinates with a zero pivot
 * carry no variance and get c = 0. */
static void forward_solve(int n, const double *F, const double *g, double *c)
{
    for (int i = 0; i < n; i++) {
        double s = g[i];
        for (int k = 0; k < i; k++)
            s -= F[i * n + k] * c[k];
        c[i] = F[i * n + i] > 0.0 ? s / F[i * n + i] : 0.0;
    }
}

static int hermite_rule(int n, double **x, double **w)
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
     * cancel exactly in eval_elementwise: an invariant manifold of the
     * limit ODE then stays exactly invariant. */
    for (int i = 0; i < n; i++) {
        const int j = n - 1 - i;
        (*x)[i] = 0.5 * (nodes[i] - nodes[j]);
        (*w)[i] = 0.5 * (weights[i] + weights[j]) / total;
    }
    gsl_integration_fixed_free(ws);
    return 0;
}

static int polynomial_nodes(const aim_config *cfg)
{
    /* e_p e_q has degree 4D - 2 for a degree-D series; n nodes integrate
     * degree 2n - 1 exactly. */
    int n = 2 * cfg->hermite_degree;
    return n < 2 ? 2 : n;
}

static int generic_setup(aim_gauss *g, int npts, int symmetric);
static void release_rule(const double *yc);
static int thread_work(aim_gauss *g, int threads);
static int first_points(const aim_gauss *g);

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
    /* relu's kink defeats Gauss-Hermite (errors of order 1e-2 at 48
     * nodes); the quasi-random rule handles it. */
    g->elementwise = aim_outmap_is_elementwise(g->map) && rule == AIM_RULE_AUTO &&
                     cfg->activation != AIM_ACT_RELU;
    if (g->elementwise) {
        int poly = cfg->activation == AIM_ACT_HERMITE;
        g->n2 = cfg->quad_nodes ? cfg->quad_nodes
                                : (poly ? polynomial_nodes(cfg) : AUTO_NODES_2D);
        g->n4 = cfg->quad_nodes ? cfg->quad_nodes
                                : (poly ? polynomial_nodes(cfg) : AUTO_NODES_4D);
        if (g->n4 > MAX_NODES_4D)
            g->n4 = MAX_NODES_4D;
        if (hermite_rule(g->n2, &g->x2, &g->w2) || hermite_rule(g->n4, &g->x4, &g->w4))
            goto fail;
    } else {
        if (generic_setup(g, g->kernel_tol > 0.0 ? first_points(g) : cfg->qmc_points,
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
    free(g->x2);
    free(g->w2);
    free(g->x4);
    free(g->w4);
    release_rule(g->yc);
    free(g->pack);
    free(g->work);
    free(g->chunk_eyc);
    free(g->eyc);
    free(g->teacher_f);
    free(g);
}

const char *aim_gauss_error(const aim_gauss *g) { return g->error; }

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
 * p, r: means mu and lower factor F. Returns 0, or -1 when its covariance
 * is not positive semi-definite. */
static int pair_law(const aim_gauss *g, const aim_overlaps *q, int p, int r, double mu[4],
                    double F[16])
{
    const int ent[4] = {p, p, r, r}, mat[4] = {0, 1, 0, 1};
    double V[16];
    for (int x = 0; x < 4; x++) {
        mu[x] = g->C[ent[x]] * q->mean[mat[x]];
        for (int y = 0; y < 4; y++)
            V[x * 4 + y] = index_cov(g, q, ent[x], mat[x], ent[y], mat[y]);
    }
    return chol_semidefinite(4, V, F);
}

/* E[e_p e_r] for two different entries: a Gauss-Hermite product rule over
 * the active coordinates of their law (pair_law). Label noise is
 * independent across entries and drops out. */
static int pair_moment(aim_gauss *g, const aim_overlaps *q, int p, int r,
                       double *out)
{
    double F[16], mu[4];
    if (pair_law(g, q, p, r, mu, F))
        return -1;
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
    return chol_semidefinite(2, V, F);
}

/* The sums of the entry rule: E[e], E[e z0], E[e z1], E[e^2], E[sigma'^2],
 * E[(f - f*)^2]. */
enum { SUM_E, SUM_EZ0, SUM_EZ1, SUM_EE, SUM_DD, SUM_RR, SUMS };

/* The entry rule's sums for an entry of law mu, F (entry_law); with
 * risk_only the last alone (SUM_RR), summed in the same order as with all
 * of them, so that the risk is the same number bit for bit. The node
 * pairs (x_i, -x_i) of z0 are summed first, so that integrands odd in z0
 * cancel exactly. */
static void entry_sums(const aim_gauss *g, const double mu[2], const double F[4],
                       int risk_only, double acc[SUMS])
{
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

static int eval_elementwise(aim_gauss *g, const aim_overlaps *q)
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

/* The risk of eval_elementwise alone (the same number), without the pair
 * integrals: it refuses the same states, those where an entry's or a
 * weighted pair's law is not a covariance. */
static int risk_elementwise(const aim_gauss *g, const aim_overlaps *q, double *risk)
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
            double wo, wp, mu[4], F[16];
            pair_weights(g, p, s, &wo, &wp);
            if ((wo != 0.0 || wp != 0.0) && pair_law(g, q, p, s, mu, F))
                return -1;
        }
    *risk = r;
    return 0;
}

/* ---- generic (quasi-random) rule --------------------------------------- */

/* Latent coordinates: for k = 0, 1 the T(T+1)/2 entries (e <= f) of the
 * symmetric matrix Zs_k (off-diagonal variance 1, diagonal 2), then for
 * k = 0, 1 the T(T-1)/2 entries (e < f) of the antisymmetric Za_k. */
static void latent_matrices(int T, const double *z, double Z[4][MAXT2])
{
    int j = 0;
    for (int k = 0; k < 2; k++)
        for (int e = 0; e < T; e++)
            for (int f = e; f < T; f++, j++) {
                double v = e == f ? M_SQRT2 * z[j] : z[j];
                Z[k][e * T + f] = Z[k][f * T + e] = v;
            }
    for (int k = 2; k < 4; k++)
        for (int e = 0; e < T; e++) {
            Z[k][e * T + e] = 0.0;
            for (int f = e + 1; f < T; f++, j++) {
                Z[k][e * T + f] = z[j];
                Z[k][f * T + e] = -z[j];
            }
        }
}

/* out = L M L^T for T x T matrices */
static void congruence(int T, const double *L, const double *M, double *out)
{
    double tmp[MAXT2];
    for (int a = 0; a < T; a++)
        for (int f = 0; f < T; f++) {
            double s = 0.0;
            for (int e = 0; e <= a; e++)
                s += L[a * T + e] * M[e * T + f];
            tmp[a * T + f] = s;
        }
    for (int a = 0; a < T; a++)
        for (int b = 0; b < T; b++) {
            double s = 0.0;
            for (int f = 0; f <= b; f++)
                s += tmp[a * T + f] * L[b * T + f];
            out[a * T + b] = s;
        }
}

/* Fixed quasi-random standard normal points (npts x dim): the first dim
 * coordinates of the set of dimension whole. The point set
 * is used with its antithetic image (z, -z), which makes every odd moment
 * exact; it is then whitened so that its second moments are exactly the
 * identity, which makes the rule exact for the linear-in-index parts of
 * the integrands (the whole integrand for a linear output map). shift
 * (dim numbers in [0, 1)) rotates the unit cube first
 * (u -> frac(u + shift)): one randomised copy of the rule
 * (random_shifts). Into points; returns 0 or -1. */
static int qmc_points(int dim, int whole, int npts, const double *shift, double *points)
{
    /* GSL's Sobol generator stops at 40 dimensions; Halton goes on. Both
     * make coordinate j the same whatever the dimension, so the first dim
     * of a whole-dimensional set are a set of dim (chosen by whole). */
    const gsl_qrng_type *type = whole <= 40 ? gsl_qrng_sobol : gsl_qrng_halton;
    gsl_qrng *q = gsl_qrng_alloc(type, (unsigned)dim);
    double *cov = calloc((size_t)dim * (size_t)dim, sizeof(double));
    int rc = -1;
    if (!q || !cov)
        goto done;
    double u[4 * MAXT2];
    gsl_qrng_get(q, u); /* the first point has zero coordinates: skip it */
    for (int i = 0; i < npts; i++) {
        if (gsl_qrng_get(q, u) != 0)
            goto done;
        double *z = points + (size_t)i * dim;
        for (int j = 0; j < dim; j++) {
            double v = u[j] + shift[j];
            v -= floor(v);
            if (v <= 0.0) /* the quantile needs (0, 1) */
                v = 0.5 / npts;
            z[j] = v;
        }
    }
    aim_normal_quantiles(points, (size_t)npts * dim);
    /* second moments Z^T Z / npts (lower triangle), their Cholesky factor
     * K, and the whitened points Z K^-T */
    cblas_dsyrk(CblasRowMajor, CblasLower, CblasTrans, dim, npts, 1.0 / npts, points, dim,
                0.0, cov, dim);
    gsl_matrix_view K = gsl_matrix_view_array(cov, (size_t)dim, (size_t)dim);
    if (gsl_linalg_cholesky_decomp1(&K.matrix) != GSL_SUCCESS)
        goto done;
    cblas_dtrsm(CblasRowMajor, CblasRight, CblasLower, CblasTrans, CblasNonUnit, npts, dim,
                1.0, cov, dim, points, dim);
    rc = 0;
done:
    free(cov);
    if (q)
        gsl_qrng_free(q);
    return rc;
}

/* count random shifts of dim numbers in [0, 1) (count x dim, row-major)
 * from the generator seeded with seed: the same on every machine.
 * Returns 0 or -1. */
static int random_shifts(unsigned long seed, int count, int dim, double *shifts)
{
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    if (!rng)
        return -1;
    gsl_rng_set(rng, seed);
    for (int i = 0; i < count * dim; i++)
        shifts[i] = gsl_rng_uniform(rng);
    gsl_rng_free(rng);
    return 0;
}

/* The point set as the generic rule uses it: the packed entries of
 * Y_k = L Z_k L^T (k = 0..3) per point, as many as z has (nlat), into yc
 * (npts x nlat); they are linear in z, yc = Z g->pack. With uncorrelated
 * tokens (g->c_diagonal: L diagonal, its off-diagonal entries exact
 * zeros, and so are g->pack's) g->pack is diagonal and yc is Z scaled
 * column by column, in place: the numbers a dgemm by that diagonal matrix makes
 * (every product with a zero adds an exact zero), without its second
 * buffer and its pass over it. Else one dgemm, work: npts x nlat
 * numbers. Returns 0 or -1. */
static int qmc_rule(const aim_gauss *g, int npts, const double *shift, double *work,
                    double *yc)
{
    const int nlat = g->nlat;
    if (qmc_points(nlat, 2 * g->T2, npts, shift, g->c_diagonal ? yc : work))
        return -1;
    if (g->c_diagonal) {
        for (size_t i = 0; i < (size_t)npts; i++)
            for (int j = 0; j < nlat; j++)
                yc[i * nlat + j] *= g->pack[(size_t)j * nlat + j];
        return 0;
    }
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, npts, nlat, nlat, 1.0, work, nlat,
                g->pack, nlat, 0.0, yc, nlat);
    return 0;
}

/* Memory for a point set of n numbers, NULL when out of memory. A large
 * set is asked for on transparent huge pages where the kernel offers
 * them: a whole run writes tens of megabytes of fresh sets, and the page
 * faults of 4 KiB pages took about a sixth of the T = 4 example's run
 * (perf; 2 MiB pages cut that run's CPU time by about a tenth). */
#define HUGE_PAGE (1L << 21)
static double *set_memory(size_t n)
{
    const size_t bytes = sizeof(double) * n;
    void *mem = NULL;
    if (bytes < HUGE_PAGE)
        return malloc(bytes);
    if (posix_memalign(&mem, HUGE_PAGE, bytes) != 0)
        return NULL;
#ifdef MADV_HUGEPAGE
    madvise(mem, bytes, MADV_HUGEPAGE); /* advice: nothing to do if refused */
#endif
    return mem;
}

/* The point set of npts points (qmc_rule) made into yc (npts x nlat),
 * 0 or -1. */
static int fill_rule(const aim_gauss *g, int npts, const double *shift, double *yc)
{
    double *work = g->c_diagonal ? NULL : malloc(sizeof(double) * (size_t)npts * g->nlat);
    const int rc = (!g->c_diagonal && !work) || qmc_rule(g, npts, shift, work, yc) ? -1 : 0;
    free(work);
    return rc;
}

/* A new point set of npts points (qmc_rule), NULL on failure. */
static double *new_rule(const aim_gauss *g, int npts, const double *shift)
{
    double *yc = set_memory((size_t)npts * g->nlat);
    if (yc && fill_rule(g, npts, shift, yc)) {
        free(yc);
        yc = NULL;
    }
    return yc;
}

/* The point sets are the same for every engine of the same tokens, token
 * covariance (its Cholesky factor L) and point count, and making one
 * (npts x 2 T^2 normal quantiles, whitening, one dgemm) costs about ten
 * engine evaluations. The engines of one process share them: the runs of
 * a sweep, the orders of a compare, a truncated hierarchy's order M - 1
 * estimate. Each entry is the point set qmc_rule made for its key, so
 * that a shared set is bit for bit the one an engine would make; entries
 * no engine uses are kept (at most RULE_SLOTS entries in all, the least
 * recently used unused one replaced first, and at most MAX_STORED numbers
 * in the unused ones: ode.kernel_tol's sets can be that large). */
typedef struct {
    int T, npts, nlat;
    double L[MAXT2];
    double *yc; /* NULL: a free slot */
    int users;
    unsigned long used; /* when last handed out */
} rule_slot;
static rule_slot rule_slots[RULE_SLOTS];
static unsigned long rule_clock;
static pthread_mutex_t rule_lock = PTHREAD_MUTEX_INITIALIZER;

/* The rule of npts points for g (qmc_rule, shifted by g->shift): a
 * shared one of the same key, or a new one, shared if a slot is free or
 * unused. Release it with release_rule. NULL when out of memory. */
static const double *shared_rule(const aim_gauss *g, int npts)
{
    pthread_mutex_lock(&rule_lock);
    rule_slot *spare = NULL;
    for (int i = 0; i < RULE_SLOTS; i++) {
        rule_slot *r = &rule_slots[i];
        if (r->yc && r->T == g->T && r->npts == npts && r->nlat == g->nlat &&
            memcmp(r->L, g->L, sizeof(double) * (size_t)g->T2) == 0) {
            r->users++;
            r->used = ++rule_clock;
            pthread_mutex_unlock(&rule_lock);
            return r->yc;
        }
        if (!r->yc) { /* a free slot first, */
            if (!spare || spare->yc)
                spare = r;
        } else if (!r->users && (!spare || (spare->yc && r->used < spare->used))) {
            spare = r; /* else the least recently used unused one */
        }
    }
    /* made under the lock: another engine asking for the same set waits
     * for it instead of making it again */
    double *yc = new_rule(g, npts, g->shift);
    if (yc && spare) {
        free(spare->yc);
        *spare = (rule_slot){.T = g->T, .npts = npts, .nlat = g->nlat, .yc = yc, .users = 1,
                             .used = ++rule_clock};
        memcpy(spare->L, g->L, sizeof(double) * (size_t)g->T2);
    }
    pthread_mutex_unlock(&rule_lock);
    return yc;
}

/* The numbers held by the unused shared point sets. */
static long unused_numbers(void)
{
    long n = 0;
    for (int i = 0; i < RULE_SLOTS; i++)
        if (rule_slots[i].yc && !rule_slots[i].users)
            n += (long)rule_slots[i].npts * rule_slots[i].nlat;
    return n;
}

/* Gives back a point set from shared_rule (NULL: nothing). One in no slot
 * (made when every slot was in use) is freed. */
static void release_rule(const double *yc)
{
    if (!yc)
        return;
    pthread_mutex_lock(&rule_lock);
    int shared = 0;
    for (int i = 0; i < RULE_SLOTS; i++)
        if (rule_slots[i].yc == yc) {
            rule_slots[i].users--;
            shared = 1;
        }
    while (unused_numbers() > MAX_STORED) { /* the least recently used go */
        rule_slot *old = NULL;
        for (int i = 0; i < RULE_SLOTS; i++)
            if (rule_slots[i].yc && !rule_slots[i].users && (!old || rule_slots[i].used < old->used))
                old = &rule_slots[i];
        free(old->yc);
        *old = (rule_slot){0};
    }
    pthread_mutex_unlock(&rule_lock);
    if (!shared)
        free((double *)yc);
}

/* A kernel error estimate (kernel_spread: REPLICATES evaluations, each
 * on its own point set) is a function of the point set's key, the
 * integrand and the state: kept for the engines of the process that meet
 * the same (the orders of a compare start from the same state), at most
 * ERROR_SLOTS, the oldest replaced first. */
typedef struct {
    int T, npts, nlat;
    double L[MAXT2];
    double integrand[AIM_MAX_HERMITE + 4 + MAXT2];
    aim_overlaps state;
} error_key;
typedef struct {
    error_key key;
    double err;
    int set;
} error_slot;
static error_slot error_slots[ERROR_SLOTS];
static int error_next;

static void kernel_error_key(const aim_gauss *g, const aim_overlaps *q, error_key *k)
{
    memset(k, 0, sizeof *k); /* the padding too: keys are compared by memcmp */
    k->T = g->T;
    k->npts = g->npts;
    k->nlat = g->nlat;
    memcpy(k->L, g->L, sizeof k->L);
    memcpy(k->integrand, g->integrand, sizeof k->integrand);
    k->state = *q;
}

/* 1 and the cached estimate in *err when there is one for k, else 0. */
static int cached_kernel_error(const error_key *k, double *err)
{
    pthread_mutex_lock(&rule_lock);
    int found = 0;
    for (int i = 0; i < ERROR_SLOTS && !found; i++)
        if (error_slots[i].set && memcmp(&error_slots[i].key, k, sizeof *k) == 0) {
            *err = error_slots[i].err;
            found = 1;
        }
    pthread_mutex_unlock(&rule_lock);
    return found;
}

static void keep_kernel_error(const error_key *k, double err)
{
    pthread_mutex_lock(&rule_lock);
    error_slots[error_next] = (error_slot){.key = *k, .err = err, .set = 1};
    error_next = (error_next + 1) % ERROR_SLOTS;
    pthread_mutex_unlock(&rule_lock);
}

static void clear_kernel_errors(void)
{
    pthread_mutex_lock(&rule_lock);
    memset(error_slots, 0, sizeof error_slots);
    error_next = 0;
    pthread_mutex_unlock(&rule_lock);
}

void aim_gauss_cache_clear(void)
{
    pthread_mutex_lock(&rule_lock);
    for (int i = 0; i < RULE_SLOTS; i++)
        if (rule_slots[i].yc && !rule_slots[i].users) {
            free(rule_slots[i].yc);
            rule_slots[i] = (rule_slot){0};
        }
    pthread_mutex_unlock(&rule_lock);
    clear_kernel_errors();
}

/* g->pack: row j is the packed Y of the unit latent vector e_j, j <
 * nlat (the packing keeps symmetric and antisymmetric coordinates apart,
 * so the symmetric block alone serves a symmetric engine). */
static int packing_matrix(aim_gauss *g)
{
    const int T = g->T, nlat = g->nlat;
    g->pack = calloc((size_t)nlat * nlat, sizeof(double));
    if (!g->pack)
        return -1;
    double unit[4 * MAXT2] = {0}, Z[4][MAXT2], Y[4][MAXT2];
    for (int j = 0; j < nlat; j++) {
        unit[j] = 1.0;
        latent_matrices(T, unit, Z);
        unit[j] = 0.0;
        for (int k = 0; k < 4; k++)
            congruence(T, g->L, Z[k], Y[k]);
        double *y = g->pack + (size_t)j * nlat;
        int i = 0;
        for (int k = 0; k < 2; k++)
            for (int e = 0; e < T; e++)
                for (int f = e; f < T; f++)
                    y[i++] = Y[k][e * T + f];
        for (int k = 2; k < 4 && nlat > i; k++) /* symmetric ones only: none */
            for (int e = 0; e < T; e++)
                for (int f = e + 1; f < T; f++)
                    y[i++] = Y[k][e * T + f];
    }
    return 0;
}

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
    if (!g->eyc || !g->chunk_eyc || thread_work(g, 1) ||
        random_shifts(RULE_SEED, 1, 2 * T2, g->shift))
        return -1;
    if (packing_matrix(g))
        return -1;
    g->yc = shared_rule(g, npts);
    return g->yc ? 0 : -1;
}

/* out = A B for T x T matrices (per point, where a BLAS call would cost
 * more than the product). */
static void small_product(int T, const double *A, const double *B, double *out)
{
    for (int a = 0; a < T; a++)
        for (int d = 0; d < T; d++) {
            double t = 0.0;
            for (int c = 0; c < T; c++)
                t += A[a * T + c] * B[c * T + d];
            out[a * T + d] = t;
        }
}

/* The noise kernels' error part at one point, <E, C E C> and
 * <E, C E^T C> = <E, (C E C)^T>: O(T^3) (O(T^2) for a diagonal C) instead
 * of the sum over all T^4 pairs of entries. */
static void error_kernels(const aim_gauss *g, const double *e, double *ko, double *kp)
{
    const int T = g->T;
    const double *C = g->C;
    double so = 0.0, sp = 0.0;
    if (g->c_diagonal) {
        for (int a = 0; a < T; a++)
            for (int b = 0; b < T; b++) {
                const double w = C[a * T + a] * C[b * T + b] * e[a * T + b];
                so += w * e[a * T + b];
                sp += w * e[b * T + a];
            }
    } else {
        double ec[MAXT2], cec[MAXT2];
        small_product(T, e, C, ec);
        small_product(T, C, ec, cec);
        for (int a = 0; a < T; a++)
            for (int b = 0; b < T; b++) {
                so += e[a * T + b] * cec[a * T + b];
                sp += e[a * T + b] * cec[b * T + a];
            }
    }
    *ko = so;
    *kp = sp;
}

/* What one point set gives at one state (the rule's sums, weighted). */
typedef struct {
    int risk_only; /* 1: the risk alone */
    double risk, k_omega, k_psi;
    double err[MAXT2];
    double eyd[4][MAXT2]; /* E[e_p Y_k,p] */
    /* T^2 x nlat: every E[e_p yc_j] (one dgemm per block), which the
     * kernel error estimate compares across its copies of the rule; NULL:
     * not wanted */
    double *eyc;
} qmc_estimate;

/* The engine's threads (aim_gauss_set_threads): process-wide, like a
 * BLAS's thread count, since the engines are made deep inside the models
 * and the thread count changes no result. */
static int engine_threads = 1;
/* Whether this process has run a team of threads, and whether it is a
 * child forked after one (aim_gauss_after_fork): one thread from then on. */
static int team_started, team_lost;

int aim_gauss_set_threads(int threads)
{
    if (threads < 1 || threads > AIM_GAUSS_MAX_THREADS)
        return -1;
    engine_threads = threads;
    return 0;
}

int aim_gauss_threads(void)
{
#ifdef _OPENMP
    return team_lost ? 1 : engine_threads;
#else
    return 1;
#endif
}

void aim_gauss_team_started(void)
{
    OMP(omp atomic write)
    team_started = 1;
}

int aim_gauss_after_fork(void)
{
    /* GNU libgomp keeps its thread pool across a fork, though its threads
     * are not there in the child: the child's next team would wait for
     * them for ever */
    team_lost = team_started;
    return team_lost;
}

/* g->work for threads threads (kept for the next evaluation). Returns 0,
 * or -1 when out of memory (the work space as it was). */
static int thread_work(aim_gauss *g, int threads)
{
    if (g->work_threads >= threads)
        return 0;
    const size_t per = (size_t)QMC_BLOCK * g->T2;
    double *work = realloc(g->work, sizeof(double) * per * (size_t)threads);
    if (!work)
        return -1;
    g->work = work;
    g->work_threads = threads;
    return 0;
}

#define LANES AIM_OUTMAP_LANES

/* error_kernels for LANES points (e interleaved) into ko[l], kp[l]: for
 * a diagonal C the same operations in the same order, point by point;
 * else error_kernels itself per point. */
AIM_VECTOR_CLONES
static void error_kernels_lanes(const aim_gauss *g, const double *e, double ko[LANES],
                                double kp[LANES])
{
    const int T = g->T, T2 = g->T2;
    const double *C = g->C;
    if (!g->c_diagonal) {
        for (int l = 0; l < LANES; l++) {
            double one[MAXT2];
            for (int p = 0; p < T2; p++)
                one[p] = e[p * LANES + l];
            error_kernels(g, one, &ko[l], &kp[l]);
        }
        return;
    }
    double so[LANES] = {0}, sp[LANES] = {0};
    for (int a = 0; a < T; a++)
        for (int b = 0; b < T; b++) {
            const double c = C[a * T + a] * C[b * T + b];
            const double *eab = e + (a * T + b) * LANES, *eba = e + (b * T + a) * LANES;
            for (int l = 0; l < LANES; l++) {
                const double w = c * eab[l];
                so[l] += w * eab[l];
                sp[l] += w * eba[l];
            }
        }
    for (int l = 0; l < LANES; l++) {
        ko[l] = so[l];
        kp[l] = sp[l];
    }
}

/* 1 when the antisymmetric factor Fa (state_factors) is not zero: the
 * antisymmetric latent coordinates carry variance. */
static int has_antisymmetric(const double Fa[4])
{
    return Fa[0] != 0.0 || Fa[2] != 0.0 || Fa[3] != 0.0;
}

/* One block of nb points (y: nb x nlat) at the state of index means mu
 * and factors Fs, Fa, added to the unweighted sums s; unless
 * s->risk_only, also the kernels, E[e], E[e_p Y_k,p] and, when s->eyc is
 * set, the block's E[e Y] part into s->eyc (T^2 x nlat, overwritten for
 * the first block of a chunk; diff its work space). Every point z is used
 * with -z: h = mu +- D. The points go through the output map LANES at a
 * time (aim_outmap_forward_lanes), and each lane keeps its own sums,
 * added in lane order at the end of the block: the order of every sum is
 * fixed by the point count alone. teacher (NULL: none): the teacher's
 * outputs at the block's points (g->teacher_f from the block's first
 * point on), read, or made and written there when make_teacher is 1. */
AIM_VECTOR_CLONES
static void block_sums(const aim_gauss *g, const double *y0, int nb, double mu[2][MAXT2],
                       const double Fs[4], const double Fa[4], int first, double *diff,
                       double *teacher, int make_teacher, qmc_estimate *s)
{
    const int T2 = g->T2, nlat = g->nlat, nsym = g->nsym, nanti = g->nanti;
    const int all = !s->risk_only;
    /* Fa = 0 (Psi = Omega: a tied student and teacher): the antisymmetric
     * latent coordinates carry no variance, and E[e_p Y_k,p] of k = 2, 3
     * meets a zero coefficient (aim_gauss_error_index) */
    const int anti = has_antisymmetric(Fa);
    const int group_size = 2 * T2 * LANES;
    /* interleaved: entry p of lane l at p * LANES + l */
    double D[2][MAXT2 * LANES], f[2][MAXT2 * LANES], fs[2][MAXT2 * LANES];
    double deriv[2][MAXT2 * LANES], r[MAXT2 * LANES], e[2][MAXT2 * LANES];
    double yv[4][MAXT2 * LANES]; /* Y_k,p at the points */
    /* the lanes' sums */
    double risk[LANES] = {0}, ko[LANES] = {0}, kp[LANES] = {0};
    double err[MAXT2 * LANES] = {0}, eyd[4][MAXT2 * LANES] = {{0}};
    for (int b0 = 0; b0 < nb; b0 += LANES) {
        const int lanes = nb - b0 < LANES ? nb - b0 : LANES;
        /* the teacher's outputs: kept ones read in place, else made (into
         * the keeping place when they are to be kept) */
        double *kept = teacher ? teacher + (size_t)(b0 / LANES) * group_size : NULL;
        double *ts[2] = {kept ? kept : fs[0], kept ? kept + T2 * LANES : fs[1]};
        const int make = !kept || make_teacher;
        for (int l = 0; l < LANES; l++) {
            /* a lane past the block's end repeats its first point, and
             * its sums are left out */
            const double *y = y0 + (size_t)(b0 + (l < lanes ? l : 0)) * nlat;
            /* the student (index 0) is row 1 of the teacher-first
             * factors, the teacher row 0 */
            if (!anti) { /* once per symmetric entry: the same numbers */
                double ds[MAXT2], dt[MAXT2];
                for (int j = 0; j < nsym; j++) {
                    ds[j] = Fs[2] * y[j] + Fs[3] * y[nsym + j];
                    dt[j] = make ? Fs[0] * y[j] : 0.0; /* the teacher's, when made */
                }
                for (int p = 0; p < T2; p++) {
                    const int j = g->sym_at[p];
                    D[0][p * LANES + l] = ds[j];
                    D[1][p * LANES + l] = dt[j];
                    yv[0][p * LANES + l] = y[j];
                    yv[1][p * LANES + l] = y[nsym + j];
                }
                continue;
            }
            for (int p = 0; p < T2; p++) {
                const double ys0 = y[g->sym_at[p]], ys1 = y[nsym + g->sym_at[p]];
                double ya0 = 0.0, ya1 = 0.0;
                if (g->anti_sign[p] != 0.0) {
                    ya0 = g->anti_sign[p] * y[2 * nsym + g->anti_at[p]];
                    ya1 = g->anti_sign[p] * y[2 * nsym + nanti + g->anti_at[p]];
                }
                D[0][p * LANES + l] = Fs[2] * ys0 + Fs[3] * ys1 + Fa[2] * ya0 + Fa[3] * ya1;
                D[1][p * LANES + l] = Fs[0] * ys0 + Fa[0] * ya0;
                yv[0][p * LANES + l] = ys0;
                yv[1][p * LANES + l] = ys1;
                yv[2][p * LANES + l] = ya0;
                yv[3][p * LANES + l] = ya1;
            }
        }
        const double keep[LANES] = {1.0, lanes > 1, lanes > 2, lanes > 3};
        /* the points z (index 0) and -z (index 1) */
        if (make)
            aim_outmap_forward_lanes(g->map, mu[1], D[1], ts[0], ts[1], NULL, NULL);
        aim_outmap_forward_lanes(g->map, mu[0], D[0], f[0], f[1], all ? deriv[0] : NULL,
                                 all ? deriv[1] : NULL);
        for (int side = 0; side < 2; side++) {
            double rr[LANES] = {0};
            for (int c = 0; c < T2; c++)
                for (int l = 0; l < LANES; l++) {
                    const double rc = f[side][c * LANES + l] - ts[side][c * LANES + l];
                    r[c * LANES + l] = rc;
                    rr[l] += rc * rc;
                }
            for (int l = 0; l < LANES; l++)
                risk[l] += keep[l] * 0.5 * rr[l];
            if (!all)
                continue;
            aim_outmap_pullback_lanes(g->map, f[side], deriv[side], r, e[side]);
            if (lanes < LANES) /* the repeated points' errors out of every sum */
                for (int p = 0; p < T2; p++)
                    for (int l = lanes; l < LANES; l++)
                        e[side][p * LANES + l] = 0.0;
            double ko_pt[LANES], kp_pt[LANES];
            error_kernels_lanes(g, e[side], ko_pt, kp_pt);
            if (g->noise > 0.0) /* J^T J carries the label noise */
                for (int l = 0; l < lanes; l++) {
                    double fl[MAXT2], dl[MAXT2], go, gp;
                    for (int p = 0; p < T2; p++) {
                        fl[p] = f[side][p * LANES + l];
                        dl[p] = deriv[side][p * LANES + l];
                    }
                    aim_outmap_gram(g->map, fl, dl, g->C, &go, &gp);
                    ko_pt[l] += g->noise * go;
                    kp_pt[l] += g->noise * gp;
                }
            for (int l = 0; l < LANES; l++) {
                ko[l] += ko_pt[l];
                kp[l] += kp_pt[l];
            }
            for (int i = 0; i < T2 * LANES; i++)
                err[i] += e[side][i];
        }
        if (!all)
            continue;
        /* E[e_p Y(z)] over z and -z: (e(z) - e(-z)) Y(z), since Y is
         * linear in z */
        for (int k = 0; k < (anti ? 4 : 2); k++)
            for (int i = 0; i < T2 * LANES; i++)
                eyd[k][i] += (e[0][i] - e[1][i]) * yv[k][i];
        if (s->eyc)
            for (int l = 0; l < lanes; l++)
                for (int p = 0; p < T2; p++)
                    diff[(size_t)(b0 + l) * T2 + p] = e[0][p * LANES + l] - e[1][p * LANES + l];
    }
    for (int l = 0; l < LANES; l++)
        s->risk += risk[l];
    if (!all)
        return;
    for (int l = 0; l < LANES; l++) {
        s->k_omega += ko[l];
        s->k_psi += kp[l];
        for (int p = 0; p < T2; p++) {
            s->err[p] += err[p * LANES + l];
            for (int k = 0; k < 4; k++)
                s->eyd[k][p] += eyd[k][p * LANES + l];
        }
    }
    /* every E[e_p yc_j], for the block diff^T y */
    if (s->eyc)
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T2, nlat, nb, 1.0, diff, T2, y0,
                    nlat, first ? 0.0 : 1.0, s->eyc, nlat);
}

/* g->teacher_f for a sum over the point set yc at q (factors Fs, Fa),
 * with *make 1 when it is to be made (the key has changed), or NULL:
 * not g's own rule (a copy of the kernel error estimate), or too large
 * to keep, or out of memory (block_sums then makes the teacher's outputs
 * as it goes, the same numbers). */
static double *kept_teacher(aim_gauss *g, const double *yc, int npts, const aim_overlaps *q,
                            const double Fs[4], const double Fa[4], int *make)
{
    const size_t numbers = (size_t)((npts + LANES - 1) / LANES) * 2 * g->T2 * LANES;
    if (yc != g->yc || numbers > TEACHER_KEPT_MAX)
        return NULL;
    const double key[3] = {q->mean[1], Fs[0], Fa[0]};
    if (g->teacher_valid && g->teacher_yc == yc && memcmp(key, g->teacher_key, sizeof key) == 0)
        return g->teacher_f;
    if (g->teacher_yc != yc) {
        free(g->teacher_f);
        g->teacher_f = set_memory(numbers);
        g->teacher_yc = g->teacher_f ? yc : NULL;
    }
    g->teacher_valid = 0;
    memcpy(g->teacher_key, key, sizeof key);
    *make = g->teacher_f != NULL;
    return g->teacher_f;
}

/* The generic rule over the point set yc (npts x nlat, qmc_rule) at the
 * state q with factors Fs, Fa (state_factors), in chunks of blocks on
 * the engine's threads (see MAX_CHUNKS: the same numbers on any number
 * of threads). With out->risk_only only the risk is computed (the
 * output map forward, no pull-back, kernels or E[e Y]), summed in the
 * same order as with everything, so that it is the same number bit for
 * bit; every E[e_p yc_j] only when out->eyc is set. Returns 0. */
static int qmc_sum(aim_gauss *g, const double *yc, int npts, const aim_overlaps *q,
                   const double Fs[4], const double Fa[4], qmc_estimate *out)
{
    const int T2 = g->T2, nlat = g->nlat, all = !out->risk_only, full = all && out->eyc;
    const int blocks = (npts + QMC_BLOCK - 1) / QMC_BLOCK;
    const int chunks = blocks < MAX_CHUNKS ? blocks : MAX_CHUNKS;
    int threads = aim_gauss_threads() < chunks ? aim_gauss_threads() : chunks;
    /* short of memory for more, the threads there is work space for (the
     * same numbers) */
    if (thread_work(g, threads))
        threads = g->work_threads;
    double mu[2][MAXT2];
    for (int i = 0; i < 2; i++)
        for (int p = 0; p < T2; p++)
            mu[i][p] = g->C[p] * q->mean[i];
    int make_teacher = 0;
    double *teacher = kept_teacher(g, yc, npts, q, Fs, Fa, &make_teacher);
    qmc_estimate part[MAX_CHUNKS];
    if (threads > 1)
        aim_gauss_team_started();
    OMP(omp parallel num_threads(threads) if (threads > 1))
    {
#ifdef _OPENMP
        double *diff = g->work + (size_t)omp_get_thread_num() * QMC_BLOCK * T2;
#else
        double *diff = g->work;
#endif
        OMP(omp for schedule(dynamic, 1))
        for (int c = 0; c < chunks; c++) {
            qmc_estimate *s = &part[c];
            *s = (qmc_estimate){.risk_only = !all,
                                .eyc = full ? g->chunk_eyc + (size_t)c * T2 * nlat : NULL};
            const int last = (int)((long)(c + 1) * blocks / chunks);
            for (int blk = (int)((long)c * blocks / chunks); blk < last; blk++) {
                const int start = blk * QMC_BLOCK;
                const int nb = npts - start < QMC_BLOCK ? npts - start : QMC_BLOCK;
                block_sums(g, yc + (size_t)start * nlat, nb, mu, Fs, Fa,
                           blk == (int)((long)c * blocks / chunks), diff,
                           teacher ? teacher + (size_t)(start / LANES) * 2 * T2 * LANES : NULL,
                           make_teacher, s);
            }
        }
    }
    if (make_teacher)
        g->teacher_valid = 1;
    double risk = 0, ko = 0, kp = 0, err[MAXT2] = {0}, eyd[4][MAXT2] = {{0}};
    if (full)
        memset(out->eyc, 0, sizeof(double) * (size_t)T2 * nlat);
    for (int c = 0; c < chunks; c++) {
        risk += part[c].risk;
        if (!all)
            continue;
        ko += part[c].k_omega;
        kp += part[c].k_psi;
        for (int p = 0; p < T2; p++)
            err[p] += part[c].err[p];
        for (int k = 0; k < 4; k++)
            for (int p = 0; p < T2; p++)
                eyd[k][p] += part[c].eyd[k][p];
        for (int i = 0; full && i < T2 * nlat; i++)
            out->eyc[i] += part[c].eyc[i];
    }
    const double weight = 1.0 / (2.0 * npts);
    out->risk = risk * weight;
    if (!all)
        return 0;
    out->k_omega = ko * weight;
    out->k_psi = kp * weight;
    for (int p = 0; p < T2; p++)
        out->err[p] = err[p] * weight;
    for (int k = 0; k < 4; k++)
        for (int p = 0; p < T2; p++)
            out->eyd[k][p] = eyd[k][p] * weight;
    for (int i = 0; full && i < T2 * nlat; i++)
        out->eyc[i] *= weight;
    return 0;
}

/* The state of a kernel error estimate: its factors (state_factors) and
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
    double *yc = set_memory((size_t)npts * nlat);
    double shifts[REPLICATES * 4 * MAXT2]; /* rows of 2 T^2, the first nlat used */
    int rc = -1;
    if (!vals || !eyc || !yc || random_shifts(REPLICATE_SEED, REPLICATES, 2 * T2, shifts))
        goto done;
    for (int r = 0; r < REPLICATES; r++) {
        if (fill_rule(g, npts, shifts + (size_t)r * 2 * T2, yc))
            goto done;
        for (int i = 0; i < nstates; i++) {
            qmc_estimate est = {.eyc = eyc};
            if (qmc_sum(g, yc, npts, st[i].q, st[i].Fs, st[i].Fa, &est))
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
 * the 64 T^2 that whitening needs (config.c). */
static int first_points(const aim_gauss *g)
{
    int n = TOL_FIRST_POINTS;
    while (n < 64 * g->T2)
        n *= 4;
    return n;
}

/* The factors of the symmetric and antisymmetric parts of the latent
 * law at q (2 x 2, lower, row-major), with the teacher first: the
 * teacher's index is F_00 times the first latent coordinates, which does
 * not involve the student, so that its outputs at the rule's points stay
 * the same while the student moves (g->teacher_f). Returns 0, or -1 when
 * q is not a valid covariance. */
static int state_factors(const aim_overlaps *q, double Fs[4], double Fa[4])
{
    double Vs[4], Va[4];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) { /* index 0 the teacher, 1 the student */
            Vs[i * 2 + j] = 0.5 * (q->omega[1 - i][1 - j] + q->psi[1 - i][1 - j]);
            Va[i * 2 + j] = 0.5 * (q->omega[1 - i][1 - j] - q->psi[1 - i][1 - j]);
        }
    const double scale = fmax(fabs(q->omega[0][0]), fabs(q->omega[1][1]));
    return chol_semidefinite_scaled(2, Vs, Fs, scale) ||
                   chol_semidefinite_scaled(2, Va, Fa, scale)
               ? -1
               : 0;
}

/* state_factors for g: a symmetric engine (g->nlat < 2 T^2) has no
 * antisymmetric coordinates, so a state whose antisymmetric part is not
 * zero (beyond round-off: chol_semidefinite_scaled) is refused. */
static int engine_factors(const aim_gauss *g, const aim_overlaps *q, double Fs[4], double Fa[4])
{
    if (state_factors(q, Fs, Fa))
        return -1;
    return g->nlat < 2 * g->T2 && has_antisymmetric(Fa) ? -1 : 0;
}

/* ode.kernel_tol at the first state evaluated (est the unshifted
 * estimate there at the current point count): 4 times the points until
 * the estimated error is at most kernel_tol, or the point set would pass
 * MAX_STORED numbers; est then recomputed, the estimate kept in
 * g->kernel_err. The point set stays fixed from here on, so that the
 * right-hand side stays a smooth function of the state. */
static int choose_points(aim_gauss *g, const aim_overlaps *q, qmc_estimate *est)
{
    spread_state st = {.q = q, .ref = *est};
    memcpy(st.Fs, g->Fs, sizeof st.Fs);
    memcpy(st.Fa, g->Fa, sizeof st.Fa);
    double err;
    if (kernel_spread(g, g->npts, 1, &st, &err))
        return -1;
    while (err > g->kernel_tol && !points_capped(g->T, g->npts)) {
        const double *yc = shared_rule(g, 4 * g->npts);
        if (!yc)
            return -1;
        release_rule(g->yc);
        g->yc = yc;
        g->npts *= 4;
        if (qmc_sum(g, g->yc, g->npts, q, g->Fs, g->Fa, est))
            return -1;
        st.ref = *est;
        if (kernel_spread(g, g->npts, 1, &st, &err))
            return -1;
    }
    g->kernel_err = err;
    return 0;
}

static int eval_generic(aim_gauss *g, const aim_overlaps *q)
{
    if (engine_factors(g, q, g->Fs, g->Fa))
        return -1;
    /* every E[e_p yc_j] at the first state: the kernel error estimate
     * compares them */
    qmc_estimate est = {.eyc = g->have_first ? NULL : g->eyc};
    if (qmc_sum(g, g->yc, g->npts, q, g->Fs, g->Fa, &est))
        return -1;
    if (!g->have_first) {
        g->first = *q;
        g->have_first = 1;
        if (g->kernel_tol > 0.0 && choose_points(g, q, &est))
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
    if (g->elementwise ? eval_elementwise(g, q) : eval_generic(g, q))
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
    if (g->elementwise ? risk_elementwise(g, q, risk)
                       : engine_factors(g, q, Fs, Fa) ||
                             qmc_sum(g, g->yc, g->npts, q, Fs, Fa, &est))
        return refuse_state(g, q);
    if (!g->elementwise)
        *risk = est.risk;
    if (!isfinite(*risk)) {
        snprintf(g->error, sizeof g->error, "non-finite Gaussian expectation");
        return -1;
    }
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
        kernel_error_key(g, q[i], &key[i]);
        if (cached_kernel_error(&key[i], &err[i]))
            continue;
        spread_state *s = &st[todo];
        *s = (spread_state){.q = q[i],
                            .ref = {.eyc = malloc(sizeof(double) * (size_t)g->T2 * g->nlat)}};
        made[todo++] = i;
        rc = rc || !s->ref.eyc || engine_factors(g, q[i], s->Fs, s->Fa) ||
             qmc_sum(g, g->yc, g->npts, q[i], s->Fs, s->Fa, &s->ref);
    }
    double spread[2];
    if (todo > 0 && !rc)
        rc = kernel_spread(g, g->npts, todo, st, spread);
    for (int k = 0; k < todo; k++) {
        free(st[k].ref.eyc);
        err[made[k]] = rc ? NAN : spread[k];
        if (!rc)
            keep_kernel_error(&key[made[k]], spread[k]);
    }
    return rc ? -1 : 0;
}

double aim_gauss_risk(const aim_gauss *g) { return g->risk; }
int aim_gauss_points(const aim_gauss *g) { return g->elementwise ? 0 : g->npts; }
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
            forward_solve(2, g->F2[p], cov, coef);
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
    forward_solve(2, g->Fs, gs, cs);
    forward_solve(2, g->Fa, ga, ca);
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
