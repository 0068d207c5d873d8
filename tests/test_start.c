/* The start of the ODE against SGD's start: the initial moments a tied or
 * untied model builds (free cumulants, planar pairings, the V scale, the
 * raw teacher mean; every word up to length M + 1 = 3 as the ODE reads it
 * at tau = 0, closure included) and the initial order parameters and
 * traces of a direct model, against the same quantities measured on the
 * initial matrices of SGD seeds (aim_sgd_create, aim_compare_measure_words,
 * aim_sgd_overlaps) at d = 1000, for students and teachers of every
 * family, rho != 1, scale_v != scale and a raw teacher mean.
 *
 * Tolerance. A measured moment m_d(w) = Tr(w)/d of Gaussian matrices has,
 * at finite d, a mean E_d(w) = m(w) + bias(w) and a seed-to-seed
 * standard deviation sd_d(w), both of order 1/d. Both are computed exactly
 * here, by Wick's theorem over every pairing of the factor occurrences
 * (tests/wick.h; the covariance of two traces is the sum over the
 * pairings that join them), independently of src/hierarchy/planar.c and
 * src/hierarchy/freecum.c; a raw teacher mean mu* enters as T -> T + (mu* / sqrt d) I,
 * expanded over the teacher letters. The built value b(w) is the limit
 * m(w) (the large-d start, with the teacher mean at the runs' d), so
 *     z(w) = (mean over seeds of m_d(w) - bias(w) - b(w)) / (sd_d(w)/sqrt S)
 * is a standard score; every |z| must be <= 4.5. With the 211 compared
 * quantities, the chance that a correct start exceeds 4.5 somewhere is
 * 211 x 6.8e-6 = 0.14 % for Gaussian scores (linear statistics of
 * Gaussian matrices are asymptotically Gaussian). A 5 % error in a free
 * cumulant, the V scale or the teacher mean moves some quantity by 6 to 70
 * standard errors at d = 1000 (tests/mutants: the tied teacher's third
 * cumulant -6.1 in m(TTT), the raw teacher mean 7.0, the V scale -24 in
 * m(B), Omega of a direct matrix -70; printed per case: 5 % of each
 * non-zero start value in standard errors, smallest and largest).
 *
 * Informed starts (student.overlap > 0; test_informed): the same
 * comparison with the student's factors linked to the teacher's
 * (wick.h's links, built here from the construction of theory/model.md
 * sec. 4 and the mixing coefficient of src/students/inform.c), for tied, untied
 * and direct (general and symmetric) students, rho != rho* both ways, a
 * traceful teacher and a raw teacher mean; the built start's overlap must
 * be student.overlap to 1e-9, which catches a wrong mixing coefficient.
 * Words of length M + 1 are compared as the start's moments: the
 * closures are exact at the random start only. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>

#include "compare.h"
#include "config_check.h"
#include "direct.h"
#include "inform.h"
#include "sgd.h"
#include "tied.h"
#include "untied.h"

#include "wick.h"

#define D 1000
#define Z_MAX 4.5
#define LEN 3 /* words up to M + 1 with M = 2 */

typedef struct {
    const char *label;
    const char *sets[12];
    int seeds;
} start_case;

/* The Gaussian factors and letters of a configuration's matrices (the
 * definition of the SGD draws, validate/sgd.c), for Wick's theorem. */
/* A measured letter as a sum of coefficients times letters of the Wick
 * alphabet (sub = 0: the identity). */
typedef struct {
    int n;
    double coef[4];
    char sub[4];
} letter_terms;

typedef struct {
    aim_alphabet ab; /* the Wick alphabet of the factors' letters */
    aim_planar_factor fac[4];
    aim_planar_letter let[AIM_ALPHABET_MAX];
    aim_planar_link links[3]; /* the informed start's correlations */
    int n_links;
    double eps; /* raw teacher mean over sqrt d: T -> T + eps I */
    /* the measured words' letters (src) in terms of the Wick alphabet:
     * the identity, plus eps I for a teacher letter, unless set */
    char src[AIM_ALPHABET_MAX + 1];
    letter_terms terms[AIM_ALPHABET_MAX];
} wick_model;

