/* The tied family (S = W W^T, W d x rho d) as an aim_family: its start,
 * its planar factor, its matrix from W, and the informed start of a tied
 * student. */
#include "family_ops.h"

#include <math.h>

#include "outer.h"

static void tied_start_overlaps(const aim_matrix_spec *s, double *omega, double *psi,
                                double *trace)
{
    const double v = s->scale, rho = s->rho;
    *trace = rho * v;
    *omega = *psi = v * v * rho * (1.0 + rho);
}

/* free Poisson */
static double tied_free_cumulant(const aim_matrix_spec *s, int n)
{
    return s->rho * pow(s->scale, n);
}

static int tied_planar(const aim_matrix_spec *s, int base, aim_planar_factor *f,
                       aim_planar_letter *l)
{
    f[0] = (aim_planar_factor){s->rho, s->scale, 0};
    l[0] = l[1] = (aim_planar_letter){2, {base, base}, {0, 1}};
    return 1;
}

static void tied_form(const double *W, const double *unused, int d, int p, double *M)
{
    (void)unused;
    aim_outer(W, d, p, M);
}

/* W mixes with the columns of W*: the teacher must be a single factor's
 * W* W*^T (a tied one) */
static int tied_inform(const aim_config *cfg, double c, const aim_family *teacher,
                       aim_inform_planar *out)
{
    if (!teacher->symmetric || teacher->factors != 1)
        return -1;
    const aim_matrix_spec *s = &cfg->student, *t = &cfg->teacher;
    const double q = fmin(s->rho, t->rho), vs = s->scale, vt = t->scale;
    out->factors[0] = (aim_planar_factor){s->rho, vs, 0};
    out->letters[0] = (aim_planar_letter){2, {0, 0}, {0, 1}}; /* S = W W^T */
    /* T = W* W*^T */
    out->n_factors = 1 + teacher->planar(t, 1, out->factors + 1, out->letters + 1);
    if (c > 0.0)
        out->links[out->n_links++] = (aim_planar_link){0, 1, c * sqrt(vs * vt), q};
    return 0;
}

static void tied_inform_words(const aim_config *cfg, aim_alphabet *ab, const char *words[5])
{
    (void)cfg;
    *ab = (aim_alphabet){"ST", "ST"};
    static const char *const tied[5] = {"SS", "S", "ST", "TT", "T"};
    for (int i = 0; i < 5; i++)
        words[i] = tied[i];
}

const aim_family aim_tied_family = {
    .name = "tied",
    .symmetric = 1,
    .psd = 1,
    .factors = 1,
    .start_overlaps = tied_start_overlaps,
    .free_cumulant = tied_free_cumulant,
    .planar = tied_planar,
    .form = tied_form,
    .inform = tied_inform,
    .inform_teachers = "tied",
    .inform_words = tied_inform_words,
};
