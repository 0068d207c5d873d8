/* kernel_accuracy: the engine's kernel error estimate
 * (aim_gauss_kernel_error) against the error it actually makes, measured
 * against a reference rule of 2^20 points. The actual error of each group
 * of kernels, as the estimate defines it (the risk; K_omega; K_psi; the
 * drift kernels, seen through E[sum e C] and E[e h(B)], E[e h^T(B)] for
 * B = each index and a Psi-only direction), relative to the group's
 * largest reference value; the largest over the groups is printed beside
 * the estimate.
 *
 * Usage: kernel_accuracy [--reference N]
 *   at the start of examples/tied_softmax_T4.ini (row softmax, T = 4,
 *   tied student and teacher), for the point counts 1024 .. 262144 and
 *   for ode.kernel_tol values;
 * or:    kernel_accuracy [--reference N] ODE_FILE ROW POINTS...
 *   at a state of an ODE result file (its configuration from its
 *   "# config" lines, the student's order parameters from the row ROW:
 *   "first", "last" or a tau of the file, the teacher's from its family),
 *   one line per point count: the estimate made at that state, the
 *   actual error there and that of each group
 *   (validate/bench/kernel_tolerance.sh);
 * or:    kernel_accuracy --rules [--reference N] ODE_FILE ROW
 *   at such a state (raw centring too: the means from the file's "mean"
 *   column and teacher.mean), the rules of an elementwise map against one
 *   another: auto (closed forms for relu and erf, else Gauss-Hermite),
 *   hermite and generic (at the file's ode.qmc_points), each group's
 *   error against the reference (the closed forms where there are some,
 *   else the quasi-random rule at N points) and the CPU time of one
 *   evaluation (theory/direct.md sec. 3.5, 3.6). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gsl/gsl_errno.h>

#include "config.h"
#include "config_check.h"
#include "family.h"
#include "gauss.h"
#include "overlaps.h"
#include "tsv.h"

#define NVAL AIM_GAUSS_KERNEL_VALUES

static int configure(aim_config *cfg, int points, double tol)
{
    aim_config_error err;
    const char *sets[] = {"model.tokens=4", "model.output=softmax", "model.decomposition=tied",
                          "teacher.decomposition=tied"};
    aim_config_defaults(cfg);
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++)
        if (aim_config_set(cfg, sets[i], &err)) {
            fprintf(stderr, "kernel_accuracy: %s\n", err.message);
            return -1;
        }
    cfg->qmc_points = points;
    cfg->kernel_tol = tol;
    if (aim_config_validate(cfg, &err)) {
        fprintf(stderr, "kernel_accuracy: %s\n", err.message);
        return -1;
    }
    return 0;
}

/* The kernels at q (aim_gauss_kernel_values). */
static int kernels(aim_gauss *g, const aim_overlaps *q, double v[NVAL])
{
    if (aim_gauss_eval(g, q))
        return -1;
    aim_gauss_kernel_values(g, v);
    return 0;
}

static double actual_error(const double v[NVAL], const double ref[NVAL])
{
    double err[AIM_GAUSS_KERNEL_GROUPS];
    aim_gauss_kernel_gaps(v, ref, err);
    return fmax(fmax(err[0], err[1]), fmax(err[2], err[3]));
}

/* The engine at q for a rule of points (kernel_tol 0) or for kernel_tol:
 * its kernels into v, its estimate into *est, its point count into
 * *used. */
static int measure(const aim_config *base, const aim_overlaps *q, int points, double tol,
                   double v[NVAL], double *est, int *used)
{
    aim_config cfg = *base;
    aim_config_error err;
    cfg.qmc_points = points;
    cfg.kernel_tol = tol;
    if (aim_config_validate(&cfg, &err)) {
        fprintf(stderr, "kernel_accuracy: %s\n", err.message);
        return -1;
    }
    aim_gauss *g = aim_gauss_create(&cfg, AIM_RULE_AUTO, aim_family_symmetric_pair(&cfg));
    if (!g) {
        fprintf(stderr, "kernel_accuracy: the engine could not be created\n");
        return -1;
    }
    int st = kernels(g, q, v) || (est && aim_gauss_kernel_error(g, est));
    if (st)
        fprintf(stderr, "kernel_accuracy: the engine failed: %s\n", aim_gauss_error(g));
    else if (aim_gauss_points(g) == 0) {
        fprintf(stderr, "kernel_accuracy: the configuration's output map uses Gauss-Hermite "
                        "rules; only the quasi-random rule (row softmax, relu) has a kernel "
                        "error to check\n");
        st = 1;
    } else if (used)
        *used = aim_gauss_points(g);
    aim_gauss_free(g);
    return st ? -1 : 0;
}

