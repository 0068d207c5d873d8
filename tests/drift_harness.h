/* The short-horizon drift measurement shared by the hierarchy drift
 * tests (test_drift_tied.c, test_drift_untied.c; MODEL.md sec. 9): from
 * a state of online SGD at finite d, independent continuations over a
 * short delta tau measure the rate of change of every state variable;
 * the model's right-hand side is evaluated at the moments *measured* on
 * the same matrices (every word up to length M + 1, so no closure is
 * involved), at the start and at the mean end state, and their
 * trapezoid is the prediction. Tolerance: 4 standard errors of the
 * measured rate, plus the finite-size bias of the hierarchies, of order
 * 1/sqrt d for the noise terms and 1/d for the first-order and decay
 * terms (theory/tied.md sec. 8, theory/untied.md sec. 8): 4/sqrt d of
 * the noise term plus 4/d of the others; the factor 4 is an
 * order-of-magnitude allowance for the unknown prefactors, like the 4
 * standard errors, not a derived constant. Included by a test file after
 * cmocka.h; header-only because each test is one executable. */
#ifndef AIM_DRIFT_HARNESS_H
#define AIM_DRIFT_HARNESS_H

#include <math.h>
#include <stdlib.h>

#include "compare.h"
#include "hierarchy.h"
#include "sgd.h"
#include "words.h"

#define DRIFT_REPS 12

typedef struct {
    const char *label;
    int d;
    double tau0; /* training before the measured window */
    double dtau; /* the window */
    int reps;    /* continuations; 0: DRIFT_REPS */
} drift_case;

/* A hierarchy model seen by the harness. */
typedef struct {
    void *model;
    const aim_hierarchy *h;
    /* the right-hand side's three parts at the moments mom of dimension d */
    int (*terms_at)(void *model, const double *mom, int d, double *gradient, double *noise,
                    double *decay);
    /* state variable i from the moments mom (the moment itself, or a
     * quantity made of it, e.g. the untied raw mean) */
    double (*state_of)(void *model, const double *mom, int i, int d);
    const char *(*name)(void *model, int i);
    /* the words of the teacher overlap: S, T, S S*^T, S S^T, S* S*^T */
    const char *overlap[5];
} drift_model;

static double drift_overlap(const aim_wordset *ws, const char *const w[5], const double *m)
{
    int k[5];
    for (int i = 0; i < 5; i++) {
        k[i] = aim_wordset_find(ws, w[i]);
        assert_true(k[i] >= 0); /* the words must be in the model's alphabet */
    }
    const double s = m[k[0]], t = m[k[1]];
    return (m[k[2]] - s * t) / sqrt((m[k[3]] - s * s) * (m[k[4]] - t * t));
}

static void drift_measure(const aim_sgd *s, const aim_wordset *ws, double *mom)
{
    assert_int_equal(aim_compare_measure_words(s, ws, aim_wordset_max_len(ws), mom), 0);
}

/* Runs the case; fails the test when a state variable is outside its
 * tolerance (after printing the whole table). */
static void drift_run(const aim_config *cfg, const drift_case *dc, const drift_model *dm)
{
    const aim_wordset *ws = aim_hierarchy_words(dm->h);
    const int count = aim_wordset_count(ws), n = aim_hierarchy_size(dm->h);
    const int reps = dc->reps ? dc->reps : DRIFT_REPS;
    double *m0 = calloc((size_t)count, sizeof *m0), *m1 = calloc((size_t)count, sizeof *m1);
    double *mend = calloc((size_t)count, sizeof *mend);
    double *rate = calloc((size_t)n, sizeof *rate), *rate2 = calloc((size_t)n, sizeof *rate2);
    double *t0 = calloc(6 * (size_t)n, sizeof *t0), *t1 = t0 + 3 * n;
    assert_true(m0 && m1 && mend && rate && rate2 && t0);

    aim_sgd *base = aim_sgd_create(cfg, dc->d, cfg->seed);
    assert_non_null(base);
    assert_int_equal(aim_sgd_advance(base, aim_sgd_steps_for(cfg, dc->d, dc->tau0)), 0);
    const long steps = aim_sgd_steps_for(cfg, dc->d, dc->dtau);
    const double dtau = steps * cfg->eta / ((double)dc->d * dc->d);
    drift_measure(base, ws, m0);
    for (int r = 0; r < reps; r++) {
        aim_sgd *c = aim_sgd_clone(base, 1000 + (uint64_t)r);
        assert_non_null(c);
        assert_int_equal(aim_sgd_advance(c, steps), 0);
        drift_measure(c, ws, m1);
        for (int i = 0; i < n; i++) {
            const double v = (dm->state_of(dm->model, m1, i, dc->d) -
                              dm->state_of(dm->model, m0, i, dc->d)) / dtau;
            rate[i] += v / reps;
            rate2[i] += v * v / reps;
        }
        for (int w = 0; w < count; w++)
            mend[w] += m1[w] / reps;
        aim_sgd_free(c);
    }
    assert_int_equal(dm->terms_at(dm->model, m0, dc->d, t0, t0 + n, t0 + 2 * n), 0);
    assert_int_equal(dm->terms_at(dm->model, mend, dc->d, t1, t1 + n, t1 + 2 * n), 0);
    print_message("%s (d = %d, tau0 = %g, dtau = %.3g, %d continuations, overlap %.3f)\n",
                  dc->label, dc->d, dc->tau0, dtau, reps, drift_overlap(ws, dm->overlap, m0));
    print_message("  %-10s %11s %11s %9s %7s %11s %11s %11s\n", "moment", "SGD rate", "ODE rate",
                  "SE", "z", "gradient", "noise", "decay");
    int bad = 0;
    const double sqd = sqrt((double)dc->d);
    for (int i = 0; i < n; i++) {
        const double se = sqrt(fmax(rate2[i] - rate[i] * rate[i], 0.0) / (reps - 1));
        const double grad = 0.5 * (t0[i] + t1[i]), noise = 0.5 * (t0[n + i] + t1[n + i]),
                     decay = 0.5 * (t0[2 * n + i] + t1[2 * n + i]);
        const double pred = grad + noise + decay;
        const double tol =
            4.0 * se + 4.0 / sqd * fabs(noise) + 4.0 / dc->d * (fabs(grad) + fabs(decay));
        const int ok = fabs(rate[i] - pred) <= tol;
        print_message("  %-10s %11.5g %11.5g %9.2g %7.2f %11.4g %11.4g %11.4g %s\n",
                      dm->name(dm->model, i), rate[i], pred, se,
                      se > 0 ? (rate[i] - pred) / se : 0.0, grad, noise, decay, ok ? "ok" : "FAIL");
        bad += !ok;
    }
    aim_sgd_free(base);
    free(m0);
    free(m1);
    free(mend);
    free(rate);
    free(rate2);
    free(t0);
    assert_int_equal(bad, 0);
}

#endif
