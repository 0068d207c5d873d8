/* The Gaussian expectation engine's lower factors of the index laws
 * (a semidefinite Cholesky factor that stays continuous in the state) and
 * the solves with them. */
#include <math.h>
#include <string.h>

#include "gauss_internal.h"

/* Lower-triangular F (n x n, row-major) with F F^T = V for a positive
 * semidefinite V, n <= 4. GSL's Cholesky rejects singular matrices and
 * its pivoted variant reorders the latent coordinates, which would make
 * the quadrature rule jump with the state; here a column whose pivot is
 * negligible is set to zero instead, which keeps F continuous. A state at
 * the boundary (the student equal to the teacher, say) is approached by
 * the ODE, and trial steps may cross it by round-off: pivots down to
 * -1e-6 of the largest variance count as zero. Returns -1 when V is
 * further from positive semidefinite. The scale is V's largest variance,
 * or the caller's when V is one part of a larger covariance (the
 * antisymmetric part of a symmetric pair is zero up to round-off, and
 * its own scale would be that round-off). */
static int chol_semidefinite_scaled(int n, const double *V, double *F,
                                    double scale)
{
    for (int i = 0; i < n; i++)
        scale = fmax(scale, fabs(V[i * n + i]));
    const double tiny = 1e-13 * (scale > 0.0 ? scale : 1.0);
    memset(F, 0, sizeof(double) * (size_t)(n * n));
    for (int j = 0; j < n; j++) {
        double pivot = V[j * n + j];
        for (int k = 0; k < j; k++)
            pivot -= F[j * n + k] * F[j * n + k];
        if (pivot < -1e-6 * (scale > 0.0 ? scale : 1.0) || !isfinite(pivot))
            return -1;
        if (pivot <= tiny)
            continue;
        double root = sqrt(pivot);
        F[j * n + j] = root;
        for (int i = j + 1; i < n; i++) {
            double s = V[i * n + j];
            for (int k = 0; k < j; k++)
                s -= F[i * n + k] * F[j * n + k];
            F[i * n + j] = s / root;
        }
    }
    return 0;
}

int aim_gauss_chol_semidefinite(int n, const double *V, double *F)
{
    return chol_semidefinite_scaled(n, V, F, 0.0);
}

/* Solves F c = g by forward substitution; coordinates with a zero pivot
 * carry no variance and get c = 0. */
void aim_gauss_forward_solve(int n, const double *F, const double *g, double *c)
{
    for (int i = 0; i < n; i++) {
        double s = g[i];
        for (int k = 0; k < i; k++)
            s -= F[i * n + k] * c[k];
        c[i] = F[i * n + i] > 0.0 ? s / F[i * n + i] : 0.0;
    }
}

/* The factors of the symmetric and antisymmetric parts of the latent
 * law at q (2 x 2, lower, row-major), with the teacher first: the
 * teacher's index is F_00 times the first latent coordinates, which does
 * not involve the student, so that its outputs at the rule's points stay
 * the same while the student moves (g->teacher_f). Returns 0, or -1 when
 * q is not a valid covariance. */
int aim_gauss_state_factors(const aim_overlaps *q, double Fs[4], double Fa[4])
{
    double Vs[4], Va[4];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) { /* index 0 the teacher, 1 the student */
            Vs[i * 2 + j] = 0.5 * (q->omega[1 - i][1 - j] + q->psi[1 - i][1 - j]);
            Va[i * 2 + j] = 0.5 * (q->omega[1 - i][1 - j] - q->psi[1 - i][1 - j]);
        }
    const double scale = fmax(fabs(q->omega[0][0]), fabs(q->omega[1][1]));
    return chol_semidefinite_scaled(2, Vs, Fs, scale) ||
                   chol_semidefinite_scaled(2, Va, Fa, scale)
               ? -1
               : 0;
}