/* The configuration an ODE file was made with, from its "# config KEY =
 * VALUE" lines; raw centring refused unless raw_ok. */
static int file_config(const aim_table *t, const char *path, int raw_ok, aim_config *cfg)
{
    static const char prefix[] = "# config ";
    aim_config_error err;
    aim_config_defaults(cfg);
    int keys = 0;
    for (int i = 0; i < t->nmeta; i++) {
        if (strncmp(t->meta[i], prefix, sizeof prefix - 1) != 0)
            continue;
        const char *line = t->meta[i] + sizeof prefix - 1;
        const char *eq = strstr(line, " = ");
        char assignment[1024];
        if (!eq || snprintf(assignment, sizeof assignment, "%.*s=%s", (int)(eq - line), line,
                            eq + 3) >= (int)sizeof assignment) {
            fprintf(stderr, "kernel_accuracy: %s: unreadable line \"%s\"; allowed: "
                            "\"# config KEY = VALUE\"\n",
                    path, t->meta[i]);
            return -1;
        }
        if (aim_config_set(cfg, assignment, &err)) {
            fprintf(stderr, "kernel_accuracy: %s: %s\n", path, err.message);
            return -1;
        }
        keys++;
    }
    if (keys == 0) {
        fprintf(stderr, "kernel_accuracy: %s has no \"# config\" lines; allowed: an ODE "
                        "result file of aimdyn\n",
                path);
        return -1;
    }
    if (!raw_ok && cfg->centring != AIM_CENTRED) {
        fprintf(stderr, "kernel_accuracy: %s: model.centring = raw; allowed: centred (the "
                        "state of a raw run needs its dimension)\n",
                path);
        return -1;
    }
    return 0;
}

/* The state of the row (first, last or a tau of the file) into q. */
static int file_state(const aim_table *t, const aim_config *cfg, const char *path,
                      const char *row, aim_overlaps *q, double *tau)
{
    static const char *const cols[] = {"omega_ss", "psi_ss", "omega_st", "psi_st", "trace"};
    int c[5], ctau = aim_table_column(t, "tau"), r = -1;
    for (int j = 0; j < 5; j++)
        if ((c[j] = aim_table_column(t, cols[j])) < 0) {
            fprintf(stderr, "kernel_accuracy: %s has no column %s; allowed: an ODE result "
                            "file of aimdyn\n",
                    path, cols[j]);
            return -1;
        }
    if (strcmp(row, "first") == 0)
        r = 0;
    else if (strcmp(row, "last") == 0)
        r = t->nrows - 1;
    else {
        char *end;
        double want = strtod(row, &end);
        for (int i = 0; *row && !*end && i < t->nrows; i++)
            if (fabs(t->data[i * t->ncols + ctau] - want) <= 1e-12 * fmax(1.0, fabs(want)))
                r = i;
    }
    if (r < 0 || t->nrows == 0) {
        fprintf(stderr, "kernel_accuracy: ROW = \"%s\" is not a row of %s; allowed: first, "
                        "last or a tau of the file\n",
                row, path);
        return -1;
    }
    const double *y = t->data + (size_t)r * t->ncols;
    memset(q, 0, sizeof *q);
    q->omega[0][0] = y[c[0]];
    q->psi[0][0] = y[c[1]];
    q->omega[0][1] = q->omega[1][0] = y[c[2]];
    q->psi[0][1] = q->psi[1][0] = y[c[3]];
    q->trace[0] = y[c[4]];
    aim_family_start_overlaps(&cfg->teacher, &q->omega[1][1], &q->psi[1][1], &q->trace[1]);
    const int cmean = aim_table_column(t, "mean");
    if (cfg->centring == AIM_RAW && cmean >= 0) {
        /* as src/students/direct.c: the teacher's mean term m* I / sqrt d
         * adds m*^2 / d to its Omega and Psi at the finite d of the run */
        const double d = cfg->ode_d > 0 ? cfg->ode_d : cfg->d, m = cfg->teacher.mean;
        q->mean[0] = y[cmean];
        q->mean[1] = m;
        q->omega[1][1] += m * m / d;
        q->psi[1][1] += m * m / d;
        q->trace[1] += m / sqrt(d);
    }
    *tau = y[ctau];
    return 0;
}

/* The kernels of cfg's engine under rule at q into v, and the CPU time
 * of one evaluation (repeated for at least 0.2 s) into *seconds. */
