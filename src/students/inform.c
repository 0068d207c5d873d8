/* aim_inform: the informed start (see inform.h; derivation in
 * theory/model.md sec. 4). */
#include "inform.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_roots.h>

#include "untied.h"

static double scale_v(const aim_config *cfg)
{
    return cfg->student.scale_v > 0.0 ? cfg->student.scale_v : cfg->student.scale;
}

/* The teacher alone: factors from 0, letters T and t (t = T for a
 * symmetric teacher), alphabet "Tt". */
static int teacher_alone(const aim_matrix_spec *t, aim_planar_factor *f,
                         aim_planar_letter *l)
{
    switch (t->decomposition) {
    case AIM_TIED:
        f[0] = (aim_planar_factor){t->rho, t->scale, 0};
        l[0] = l[1] = (aim_planar_letter){2, {0, 0}, {0, 1}};
        return 1;
    case AIM_UNTIED:
        f[0] = f[1] = (aim_planar_factor){t->rho, t->scale, 0};
        l[0] = (aim_planar_letter){2, {0, 1}, {0, 1}};
        l[1] = (aim_planar_letter){2, {1, 0}, {0, 1}};
        return 2;
    case AIM_DIRECT:
    default:
        f[0] = (aim_planar_factor){1.0, t->scale, t->symmetric};
        l[0] = (aim_planar_letter){1, {0, 0}, {0, 0}};
        l[1] = (aim_planar_letter){1, {0, 0}, {1, 0}};
        return 1;
    }
}

double aim_inform_teacher_trace(const aim_config *cfg)
{
    const aim_matrix_spec *t = &cfg->teacher;
    return t->decomposition == AIM_TIED ? t->rho * t->scale : 0.0;
}

/* Omega and Psi of the teacher's traceless part (its raw mean and its
 * large-d trace removed). */
static int teacher_traceless(const aim_config *cfg, double *omega0, double *psi0, char *err,
                             size_t n)
{
    aim_planar_factor f[2];
    aim_planar_letter l[2];
    const int nf = teacher_alone(&cfg->teacher, f, l);
    const aim_alphabet ab = {"Tt", "tT"};
    double tt, tT;
    if (aim_planar_word(&ab, "Tt", f, nf, l, &tt, err, n) ||
        aim_planar_word(&ab, "TT", f, nf, l, &tT, err, n))
        return -1;
    const double t = aim_inform_teacher_trace(cfg);
    *omega0 = tt - t * t;
    *psi0 = tT - t * t;
    return 0;
}

