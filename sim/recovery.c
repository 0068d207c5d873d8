#include "recovery.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_integration.h>
#include <gsl/gsl_sf_hermite.h>
#include <gsl/gsl_sort.h>

#include "family.h"
#include "gauss.h"
#include "grid.h"
#include "hierarchy.h"
#include "model.h"
#include "outmap.h"
#include "trajectory.h"


/* ---- the Hermite route ---- */

enum { HERMITE_TERMS = 40, QUAD_NODES = 200 };

/* alpha_k = E[sigma(mu + sqrt(q) z) He_k(z)] / k!, k = 0..kmax, by
 * Gauss-Hermite quadrature for the weight exp(-z^2/2) (GSL). For a
 * Hermite series sigma of degree p it is exact once the nodes integrate
 * degree p + kmax; for tanh, erf and relu it converges with the nodes. */
static void hermite_coefficients(const aim_outmap *map, const gsl_integration_fixed_workspace *w,
                                 double mu, double q, int kmax, double *alpha)
{
    const size_t nodes = gsl_integration_fixed_n(w);
    const double *x = gsl_integration_fixed_nodes(w), *wt = gsl_integration_fixed_weights(w);
    double he[HERMITE_TERMS + 1];
    for (int k = 0; k <= kmax; k++)
        alpha[k] = 0.0;
    for (size_t i = 0; i < nodes; i++) {
        const double f = aim_outmap_sigma(map, mu + sqrt(q) * x[i]) * wt[i] / sqrt(2.0 * M_PI);
        gsl_sf_hermite_prob_array(kmax, x[i], he);
        for (int k = 0; k <= kmax; k++)
            alpha[k] += f * he[k];
    }
    double factorial = 1.0;
    for (int k = 1; k <= kmax; k++) {
        factorial *= k;
        alpha[k] /= factorial;
    }
}

/* Cross-gradient from the Hermite coefficients: for an elementwise map
 * and the square loss, dR/dCov(h_ab, h*_ab) = -E[sigma'(h_ab)
 * sigma'(h*_ab)] = -sum_k k k! alpha_k alpha*_k r^(k-1) / sqrt(q q*)
 * (theory/recovery.md sec. 2), and Cov(h_ab, h*_ab) = Omega(S,S*) +
 * C_ab^2 Psi(S,S*). Also the largest |E[sigma'(h)]| = |alpha_1|/sqrt q of
 * either side. */
static int cross_hermite(const aim_config *cfg, const aim_overlaps *q, double cross[2],
                         double *slope_student, double *slope_teacher, double *slope_scale,
                         char *err, size_t n)
{
    const int polynomial = cfg->activation == AIM_ACT_HERMITE;
    const int kmax = polynomial ? cfg->hermite_degree : HERMITE_TERMS;
    const size_t nodes = polynomial ? (size_t)cfg->hermite_degree + 2 : QUAD_NODES;
    aim_outmap *map = aim_outmap_create(cfg);
    gsl_integration_fixed_workspace *w =
        gsl_integration_fixed_alloc(gsl_integration_fixed_hermite, nodes, 0.0, 0.5, 0.0, 0.0);
    if (!map || !w) {
        aim_outmap_free(map);
        if (w)
            gsl_integration_fixed_free(w);
        snprintf(err, n, "could not set up the Hermite quadrature");
        return -1;
    }
    const int T = cfg->tokens;
    double alpha[HERMITE_TERMS + 1], beta[HERMITE_TERMS + 1];
    cross[0] = cross[1] = 0.0;
    *slope_student = *slope_teacher = *slope_scale = 0.0;
    for (int a = 0; a < T; a++)
        for (int b = 0; b < T; b++) {
            const double c = cfg->cov[a * T + b], c2 = c * c;
            const double qs = q->omega[0][0] + c2 * q->psi[0][0];
            const double qt = q->omega[1][1] + c2 * q->psi[1][1];
            const double r = (q->omega[0][1] + c2 * q->psi[0][1]) / sqrt(qs * qt);
            hermite_coefficients(map, w, c * q->mean[0], qs, kmax, alpha);
            hermite_coefficients(map, w, c * q->mean[1], qt, kmax, beta);
            double sum = 0.0, factorial = 1.0, power = 1.0;
            for (int k = 1; k <= kmax; k++) {
                factorial *= k;
                sum += k * factorial * alpha[k] * beta[k] * power;
                power *= r;
            }
            const double slope_product = sum / sqrt(qs * qt);
            cross[0] -= slope_product;
            cross[1] -= c2 * slope_product;
            *slope_student = fmax(*slope_student, fabs(alpha[1]) / sqrt(qs));
            *slope_teacher = fmax(*slope_teacher, fabs(beta[1]) / sqrt(qt));
            /* sqrt(E[sigma'(h*)^2]): the series above at r = 1 */
            double second = 0.0;
            factorial = 1.0;
            for (int k = 1; k <= kmax; k++) {
                factorial *= k;
                second += k * factorial * beta[k] * beta[k];
            }
            *slope_scale = fmax(*slope_scale, sqrt(second / qt));
        }
    gsl_integration_fixed_free(w);
    aim_outmap_free(map);
    return 0;
}

