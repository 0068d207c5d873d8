/* drift_late: where the quadrature closure's late trajectory error comes
 * from (theory/tied.md sec. 16). Reads the matrix reference's table (an
 * `ode.method = matrix` run of the same configuration with `--order 9`,
 * so that it holds every word containing S up to length 9 at every grid
 * point; the teacher's words are those of the reference's drawn teachers,
 * the replicas' seeds sgd.seed + r at D = matrix.d, measured here) and,
 * for the order-M hierarchy (M <= 8: its closed words, of length M + 1,
 * must be in the table):
 *
 *   drift     at every inner grid point, the right-hand side of the
 *             order-parameter equations with (a) the reference's closed
 *             words, (b) the quadrature closure of its tracked words, and
 *             (c) the reference's own drift, the central difference of its
 *             moments, with the standard error of that difference taken
 *             as if the two points were independent (an upper bound: a
 *             replica's moments at neighbouring points are correlated);
 *             also the teacher overlap's rate, the largest relative
 *             error of the quadrature's closed words (and of its tracked
 *             words, which the floor moves), and the largest error of the
 *             drift of the length-M words, which read the closed ones,
 *             against the largest of those drifts.
 *   run       the hierarchy integrated from the reference's start with the
 *             classic Runge-Kutta rule (STEPS steps per grid interval),
 *             its closed words from CLOSURE:
 *               quadrature  the closure (rank floor FLOOR, default 1e-6),
 *                           as hierarchy.closure = quadrature does;
 *               corrected   the quadrature's value plus its error at the
 *                           reference's state of the same tau (every word
 *                           containing S, a cubic spline in tau): exact
 *                           along the reference, responding to the state
 *                           as the quadrature does; only for FROM <= tau
 *                           < TO when given, and only the fraction SCALE
 *                           of the error (default 1); corrected-closed and
 *                           corrected-tracked correct only the words of
 *                           length M + 1, or only those of length <= M;
 *                           corrected-closed-TK only the closed words with
 *                           K letters T;
 *                           corrected-start by the error at tau = 0, held
 *                           for every tau (known without a reference: the
 *                           start's moments are exact);
 *               reference   the reference's closed words themselves (a
 *                           spline in tau), blind to the state;
 *             prints overlap, risk and their gaps to the reference, and
 *             the gaps of m(S), m(SS), m(ST), at every grid point.
 *   jacobian  at every grid point (TAUS: a comma-separated list of the
 *             table's tau, or all): the Jacobian of the hierarchy's
 *             right-hand side at the reference's tracked words (central
 *             differences, relative step STEP, default 1e-5), closed by
 *             the quadrature at FLOOR, or (FLOOR < 0) with the closed
 *             words held at the reference's; its largest real part and
 *             the eigenvalues of smallest modulus; the overlap's part of
 *             the shift -J^-1 df that the drift error df = (b) - (a)
 *             would cause at a fixed point; and the linear response along
 *             the reference, e' = J(tau) e + df(tau), e(0) = 0, integrated
 *             over the grid (J and df held within each interval).
 *   gram      the smallest relative eigenvalues of the unit-diagonal Gram
 *             matrix G[u][v] = m(u^T v) of the words of length <= M/2
 *             (the matrix the quadrature closure inverts) at every grid
 *             point, and how many lie below 1e-6 and 1e-8 of the largest.
 *
 * Usage: drift_late CONFIG REF.tsv M MODE [ARGS] [--set key=value ...]
 *   drift_late CONFIG REF.tsv M drift [FLOOR]
 *   drift_late CONFIG REF.tsv M run CLOSURE STEPS [FLOOR [FROM TO [SCALE]]]
 *   drift_late CONFIG REF.tsv M jacobian TAU[,TAU...]|all [FLOOR [STEP]]
 *     (FLOOR < 0: the closed words held at the reference's)
 *   drift_late CONFIG REF.tsv M gram
 * The configuration needs the reference's matrix.d, matrix.replicas and
 * sgd.seed (the teacher's words) and the hierarchy's keys; --set
 * overrides as on the command line.
 *
 * This file: the reference and the setup every mode shares, the drift and
 * run modes, main; the jacobian and gram modes, the linear analysis at the
 * reference's states, are drift_late_linear.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_eigen.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_linalg.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_sort_vector.h>
#include <gsl/gsl_spline.h>

#include "config.h"
#include "config_check.h"
#include "draw.h"
#include "drift_late_context.h"
#include "drift_late_linear.h"
#include "gauss.h"
#include "hierarchy.h"
#include "overlaps.h"
#include "quadrature.h"
#include "tied.h"
#include "words.h"

#define LINE_MAX_CHARS (1 << 20)

static int column(const table *t, const char *name)
{
    for (int j = 0; j < t->cols; j++)
        if (!strcmp(t->names[j], name))
            return j;
    return -1;
}

static int read_table(const char *path, table *t)
{
    FILE *f = fopen(path, "r");
    char *line = malloc(LINE_MAX_CHARS);
    memset(t, 0, sizeof *t);
    if (!f || !line) {
        fprintf(stderr, "drift_late: %s: cannot read\n", path);
        if (f)
            fclose(f);
        free(line);
        return -1;
    }
    int cap = 0;
    while (fgets(line, LINE_MAX_CHARS, f)) {
        if (line[0] == '#')
            continue;
        line[strcspn(line, "\r\n")] = 0;
        if (!t->names) {
            int n = 1;
            for (char *c = line; *c; c++)
                n += *c == '\t';
            t->cols = n;
            t->names = calloc((size_t)n, sizeof *t->names);
            char *save = NULL;
            int j = 0;
            for (char *tok = strtok_r(line, "\t", &save); tok && j < n;
                 tok = strtok_r(NULL, "\t", &save))
                t->names[j++] = strdup(tok);
            continue;
        }
        if (t->rows == cap) {
            cap = cap ? 2 * cap : 64;
            t->x = realloc(t->x, sizeof *t->x * (size_t)cap * (size_t)t->cols);
        }
        char *p = line;
        for (int j = 0; j < t->cols; j++) {
            char *end;
            t->x[(size_t)t->rows * t->cols + j] = strtod(p, &end);
            p = *end ? end + 1 : end;
        }
        t->rows++;
    }
    fclose(f);
    free(line);
    return t->names && t->rows > 2 ? 0 : -1;
}

static double ref_at(const ctx *c, int r, int col) { return c->ref.x[(size_t)r * c->ref.cols + col]; }

static int has_student(const char *w) { return strchr(w, 'S') != NULL; }

/* The teacher's words, averaged over the reference's replicas: their
 * teachers drawn again as the matrix process draws them (src/students/draw.h, the
 * teacher stream of seed sgd.seed + r at D = matrix.d; centred indices). */