static int timed_kernels(const aim_config *cfg, aim_gauss_rule rule, const aim_overlaps *q,
                         double v[NVAL], double *seconds)
{
    aim_gauss *g = aim_gauss_create(cfg, rule, aim_family_symmetric_pair(cfg));
    if (!g || kernels(g, q, v)) {
        fprintf(stderr, "kernel_accuracy: the engine failed: %s\n",
                g ? aim_gauss_error(g) : "not created");
        aim_gauss_free(g);
        return -1;
    }
    const clock_t start = clock();
    int n = 0;
    do {
        kernels(g, q, v);
        n++;
    } while (clock() - start < CLOCKS_PER_SEC / 5);
    *seconds = (double)(clock() - start) / CLOCKS_PER_SEC / n;
    aim_gauss_free(g);
    return 0;
}

static int compare_rules(int nref, const char *path, const char *row)
{
    aim_table t;
    aim_config cfg;
    aim_overlaps q;
    double tau, ref[NVAL], v[NVAL], gaps[AIM_GAUSS_KERNEL_GROUPS], sec;
    if (aim_table_read(path, NULL, &t))
        return 1;
    int st = file_config(&t, path, 1, &cfg) || file_state(&t, &cfg, path, row, &q, &tau);
    aim_table_free(&t);
    aim_config_error err;
    if (st || (aim_config_validate(&cfg, &err) &&
               fprintf(stderr, "kernel_accuracy: %s: %s\n", path, err.message)))
        return 1;
    if (cfg.output != AIM_ELEMENTWISE) {
        fprintf(stderr, "kernel_accuracy: %s: model.output = softmax; allowed with --rules: "
                        "elementwise\n",
                path);
        return 1;
    }
    const int closed = aim_gauss_closed_forms(&cfg);
    aim_config rc = cfg;
    rc.qmc_points = nref;
    if (timed_kernels(&rc, closed ? AIM_RULE_AUTO : AIM_RULE_GENERIC, &q, ref, &sec))
        return 1;
    /* a symmetric student or teacher (Psi = Omega) has no direction
     * (Omega, Psi) = (e_i, 0) (aim_gauss_kernel_values' last four): the
     * matrices B of it are not orthogonal to the antisymmetric part it
     * lacks, and each rule regresses on them its own way */
    const int sym[2] = {q.psi[0][0] == q.omega[0][0], q.psi[1][1] == q.omega[1][1]};
    for (int i = 0; i < 2; i++)
        for (int t = 0; sym[i] && t < 2; t++)
            ref[8 + 2 * i + t] = 0.0;
    printf("# %s at tau = %.9g (teacher overlap %.6f, means %g %g); reference: %s\n", path,
           tau, aim_overlaps_teacher_overlap(&q), q.mean[0], q.mean[1],
           closed ? "the closed forms" : "the quasi-random rule");
    if (!closed)
        printf("# reference: %d points\n", nref);
    printf("# the kernels there: risk %.4g, K_omega %.4g, K_psi %.4g%s\n", ref[0], ref[1], ref[2],
           sym[0] || sym[1] ? "; the drift along symmetric directions only" : "");
    printf("%-8s %12s %10s %10s %10s %10s\n", "rule", "seconds", "risk", "K_omega", "K_psi",
           "drift");
    static const aim_gauss_rule rules[3] = {AIM_RULE_AUTO, AIM_RULE_HERMITE, AIM_RULE_GENERIC};
    static const char *const names[3] = {"auto", "hermite", "generic"};
    for (int r = 0; r < 3; r++) {
        if (timed_kernels(&cfg, rules[r], &q, v, &sec))
            return 1;
        for (int i = 0; i < 2; i++)
            for (int t = 0; sym[i] && t < 2; t++)
                v[8 + 2 * i + t] = 0.0;
        aim_gauss_kernel_gaps(v, ref, gaps);
        printf("%-8s %12.3g %10.2g %10.2g %10.2g %10.2g\n", names[r], sec, gaps[0], gaps[1],
               gaps[2], gaps[3]);
    }
    return 0;
}

