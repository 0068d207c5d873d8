/* The matrix limit process (sim/mlimit.c, theory/matrix.md) against the
 * hierarchy it must integrate without truncation.
 *
 * Drift check: at a state of the process itself (a trained one, reached
 * by running it), the expected one-step change of every tracked quantity
 * (antithetic pairs, aim_mlimit_drift) must equal the right-hand side of
 * the model (direct ODE, tied or untied hierarchy) evaluated at the
 * moments measured on the same matrices, words of length M + 1 included,
 * so that no closure is involved. The first-order and decay terms agree
 * exactly at any D; the noise terms carry a known O(1/D) part (the
 * transpose pairing of a real Gaussian matrix, theory/matrix.md sec. 3).
 * So the gap is measured at D and 2D and extrapolated linearly in 1/D;
 * what remains must vanish within 4 standard errors of the extrapolation
 * (noise pairs) plus the O(h) bias of the step, measured as the change of
 * the rate from h to 2h with the same noise, plus the round-off of a rate
 * taken as a difference of moments over a step h (about D eps |m| / h). Every term of every model is large in one of the
 * cases (gradient at the start and at a trained state, SGD noise at a
 * large eta, weight decay and label noise).
 *
 * Trajectories: the process against the direct closed ODE and against the
 * tied hierarchy at high order where its truncation error is negligible. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>

#include "direct.h"
#include "config_check.h"
#include "grid.h"
#include "mlimit.h"
#include "tied.h"
#include "trajectory.h"
#include "untied.h"

#define PAIRS 24
#define H 1e-6
#define MAXQ 64

/* One model seen by the check: its tracked quantities as functions of
 * measured moments, and its right-hand side there. */
typedef struct {
    const aim_config *cfg;
    aim_tied *tied;
    aim_untied *untied;
    aim_direct *direct;
    aim_wordset *direct_ws; /* direct: words in K = S, k = S^T, T, t */
    const aim_wordset *ws;
    int n;                  /* tracked quantities */
} model;

static const char *const direct_words[5] = {"Kk", "KK", "Kt", "KT", "K"};

static void model_open(model *md, const aim_config *cfg)
{
    memset(md, 0, sizeof *md);
    md->cfg = cfg;
    char err[256];
    if (cfg->decomposition == AIM_TIED) {
        assert_non_null(md->tied = aim_tied_create(cfg, AIM_RULE_AUTO, err, sizeof err));
        md->ws = aim_hierarchy_words(aim_tied_hierarchy(md->tied));
        md->n = aim_tied_size(md->tied);
    } else if (cfg->decomposition == AIM_UNTIED) {
        assert_non_null(md->untied = aim_untied_create(cfg, 0.0, AIM_RULE_AUTO, err, sizeof err));
        md->ws = aim_hierarchy_words(aim_untied_hierarchy(md->untied));
        md->n = aim_untied_size(md->untied);
    } else {
        assert_non_null(md->direct = aim_direct_create(cfg, 0.0, AIM_RULE_AUTO));
        const aim_alphabet ab = {"KkTt", "kKtT"};
        assert_non_null(md->direct_ws = aim_wordset_create(&ab, 2));
        md->ws = md->direct_ws;
        md->n = AIM_DIRECT_SIZE;
    }
    assert_true(md->n <= MAXQ);
}

static void model_close(model *md)
{
    aim_tied_free(md->tied);
    aim_untied_free(md->untied);
    aim_direct_free(md->direct);
    aim_wordset_free(md->direct_ws);
}

static const char *quantity_name(const model *md, int i)
{
    static const char *const names[AIM_DIRECT_SIZE] = {"Omega(S,S)", "Psi(S,S)",
                                                       "Omega(S,S*)", "Psi(S,S*)", "Tr S/d"};
    if (md->tied)
        return aim_tied_state_name(md->tied, i);
    if (md->untied)
        return aim_untied_state_name(md->untied, i);
    return names[i];
}

/* Quantity i from moments of the model's word set. */
static double quantity(const model *md, const double *mom, int i)
{
    if (md->tied)
        return mom[aim_hierarchy_tracked(aim_tied_hierarchy(md->tied), i)];
    if (md->untied)
        return mom[aim_hierarchy_tracked(aim_untied_hierarchy(md->untied), i)];
    return mom[aim_wordset_find(md->ws, direct_words[i])];
}

