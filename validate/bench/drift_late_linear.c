/* drift_late's linear analysis at the reference's states (usage and the
 * shared setup: drift_late.c): the jacobian mode, the Jacobian of the
 * hierarchy's right-hand side, its slow eigenvalues and the linear
 * response to the closure's drift error, and the gram mode, the
 * conditioning of the Gram matrix the quadrature closure inverts. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_eigen.h>
#include <gsl/gsl_linalg.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_sort_vector.h>

#include "drift_late_linear.h"

#define SLOW_SHOWN 6

/* Every word from the tracked words y: the quadrature's closure, or (q
 * NULL) the closed words held at the reference's values z. */
static int closed_moments(ctx *c, aim_quadrature *q, const double *z, const double *y,
                          double *mom)
{
    if (q)
        return drift_late_quadrature_moments(c, q, y, mom);
    memcpy(mom, z, sizeof *mom * (size_t)c->count);
    for (int j = 0; j < c->n; j++)
        mom[aim_hierarchy_tracked(c->h, j)] = y[j];
    return 0;
}

/* J[i][j] = d F_i / d y_j of the hierarchy at y, closed by q (or, q NULL,
 * with the closed words held at z's). */
static int jacobian(ctx *c, aim_quadrature *q, const double *z, const double *y, gsl_matrix *J)
{
    const int n = c->n;
    double *yp = malloc(sizeof *yp * (size_t)n), *fp = malloc(sizeof *fp * (size_t)n);
    double *fm = malloc(sizeof *fm * (size_t)n), *mom = malloc(sizeof *mom * (size_t)c->count);
    if (!yp || !fp || !fm || !mom)
        return -1;
    for (int j = 0; j < n; j++) {
        const double h = c->jac_step * fmax(fabs(y[j]), 1e-3);
        memcpy(yp, y, sizeof *yp * (size_t)n);
        yp[j] = y[j] + h;
        if (closed_moments(c, q, z, yp, mom) || drift_late_rhs_at(c, mom, fp))
            return -1;
        yp[j] = y[j] - h;
        if (closed_moments(c, q, z, yp, mom) || drift_late_rhs_at(c, mom, fm))
            return -1;
        for (int i = 0; i < n; i++)
            gsl_matrix_set(J, (size_t)i, (size_t)j, (fp[i] - fm[i]) / (2 * h));
    }
    free(yp);
    free(fp);
    free(fm);
    free(mom);
    return 0;
}

static int cmp_modulus(const void *a, const void *b)
{
    const double x = ((const double *)a)[0], y = ((const double *)b)[0];
    return (x > y) - (x < y);
}

/* Overlap part of a tracked-word perturbation e. */
static double overlap_part(const ctx *c, const double *mom, const double *e)
{
    double grad[3], v = 0.0;
    drift_late_overlap_gradient(c, mom, grad);
    const int idx[3] = {c->w_s, c->w_ss, c->w_st};
    for (int j = 0; j < 3; j++)
        for (int k = 0; k < c->n; k++)
            if (aim_hierarchy_tracked(c->h, k) == idx[j])
                v += grad[j] * e[k];
    return v;
}