/* ---- the drift of the overlap from the cross-gradient ---- */

/* At a free start only the teacher part a_T S* + b_T S*^T of the
 * gradient G moves the traceless cross moment Omega(S,S*) - t_S t_T
 * (theory/recovery.md sec. 3); how it does is the student's (its
 * aim_model_ops.cross_drift). */
static double drift_formula(const aim_config *cfg, const aim_overlaps *q, const double cross[2])
{
    const double ts = q->trace[0], tt = q->trace[1];
    const double omega_c = q->omega[1][1] - tt * tt, psi_c = q->psi[1][1] - tt * tt;
    const double norm = sqrt((q->omega[0][0] - ts * ts) * omega_c);
    const double numerator = aim_model_ops_of(cfg)->cross_drift(cfg, ts, omega_c, psi_c, cross);
    return norm > 0.0 ? numerator / norm : 0.0;
}

/* Order parameters of student (from the start's observables) and
 * teacher (its family; in raw centring with the O(1/d) terms of its mean
 * at the d of the raw mean's equation, as the models and SGD have them). */
static void start_overlaps(const aim_config *cfg, int d, const double obs[AIM_OBS_COUNT],
                           aim_overlaps *q)
{
    memset(q, 0, sizeof *q);
    q->omega[0][0] = obs[AIM_OBS_OMEGA_SS];
    q->psi[0][0] = obs[AIM_OBS_PSI_SS];
    q->omega[0][1] = q->omega[1][0] = obs[AIM_OBS_OMEGA_ST];
    q->psi[0][1] = q->psi[1][0] = obs[AIM_OBS_PSI_ST];
    q->trace[0] = obs[AIM_OBS_TRACE];
    q->mean[0] = obs[AIM_OBS_MEAN];
    aim_family_start_overlaps(&cfg->teacher, &q->omega[1][1], &q->psi[1][1], &q->trace[1]);
    q->mean[1] = cfg->centring == AIM_RAW ? cfg->teacher.mean : 0.0;
    if (cfg->centring == AIM_RAW) {
        const double m = cfg->teacher.mean, dd = cfg->ode_d > 0 ? cfg->ode_d : d;
        q->omega[1][1] += m * m / dd;
        q->psi[1][1] += m * m / dd;
        q->trace[1] += m / sqrt(dd);
    }
}

/* A rule whose kernels are accurate to about 1e-3, not to round-off: the
 * quasi-random one, and Gauss-Hermite on relu's kink (ode.rule =
 * hermite). */
static int quasi_random_rule(const aim_config *cfg)
{
    return cfg->rule == AIM_RULE_GENERIC || cfg->output == AIM_SOFTMAX ||
           (cfg->activation == AIM_ACT_RELU && cfg->rule == AIM_RULE_HERMITE);
}

/* The training grid into *tau and room for the observables on it into
 * *obs (free both). Returns 0, or -1 when out of memory (neither kept). */
static int grid_buffers(const aim_config *cfg, double **tau, double **obs)
{
    *tau = malloc(sizeof(double) * (size_t)cfg->points);
    *obs = malloc(sizeof(double) * (size_t)cfg->points * AIM_OBS_COUNT);
    if (!*tau || !*obs) {
        free(*tau);
        free(*obs);
        return -1;
    }
    aim_grid_fill(cfg, *tau);
    return 0;
}

