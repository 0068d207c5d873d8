/* aim_tied: tied-attention dynamics on top of aim_hierarchy; rules,
 * closures and initial moments are derived in theory/tied.md. */
#include "tied.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "freecum.h"

struct aim_tied {
    aim_config cfg;
    aim_hierarchy *h;
    const aim_wordset *words; /* owned by h */
    aim_freecum *fc;
    aim_gauss *gauss;
    int count;       /* words of length 0..M + 1 */
    int first_long;  /* first word of length M + 1 */
    int size;        /* tracked words */
    int n_params;    /* tracked words of length <= 2 */
    int w_s, w_ss, w_st, w_tt, w_t; /* indices of S, SS, ST, TT, T */
    int *pure_student; /* per word: 1 for S^n */
    double *start;     /* moments at tau = 0 */
    double *start_cum; /* their free cumulants */
    double *mom, *cum; /* work */
    double *work;      /* 2 x size: noise and decay terms */
    char **names;
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

/* Free cumulant kappa_n of the teacher's spectrum (exact large d). */
static double teacher_cumulant(const aim_config *cfg, int n)
{
    const aim_matrix_spec *t = &cfg->teacher;
    if (t->decomposition == AIM_TIED)
        return t->rho * pow(t->scale, n);
    return n == 2 ? t->scale : 0.0; /* symmetric Wigner: semicircle */
}

static void set_start_cumulants(aim_tied *m)
{
    aim_freecum_cumulants(m->fc, m->start, m->start_cum,
                          aim_hierarchy_order(m->h) + 1);
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
    m->h = aim_hierarchy_create(&dyn, cfg->order, err, n);
    if (!m->h) {
        free(m);
        return NULL;
    }
    const int M = cfg->order;
    m->words = aim_hierarchy_words(m->h);
    m->count = aim_wordset_count(m->words);
    m->first_long = aim_wordset_first(m->words, M + 1);
    m->size = aim_hierarchy_size(m->h);
    m->fc = aim_freecum_create(m->words);
    m->gauss = aim_gauss_create(cfg, rule);
    size_t c = (size_t)m->count;
    m->pure_student = calloc(c, sizeof *m->pure_student);
    m->start = calloc(c, sizeof *m->start);
    m->start_cum = calloc(c, sizeof *m->start_cum);
    m->mom = calloc(c, sizeof *m->mom);
    m->cum = calloc(c, sizeof *m->cum);
    m->names = aim_hierarchy_state_names(m->h);
    m->work = malloc(sizeof *m->work * 2 * (size_t)m->size);
    if (!m->work || !m->fc || !m->gauss || !m->pure_student || !m->start ||
        !m->start_cum || !m->mom || !m->cum || !m->names) {
        snprintf(err, n, "out of memory, or the quasi-random point set could "
                         "not be whitened (raise ode.qmc_points)");
        aim_tied_free(m);
        return NULL;
    }
    m->n_params = aim_hierarchy_order_parameters(m->h);
    m->w_s = aim_wordset_find(m->words, "S");
    m->w_t = aim_wordset_find(m->words, "T");
    m->w_ss = aim_wordset_find(m->words, "SS");
    m->w_st = aim_wordset_find(m->words, "ST");
    m->w_tt = aim_wordset_find(m->words, "TT");

    /* exact start: free cumulants of each letter, mixed ones zero */
    for (int i = 1; i < m->count; i++) {
        const char *w = aim_wordset_word(m->words, i);
        int len = (int)strlen(w);
        m->pure_student[i] = is_pure(w, 'S');
        if (m->pure_student[i])
            m->start_cum[i] = cfg->student.rho * pow(cfg->student.scale, len);
        else if (is_pure(w, 'T'))
            m->start_cum[i] = teacher_cumulant(cfg, len);
    }
    m->start[0] = 1.0;
    aim_freecum_moments(m->fc, m->start_cum, m->start, 1, M + 1);
    return m;
}

void aim_tied_free(aim_tied *m)
{
    if (!m)
        return;
    if (m->names)
        for (int i = 0; i < m->size; i++)
            free(m->names[i]);
    free(m->names);
    free(m->pure_student);
    free(m->start);
    free(m->start_cum);
    free(m->mom);
    free(m->cum);
    free(m->work);
    aim_gauss_free(m->gauss);
    aim_freecum_free(m->fc);
    aim_hierarchy_free(m->h);
    free(m);
}

const aim_hierarchy *aim_tied_hierarchy(const aim_tied *m) { return m->h; }
int aim_tied_size(const aim_tied *m) { return m->size; }
int aim_tied_order_parameters(const aim_tied *m) { return m->n_params; }
const char *aim_tied_state_name(void *m, int i)
{
    return ((const aim_tied *)m)->names[i];
}
const double *aim_tied_start_moments(const aim_tied *m) { return m->start; }
const char *aim_tied_error(const aim_tied *m) { return m->error; }
int aim_tied_left_valid(const aim_tied *m) { return m->invalid; }

void aim_tied_set_start(aim_tied *m, const double *moments)
{
    memcpy(m->start, moments, sizeof *m->start * (size_t)m->count);
    m->start[0] = 1.0;
    set_start_cumulants(m);
}

void aim_tied_initial(const aim_tied *m, double *y)
{
    for (int i = 0; i < m->size; i++)
        y[i] = m->start[aim_hierarchy_tracked(m->h, i)];
}

/* Fills the cumulants of the words of length M + 1 (theory/tied.md
 * sec. 6): the teacher's are known; the student's S^(M+1) extends its
 * free cumulants geometrically, kappa_(M+1) = kappa_M kappa_1 / rho,
 * exact for the free Poisson law of the start (kappa_n = rho v^n), for
 * the teacher's law when rho = rho*, and for any rescaling of S. A mixed
 * word with k letters S gets c^k kappa_(M+1)(S*) with c = aligned ? the
 * regression coefficient kappa_2(S,S*)/kappa_2(S*,S*) : 0: the value
 * for S = c S* + X with X free from S*, exact at the free start (c = 0)
 * and at S = S* (c = 1). */
static void close_cumulants(aim_tied *m, double *cum, int aligned)
{
    const int M = aim_hierarchy_order(m->h);
    const int w_top = aim_wordset_first(m->words, M); /* S^M comes first */
    const int t_top = aim_wordset_count(m->words) - 1; /* T^(M+1) last */
    /* at M = 1 the pair cumulant kappa_2(S,S*) is itself being closed:
     * no correlation is known, c = 0 */
    double c = 0.0;
    if (aligned && M >= 2 && cum[m->w_tt] > 0.0)
        c = cum[m->w_st] / cum[m->w_tt];
    for (int i = m->first_long; i < m->count; i++) {
        if (m->pure_student[i])
            cum[i] = cum[w_top] * cum[m->w_s] / m->cfg.student.rho;
        else if (!aim_hierarchy_moves(m->h, i))
            cum[i] = m->start_cum[i];
        else if (aligned) {
            int k = 0;
            for (const char *w = aim_wordset_word(m->words, i); *w; w++)
                k += *w == 'S';
            cum[i] = pow(c, k) * m->start_cum[t_top];
        } else
            cum[i] = 0.0;
    }
}

void aim_tied_moments(aim_tied *m, const double *y, double *mom)
{
    const int M = aim_hierarchy_order(m->h);
    /* tracked words from y; the teacher's from the start */
    memcpy(mom, m->start, sizeof *mom * (size_t)m->count);
    for (int i = 0; i < m->size; i++)
        mom[aim_hierarchy_tracked(m->h, i)] = y[i];
    switch (m->cfg.closure) {
    case AIM_CLOSURE_INITIAL:
        break; /* the long words keep their start values */
    case AIM_CLOSURE_ALIGNED:
    case AIM_CLOSURE_CUMULANT:
        aim_freecum_cumulants(m->fc, mom, m->cum, M);
        close_cumulants(m, m->cum, m->cfg.closure == AIM_CLOSURE_ALIGNED);
        aim_freecum_moments(m->fc, m->cum, mom, M + 1, M + 1);
        break;
    case AIM_CLOSURE_FREE:
        aim_freecum_cumulants(m->fc, mom, m->cum, M);
        for (int i = 1; i < m->first_long; i++)
            if (!m->pure_student[i] && aim_hierarchy_moves(m->h, i))
                m->cum[i] = 0.0;
        close_cumulants(m, m->cum, 0);
        aim_freecum_moments(m->fc, m->cum, mom, M + 1, M + 1);
        break;
    }
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
        aim_hierarchy_eval(m->h, mom, k, gradient, noise, decay);
        return 0;
    }
    m->cached = 0;
    if (aim_gauss_eval(m->gauss, &q)) {
        m->invalid = q.omega[0][0] * q.omega[1][1] < q.omega[0][1] * q.omega[0][1] ||
                     q.omega[0][0] < 0.0;
        snprintf(m->error, sizeof m->error, "%s", aim_gauss_error(m->gauss));
        return -1;
    }
    aim_hierarchy_kernels(m->gauss, m->cfg.eta, m->cfg.gamma, k);
    m->cached_q = q;
    m->cached = 1;
    aim_hierarchy_eval(m->h, mom, k, gradient, noise, decay);
    return 0;
}

