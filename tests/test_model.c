/* The model interface's contract (src/students/model.h), checked for every
 * registered student in several configurations, at its exact start and
 * at a state moved along its right-hand side. A new model passes these
 * before anything else can use it:
 *  - its name and kind match the configuration's decomposition;
 *  - the start is valid (every margin >= 0), finite, and named;
 *  - the rhs is finite and equals the sum of its gradient, noise and decay
 *    terms (the split that names a blow-up's cause);
 *  - overlap() is the observables' overlap (the weak-recovery root and the
 *    written column are the same quantity);
 *  - the observables' risk (the engine's risk alone) is, bit for bit, the
 *    risk of the full evaluation its right-hand side made at that state;
 *  - tracked moments have distinct names and finite values;
 *  - a fast variable has a finite start and rate;
 *  - an unknown decomposition is refused with a message. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "config_check.h"

typedef struct {
    const char *what;
    const char *name;       /* the model it must give */
    const char *sets[6];    /* key=value assignments */
} model_case;

static const model_case cases[] = {
    {"direct He1", "direct", {"model.decomposition=direct", "model.activation=he1"}},
    {"direct He1+He2/sqrt 2, raw", "direct",
     {"model.decomposition=direct", "model.centring=raw", "teacher.mean=1"}},
    {"direct softmax, symmetric", "direct",
     {"model.decomposition=direct", "model.output=softmax", "student.symmetric=true"}},
    {"tied He2, M = 3", "tied",
     {"model.decomposition=tied", "teacher.decomposition=tied", "model.activation=he2",
      "hierarchy.order=3"}},
    {"tied softmax, M = 2", "tied",
     {"model.decomposition=tied", "teacher.decomposition=tied", "model.output=softmax",
      "hierarchy.order=2"}},
    {"untied He1, M = 3", "untied",
     {"model.decomposition=untied", "model.activation=he1", "hierarchy.order=3"}},
    {"untied He1, raw, stiff", "untied",
     {"model.decomposition=untied", "model.activation=he1", "model.centring=raw",
      "teacher.mean=0.7", "hierarchy.order=2"}},
    {"untied softmax, M = 2", "untied",
     {"model.decomposition=untied", "model.output=softmax", "hierarchy.order=2"}},
    {"untied He1, raw, adiabatic", "untied",
     {"model.decomposition=untied", "model.activation=he1", "model.centring=raw",
      "teacher.mean=0.7", "hierarchy.order=2", "hierarchy.mean=adiabatic"}},
};

static void configure(const model_case *c, aim_config *cfg)
{
    aim_config_error e;
    aim_config_defaults(cfg);
    for (int i = 0; i < 6 && c->sets[i]; i++)
        if (aim_config_set(cfg, c->sets[i], &e))
            fail_msg("%s: %s: %s", c->what, c->sets[i], e.message);
    if (aim_config_validate(cfg, &e))
        fail_msg("%s: %s", c->what, e.message);
}

static int close_to(double a, double b, double rel)
{
    return fabs(a - b) <= rel * (fabs(a) + fabs(b)) + 1e-300;
}