/* The model's right-hand side at measured moments: total and the size of
 * its terms (|gradient| + |noise| + |decay|). */
static void predicted(model *md, const double *mom, double *total, double *size)
{
    double g[MAXQ], nz[MAXQ], dc[MAXQ];
    if (md->tied) {
        assert_int_equal(aim_tied_terms_at(md->tied, mom, g, nz, dc), 0);
    } else if (md->untied) {
        assert_int_equal(aim_untied_terms_at(md->untied, mom, 0.0, g, nz, dc), 0);
    } else {
        aim_overlaps q;
        memset(&q, 0, sizeof q);
        const aim_wordset *ws = md->ws;
        q.omega[0][0] = mom[aim_wordset_find(ws, "Kk")];
        q.psi[0][0] = mom[aim_wordset_find(ws, "KK")];
        q.omega[0][1] = q.omega[1][0] = mom[aim_wordset_find(ws, "Kt")];
        q.psi[0][1] = q.psi[1][0] = mom[aim_wordset_find(ws, "KT")];
        q.omega[1][1] = mom[aim_wordset_find(ws, "Tt")];
        q.psi[1][1] = mom[aim_wordset_find(ws, "TT")];
        q.trace[0] = mom[aim_wordset_find(ws, "K")];
        q.trace[1] = mom[aim_wordset_find(ws, "T")];
        double y[AIM_DIRECT_SIZE];
        aim_direct_state_from(md->direct, &q, y);
        assert_int_equal(aim_direct_terms(md->direct, y, g, nz, dc), 0);
    }
    for (int i = 0; i < md->n; i++) {
        total[i] = g[i] + nz[i] + dc[i];
        size[i] = fabs(g[i]) + fabs(nz[i]) + fabs(dc[i]);
    }
}

/* Gap between the process's measured rates and the model's right-hand
 * side at dimension D after running the process to tau0: gap, its
 * standard error, the O(h) bias and the term sizes, per quantity. */
static void gap_at(model *md, int D, double tau0, double *gap, double *se, double *hbias,
                   double *size, double *value)
{
    char err[256];
    /* the Euler-Maruyama step itself, of which the extrapolated scheme is
     * made (theory/matrix.md sec. 3) */
    aim_config euler = *md->cfg;
    euler.scheme = AIM_SCHEME_EULER;
    aim_mlimit *m = aim_mlimit_create(&euler, D, D, euler.seed, err, sizeof err);
    if (!m)
        fail_msg("%s", err);
    if (tau0 > 0.0 && aim_mlimit_advance(m, tau0, tau0 / 100.0) != 0)
        fail_msg("%s", aim_mlimit_error(m));
    const int count = aim_wordset_count(md->ws), maxlen = aim_wordset_max_len(md->ws);
    const double h[2] = {H, 2 * H};
    double *mom = malloc(sizeof *mom * (size_t)count),
           *rate = malloc(sizeof *rate * 2 * (size_t)count),
           *rse = malloc(sizeof *rse * 2 * (size_t)count);
    assert_true(mom && rate && rse);
    assert_int_equal(aim_mlimit_words(m, md->ws, maxlen, mom), 0);
    /* the tracked quantities are words of length <= M (direct: 2) */
    const int tracked_len = md->direct ? 2 : md->cfg->order;
    if (aim_mlimit_drift(m, h, 2, PAIRS, md->ws, tracked_len, rate, rse) != 0)
        fail_msg("%s", aim_mlimit_error(m));
    double total[MAXQ];
    predicted(md, mom, total, size);
    for (int i = 0; i < md->n; i++) {
        const double r = quantity(md, rate, i), r2 = quantity(md, rate + count, i);
        gap[i] = r - total[i];
        se[i] = quantity(md, rse, i);
        hbias[i] = fabs(r2 - r);
        value[i] = quantity(md, mom, i);
    }
    free(mom);
    free(rate);
    free(rse);
    aim_mlimit_free(m);
}

