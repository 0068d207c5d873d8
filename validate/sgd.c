/* aim_sgd: online SGD for a direct student (theory/model.md sec. 1-5), with
 * the exact block unrolling of sec. 5; creation, data and the pieces
 * shared with the tied and the untied student, whose block steps are in
 * sgd_tied.c and sgd_untied.c (state and shared helpers:
 * sgd_internal.h).
 *
 * Derivation of the blocked recursion
 * -----------------------------------
 * One step on sample X (T x d, rows x_a) with errors E (T x T, e_ab =
 * dl/dh_ab; symmetrised (E + E^T)/2 for a symmetric student) is
 *     S <- a S + D,   a = 1 - eta gamma / d^2,
 *     D = g (X^T E X - c t I),   g = -eta / d^{3/2},   t = tr(E C)
 * (G = (X^T E X - c t I)/sqrt d, since sum_ab e_ab x_a x_b^T = X^T E X).
 * In a block of b steps from S_0, by induction
 *     S_k = a^k S_0 + sum_{j<k} a^{k-1-j} D_j .
 * The index map h_k(S) = (X_k S X_k^T - c C Tr S)/sqrt d is linear in S,
 * so with the Gram blocks K_kj = X_k X_j^T (T x T):
 *     h_k(S_k) = a^k (X_k S_0 X_k^T - c C Tr S_0)/sqrt d
 *              + sum_{j<k} a^{k-1-j} h_k(D_j),
 *     h_k(D_j) = -(eta/d^2) [ K_kj E_j K_kj^T
 *                             - c ( t_j (K_kk - d C) + u_j C ) ],
 * u_j = tr(E_j K_jj) = Tr(X_j^T E_j X_j) (the identity term of D_j gives
 * -c t_j K_kk inside X_k D_j X_k^T and -c t_j d inside Tr D_j; c^2 = c).
 * The block start products P = X S_0, Q = X S* (X = all b T tokens of the
 * block) are two dgemms; K = X X^T one dsyrk. The block's update is
 *     S_b = a^b S_0 + g (X^T F X - c tau I),
 *     F = blockdiag(a^{b-1-j} E_j),  tau = sum_j a^{b-1-j} t_j,
 * one rank-(b T) dgemm (beta = a^b) plus a diagonal shift.
 *
 * Blow-up check without a copy of S: with M = X^T F X, before touching S
 *     ||S_b||_F^2 = a^{2b} ||S_0||^2 + 2 a^b g (<S_0, M> - c tau Tr S_0)
 *                 + g^2 (||M||^2 - 2 c tau Tr M + c tau^2 d),
 *     <S_0, M> = sum_j <F_j, X_j S_0 X_j^T>,
 *     ||M||^2  = sum_{j,l} tr(F_j^T K_jl F_l K_lj),  Tr M = sum_j tr(F_j K_jj),
 *     Tr S_b   = a^b Tr S_0 + g (Tr M - c tau d),
 * all from T x T blocks already computed (O(b^2 T^4) per block). The
 * block is applied only when the indices and errors are finite, the
 * predicted Omega(S,S) = ||S_b||^2/d is finite and <= cfg->blowup and, in
 * raw centring, |Tr S_b|/sqrt d <= cfg->blowup (finite Frobenius norm
 * means finite entries; |Psi| <= Omega and |Omega(S,S*)| <= sqrt(Omega
 * Omega*) are then bounded too). ||S_0||^2 is computed exactly at each
 * aim_sgd_advance call and carried through the blocks by this formula.
 * Within a block, |x_a^T S x_b| <= ||S||_F |x_a| |x_b| and |Tr S| <=
 * sqrt(d) ||S||_F bound the indices of a state with Omega <= blowup:
 *     |h_ab| <= sqrt(blowup) (|x_a| |x_b| + c |C_ab| sqrt d),
 * |x_a|^2 from K. A step whose student index breaks this bound (or is
 * NaN) is a blow-up inside the block, reported before the output map sees
 * the index (GSL's Hermite functions abort on overflow).
 *
 * Random numbers: the streams of src/draw.h: teacher, student (the
 * initial matrices are drawn there), data, and the held-out samples that
 * measure the risk (validate/holdout.c; a stream of its own, so that the
 * training data, and every trajectory, do not depend on it). Per step the
 * data stream draws the T x d token matrix Z (row-major) and then the
 * T^2 label noises, so the stream does not depend on the block size.
 * aim_sgd_clone(sgd, data_seed) draws the data stream of
 * aim_sgd_create(cfg, d, data_seed). The GSL error handler is switched
 * off around the Cholesky factorisation only (not thread-safe: create
 * seeds from one thread).
 *
 * T x T products are plain loops (T <= 8); every product involving d is
 * a CBLAS call. A symmetric student is updated with dgemm, so it stays
 * symmetric up to round-off only (the antisymmetric part does not grow).
 */
