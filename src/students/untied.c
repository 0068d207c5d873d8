/* aim_untied: untied-attention dynamics on top of aim_hierarchy; rules,
 * the raw mean and its two clocks, closures and initial moments are
 * derived in theory/untied.md. */
#include "untied.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_roots.h>

#include "family.h"
#include "family_untied.h"
#include "inform.h"
#include "planar.h"
#include "truncation.h"

struct aim_untied {
    aim_config cfg;
    aim_truncation_model hm; /* hierarchy, words, truncation, engine */
    int raw, adiabatic;
    double d;          /* stiff raw system: its finite d; 0 otherwise */
    double sqrt_d;
    int slot_k;        /* state index of the word K */
    int w_a, w_b, w_k, w_kk, w_kk2, w_kt, w_kt2, w_t, w_tt, w_tt2;
    double *vlam;      /* per equation: the coefficient of lambda */
    double *work;      /* 3 x size: gradient, noise and decay terms */
    char **moment_names; /* "m(w)" for every slot, K included */
    double mean0;      /* raw: the student mean at the start */
    double root;       /* adiabatic: the last critical point found */
    int cached;
    aim_overlaps cached_q;
    double cached_k[AIM_KERNEL_COUNT];
    double cached_root;
    int invalid; /* the last evaluation met moments of no pair of matrices (1)
                    or a mean that runs away (AIM_UNTIED_RUNAWAY) */
    char error[320];
};

static int is_student_letter(char c) { return c && strchr("ABKk", c) != NULL; }
static int is_teacher_letter(char c) { return c == 'T' || c == 't'; }

/* One step with G = grad_S l, eps = eta/d (theory/untied.md sec. 1):
 *   A -> A - eps (G k + K G^T) + eps^2 G B G^T
 *   B -> B - eps (G^T K + k G) + eps^2 G^T A G
 *   K -> K - eps (G B + A G)   + eps^2 G k G
 *   k -> k - eps (B G^T + G^T A) + eps^2 G^T K G^T
 * and weight decay 2 eps gamma/d on each (U and V decay once). */
static void untied_dynamics(const aim_config *cfg, aim_dynamics *dyn)
{
    memset(dyn, 0, sizeof *dyn);
    aim_untied_alphabet(cfg, &dyn->alphabet);
    static const char *const text[6] = {"U U^T", "V V^T", "U V^T (student S)",
                                        "V U^T (S^T)", "S* (teacher)", "S*^T"};
    static const char *const tex[6] = {"A", "B", "K", "K^{\\top}", "S^{*}",
                                       "S^{*\\top}"};
    for (int i = 0; i < 6; i++) {
        dyn->text_names[i] = text[i];
        dyn->latex_names[i] = tex[i];
    }
    dyn->student = "K";
    dyn->teacher = "T";
    dyn->mean_terms = cfg->centring == AIM_RAW;
    dyn->n_rules = 4;
    aim_letter_rule *r = dyn->rules;
    r[0] = (aim_letter_rule){.letter = 'A', .n_first = 2, .n_second = 1, .decay = 2.0};
    r[0].first[0] = (aim_first_term){-1.0, "", 0, "k"};
    r[0].first[1] = (aim_first_term){-1.0, "K", 1, ""};
    r[0].second[0] = (aim_second_term){1.0, "", 0, "B", 1, ""};
    r[1] = (aim_letter_rule){.letter = 'B', .n_first = 2, .n_second = 1, .decay = 2.0};
    r[1].first[0] = (aim_first_term){-1.0, "", 1, "K"};
    r[1].first[1] = (aim_first_term){-1.0, "k", 0, ""};
    r[1].second[0] = (aim_second_term){1.0, "", 1, "A", 0, ""};
    r[2] = (aim_letter_rule){.letter = 'K', .n_first = 2, .n_second = 1, .decay = 2.0};
    r[2].first[0] = (aim_first_term){-1.0, "", 0, "B"};
    r[2].first[1] = (aim_first_term){-1.0, "A", 0, ""};
    r[2].second[0] = (aim_second_term){1.0, "", 0, "k", 0, ""};
    r[3] = (aim_letter_rule){.letter = 'k', .n_first = 2, .n_second = 1, .decay = 2.0};
    r[3].first[0] = (aim_first_term){-1.0, "B", 1, ""};
    r[3].first[1] = (aim_first_term){-1.0, "", 1, "A"};
    r[3].second[0] = (aim_second_term){1.0, "", 1, "K", 1, ""};
}

