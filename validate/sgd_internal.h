/* Internal to validate/sgd.c, the students (validate/sgd_direct.c,
 * sgd_tied.c, sgd_untied.c) and validate/holdout.c: the state of an
 * aim_sgd, the table a student fills in, and the pieces of a block step
 * that the students share (random streams, sampling, teacher indices, the
 * index guard, the output-map errors; for the factored students the
 * indices-to-errors step and T x T helpers). Not part of the API (see
 * sgd.h). */
#ifndef AIM_SGD_INTERNAL_H
#define AIM_SGD_INTERNAL_H

#include <cblas.h>
#include <gsl/gsl_rng.h>

#include "outmap.h"
#include "sgd.h"
#include "sgd_state.h"

/* A student of the SGD side: how its parameters are stored, drawn and
 * moved. A new student is a file with one of these and a line in the
 * registry of sgd.c; it is written from its own SGD rule, independently
 * of the limit models of src/. */
typedef struct {
    const char *name;
    /* d x p factor matrices (0: S is learned itself) */
    int factors;
    /* needs centred indices (theory/model.md sec. 2) */
    int centred_only;
    /* the arrays of its learned parameters in a saved state (state.h):
     * how many, their names, factors or S itself (aim_sgd_params,
     * aim_sgd_state_arrays) */
    aim_state_arrays saved;
    /* optional: the student's own buffers (n = block T rows); 0, or -1
     * out of memory (aim_sgd_free frees them) */
    int (*alloc)(aim_sgd *s, size_t n);
    /* the start, from the student stream r */
    void (*draw)(aim_sgd *s, gsl_rng *r);
    /* optional: copies src's parameters besides S (aim_sgd_clone) */
    void (*copy)(aim_sgd *s, const aim_sgd *src);
    /* the arrays that hold the learned parameters (direct S; tied W;
     * untied U, V: a raw mean Tr(U V^T)/sqrt d lives in them too), what a
     * checkpoint keeps (aim_sgd_save): how many (<= 2) into arrays and
     * their lengths */
    int (*params)(const aim_sgd *s, double *arrays[2], size_t lengths[2]);
    /* optional: before the blocks of one aim_sgd_advance call */
    void (*begin)(aim_sgd *s);
    /* one block of b steps: 0, or 1 on blow-up (parameters untouched) */
    int (*block)(aim_sgd *s, int b);
    /* optional: S from the factors, after the start and after advance */
    void (*refresh)(aim_sgd *s);
    /* the matrices of the indices x_a^T S x_b = (X L)_a . (X R)_b: L, R
     * d x cols (R = L for W W^T); R NULL: L is S itself, cols = d */
    void (*index_factors)(const aim_sgd *s, const double **L, const double **R);
} aim_sgd_student;

struct aim_sgd {
    aim_config cfg;
    int d, T, block;
    double c;          /* centring switch: 1 centred, 0 raw */
    int symmetric;     /* direct student kept symmetric */
    const aim_sgd_student *student;
    int p;             /* tied, untied: columns of the factors (0 direct) */
    double C[AIM_MAX_TOKENS * AIM_MAX_TOKENS];
    double L[AIM_MAX_TOKENS * AIM_MAX_TOKENS];
    double *S;         /* student, d x d row-major (tied: W W^T, untied:
                          U V^T, refreshed at creation and after every
                          advance) */
    double *W;         /* tied: the factor, d x p row-major */
    double *U, *V;     /* untied: the factors, d x p row-major */
    double *St;        /* teacher */
    double tr_t;       /* Tr S* */
    double omega_tt, psi_tt;
    aim_outmap *map;
    gsl_rng *rdata;
    long steps;
    double norm2;      /* direct: ||S||_F^2 carried through a call of advance */

    /* block buffers (n = block T rows; "cols" = d direct, p tied and
     * untied) */
    double *X;             /* n x d tokens */
    double *P;             /* n x cols: X S_0 (direct), X W_0 (tied),
                              X U_0 (untied) */
    double *Pv;            /* untied: n x p, X V_0 */
    double *Q;             /* n x d: X S* */
    double *Y;             /* n x cols: the update's right factor (direct:
                              weighted E_j X_j; tied: corrections R;
                              untied: corrections r_u) */
    double *Rv;            /* untied: n x p, corrections r_v */
    double *K;             /* n^2, lower triangle of X X^T */
    double *xi;            /* block x T^2 label noise */
    double *HR;            /* direct: block x T^2, X_k S_0 X_k^T */
    double *E;             /* block x T^2: errors */
    double *tE, *uE;       /* direct: block scalars */
    double *apow;          /* block + 1: a^k (direct), weights (tied),
                              weights w_kj (untied) */
    double *zw;            /* untied: block, cross weights z_kj */
    double *jac;           /* T^2 x T^2 */
    double *Ut;            /* tied: T x p, X_k W_k; untied: 2T x p,
                              [X_k U_k; X_k V_k] */
    double *Kw;            /* tied: T x n, untied: 2T x n, weighted Gram
                              row blocks */
    int last_block;        /* steps in the last drawn block */
};