/* The limit ODE on the training grid: tau_wr, where it stopped. */
static int limit_run(const aim_config *cfg, int d, aim_recovery_limit *out, char *err, size_t n)
{
    double *tau, *obs;
    if (grid_buffers(cfg, &tau, &obs)) {
        snprintf(err, n, "out of memory");
        return -1;
    }
    aim_ode_report rep;
    aim_config c = *cfg;
    c.beyond = AIM_BEYOND_STOP; /* see seed_run */
    out->status = aim_trajectory_run(&c, d, tau, obs, &rep);
    snprintf(out->message, sizeof out->message, "%s", rep.message);
    out->kernel_points = rep.kernel_points;
    out->kernel_error = rep.kernel_error;
    out->integrations = rep.integrations;
    memcpy(out->stats, rep.stats, sizeof out->stats);
    const int rc = out->status == AIM_ODE_FAILED || rep.reached < 1 ? -1 : 0;
    if (rc) {
        snprintf(err, n, "the limit ODE: %s", rep.message);
    } else {
        out->tau_wr = rep.tau_wr;
        out->tau_end = tau[rep.reached - 1];
        out->overlap_end = obs[(size_t)(rep.reached - 1) * AIM_OBS_COUNT + AIM_OBS_OVERLAP];
    }
    free(tau);
    free(obs);
    return rc;
}

int aim_recovery_limit_analyse(const aim_config *cfg, int d, aim_recovery_limit *out,
                               char *err, size_t n)
{
    memset(out, 0, sizeof *out);
    double obs0[AIM_OBS_COUNT];
    if (aim_trajectory_start_drift(cfg, d, obs0, &out->drift_rhs, err, n))
        return -1;
    out->start_overlap = obs0[AIM_OBS_OVERLAP];

    aim_overlaps q;
    start_overlaps(cfg, d, obs0, &q);
    aim_gauss *g = aim_gauss_create(cfg, cfg->rule, aim_family_symmetric_pair(cfg));
    if (!g || aim_gauss_eval(g, &q)) {
        snprintf(err, n, "the expectation engine at the start: %s",
                 g ? aim_gauss_error(g) : "could not be set up");
        aim_gauss_free(g);
        return -1;
    }
    double k[AIM_KERNEL_COUNT];
    aim_hierarchy_kernels(g, cfg->eta, cfg->gamma, k);
    aim_gauss_free(g);
    out->cross_engine[0] = k[AIM_KERNEL_A_T];
    out->cross_engine[1] = k[AIM_KERNEL_B_T];
    out->drift_formula = drift_formula(cfg, &q, out->cross_engine);

    const int elementwise = cfg->output == AIM_ELEMENTWISE;
    out->cross_hermite[0] = out->cross_hermite[1] = NAN;
    out->slope_student = out->slope_teacher = NAN;
    double slope_scale = NAN;
    if (elementwise && cross_hermite(cfg, &q, out->cross_hermite, &out->slope_student,
                                     &out->slope_teacher, &slope_scale, err, n))
        return -1;

    /* A drift is zero when it is below the engine's accuracy relative to
     * the scale of the first-order drifts, |a_S| + |b_S| + |a_T| + |b_T|
     * (Gauss-Hermite and the closed forms: exact up to round-off;
     * quasi-random: 1e-3). */
    const double scale = fabs(k[AIM_KERNEL_A_S]) + fabs(k[AIM_KERNEL_B_S]) +
                         fabs(k[AIM_KERNEL_A_T]) + fabs(k[AIM_KERNEL_B_T]);
    out->drift_tolerance = (quasi_random_rule(cfg) ? 1e-3 : 1e-9) * scale;
    /* The manifold: independent student and teacher indices (r = 0: the
     * free start of direct and untied students). There the cross-gradient
     * is the product of E[sigma'] of both sides, and a teacher side that
     * vanishes makes it vanish for every student state. Both zeros are
     * exact in the start's closed forms: 1e-12 of their scales is
     * round-off (of the quadrature, exact for Hermite series). */
    const int uncorrelated = fabs(q.omega[0][1]) + fabs(q.psi[0][1]) <=
                             1e-12 * sqrt(q.omega[0][0] * q.omega[1][1]);
    if (fabs(out->drift_rhs) > out->drift_tolerance)
        out->escape = AIM_ESCAPE_DRIFT;
    else if (elementwise && uncorrelated && out->slope_teacher <= 1e-12 * slope_scale)
        out->escape = AIM_ESCAPE_INVARIANT;
    else
        out->escape = AIM_ESCAPE_UNDECIDED;
    return limit_run(cfg, d, out, err, n);
}