/* Exact large-d moments of the independent Gaussian start (or of the
 * informed one, src/students/inform.h) through the
 * planar (non-crossing pairing) expansion in the factors U, V and the
 * teacher's own factors (theory/untied.md sec. 6). */
static double sv_of(const aim_config *cfg)
{
    return cfg->student.scale_v > 0.0 ? cfg->student.scale_v : cfg->student.scale;
}

static int planar_start(aim_untied *m, char *err, size_t n)
{
    const aim_config *cfg = &m->cfg;
    if (cfg->student.overlap > 0.0) { /* informed: linked factors (src/students/inform.h) */
        double c;
        aim_inform_planar p;
        if (aim_inform_mixing(cfg, &c, err, n) || aim_inform_describe(cfg, c, &p, err, n))
            return -1;
        return aim_planar_moments_linked(m->hm.words, aim_hierarchy_order(m->hm.h) + 1,
                                         p.factors, p.n_factors, p.links, p.n_links,
                                         p.letters, m->hm.start, err, n);
    }
    const double sv = sv_of(cfg);
    aim_planar_factor f[4] = {{cfg->student.rho, cfg->student.scale, 0},
                              {cfg->student.rho, sv, 0}};
    aim_planar_letter l[6] = {{2, {0, 0}, {0, 1}}, {2, {1, 1}, {0, 1}},
                              {2, {0, 1}, {0, 1}}, {2, {1, 0}, {0, 1}}};
    /* the teacher's own factors from 2, its letters T and t */
    const int nf = 2 + aim_family_of(cfg->teacher.decomposition)
                           ->planar(&cfg->teacher, 2, f + 2, l + 4);
    return aim_planar_moments(m->hm.words, aim_hierarchy_order(m->hm.h) + 1, f, nf, l, m->hm.start,
                              err, n);
}

/* m(w) with every teacher letter L replaced by L + eps I (the teacher
 * mean adds mean/sqrt(d) times I at finite d), from the moments m0 without it:
 * the sum over subsets of teacher letters dropped, eps per letter. */
static double shifted_moment(const aim_untied *m, const double *m0, char *w, int from,
                             double eps)
{
    int p = from;
    while (w[p] && !is_teacher_letter(w[p]))
        p++;
    if (!w[p])
        return m0[aim_wordset_find(m->hm.words, w)];
    const double keep = shifted_moment(m, m0, w, p + 1, eps);
    char dropped[AIM_WORD_MAX + 1];
    memcpy(dropped, w, (size_t)p);
    strcpy(dropped + p, w + p + 1);
    return keep + eps * shifted_moment(m, m0, dropped, p, eps);
}

static void apply_teacher_mean(aim_untied *m)
{
    const double eps = m->cfg.teacher.mean / m->sqrt_d;
    double *m0 = m->hm.mom; /* work copy of the unshifted moments */
    memcpy(m0, m->hm.start, sizeof *m0 * (size_t)m->hm.count);
    char w[AIM_WORD_MAX + 1];
    for (int i = 1; i < m->hm.count; i++) {
        strcpy(w, aim_wordset_word(m->hm.words, i));
        m->hm.start[i] = shifted_moment(m, m0, w, 0, eps);
    }
}

/* How each word of length M + 1 is closed (theory/untied.md sec. 5):
 * words of one side keep their start cumulant (the teacher's are exact,
 * the student's are their value at the start); mixed words get 0, or
 * under the aligned closure, when their student letters are all K or k,
 * the cumulant of S = c S* + X, X free from S*: c^j times that of the
 * teacher word with K -> T, k -> t (j student letters). */
