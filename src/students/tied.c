/* aim_tied: tied-attention dynamics on top of aim_hierarchy; rules,
 * closures and initial moments are derived in theory/tied.md. */
#include "tied.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "family.h"
#include "inform.h"
#include "truncation.h"

struct aim_tied {
    aim_config cfg;
    aim_truncation_model hm; /* hierarchy, words, truncation, engine */
    int w_s, w_ss, w_st, w_tt, w_t; /* indices of S, SS, ST, TT, T */
    double *work;      /* 2 x size: noise and decay terms */
    /* the kernels at the last engine evaluation: CVODE's finite-difference
     * Jacobian perturbs words of length >= 3, which leave the order
     * parameters (and so the engine) unchanged */
    int cached;
    aim_overlaps cached_q;
    double cached_k[AIM_KERNEL_COUNT];
    int invalid; /* the last evaluation met moments of no matrix pair */
    char error[320];
};

/* S -> S - (eta/d)(G_s S + S G_s) + (eta/d)^2 G_s S G_s - 2 (eta gamma/d^2) S
 * with G_s = G + G^T (theory/tied.md sec. 1). */
static void tied_dynamics(aim_dynamics *dyn)
{
    memset(dyn, 0, sizeof *dyn);
    snprintf(dyn->alphabet.letters, sizeof dyn->alphabet.letters, "ST");
    snprintf(dyn->alphabet.transpose, sizeof dyn->alphabet.transpose, "ST");
    dyn->text_names[0] = "W W^T (student)";
    dyn->text_names[1] = "S* (teacher, symmetric)";
    dyn->latex_names[0] = "S";
    dyn->latex_names[1] = "S^{*}";
    dyn->student = "S";
    dyn->teacher = "T";
    dyn->n_rules = 1;
    aim_letter_rule *r = &dyn->rules[0];
    r->letter = 'S';
    r->n_first = 4;
    r->first[0] = (aim_first_term){-1.0, "", 0, "S"};
    r->first[1] = (aim_first_term){-1.0, "", 1, "S"};
    r->first[2] = (aim_first_term){-1.0, "S", 0, ""};
    r->first[3] = (aim_first_term){-1.0, "S", 1, ""};
    r->n_second = 4;
    for (int t = 0; t < 4; t++)
        r->second[t] = (aim_second_term){1.0, "", t / 2, "S", t % 2, ""};
    r->decay = 2.0;
}

static int is_pure(const char *w, char letter)
{
    if (!*w)
        return 0;
    for (; *w; w++)
        if (*w != letter)
            return 0;
    return 1;
}

/* The informed start (src/students/inform.h): the student's W shares columns with
 * the teacher's W*, so mixed words have non-zero cumulants; the planar
 * expansion with linked factors gives every moment up to M + 1. */
static int informed_start(aim_tied *m, char *err, size_t n)
{
    double c;
    aim_inform_planar p;
    if (aim_inform_mixing(&m->cfg, &c, err, n) || aim_inform_describe(&m->cfg, c, &p, err, n) ||
        aim_planar_moments_linked(m->hm.words, m->cfg.order + 1, p.factors, p.n_factors,
                                  p.links, p.n_links, p.letters, m->hm.start, err, n))
        return -1;
    m->hm.start[0] = 1.0;
    aim_truncation_cumulants_from_start(m->hm.trunc);
    return 0;
}