/* Every measured letter as itself (plus eps I for T and t). */
static void plain_terms(wick_model *w)
{
    snprintf(w->src, sizeof w->src, "%s", w->ab.letters);
    for (int k = 0; w->src[k]; k++) {
        const char c = w->src[k];
        w->terms[k] = (letter_terms){1, {1.0}, {c}};
        if ((c == 'T' || c == 't') && w->eps != 0.0)
            w->terms[k] = (letter_terms){2, {1.0, w->eps}, {c, 0}};
    }
}

static double columns_over_d(const aim_matrix_spec *s)
{
    return (double)aim_config_columns(s, D) / D;
}

/* Teacher factors from index nf on and its letters T (and t). */
static void teacher_letters(const aim_config *cfg, wick_model *w, int nf)
{
    const aim_matrix_spec *t = &cfg->teacher;
    const int kT = (int)(strchr(w->ab.letters, 'T') - w->ab.letters);
    const char *lt = strchr(w->ab.letters, 't');
    const int kt = lt ? (int)(lt - w->ab.letters) : -1;
    switch (t->decomposition) {
    case AIM_TIED:
        w->fac[nf] = (aim_planar_factor){columns_over_d(t), t->scale, 0};
        w->let[kT] = (aim_planar_letter){2, {nf, nf}, {0, 1}};
        if (kt >= 0)
            w->let[kt] = w->let[kT];
        break;
    case AIM_UNTIED:
        w->fac[nf] = w->fac[nf + 1] = (aim_planar_factor){columns_over_d(t), t->scale, 0};
        w->let[kT] = (aim_planar_letter){2, {nf, nf + 1}, {0, 1}};
        if (kt >= 0)
            w->let[kt] = (aim_planar_letter){2, {nf + 1, nf}, {0, 1}};
        break;
    case AIM_DIRECT:
    default:
        w->fac[nf] = (aim_planar_factor){1.0, t->scale, t->symmetric};
        w->let[kT] = (aim_planar_letter){1, {nf}, {0}};
        if (kt >= 0)
            w->let[kt] = (aim_planar_letter){1, {nf}, {1}};
        break;
    }
    w->eps = cfg->centring == AIM_RAW ? t->mean / sqrt((double)D) : 0.0;
}

/* The words over the Wick alphabet of a measured word, with their
 * coefficients: appends (word, coefficient). */
typedef struct {
    char word[64][AIM_WORD_MAX + 1];
    double coef[64];
    int n;
} expansion;

static void expand(const wick_model *w, const char *word, char *built, int len, double coef,
                   expansion *out)
{
    if (!*word) {
        assert_true(out->n < 64);
        memcpy(out->word[out->n], built, (size_t)len);
        out->word[out->n][len] = '\0';
        out->coef[out->n++] = coef;
        return;
    }
    const char *at = strchr(w->src, *word);
    assert_non_null(at);
    const letter_terms *t = &w->terms[at - w->src];
    for (int i = 0; i < t->n; i++) {
        if (t->sub[i])
            built[len] = t->sub[i];
        expand(w, word + 1, built, len + (t->sub[i] != 0), coef * t->coef[i], out);
    }
}

/* Exact mean at D and its limit of one word (the empty word is 1). */
static void word_mean(const wick_model *w, const char *word, double *exact, double *limit)
{
    if (!*word) {
        *exact = *limit = 1.0;
        return;
    }
    wick_word o = {0};
    wick_add(&o, &w->ab, word, w->fac, w->let);
    const wick_sum s = wick_expect_linked(&o, w->fac, w->links, w->n_links, D, 0);
    *exact = s.exact;
    *limit = s.leading;
}

/* Mean, bias (exact minus limit) and standard deviation at D of m_d(word)
 * with the teacher mean expanded. */