int aim_inform_describe(const aim_config *cfg, double c, aim_inform_planar *out, char *err,
                        size_t n)
{
    memset(out, 0, sizeof *out);
    const aim_matrix_spec *s = &cfg->student, *t = &cfg->teacher;
    const double q = fmin(s->rho, t->rho), vs = s->scale, vt = t->scale;
    if (cfg->decomposition == AIM_TIED && t->decomposition == AIM_TIED) {
        out->factors[0] = (aim_planar_factor){s->rho, vs, 0};
        out->factors[1] = (aim_planar_factor){t->rho, vt, 0};
        out->letters[0] = (aim_planar_letter){2, {0, 0}, {0, 1}}; /* S = W W^T */
        out->letters[1] = (aim_planar_letter){2, {1, 1}, {0, 1}}; /* T = W* W*^T */
        out->n_factors = 2;
        if (c > 0.0)
            out->links[out->n_links++] = (aim_planar_link){0, 1, c * sqrt(vs * vt), q};
        return 0;
    }
    if (cfg->decomposition == AIM_UNTIED &&
        (t->decomposition == AIM_UNTIED || t->decomposition == AIM_TIED)) {
        const double vv = scale_v(cfg);
        out->factors[0] = (aim_planar_factor){s->rho, vs, 0}; /* U */
        out->factors[1] = (aim_planar_factor){s->rho, vv, 0}; /* V */
        out->letters[0] = (aim_planar_letter){2, {0, 0}, {0, 1}}; /* A = U U^T */
        out->letters[1] = (aim_planar_letter){2, {1, 1}, {0, 1}}; /* B = V V^T */
        out->letters[2] = (aim_planar_letter){2, {0, 1}, {0, 1}}; /* K = U V^T */
        out->letters[3] = (aim_planar_letter){2, {1, 0}, {0, 1}}; /* k = V U^T */
        out->factors[2] = (aim_planar_factor){t->rho, vt, 0};
        if (t->decomposition == AIM_UNTIED) {
            out->factors[3] = out->factors[2];
            out->letters[4] = (aim_planar_letter){2, {2, 3}, {0, 1}}; /* T = U* V*^T */
            out->letters[5] = (aim_planar_letter){2, {3, 2}, {0, 1}};
            out->n_factors = 4;
            if (c > 0.0) {
                out->links[0] = (aim_planar_link){0, 2, c * sqrt(vs * vt), q};
                out->links[1] = (aim_planar_link){1, 3, c * sqrt(vv * vt), q};
                out->n_links = 2;
            }
        } else {
            /* U and V both lean on W*, hence on each other in the shared
             * columns: (c sqrt(v/v*)) (c sqrt(v_V/v*)) v* */
            out->letters[4] = (aim_planar_letter){2, {2, 2}, {0, 1}}; /* T = W* W*^T */
            out->n_factors = 3;
            if (c > 0.0) {
                out->links[0] = (aim_planar_link){0, 2, c * sqrt(vs * vt), q};
                out->links[1] = (aim_planar_link){1, 2, c * sqrt(vv * vt), q};
                out->links[2] = (aim_planar_link){0, 1, c * c * sqrt(vs * vv), q};
                out->n_links = 3;
            }
        }
        return 0;
    }
    snprintf(err, n, "student.overlap > 0: a %s student has an informed start with a %s "
                     "teacher only (its factors are mixed with the teacher's; "
                     "theory/model.md sec. 4)",
             cfg->decomposition == AIM_TIED ? "tied" : "untied",
             cfg->decomposition == AIM_TIED ? "tied" : "tied or untied");
    return -1;
}

/* The large-d overlap of a tied or untied student at coefficient c. */
static int factored_overlap(const aim_config *cfg, double c, double *overlap, char *err,
                            size_t n)
{
    aim_inform_planar p;
    if (aim_inform_describe(cfg, c, &p, err, n))
        return -1;
    aim_alphabet ab = {"ST", "ST"};
    const char *words[5] = {"SS", "S", "ST", "TT", "T"};
    if (cfg->decomposition == AIM_UNTIED) {
        aim_untied_alphabet(cfg, &ab);
        const int sym = cfg->teacher.decomposition == AIM_TIED;
        words[0] = "Kk";
        words[1] = "K";
        words[2] = sym ? "KT" : "Kt";
        words[3] = sym ? "TT" : "Tt";
    }
    double m[5];
    for (int i = 0; i < 5; i++)
        if (aim_planar_word_linked(&ab, words[i], p.factors, p.n_factors, p.links, p.n_links,
                                   p.letters, &m[i], err, n))
            return -1;
    *overlap = (m[2] - m[1] * m[4]) / sqrt((m[0] - m[1] * m[1]) * (m[3] - m[4] * m[4]));
    return 0;
}

typedef struct {
    const aim_config *cfg;
    double target;
    int failed;
} root_problem;

static double overlap_gap(double c, void *params)
{
    root_problem *rp = params;
    double o;
    char err[256];
    if (factored_overlap(rp->cfg, c, &o, err, sizeof err)) {
        rp->failed = 1;
        return GSL_NAN;
    }
    return o - rp->target;
}

