/* The pieces of a block of SGD steps that every student's block step
 * shares (declared in sgd_internal.h): a block's tokens and labels, the
 * products with X, the guard against a blow-up, the output errors and
 * their pull-back to the factors. Kept apart from sgd.c, whose registry
 * calls the students, so that the students call down into this file and
 * nothing calls back up. */
#include <math.h>
#include <stddef.h>

#include <cblas.h>
/* OpenBLAS's cblas.h and GSL's gsl_cblas.h declare the same enums: keep
 * OpenBLAS's and skip GSL's (gsl_blas_types.h only needs the enum names). */
#define __GSL_CBLAS_H__
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "draw.h"
#include "outmap.h"
#include "sgd_internal.h"

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