static void word_stats(const wick_model *w, const char *word, double *bias, double *sd)
{
    expansion x = {0};
    char built[AIM_WORD_MAX + 1];
    expand(w, word, built, 0, 1.0, &x);
    double var = 0.0;
    *bias = 0.0;
    for (int i = 0; i < x.n; i++) {
        double exact, limit;
        word_mean(w, x.word[i], &exact, &limit);
        *bias += x.coef[i] * (exact - limit);
        for (int j = 0; j < x.n && *x.word[i]; j++) {
            if (!*x.word[j])
                continue;
            wick_word o = {0};
            wick_add(&o, &w->ab, x.word[i], w->fac, w->let);
            wick_add(&o, &w->ab, x.word[j], w->fac, w->let);
            var += x.coef[i] * x.coef[j] *
                   wick_expect_linked(&o, w->fac, w->links, w->n_links, D, 1).exact;
        }
    }
    *sd = sqrt(fmax(var, 0.0));
}

static void configure(const start_case *sc, aim_config *cfg)
{
    aim_config_error e;
    aim_config_defaults(cfg);
    for (int i = 0; sc->sets[i]; i++)
        if (aim_config_set(cfg, sc->sets[i], &e))
            fail_msg("%s: %s", sc->sets[i], e.message);
    if (aim_config_validate(cfg, &e))
        fail_msg("%s", e.message);
    cfg->order = LEN - 1;
}

/* One compared quantity: factor * m(word) (factor sqrt d for a raw mean). */
typedef struct {
    char word[AIM_WORD_MAX + 1];
    double factor, built, measured;
} quantity;

/* Compares every quantity; returns the number beyond Z_MAX. */
static int compare(const start_case *sc, const wick_model *w, quantity *q, int n)
{
    int bad = 0;
    double worst = 0.0, power[2] = {INFINITY, 0.0};
    print_message("%s (d = %d, %d seed%s)\n  %-12s %12s %12s %11s %10s %7s\n", sc->label, D,
                  sc->seeds, sc->seeds > 1 ? "s" : "", "quantity", "built", "SGD", "1/d bias",
                  "SE", "z");
    for (int i = 0; i < n; i++) {
        double bias, sd;
        word_stats(w, q[i].word, &bias, &sd);
        bias *= q[i].factor;
        const double se = q[i].factor * sd / sqrt((double)sc->seeds);
        const double gap = q[i].measured - bias - q[i].built;
        const double z = se > 0.0 ? gap / se : (fabs(gap) <= 1e-12 ? 0.0 : INFINITY);
        const int ok = fabs(z) <= Z_MAX;
        bad += !ok;
        worst = fmax(worst, fabs(z));
        if (fabs(q[i].built) > 1e-9 && se > 0.0) {
            power[0] = fmin(power[0], 0.05 * fabs(q[i].built) / se);
            power[1] = fmax(power[1], 0.05 * fabs(q[i].built) / se);
        }
        char label[AIM_WORD_MAX + 16];
        snprintf(label, sizeof label, q[i].factor != 1.0 ? "sqrt d m(%s)" : "m(%s)", q[i].word);
        print_message("  %-12s %12.6g %12.6g %11.3g %10.3g %7.2f%s\n", label, q[i].built,
                      q[i].measured, bias, se, z, ok ? "" : "  FAIL");
    }
    print_message("  %d quantities, largest |z| %.2f (%.2f tolerances); 5 %% of a non-zero "
                  "start value is %.2g to %.3g standard errors\n",
                  n, worst, worst / Z_MAX, power[0], power[1]);
    return bad;
}

/* The informed start's links (theory/model.md sec. 4), from its mixing
 * coefficient c: each student factor X of scale v_X shares its first
 * min(p, p*) columns with its teacher factor, covariance c sqrt(v_X v*);
 * U and V on one tied W* also share them with each other, c^2 sqrt(v v_V). */