static int teacher_words(ctx *c)
{
    const int R = c->cfg.replicas, D = c->cfg.matrix_d;
    double *mom = malloc(sizeof *mom * (size_t)c->count);
    double *St = malloc(sizeof *St * (size_t)D * (size_t)D);
    c->teacher = calloc((size_t)c->count, sizeof *c->teacher);
    if (!mom || !St || !c->teacher)
        return -1;
    for (int r = 0; r < R; r++) {
        gsl_rng *rng = aim_draw_rng(c->cfg.seed + (uint64_t)r, AIM_DRAW_TEACHER);
        /* only the pure-teacher words are kept: the student letter is a
         * stand-in */
        const double *mats[2] = {St, St};
        if (!rng || aim_draw_teacher(&c->cfg, rng, St, D) ||
            aim_words_measure(c->ws, c->M + 1, mats, D, mom)) {
            fprintf(stderr, "drift_late: could not draw the reference's teacher\n");
            gsl_rng_free(rng);
            return -1;
        }
        gsl_rng_free(rng);
        for (int i = 0; i < c->count; i++)
            c->teacher[i] += mom[i] / R;
    }
    free(mom);
    free(St);
    return 0;
}

static int setup(ctx *c, int argc, char **argv, int first_set)
{
    aim_config_error err;
    aim_config_defaults(&c->cfg);
    if (aim_config_load(&c->cfg, argv[1], &err)) {
        fprintf(stderr, "drift_late: %s\n", err.message);
        return -1;
    }
    for (int a = first_set; a < argc; a++) {
        if (strcmp(argv[a], "--set") || a + 1 >= argc) {
            fprintf(stderr, "drift_late: %s: expected --set key=value\n", argv[a]);
            return -1;
        }
        if (aim_config_set(&c->cfg, argv[++a], &err)) {
            fprintf(stderr, "drift_late: %s\n", err.message);
            return -1;
        }
    }
    c->M = atoi(argv[3]);
    c->cfg.order = c->M;
    /* the aligned values: the prior of the quadrature's even-M completion,
     * as src/hierarchy/truncation.c takes them; the construction is applied here,
     * at the floor asked for */
    c->cfg.closure = AIM_CLOSURE_ALIGNED;
    if (aim_config_validate(&c->cfg, &err)) {
        fprintf(stderr, "drift_late: %s\n", err.message);
        return -1;
    }
    if (c->cfg.decomposition != AIM_TIED || c->cfg.centring != AIM_CENTRED || c->M < 2 ||
        c->M > 8) {
        fprintf(stderr, "drift_late: needs a tied student, centred indices and 2 <= M <= 8\n");
        return -1;
    }
    char msg[256];
    c->m = aim_tied_create(&c->cfg, c->cfg.rule, msg, sizeof msg);
    if (!c->m) {
        fprintf(stderr, "drift_late: %s\n", msg);
        return -1;
    }
    c->h = aim_tied_hierarchy(c->m);
    c->ws = aim_hierarchy_words(c->h);
    c->n = aim_tied_size(c->m);
    c->count = aim_wordset_count(c->ws);
    c->first_long = aim_wordset_first(c->ws, c->M + 1);
    c->w_s = aim_wordset_find(c->ws, "S");
    c->w_ss = aim_wordset_find(c->ws, "SS");
    c->w_st = aim_wordset_find(c->ws, "ST");
    if (read_table(argv[2], &c->ref))
        return -1;
    c->col_tau = column(&c->ref, "tau");
    c->col_overlap = column(&c->ref, "overlap");
    c->col_risk = column(&c->ref, "risk");
    if (c->col_tau < 0 || c->col_overlap < 0 || c->col_risk < 0) {
        fprintf(stderr, "drift_late: %s: no tau, overlap or risk column\n", argv[2]);
        return -1;
    }
    if (teacher_words(c))
        return -1;
    const int R = c->ref.rows;
    c->z = malloc(sizeof *c->z * (size_t)R * (size_t)c->count);
    c->zse = calloc((size_t)R * (size_t)c->count, sizeof *c->zse);
    if (!c->z || !c->zse)
        return -1;
    for (int i = 0; i < c->count; i++) {
        const char *w = aim_wordset_word(c->ws, i);
        char name[AIM_WORD_MAX + 8];
        snprintf(name, sizeof name, "m_%s", w);
        const int col = i == 0 || !has_student(w) ? -1 : column(&c->ref, name);
        /* the table's standard errors: those of the observables m(S),
         * m(SS), m(ST) are written (trace, omega_ss, omega_st) */
        const char *se_name = !strcmp(w, "S")    ? "trace_se"
                              : !strcmp(w, "SS") ? "omega_ss_se"
                              : !strcmp(w, "ST") ? "omega_st_se"
                                                 : NULL;
        const int col_se = se_name && col >= 0 ? column(&c->ref, se_name) : -1;
        if (i > 0 && has_student(w) && col < 0) {
            fprintf(stderr, "drift_late: %s: no column %s (run the reference with --order %d)\n",
                    argv[2], name, c->M + 1);
            return -1;
        }
        for (int r = 0; r < R; r++) {
            c->z[(size_t)r * c->count + i] =
                i == 0 ? 1.0 : col < 0 ? c->teacher[i] : ref_at(c, r, col);
            c->zse[(size_t)r * c->count + i] = col_se < 0 ? 0.0 : ref_at(c, r, col_se);
        }
    }
    aim_tied_set_start(c->m, c->z); /* the teacher's words: the reference's */
    return 0;
}