#include "sgd.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>
/* OpenBLAS's cblas.h and GSL's gsl_cblas.h declare the same enums: keep
 * OpenBLAS's and skip GSL's (gsl_blas_types.h only needs the enum names). */
#define __GSL_CBLAS_H__
#include <gsl/gsl_errno.h>
#include <gsl/gsl_linalg.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "draw.h"
#include "outmap.h"
#include "sgd_internal.h"

static double trace_of(const double *A, int d)
{
    double t = 0.0;
    for (int i = 0; i < d; i++)
        t += A[(size_t)i * d + i];
    return t;
}

/* Tr(A B^T) and Tr(A B) for d x d row-major A, B. */
static double tr_abt(const double *A, const double *B, int d)
{
    return cblas_ddot(d * d, A, 1, B, 1);
}

static double tr_ab(const double *A, const double *B, int d)
{
    double t = 0.0;
    for (int p = 0; p < d; p++)
        t += cblas_ddot(d, A + (size_t)p * d, 1, B + p, d);
    return t;
}

void aim_sgd_i_outer(const double *A, int d, int p, double *S)
{
    aim_draw_outer(A, d, p, S);
}

static void free_buffers(aim_sgd *s)
{
    free(s->X); free(s->P); free(s->Pv); free(s->Q); free(s->Y);
    free(s->Rv); free(s->K); free(s->xi); free(s->HR); free(s->E);
    free(s->tE); free(s->uE); free(s->apow); free(s->zw); free(s->jac);
    free(s->Ut); free(s->Kw);
}

void aim_sgd_free(aim_sgd *s)
{
    if (!s)
        return;
    free(s->S);
    free(s->W);
    free(s->U);
    free(s->V);
    free(s->St);
    free_buffers(s);
    aim_outmap_free(s->map);
    gsl_rng_free(s->rdata);
    free(s);
}

