/* bench_tied: the cost of one right-hand-side evaluation of the tied
 * hierarchy against its order M, and what it is made of. For M = 1..8
 * (row softmax, T = 4, the expectation engine at its default 16384
 * quasi-random points, aligned closure) it times, at states that change
 * the order parameters at every call (so the kernel cache never hits):
 *   - rhs:     aim_tied_rhs, everything;
 *   - engine:  aim_gauss_eval alone at the same order parameters, the
 *              reference (its cost does not depend on M);
 *   - closure + terms: aim_tied_rhs at states that differ only in the
 *              longest tracked word (the order parameters, and so the
 *              cached kernels, stay the same): the part that grows with
 *              M, measured directly.
 * The ratio rhs/engine says how far above the unavoidable engine cost a
 * right-hand side is; (closure + terms)/engine how much the hierarchy
 * itself adds. Usage: bench_tied [seconds per measurement,
 * default 0.5]. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <gsl/gsl_errno.h>

#include "config.h"
#include "config_check.h"
#include "family.h"
#include "gauss.h"
#include "tied.h"

static double now(void)
{
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    gsl_set_error_handler_off();
    const double budget = argc > 1 ? atof(argv[1]) : 0.5;
    aim_config cfg;
    aim_config_error err;
    aim_config_defaults(&cfg);
    const char *sets[] = {"model.decomposition=tied", "teacher.decomposition=tied",
                          "model.tokens=4", "model.output=softmax"};
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++)
        if (aim_config_set(&cfg, sets[i], &err)) {
            fprintf(stderr, "bench_tied: %s\n", err.message);
            return 1;
        }
    if (aim_config_validate(&cfg, &err)) {
        fprintf(stderr, "bench_tied: %s\n", err.message);
        return 1;
    }
    printf("tied hierarchy, row softmax T = 4, %d quasi-random points (one run)\n",
           cfg.qmc_points);
    printf("%3s %10s %8s %10s %12s %19s %11s %16s\n", "M", "equations", "terms", "rhs (ms)",
           "engine (ms)", "closure+terms (ms)", "rhs/engine", "(cl+terms)/eng");
    for (int M = 1; M <= 8; M++) {
        cfg.order = M;
        char msg[256];
        aim_tied *m = aim_tied_create(&cfg, AIM_RULE_AUTO, msg, sizeof msg);
        aim_gauss *g = aim_gauss_create(&cfg, AIM_RULE_AUTO, aim_family_symmetric_pair(&cfg));
        if (!m || !g) {
            fprintf(stderr, "bench_tied: M = %d: %s\n", M, m ? "engine set-up failed" : msg);
            return 1;
        }
        const int n = aim_tied_size(m);
        double *y = malloc(sizeof *y * (size_t)n), *dy = malloc(sizeof *dy * (size_t)n);
        double *y0 = malloc(sizeof *y0 * (size_t)n);
        if (!y || !dy || !y0)
            return 1;
        aim_tied_initial(m, y0);
        long calls = 0;
        double t0 = now(), t_rhs;
        do { /* a different m(S) each call: the engine runs every time */
            for (int i = 0; i < n; i++)
                y[i] = y0[i];
            y[0] = y0[0] * (1.0 + 1e-3 * (double)(calls % 7));
            if (aim_tied_rhs(m, y, dy)) {
                fprintf(stderr, "bench_tied: %s\n", aim_tied_error(m));
                return 1;
            }
            calls++;
        } while ((t_rhs = now() - t0) < budget);
        t_rhs /= (double)calls;
        double *mom = malloc(sizeof *mom * (size_t)aim_wordset_count(
                                                aim_hierarchy_words(aim_tied_hierarchy(m))));
        aim_tied_moments(m, y0, mom);
        aim_overlaps q;
        aim_tied_overlaps(m, mom, &q);
        long evals = 0;
        double t_eng;
        t0 = now();
        do {
            q.trace[0] = mom[1] * (1.0 + 1e-3 * (double)(evals % 7));
            if (aim_gauss_eval(g, &q))
                return 1;
            evals++;
        } while ((t_eng = now() - t0) < budget);
        t_eng /= (double)evals;
        long cheap = 0;
        double t_cl;
        t0 = now();
        do { /* only the last (longest) word changes: kernels from the cache */
            for (int i = 0; i < n; i++)
                y[i] = y0[i];
            y[n - 1] = y0[n - 1] * (1.0 + 1e-3 * (double)(cheap % 7));
            if (aim_tied_rhs(m, y, dy))
                return 1;
            cheap++;
        } while ((t_cl = now() - t0) < budget);
        t_cl /= (double)cheap;
        if (M <= 2) /* every tracked word is an order parameter: no cheap state */
            printf("%3d %10d %8d %10.2f %12.2f %19s %11.3f %16s\n", M, n,
                   aim_hierarchy_terms(aim_tied_hierarchy(m)), 1e3 * t_rhs, 1e3 * t_eng, "-",
                   t_rhs / t_eng, "-");
        else
            printf("%3d %10d %8d %10.2f %12.2f %19.4f %11.3f %16.2e\n", M, n,
                   aim_hierarchy_terms(aim_tied_hierarchy(m)), 1e3 * t_rhs, 1e3 * t_eng,
                   1e3 * t_cl, t_rhs / t_eng, t_cl / t_eng);
        free(y);
        free(dy);
        free(y0);
        free(mom);
        aim_gauss_free(g);
        aim_tied_free(m);
    }
    return 0;
}