/* Draws one sample's T x d token matrix X = L Z from r into Xk. */
void aim_sgd_i_draw_tokens(const aim_sgd *s, gsl_rng *r, double *Xk);

/* Draws b samples into X (b T x d) and xi (b x T^2): per step the T x d
 * token matrix, then the T^2 label noises. */
void aim_sgd_i_draw_block(aim_sgd *s, int b);

/* The start of every block of b steps (n = b T rows): draws the samples
 * (aim_sgd_i_draw_block), records last_block, Q = X S* (one dgemm) and
 * the lower triangle of K = X X^T (one dsyrk). */
void aim_sgd_i_block_start(aim_sgd *s, int b);

/* XA = X A for the block's n token rows, A d x cols row-major (one
 * dgemm). */
void aim_sgd_i_times_x(const aim_sgd *s, int n, const double *A, int cols,
                       double *XA);

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

/* Factored students (tied, untied), step k of the block (n rows): the
 * student indices h = (XSX - c C trS)/sqrt d from XSX = X_k S_k X_k^T
 * (T x T) and trS = Tr S_k, checked by aim_sgd_i_guard with A = sqrt(d)
 * blowup, B = c (the bound of a state whose |x_a^T S x_b| <= d blowup
 * |x_a||x_b| and |Tr S| <= d blowup), then the teacher indices and the
 * errors into s->E + k T^2. Returns 1 on blow-up (guard or non-finite
 * errors), else 0 with *sC = tr(E_k C) = sum_ab e_ab C_ab. */
int aim_sgd_i_factor_errors(aim_sgd *s, int n, int k, const double *XSX,
                            double trS, double *sC);

/* out[a T + b] = A_a . B_b for the T rows (length p) of A and B (T x p
 * row-major); A == B computes the upper triangle and mirrors it. */
void aim_sgd_i_row_products(const double *A, const double *B, int T, int p,
                            double *out);

/* Wk (T x kT, row-major) = [w_0 K_k0 ... w_{k-1} K_k,k-1], the Gram row
 * block of step k weighted per earlier step j by w[j]. */
void aim_sgd_i_weighted_row(const aim_sgd *s, int n, int k, const double *w,
                            double *Wk);

/* Tr A, Tr(A B^T) and Tr(A B) for d x d row-major A, B. */
static inline double aim_sgd_i_trace(const double *A, int d)
{
    double t = 0.0;
    for (int i = 0; i < d; i++)
        t += A[(size_t)i * d + i];
    return t;
}

static inline double aim_sgd_i_tr_abt(const double *A, const double *B, int d)
{
    return cblas_ddot(d * d, A, 1, B, 1);
}

static inline double aim_sgd_i_tr_ab(const double *A, const double *B, int d)
{
    double t = 0.0;
    for (int p = 0; p < d; p++)
        t += cblas_ddot(d, A + (size_t)p * d, 1, B + p, d);
    return t;
}

/* K_kj[a][q] = x_{k,a} . x_{j,q} from the lower triangle of K. */
static inline double aim_sgd_i_gram(const aim_sgd *s, int n, int k, int a,
                                    int j, int q)
{
    int r = k * s->T + a, c = j * s->T + q;
    return r >= c ? s->K[(size_t)r * n + c] : s->K[(size_t)c * n + r];
}

/* The T x T Gram block K_kk = X_k X_k^T, both triangles. */
static inline void aim_sgd_i_gram_kk(const aim_sgd *s, int n, int k,
                                     double *Kkk)
{
    for (int a = 0; a < s->T; a++)
        for (int b = 0; b < s->T; b++)
            Kkk[a * s->T + b] = aim_sgd_i_gram(s, n, k, a, k, b);
}

/* C = A B for T x T row-major matrices. */
static inline void aim_sgd_i_mul_tt(const double *A, const double *B,
                                    double *C, int T)
{
    for (int a = 0; a < T; a++)
        for (int b = 0; b < T; b++) {
            double v = 0.0;
            for (int q = 0; q < T; q++)
                v += A[a * T + q] * B[q * T + b];
            C[a * T + b] = v;
        }
}

/* <A, B> = sum_q A_q B_q = tr(A^T B) over n entries (tr(A B) for
 * symmetric A or B). */
static inline double aim_sgd_i_dot(const double *A, const double *B, int n)
{
    double t = 0.0;
    for (int q = 0; q < n; q++)
        t += A[q] * B[q];
    return t;
}

#endif