static int plan_closure(aim_untied *m)
{
    const int M = aim_hierarchy_order(m->hm.h);
    const int sym = aim_untied_teacher_symmetric(&m->cfg);
    for (int i = 0; i < m->hm.count; i++) {
        const char *w = aim_wordset_word(m->hm.words, i);
        int student = 0, teacher = 0, only_k = 1;
        char mapped[AIM_WORD_MAX + 1];
        int len = 0;
        for (const char *c = w; *c; c++) {
            student += is_student_letter(*c);
            teacher += is_teacher_letter(*c);
            only_k &= *c == 'K' || *c == 'k' || is_teacher_letter(*c);
            mapped[len++] = *c == 'K' ? 'T' : *c == 'k' ? (sym ? 'T' : 't') : *c;
        }
        mapped[len] = '\0';
        if (i < aim_truncation_first_long(m->hm.trunc)) {
            if (student && teacher)
                aim_truncation_mixed(m->hm.trunc, i);
            continue;
        }
        if (student && teacher) {
            const int target = aim_wordset_find(m->hm.words, mapped);
            if (target < 0)
                return -1;
            aim_truncation_rule(m->hm.trunc, i,
                                only_k && M >= 2 ? AIM_CLOSE_ALIGNED : AIM_CLOSE_ZERO, target,
                                student);
        } else {
            aim_truncation_rule(m->hm.trunc, i, AIM_CLOSE_KEEP, 0, 0);
        }
    }
    return 0;
}

aim_gauss *aim_untied_gauss(aim_untied *m) { return m->hm.gauss; }

void aim_untied_free(aim_untied *m)
{
    if (!m)
        return;
    if (m->moment_names)
        for (int i = 0; i < m->hm.size; i++)
            free(m->moment_names[i]);
    free(m->moment_names);
    free(m->vlam);
    free(m->work);
    aim_truncation_model_release(&m->hm);
    free(m);
}

static int find_word(const aim_untied *m, const char *w, int sym)
{
    char buf[AIM_WORD_MAX + 1];
    size_t len = strlen(w);
    for (size_t i = 0; i <= len; i++)
        buf[i] = sym && w[i] == 't' ? 'T' : w[i];
    return aim_wordset_find(m->hm.words, buf);
}

static void overlaps_of(const aim_untied *m, const double *mom, double mean, aim_overlaps *q);

/* m->mean0: typical when the fast flow leaves 0 in both directions (0
 * an unstable critical point: dR/dm < 0 at +typical and > 0 at
 * -typical), else 0. A sign test, so quadrature error in E_C(0) does not
 * decide. */
static int start_mean(aim_untied *m, double typical, char *err, size_t n)
{
    aim_overlaps q;
    double slope[2];
    for (int i = 0; i < 2; i++) {
        overlaps_of(m, m->hm.start, i ? -typical : typical, &q);
        if (aim_gauss_eval(m->hm.gauss, &q)) {
            snprintf(err, n, "the start: %s", aim_gauss_error(m->hm.gauss));
            return -1;
        }
        slope[i] = aim_gauss_error_mean(m->hm.gauss);
    }
    m->mean0 = slope[0] < 0.0 && slope[1] > 0.0 ? typical : 0.0;
    return 0;
}