int drift_late_mode_jacobian(ctx *c, const char *taus, double floor)
{
    const int n = c->n, R = c->ref.rows;
    /* floor < 0: the open hierarchy, its closed words held at the
     * reference's (the Jacobian of the tracked words alone) */
    aim_quadrature *q = floor >= 0.0 ? aim_quadrature_create(c->ws, c->M, floor) : NULL;
    gsl_matrix *J = gsl_matrix_alloc((size_t)n, (size_t)n), *Jc = gsl_matrix_alloc((size_t)n, (size_t)n);
    gsl_vector_complex *eval = gsl_vector_complex_alloc((size_t)n);
    gsl_eigen_nonsymm_workspace *ew = gsl_eigen_nonsymm_alloc((size_t)n);
    gsl_permutation *perm = gsl_permutation_alloc((size_t)n);
    gsl_vector *df = gsl_vector_alloc((size_t)n), *dy = gsl_vector_alloc((size_t)n);
    double *y = malloc(sizeof *y * (size_t)n), *fa = malloc(sizeof *fa * (size_t)n);
    double *fb = malloc(sizeof *fb * (size_t)n), *mom = malloc(sizeof *mom * (size_t)c->count);
    double *ev = malloc(sizeof *ev * 3 * (size_t)n), *e = calloc((size_t)n, sizeof *e);
    double *je = malloc(sizeof *je * (size_t)n), *lin = malloc(sizeof *lin * 5 * (size_t)n);
    if (!lin || (floor >= 0.0 && !q) || !J || !Jc || !eval || !ew || !perm || !df || !dy || !y || !fa || !fb || !mom ||
        !ev || !e || !je)
        return -1;
    printf("# linear response along the reference: e' = J e + (b - a), e(0) = 0\n");
    printf("tau\tlargest real part\tslowest eigenvalues (re, im)\tstatic overlap shift -grad J^-1 (b-a)\t"
           "integrated overlap error\n");
    for (int r = 0; r < R; r++) {
        const double *z = c->z + (size_t)r * c->count;
        drift_late_tracked_of(c, z, y);
        if (drift_late_rhs_at(c, z, fa) || closed_moments(c, q, z, y, mom) ||
            drift_late_rhs_at(c, mom, fb) || jacobian(c, q, z, y, J))
            return -1;
        /* integrate e over the interval to the next point, J and df held */
        if (r + 1 < R) {
            const double hh = (drift_late_ref_tau(c, r + 1) - drift_late_ref_tau(c, r)) / 200;
            for (int s = 0; s < 200; s++) { /* classic RK4 on the linear system */
                double *kk[4] = {lin, lin + n, lin + 2 * n, lin + 3 * n}, *t = lin + 4 * n;
                const double frac[4] = {0, 0.5, 0.5, 1};
                for (int st = 0; st < 4; st++) {
                    for (int i = 0; i < n; i++)
                        t[i] = e[i] + (st ? frac[st] * hh * kk[st - 1][i] : 0.0);
                    for (int i = 0; i < n; i++) {
                        double v = fb[i] - fa[i];
                        for (int j = 0; j < n; j++)
                            v += gsl_matrix_get(J, (size_t)i, (size_t)j) * t[j];
                        kk[st][i] = v;
                    }
                }
                for (int i = 0; i < n; i++)
                    e[i] += hh / 6 * (kk[0][i] + 2 * kk[1][i] + 2 * kk[2][i] + kk[3][i]);
            }
        }
        if (!strstr(taus, "all")) {
            char buf[32];
            snprintf(buf, sizeof buf, "%g", drift_late_ref_tau(c, r));
            int listed = 0;
            for (const char *p = taus; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
                if (!strncmp(p, buf, strlen(buf)) && (p[strlen(buf)] == ',' || !p[strlen(buf)]))
                    listed = 1;
            if (!listed)
                continue;
        }
        gsl_matrix_memcpy(Jc, J);
        gsl_eigen_nonsymm_params(0, 1, ew);
        if (gsl_eigen_nonsymm(Jc, eval, ew))
            return -1;
        for (int i = 0; i < n; i++) {
            gsl_complex l = gsl_vector_complex_get(eval, (size_t)i);
            ev[3 * i] = hypot(GSL_REAL(l), GSL_IMAG(l));
            ev[3 * i + 1] = GSL_REAL(l);
            ev[3 * i + 2] = GSL_IMAG(l);
        }
        qsort(ev, (size_t)n, 3 * sizeof *ev, cmp_modulus);
        /* static shift */
        gsl_matrix_memcpy(Jc, J);
        int sg;
        for (int i = 0; i < n; i++)
            gsl_vector_set(df, (size_t)i, -(fb[i] - fa[i]));
        if (gsl_linalg_LU_decomp(Jc, perm, &sg) || gsl_linalg_LU_solve(Jc, perm, df, dy))
            return -1;
        for (int i = 0; i < n; i++)
            je[i] = gsl_vector_get(dy, (size_t)i);
        /* e at this point is the response integrated to tau_{r+1}; report
         * the value at tau_r: integrate first, so shift the report */
        double top = -INFINITY;
        for (int i = 0; i < n; i++)
            top = fmax(top, ev[3 * i + 1]);
        printf("%.4g\t%.4g\t", drift_late_ref_tau(c, r), top);
        for (int i = 0; i < SLOW_SHOWN && i < n; i++)
            printf("%s(%.3g,%.3g)", i ? " " : "", ev[3 * i + 1], ev[3 * i + 2]);
        printf("\t%+.5f\t%+.5f (at tau %.4g)\n", overlap_part(c, z, je), overlap_part(c, z, e),
               drift_late_ref_tau(c, r + 1 < R ? r + 1 : r));
    }
    aim_quadrature_free(q);
    gsl_matrix_free(J);
    gsl_matrix_free(Jc);
    gsl_vector_complex_free(eval);
    gsl_eigen_nonsymm_free(ew);
    gsl_permutation_free(perm);
    gsl_vector_free(df);
    gsl_vector_free(dy);
    free(y);
    free(fa);
    free(fb);
    free(mom);
    free(ev);
    free(e);
    free(je);
    free(lin);
    return 0;
}

/* Every word of length <= k (not canonical) as strings. */
static int all_words(int k, char (*out)[AIM_WORD_MAX + 1])
{
    int n = 0;
    for (int len = 0; len <= k; len++)
        for (int b = 0; b < (1 << len); b++) {
            for (int i = 0; i < len; i++)
                out[n][i] = (b >> i) & 1 ? 'T' : 'S';
            out[n][len] = 0;
            n++;
        }
    return n;
}

int drift_late_mode_gram(ctx *c)
{
    const int k = c->M / 2, R = c->ref.rows;
    char(*w)[AIM_WORD_MAX + 1] = malloc(sizeof *w * (size_t)(2 << k));
    const int n = all_words(k, w);
    gsl_matrix *G = gsl_matrix_alloc((size_t)n, (size_t)n);
    gsl_vector *ev = gsl_vector_alloc((size_t)n);
    gsl_eigen_symm_workspace *ew = gsl_eigen_symm_alloc((size_t)n);
    if (!w || !G || !ev || !ew)
        return -1;
    printf("tau\tlargest\tbelow 1e-6\tbelow 1e-8\tsmallest relative eigenvalues of the unit-diagonal "
           "Gram matrix (%d words)\n",
           n);
    for (int r = 0; r < R; r++) {
        const double *z = c->z + (size_t)r * c->count;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) {
                char word[2 * AIM_WORD_MAX + 1];
                const int li = (int)strlen(w[i]);
                for (int a = 0; a < li; a++)
                    word[a] = w[i][li - 1 - a]; /* u^T: both letters symmetric */
                strcpy(word + li, w[j]);
                const int idx = aim_wordset_find(c->ws, word);
                gsl_matrix_set(G, (size_t)i, (size_t)j, idx < 0 ? NAN : z[idx]);
            }
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
                if (i != j)
                    gsl_matrix_set(G, (size_t)i, (size_t)j,
                                   gsl_matrix_get(G, (size_t)i, (size_t)j) /
                                       sqrt(gsl_matrix_get(G, (size_t)i, (size_t)i) *
                                            gsl_matrix_get(G, (size_t)j, (size_t)j)));
        for (int i = 0; i < n; i++)
            gsl_matrix_set(G, (size_t)i, (size_t)i, 1.0);
        if (gsl_eigen_symm(G, ev, ew))
            return -1;
        gsl_sort_vector(ev);
        const double top = gsl_vector_get(ev, (size_t)n - 1);
        int below6 = 0, below8 = 0;
        for (int i = 0; i < n; i++) {
            below6 += gsl_vector_get(ev, (size_t)i) <= 1e-6 * top;
            below8 += gsl_vector_get(ev, (size_t)i) <= 1e-8 * top;
        }
        printf("%.4g\t%.4g\t%d\t%d", drift_late_ref_tau(c, r), top, below6, below8);
        for (int i = 0; i < n && i < 8; i++)
            printf("\t%.2e", gsl_vector_get(ev, (size_t)i) / top);
        printf("\n");
    }
    gsl_matrix_free(G);
    gsl_vector_free(ev);
    gsl_eigen_symm_free(ew);
    free(w);
    return 0;
}