/* ---- the finite-d start ---- */

double aim_recovery_median(int n, const double *x, const double *stop)
{
    double *v = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    int m = 0;
    for (int i = 0; v && i < n; i++)
        if (isfinite(x[i]))
            v[m++] = x[i];
    double med = NAN;
    if (v && 2 * m > n) {
        gsl_sort(v, 1, (size_t)m);
        /* the rest are larger: the median of all n is that of the
         * sorted finite values at the overall middle */
        med = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
        /* the order statistics the median is made of must be known to
         * precede every seed that did not recover */
        for (int i = 0; stop && i < n; i++)
            if (!isfinite(x[i]) && !(stop[i] >= v[n / 2]))
                med = NAN;
    }
    free(v);
    return med;
}

/* The limit ODE from seed's start at dimension d, measured by source. */
static int seed_run(const aim_config *cfg, int d, uint64_t seed, const aim_start_source *source,
                    const double *tau, double *obs, aim_ode_report *rep, char *err, size_t n)
{
    aim_config c = *cfg;
    c.seed = seed;
    /* A crossing is predicted where the hierarchy holds; one after it
     * fails is "not reached" (the matrix process, ode.method = matrix, has
     * its own crossing), as no seed's start can be handed over. */
    c.beyond = AIM_BEYOND_STOP;
    aim_measured_start start;
    if (source->measure(&c, d, seed, &start, err, n))
        return -1;
    aim_trajectory_run_full(&c, d, tau, &start, obs, NULL, rep);
    source->release(&start);
    if (rep->status == AIM_ODE_FAILED || rep->reached < 1) {
        snprintf(err, n, "%.250s", rep->message);
        return -1;
    }
    return 0;
}

int aim_recovery_seed_run(const aim_config *cfg, int d, uint64_t seed,
                          const aim_start_source *source, aim_recovery_seed *out)
{
    memset(out, 0, sizeof *out);
    double *tau, *obs;
    if (grid_buffers(cfg, &tau, &obs))
        return -1;
    aim_ode_report rep = {.reached = 0};
    out->threads = aim_gauss_threads();
    /* a seed whose ODE fails is marked with its reason (it counts as
     * stopped, unrecovered, where it stopped) */
    if (seed_run(cfg, d, seed, source, tau, obs, &rep, out->failure, sizeof out->failure)) {
        if (!out->failure[0]) /* a failure is known by its reason */
            snprintf(out->failure, sizeof out->failure, "the ODE failed (no reason given)");
        out->start_overlap = rep.reached >= 1 ? obs[AIM_OBS_OVERLAP] : NAN;
        out->tau_wr = out->overlap_end = NAN;
        out->tau_end = rep.reached >= 1 ? rep.tau : NAN;
        out->blew_up = 0;
    } else {
        out->start_overlap = obs[AIM_OBS_OVERLAP];
        out->tau_wr = rep.tau_wr;
        out->tau_end = tau[rep.reached - 1];
        out->overlap_end = obs[(size_t)(rep.reached - 1) * AIM_OBS_COUNT + AIM_OBS_OVERLAP];
        out->blew_up = rep.status == AIM_ODE_BLOWUP;
    }
    out->integrations = rep.integrations;
    memcpy(out->stats, rep.stats, sizeof out->stats);
    free(tau);
    free(obs);
    return 0;
}

