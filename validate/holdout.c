/* aim_holdout: the held-out risk of an SGD seed (holdout.h,
 * theory/measurement.md).
 *
 * The samples are drawn once and stored (n T x d): a measurement then
 * costs the products of their tokens with the student, in chunks of
 * CHUNK samples (rows = CHUNK T), one dgemm per chunk and factor:
 *     direct  P = X S               h_ab = (P_a . x_b - c C_ab Tr S)/sqrt d
 *     tied    P = X W               h_ab = (P_a . P_b - c C_ab ||W||^2)/sqrt d
 *     untied  P = X U, P' = X V     h_ab = (P_a . P'_b - c C_ab Tr(U V^T))/sqrt d
 * (x_a^T U V^T x_b = (U^T x_a) . (V^T x_b)), then T x T blocks per
 * sample. The teacher is fixed for the run, so its outputs f(h(S*)) are
 * computed once, at creation (Q = X S*, indices as for a direct
 * student). The output map is the SGD's (src/engine/outmap.c), elementwise or
 * row softmax. */
#include "holdout.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <cblas.h>

#include "draw.h"
#include "sgd_internal.h"

enum { CHUNK = 128 }; /* samples per dgemm */

struct aim_holdout {
    int n, T, d, cols; /* cols: d (direct) or p (tied, untied) */
    double *X;         /* n T x d tokens */
    double *ft;        /* n x T^2: the teacher's outputs f(h(S*)) */
    double *P, *Pv;    /* CHUNK T x cols: X S, X W or X U; untied X V */
    double *loss;      /* n: the last measurement's per-sample losses */
};

void aim_holdout_free(aim_holdout *h)
{
    if (!h)
        return;
    free(h->X);
    free(h->ft);
    free(h->P);
    free(h->Pv);
    free(h->loss);
    free(h);
}

int aim_holdout_samples(const aim_holdout *h) { return h->n; }

const double *aim_holdout_tokens(const aim_holdout *h, int i)
{
    return h->X + (size_t)i * h->T * h->d;
}

/* The indices h_ab = (A_a . B_b - c C_ab tr)/sqrt d of one sample, A and
 * B its T rows of length len. */
static void indices(const aim_sgd *s, const double *A, const double *B, int len, double tr,
                    double *h)
{
    const int T = s->T;
    const double sqd = sqrt((double)s->d);
    for (int a = 0; a < T; a++)
        for (int b = 0; b < T; b++)
            h[a * T + b] = (cblas_ddot(len, A + (size_t)a * len, 1, B + (size_t)b * len, 1) -
                            s->c * s->C[a * T + b] * tr) / sqd;
}

/* rows x cols = X[first..] (rows x d) times A (d x cols), one dgemm. */
static void times(const aim_holdout *h, int first, int rows, const double *A, int cols,
                  double *out)
{
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, cols, h->d, 1.0,
                h->X + (size_t)first * h->T * h->d, h->d, A, cols, 0.0, out, cols);
}

double aim_holdout_bytes(int samples, int tokens, int d, double cols, int second)
{
    const double rows = (double)CHUNK * tokens, wide = cols > d ? cols : d;
    /* X, ft, loss; P; Pv (as aim_holdout_create allocates them) */
    return 8 * ((double)samples * (tokens * (double)d + (double)tokens * tokens + 1) +
                rows * wide + (second ? rows * cols : 0));
}