aim_tied *aim_tied_create(const aim_config *cfg, aim_gauss_rule rule,
                          char *err, size_t n)
{
    aim_tied *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(err, n, "out of memory");
        return NULL;
    }
    m->cfg = *cfg;
    aim_dynamics dyn;
    tied_dynamics(&dyn);
    if (aim_truncation_model_init(&m->hm, &dyn, cfg, rule, aim_family_symmetric_pair(cfg), err,
                                  n)) {
        free(m);
        return NULL;
    }
    const int M = cfg->order;
    m->work = malloc(sizeof *m->work * 2 * (size_t)m->hm.size);
    if (!m->work) {
        snprintf(err, n, "out of memory");
        aim_tied_free(m);
        return NULL;
    }
    m->w_s = aim_wordset_find(m->hm.words, "S");
    m->w_t = aim_wordset_find(m->hm.words, "T");
    m->w_ss = aim_wordset_find(m->hm.words, "SS");
    m->w_st = aim_wordset_find(m->hm.words, "ST");
    m->w_tt = aim_wordset_find(m->hm.words, "TT");

    /* exact start: free cumulants of each letter, mixed ones zero */
    double *start_cum = aim_truncation_start_cumulants(m->hm.trunc);
    const aim_family *teacher = aim_family_of(cfg->teacher.decomposition);
    for (int i = 1; i < m->hm.count; i++) {
        const char *w = aim_wordset_word(m->hm.words, i);
        int len = (int)strlen(w);
        if (is_pure(w, 'S'))
            start_cum[i] = cfg->student.rho * pow(cfg->student.scale, len);
        else if (is_pure(w, 'T'))
            start_cum[i] = teacher->free_cumulant(&cfg->teacher, len);
    }
    aim_truncation_start_from_cumulants(m->hm.trunc);
    if (cfg->student.overlap > 0.0 && informed_start(m, err, n)) {
        aim_tied_free(m);
        return NULL;
    }
    /* the closure (theory/tied.md sec. 6): the student's S^(M+1) extends
     * its free cumulants geometrically, kappa_(M+1) = kappa_M kappa_1 /
     * rho, exact for the free Poisson law of the start (kappa_n = rho v^n),
     * for the teacher's law when rho = rho*, and for any rescaling of S.
     * A mixed word with k letters S gets c^k kappa_(M+1)(S*) with c =
     * aligned ? the regression coefficient kappa_2(S,S*)/kappa_2(S*,S*) :
     * 0: the value for S = c S* + X with X free from S*, exact at the free
     * start (c = 0) and at S = S* (c = 1). The teacher's words keep their
     * start values. */
    const int w_top = aim_wordset_first(m->hm.words, M); /* S^M comes first */
    const int t_top = m->hm.count - 1;                   /* T^(M+1) last */
    aim_truncation_alignment(m->hm.trunc, m->w_st, m->w_tt);
    aim_truncation_geometric(m->hm.trunc, m->w_s, cfg->student.rho);
    for (int i = 1; i < m->hm.count; i++) {
        const char *w = aim_wordset_word(m->hm.words, i);
        const int pure = is_pure(w, 'S'), moves = aim_hierarchy_moves(m->hm.h, i);
        if (i < aim_truncation_first_long(m->hm.trunc)) {
            if (!pure && moves)
                aim_truncation_mixed(m->hm.trunc, i);
            continue;
        }
        int k = 0;
        for (; *w; w++)
            k += *w == 'S';
        aim_truncation_rule(m->hm.trunc, i,
                            pure     ? AIM_CLOSE_GEOMETRIC
                            : !moves ? AIM_CLOSE_KEEP
                                     : AIM_CLOSE_ALIGNED,
                            pure ? w_top : t_top, k);
    }
    return m;
}

aim_gauss *aim_tied_gauss(aim_tied *m) { return m->hm.gauss; }

void aim_tied_free(aim_tied *m)
{
    if (!m)
        return;
    aim_truncation_model_release(&m->hm);
    free(m->work);
    free(m);
}

const aim_hierarchy *aim_tied_hierarchy(const aim_tied *m) { return m->hm.h; }
int aim_tied_size(const aim_tied *m) { return m->hm.size; }
int aim_tied_order_parameters(const aim_tied *m) { return m->hm.n_params; }
const char *aim_tied_state_name(void *m, int i)
{
    return ((const aim_tied *)m)->hm.names[i];
}
const double *aim_tied_start_moments(const aim_tied *m) { return m->hm.start; }
const char *aim_tied_error(const aim_tied *m) { return m->error; }
int aim_tied_left_valid(const aim_tied *m) { return m->invalid; }

void aim_tied_set_start(aim_tied *m, const double *moments)
{
    memcpy(m->hm.start, moments, sizeof *m->hm.start * (size_t)m->hm.count);
    m->hm.start[0] = 1.0;
    aim_truncation_cumulants_from_start(m->hm.trunc);
}