/* Everything but the matrices' contents and the data generator. */
static aim_sgd *alloc_common(const aim_config *cfg, int d)
{
    if (cfg->student.decomposition != cfg->decomposition) {
        fprintf(stderr, "aim_sgd: the student's decomposition differs from "
                        "the model's\n");
        return NULL;
    }
    const int tied = cfg->decomposition == AIM_TIED;
    const int untied = cfg->decomposition == AIM_UNTIED;
    if (tied && cfg->centring != AIM_CENTRED) {
        fprintf(stderr, "aim_sgd: a tied student needs centred indices "
                        "(theory/model.md sec. 2)\n");
        return NULL;
    }
    if (cfg->tokens < 1 || cfg->tokens > AIM_MAX_TOKENS) {
        fprintf(stderr, "aim_sgd: tokens = %d out of range 1..%d\n",
                cfg->tokens, AIM_MAX_TOKENS);
        return NULL;
    }
    if (d < 1 || d > 46340) {
        fprintf(stderr, "aim_sgd: d = %d out of range 1..46340\n", d);
        return NULL;
    }
    if (cfg->block < 1) {
        fprintf(stderr, "aim_sgd: block = %d must be >= 1\n", cfg->block);
        return NULL;
    }
    const int p = tied || untied ? aim_config_columns(&cfg->student, d) : 0;
    /* CBLAS lengths are int: d p and (block T) p must fit */
    if (p > 0 && ((double)d * p > 2147483647.0 ||
                  (double)cfg->block * cfg->tokens * p > 2147483647.0)) {
        fprintf(stderr, "aim_sgd: factored student too large (d = %d, "
                        "p = %d)\n", d, p);
        return NULL;
    }
    aim_sgd *s = calloc(1, sizeof *s);
    if (!s) {
        fprintf(stderr, "aim_sgd: out of memory\n");
        return NULL;
    }
    s->cfg = *cfg;
    s->d = d;
    s->T = cfg->tokens;
    s->block = cfg->block;
    s->c = cfg->centring == AIM_CENTRED ? 1.0 : 0.0;
    s->symmetric = !tied && cfg->student.symmetric != 0;
    s->tied = tied;
    s->untied = untied;
    s->p = p;

    int T = s->T, T2 = T * T;
    for (int a = 0; a < T; a++)
        for (int b = 0; b < T; b++)
            s->C[a * T + b] = s->L[a * T + b] = cfg->cov[a * T + b];
    gsl_matrix_view Lv = gsl_matrix_view_array(s->L, (size_t)T, (size_t)T);
    gsl_error_handler_t *old = gsl_set_error_handler_off();
    int st = gsl_linalg_cholesky_decomp1(&Lv.matrix);
    gsl_set_error_handler(old);
    if (st) {
        fprintf(stderr, "aim_sgd: token covariance C is not positive "
                        "definite (%s)\n", gsl_strerror(st));
        free(s);
        return NULL;
    }
    for (int a = 0; a < T; a++)
        for (int b = a + 1; b < T; b++)
            s->L[a * T + b] = 0.0;

    size_t dd = (size_t)d * d, n = (size_t)s->block * T;
    size_t cols = p > 0 ? (size_t)p : (size_t)d;
    s->S = malloc(dd * sizeof *s->S);
    s->St = malloc(dd * sizeof *s->St);
    s->X = malloc(n * d * sizeof *s->X);
    s->P = malloc(n * cols * sizeof *s->P);
    s->Q = malloc(n * d * sizeof *s->Q);
    s->Y = malloc(n * cols * sizeof *s->Y);
    s->K = malloc(n * n * sizeof *s->K);
    s->xi = malloc((size_t)s->block * T2 * sizeof *s->xi);
    s->HR = malloc((size_t)s->block * T2 * sizeof *s->HR);
    s->E = malloc((size_t)s->block * T2 * sizeof *s->E);
    s->tE = malloc((size_t)s->block * sizeof *s->tE);
    s->uE = malloc((size_t)s->block * sizeof *s->uE);
    s->apow = malloc(((size_t)s->block + 1) * sizeof *s->apow);
    s->jac = malloc((size_t)T2 * T2 * sizeof *s->jac);
    if (p > 0) { /* Ut, Kw: T rows tied, 2T untied */
        size_t rows = untied ? 2 * (size_t)T : (size_t)T;
        s->Ut = malloc(rows * p * sizeof *s->Ut);
        s->Kw = malloc(rows * n * sizeof *s->Kw);
    }
    if (tied)
        s->W = malloc((size_t)d * p * sizeof *s->W);
    if (untied) {
        s->U = malloc((size_t)d * p * sizeof *s->U);
        s->V = malloc((size_t)d * p * sizeof *s->V);
        s->Pv = malloc(n * p * sizeof *s->Pv);
        s->Rv = malloc(n * p * sizeof *s->Rv);
        s->zw = malloc((size_t)s->block * sizeof *s->zw);
    }
    s->map = aim_outmap_create(cfg);
    if (!s->S || !s->St || !s->X || !s->P || !s->Q || !s->Y || !s->K ||
        !s->xi || !s->HR || !s->E || !s->tE || !s->uE || !s->apow ||
        !s->jac || !s->map || (p > 0 && (!s->Ut || !s->Kw)) ||
        (tied && !s->W) ||
        (untied && (!s->U || !s->V || !s->Pv || !s->Rv || !s->zw))) {
        fprintf(stderr, "aim_sgd: out of memory (d = %d, block = %d)\n", d,
                s->block);
        aim_sgd_free(s);
        return NULL;
    }
    return s;
}

