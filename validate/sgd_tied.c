/* aim_sgd, tied student S = W W^T (theory/model.md sec. 4-5): one block of b
 * online steps, exactly unrolled. Centred indices only (c = 1; the
 * formulas keep c for clarity).
 *
 * One step
 * --------
 * W is d x p. On sample X (T x d) with errors E (T x T, e_ab = dl/dh_ab(S)),
 *     G = (X^T E X - c s I)/sqrt d,   s = sum_ab e_ab C_ab = tr(E C),
 *     G + G^T = (X^T F X - 2 c s I)/sqrt d,   F = E + E^T,
 * and W <- W - eps ((G + G^T) W + (gamma/d) W), eps = eta/d, is
 *     W' = a W + X^T r,   r = -(eps/sqrt d) F U,   U = X W (T x p),
 *     a  = 1 - delta + 2 c eps s / sqrt d,   delta = eta gamma / d^2.
 * Indices: x_a^T W W^T x_b = u_a . u_b and Tr(W W^T) = ||W||_F^2, so
 *     h_ab = (u_a . u_b - c C_ab ||W||^2) / sqrt d
 * (the teacher's as for a direct student). Per step O(T d p): no d x d
 * product.
 *
 * Block unrolling
 * ---------------
 * In a block of b steps from W_0 (sample X_k, factor a_k, correction
 * r_k at step k), by induction on k
 *     W_k = alpha_k W_0 + sum_{j<k} w_kj X_j^T r_j,
 *     alpha_0 = 1, alpha_{k+1} = a_k alpha_k,
 *     w_{k+1,j} = a_k w_kj (j < k),  w_{k+1,k} = 1
 * (so w_kj = prod_{j<l<k} a_l): step k maps alpha_k W_0 to a_k alpha_k
 * W_0 and each earlier term X_j^T r_j w_kj to a_k w_kj X_j^T r_j, and
 * adds X_k^T r_k. Hence, with the T x T Gram blocks K_kj = X_k X_j^T,
 *     U_k = X_k W_k = alpha_k (X_k W_0) + sum_{j<k} w_kj K_kj r_j :
 * one dgemm P = X W_0 ((b T) x p) for the whole block at its start, then
 * per step one T x (k T) x p dgemm with the weighted Gram row block
 * [w_k0 K_k0 ... w_k,k-1 K_k,k-1] against the stored corrections
 * R = [r_0; ...; r_{b-1}]. At the end, with the rows of R scaled by
 * w_bj,
 *     W_b = alpha_b W_0 + X^T R,
 * one d x p x (b T) dgemm with beta = alpha_b. The weights are kept
 * explicitly (not as ratios alpha_k / alpha_{j+1}), so a_k = 0 or a
 * change of sign is harmless.
 *
 * Tr S_k = ||W_k||^2, carried exactly from T x T quantities:
 *     ||W_{k+1}||^2 = a^2 ||W_k||^2 + 2 a <W_k, X_k^T r_k> + ||X_k^T r_k||^2,
 *     <W_k, X_k^T r_k> = tr(U_k^T r_k) = -(eps/sqrt d) tr(F U U^T),
 *     ||X_k^T r_k||^2  = tr(r_k^T K_kk r_k) = (eps^2/d) tr(F K_kk F U U^T)
 * (F symmetric), U U^T being needed for the indices anyway. ||W_0||^2
 * is recomputed (one dot product, d p) at the start of every block, so
 * the carried round-off does not outlive a block.
 *
 * Cost per block: X W_0 (2 b T d p flops), X S* (2 b T d^2: the teacher
 * is kept dense, any family), K = X X^T (b^2 T^2 d), the corrections
 * (b^2 T^2 p: relative to X W_0 a factor b T / (2 d)), the final dgemm
 * (2 b T d p). aim_sgd_advance adds S = W W^T (d^2 p, one dsyrk) once
 * per call.
 *
 * Blow-up (checked before anything is applied): at every step, Tr S_k/d
 * = ||W_k||^2/d must be finite and <= cfg->blowup (also at the block's
 * end); the student indices must satisfy the bound of a PSD S with that
 * trace, |x_a^T S x_b| <= ||S||_op |x_a||x_b| <= Tr S |x_a||x_b|, so
 *     |h_ab| <= sqrt(d) blowup (|x_a||x_b| + c |C_ab|)
 * (it catches NaN and round-off garbage before the output map sees an
 * index); the errors must be finite. Because the trace is checked at
 * every step, the step that triggers a blow-up does not depend on the
 * block size; W is left as at the end of the last complete block.
 *
 * The data stream is the direct student's (aim_sgd_i_draw_block: per
 * step tokens, then label noises), independent of the block size. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "draw.h"
#include "outer.h"
#include "sgd_internal.h"

static int tied_block(aim_sgd *s, int b)
{
    const int T = s->T, T2 = T * T, d = s->d, p = s->p, n = b * T;
    const double sqd = sqrt((double)d), c = s->c;
    const double eps = s->cfg.eta / d;
    const double delta = s->cfg.eta * s->cfg.gamma / ((double)d * d);
    const double g1 = -eps / sqd; /* r = g1 F U */
    const double blow = s->cfg.blowup;
    double *W = s->W, *P = s->P, *R = s->Y, *Ut = s->Ut, *Kw = s->Kw;
    double *w = s->apow;

    aim_sgd_i_block_start(s, b); /* samples, X S*, K */
    double nrm = cblas_ddot(d * p, W, 1, W, 1); /* ||W_0||_F^2 = Tr S_0 */
    aim_sgd_i_times_x(s, n, W, p, P);

    double UU[AIM_MAX_TOKENS * AIM_MAX_TOKENS], F[AIM_MAX_TOKENS * AIM_MAX_TOKENS];
    double FK[AIM_MAX_TOKENS * AIM_MAX_TOKENS], FKF[AIM_MAX_TOKENS * AIM_MAX_TOKENS];
    double Kkk[AIM_MAX_TOKENS * AIM_MAX_TOKENS];
    double alpha = 1.0;

    for (int k = 0; k < b; k++) {
        if (!(nrm / d <= blow)) /* Tr S_k / d, NaN included */
            return 1;

        /* U_k = alpha_k P_k + sum_{j<k} w_kj K_kj r_j */
        memcpy(Ut, P + (size_t)k * T * p, (size_t)T * p * sizeof *Ut);
        if (k > 0) {
            aim_sgd_i_weighted_row(s, n, k, w, Kw);
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, p, k * T,
                        1.0, Kw, k * T, R, p, alpha, Ut, p);
        }

        /* indices (U U^T, Tr S = ||W||^2) and errors, s = tr(E C) */
        aim_sgd_i_row_products(Ut, Ut, T, p, UU);
        double sC;
        if (aim_sgd_i_factor_errors(s, n, k, UU, nrm, &sC))
            return 1;

        /* F = E + E^T, a_k */
        const double *Ek = s->E + k * T2;
        for (int a = 0; a < T; a++)
            for (int bb = 0; bb < T; bb++)
                F[a * T + bb] = Ek[a * T + bb] + Ek[bb * T + a];
        const double ak = 1.0 - delta + 2.0 * c * eps * sC / sqd;

        /* r_k = g1 F U_k into R's row block k */
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, p, T, g1, F,
                    T, Ut, p, 0.0, R + (size_t)k * T * p, p);

        /* ||W_{k+1}||^2 */
        aim_sgd_i_gram_kk(s, n, k, Kkk);
        aim_sgd_i_mul_tt(F, Kkk, FK, T);
        aim_sgd_i_mul_tt(FK, F, FKF, T);
        nrm = ak * ak * nrm + 2.0 * ak * g1 * aim_sgd_i_dot(F, UU, T2) +
              g1 * g1 * aim_sgd_i_dot(FKF, UU, T2);

        /* weights of step k + 1 */
        for (int j = 0; j < k; j++)
            w[j] *= ak;
        w[k] = 1.0;
        alpha *= ak;
    }
    if (!(nrm / d <= blow) || !isfinite(alpha))
        return 1;
    for (int j = 0; j < b; j++)
        if (!isfinite(w[j]))
            return 1;

    /* W_b = alpha_b W_0 + X^T R_b, R_b[j] = w_bj r_j */
    for (int j = 0; j < b; j++)
        if (w[j] != 1.0)
            cblas_dscal(T * p, w[j], R + (size_t)j * T * p, 1);
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, d, p, n, 1.0, s->X,
                d, R, p, alpha, W, p);
    s->steps += b;
    return 0;
}