int aim_tied_terms(aim_tied *m, const double *y, double *gradient,
                   double *noise, double *decay)
{
    m->invalid = 0;
    for (int i = 0; i < m->size; i++)
        if (!isfinite(y[i])) {
            m->invalid = 1; /* no matrices have these moments */
            snprintf(m->error, sizeof m->error, "%s is not finite", m->names[i]);
            return -1;
        }
    aim_tied_moments(m, y, m->mom);
    return aim_tied_terms_at(m, m->mom, gradient, noise, decay);
}

int aim_tied_rhs(aim_tied *m, const double *y, double *dy)
{
    double *noise = m->work, *decay = m->work + m->size;
    int st = aim_tied_terms(m, y, dy, noise, decay);
    if (st == 0)
        for (int i = 0; i < m->size; i++)
            dy[i] += noise[i] + decay[i];
    return st;
}

int aim_tied_observables(aim_tied *m, const double *y, double obs[AIM_OBS_COUNT])
{
    aim_tied_moments(m, y, m->mom);
    aim_overlaps q;
    aim_tied_overlaps(m, m->mom, &q);
    if (aim_gauss_observables(m->gauss, &q, obs)) {
        snprintf(m->error, sizeof m->error, "%s", aim_gauss_error(m->gauss));
        return -1;
    }
    return 0;
}

