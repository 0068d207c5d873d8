/* aim_sgd, direct student (S learned itself; theory/model.md sec. 1-5):
 * one block of b online steps, exactly unrolled (sec. 5).
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
 * A symmetric student is updated with dgemm, so it stays symmetric up
 * to round-off only (the antisymmetric part does not grow).
 */
#include <math.h>
#include <string.h>

#include <cblas.h>

#include "draw.h"
#include "sgd_internal.h"

/* One block of b steps. 0, or 1 on blow-up (S untouched). */
static int direct_block(aim_sgd *s, int b)
{
    const int T = s->T, T2 = T * T, d = s->d, n = b * T;
    const double sqd = sqrt((double)d), c = s->c;
    const double eta = s->cfg.eta, gamma = s->cfg.gamma;
    const double a = 1.0 - eta * gamma / ((double)d * d);
    const double g = -eta / (d * sqd);
    const double corr = -eta / ((double)d * d);
    const double blow = s->cfg.blowup;

    aim_sgd_i_block_start(s, b);
    double trS = aim_sgd_i_trace(s->S, d);
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
                        v += Ej[p * T + q] * aim_sgd_i_gram(s, n, k, bb, j, q);
                    tmp[p * T + bb] = v;
                }
            for (int aa = 0; aa < T; aa++)
                for (int bb = 0; bb < T; bb++) {
                    double v = 0.0;
                    for (int p = 0; p < T; p++)
                        v += aim_sgd_i_gram(s, n, k, aa, j, p) * tmp[p * T + bb];
                    if (c != 0.0)
                        v -= s->tE[j] * (aim_sgd_i_gram(s, n, k, aa, k, bb) -
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
                u += Ek[p * T + q] * aim_sgd_i_gram(s, n, k, p, k, q);
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
                        double kap = aim_sgd_i_gram(s, n, j, aa, l, p);
                        for (int q = 0; q < T; q++)
                            v += ejab * kap * El[p * T + q] * aim_sgd_i_gram(s, n, j, bb, l, q);
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

static void direct_draw(aim_sgd *s, gsl_rng *r)
{
    aim_draw_student(&s->cfg, r, s->d, 0, s->student->factors, s->S, NULL);
}

/* ||S_0||^2, carried through the blocks of the call */
static void direct_begin(aim_sgd *s) { s->norm2 = aim_sgd_i_tr_abt(s->S, s->S, s->d); }

static int direct_params(const aim_sgd *s, double *arrays[2], size_t lengths[2])
{
    arrays[0] = s->S;
    lengths[0] = (size_t)s->d * s->d;
    return 1;
}

static void direct_index_factors(const aim_sgd *s, const double **L, const double **R)
{
    *L = s->S;
    *R = NULL;
}

const aim_sgd_student aim_sgd_direct_student = {
    .name = "direct",
    .saved = {1, {"S", NULL}, 0},
    .draw = direct_draw,
    .params = direct_params,
    .begin = direct_begin,
    .block = direct_block,
    .index_factors = direct_index_factors,
};
