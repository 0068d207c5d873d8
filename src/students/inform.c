/* aim_inform: the informed start (see inform.h; derivation in
 * theory/model.md sec. 4). */
#include "inform.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_roots.h>

#include "family.h"

double aim_inform_teacher_trace(const aim_config *cfg)
{
    double omega, psi, trace;
    aim_family_start_overlaps(&cfg->teacher, &omega, &psi, &trace);
    return trace;
}

/* Omega and Psi of the teacher's traceless part (its raw mean and its
 * large-d trace removed). */
static int teacher_traceless(const aim_config *cfg, double *omega0, double *psi0, char *err,
                             size_t n)
{
    aim_planar_factor f[2];
    aim_planar_letter l[2];
    const int nf = aim_family_of(cfg->teacher.decomposition)->planar(&cfg->teacher, 0, f, l);
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
    const aim_family *s = aim_family_of(cfg->decomposition);
    if (s->inform(cfg, c, aim_family_of(cfg->teacher.decomposition), out) == 0)
        return 0;
    snprintf(err, n, "student.overlap > 0: a %s student has an informed start with a %s "
                     "teacher only (its factors are mixed with the teacher's; "
                     "theory/model.md sec. 4)",
             s->name, s->inform_teachers);
    return -1;
}

/* The large-d overlap of a tied or untied student at coefficient c. */
static int factored_overlap(const aim_config *cfg, double c, double *overlap, char *err,
                            size_t n)
{
    aim_inform_planar p;
    if (aim_inform_describe(cfg, c, &p, err, n))
        return -1;
    aim_alphabet ab;
    const char *words[5];
    aim_family_of(cfg->decomposition)->inform_words(cfg, &ab, words);
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
    /* a student drawn entry by entry (direct) mixes in the teacher's
     * matrix itself: closed form */
    if (aim_family_of(cfg->decomposition)->factors == 0) {
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