/* Untied: S = U V^T (one dgemm, d x d x p). */
static void untied_product(aim_sgd *s)
{
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, s->d, s->d, s->p,
                1.0, s->U, s->p, s->V, s->p, 0.0, s->S, s->d);
}

static void cache_teacher(aim_sgd *s)
{
    s->tr_t = trace_of(s->St, s->d);
    s->omega_tt = tr_abt(s->St, s->St, s->d) / s->d;
    s->psi_tt = tr_ab(s->St, s->St, s->d) / s->d;
}

aim_sgd *aim_sgd_create(const aim_config *cfg, int d, uint64_t seed)
{
    aim_sgd *s = alloc_common(cfg, d);
    if (!s)
        return NULL;
    gsl_rng *rt = aim_draw_rng(seed, AIM_DRAW_TEACHER), *rs = aim_draw_rng(seed, AIM_DRAW_STUDENT);
    s->rdata = aim_draw_rng(seed, AIM_DRAW_DATA);
    if (!rt || !rs || !s->rdata) {
        fprintf(stderr, "aim_sgd: out of memory (generators)\n");
        gsl_rng_free(rt);
        gsl_rng_free(rs);
        aim_sgd_free(s);
        return NULL;
    }
    int st = aim_draw_teacher(cfg, rt, s->St, d);
    aim_draw_student(cfg, rs, d, s->p, s->tied ? s->W : s->untied ? s->U : s->S, s->V);
    if (s->tied)
        aim_sgd_i_outer(s->W, d, s->p, s->S);
    else if (s->untied)
        untied_product(s);
    gsl_rng_free(rt);
    gsl_rng_free(rs);
    if (st) {
        aim_sgd_free(s);
        return NULL;
    }
    cache_teacher(s);
    return s;
}

aim_sgd *aim_sgd_clone(const aim_sgd *src, uint64_t data_seed)
{
    aim_sgd *s = alloc_common(&src->cfg, src->d);
    if (!s)
        return NULL;
    s->rdata = aim_draw_rng(data_seed, AIM_DRAW_DATA);
    if (!s->rdata) {
        fprintf(stderr, "aim_sgd: out of memory (generator)\n");
        aim_sgd_free(s);
        return NULL;
    }
    size_t dd = (size_t)src->d * src->d;
    memcpy(s->S, src->S, dd * sizeof *s->S);
    memcpy(s->St, src->St, dd * sizeof *s->St);
    if (s->tied)
        memcpy(s->W, src->W, (size_t)src->d * src->p * sizeof *s->W);
    if (s->untied) {
        memcpy(s->U, src->U, (size_t)src->d * src->p * sizeof *s->U);
        memcpy(s->V, src->V, (size_t)src->d * src->p * sizeof *s->V);
    }
    s->tr_t = src->tr_t;
    s->omega_tt = src->omega_tt;
    s->psi_tt = src->psi_tt;
    s->steps = src->steps;
    return s;
}

void aim_sgd_i_block_start(aim_sgd *s, int b)
{
    const int n = b * s->T, d = s->d;
    aim_sgd_i_draw_block(s, b);
    s->last_block = b;
    aim_sgd_i_times_x(s, n, s->St, d, s->Q);
    cblas_dsyrk(CblasRowMajor, CblasLower, CblasNoTrans, n, d, 1.0, s->X, d,
                0.0, s->K, n);
}

