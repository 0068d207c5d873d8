/* The untied family (S = U V^T, U and V d x rho d) as an aim_family: its
 * start, its planar factors, its matrix from U and V, the letters of the
 * untied hierarchy, and the informed start of an untied student. */
#include "family_ops.h"
#include "family_untied.h"

#include <math.h>
#include <stdio.h>

#include <cblas.h>

int aim_untied_teacher_symmetric(const aim_config *cfg)
{
    return cfg->teacher.decomposition == AIM_TIED ||
           (cfg->teacher.decomposition == AIM_DIRECT && cfg->teacher.symmetric);
}

void aim_untied_alphabet(const aim_config *cfg, aim_alphabet *ab)
{
    const int sym = aim_untied_teacher_symmetric(cfg);
    snprintf(ab->letters, sizeof ab->letters, "%s", sym ? "ABKkT" : "ABKkTt");
    snprintf(ab->transpose, sizeof ab->transpose, "%s", sym ? "ABkKT" : "ABkKtT");
}

static void untied_start_overlaps(const aim_matrix_spec *s, double *omega, double *psi,
                                  double *trace)
{
    const double v = s->scale, rho = s->rho;
    *trace = 0.0;
    *omega = rho * v * v;
    *psi = 0.0;
}

/* U and V, both at the spec's scale (a teacher has no scale_v) */
static int untied_planar(const aim_matrix_spec *s, int base, aim_planar_factor *f,
                         aim_planar_letter *l)
{
    f[0] = f[1] = (aim_planar_factor){s->rho, s->scale, 0};
    l[0] = (aim_planar_letter){2, {base, base + 1}, {0, 1}};
    l[1] = (aim_planar_letter){2, {base + 1, base}, {0, 1}};
    return 2;
}

static void untied_form(const double *U, const double *V, int d, int p, double *M)
{
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, d, d, p, 1.0, U, p, V, p, 0.0, M, d);
}

static double scale_v(const aim_config *cfg)
{
    return cfg->student.scale_v > 0.0 ? cfg->student.scale_v : cfg->student.scale;
}

/* U and V mix with the columns of a factored teacher's: U*, V* (untied)
 * or W* for both (tied) */
static int untied_inform(const aim_config *cfg, double c, const aim_family *teacher,
                         aim_inform_planar *out)
{
    if (teacher->factors < 1)
        return -1;
    const aim_matrix_spec *s = &cfg->student, *t = &cfg->teacher;
    const double q = fmin(s->rho, t->rho), vs = s->scale, vt = t->scale;
    const double vv = scale_v(cfg);
    out->factors[0] = (aim_planar_factor){s->rho, vs, 0}; /* U */
    out->factors[1] = (aim_planar_factor){s->rho, vv, 0}; /* V */
    out->letters[0] = (aim_planar_letter){2, {0, 0}, {0, 1}}; /* A = U U^T */
    out->letters[1] = (aim_planar_letter){2, {1, 1}, {0, 1}}; /* B = V V^T */
    out->letters[2] = (aim_planar_letter){2, {0, 1}, {0, 1}}; /* K = U V^T */
    out->letters[3] = (aim_planar_letter){2, {1, 0}, {0, 1}}; /* k = V U^T */
    /* T = U* V*^T and t = V* U*^T, or T = W* W*^T */
    out->n_factors = 2 + teacher->planar(t, 2, out->factors + 2, out->letters + 4);
    if (c > 0.0) {
        if (teacher->factors == 2) {
            out->links[0] = (aim_planar_link){0, 2, c * sqrt(vs * vt), q};
            out->links[1] = (aim_planar_link){1, 3, c * sqrt(vv * vt), q};
            out->n_links = 2;
        } else {
            /* U and V both lean on W*, hence on each other in the shared
             * columns: (c sqrt(v/v*)) (c sqrt(v_V/v*)) v* */
            out->links[0] = (aim_planar_link){0, 2, c * sqrt(vs * vt), q};
            out->links[1] = (aim_planar_link){1, 2, c * sqrt(vv * vt), q};
            out->links[2] = (aim_planar_link){0, 1, c * c * sqrt(vs * vv), q};
            out->n_links = 3;
        }
    }
    return 0;
}

/* the student S = K, its teacher overlap through Kk, K, Kt (KT), Tt (TT), T */
static void untied_inform_words(const aim_config *cfg, aim_alphabet *ab, const char *words[5])
{
    aim_untied_alphabet(cfg, ab);
    const int sym = aim_untied_teacher_symmetric(cfg);
    words[0] = "Kk";
    words[1] = "K";
    words[2] = sym ? "KT" : "Kt";
    words[3] = sym ? "TT" : "Tt";
    words[4] = "T";
}

const aim_family aim_untied_family = {
    .name = "untied",
    /* Omega and Psi of S = U V^T are the words m(K k) and m(K K) */
    .min_order = 2,
    /* the psd and quadrature closures are those of two symmetric letters */
    .closures_refused = 1u << AIM_CLOSURE_PSD | 1u << AIM_CLOSURE_QUADRATURE,
    .factors = 2,
    .start_overlaps = untied_start_overlaps,
    .planar = untied_planar,
    .form = untied_form,
    .inform = untied_inform,
    .inform_teachers = "tied or untied",
    .inform_words = untied_inform_words,
};