void aim_tied_initial(const aim_tied *m, double *y)
{
    aim_truncation_initial(m->hm.trunc, y);
}

int aim_tied_moments(aim_tied *m, const double *y, double *mom)
{
    /* tracked words from y; the teacher's from the start */
    aim_truncation_fill(m->hm.trunc, y, mom);
    if (aim_truncation_close(m->hm.trunc, m->cfg.closure, mom)) {
        m->invalid = 1;
        snprintf(m->error, sizeof m->error, "%s", AIM_TRUNCATION_CLOSE_FAILED);
        return -1;
    }
    return 0;
}

void aim_tied_overlaps(const aim_tied *m, const double *mom, aim_overlaps *q)
{
    memset(q, 0, sizeof *q);
    q->omega[0][0] = q->psi[0][0] = mom[m->w_ss];
    q->omega[0][1] = q->omega[1][0] = q->psi[0][1] = q->psi[1][0] = mom[m->w_st];
    q->omega[1][1] = q->psi[1][1] = mom[m->w_tt];
    q->trace[0] = mom[m->w_s];
    q->trace[1] = mom[m->w_t];
}

int aim_tied_terms_at(aim_tied *m, const double *mom, double *gradient,
                      double *noise, double *decay)
{
    aim_overlaps q;
    aim_tied_overlaps(m, mom, &q);
    double *k = m->cached_k;
    if (m->cached && memcmp(&q, &m->cached_q, sizeof q) == 0) {
        aim_hierarchy_eval(m->hm.h, mom, k, gradient, noise, decay);
        return 0;
    }
    m->cached = 0;
    if (aim_gauss_eval(m->hm.gauss, &q)) {
        m->invalid = q.omega[0][0] * q.omega[1][1] < q.omega[0][1] * q.omega[0][1] ||
                     q.omega[0][0] < 0.0;
        snprintf(m->error, sizeof m->error, "%s", aim_gauss_error(m->hm.gauss));
        return -1;
    }
    aim_hierarchy_kernels(m->hm.gauss, m->cfg.eta, m->cfg.gamma, k);
    m->cached_q = q;
    m->cached = 1;
    aim_hierarchy_eval(m->hm.h, mom, k, gradient, noise, decay);
    return 0;
}

int aim_tied_terms(aim_tied *m, const double *y, double *gradient,
                   double *noise, double *decay)
{
    m->invalid = 0;
    for (int i = 0; i < m->hm.size; i++)
        if (!isfinite(y[i])) {
            m->invalid = 1; /* no matrices have these moments */
            snprintf(m->error, sizeof m->error, "%s is not finite", m->hm.names[i]);
            return -1;
        }
    if (aim_tied_moments(m, y, m->hm.mom))
        return -1;
    return aim_tied_terms_at(m, m->hm.mom, gradient, noise, decay);
}

int aim_tied_rhs(aim_tied *m, const double *y, double *dy)
{
    double *noise = m->work, *decay = m->work + m->hm.size;
    int st = aim_tied_terms(m, y, dy, noise, decay);
    if (st == 0)
        for (int i = 0; i < m->hm.size; i++)
            dy[i] += noise[i] + decay[i];
    return st;
}

int aim_tied_observables(aim_tied *m, const double *y, double obs[AIM_OBS_COUNT])
{
    if (aim_tied_moments(m, y, m->hm.mom))
        return -1;
    aim_overlaps q;
    aim_tied_overlaps(m, m->hm.mom, &q);
    if (aim_gauss_observables(m->hm.gauss, &q, obs)) {
        snprintf(m->error, sizeof m->error, "%s", aim_gauss_error(m->hm.gauss));
        return -1;
    }
    return 0;
}