static void inform_links(const aim_config *cfg, wick_model *w)
{
    double c;
    char err[512];
    if (aim_inform_mixing(cfg, &c, err, sizeof err))
        fail_msg("%s", err);
    const aim_matrix_spec *s = &cfg->student, *t = &cfg->teacher;
    const double q = fmin(columns_over_d(s), columns_over_d(t));
    const double v = s->scale, vv = s->scale_v > 0.0 ? s->scale_v : v, vt = t->scale;
    if (cfg->decomposition == AIM_TIED) {
        w->links[0] = (aim_planar_link){0, 1, c * sqrt(v * vt), q};
        w->n_links = 1;
    } else if (t->decomposition == AIM_UNTIED) {
        w->links[0] = (aim_planar_link){0, 2, c * sqrt(v * vt), q};
        w->links[1] = (aim_planar_link){1, 3, c * sqrt(vv * vt), q};
        w->n_links = 2;
    } else {
        w->links[0] = (aim_planar_link){0, 2, c * sqrt(v * vt), q};
        w->links[1] = (aim_planar_link){1, 2, c * sqrt(vv * vt), q};
        w->links[2] = (aim_planar_link){0, 1, c * c * sqrt(v * vv), q};
        w->n_links = 3;
    }
}

/* The words of Omega(S, S), Tr(S)/d, Omega(S, S*), Omega(S*, S*), Tr(S*)/d. */
static const char *const tied_overlap_words[5] = {"SS", "S", "ST", "TT", "T"};
static const char *const untied_overlap_words[5] = {"Kk", "K", "Kt", "Tt", "T"};
static const char *const untied_tied_overlap_words[5] = {"Kk", "K", "KT", "TT", "T"};

/* The built start's teacher overlap (theory/model.md sec. 6) is the
 * requested one, to round-off. */
static void check_overlap(const start_case *sc, const aim_config *cfg, const double *b)
{
    const double o = (b[2] - b[1] * b[4]) / sqrt((b[0] - b[1] * b[1]) * (b[3] - b[4] * b[4]));
    print_message("%s: built overlap %.12f (student.overlap %g)\n", sc->label, o,
                  cfg->student.overlap);
    if (!(fabs(o - cfg->student.overlap) <= 1e-9))
        fail_msg("%s: the start's overlap is %.12g, not student.overlap = %g", sc->label, o,
                 cfg->student.overlap);
}