void aim_recovery_seed_print(FILE *to, int d, uint64_t seed, const aim_recovery_seed *r,
                             double threshold)
{
    if (r->failure[0]) {
        fprintf(to, "recovery: d = %d, seed %llu: failed: %s\n", d, (unsigned long long)seed,
                r->failure);
        return;
    }
    const int above = fabs(r->start_overlap) >= threshold, recovered = isfinite(r->tau_wr);
    fprintf(to, "recovery: d = %d, seed %llu: start overlap %.3g%s, %s%.6g%s\n", d,
            (unsigned long long)seed, r->start_overlap,
            above ? " (already above the threshold: tau_wr = 0)" : "",
            recovered ? "tau_wr = " : "no recovery by tau = ", recovered ? r->tau_wr : r->tau_end,
            r->blew_up ? " (blow-up)" : "");
}

void aim_recovery_finite_free(aim_recovery_finite *f)
{
    if (!f)
        return;
    free(f->start_overlap);
    free(f->tau_wr);
    free(f->tau_end);
    free(f->overlap_end);
    free(f->blew_up);
    free(f->failure);
    free(f->threads);
    free(f->integrations);
    free(f->stats);
    memset(f, 0, sizeof *f);
}

int aim_recovery_finite_init(aim_recovery_finite *out, int d, int seeds)
{
    memset(out, 0, sizeof *out);
    out->d = d;
    out->seeds = seeds;
    out->start_overlap = malloc(sizeof(double) * (size_t)seeds);
    out->tau_wr = malloc(sizeof(double) * (size_t)seeds);
    out->tau_end = malloc(sizeof(double) * (size_t)seeds);
    out->overlap_end = malloc(sizeof(double) * (size_t)seeds);
    out->blew_up = malloc(sizeof(int) * (size_t)seeds);
    out->failure = calloc((size_t)seeds, sizeof *out->failure);
    out->threads = calloc((size_t)seeds, sizeof *out->threads);
    out->integrations = calloc((size_t)seeds, sizeof *out->integrations);
    out->stats = calloc((size_t)seeds, sizeof *out->stats);
    out->median_tau = NAN;
    if (!out->start_overlap || !out->tau_wr || !out->tau_end || !out->overlap_end ||
        !out->blew_up || !out->failure || !out->threads || !out->integrations || !out->stats) {
        aim_recovery_finite_free(out);
        return -1;
    }
    return 0;
}

void aim_recovery_finite_put(aim_recovery_finite *out, int s, const aim_recovery_seed *r,
                             double threshold)
{
    out->start_overlap[s] = r->start_overlap;
    out->tau_wr[s] = r->tau_wr;
    out->tau_end[s] = r->tau_end;
    out->overlap_end[s] = r->overlap_end;
    out->blew_up[s] = r->blew_up;
    snprintf(out->failure[s], sizeof out->failure[s], "%s", r->failure);
    out->threads[s] = r->threads;
    out->integrations[s] = r->integrations;
    memcpy(out->stats[s], r->stats, sizeof out->stats[s]);
    if (r->failure[0]) {
        out->failed++;
        return;
    }
    out->escaped += isfinite(r->tau_wr);
    out->blowups += !isfinite(r->tau_wr) && r->blew_up;
    out->above += fabs(r->start_overlap) >= threshold;
}

void aim_recovery_finite_median(aim_recovery_finite *out)
{
    out->median_tau = aim_recovery_median(out->seeds, out->tau_wr, out->tau_end);
}

int aim_recovery_finite_run(const aim_config *cfg, int d, int seeds, int progress,
                            const aim_start_source *source, aim_recovery_finite *out,
                            char *err, size_t n)
{
    if (aim_recovery_finite_init(out, d, seeds)) {
        snprintf(err, n, "out of memory");
        return -1;
    }
    for (int s = 0; s < seeds; s++) {
        const uint64_t seed = cfg->seed + (uint64_t)s;
        aim_recovery_seed r;
        if (aim_recovery_seed_run(cfg, d, seed, source, &r)) {
            snprintf(err, n, "out of memory");
            aim_recovery_finite_free(out);
            return -1;
        }
        aim_recovery_finite_put(out, s, &r, cfg->recovery_threshold);
        if (progress)
            aim_recovery_seed_print(stderr, d, seed, &r, cfg->recovery_threshold);
    }
    aim_recovery_finite_median(out);
    return 0;
}