void aim_sgd_i_times_x(const aim_sgd *s, int n, const double *A, int cols,
                       double *XA)
{
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, cols, s->d, 1.0,
                s->X, s->d, A, cols, 0.0, XA, cols);
}

void aim_sgd_i_draw_tokens(const aim_sgd *s, gsl_rng *r, double *Xk)
{
    const int T = s->T, d = s->d;
    aim_draw_gauss(r, Xk, (size_t)T * d, 1.0);
    /* X = L Z in place: row a uses rows c <= a, so go downwards. */
    for (int a = T - 1; a >= 0; a--) {
        double *xa = Xk + (size_t)a * d;
        double laa = s->L[a * T + a];
        for (int i = 0; i < d; i++) {
            double v = laa * xa[i];
            for (int c = 0; c < a; c++)
                v += s->L[a * T + c] * Xk[(size_t)c * d + i];
            xa[i] = v;
        }
    }
}

void aim_sgd_i_draw_block(aim_sgd *s, int b)
{
    int T = s->T, d = s->d, T2 = T * T;
    for (int k = 0; k < b; k++) {
        aim_sgd_i_draw_tokens(s, s->rdata, s->X + (size_t)k * T * d);
        for (int q = 0; q < T2; q++)
            s->xi[k * T2 + q] = gsl_ran_gaussian_ziggurat(s->rdata, 1.0);
    }
}

static int all_finite(const double *v, int n)
{
    for (int i = 0; i < n; i++)
        if (!isfinite(v[i]))
            return 0;
    return 1;
}

static inline double gram(const aim_sgd *s, int n, int k, int a, int j, int p)
{
    return aim_sgd_i_gram(s, n, k, a, j, p);
}

void aim_sgd_i_teacher_index(const aim_sgd *s, int k, double *ht)
{
    const int T = s->T, d = s->d;
    const double *Xk = s->X + (size_t)k * T * d;
    const double *Qk = s->Q + (size_t)k * T * d;
    const double sqd = sqrt((double)d);
    /* T^2 dot products (a T x T x d dgemm would spend its time packing) */
    for (int p = 0; p < T; p++)
        for (int q = 0; q < T; q++) {
            double v = cblas_ddot(d, Qk + (size_t)p * d, 1, Xk + (size_t)q * d, 1);
            ht[p * T + q] = (v - s->c * s->C[p * T + q] * s->tr_t) / sqd;
        }
}

int aim_sgd_i_guard(const aim_sgd *s, int n, int k, const double *hs,
                    double A, double B)
{
    const int T = s->T;
    for (int p = 0; p < T; p++)
        for (int q = 0; q < T; q++) {
            double xx = sqrt(gram(s, n, k, p, k, p) * gram(s, n, k, q, k, q));
            double bound = A * (xx + B * fabs(s->C[p * T + q]));
            if (!(fabs(hs[p * T + q]) <= bound))
                return 1;
        }
    return 0;
}

int aim_sgd_i_errors(aim_sgd *s, int k, const double *hs, const double *ht)
{
    const int T = s->T, T2 = T * T;
    const double snoise = sqrt(s->cfg.noise);
    double fs[AIM_MAX_TOKENS * AIM_MAX_TOKENS], ft[AIM_MAX_TOKENS * AIM_MAX_TOKENS];
    double r[AIM_MAX_TOKENS * AIM_MAX_TOKENS];
    aim_outmap_apply(s->map, ht, ft, NULL);
    aim_outmap_apply(s->map, hs, fs, s->jac);
    for (int q = 0; q < T2; q++)
        r[q] = fs[q] - (ft[q] + snoise * s->xi[k * T2 + q]);
    double *Ek = s->E + k * T2;
    for (int q = 0; q < T2; q++) {
        double v = 0.0;
        for (int p = 0; p < T2; p++)
            v += s->jac[p * T2 + q] * r[p];
        Ek[q] = v;
    }
    if (s->symmetric)
        for (int p = 0; p < T; p++)
            for (int q = p + 1; q < T; q++) {
                double v = 0.5 * (Ek[p * T + q] + Ek[q * T + p]);
                Ek[p * T + q] = Ek[q * T + p] = v;
            }
    return !all_finite(Ek, T2);
}