/* The contract at state y of model m (size n). */
static void check_state(const model_case *c, aim_model *m, const double *y, const char *where)
{
    const int n = aim_model_size(m);
    double *dy = malloc(sizeof *dy * (size_t)n * 4);
    assert_non_null(dy);
    for (int i = 0; i < n; i++)
        if (!isfinite(y[i]))
            fail_msg("%s, %s: %s = %g", c->what, where, aim_model_state_name(m, i), y[i]);
    const int margins = aim_model_margin_count(m);
    if (margins > 0) {
        double *g = malloc(sizeof *g * (size_t)margins);
        assert_non_null(g);
        aim_model_margins(m, y, g);
        for (int k = 0; k < margins; k++)
            if (!(g[k] >= 0.0))
                fail_msg("%s, %s: margin %d (%s) = %g", c->what, where, k,
                         aim_model_margin_text(m, k), g[k]);
        free(g);
    }
    if (aim_model_rhs(m, y, dy))
        fail_msg("%s, %s: rhs: %s", c->what, where, aim_model_error(m));
    for (int i = 0; i < n; i++)
        if (!isfinite(dy[i]))
            fail_msg("%s, %s: d%s/dtau = %g", c->what, where, aim_model_state_name(m, i),
                     dy[i]);
    if (aim_model_has_terms(m)) {
        double *gr = dy + n, *no = dy + 2 * n, *de = dy + 3 * n;
        assert_int_equal(aim_model_terms(m, y, gr, no, de), 0);
        for (int i = 0; i < n; i++) {
            const double sum = gr[i] + no[i] + de[i];
            const double scale = fabs(gr[i]) + fabs(no[i]) + fabs(de[i]);
            if (!(fabs(sum - dy[i]) <= 1e-10 * scale + 1e-14))
                fail_msg("%s, %s: %s: gradient %g + noise %g + decay %g = %g, rhs %g", c->what,
                         where, aim_model_state_name(m, i), gr[i], no[i], de[i], sum, dy[i]);
        }
    }
    double obs[AIM_OBS_COUNT];
    if (aim_model_observables(m, y, obs))
        fail_msg("%s, %s: observables: %s", c->what, where, aim_model_error(m));
    /* the right-hand side above left the engine's full evaluation at y */
    const double risk = aim_gauss_risk(aim_model_engine(m));
    if (memcmp(&risk, &obs[AIM_OBS_RISK], sizeof risk) != 0)
        fail_msg("%s, %s: observables' risk %.17g, the full evaluation's %.17g", c->what,
                 where, obs[AIM_OBS_RISK], risk);
    const double q = aim_model_overlap(m, y);
    if (!close_to(q, obs[AIM_OBS_OVERLAP], 1e-12))
        fail_msg("%s, %s: overlap() %.15g, observables %.15g", c->what, where, q,
                 obs[AIM_OBS_OVERLAP]);
    const int tracked = aim_model_tracked_count(m);
    if (tracked > 0) {
        double *t = malloc(sizeof *t * (size_t)tracked);
        assert_non_null(t);
        aim_model_tracked(m, y, obs, t);
        for (int k = 0; k < tracked; k++) {
            const char *name = aim_model_tracked_name(m, k);
            if (!name[0] || !isfinite(t[k]))
                fail_msg("%s, %s: tracked %d \"%s\" = %g", c->what, where, k, name, t[k]);
            for (int j = 0; j < k; j++)
                if (!strcmp(name, aim_model_tracked_name(m, j)))
                    fail_msg("%s: tracked %d and %d are both %s", c->what, j, k, name);
        }
        free(t);
    }
    free(dy);
}

static void test_contract(void **state)
{
    (void)state;
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        const model_case *c = &cases[k];
        aim_config cfg;
        configure(c, &cfg);
        const aim_model_ops *ops = aim_model_ops_of(&cfg);
        assert_non_null(ops);
        char err[512];
        aim_model *m = aim_model_create(&cfg, 400.0, err, sizeof err);
        if (!m)
            fail_msg("%s: %s", c->what, err);
        assert_string_equal(aim_model_name(m), c->name);
        assert_int_equal(aim_model_is_hierarchy(m), strcmp(c->name, "direct") != 0);
        const int n = aim_model_size(m);
        assert_true(n > 0);
        assert_true(aim_model_monitored(m) >= 0 && aim_model_monitored(m) <= n);
        for (int i = 0; i < n; i++)
            assert_true(aim_model_state_name(m, i)[0] != '\0');
        assert_non_null(aim_model_engine(m));
        double *y = malloc(sizeof *y * (size_t)n * 2);
        assert_non_null(y);
        if (aim_model_initial(m, NULL, y, err, sizeof err))
            fail_msg("%s: start: %s", c->what, err);
        check_state(c, m, y, "start");
        /* a small step along the rhs: a state that is not the start */
        double *dy = y + n, norm_y = 0.0, norm_dy = 0.0;
        assert_int_equal(aim_model_rhs(m, y, dy), 0);
        for (int i = 0; i < n; i++) {
            norm_y += y[i] * y[i];
            norm_dy += dy[i] * dy[i];
        }
        const double h = norm_dy > 0.0 ? 1e-3 * sqrt(norm_y / norm_dy) : 0.0;
        for (int i = 0; i < n; i++)
            y[i] += h * dy[i];
        check_state(c, m, y, "moved");
        const double x0 = aim_model_fast_start(m);
        const int adiabatic = cfg.centring == AIM_RAW && cfg.decomposition == AIM_UNTIED &&
                              cfg.mean_mode == AIM_MEAN_ADIABATIC;
        assert_int_equal(!isnan(x0), adiabatic);
        if (adiabatic) {
            double rate;
            assert_int_equal(aim_model_fast_rate(m, x0, &rate), 0);
            assert_true(isfinite(rate));
            assert_string_equal(aim_model_fast_name(m), "mean");
        }
        free(y);
        aim_model_free(m);
    }
}

static void test_unknown_decomposition(void **state)
{
    (void)state;
    aim_config cfg;
    aim_config_defaults(&cfg);
    cfg.decomposition = (aim_decomposition)7;
    assert_null(aim_model_ops_of(&cfg));
    char err[256] = "";
    assert_null(aim_model_create(&cfg, 400.0, err, sizeof err));
    assert_non_null(strstr(err, "decomposition"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_contract),
        cmocka_unit_test(test_unknown_decomposition),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