static void drift_check(const aim_config *cfg, const char *label, int D, double tau0)
{
    model md;
    model_open(&md, cfg);
    double g1[MAXQ], s1[MAXQ], h1[MAXQ], z1[MAXQ], v1[MAXQ], g2[MAXQ], s2[MAXQ], h2[MAXQ],
        z2[MAXQ], v2[MAXQ];
    gap_at(&md, D, tau0, g1, s1, h1, z1, v1);
    gap_at(&md, 2 * D, tau0, g2, s2, h2, z2, v2);
    print_message("%s (D = %d and %d, tau0 = %g, %d antithetic pairs, h = %g)\n", label, D,
                  2 * D, tau0, PAIRS, H);
    print_message("  %-12s %11s %11s %11s %9s %9s %8s %7s\n", "quantity", "term size",
                  "gap(D)", "gap(2D)", "gap(inf)", "tol", "tol/size", "z");
    int bad = 0;
    for (int i = 0; i < md.n; i++) {
        const double ginf = 2.0 * g2[i] - g1[i];
        const double se = sqrt(4.0 * s2[i] * s2[i] + s1[i] * s1[i]);
        /* round-off: a moment summed over D^2 products carries a relative
         * error up to about D eps; divided by the step in the rate */
        const double roundoff =
            DBL_EPSILON * (2.0 * D * fabs(v2[i]) * 2.0 + D * fabs(v1[i])) / H;
        const double tol = 4.0 * se + 2.0 * h2[i] + h1[i] + roundoff;
        const int ok = fabs(ginf) <= tol;
        print_message("  %-12s %11.4g %11.3g %11.3g %9.2g %9.2g %8.2g %7.2f %s\n",
                      quantity_name(&md, i), z2[i], g1[i], g2[i], ginf, tol, tol / z2[i],
                      se > 0 ? ginf / se : 0.0, ok ? "ok" : "FAIL");
        bad += !ok;
    }
    model_close(&md);
    assert_int_equal(bad, 0);
}

static void tied_softmax(aim_config *cfg)
{
    aim_config_defaults(cfg);
    aim_config_error e;
    assert_int_equal(aim_config_set(cfg, "model.decomposition=tied", &e), 0);
    assert_int_equal(aim_config_set(cfg, "teacher.decomposition=tied", &e), 0);
    assert_int_equal(aim_config_set(cfg, "model.output=softmax", &e), 0);
    assert_int_equal(aim_config_set(cfg, "model.tokens=3", &e), 0);
    cfg->eta = 0.5;
    cfg->order = 3;
    assert_int_equal(aim_config_validate(cfg, &e), 0);
}

static void test_tied_start(void **state)
{
    (void)state;
    aim_config cfg;
    tied_softmax(&cfg);
    drift_check(&cfg, "tied softmax T = 3, start", 150, 0.0);
}

static void test_tied_trained(void **state)
{
    (void)state;
    aim_config cfg;
    tied_softmax(&cfg);
    drift_check(&cfg, "tied softmax T = 3, trained", 150, 0.3);
}

static void test_tied_noise_decay(void **state)
{
    (void)state;
    aim_config cfg;
    tied_softmax(&cfg);
    cfg.eta = 3.0;
    cfg.gamma = 1.0;
    cfg.noise = 0.5;
    drift_check(&cfg, "tied softmax T = 3, eta = 3, gamma = 1, noise 0.5, trained", 150, 0.1);
}

static void untied_config(aim_config *cfg)
{
    aim_config_defaults(cfg);
    aim_config_error e;
    assert_int_equal(aim_config_set(cfg, "model.decomposition=untied", &e), 0);
    cfg->student.scale = 0.5;
    cfg->student.scale_v = 0.3;
    cfg->order = 3;
    cfg->eta = 0.05;
    assert_int_equal(aim_config_validate(cfg, &e), 0);
}

static void test_untied_trained(void **state)
{
    (void)state;
    aim_config cfg;
    untied_config(&cfg);
    drift_check(&cfg, "untied He1 + He2/sqrt 2, trained", 150, 0.05);
}

static void test_untied_noise_decay(void **state)
{
    (void)state;
    aim_config cfg;
    untied_config(&cfg);
    cfg.eta = 1.0;
    cfg.gamma = 1.0;
    cfg.noise = 0.5;
    drift_check(&cfg, "untied, eta = 1, gamma = 1, noise 0.5, trained", 150, 0.02);
}