/* The validity margins (theory/stops.md sec. 1): continuous in the
 * state, >= 0 where the low moments can be those of a positive
 * semi-definite S and a symmetric S*. With mu_k = m(S^k):
 *   mu_1 >= 0;                                  the Hankel matrices
 *   mu_2 - mu_1^2 >= 0 (M >= 2);                [mu_(i+j)] and
 *   mu_1 mu_3 - mu_2^2 >= 0 (M >= 3);           [mu_(i+j+1)], i, j <= 1
 *   kappa_2(S,S) kappa_2(S*,S*) - kappa_2(S,S*)^2 >= 0 (Cauchy-Schwarz of
 *   the traceless parts: |overlap| <= 1, unclamped).
 * The order parameters and the words next to them only: the highest
 * tracked words carry the closure error first, and a condition on them
 * would stop runs whose observables are still accurate. Each carries a
 * round-off allowance of 1e-9 of its scale, so that a start on the
 * boundary (a spectrum with few atoms) counts as valid. */
enum { MARGIN_MEAN, MARGIN_VARIANCE, MARGIN_HANKEL3, MARGIN_OVERLAP, MARGINS };

static const char *const margin_texts[MARGINS] = {
    [MARGIN_MEAN] = "m(S) >= 0",
    [MARGIN_VARIANCE] = "m(SS) >= m(S)^2",
    [MARGIN_HANKEL3] = "m(SS)^2 <= m(S) m(SSS)",
    [MARGIN_OVERLAP] = ("kappa_2(S,S*)^2 <= kappa_2(S,S) kappa_2(S*,S*) (the teacher overlap "
                        "within [-1, 1])")};

/* The margin behind slot k of aim_tied_margins at order M. */
static int margin_kind(int M, int k)
{
    static const int by_order[3][MARGINS] = {
        {MARGIN_MEAN, MARGIN_OVERLAP},
        {MARGIN_MEAN, MARGIN_VARIANCE, MARGIN_OVERLAP},
        {MARGIN_MEAN, MARGIN_VARIANCE, MARGIN_HANKEL3, MARGIN_OVERLAP}};
    return by_order[(M < 3 ? M : 3) - 1][k];
}

int aim_tied_margin_count(const aim_tied *m)
{
    const int M = aim_hierarchy_order(m->hm.h);
    return M < 3 ? M + 1 : MARGINS;
}

const char *aim_tied_margin_text(const aim_tied *m, int k)
{
    return margin_texts[margin_kind(aim_hierarchy_order(m->hm.h), k)];
}

void aim_tied_margins(aim_tied *m, const double *y, double *g)
{
    const int M = aim_hierarchy_order(m->hm.h);
    aim_tied_moments(m, y, m->hm.mom);
    const double *mo = m->hm.mom;
    const double mu1 = mo[m->w_s], mu2 = mo[m->w_ss];
    const double mu3 = M >= 3 ? mo[aim_wordset_find(m->hm.words, "SSS")] : NAN;
    const double cst = mo[m->w_st] - mu1 * mo[m->w_t];
    const double vs = mu2 - mu1 * mu1, vt = mo[m->w_tt] - mo[m->w_t] * mo[m->w_t];
    for (int k = 0; k < aim_tied_margin_count(m); k++) {
        switch (margin_kind(M, k)) {
        case MARGIN_MEAN: g[k] = mu1; break;
        case MARGIN_VARIANCE: g[k] = vs + 1e-9 * fmax(1.0, fabs(mu2)); break;
        case MARGIN_HANKEL3:
            g[k] = mu1 * mu3 - mu2 * mu2 + 1e-9 * fmax(fabs(mu1), fabs(mu3)) * mu1;
            break;
        default: g[k] = (1.0 + 1e-9) * vs * vt + 1e-300 - cst * cst;
        }
    }
}

int aim_tied_check(aim_tied *m, const double *y)
{
    double g[MARGINS];
    aim_tied_margins(m, y, g);
    for (int k = 0; k < aim_tied_margin_count(m); k++)
        if (!(g[k] >= 0.0)) {
            snprintf(m->error, sizeof m->error,
                     "the moments are not those of a positive semi-definite S and a "
                     "symmetric S*: %s fails",
                     aim_tied_margin_text(m, k));
            return -1;
        }
    return 0;
}

double aim_tied_overlap(aim_tied *m, const double *y)
{
    aim_overlaps q;
    aim_tied_moments(m, y, m->hm.mom);
    aim_tied_overlaps(m, m->hm.mom, &q);
    return aim_overlaps_teacher_overlap(&q);
}