int aim_sgd_i_factor_errors(aim_sgd *s, int n, int k, const double *XSX,
                            double trS, double *sC)
{
    const int T = s->T, T2 = T * T;
    const double sqd = sqrt((double)s->d);
    double hs[AIM_MAX_TOKENS * AIM_MAX_TOKENS], ht[AIM_MAX_TOKENS * AIM_MAX_TOKENS];
    for (int q = 0; q < T2; q++)
        hs[q] = (XSX[q] - s->c * s->C[q] * trS) / sqd;
    if (aim_sgd_i_guard(s, n, k, hs, sqd * s->cfg.blowup, s->c))
        return 1;
    aim_sgd_i_teacher_index(s, k, ht);
    if (aim_sgd_i_errors(s, k, hs, ht))
        return 1;
    *sC = aim_sgd_i_dot(s->E + k * T2, s->C, T2);
    return 0;
}

void aim_sgd_i_row_products(const double *A, const double *B, int T, int p,
                            double *out)
{
    for (int a = 0; a < T; a++)
        for (int b = 0; b < T; b++) {
            if (A == B && b < a) /* row b done */
                out[a * T + b] = out[b * T + a];
            else
                out[a * T + b] = cblas_ddot(p, A + (size_t)a * p, 1,
                                            B + (size_t)b * p, 1);
        }
}

void aim_sgd_i_weighted_row(const aim_sgd *s, int n, int k, const double *w,
                            double *Wk)
{
    const int T = s->T, m = k * T;
    for (int a = 0; a < T; a++) {
        const double *Krow = s->K + (size_t)(m + a) * n; /* j < k: lower */
        for (int j = 0; j < k; j++)
            for (int q = 0; q < T; q++)
                Wk[a * m + j * T + q] = w[j] * Krow[j * T + q];
    }
}