/* A tied or untied student: every word up to LEN. */
static void check_hierarchy(const start_case *sc)
{
    aim_config cfg;
    configure(sc, &cfg);
    char err[512];
    const int tied = cfg.decomposition == AIM_TIED;
    aim_tied *mt = tied ? aim_tied_create(&cfg, cfg.rule, err, sizeof err) : NULL;
    aim_untied *mu = tied ? NULL : aim_untied_create(&cfg, D, cfg.rule, err, sizeof err);
    if (!mt && !mu)
        fail_msg("%s", err);
    const aim_hierarchy *h = tied ? aim_tied_hierarchy(mt) : aim_untied_hierarchy(mu);
    const aim_wordset *ws = aim_hierarchy_words(h);
    const int count = aim_wordset_count(ws), n = aim_hierarchy_size(h);
    double *y = malloc(sizeof *y * (size_t)n), *built = malloc(sizeof *built * (size_t)count);
    double *m = malloc(sizeof *m * (size_t)count);
    quantity *q = calloc((size_t)count, sizeof *q);
    assert_true(y && built && m && q);
    /* what the ODE starts from: the tracked words and, through the
     * closure, the words of length M + 1 */
    if (tied) {
        aim_tied_initial(mt, y);
        aim_tied_moments(mt, y, built);
    } else {
        aim_untied_initial(mu, y);
        aim_untied_moments(mu, y, built);
    }
    for (int s = 0; s < sc->seeds; s++) {
        aim_sgd *sgd = aim_sgd_create(&cfg, D, cfg.seed + (uint64_t)s);
        assert_non_null(sgd);
        assert_int_equal(aim_compare_measure_words(sgd, ws, LEN, m), 0);
        for (int i = 1; i < count; i++)
            q[i - 1].measured += m[i] / sc->seeds;
        aim_sgd_free(sgd);
    }
    wick_model w = {.ab = *aim_wordset_alphabet(ws)};
    if (tied) {
        w.fac[0] = (aim_planar_factor){columns_over_d(&cfg.student), cfg.student.scale, 0};
        w.let[0] = (aim_planar_letter){2, {0, 0}, {0, 1}};
        teacher_letters(&cfg, &w, 1);
    } else {
        const double sv = cfg.student.scale_v > 0.0 ? cfg.student.scale_v : cfg.student.scale;
        w.fac[0] = (aim_planar_factor){columns_over_d(&cfg.student), cfg.student.scale, 0};
        w.fac[1] = (aim_planar_factor){columns_over_d(&cfg.student), sv, 0};
        w.let[0] = (aim_planar_letter){2, {0, 0}, {0, 1}}; /* A = U U^T */
        w.let[1] = (aim_planar_letter){2, {1, 1}, {0, 1}}; /* B = V V^T */
        w.let[2] = (aim_planar_letter){2, {0, 1}, {0, 1}}; /* K = U V^T */
        w.let[3] = (aim_planar_letter){2, {1, 0}, {0, 1}}; /* k = V U^T */
        teacher_letters(&cfg, &w, 2);
    }
    plain_terms(&w);
    if (cfg.student.overlap > 0.0) {
        inform_links(&cfg, &w);
        /* the ODE starts at the requested overlap */
        const char *const *ow = tied ? tied_overlap_words
                                     : cfg.teacher.decomposition == AIM_TIED
                                           ? untied_tied_overlap_words
                                           : untied_overlap_words;
        double b[5];
        for (int i = 0; i < 5; i++)
            b[i] = built[aim_wordset_find(ws, ow[i])];
        check_overlap(sc, &cfg, b);
    }
    /* An informed student is not a multiple of the teacher plus a free
     * part, so the closure of the words of length M + 1 is not exact at
     * an informed start (theory/model.md sec. 4): there the start's own
     * moments are compared, and the closure's printed beside them. */
    const double *start = tied ? aim_tied_start_moments(mt) : aim_untied_start_moments(mu);
    for (int i = 1; i < count; i++) {
        const char *wi = aim_wordset_word(ws, i);
        snprintf(q[i - 1].word, sizeof q[0].word, "%s", wi);
        q[i - 1].factor = 1.0;
        q[i - 1].built = built[i];
        if (cfg.student.overlap > 0.0 && (int)strlen(wi) == LEN) {
            print_message("  m(%s): the closure reads %g, the start is %g\n", wi, built[i],
                          start[i]);
            q[i - 1].built = start[i];
        }
    }
    const int bad = compare(sc, &w, q, count - 1);
    free(y);
    free(built);
    free(m);
    free(q);
    aim_tied_free(mt);
    aim_untied_free(mu);
    if (bad)
        fail_msg("%s: %d quantities beyond %.1f standard errors", sc->label, bad, Z_MAX);
}

/* A direct student: Omega, Psi of student and teacher, their overlaps,
 * the traces, and in raw centring the two index means. */