aim_untied *aim_untied_create(const aim_config *cfg, double d, aim_gauss_rule rule,
                              char *err, size_t n)
{
    aim_untied *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(err, n, "out of memory");
        return NULL;
    }
    m->cfg = *cfg;
    m->raw = cfg->centring == AIM_RAW;
    m->adiabatic = m->raw && cfg->mean_mode == AIM_MEAN_ADIABATIC;
    m->d = m->raw && !m->adiabatic && d > 0.0 ? d : 0.0;
    if (m->raw && !(d > 0.0)) {
        snprintf(err, n, "raw centring needs the dimension of the runs (ode.d or sgd.d)");
        free(m);
        return NULL;
    }
    m->sqrt_d = sqrt(m->d);
    aim_dynamics dyn;
    untied_dynamics(cfg, &dyn);
    if (aim_truncation_model_init(&m->hm, &dyn, cfg, rule, aim_family_symmetric_pair(cfg), err,
                                  n)) {
        free(m);
        return NULL;
    }
    const int M = cfg->order;
    m->vlam = calloc((size_t)m->hm.size, sizeof *m->vlam);
    m->work = calloc(3 * (size_t)m->hm.size, sizeof *m->work);
    m->moment_names = aim_hierarchy_state_names(m->hm.h);
    if (!m->moment_names || !m->vlam || !m->work) {
        snprintf(err, n, "out of memory");
        aim_untied_free(m);
        return NULL;
    }
    const int sym = aim_untied_teacher_symmetric(cfg);
    m->w_a = find_word(m, "A", sym);
    m->w_b = find_word(m, "B", sym);
    m->w_k = find_word(m, "K", sym);
    m->w_kk = find_word(m, "Kk", sym);   /* Omega(S, S) */
    m->w_kk2 = find_word(m, "KK", sym);  /* Psi(S, S) */
    m->w_kt = find_word(m, "Kt", sym);   /* Omega(S, S*) */
    m->w_kt2 = find_word(m, "KT", sym);  /* Psi(S, S*) */
    m->w_t = find_word(m, "T", sym);
    m->w_tt = find_word(m, "Tt", sym);   /* Omega(S*, S*) */
    m->w_tt2 = find_word(m, "TT", sym);  /* Psi(S*, S*) */
    if (M < 2) {
        snprintf(err, n, "the untied hierarchy needs hierarchy.order >= 2 (its order "
                         "parameters Omega and Psi are words of length 2)");
        aim_untied_free(m);
        return NULL;
    }
    for (int i = 0; i < m->hm.size; i++)
        if (aim_hierarchy_tracked(m->hm.h, i) == m->w_k)
            m->slot_k = i;
    if (m->d > 0.0) /* "m(K)" -> "mean": the slot carries Tr S/sqrt d */
        snprintf(m->hm.names[m->slot_k], 5, "mean");
    if (plan_closure(m) || planar_start(m, err, n)) {
        if (!*err)
            snprintf(err, n, "the closure's teacher word is missing from the word set");
        aim_untied_free(m);
        return NULL;
    }
    m->hm.start[0] = 1.0;
    if (m->d > 0.0 && cfg->teacher.mean != 0.0)
        apply_teacher_mean(m);
    /* The mean Tr S/sqrt d of the Gaussian start is N(0, rho v v_V/d_s) at
     * the dimension d_s of the runs, 0 on average; but 0 can be an
     * unstable critical point of the fast flow, which SGD leaves with a
     * random sign: there the start takes its typical size, positive
     * (theory/untied.md sec. 4). */
    if (m->raw && start_mean(m, sqrt(cfg->student.rho * cfg->student.scale * sv_of(cfg) / d),
                             err, n)) {
        aim_untied_free(m);
        return NULL;
    }
    aim_truncation_alignment(m->hm.trunc, m->w_kt, m->w_tt);
    aim_truncation_cumulants_from_start(m->hm.trunc);
    return m;
}

const aim_hierarchy *aim_untied_hierarchy(const aim_untied *m) { return m->hm.h; }
int aim_untied_size(const aim_untied *m) { return m->hm.size; }
int aim_untied_order_parameters(const aim_untied *m) { return m->hm.n_params; }
const char *aim_untied_state_name(void *m, int i)
{
    return ((const aim_untied *)m)->hm.names[i];
}
const char *aim_untied_error(const aim_untied *m) { return m->error; }
const char *aim_untied_moment_name(void *m, int i)
{
    return ((const aim_untied *)m)->moment_names[i];
}
int aim_untied_k_slot(const aim_untied *m) { return m->slot_k; }
int aim_untied_left_valid(const aim_untied *m) { return m->invalid; }
double aim_untied_start_mean(const aim_untied *m) { return m->mean0; }
const double *aim_untied_start_moments(const aim_untied *m) { return m->hm.start; }

void aim_untied_set_start(aim_untied *m, const double *moments, double mean)
{
    memcpy(m->hm.start, moments, sizeof *m->hm.start * (size_t)m->hm.count);
    m->hm.start[0] = 1.0;
    m->mean0 = m->raw ? mean : 0.0;
    m->cached = 0;
    m->root = m->mean0;
    if (m->adiabatic)
        m->hm.start[m->w_k] = 0.0; /* Tr S/d = mean/sqrt d -> 0 */
    aim_truncation_cumulants_from_start(m->hm.trunc);
}

void aim_untied_initial(const aim_untied *m, double *y)
{
    aim_truncation_initial(m->hm.trunc, y);
    if (m->d > 0.0)
        y[m->slot_k] = m->mean0;
}