static int tied_alloc(aim_sgd *s, size_t n)
{
    (void)n;
    s->W = malloc((size_t)s->d * s->p * sizeof *s->W);
    return s->W ? 0 : -1;
}

static void tied_draw(aim_sgd *s, gsl_rng *r)
{
    aim_draw_student(&s->cfg, r, s->d, s->p, s->student->factors, s->W, NULL);
}

static void tied_copy(aim_sgd *s, const aim_sgd *src)
{
    memcpy(s->W, src->W, (size_t)src->d * src->p * sizeof *s->W);
}

static int tied_params(const aim_sgd *s, double *arrays[2], size_t lengths[2])
{
    arrays[0] = s->W;
    lengths[0] = (size_t)s->d * s->p;
    return 1;
}

/* S = W W^T (one dsyrk, d x d x p) */
static void tied_refresh(aim_sgd *s) { aim_outer(s->W, s->d, s->p, s->S); }

static void tied_index_factors(const aim_sgd *s, const double **L, const double **R)
{
    *L = *R = s->W;
}

const aim_sgd_student aim_sgd_tied_student = {
    .name = "tied",
    .factors = 1,
    .centred_only = 1,
    .saved = {1, {"W", NULL}, 1},
    .alloc = tied_alloc,
    .draw = tied_draw,
    .copy = tied_copy,
    .params = tied_params,
    .block = tied_block,
    .refresh = tied_refresh,
    .index_factors = tied_index_factors,
};