aim_holdout *aim_holdout_create(const aim_sgd *s, uint64_t seed, int samples)
{
    if (samples < 2) {
        fprintf(stderr, "aim_holdout: sgd.holdout = %d: a standard error needs at least 2 "
                        "held-out samples\n", samples);
        return NULL;
    }
    const int T = s->T, d = s->d, T2 = T * T;
    const int cols = s->p > 0 ? s->p : d;
    const double *left, *right;
    s->student->index_factors(s, &left, &right);
    const int second = right && right != left; /* X R needs its own rows */
    const size_t rows = (size_t)CHUNK * T;
    aim_holdout *h = calloc(1, sizeof *h);
    gsl_rng *r = aim_draw_rng(seed, AIM_DRAW_HOLDOUT);
    if (h) {
        *h = (aim_holdout){.n = samples, .T = T, .d = d, .cols = cols};
        h->X = malloc(sizeof *h->X * (size_t)samples * T * d);
        h->ft = malloc(sizeof *h->ft * (size_t)samples * T2);
        /* P also holds the teacher's X S* (rows x d) at creation */
        h->P = malloc(sizeof *h->P * rows * (size_t)(cols > d ? cols : d));
        h->Pv = second ? malloc(sizeof *h->Pv * rows * cols) : NULL;
        h->loss = malloc(sizeof *h->loss * (size_t)samples);
    }
    if (!h || !r || !h->X || !h->ft || !h->P || (second && !h->Pv) || !h->loss) {
        fprintf(stderr, "aim_holdout: out of memory for sgd.holdout = %d held-out samples "
                        "at d = %d, T = %d (%.0f MB); lower sgd.holdout\n", samples, d, T,
                (double)samples * T * d * 8.0 / 1e6);
        gsl_rng_free(r);
        aim_holdout_free(h);
        return NULL;
    }
    for (int i = 0; i < samples; i++)
        aim_sgd_i_draw_tokens(s, r, h->X + (size_t)i * T * d);
    gsl_rng_free(r);
    double ht[AIM_MAX_TOKENS * AIM_MAX_TOKENS];
    for (int first = 0; first < samples; first += CHUNK) {
        const int m = samples - first < CHUNK ? samples - first : CHUNK;
        times(h, first, m * T, s->St, d, h->P);
        for (int k = 0; k < m; k++) {
            indices(s, h->P + (size_t)k * T * d, aim_holdout_tokens(h, first + k), d, s->tr_t,
                    ht);
            aim_outmap_apply(s->map, ht, h->ft + (size_t)(first + k) * T2, NULL);
        }
    }
    return h;
}

int aim_holdout_risk(aim_holdout *h, const aim_sgd *s, double *risk, double *se)
{
    const int T = s->T, T2 = T * T, d = s->d, cols = h->cols;
    const double *left, *right;
    s->student->index_factors(s, &left, &right);
    double tr = 0.0; /* Tr S: Tr(L R^T) = <L, R> (||W||_F^2, <U, V>), or the diagonal's sum */
    if (right)
        tr = cblas_ddot(d * cols, left, 1, right, 1);
    else
        for (int i = 0; i < d; i++)
            tr += s->S[(size_t)i * d + i];
    double hs[AIM_MAX_TOKENS * AIM_MAX_TOKENS], fs[AIM_MAX_TOKENS * AIM_MAX_TOKENS];
    for (int first = 0; first < h->n; first += CHUNK) {
        const int m = h->n - first < CHUNK ? h->n - first : CHUNK;
        times(h, first, m * T, left, cols, h->P);
        if (h->Pv)
            times(h, first, m * T, right, cols, h->Pv);
        for (int k = 0; k < m; k++) {
            const double *A = h->P + (size_t)k * T * cols;
            const double *B = h->Pv ? h->Pv + (size_t)k * T * cols
                              : right ? A
                                      : aim_holdout_tokens(h, first + k);
            indices(s, A, B, cols, tr, hs);
            for (int q = 0; q < T2; q++)
                if (!isfinite(hs[q]))
                    goto blown;
            aim_outmap_apply(s->map, hs, fs, NULL);
            const double *ft = h->ft + (size_t)(first + k) * T2;
            double l = 0.0;
            for (int q = 0; q < T2; q++)
                l += (fs[q] - ft[q]) * (fs[q] - ft[q]);
            h->loss[first + k] = 0.5 * l;
            if (!isfinite(h->loss[first + k]))
                goto blown;
        }
    }
    double mean = 0.0, ss = 0.0;
    for (int i = 0; i < h->n; i++)
        mean += h->loss[i];
    mean /= h->n;
    for (int i = 0; i < h->n; i++)
        ss += (h->loss[i] - mean) * (h->loss[i] - mean);
    *risk = mean;
    *se = sqrt(ss / (h->n - 1) / h->n);
    return 0;
blown:
    *risk = *se = NAN;
    return 1;
}