int aim_untied_balance(const aim_untied *m, char *msg, size_t n)
{
    const int M = aim_hierarchy_order(m->hm.h);
    int bad = 0;
    size_t used = 0;
    msg[0] = '\0';
    char a[AIM_WORD_MAX + 1], b[AIM_WORD_MAX + 1];
    for (int k = 1; k <= M; k++) {
        memset(a, 'A', (size_t)k);
        memset(b, 'B', (size_t)k);
        a[k] = b[k] = '\0';
        const double ta = m->hm.start[aim_wordset_find(m->hm.words, a)];
        const double tb = m->hm.start[aim_wordset_find(m->hm.words, b)];
        if (fabs(ta - tb) < m->cfg.balance) {
            bad++;
            if (used < n)
                used += (size_t)snprintf(msg + used, n - used,
                                         "%sk = %d: |tA_%d - tB_%d| = |%.6g - %.6g| = %.3g",
                                         bad > 1 ? "; " : "", k, k, k, ta, tb, fabs(ta - tb));
        }
    }
    return bad;
}

int aim_untied_moments(aim_untied *m, const double *y, double *mom)
{
    aim_truncation_fill(m->hm.trunc, y, mom);
    if (m->d > 0.0)
        mom[m->w_k] = y[m->slot_k] / m->sqrt_d; /* Tr S/d = mean/sqrt d */
    if (aim_truncation_close(m->hm.trunc, m->cfg.closure, mom)) {
        m->invalid = 1;
        snprintf(m->error, sizeof m->error, "%s", AIM_TRUNCATION_CLOSE_FAILED);
        return -1;
    }
    return 0;
}

static void overlaps_of(const aim_untied *m, const double *mom, double mean, aim_overlaps *q)
{
    memset(q, 0, sizeof *q);
    q->omega[0][0] = mom[m->w_kk];
    q->psi[0][0] = mom[m->w_kk2];
    q->omega[0][1] = q->omega[1][0] = mom[m->w_kt];
    q->psi[0][1] = q->psi[1][0] = mom[m->w_kt2];
    q->omega[1][1] = mom[m->w_tt];
    q->psi[1][1] = mom[m->w_tt2];
    q->trace[0] = mom[m->w_k];
    q->trace[1] = mom[m->w_t];
    if (m->raw) {
        q->mean[0] = mean;
        /* at finite d the teacher index mean is Tr(S*) / sqrt(d), m* plus
         * O(1/sqrt d) from its own trace, which lambda multiplies by sqrt d */
        q->mean[1] = m->d > 0.0 ? m->sqrt_d * mom[m->w_t] : m->cfg.teacher.mean;
    }
}

/* --- the critical manifold of the mean (adiabatic limit) --- */

typedef struct {
    aim_untied *m;
    aim_overlaps *q;
    int failed;
} mean_problem;

/* E[sum e_ab C_ab] = dR/dm at mean x. */
static double risk_slope(double x, void *params)
{
    mean_problem *p = params;
    p->q->mean[0] = x;
    if (aim_gauss_eval(p->m->hm.gauss, p->q)) {
        p->failed = 1;
        return NAN;
    }
    return aim_gauss_error_mean(p->m->hm.gauss);
}

/* The critical point dR/dm = 0 that gradient descent in m reaches from
 * guess: the first sign change of the slope along the descent direction
 * (a stable one: the slope increases through it), bracketed by doubling
 * steps and refined with GSL's Brent solver. */