static void test_direct(void **state)
{
    (void)state;
    aim_config cfg;
    aim_config_defaults(&cfg);
    aim_config_error e;
    assert_int_equal(aim_config_set(&cfg, "teacher.decomposition=tied", &e), 0);
    assert_int_equal(aim_config_validate(&cfg, &e), 0);
    cfg.gamma = 0.5;
    cfg.eta = 0.02;
    drift_check(&cfg, "direct, tied teacher, eta = 0.02, gamma = 0.5, trained", 150, 0.1);
    cfg.student.symmetric = 1;
    cfg.teacher.decomposition = AIM_DIRECT;
    cfg.teacher.symmetric = 1;
    assert_int_equal(aim_config_set(&cfg, "model.output=softmax", &e), 0);
    assert_int_equal(aim_config_validate(&cfg, &e), 0);
    drift_check(&cfg, "direct symmetric, softmax, trained", 150, 0.1);
}

/* --- trajectories, paired with the model started where each replica starts --- */

#define REPLICAS 8
#define POINTS 11

/* Per grid point, the mean over replicas of (process - model from the
 * replica's own measured start) in the overlap and in the risk relative
 * to the model's, and their standard errors. */
static void paired_gaps(const aim_config *cfg, int D, double hmax, double *gap, double *se)
{
    double tau[POINTS];
    for (int i = 0; i < POINTS; i++)
        tau[i] = cfg->horizon * i / (POINTS - 1);
    double sum[2 * POINTS] = {0}, sq[2 * POINTS] = {0};
    aim_config c = *cfg;
    c.points = POINTS;
    for (int r = 0; r < REPLICAS; r++) {
        char err[256];
        aim_mlimit *m = aim_mlimit_create(&c, D, D, c.seed + (uint64_t)r, err, sizeof err);
        if (!m)
            fail_msg("%s", err);
        double model[POINTS * AIM_OBS_COUNT];
        aim_ode_report rep;
        if (c.decomposition == AIM_DIRECT) {
            aim_overlaps q;
            aim_mlimit_overlaps(m, &q);
            assert_int_equal(aim_trajectory_run_full(&c, D, tau, &(aim_measured_start){.q = &q}, model,
                                                     NULL, &rep),
                             AIM_ODE_OK);
        } else {
            /* the hierarchy's words up to M + 1, measured on the replica */
            char e2[256];
            aim_tied *h = aim_tied_create(&c, AIM_RULE_AUTO, e2, sizeof e2);
            assert_non_null(h);
            const aim_wordset *ws = aim_hierarchy_words(aim_tied_hierarchy(h));
            double *start = malloc(sizeof *start * (size_t)aim_wordset_count(ws));
            assert_non_null(start);
            assert_int_equal(aim_mlimit_words(m, ws, aim_wordset_max_len(ws), start), 0);
            assert_int_equal(aim_trajectory_run_full(&c, D, tau, &(aim_measured_start){.moments = start}, model,
                                                     NULL, &rep),
                             AIM_ODE_OK);
            free(start);
            aim_tied_free(h);
        }
        for (int i = 0; i < POINTS; i++) {
            if (i > 0 && aim_mlimit_advance(m, tau[i] - tau[i - 1], hmax) != 0)
                fail_msg("%s", aim_mlimit_error(m));
            double obs[AIM_OBS_COUNT];
            assert_int_equal(aim_mlimit_observables(m, obs), 0);
            const double *o = model + (size_t)i * AIM_OBS_COUNT;
            const double v[2] = {obs[AIM_OBS_OVERLAP] - o[AIM_OBS_OVERLAP],
                                 (obs[AIM_OBS_RISK] - o[AIM_OBS_RISK]) / o[AIM_OBS_RISK]};
            for (int k = 0; k < 2; k++) {
                sum[2 * i + k] += v[k];
                sq[2 * i + k] += v[k] * v[k];
            }
        }
        aim_mlimit_free(m);
    }
    for (int j = 0; j < 2 * POINTS; j++) {
        gap[j] = sum[j] / REPLICAS;
        se[j] = sqrt(fmax(sq[j] / REPLICAS - gap[j] * gap[j], 0.0) / (REPLICAS - 1));
    }
}

/* The process against the model along a trajectory, steps of at most
 * hmax: the paired gap at D and 2D extrapolated in 1/D, per grid point,
 * in the overlap and the relative risk. Returns how many of them are
 * more than 4 standard errors from 0. */