static int mode_drift(ctx *c, double floor)
{
    const int R = c->ref.rows, n = c->n;
    double *mom = malloc(sizeof *mom * (size_t)c->count);
    double *fa = malloc(sizeof *fa * (size_t)n), *fb = malloc(sizeof *fb * (size_t)n);
    double *y = malloc(sizeof *y * (size_t)n);
    aim_quadrature *q = aim_quadrature_create(c->ws, c->M, floor);
    if (!mom || !fa || !fb || !y || !q)
        return -1;
    const int idx[3] = {c->w_s, c->w_ss, c->w_st};
    int pos[3];
    for (int j = 0; j < 3; j++)
        for (int k = 0; k < n; k++)
            if (aim_hierarchy_tracked(c->h, k) == idx[j])
                pos[j] = k;
    printf("tau\tword\ta_measured_closed\tb_quadrature\tc_reference\tc_se\t(a-c)/se\t(b-a)/|a|\n");
    for (int r = 1; r + 1 < R; r++) {
        const double *z = c->z + (size_t)r * c->count;
        const double dt = drift_late_ref_tau(c, r + 1) - drift_late_ref_tau(c, r - 1);
        if (drift_late_rhs_at(c, z, fa))
            return -1;
        drift_late_tracked_of(c, z, y);
        if (drift_late_quadrature_moments(c, q, y, mom) || drift_late_rhs_at(c, mom, fb))
            return -1;
        double closed = 0.0, tracked_err = 0.0;
        for (int i = 1; i < c->count; i++) {
            if (!has_student(aim_wordset_word(c->ws, i)))
                continue;
            const double e = fabs(mom[i] / z[i] - 1.0);
            if (i >= c->first_long)
                closed = fmax(closed, e);
            else
                tracked_err = fmax(tracked_err, e);
        }
        double grad[3], ra = 0, rb = 0, rc = 0, rse = 0;
        drift_late_overlap_gradient(c, z, grad);
        for (int j = 0; j < 3; j++) {
            const int i = idx[j];
            const double fc = (c->z[(size_t)(r + 1) * c->count + i] -
                               c->z[(size_t)(r - 1) * c->count + i]) / dt;
            const double se = hypot(c->zse[(size_t)(r + 1) * c->count + i],
                                    c->zse[(size_t)(r - 1) * c->count + i]) / dt;
            printf("%.4g\t%s\t%.6g\t%.6g\t%.6g\t%.2g\t%.2f\t%.2e\n", drift_late_ref_tau(c, r),
                   aim_wordset_word(c->ws, i), fa[pos[j]], fb[pos[j]], fc, se,
                   (fa[pos[j]] - fc) / se, (fb[pos[j]] - fa[pos[j]]) / fabs(fa[pos[j]]));
            ra += grad[j] * fa[pos[j]];
            rb += grad[j] * fb[pos[j]];
            rc += grad[j] * fc;
            rse += grad[j] * grad[j] * se * se;
        }
        /* the drift error of the longest tracked words, which read the
         * closed ones: largest |b - a| against the largest |a| among them */
        double top_err = 0.0, top_scale = 0.0;
        for (int k = 0; k < n; k++)
            if (aim_wordset_len(c->ws, aim_hierarchy_tracked(c->h, k)) == c->M) {
                top_err = fmax(top_err, fabs(fb[k] - fa[k]));
                top_scale = fmax(top_scale, fabs(fa[k]));
            }
        const double dov = (ref_at(c, r + 1, c->col_overlap) - ref_at(c, r - 1, c->col_overlap)) / dt;
        printf("%.4g\toverlap\t%.6g\t%.6g\t%.6g\t%.2g\t%.2f\t%.2e\t# table's overlap rate %.6g; "
               "closed words' largest error %.2e, tracked %.1e; "
               "length-M words' drift error %.2e of their largest drift\n",
               drift_late_ref_tau(c, r), ra, rb, rc, sqrt(rse), (ra - rc) / sqrt(rse),
               (rb - ra) / fabs(ra), dov, closed, tracked_err, top_err / top_scale);
    }
    aim_quadrature_free(q);
    free(mom);
    free(fa);
    free(fb);
    free(y);
    return 0;
}

