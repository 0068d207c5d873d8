/* tracial_fit: a tracial finite-dimensional realization of the tracked
 * words, tried as a closure against the quadrature closure
 * (theory/tied.md sec. 15). At a trained-like state of real d x d
 * matrices (teacher T = W* W*^T, student S = W W^T with
 * W = c W* + sqrt(1 - c^2) X, W*, X Gaussian with variance 1/d), it
 * measures every word up to length M + 1, then
 *   - closes the words of length M + 1 with the quadrature construction
 *     (src/hierarchy/quadrature.c, the shipped floor 1e-6) from the tracked ones;
 *   - fits a pair of k x k matrices A = Y Y^T >= 0, B = B^T, whose
 *     normalised traces tr(w(A, B))/k match the tracked words (every word
 *     of length 1..M and the teacher's of length M + 1, relative
 *     residuals; GSL's trust-region least squares with finite-difference
 *     Jacobian from RESTARTS random starts, the best kept; a 1e-5 pull
 *     of the parameters to 0 makes the system overdetermined, which GSL
 *     needs when k is large), and closes the long words with that pair's
 *     traces: realizable by construction, exact where the fit is.
 * It prints the fit's largest tracked residual and, for both closures,
 * the largest relative error of the closed words containing S.
 * Usage: tracial_fit M d k c [RESTARTS, default 3] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_cblas.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_multifit_nlinear.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_vector.h>

#include "quadrature.h"
#include "words.h"

#define PULL 1e-5
#define MAX_ITER 2000

static const aim_alphabet tied_letters = {"ST", "ST"};

typedef struct {
    const aim_wordset *ws;
    int k, order, fitted;
    const int *index; /* the fitted words */
    const double *target;
    double *mom, *A, *B, *Y;
} fit;

static void pair_of(fit *f, const gsl_vector *x)
{
    const int k = f->k;
    for (int i = 0; i < k * k; i++)
        f->Y[i] = gsl_vector_get(x, (size_t)i);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, k, k, k, 1.0, f->Y, k, f->Y, k, 0.0, f->A,
                k);
    size_t p = (size_t)k * (size_t)k;
    for (int i = 0; i < k; i++)
        for (int j = i; j < k; j++) {
            const double v = gsl_vector_get(x, p++);
            f->B[i * k + j] = f->B[j * k + i] = v;
        }
}

static int residuals(const gsl_vector *x, void *params, gsl_vector *r)
{
    fit *f = params;
    pair_of(f, x);
    const double *mats[2] = {f->A, f->B};
    if (aim_words_measure(f->ws, f->order + 1, mats, f->k, f->mom))
        return GSL_ENOMEM;
    for (int i = 0; i < f->fitted; i++) {
        const int w = f->index[i];
        gsl_vector_set(r, (size_t)i, (f->mom[w] - f->target[w]) / fabs(f->target[w]));
    }
    for (size_t j = 0; j < x->size; j++)
        gsl_vector_set(r, (size_t)f->fitted + j, PULL * gsl_vector_get(x, j));
    return GSL_SUCCESS;
}

static double closed_error(const aim_wordset *ws, int first_long, const double *z, const double *out)
{
    double e = 0.0;
    for (int i = first_long; i < aim_wordset_count(ws); i++)
        if (strchr(aim_wordset_word(ws, i), 'S'))
            e = fmax(e, fabs(out[i] / z[i] - 1.0));
    return e;
}

