/* aim_sgd, untied student S = U V^T (theory/model.md sec. 4-5): one block of b
 * online steps, exactly unrolled. Centred (c = 1) and raw (c = 0)
 * indices.
 *
 * One step
 * --------
 * U, V are d x p. On sample X (T x d) with errors E (T x T, e_ab =
 * dl/dh_ab(S)),
 *     G = (X^T E X - c s I)/sqrt d,   s = sum_ab e_ab C_ab = tr(E C),
 * and the simultaneous update (old U and V on both right-hand sides)
 *     U' = U - eps (G V + (gamma/d) U),   V' = V - eps (G^T U + (gamma/d) V),
 * eps = eta/d, is, with P = X U, Q = X V (T x p),
 *     U' = a U + beta V + X^T r_u,   r_u = g E Q,
 *     V' = a V + beta U + X^T r_v,   r_v = g E^T P,
 *     a = 1 - eta gamma / d^2,   beta = c eps s / sqrt d,   g = -eps/sqrt d.
 * Indices: x_a^T U V^T x_b = p_a . q_b and Tr S = <U, V>_F, so
 *     h_ab = ((P Q^T)_ab - c C_ab <U, V>) / sqrt d
 * (the teacher's as for a direct student). Per step O(T d p): no d x d
 * product.
 *
 * Block unrolling
 * ---------------
 * Write a step on the pair (U, V) as (U', V') = M (U, V) + (X^T r_u,
 * X^T r_v) with the 2 x 2 mixing M = a I + beta J, J = [[0, 1], [1, 0]].
 * All such matrices commute (J^2 = I): (w I + z J)(a I + beta J) =
 * (a w + beta z) I + (a z + beta w) J. In a block of b steps from (U_0,
 * V_0) (sample X_k, beta_k and corrections r_u,k, r_v,k at step k), by
 * induction on k
 *     U_k = phi_k U_0 + chi_k V_0 + sum_{j<k} X_j^T (w_kj r_u,j + z_kj r_v,j),
 *     V_k = chi_k U_0 + phi_k V_0 + sum_{j<k} X_j^T (z_kj r_u,j + w_kj r_v,j),
 *     (phi_0, chi_0) = (1, 0),
 *     (phi, chi)_{k+1} = (a phi_k + beta_k chi_k, a chi_k + beta_k phi_k),
 *     (w, z)_{k+1,j}   = (a w_kj + beta_k z_kj, a z_kj + beta_k w_kj), j < k,
 *     (w, z)_{k+1,k}   = (1, 0):
 * step k multiplies every term by M_k (a term c_U U_0 + c_V V_0 of U_k
 * and its mirror c_V U_0 + c_U V_0 in V_k, i.e. c_U I + c_V J acting on
 * (U_0, V_0), become (a c_U + beta_k c_V) I + (a c_V + beta_k c_U) J;
 * likewise for each correction pair) and adds (X_k^T r_u,k, X_k^T
 * r_v,k). Hence, with the Gram blocks K_kj = X_k X_j^T (T x T),
 *     P_k = X_k U_k = phi_k (X_k U_0) + chi_k (X_k V_0)
 *                   + sum_{j<k} K_kj (w_kj r_u,j + z_kj r_v,j),
 *     Q_k = X_k V_k = chi_k (X_k U_0) + phi_k (X_k V_0)
 *                   + sum_{j<k} K_kj (z_kj r_u,j + w_kj r_v,j):
 * two dgemms X U_0, X V_0 ((b T) x p x d) for the whole block at its
 * start, then per step the weighted Gram row blocks [w K]_k = [w_k0 K_k0
 * ... w_k,k-1 K_k,k-1] and [z K]_k (T x k T) against the stored
 * corrections R_u = [r_u,0; ...], R_v = [r_v,0; ...] (n x p): four T x p
 * x kT dgemms (P += [wK] R_u + [zK] R_v, Q += [wK] R_v + [zK] R_u), two
 * in raw centring, where beta = 0 makes chi and every z zero. At the
 * end, with the rows of step j replaced by (w_bj r_u,j + z_bj r_v,j,
 * z_bj r_u,j + w_bj r_v,j),
 *     (U_b, V_b) = (phi_b U_0 + chi_b V_0, chi_b U_0 + phi_b V_0)
 *                + (X^T R_u, X^T R_v):
 * one elementwise 2 x 2 mix of U and V (d p; in raw centring, chi_b =
 * 0, the scaling by phi_b is the dgemms' beta instead) and two d x p x
 * (b T) dgemms. The coefficients are kept explicitly per step (not as ratios,
 * nor in the basis U + V, U - V, which would lose U's relative accuracy
 * when ||U|| << ||V||), so a vanishing or sign-changing a +- beta is
 * harmless. Same trajectory as block = 1 up to round-off.
 *
 * Norms and trace, carried exactly from T x T quantities
 * -------------------------------------------------------
 * With Du = X^T r_u, Dv = X^T r_v, the T x T products PP = P P^T, QQ =
 * Q Q^T, PQ = P Q^T (PQ gives the indices) and K = K_kk:
 *     <U, Du> = <P, r_u> = g <E, PQ>  = <V, Dv> = <Q, r_v>   (=: m1)
 *     <V, Du> = <Q, r_u> = g <E, QQ>                          (=: mq)
 *     <U, Dv> = <P, r_v> = g <E, PP>                          (=: mp)
 *     <Du, Du> = tr(r_u^T K r_u) = g^2 <E^T K E, QQ>
 *     <Dv, Dv> = tr(r_v^T K r_v) = g^2 <E K E^T, PP>
 *     <Du, Dv> = tr(r_u^T K r_v) = g^2 <E K E, PQ>
 * (<A, B> = sum_ab A_ab B_ab), so for N_u = ||U||^2, N_v = ||V||^2,
 * t = <U, V> = Tr S,
 *     N_u' = a^2 N_u + 2 a beta t + beta^2 N_v + 2 a m1 + 2 beta mq + <Du, Du>,
 *     N_v' = beta^2 N_u + 2 a beta t + a^2 N_v + 2 beta mp + 2 a m1 + <Dv, Dv>,
 *     t'   = a beta (N_u + N_v) + (a^2 + beta^2) t + a (mp + mq)
 *            + 2 beta m1 + <Du, Dv>.
 * The three are recomputed (three dot products, d p) at the start of
 * every block, so the carried round-off does not outlive a block.
 *
 * Cost per block: X U_0 and X V_0 (4 b T d p flops), X S* (2 b T d^2:
 * the teacher is kept dense, any family), K = X X^T (b^2 T^2 d), the
 * corrections (centred 4 b^2 T^2 p, raw 2 b^2 T^2 p; relative to X U_0,
 * X V_0 a factor b T / d centred), per step about 4 T^2 p for PP, QQ,
 * PQ and 4 T^2 p for r_u, r_v, the final dgemms (4 b T d p), and two
 * passes over U and V (the start values, the mix: 12 d p flops, memory
 * bound, which is what a block amortises beyond the BLAS calls).
 * aim_sgd_advance adds S = U V^T (2 d^2 p, one dgemm) once per call.
 *
 * Blow-up (checked before anything is applied): at every step, and at
 * the block's end, ||U_k||^2/d and ||V_k||^2/d must be finite and <=
 * cfg->blowup; the student indices must satisfy |x_a^T S x_b| <=
 * ||S||_op |x_a||x_b| <= ||U||_F ||V||_F |x_a||x_b| <= d blowup
 * |x_a||x_b| and |Tr S| <= ||U||_F ||V||_F <= d blowup, i.e.
 *     |h_ab| <= sqrt(d) blowup (|x_a||x_b| + c |C_ab|)
 * (aim_sgd_i_factor_errors; it catches NaN and round-off garbage before
 * the output map sees an index); the errors must be finite. The step
 * that triggers a blow-up does not depend on the block size; U and V
 * are left as at the end of the last complete block.
 *
 * Random numbers: the student stream draws U (d x p row-major), then V
 * (sgd.c); the data stream is the other students'
 * (aim_sgd_i_draw_block). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "draw.h"
#include "sgd_internal.h"

/* (x, y) <- (w x + z y, z x + w y) elementwise over n entries: the 2 x
 * 2 mixing w I + z J applied to pairs (factors, products, coefficients). */