/* A cubic spline in tau of every closed word containing S (closure
 * `reference`). */
typedef struct {
    gsl_interp_accel *acc;
    gsl_spline **s; /* per word; NULL where not interpolated */
} closed_splines;

static int letters_t(const char *w)
{
    int n = 0;
    for (; *w; w++)
        n += *w == 'T';
    return n;
}

static int splines_create(const ctx *c, closed_splines *cs, aim_quadrature *q, int tracked,
                          int closed, int frozen, int teachers)
{
    const int R = c->ref.rows;
    double *t = malloc(sizeof *t * (size_t)R), *v = malloc(sizeof *v * (size_t)R * c->count);
    double *y = malloc(sizeof *y * (size_t)c->n), *mom = malloc(sizeof *mom * (size_t)c->count);
    cs->acc = gsl_interp_accel_alloc();
    cs->s = calloc((size_t)c->count, sizeof *cs->s);
    if (!t || !v || !y || !mom || !cs->acc || !cs->s)
        return -1;
    for (int r = 0; r < R; r++) {
        t[r] = drift_late_ref_tau(c, r);
        const double *z = c->z + (size_t)(frozen ? 0 : r) * c->count;
        /* closure reference: the closed words themselves; corrected: the
         * quadrature's error at the reference, every student word (frozen:
         * its error at the start, for every tau) */
        if (q) {
            drift_late_tracked_of(c, z, y);
            if (drift_late_quadrature_moments((ctx *)c, q, y, mom))
                return -1;
        }
        for (int i = 0; i < c->count; i++)
            v[(size_t)i * R + r] = q ? z[i] - mom[i] : z[i];
    }
    for (int i = q ? 1 : c->first_long; i < c->count; i++) {
        const char *w = aim_wordset_word(c->ws, i);
        if (!has_student(w) || (i < c->first_long ? !tracked : !closed) ||
            (teachers >= 0 && letters_t(w) != teachers))
            continue;
        cs->s[i] = gsl_spline_alloc(gsl_interp_cspline, (size_t)R);
        if (!cs->s[i] || gsl_spline_init(cs->s[i], t, v + (size_t)i * R, (size_t)R))
            return -1;
    }
    free(t);
    free(v);
    free(y);
    free(mom);
    return 0;
}