static int at_file_state(int nref, const char *path, const char *row, int ncounts,
                         char **counts)
{
    aim_table t;
    aim_config cfg;
    aim_overlaps q;
    double tau, ref[NVAL], v[NVAL], est;
    if (aim_table_read(path, NULL, &t))
        return 1;
    int st = file_config(&t, path, 0, &cfg) || file_state(&t, &cfg, path, row, &q, &tau);
    aim_table_free(&t);
    if (st || measure(&cfg, &q, nref, 0.0, ref, NULL, NULL))
        return 1;
    printf("# %s at tau = %.9g (teacher overlap %.6f); reference: %d points\n", path, tau,
           aim_overlaps_teacher_overlap(&q), nref);
    printf("# the kernels there: risk %.4g, K_omega %.4g, K_psi %.4g\n", ref[0], ref[1], ref[2]);
    printf("%10s %12s %14s %10s %10s %10s %10s\n", "points", "estimated", "actual", "risk",
           "K_omega", "K_psi", "drift");
    for (int i = 0; i < ncounts; i++) {
        char *end;
        long n = strtol(counts[i], &end, 10);
        int used;
        if (*end || n < 1 || n > 1L << 30) {
            fprintf(stderr, "kernel_accuracy: POINTS = \"%s\"; allowed: a point count "
                            "(ode.qmc_points)\n",
                    counts[i]);
            return 1;
        }
        if (measure(&cfg, &q, (int)n, 0.0, v, &est, &used))
            return 1;
        double err[4];
        aim_gauss_kernel_gaps(v, ref, err);
        printf("%10d %12.3g %14.3g %10.2g %10.2g %10.2g %10.2g\n", used, est, actual_error(v, ref),
               err[0], err[1], err[2], err[3]);
    }
    return 0;
}

int main(int argc, char **argv)
{
    gsl_set_error_handler_off();
    int nref = 1 << 20, arg = 1, rules = 0;
    if (argc > 1 && strcmp(argv[1], "--rules") == 0) {
        rules = 1;
        arg = 2;
    }
    if (argc > arg + 1 && strcmp(argv[arg], "--reference") == 0) {
        char *end;
        long n = strtol(argv[arg + 1], &end, 10);
        if (*end || n < 1 || n > 1L << 30) {
            fprintf(stderr, "kernel_accuracy: --reference \"%s\"; allowed: a point count\n",
                    argv[arg + 1]);
            return 1;
        }
        nref = (int)n;
        arg += 2;
    }
    if (rules) {
        if (argc - arg != 2) {
            fprintf(stderr, "usage: kernel_accuracy --rules [--reference N] ODE_FILE ROW\n");
            return 1;
        }
        return compare_rules(nref, argv[arg], argv[arg + 1]);
    }
    if (argc - arg >= 3)
        return at_file_state(nref, argv[arg], argv[arg + 1], argc - arg - 2, argv + arg + 2);
    if (argc != arg) {
        fprintf(stderr, "usage: kernel_accuracy [--reference N] [ODE_FILE ROW POINTS...]\n");
        return 1;
    }
    const aim_overlaps q = {.omega = {{0.125, 0.25}, {0.25, 2.0}},
                            .psi = {{0.125, 0.25}, {0.25, 2.0}}};
    aim_config cfg;
    double ref[NVAL], v[NVAL], est;
    if (configure(&cfg, nref, 0.0))
        return 1;
    aim_gauss *g = aim_gauss_create(&cfg, AIM_RULE_AUTO, aim_family_symmetric_pair(&cfg));
    if (!g || kernels(g, &q, ref)) {
        fprintf(stderr, "kernel_accuracy: the reference failed\n");
        return 1;
    }
    aim_gauss_free(g);
    printf("tied softmax T = 4 at the start of examples/tied_softmax_T4.ini; reference: %d "
           "points\n",
           nref);
    printf("%12s %10s %12s %14s\n", "kernel_tol", "points", "estimated", "actual");
    const double tols[] = {0, 0, 0, 0, 0, 1e-2, 3e-3, 1e-3, 3e-4};
    const int counts[] = {1024, 4096, 16384, 65536, 262144, 0, 0, 0, 0};
    for (size_t i = 0; i < sizeof tols / sizeof tols[0]; i++) {
        if (configure(&cfg, counts[i] ? counts[i] : 16384, tols[i]))
            return 1;
        g = aim_gauss_create(&cfg, AIM_RULE_AUTO, aim_family_symmetric_pair(&cfg));
        if (!g || kernels(g, &q, v) || aim_gauss_kernel_error(g, &est)) {
            fprintf(stderr, "kernel_accuracy: the engine failed\n");
            return 1;
        }
        if (tols[i] > 0)
            printf("%12g %10d %12.3g %14.3g\n", tols[i], aim_gauss_points(g), est,
                   actual_error(v, ref));
        else
            printf("%12s %10d %12.3g %14.3g\n", "-", aim_gauss_points(g), est,
                   actual_error(v, ref));
        aim_gauss_free(g);
    }
    return 0;
}
