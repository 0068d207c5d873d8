/* The direct family (S with i.i.d. Gaussian entries, symmetric or not) as
 * an aim_family: a student or teacher matrix drawn entry by entry. */
#include "family_ops.h"

static void direct_start_overlaps(const aim_matrix_spec *s, double *omega, double *psi,
                                  double *trace)
{
    const double v = s->scale;
    *trace = 0.0;
    *omega = v;
    *psi = s->symmetric ? v : 0.0;
}

/* symmetric Wigner: semicircle */
static double direct_free_cumulant(const aim_matrix_spec *s, int n)
{
    return n == 2 ? s->scale : 0.0;
}

/* one factor, the matrix itself (Wigner when symmetric); t = T^T */
static int direct_planar(const aim_matrix_spec *s, int base, aim_planar_factor *f,
                         aim_planar_letter *l)
{
    f[0] = (aim_planar_factor){1.0, s->scale, s->symmetric};
    l[0] = (aim_planar_letter){1, {base, 0}, {0, 0}};
    l[1] = (aim_planar_letter){1, {base, 0}, {1, 0}};
    return 1;
}

const aim_family aim_direct_family = {
    .name = "direct",
    .symmetric_key = 1,
    .factors = 0,
    .start_overlaps = direct_start_overlaps,
    .free_cumulant = direct_free_cumulant,
    .planar = direct_planar,
};