static void mix(double *x, double *y, size_t n, double w, double z)
{
    for (size_t i = 0; i < n; i++) {
        double u = x[i], v = y[i];
        x[i] = w * u + z * v;
        y[i] = z * u + w * v;
    }
}

/* D = A^T, T x T. */
static void transpose_tt(const double *A, double *D, int T)
{
    for (int a = 0; a < T; a++)
        for (int b = 0; b < T; b++)
            D[b * T + a] = A[a * T + b];
}

static int untied_block(aim_sgd *s, int b)
{
    const int T = s->T, T2 = T * T, d = s->d, p = s->p, n = b * T;
    const double sqd = sqrt((double)d), c = s->c;
    const double eps = s->cfg.eta / d;
    const double a = 1.0 - s->cfg.eta * s->cfg.gamma / ((double)d * d);
    const double g = -eps / sqd; /* r_u = g E Q, r_v = g E^T P */
    const double blow = s->cfg.blowup;
    const size_t dp = (size_t)d * p, Tp = (size_t)T * p;
    double *U = s->U, *V = s->V, *P0 = s->P, *Q0 = s->Pv;
    double *Ru = s->Y, *Rv = s->Rv, *Pk = s->Ut, *Qk = s->Ut + Tp;
    double *w = s->apow, *z = s->zw;

    aim_sgd_i_block_start(s, b); /* samples, X S*, K */
    /* exact start values: ||U_0||^2, ||V_0||^2, Tr S_0 = <U_0, V_0> */
    double nu = cblas_ddot((int)dp, U, 1, U, 1);
    double nv = cblas_ddot((int)dp, V, 1, V, 1);
    double tr = cblas_ddot((int)dp, U, 1, V, 1);
    aim_sgd_i_times_x(s, n, U, p, P0);
    aim_sgd_i_times_x(s, n, V, p, Q0);

    double PP[AIM_MAX_TOKENS * AIM_MAX_TOKENS], QQ[AIM_MAX_TOKENS * AIM_MAX_TOKENS];
    double PQ[AIM_MAX_TOKENS * AIM_MAX_TOKENS], Kkk[AIM_MAX_TOKENS * AIM_MAX_TOKENS];
    double Et[AIM_MAX_TOKENS * AIM_MAX_TOKENS], KE[AIM_MAX_TOKENS * AIM_MAX_TOKENS];
    double KEt[AIM_MAX_TOKENS * AIM_MAX_TOKENS], M[AIM_MAX_TOKENS * AIM_MAX_TOKENS];
    double phi = 1.0, chi = 0.0;

    for (int k = 0; k < b; k++) {
        if (!(nu / d <= blow) || !(nv / d <= blow)) /* NaN included */
            return 1;

        /* P_k, Q_k from the block start and the stored corrections */
        const double *P0k = P0 + (size_t)k * Tp, *Q0k = Q0 + (size_t)k * Tp;
        memcpy(Pk, P0k, Tp * sizeof *Pk);
        memcpy(Qk, Q0k, Tp * sizeof *Qk);
        mix(Pk, Qk, Tp, phi, chi);
        if (k > 0) {
            const int m = k * T;
            double *wK = s->Kw, *zK = s->Kw + (size_t)T * m;
            aim_sgd_i_weighted_row(s, n, k, w, wK);
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, p, m,
                        1.0, wK, m, Ru, p, 1.0, Pk, p);
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, p, m,
                        1.0, wK, m, Rv, p, 1.0, Qk, p);
            if (c != 0.0) { /* raw: every z_kj is 0 */
                aim_sgd_i_weighted_row(s, n, k, z, zK);
                cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, p,
                            m, 1.0, zK, m, Rv, p, 1.0, Pk, p);
                cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, p,
                            m, 1.0, zK, m, Ru, p, 1.0, Qk, p);
            }
        }

        /* indices (P Q^T, Tr S = t) and errors, s = tr(E C) */
        aim_sgd_i_row_products(Pk, Qk, T, p, PQ);
        double sC;
        if (aim_sgd_i_factor_errors(s, n, k, PQ, tr, &sC))
            return 1;
        const double beta = c * eps * sC / sqd;
        const double *Ek = s->E + k * T2;

        /* r_u = g E Q_k, r_v = g E^T P_k into the row blocks k */
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, p, T, g, Ek,
                    T, Qk, p, 0.0, Ru + (size_t)k * Tp, p);
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, p, T, g, Ek,
                    T, Pk, p, 0.0, Rv + (size_t)k * Tp, p);

        /* ||U_{k+1}||^2, ||V_{k+1}||^2, Tr S_{k+1} */
        aim_sgd_i_row_products(Pk, Pk, T, p, PP);
        aim_sgd_i_row_products(Qk, Qk, T, p, QQ);
        aim_sgd_i_gram_kk(s, n, k, Kkk);
        transpose_tt(Ek, Et, T);
        aim_sgd_i_mul_tt(Kkk, Ek, KE, T);
        aim_sgd_i_mul_tt(Kkk, Et, KEt, T);
        const double m1 = g * aim_sgd_i_dot(Ek, PQ, T2);
        const double mq = g * aim_sgd_i_dot(Ek, QQ, T2);
        const double mp = g * aim_sgd_i_dot(Ek, PP, T2);
        aim_sgd_i_mul_tt(Et, KE, M, T); /* E^T K E */
        const double duu = g * g * aim_sgd_i_dot(M, QQ, T2);
        aim_sgd_i_mul_tt(Ek, KEt, M, T); /* E K E^T */
        const double dvv = g * g * aim_sgd_i_dot(M, PP, T2);
        aim_sgd_i_mul_tt(Ek, KE, M, T); /* E K E */
        const double duv = g * g * aim_sgd_i_dot(M, PQ, T2);
        const double a2 = a * a, b2 = beta * beta, ab = a * beta;
        const double nu1 = a2 * nu + 2.0 * ab * tr + b2 * nv + 2.0 * a * m1 +
                           2.0 * beta * mq + duu;
        const double nv1 = b2 * nu + 2.0 * ab * tr + a2 * nv + 2.0 * beta * mp +
                           2.0 * a * m1 + dvv;
        tr = ab * (nu + nv) + (a2 + b2) * tr + a * (mp + mq) +
             2.0 * beta * m1 + duv;
        nu = nu1;
        nv = nv1;

        /* coefficients of step k + 1: times M_k = a I + beta J */
        mix(w, z, (size_t)k, a, beta);
        w[k] = 1.0;
        z[k] = 0.0;
        mix(&phi, &chi, 1, a, beta);
    }
    if (!(nu / d <= blow) || !(nv / d <= blow) || !isfinite(phi) ||
        !isfinite(chi))
        return 1;
    for (int j = 0; j < b; j++)
        if (!isfinite(w[j]) || !isfinite(z[j]))
            return 1;

    /* (U_b, V_b) = mix(phi_b, chi_b)(U_0, V_0) + (X^T R_u, X^T R_v), the
     * row blocks of R_u, R_v mixed by (w_bj, z_bj) */
    for (int j = 0; j < b; j++)
        mix(Ru + (size_t)j * Tp, Rv + (size_t)j * Tp, Tp, w[j], z[j]);
    double keep = 1.0; /* the dgemms' beta */
    if (chi == 0.0) /* raw: a scaling, left to the dgemms */
        keep = phi;
    else
        mix(U, V, dp, phi, chi);
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, d, p, n, 1.0, s->X,
                d, Ru, p, keep, U, p);
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, d, p, n, 1.0, s->X,
                d, Rv, p, keep, V, p);
    s->steps += b;
    return 0;
}