static void splines_free(const ctx *c, closed_splines *cs)
{
    for (int i = 0; cs->s && i < c->count; i++)
        gsl_spline_free(cs->s[i]);
    free(cs->s);
    gsl_interp_accel_free(cs->acc);
}

typedef struct {
    ctx *c;
    aim_quadrature *q;     /* closure quadrature, or NULL */
    closed_splines *cs;    /* closure reference, or NULL */
    double from, to;       /* corrected: only for from <= tau < to */
    double scale;          /* corrected: this fraction of the error removed */
    double *mom;
} closed_rhs;

static int rhs_closed(closed_rhs *k, double tau, const double *y, double *dy)
{
    ctx *c = k->c;
    if (k->q) {
        if (drift_late_quadrature_moments(c, k->q, y, k->mom))
            return -1;
        for (int i = 0; k->cs && tau >= k->from && tau < k->to && i < c->count; i++)
            if (k->cs->s[i])
                k->mom[i] += k->scale * gsl_spline_eval(k->cs->s[i], tau, k->cs->acc);
        return drift_late_rhs_at(c, k->mom, dy);
    }
    memcpy(k->mom, c->z, sizeof *k->mom * (size_t)c->count); /* teacher's words */
    for (int j = 0; j < c->n; j++)
        k->mom[aim_hierarchy_tracked(c->h, j)] = y[j];
    for (int i = c->first_long; i < c->count; i++)
        if (k->cs->s[i])
            k->mom[i] = gsl_spline_eval(k->cs->s[i], tau, k->cs->acc);
    return drift_late_rhs_at(c, k->mom, dy);
}

