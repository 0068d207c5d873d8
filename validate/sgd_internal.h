/* Internal to validate/sgd.c and validate/sgd_tied.c: the state of an
 * aim_sgd and the pieces of a block step that the direct and the tied
 * student share (sampling, teacher indices, the index guard, the
 * output-map errors). Not part of the API (see sgd.h). */
#ifndef AIM_SGD_INTERNAL_H
#define AIM_SGD_INTERNAL_H

#include <gsl/gsl_rng.h>

#include "outmap.h"
#include "sgd.h"

struct aim_sgd {
    aim_config cfg;
    int d, T, block;
    double c;          /* centring switch: 1 centred, 0 raw */
    int symmetric;     /* direct student kept symmetric */
    int tied;          /* student S = W W^T */
    int p;             /* tied: columns of W (0 for direct) */
    double C[AIM_MAX_TOKENS * AIM_MAX_TOKENS];
    double L[AIM_MAX_TOKENS * AIM_MAX_TOKENS];
    double *S;         /* student, d x d row-major (tied: W W^T, refreshed
                          at creation and after every advance) */
    double *W;         /* tied: the factor, d x p row-major */
    double *St;        /* teacher */
    double tr_t;       /* Tr S* */
    double omega_tt, psi_tt;
    aim_outmap *map;
    gsl_rng *rdata;
    long steps;
    double norm2;      /* direct: ||S||_F^2 carried through a call of advance */

    /* block buffers (n = block T rows; "cols" = d direct, p tied) */
    double *X;             /* n x d tokens */
    double *P;             /* n x cols: X S_0 (direct), X W_0 (tied) */
    double *Q;             /* n x d: X S* */
    double *Y;             /* n x cols: the update's right factor (direct:
                              weighted E_j X_j; tied: corrections R) */
    double *K;             /* n^2, lower triangle of X X^T */
    double *xi;            /* block x T^2 label noise */
    double *HR;            /* direct: block x T^2, X_k S_0 X_k^T */
    double *E;             /* block x T^2: errors */
    double *tE, *uE;       /* direct: block scalars */
    double *apow;          /* block + 1: a^k (direct), weights (tied) */
    double *jac;           /* T^2 x T^2 */
    double *Ut;            /* tied: T x p, U_k = X_k W_k */
    double *Kw;            /* tied: T x n, weighted Gram row block */
    int last_block;        /* steps in the last drawn block */
};

/* Draws b samples into X (b T x d) and xi (b x T^2): per step the T x d
 * token matrix, then the T^2 label noises. */
void aim_sgd_i_draw_block(aim_sgd *s, int b);

/* Teacher indices of step k of the block, from Q = X S*. */
void aim_sgd_i_teacher_index(const aim_sgd *s, int k, double *ht);

/* 1 when a student index of step k breaks |h_ab| <= A (|x_a||x_b| +
 * B |C_ab|) or is NaN (n = rows of the block's Gram matrix). */
int aim_sgd_i_guard(const aim_sgd *s, int n, int k, const double *hs,
                    double A, double B);

/* Errors e_ab = dl/dh_ab of step k (J^T (f(h) - y), label noise
 * included; symmetrised for a symmetric direct student) into
 * s->E + k T^2. Returns 1 when one is not finite. */
int aim_sgd_i_errors(aim_sgd *s, int k, const double *hs, const double *ht);

/* One tied block of b steps (sgd_tied.c). 0, or 1 on blow-up (W
 * untouched). */
int aim_sgd_i_tied_block(aim_sgd *s, int b);

/* S = A A^T (A d x p row-major, S d x d, both triangles). */
void aim_sgd_i_outer(const double *A, int d, int p, double *S);

/* K_kj[a][q] = x_{k,a} . x_{j,q} from the lower triangle of K. */
static inline double aim_sgd_i_gram(const aim_sgd *s, int n, int k, int a,
                                    int j, int q)
{
    int r = k * s->T + a, c = j * s->T + q;
    return r >= c ? s->K[(size_t)r * n + c] : s->K[(size_t)c * n + r];
}

#endif