static void check_direct(const start_case *sc)
{
    aim_config cfg;
    configure(sc, &cfg);
    const int raw = cfg.centring == AIM_RAW;
    aim_direct *model = aim_direct_create(&cfg, raw ? D : 0.0, cfg.rule);
    assert_non_null(model);
    double y[AIM_DIRECT_SIZE];
    aim_direct_initial(model, y);
    aim_overlaps b;
    aim_direct_overlaps(model, y, &b);
    /* the words of the order parameters: K = S, k = S^T, T = S*, t = S*^T */
    static const char *const words[10] = {"Kk", "KK", "Kt", "KT", "Tt", "TT", "K", "T", "K", "T"};
    const int nq = raw ? 10 : 8;
    quantity q[10];
    memset(q, 0, sizeof q);
    for (int s = 0; s < sc->seeds; s++) {
        aim_sgd *sgd = aim_sgd_create(&cfg, D, cfg.seed + (uint64_t)s);
        assert_non_null(sgd);
        aim_overlaps o;
        aim_sgd_overlaps(sgd, &o);
        const double v[10] = {o.omega[0][0], o.psi[0][0], o.omega[0][1], o.psi[0][1],
                              o.omega[1][1], o.psi[1][1], o.trace[0],    o.trace[1],
                              o.mean[0],     o.mean[1]};
        for (int i = 0; i < nq; i++)
            q[i].measured += v[i] / sc->seeds;
        aim_sgd_free(sgd);
    }
    const double v[10] = {b.omega[0][0], b.psi[0][0], b.omega[0][1], b.psi[0][1],
                          b.omega[1][1], b.psi[1][1], b.trace[0],    b.trace[1],
                          b.mean[0],     b.mean[1]};
    for (int i = 0; i < nq; i++) {
        snprintf(q[i].word, sizeof q[i].word, "%s", words[i]);
        q[i].factor = i >= 8 ? sqrt((double)D) : 1.0;
        q[i].built = v[i];
    }
    /* the Wick alphabet: G the student's fresh draw, T the teacher */
    wick_model w = {.ab = {"GgTt", "gGtT"}};
    w.fac[0] = (aim_planar_factor){1.0, cfg.student.scale, cfg.student.symmetric};
    w.let[0] = (aim_planar_letter){1, {0}, {0}};
    w.let[1] = (aim_planar_letter){1, {0}, {1}};
    teacher_letters(&cfg, &w, 1);
    plain_terms(&w);
    w.src[0] = 'K'; /* S = G ... */
    w.src[1] = 'k';
    if (cfg.student.overlap > 0.0) {
        /* ... or S = alpha P(S* - (t* + eps) I) + beta G = alpha P(T) - alpha t* I +
         * beta G (theory/model.md sec. 4) */
        double c;
        aim_inform_direct_start st;
        char err[512];
        if (aim_inform_mixing(&cfg, &c, err, sizeof err) ||
            aim_inform_direct(&cfg, c, &st, err, sizeof err))
            fail_msg("%s", err);
        const double a = st.alpha, shift = -st.alpha * aim_inform_teacher_trace(&cfg);
        for (int k = 0; k < 2; k++) {
            const char self = k ? 'g' : 'G', same = k ? 't' : 'T', other = k ? 'T' : 't';
            letter_terms *t = &w.terms[k];
            *t = cfg.student.symmetric
                     ? (letter_terms){3, {st.beta, a / 2, a / 2}, {self, same, other}}
                     : (letter_terms){2, {st.beta, a}, {self, same}};
            if (shift != 0.0) {
                t->coef[t->n] = shift;
                t->sub[t->n++] = 0;
            }
        }
        const double bo[5] = {b.omega[0][0], b.trace[0], b.omega[0][1], b.omega[1][1],
                              b.trace[1]};
        check_overlap(sc, &cfg, bo);
    }
    const int bad = compare(sc, &w, q, nq);
    aim_direct_free(model);
    if (bad)
        fail_msg("%s: %d quantities beyond %.1f standard errors", sc->label, bad, Z_MAX);
}