static int trajectory_gaps(const aim_config *cfg, const char *label, int D, double hmax)
{
    double g1[2 * POINTS], s1[2 * POINTS], g2[2 * POINTS], s2[2 * POINTS];
    paired_gaps(cfg, D, hmax, g1, s1);
    paired_gaps(cfg, 2 * D, hmax, g2, s2);
    print_message("%s: process - model from the same start (%d replicas, D = %d, %d; "
                  "%s steps <= %g)\n",
                  label, REPLICAS, D, 2 * D,
                  cfg->scheme == AIM_SCHEME_EULER ? "Euler" : "extrapolated", hmax);
    print_message("  %7s %12s %12s %9s %7s   %12s %12s %9s %7s\n", "tau", "overlap(D)",
                  "overlap(2D)", "inf", "z", "risk/r(D)", "risk/r(2D)", "inf", "z");
    int bad = 0;
    for (int i = 0; i < POINTS; i++) {
        double z[2], inf[2];
        for (int k = 0; k < 2; k++) {
            const int j = 2 * i + k;
            inf[k] = 2.0 * g2[j] - g1[j];
            const double se = sqrt(4.0 * s2[j] * s2[j] + s1[j] * s1[j]);
            /* both sides start from the same moments: at tau = 0 they differ
             * by round-off only */
            z[k] = fabs(inf[k]) <= 1e-12 ? 0.0 : se > 0.0 ? inf[k] / se : INFINITY;
            bad += fabs(z[k]) > 4.0;
        }
        print_message("  %7.4f %12.3g %12.3g %9.2g %7.2f   %12.3g %12.3g %9.2g %7.2f\n",
                      cfg->horizon * i / (POINTS - 1), g1[2 * i], g2[2 * i], inf[0], z[0],
                      g1[2 * i + 1], g2[2 * i + 1], inf[1], z[1]);
    }
    return bad;
}

/* ... which must vanish within 4 standard errors everywhere. */
static void trajectory_check(const aim_config *cfg, const char *label, int D)
{
    assert_int_equal(trajectory_gaps(cfg, label, D, cfg->horizon / 256), 0);
}

static void test_direct_trajectory(void **state)
{
    (void)state;
    aim_config cfg;
    aim_config_defaults(&cfg);
    cfg.horizon = 0.3;
    trajectory_check(&cfg, "direct, He1 + He2/sqrt 2", 200);
}

/* The time scheme: the extrapolated scheme with its step control (the
 * default, matrix.dtau = 0) stays within 4 standard errors of the closed
 * ODE; Euler-Maruyama steps of horizon / 40 (error O(h): +4.6 % in the
 * final risk at D = 200) do not - the check can tell them apart. */
static void test_direct_time_scheme(void **state)
{
    (void)state;
    aim_config cfg;
    aim_config_defaults(&cfg);
    cfg.horizon = 0.3;
    assert_int_equal(cfg.scheme, AIM_SCHEME_RICHARDSON);
    assert_int_equal(
        trajectory_gaps(&cfg, "direct, He1 + He2/sqrt 2", 200, aim_config_matrix_step(&cfg)), 0);
    cfg.scheme = AIM_SCHEME_EULER;
    cfg.matrix_dtau = cfg.horizon / 40;
    assert_true(trajectory_gaps(&cfg, "direct, He1 + He2/sqrt 2", 200, cfg.matrix_dtau) > 0);
}

/* The largest gap in the overlap and in the relative risk, over a grid of
 * POINTS to cfg's horizon and 2 replicas at D = 60, between the process
 * of cfg and that of ref (the same matrices, steps and noise). */