static int critical_mean(aim_untied *m, aim_overlaps *q, double guess, double *root)
{
    mean_problem p = {m, q, 0};
    double a = guess, fa = risk_slope(a, &p);
    if (fa == 0.0) /* perhaps an unstable point: the search starts beside it */
        fa = risk_slope(a += 1e-7 * (1.0 + fabs(a)), &p);
    if (p.failed)
        goto engine;
    const double dir = fa > 0.0 ? -1.0 : 1.0;
    /* steps grow to at most 0.05 (1 + |guess|), so that the search does
     * not jump over a pair of roots of the slope */
    const double step_max = 0.05 * (1.0 + fabs(guess));
    double step = 1e-3 * (1.0 + fabs(guess)), b = a, fb = fa;
    int found = 0;
    for (int it = 0; it < 400 && !found; it++, step = fmin(2.0 * step, step_max)) {
        a = b;
        fa = fb;
        b = a + dir * step;
        fb = risk_slope(b, &p);
        if (p.failed)
            goto engine;
        found = (fa > 0.0) != (fb > 0.0) || fb == 0.0;
    }
    if (!found) {
        m->invalid = AIM_UNTIED_RUNAWAY;
        snprintf(m->error, sizeof m->error,
                 "the risk has no critical point in the mean within %.6g of m = %.6g (dR/dm "
                 "keeps its sign): the mean runs away", fabs(b - guess), guess);
        return -1;
    }
    if (fb == 0.0) {
        *root = b;
        return 0;
    }
    double lo = fmin(a, b), hi = fmax(a, b);
    gsl_function fn = {risk_slope, &p};
    gsl_root_fsolver *s = gsl_root_fsolver_alloc(gsl_root_fsolver_brent);
    if (!s) {
        snprintf(m->error, sizeof m->error, "out of memory (root solver)");
        return -1;
    }
    gsl_error_handler_t *old = gsl_set_error_handler_off();
    int status = gsl_root_fsolver_set(s, &fn, lo, hi), converged = 0;
    for (int it = 0; status == GSL_SUCCESS && !converged && it < 200; it++) {
        status = gsl_root_fsolver_iterate(s);
        lo = gsl_root_fsolver_x_lower(s);
        hi = gsl_root_fsolver_x_upper(s);
        converged = status == GSL_SUCCESS &&
                    gsl_root_test_interval(lo, hi, 1e-13, 1e-12) == GSL_SUCCESS;
    }
    if (status == GSL_SUCCESS && !converged)
        status = GSL_EMAXITER;
    *root = gsl_root_fsolver_root(s);
    gsl_set_error_handler(old);
    gsl_root_fsolver_free(s);
    if (p.failed)
        goto engine;
    if (status != GSL_SUCCESS) {
        snprintf(m->error, sizeof m->error, "root finding of dR/dm = 0 failed: %s",
                 gsl_strerror(status));
        return -1;
    }
    return 0;
engine:
    m->invalid = 1; /* the engine refuses only a non-covariance */
    snprintf(m->error, sizeof m->error, "%s", aim_gauss_error(m->hm.gauss));
    return -1;
}

/* Kernels at the moments mom and the student mean (stiff; found on the
 * critical manifold when adiabatic), cached on the order parameters. */
static int kernels_at(aim_untied *m, const double *mom, double mean, double *k)
{
    aim_overlaps q;
    overlaps_of(m, mom, m->adiabatic ? 0.0 : mean, &q);
    if (m->cached && memcmp(&q, &m->cached_q, sizeof q) == 0) {
        memcpy(k, m->cached_k, sizeof m->cached_k);
        return 0;
    }
    m->cached = 0;
    const aim_overlaps key = q;
    double root = 0.0;
    if (m->adiabatic) {
        if (critical_mean(m, &q, m->root, &root))
            return -1;
        q.mean[0] = root;
    }
    if (aim_gauss_eval(m->hm.gauss, &q)) {
        m->invalid = 1; /* the engine refuses only a non-covariance */
        snprintf(m->error, sizeof m->error, "%s", aim_gauss_error(m->hm.gauss));
        return -1;
    }
    aim_hierarchy_kernels(m->hm.gauss, m->cfg.eta, m->cfg.gamma, k);
    k[AIM_KERNEL_MEAN] = m->d > 0.0 ? m->sqrt_d * aim_gauss_error_mean(m->hm.gauss) : 0.0;
    if (m->adiabatic)
        m->root = root;
    m->cached_q = key;
    m->cached_root = root;
    memcpy(m->cached_k, k, sizeof m->cached_k);
    m->cached = 1;
    return 0;
}

int aim_untied_terms_at(aim_untied *m, const double *mom, double mean, double *gradient,
                        double *noise, double *decay)
{
    return aim_untied_terms_split_at(m, mom, mean, gradient, NULL, noise, decay);
}