static void test_tied(void **state)
{
    (void)state;
    const start_case cases[] = {
        {"tied student (rho 0.5, v 0.3), tied teacher (rho* 0.5, v* 1)",
         {"model.decomposition=tied", "teacher.decomposition=tied", "student.rho=0.5",
          "student.scale=0.3", "teacher.rho=0.5", NULL},
         4},
        {"tied student (rho 2, v 0.25), symmetric direct teacher (v* 2)",
         {"model.decomposition=tied", "teacher.symmetric=true", "student.rho=2",
          "teacher.scale=2", NULL},
         4},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_hierarchy(&cases[i]);
}

static void test_untied(void **state)
{
    (void)state;
    const start_case cases[] = {
        {"untied student (rho 0.5, v 0.25, v_V 0.4), untied teacher (rho* 1.5)",
         {"model.decomposition=untied", "student.rho=0.5", "student.scale_v=0.4",
          "teacher.decomposition=untied", "teacher.rho=1.5", NULL},
         1},
        {"untied student (rho 1, v 0.3, v_V 0.2), direct teacher (v* 0.25), raw, teacher "
         "mean 3",
         {"model.decomposition=untied", "student.scale=0.3", "student.scale_v=0.2",
          "model.centring=raw", "model.activation=he1", "teacher.scale=0.25",
          "teacher.mean=3", NULL},
         1},
        {"untied student (rho 1.5, v 0.5), tied teacher (rho* 0.5, v* 2)",
         {"model.decomposition=untied", "student.rho=1.5", "student.scale=0.5",
          "teacher.decomposition=tied", "teacher.rho=0.5", "teacher.scale=2", NULL},
         1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_hierarchy(&cases[i]);
}

static void test_direct(void **state)
{
    (void)state;
    const start_case cases[] = {
        {"direct student (v 0.25), direct teacher", {NULL}, 4},
        {"symmetric direct student (v 0.5), tied teacher (rho* 0.5, v* 1.5)",
         {"student.symmetric=true", "student.scale=0.5", "teacher.decomposition=tied",
          "teacher.rho=0.5", "teacher.scale=1.5", NULL},
         4},
        {"direct student (v 0.4), untied teacher (rho* 2), raw, teacher mean -3",
         {"student.scale=0.4", "teacher.decomposition=untied", "teacher.rho=2",
          "model.centring=raw", "teacher.mean=-3", NULL},
         4},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_direct(&cases[i]);
}

/* Informed starts (student.overlap > 0, theory/model.md sec. 4): the
 * student's factors share columns with the teacher's, for every
 * decomposition, rho != rho* both ways, scale_v != scale, symmetric and
 * general direct students, a traceful teacher and a raw teacher mean. */
static void test_informed(void **state)
{
    (void)state;
    const start_case hierarchy[] = {
        {"informed 0.4: tied student (rho 0.5, v 0.3), tied teacher (rho* 1.5, v* 1.2)",
         {"model.decomposition=tied", "teacher.decomposition=tied", "student.rho=0.5",
          "student.scale=0.3", "teacher.rho=1.5", "teacher.scale=1.2", "student.overlap=0.4",
          NULL},
         2},
        {"informed 0.3: untied student (rho 1.5, v 0.25, v_V 0.4), untied teacher (rho* "
         "0.5), raw, teacher mean 2",
         {"model.decomposition=untied", "student.rho=1.5", "student.scale_v=0.4",
          "teacher.decomposition=untied", "teacher.rho=0.5", "model.centring=raw",
          "model.activation=he1", "teacher.mean=2", "student.overlap=0.3", NULL},
         1},
        {"informed 0.5: untied student (rho 0.5, v 0.3, v_V 0.2), tied teacher (rho* 1, v* 2)",
         {"model.decomposition=untied", "student.rho=0.5", "student.scale=0.3",
          "student.scale_v=0.2", "teacher.decomposition=tied", "teacher.scale=2",
          "student.overlap=0.5", NULL},
         1},
    };
    for (size_t i = 0; i < sizeof hierarchy / sizeof hierarchy[0]; i++)
        check_hierarchy(&hierarchy[i]);
    const start_case direct[] = {
        {"informed 0.6: direct student (v 0.25), direct teacher, raw, teacher mean -2",
         {"student.overlap=0.6", "model.centring=raw", "teacher.mean=-2", NULL},
         4},
        {"informed 0.5: symmetric direct student (v 0.5), direct teacher (v* 1.5)",
         {"student.symmetric=true", "student.scale=0.5", "teacher.scale=1.5",
          "student.overlap=0.5", NULL},
         4},
        {"informed 0.7: direct student (v 0.4), tied teacher (rho* 0.5, v* 1.5)",
         {"student.scale=0.4", "teacher.decomposition=tied", "teacher.rho=0.5",
          "teacher.scale=1.5", "student.overlap=0.7", NULL},
         4},
    };
    for (size_t i = 0; i < sizeof direct / sizeof direct[0]; i++)
        check_direct(&direct[i]);
}

int main(void)
{
    gsl_set_error_handler_off();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tied),
        cmocka_unit_test(test_untied),
        cmocka_unit_test(test_direct),
        cmocka_unit_test(test_informed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
