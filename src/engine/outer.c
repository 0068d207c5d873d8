/* aim_outer: S = A A^T (see outer.h). */
#include "outer.h"

#include <stddef.h>

#include <cblas.h>

void aim_outer(const double *A, int d, int p, double *S)
{
    cblas_dsyrk(CblasRowMajor, CblasLower, CblasNoTrans, d, p, 1.0, A, p, 0.0, S, d);
    /* dsyrk fills the lower triangle; the callers read both */
    for (int i = 0; i < d; i++)
        for (int j = i + 1; j < d; j++)
            S[(size_t)i * d + j] = S[(size_t)j * d + i];
}