int aim_untied_terms_split_at(aim_untied *m, const double *mom, double mean, double *gradient,
                              double *mean_part, double *noise, double *decay)
{
    double k[AIM_KERNEL_COUNT];
    if (kernels_at(m, mom, mean, k))
        return -1;
    const int n = m->hm.size, ks = m->slot_k;
    double *g = m->work, *nz = m->work + n, *dc = m->work + 2 * n;
    double lambda = k[AIM_KERNEL_MEAN];
    k[AIM_KERNEL_MEAN] = 0.0;
    aim_hierarchy_eval(m->hm.h, mom, k, g, nz, dc);
    if (m->raw) {
        double unit[AIM_KERNEL_COUNT] = {0};
        unit[AIM_KERNEL_MEAN] = 1.0;
        aim_hierarchy_eval(m->hm.h, mom, unit, m->vlam, NULL, NULL);
        if (m->adiabatic) {
            /* lambda holds m(K) = 0: the equation of K, -(m(A) + m(B))
             * lambda + the rest, vanishes (theory/untied.md sec. 3) */
            if (!(m->vlam[ks] < 0.0)) {
                snprintf(m->error, sizeof m->error,
                         "m(A) + m(B) = %.6g is not positive: the mean has no fast clock",
                         -m->vlam[ks]);
                return -1;
            }
            lambda = -(g[ks] + nz[ks] + dc[ks]) / m->vlam[ks];
        }
        for (int i = 0; i < n; i++)
            g[i] += lambda * m->vlam[i];
    }
    if (mean_part)
        for (int i = 0; i < n; i++)
            mean_part[i] = m->raw ? lambda * m->vlam[i] : 0.0;
    if (m->d > 0.0) { /* the state carries mean = sqrt(d) m(K) */
        g[ks] *= m->sqrt_d;
        nz[ks] *= m->sqrt_d;
        dc[ks] *= m->sqrt_d;
        if (mean_part)
            mean_part[ks] *= m->sqrt_d;
    }
    if (gradient)
        memcpy(gradient, g, sizeof *g * (size_t)n);
    if (noise)
        memcpy(noise, nz, sizeof *nz * (size_t)n);
    if (decay)
        memcpy(decay, dc, sizeof *dc * (size_t)n);
    return 0;
}

static int finite_state(aim_untied *m, const double *y)
{
    m->invalid = 0;
    for (int i = 0; i < m->hm.size; i++)
        if (!isfinite(y[i])) {
            m->invalid = 1;
            snprintf(m->error, sizeof m->error, "%s is not finite", m->hm.names[i]);
            return -1;
        }
    return 0;
}

int aim_untied_terms(aim_untied *m, const double *y, double *gradient, double *noise,
                     double *decay)
{
    if (finite_state(m, y))
        return -1;
    if (aim_untied_moments(m, y, m->hm.mom))
        return -1;
    return aim_untied_terms_at(m, m->hm.mom, m->d > 0.0 ? y[m->slot_k] : 0.0, gradient,
                               noise, decay);
}

int aim_untied_rhs(aim_untied *m, const double *y, double *dy)
{
    if (aim_untied_terms(m, y, dy, NULL, NULL))
        return -1;
    const double *nz = m->work + m->hm.size, *dc = m->work + 2 * m->hm.size;
    for (int i = 0; i < m->hm.size; i++)
        dy[i] += nz[i] + dc[i];
    return 0;
}

int aim_untied_mean(aim_untied *m, const double *y, double *mean)
{
    if (!m->raw) {
        *mean = 0.0;
        return 0;
    }
    if (m->d > 0.0) {
        *mean = y[m->slot_k];
        return 0;
    }
    double k[AIM_KERNEL_COUNT];
    if (aim_untied_moments(m, y, m->hm.mom) || kernels_at(m, m->hm.mom, 0.0, k))
        return -1;
    *mean = m->cached_root;
    return 0;
}

int aim_untied_fast_rate(aim_untied *m, double mean, double *rate)
{
    aim_overlaps q;
    overlaps_of(m, m->hm.start, mean, &q);
    if (aim_gauss_eval(m->hm.gauss, &q)) {
        snprintf(m->error, sizeof m->error, "%s", aim_gauss_error(m->hm.gauss));
        return -1;
    }
    *rate = -(m->hm.start[m->w_a] + m->hm.start[m->w_b]) * aim_gauss_error_mean(m->hm.gauss);
    return 0;
}

void aim_untied_memo_save(const aim_untied *m, aim_untied_memo *memo)
{
    memo->root = m->root;
    memo->cached_root = m->cached_root;
    memo->cached = m->cached;
    memo->cached_q = m->cached_q;
    memcpy(memo->cached_k, m->cached_k, sizeof memo->cached_k);
}

void aim_untied_memo_restore(aim_untied *m, const aim_untied_memo *memo)
{
    m->root = memo->root;
    m->cached_root = memo->cached_root;
    m->cached = memo->cached;
    m->cached_q = memo->cached_q;
    memcpy(m->cached_k, memo->cached_k, sizeof m->cached_k);
}