/* One block of b steps. 0, or 1 on blow-up (S untouched). */
static int run_block(aim_sgd *s, int b)
{
    const int T = s->T, T2 = T * T, d = s->d, n = b * T;
    const double sqd = sqrt((double)d), c = s->c;
    const double eta = s->cfg.eta, gamma = s->cfg.gamma;
    const double a = 1.0 - eta * gamma / ((double)d * d);
    const double g = -eta / (d * sqd);
    const double corr = -eta / ((double)d * d);
    const double blow = s->cfg.blowup;

    aim_sgd_i_block_start(s, b);
    double trS = trace_of(s->S, d);
    aim_sgd_i_times_x(s, n, s->S, d, s->P);

    s->apow[0] = 1.0;
    for (int k = 1; k <= b; k++)
        s->apow[k] = s->apow[k - 1] * a;

    double hs[AIM_MAX_TOKENS * AIM_MAX_TOKENS], ht[AIM_MAX_TOKENS * AIM_MAX_TOKENS];
    double acc[AIM_MAX_TOKENS * AIM_MAX_TOKENS], tmp[AIM_MAX_TOKENS * AIM_MAX_TOKENS];

    for (int k = 0; k < b; k++) {
        const double *Xk = s->X + (size_t)k * T * d;
        double *HRk = s->HR + k * T2;
        /* X_k S_0 X_k^T: T^2 dot products */
        const double *Pk = s->P + (size_t)k * T * d;
        for (int p = 0; p < T; p++)
            for (int q = 0; q < T; q++)
                HRk[p * T + q] = cblas_ddot(d, Pk + (size_t)p * d, 1,
                                            Xk + (size_t)q * d, 1);

        /* corrections from the earlier steps of the block */
        memset(acc, 0, sizeof acc);
        for (int j = 0; j < k; j++) {
            const double *Ej = s->E + j * T2;
            double w = s->apow[k - 1 - j];
            /* tmp = E_j K_kj^T : tmp[p][b'] = sum_q E_j[p][q] K_kj[b'][q] */
            for (int p = 0; p < T; p++)
                for (int bb = 0; bb < T; bb++) {
                    double v = 0.0;
                    for (int q = 0; q < T; q++)
                        v += Ej[p * T + q] * gram(s, n, k, bb, j, q);
                    tmp[p * T + bb] = v;
                }
            for (int aa = 0; aa < T; aa++)
                for (int bb = 0; bb < T; bb++) {
                    double v = 0.0;
                    for (int p = 0; p < T; p++)
                        v += gram(s, n, k, aa, j, p) * tmp[p * T + bb];
                    if (c != 0.0)
                        v -= s->tE[j] * (gram(s, n, k, aa, k, bb) -
                                         d * s->C[aa * T + bb]) +
                             s->uE[j] * s->C[aa * T + bb];
                    acc[aa * T + bb] += w * v;
                }
        }
        double ak = s->apow[k];
        for (int q = 0; q < T2; q++)
            hs[q] = ak * (HRk[q] - c * s->C[q] * trS) / sqd + corr * acc[q];
        /* Mid-block guard (see the header comment): an index beyond
         * sqrt(blowup) (|x_a||x_b| + c |C_ab| sqrt d) proves
         * Omega(S_k, S_k) > blowup; also keeps huge or NaN indices away
         * from the output map. */
        if (aim_sgd_i_guard(s, n, k, hs, sqrt(blow), c * sqd))
            return 1;
        aim_sgd_i_teacher_index(s, k, ht);
        if (aim_sgd_i_errors(s, k, hs, ht))
            return 1;
        const double *Ek = s->E + k * T2;
        double t = 0.0, u = 0.0;
        for (int p = 0; p < T; p++)
            for (int q = 0; q < T; q++) {
                t += Ek[p * T + q] * s->C[p * T + q];
                u += Ek[p * T + q] * gram(s, n, k, p, k, q);
            }
        s->tE[k] = t;
        s->uE[k] = u;
    }

    /* Predict ||S_b||^2 and Tr S_b (see the header comment). */
    double tau = 0.0, sM = 0.0, trM = 0.0, mm = 0.0;
    for (int j = 0; j < b; j++) {
        double wj = s->apow[b - 1 - j];
        const double *Ej = s->E + j * T2, *HRj = s->HR + j * T2;
        tau += wj * s->tE[j];
        trM += wj * s->uE[j];
        for (int q = 0; q < T2; q++)
            sM += wj * Ej[q] * HRj[q];
        for (int l = 0; l <= j; l++) {
            double wl = s->apow[b - 1 - l];
            const double *El = s->E + l * T2;
            /* tr(E_j^T K_jl E_l K_lj) = sum E_j[a][b] K_jl[a][p] E_l[p][q] K_jl[b][q] */
            double v = 0.0;
            for (int aa = 0; aa < T; aa++)
                for (int bb = 0; bb < T; bb++) {
                    double ejab = Ej[aa * T + bb];
                    if (ejab == 0.0)
                        continue;
                    for (int p = 0; p < T; p++) {
                        double kap = gram(s, n, j, aa, l, p);
                        for (int q = 0; q < T; q++)
                            v += ejab * kap * El[p * T + q] * gram(s, n, j, bb, l, q);
                    }
                }
            mm += (l == j ? 1.0 : 2.0) * wj * wl * v;
        }
    }
    double A = s->apow[b];
    double norm2 = A * A * s->norm2 + 2.0 * A * g * (sM - c * tau * trS) +
                   g * g * (mm - 2.0 * c * tau * trM + c * tau * tau * d);
    double trnew = A * trS + g * (trM - c * tau * d);
    if (!isfinite(norm2) || !isfinite(trnew) || norm2 / d > blow ||
        (c == 0.0 && fabs(trnew) / sqd > blow))
        return 1;

    /* Apply: S <- a^b S + g X^T F X - g c tau I. */
    /* Y_j = a^{b-1-j} E_j X_j (T x d), as T^2 axpys */
    for (int j = 0; j < b; j++) {
        const double *Ej = s->E + j * T2, *Xj = s->X + (size_t)j * T * d;
        double wj = s->apow[b - 1 - j];
        for (int p = 0; p < T; p++) {
            double *yp = s->Y + ((size_t)j * T + p) * d;
            memset(yp, 0, (size_t)d * sizeof *yp);
            for (int q = 0; q < T; q++)
                cblas_daxpy(d, wj * Ej[p * T + q], Xj + (size_t)q * d, 1, yp, 1);
        }
    }
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, d, d, n, g, s->X, d,
                s->Y, d, A, s->S, d);
    if (c != 0.0) {
        double shift = -g * tau;
        for (int i = 0; i < d; i++)
            s->S[(size_t)i * d + i] += shift;
    }
    s->norm2 = norm2;
    s->steps += b;
    return 0;
}