/* U, V and the block's second factor products, corrections and cross
 * weights */
static int untied_alloc(aim_sgd *s, size_t n)
{
    const size_t dp = (size_t)s->d * s->p;
    s->U = malloc(dp * sizeof *s->U);
    s->V = malloc(dp * sizeof *s->V);
    s->Pv = malloc(n * s->p * sizeof *s->Pv);
    s->Rv = malloc(n * s->p * sizeof *s->Rv);
    s->zw = malloc((size_t)s->block * sizeof *s->zw);
    return s->U && s->V && s->Pv && s->Rv && s->zw ? 0 : -1;
}

static void untied_draw(aim_sgd *s, gsl_rng *r)
{
    aim_draw_student(&s->cfg, r, s->d, s->p, s->student->factors, s->U, s->V);
}

static void untied_copy(aim_sgd *s, const aim_sgd *src)
{
    memcpy(s->U, src->U, (size_t)src->d * src->p * sizeof *s->U);
    memcpy(s->V, src->V, (size_t)src->d * src->p * sizeof *s->V);
}

static int untied_params(const aim_sgd *s, double *arrays[2], size_t lengths[2])
{
    arrays[0] = s->U;
    arrays[1] = s->V;
    lengths[0] = lengths[1] = (size_t)s->d * s->p;
    return 2;
}

/* S = U V^T (one dgemm, d x d x p) */
static void untied_refresh(aim_sgd *s)
{
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, s->d, s->d, s->p,
                1.0, s->U, s->p, s->V, s->p, 0.0, s->S, s->d);
}

static void untied_index_factors(const aim_sgd *s, const double **L, const double **R)
{
    *L = s->U;
    *R = s->V;
}

const aim_sgd_student aim_sgd_untied_student = {
    .name = "untied",
    .factors = 2,
    .saved = {2, {"U", "V"}, 1},
    .alloc = untied_alloc,
    .draw = untied_draw,
    .copy = untied_copy,
    .params = untied_params,
    .block = untied_block,
    .refresh = untied_refresh,
    .index_factors = untied_index_factors,
};