static int mode_run(ctx *c, const char *closure, int steps, double floor, double from, double to,
                    double scale)
{
    const int n = c->n, R = c->ref.rows;
    closed_splines cs = {0};
    closed_rhs k = {.c = c,
                    .mom = malloc(sizeof(double) * (size_t)c->count),
                    .from = from,
                    .to = to,
                    .scale = scale};
    /* corrected: every student word; corrected-closed: those of length
     * M + 1; corrected-tracked: those of length <= M */
    const int corrected = !strncmp(closure, "corrected", 9);
    const int frozen = !strcmp(closure, "corrected-start");
    /* corrected-closed-TK: only the closed words with K letters T */
    const int teachers = !strncmp(closure, "corrected-closed-T", 18) ? atoi(closure + 18) : -1;
    const int tracked = corrected && strncmp(closure, "corrected-closed", 16);
    const int closed = !corrected || strcmp(closure, "corrected-tracked");
    if (!strcmp(closure, "quadrature") || corrected)
        k.q = aim_quadrature_create(c->ws, c->M, floor);
    if (!strcmp(closure, "reference") || corrected) {
        if (splines_create(c, &cs, k.q, tracked, closed, frozen, teachers))
            return -1;
        k.cs = &cs;
    } else if (strcmp(closure, "quadrature")) {
        fprintf(stderr, "drift_late: %s: closure quadrature, reference, corrected, "
                        "corrected-closed[-TK], corrected-tracked or corrected-start\n",
                closure);
        return -1;
    }
    double *y = malloc(sizeof *y * (size_t)n), *yt = malloc(sizeof *yt * (size_t)n);
    double *st = malloc(sizeof *st * 4 * (size_t)n);
    if (!y || !yt || !st || !k.mom || (!k.q && !k.cs))
        return -1;
    drift_late_tracked_of(c, c->z, y);
    printf("tau\toverlap\toverlap_ref\toverlap_gap\trisk\trisk_ref\trisk_gap_rel\t"
           "m_S_gap\tm_SS_gap\tm_ST_gap\n");
    for (int r = 0; r < R; r++) {
        if (r > 0) {
            const double t0 = drift_late_ref_tau(c, r - 1),
                         hh = (drift_late_ref_tau(c, r) - t0) / steps;
            for (int s = 0; s < steps; s++) {
                const double t = t0 + s * hh;
                double *k1 = st, *k2 = st + n, *k3 = st + 2 * n, *k4 = st + 3 * n;
                if (rhs_closed(&k, t, y, k1))
                    return -1;
                for (int j = 0; j < n; j++)
                    yt[j] = y[j] + 0.5 * hh * k1[j];
                if (rhs_closed(&k, t + 0.5 * hh, yt, k2))
                    return -1;
                for (int j = 0; j < n; j++)
                    yt[j] = y[j] + 0.5 * hh * k2[j];
                if (rhs_closed(&k, t + 0.5 * hh, yt, k3))
                    return -1;
                for (int j = 0; j < n; j++)
                    yt[j] = y[j] + hh * k3[j];
                if (rhs_closed(&k, t + hh, yt, k4))
                    return -1;
                for (int j = 0; j < n; j++)
                    y[j] += hh / 6.0 * (k1[j] + 2 * k2[j] + 2 * k3[j] + k4[j]);
            }
        }
        /* the observables at y, with the same closure */
        if (k.q && !k.cs) {
            if (drift_late_quadrature_moments(c, k.q, y, k.mom))
                return -1;
        } else {
            double *tmp = malloc(sizeof *tmp * (size_t)n);
            if (!tmp || rhs_closed(&k, drift_late_ref_tau(c, r), y, tmp))
                return -1;
            free(tmp);
        }
        aim_overlaps q;
        aim_tied_overlaps(c->m, k.mom, &q);
        double risk;
        if (aim_gauss_risk_at(aim_tied_gauss(c->m), &q, &risk))
            return -1;
        const double ov = aim_overlaps_teacher_overlap(&q);
        const double ov_ref = ref_at(c, r, c->col_overlap), risk_ref = ref_at(c, r, c->col_risk);
        const double *z = c->z + (size_t)r * c->count;
        printf("%.4g\t%.6f\t%.6f\t%+.5f\t%.6f\t%.6f\t%+.4f\t%+.2e\t%+.2e\t%+.2e\n",
               drift_late_ref_tau(c, r), ov, ov_ref, ov - ov_ref, risk, risk_ref, risk / risk_ref - 1.0,
               k.mom[c->w_s] - z[c->w_s], k.mom[c->w_ss] - z[c->w_ss], k.mom[c->w_st] - z[c->w_st]);
        fflush(stdout);
    }
    if (k.cs)
        splines_free(c, &cs);
    aim_quadrature_free(k.q);
    free(k.mom);
    free(y);
    free(yt);
    free(st);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: drift_late CONFIG REF.tsv M drift|run|jacobian|gram [ARGS] "
                        "[--set key=value ...]\n");
        return 1;
    }
    gsl_set_error_handler_off();
    const char *mode = argv[4];
    int nargs = 0;
    for (int a = 5; a < argc && strcmp(argv[a], "--set"); a++)
        nargs++;
    ctx c;
    memset(&c, 0, sizeof c);
    int st = setup(&c, argc, argv, 5 + nargs);
    if (st)
        ; /* setup said why */
    else if (!strcmp(mode, "drift"))
        st = mode_drift(&c, nargs >= 1 ? atof(argv[5]) : 1e-6);
    else if (!strcmp(mode, "run") && nargs >= 2)
        st = mode_run(&c, argv[5], atoi(argv[6]), nargs >= 3 ? atof(argv[7]) : 1e-6,
                      nargs >= 4 ? atof(argv[8]) : -INFINITY, nargs >= 5 ? atof(argv[9]) : INFINITY,
                      nargs >= 6 ? atof(argv[10]) : 1.0);
    else if (!strcmp(mode, "jacobian") && nargs >= 1) {
        c.jac_step = nargs >= 3 ? atof(argv[7]) : 1e-5;
        st = drift_late_mode_jacobian(&c, argv[5], nargs >= 2 ? atof(argv[6]) : 1e-6);
    } else if (!strcmp(mode, "gram"))
        st = drift_late_mode_gram(&c);
    else {
        fprintf(stderr, "drift_late: %s: unknown mode or missing arguments\n", mode);
        st = -1;
    }
    aim_tied_free(c.m);
    for (int j = 0; c.ref.names && j < c.ref.cols; j++)
        free(c.ref.names[j]);
    free(c.ref.names);
    free(c.ref.x);
    free(c.teacher);
    free(c.z);
    free(c.zse);
    return st ? 1 : 0;
}