int aim_sgd_advance(aim_sgd *s, long steps)
{
    if (steps <= 0)
        return 0;
    if (s->p == 0)
        s->norm2 = tr_abt(s->S, s->S, s->d);
    long done = 0;
    int rc = 0;
    while (steps > 0) {
        int b = steps < s->block ? (int)steps : s->block;
        if (s->tied     ? aim_sgd_i_tied_block(s, b)
            : s->untied ? aim_sgd_i_untied_block(s, b)
                        : run_block(s, b)) {
            rc = 1;
            break;
        }
        steps -= b;
        done += b;
    }
    if (done > 0) { /* S = W W^T or U V^T for the readers of S */
        if (s->tied)
            aim_sgd_i_outer(s->W, s->d, s->p, s->S);
        else if (s->untied)
            untied_product(s);
    }
    return rc;
}

long aim_sgd_steps(const aim_sgd *s) { return s->steps; }

int aim_sgd_dim(const aim_sgd *s) { return s->d; }

void aim_sgd_overlaps(const aim_sgd *s, aim_overlaps *q)
{
    int d = s->d;
    double trS = trace_of(s->S, d);
    q->omega[0][0] = tr_abt(s->S, s->S, d) / d;
    q->omega[0][1] = q->omega[1][0] = tr_abt(s->S, s->St, d) / d;
    q->omega[1][1] = s->omega_tt;
    q->psi[0][0] = tr_ab(s->S, s->S, d) / d;
    q->psi[0][1] = q->psi[1][0] = tr_ab(s->S, s->St, d) / d;
    q->psi[1][1] = s->psi_tt;
    q->trace[0] = trS / d;
    q->trace[1] = s->tr_t / d;
    if (s->c == 0.0) {
        q->mean[0] = trS / sqrt((double)d);
        q->mean[1] = s->tr_t / sqrt((double)d);
    } else {
        q->mean[0] = q->mean[1] = 0.0;
    }
}

long aim_sgd_steps_for(const aim_config *cfg, int d, double tau)
{
    return lround(tau * (double)d * d / cfg->eta);
}

const double *aim_sgd_matrix(const aim_sgd *s, int which)
{
    return which == 0 ? s->S : s->St;
}

const double *aim_sgd_factor(const aim_sgd *s)
{
    return s->tied ? s->W : NULL;
}

int aim_sgd_untied_factors(const aim_sgd *s, const double **U,
                           const double **V)
{
    if (!s->untied)
        return -1;
    *U = s->U;
    *V = s->V;
    return 0;
}

int aim_sgd_columns(const aim_sgd *s) { return s->p; }

int aim_sgd_last_samples(const aim_sgd *s, double *x, double *xi)
{
    int b = s->last_block, T = s->T;
    if (x)
        memcpy(x, s->X, (size_t)b * T * s->d * sizeof *x);
    if (xi)
        memcpy(xi, s->xi, (size_t)b * T * T * sizeof *xi);
    return b;
}