/* Cholesky of the n x n Hankel matrix [mu[i + j + shift]], tolerant to
 * round-off (-1e-9 relative on the pivots): 0 when positive
 * semi-definite. Written out because GSL's Cholesky rejects singular
 * matrices, and a Hankel matrix of a spectrum with few atoms is
 * singular. n <= 2. */
static int hankel_psd(const double *mu, int n, int shift)
{
    double a[4], scale = 0.0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            a[i * n + j] = mu[i + j + shift];
            if (i == j)
                scale = fmax(scale, fabs(a[i * n + j]));
        }
    for (int j = 0; j < n; j++) {
        double p = a[j * n + j];
        for (int k = 0; k < j; k++)
            p -= a[j * n + k] * a[j * n + k];
        if (p < -1e-9 * scale)
            return -1;
        double r = p > 1e-12 * scale ? sqrt(p) : 0.0;
        for (int i = j + 1; i < n; i++) {
            double v = a[i * n + j];
            for (int k = 0; k < j; k++)
                v -= a[i * n + k] * a[j * n + k];
            if (r == 0.0 && fabs(v) > 1e-6 * scale)
                return -1; /* a zero pivot with a non-zero column */
            a[i * n + j] = r > 0.0 ? v / r : 0.0;
        }
        a[j * n + j] = r;
    }
    return 0;
}

int aim_tied_check(aim_tied *m, const double *y)
{
    const int M = aim_hierarchy_order(m->h);
    aim_tied_moments(m, y, m->mom);
    double mu[4];
    char word[AIM_WORD_MAX + 1];
    /* The order parameters and the words next to them: m(S^k), k <= 3.
     * The highest tracked words carry the closure error first, and a
     * Hankel condition on them would stop runs whose observables are
     * still accurate. */
    const int top = M < 3 ? M : 3;
    for (int k = 0; k <= top; k++) {
        memset(word, 'S', (size_t)k);
        word[k] = '\0';
        mu[k] = m->mom[aim_wordset_find(m->words, word)];
    }
    static const char *const conditions[4] = {
        "", "m(S) >= 0", "m(S) >= 0 and m(SS) >= m(S)^2",
        "m(SS) >= m(S)^2 and m(SS)^2 <= m(S) m(SSS)"};
    if (hankel_psd(mu, top / 2 + 1, 0) || (top >= 1 && hankel_psd(mu, (top - 1) / 2 + 1, 1))) {
        snprintf(m->error, sizeof m->error,
                 "the moments m(S^k), k <= %d, are not those of a positive semi-definite "
                 "S (%s fails)", top, conditions[top]);
        return -1;
    }
    /* the unclamped Cauchy-Schwarz inequality of the traceless parts (the
     * overlap function clamps to [-1, 1]) */
    const double cst = m->mom[m->w_st] - m->mom[m->w_s] * m->mom[m->w_t];
    const double vs = m->mom[m->w_ss] - m->mom[m->w_s] * m->mom[m->w_s];
    const double vt = m->mom[m->w_tt] - m->mom[m->w_t] * m->mom[m->w_t];
    if (!(cst * cst <= (1.0 + 1e-9) * vs * vt + 1e-300)) {
        snprintf(m->error, sizeof m->error,
                 "the teacher overlap would be %.6g, outside [-1, 1] (kappa_2(S,S*)^2 > "
                 "kappa_2(S,S) kappa_2(S*,S*))",
                 vs > 0 && vt > 0 ? cst / sqrt(vs * vt) : INFINITY);
        return -1;
    }
    return 0;
}