static int unreachable(double target, double largest, const char *why, char *err, size_t n)
{
    snprintf(err, n, "student.overlap = %g is above %.6g, the largest teacher overlap the "
                     "informed start reaches here (%s; theory/model.md sec. 4)",
             target, largest, why);
    return -1;
}

int aim_inform_mixing(const aim_config *cfg, double *c, char *err, size_t n)
{
    const double target = cfg->student.overlap;
    *c = 0.0;
    if (target == 0.0)
        return 0;
    if (cfg->decomposition == AIM_DIRECT) {
        double omega0, psi0;
        if (teacher_traceless(cfg, &omega0, &psi0, err, n))
            return -1;
        /* overlap = c sqrt(omega1/omega0), omega1 that of P(S*) */
        const double omega1 = cfg->student.symmetric ? 0.5 * (omega0 + psi0) : omega0;
        const double largest = sqrt(omega1 / omega0);
        if (target > largest)
            return unreachable(target, largest,
                               "a symmetric student holds only the teacher's symmetric part",
                               err, n);
        *c = target / largest;
        return 0;
    }
    double largest;
    if (factored_overlap(cfg, 1.0, &largest, err, n))
        return -1;
    if (target >= largest) {
        if (target > largest * (1.0 + 1e-12))
            return unreachable(target, largest,
                               "the student shares min(p, p*) columns with the teacher's "
                               "factors",
                               err, n);
        *c = 1.0;
        return 0;
    }
    root_problem rp = {cfg, target, 0};
    gsl_function fn = {overlap_gap, &rp};
    gsl_root_fsolver *s = gsl_root_fsolver_alloc(gsl_root_fsolver_brent);
    if (!s) {
        snprintf(err, n, "student.overlap: out of memory (root solver)");
        return -1;
    }
    int st = gsl_root_fsolver_set(s, &fn, 0.0, 1.0);
    for (int it = 0; st == GSL_SUCCESS && !rp.failed; it++) {
        st = gsl_root_fsolver_iterate(s);
        if (st != GSL_SUCCESS || rp.failed)
            break;
        st = gsl_root_test_interval(gsl_root_fsolver_x_lower(s), gsl_root_fsolver_x_upper(s),
                                    1e-15, 1e-13);
        if (st == GSL_SUCCESS) {
            *c = gsl_root_fsolver_root(s);
            break;
        }
        st = st == GSL_CONTINUE && it < 200 ? GSL_SUCCESS : GSL_EMAXITER;
    }
    gsl_root_fsolver_free(s);
    if (rp.failed || !(*c > 0.0)) {
        snprintf(err, n, "student.overlap = %g: no mixing coefficient found (%s)", target,
                 rp.failed ? "a moment failed" : gsl_strerror(st));
        return -1;
    }
    return 0;
}

int aim_inform_direct(const aim_config *cfg, double c, aim_inform_direct_start *out,
                      char *err, size_t n)
{
    double omega0, psi0;
    if (teacher_traceless(cfg, &omega0, &psi0, err, n))
        return -1;
    const int sym = cfg->student.symmetric;
    const double v = cfg->student.scale;
    /* P(S*_0): Omega omega1 and Psi psi1; Tr(P(S*_0) S*_0^T)/d = omega1
     * and Tr(P(S*_0) S*_0)/d = psi0, or omega1 for the symmetric part */
    const double omega1 = sym ? 0.5 * (omega0 + psi0) : omega0;
    const double psi1 = sym ? omega1 : psi0;
    out->alpha = c * sqrt(v / omega1);
    out->beta = sqrt(1.0 - c * c);
    const double a2 = out->alpha * out->alpha, b2 = out->beta * out->beta;
    out->omega_ss = a2 * omega1 + b2 * v;
    out->psi_ss = a2 * psi1 + b2 * (sym ? v : 0.0);
    out->omega_st = out->alpha * omega1;
    out->psi_st = out->alpha * (sym ? omega1 : psi0);
    return 0;
}