static void rule_gaps(const aim_config *cfg, const aim_config *ref, double gap[2])
{
    gap[0] = gap[1] = 0.0;
    for (int r = 0; r < 2; r++) {
        char err[256];
        aim_mlimit *a = aim_mlimit_create(cfg, 60, 60, cfg->seed + (uint64_t)r, err, sizeof err);
        aim_mlimit *b = aim_mlimit_create(ref, 60, 60, ref->seed + (uint64_t)r, err, sizeof err);
        assert_non_null(a);
        assert_non_null(b);
        for (int i = 0; i < POINTS; i++) {
            const double span = cfg->horizon / (POINTS - 1);
            if (i > 0)
                assert_int_equal(aim_mlimit_advance(a, span, cfg->matrix_dtau) |
                                     aim_mlimit_advance(b, span, ref->matrix_dtau),
                                 0);
            double oa[AIM_OBS_COUNT], ob[AIM_OBS_COUNT];
            assert_int_equal(aim_mlimit_observables(a, oa) | aim_mlimit_observables(b, ob), 0);
            gap[0] = fmax(gap[0], fabs(oa[AIM_OBS_OVERLAP] - ob[AIM_OBS_OVERLAP]));
            gap[1] = fmax(gap[1], fabs(oa[AIM_OBS_RISK] / ob[AIM_OBS_RISK] - 1.0));
        }
        aim_mlimit_free(a);
        aim_mlimit_free(b);
    }
}

/* The control variate of matrix.qmc_points (row softmax, T = 4): the
 * process on the cheap rule corrected at anchor states is paired with
 * the process on the full rule (same matrices, steps and noise), and so
 * is the process on the cheap rule alone. The correction must remove
 * most of the cheap rule's error: its gaps at most a third of the cheap
 * rule's (measured on Figure 1 at D = 100: a tenth in the overlap, 0.4
 * in the risk), and a process that skipped the correction, or added it
 * with the wrong sign, would have the cheap rule's gaps or twice them. */
static void test_control_variate(void **state)
{
    (void)state;
    aim_config cfg;
    aim_config_defaults(&cfg);
    aim_config_error e;
    assert_int_equal(aim_config_set(&cfg, "model.decomposition=tied", &e), 0);
    assert_int_equal(aim_config_set(&cfg, "teacher.decomposition=tied", &e), 0);
    assert_int_equal(aim_config_set(&cfg, "model.output=softmax", &e), 0);
    assert_int_equal(aim_config_set(&cfg, "model.tokens=4", &e), 0);
    cfg.eta = 0.5;
    cfg.student.scale = 0.25;
    cfg.horizon = 0.4;
    cfg.matrix_dtau = cfg.horizon / 40;
    assert_int_equal(aim_config_validate(&cfg, &e), 0);
    aim_config full = cfg, cheap = cfg;
    full.matrix_qmc_points = 0;
    cheap.matrix_qmc_points = 0;
    cheap.qmc_points = cfg.matrix_qmc_points;
    double with[2], without[2];
    rule_gaps(&cfg, &full, with);
    rule_gaps(&cheap, &full, without);
    print_message("control variate: largest gap to the full rule in the overlap %.2g (cheap "
                  "rule alone %.2g), in the relative risk %.2g (%.2g)\n",
                  with[0], without[0], with[1], without[1]);
    assert_true(without[0] > 0.0 && without[1] > 0.0);
    assert_true(with[0] < without[0] / 3 && with[1] < without[1] / 3);
}

static void test_tied_trajectory(void **state)
{
    (void)state;
    aim_config cfg;
    aim_config_defaults(&cfg);
    aim_config_error e;
    assert_int_equal(aim_config_set(&cfg, "model.decomposition=tied", &e), 0);
    assert_int_equal(aim_config_set(&cfg, "teacher.decomposition=tied", &e), 0);
    assert_int_equal(aim_config_set(&cfg, "model.activation=tanh", &e), 0);
    cfg.eta = 0.5;
    cfg.order = 7;
    /* M = 7 and 8 agree to 1e-4 in the overlap up to here (later the
     * truncation error grows: 0.027 between them at tau = 0.1) */
    cfg.horizon = 0.05;
    assert_int_equal(aim_config_validate(&cfg, &e), 0);
    trajectory_check(&cfg, "tied tanh, M = 7", 100);
}

int main(void)
{
    gsl_set_error_handler_off();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tied_start),   cmocka_unit_test(test_tied_trained),
        cmocka_unit_test(test_tied_noise_decay), cmocka_unit_test(test_untied_trained),
        cmocka_unit_test(test_untied_noise_decay), cmocka_unit_test(test_direct),
        cmocka_unit_test(test_direct_trajectory), cmocka_unit_test(test_direct_time_scheme),
        cmocka_unit_test(test_control_variate), cmocka_unit_test(test_tied_trajectory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