int main(int argc, char **argv)
{
    if (argc < 5 || argc > 6) {
        fprintf(stderr, "usage: tracial_fit M d k c [RESTARTS]\n");
        return 1;
    }
    const int order = atoi(argv[1]), d = atoi(argv[2]), k = atoi(argv[3]);
    const double c = atof(argv[4]);
    const int restarts = argc > 5 ? atoi(argv[5]) : 3;
    if (order < 2 || order > 8 || d < 2 || k < 1 || !(c >= 0 && c <= 1) || restarts < 1) {
        fprintf(stderr, "tracial_fit: M in 2..8, d >= 2, k >= 1, c in [0, 1], RESTARTS >= 1\n");
        return 1;
    }
    gsl_set_error_handler_off();
    aim_wordset *ws = aim_wordset_create(&tied_letters, order + 1);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    const size_t dd = (size_t)d * (size_t)d, kk = (size_t)k * (size_t)k;
    const int count = ws ? aim_wordset_count(ws) : 0;
    double *buf = malloc(sizeof *buf * (5 * dd + 3 * (size_t)count + 3 * kk));
    int *index = malloc(sizeof *index * (size_t)(count + 1));
    if (!ws || !rng || !buf || !index) {
        fprintf(stderr, "tracial_fit: out of memory\n");
        return 1;
    }
    gsl_rng_set(rng, 7);
    double *Wt = buf, *X = Wt + dd, *W = X + dd, *S = W + dd, *T = S + dd;
    double *z = T + dd, *quad = z + count, *mom = quad + count;
    double *A = mom + count, *B = A + kk, *Y = B + kk;
    for (size_t i = 0; i < dd; i++) {
        Wt[i] = gsl_ran_gaussian(rng, 1.0) / sqrt(d);
        X[i] = gsl_ran_gaussian(rng, 1.0) / sqrt(d);
        W[i] = c * Wt[i] + sqrt(1.0 - c * c) * X[i];
    }
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, d, d, d, 1.0, W, d, W, d, 0.0, S, d);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, d, d, d, 1.0, Wt, d, Wt, d, 0.0, T, d);
    const double *mats[2] = {S, T};
    if (aim_words_measure(ws, order + 1, mats, d, z)) {
        fprintf(stderr, "tracial_fit: out of memory\n");
        return 1;
    }
    const int first_long = aim_wordset_first(ws, order + 1);
    const int s = aim_wordset_find(ws, "S"), t = aim_wordset_find(ws, "T");
    const double overlap = (z[aim_wordset_find(ws, "ST")] - z[s] * z[t]) /
                           sqrt((z[aim_wordset_find(ws, "SS")] - z[s] * z[s]) *
                                (z[aim_wordset_find(ws, "TT")] - z[t] * z[t]));

    memcpy(quad, z, sizeof *quad * (size_t)count);
    for (int i = first_long; i < count; i++)
        if (strchr(aim_wordset_word(ws, i), 'S'))
            quad[i] = 0.0; /* must not be read */
    aim_quadrature *q = aim_quadrature_create(ws, order, 1e-6);
    if (!q || aim_quadrature_close(q, quad) < 0) {
        fprintf(stderr, "tracial_fit: the quadrature closure failed\n");
        return 1;
    }

    int fitted = 0;
    for (int i = 1; i < count; i++)
        if (i < first_long || !strchr(aim_wordset_word(ws, i), 'S'))
            index[fitted++] = i;
    const size_t p = kk + (size_t)k * (size_t)(k + 1) / 2, n = (size_t)fitted + p;
    fit f = {ws, k, order, fitted, index, z, mom, A, B, Y};
    gsl_multifit_nlinear_fdf fdf = {residuals, NULL, NULL, n, p, &f, 0, 0, 0};
    gsl_multifit_nlinear_parameters par = gsl_multifit_nlinear_default_parameters();
    gsl_vector *x = gsl_vector_alloc(p);
    gsl_multifit_nlinear_workspace *work = gsl_multifit_nlinear_alloc(gsl_multifit_nlinear_trust,
                                                                      &par, n, p);
    if (!x || !work) {
        fprintf(stderr, "tracial_fit: out of memory\n");
        return 1;
    }
    double best = INFINITY, best_closed = NAN;
    for (int round = 0; round < restarts; round++) {
        for (size_t i = 0; i < kk; i++)
            gsl_vector_set(x, i, gsl_ran_gaussian(rng, 1.0) * sqrt(z[s] / k));
        size_t j = kk;
        for (int a = 0; a < k; a++)
            for (int b = a; b < k; b++)
                gsl_vector_set(x, j++, (a == b ? z[t] : 0.0) + gsl_ran_gaussian(rng, 1.0) / sqrt(k));
        int info;
        if (gsl_multifit_nlinear_init(x, &fdf, work) ||
            gsl_multifit_nlinear_driver(MAX_ITER, 1e-14, 1e-14, 1e-14, NULL, NULL, &info, work) ==
                GSL_ENOMEM)
            continue; /* a failed start: the next one */
        /* the pair at the solution, in f's buffers */
        gsl_vector *r = gsl_multifit_nlinear_residual(work);
        if (residuals(gsl_multifit_nlinear_position(work), &f, r))
            continue;
        double worst = 0.0;
        for (int i = 0; i < fitted; i++)
            worst = fmax(worst, fabs(gsl_vector_get(r, (size_t)i)));
        if (worst < best) {
            best = worst;
            best_closed = closed_error(ws, first_long, z, mom);
        }
    }
    printf("M = %d, d = %d, overlap %.4f: quadrature closed error %.2e; tracial k = %d "
           "(%zu parameters, %d words): tracked residual %.2e, closed error %.2e\n",
           order, d, overlap, closed_error(ws, first_long, z, quad), k, p, fitted, best,
           best_closed);
    gsl_multifit_nlinear_free(work);
    gsl_vector_free(x);
    aim_quadrature_free(q);
    aim_wordset_free(ws);
    gsl_rng_free(rng);
    free(buf);
    free(index);
    return isfinite(best) ? 0 : 1;
}