int aim_untied_settle(aim_untied *m, double mean)
{
    aim_overlaps q;
    overlaps_of(m, m->hm.start, mean, &q);
    m->cached = 0;
    return critical_mean(m, &q, mean, &m->root);
}

/* The validity margins (theory/stops.md sec. 1), each with the
 * round-off allowance of 1e-9 of its scale: m(A), m(B) >= 0 and
 * m(A^2) >= m(A)^2, m(B^2) >= m(B)^2 (the moments of positive
 * semi-definite U U^T, V V^T), and the Cauchy-Schwarz inequality of the
 * traceless parts of S and S* (|overlap| <= 1, unclamped). */
enum { MARGIN_A, MARGIN_B, MARGIN_AA, MARGIN_BB, MARGIN_OVERLAP, MARGINS };

int aim_untied_margin_count(const aim_untied *m)
{
    (void)m;
    return MARGINS;
}

const char *aim_untied_margin_text(const aim_untied *m, int k)
{
    (void)m;
    static const char *const texts[MARGINS] = {
        [MARGIN_A] = "m(A) >= 0", [MARGIN_B] = "m(B) >= 0",
        [MARGIN_AA] = "m(AA) >= m(A)^2", [MARGIN_BB] = "m(BB) >= m(B)^2",
        [MARGIN_OVERLAP] = ("kappa_2(S,S*)^2 <= kappa_2(S,S) kappa_2(S*,S*) (the teacher "
                            "overlap within [-1, 1])")};
    return texts[k];
}

void aim_untied_margins(aim_untied *m, const double *y, double *g)
{
    aim_untied_moments(m, y, m->hm.mom);
    const double *mo = m->hm.mom;
    const int aa = aim_wordset_find(m->hm.words, "AA"), bb = aim_wordset_find(m->hm.words, "BB");
    const double cst = mo[m->w_kt] - mo[m->w_k] * mo[m->w_t];
    const double vs = mo[m->w_kk] - mo[m->w_k] * mo[m->w_k];
    const double vt = mo[m->w_tt] - mo[m->w_t] * mo[m->w_t];
    g[MARGIN_A] = mo[m->w_a];
    g[MARGIN_B] = mo[m->w_b];
    g[MARGIN_AA] = mo[aa] - (1.0 - 1e-9) * mo[m->w_a] * mo[m->w_a];
    g[MARGIN_BB] = mo[bb] - (1.0 - 1e-9) * mo[m->w_b] * mo[m->w_b];
    g[MARGIN_OVERLAP] = (1.0 + 1e-9) * vs * vt + 1e-300 - cst * cst;
}

int aim_untied_check(aim_untied *m, const double *y)
{
    double g[MARGINS];
    aim_untied_margins(m, y, g);
    for (int k = 0; k < MARGINS; k++)
        if (!(g[k] >= 0.0)) {
            snprintf(m->error, sizeof m->error,
                     "the moments are not those of real U, V: %s fails (m(A) = %.6g, "
                     "m(B) = %.6g)",
                     aim_untied_margin_text(m, k), m->hm.mom[m->w_a], m->hm.mom[m->w_b]);
            return -1;
        }
    return 0;
}

double aim_untied_overlap(aim_untied *m, const double *y)
{
    aim_untied_moments(m, y, m->hm.mom);
    aim_overlaps q;
    overlaps_of(m, m->hm.mom, 0.0, &q);
    return aim_overlaps_teacher_overlap(&q);
}

int aim_untied_observables_with_mean(aim_untied *m, const double *y, double mean,
                                     double obs[AIM_OBS_COUNT])
{
    if (aim_untied_moments(m, y, m->hm.mom))
        return -1;
    aim_overlaps q;
    overlaps_of(m, m->hm.mom, mean, &q);
    if (aim_gauss_observables(m->hm.gauss, &q, obs)) {
        snprintf(m->error, sizeof m->error, "%s", aim_gauss_error(m->hm.gauss));
        return -1;
    }
    /* the next kernels computed afresh, as when the observables were a full
     * evaluation (the adiabatic root then starts from the same guess) */
    m->cached = 0;
    return 0;
}

int aim_untied_observables(aim_untied *m, const double *y, double obs[AIM_OBS_COUNT])
{
    double mean;
    if (aim_untied_mean(m, y, &mean))
        return -1;
    return aim_untied_observables_with_mean(m, y, mean, obs);
}
