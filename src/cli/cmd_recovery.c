/* aimdyn recovery: will the configured attention layer learn, and after
 * how many samples (sim/recovery.h, theory/recovery.md). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_fit.h>

#include "cli.h"
#include "compare.h"
#include "model.h"
#include "progress.h"
#include "sidecar.h"
#include "pool.h"
#include "ranks.h"
#include "recovery.h"
#include "memory.h"
#include "recovery_seeds.h"
#include "tsv.h"
#include "version.h"

/* finite-d starts measured on SGD seeds' initial matrices */
static const aim_start_source seed_starts = {aim_compare_measure_start,
                                             aim_compare_release_start};

#define MAX_DIMS 8

static const char *const usage =
    "usage: aimdyn recovery [CONFIG.ini] [--d D]... [--seeds K] [--finite auto|always|never]\n"
    "                       [--jobs N] [--set section.key=value]... [--out DIR] [--name NAME]\n"
    "\n"
    "Will this attention layer learn from its uninformative start, and after\n"
    "how many samples? (theory/recovery.md)\n"
    "\n"
    "1. The start. Student and teacher start independent, and the teacher\n"
    "   overlap moves only through the cross-gradient of the population risk,\n"
    "   (dR/dOmega(S,S*), dR/dPsi(S,S*)): computed by the expectation engine\n"
    "   and, for elementwise maps, from the Hermite coefficients of sigma (by\n"
    "   quadrature), the two routes compared. From it, the drift of the\n"
    "   teacher overlap (the paper's Corollary 3 for tied, 4 for untied\n"
    "   students), checked against the ODE right-hand side. Verdict: the\n"
    "   overlap drifts (escape), or the start lies on a manifold the limit ODE\n"
    "   never leaves (the teacher's E[sigma'(h*)] vanishes: information\n"
    "   exponent >= 2 at a start with uncorrelated indices), or undecided.\n"
    "2. The limit ODE on the training grid: the weak-recovery time tau_wr\n"
    "   (|overlap| >= output.recovery_threshold, by root finding) and the samples\n"
    "   n_wr = tau_wr d^2 / eta at each d.\n"
    "3. The finite-d start (when the limit does not recover, or with\n"
    "   --finite always): the limit ODE from the initial matrices of SGD\n"
    "   seeds sgd.seed, sgd.seed + 1, ... at each d (the random overlap of\n"
    "   order 1/d they start with): the escape time per seed, its median, and\n"
    "   the fit tau_wr = A + B ln d (the d^2 log d sample scale at fixed eta).\n"
    "\n"
    "Writes DIR/NAME-recovery.tsv (one row per d: limit and finite-d\n"
    "predictions, n_wr_predicted for `aimdyn scaling --predict`),\n"
    "DIR/NAME-recovery-start.tsv (the start analysis, one quantity per row)\n"
    "and DIR/NAME-recovery-seeds.tsv (finite d, one row per seed). They\n"
    "replace the files of an earlier run together (without finite-d seeds\n"
    "an old seeds file is removed): a run that fails or is interrupted\n"
    "changes nothing. The finite-d seeds run on worker processes (--jobs);\n"
    "each seed's result is kept in DIR/.NAME-recovery-dD.seeds/ as it\n"
    "finishes, so that rerunning an interrupted run computes only the seeds\n"
    "not yet done (a kept seed of another configuration is refused: remove\n"
    "the folder or choose another --name; one of another aimdyn version is\n"
    "computed again). The folder is removed once the files are written.\n"
    "\n"
    "options:\n"
    "  --d D                    a dimension (repeatable, increasing; default sgd.d)\n"
    "  --seeds K                seeds per dimension for the finite-d start\n"
    "                           (sgd.seeds, default 8)\n"
    "  --finite WHEN            auto (default: when the limit does not recover),\n"
    "                           always, never\n"
    "  --jobs N                 worker processes for the finite-d seeds of each d,\n"
    "                           1..%d (default: the online cores); each runs one\n"
    "                           seed at a time with one BLAS thread\n"
    "                           (OPENBLAS_NUM_THREADS=1): the workers are the\n"
    "                           parallelism. The files are the same, bit for bit,\n"
    "                           for every N\n"
    "%s%s"
    "\n"
    "examples:\n"
    "  aimdyn recovery examples/tied_he2.ini --d 400 --d 800\n"
    "  aimdyn recovery examples/direct_he2.ini --d 100 --d 200 --d 400 --d 800\n"
    "\n"
    "Exit status: 0 done, 1 bad usage or configuration (nothing written),\n"
    "2 run-time failure (nothing written), 3 the limit ODE stopped early (a\n"
    "blow-up, or a hierarchy that left the valid moments), or a finite-d seed's\n"
    "ODE did or failed (recorded; a failed seed is marked with its reason in\n"
    "NAME-recovery-seeds.tsv and the other seeds are kept).\n";

typedef enum { FINITE_AUTO = 0, FINITE_ALWAYS, FINITE_NEVER } finite_when;

typedef struct {
    aim_config cfg;
    int dims[MAX_DIMS], ndims;
    finite_when finite;
    int jobs;
} recovery_options;

static int parse_finite(void *target, const char *value)
{
    finite_when *finite = target;
    if (!strcmp(value, "auto"))
        *finite = FINITE_AUTO;
    else if (!strcmp(value, "always"))
        *finite = FINITE_ALWAYS;
    else if (!strcmp(value, "never"))
        *finite = FINITE_NEVER;
    else {
        fprintf(stderr, "aimdyn recovery: --finite %s: not allowed; allowed: auto, "
                        "always, never\n", value);
        return -1;
    }
    return 0;
}

static void print_usage(const char *cmd)
{
    (void)cmd;
    printf(usage, AIM_POOL_MAX_JOBS, aim_cli_usage_threads(), aim_cli_usage_common);
}

static int parse_options(int argc, char **argv, recovery_options *o)
{
    memset(o, 0, sizeof *o);
    o->jobs = aim_pool_default_jobs();
    const aim_cli_option options[] = {
        {AIM_OPT("set", AIM_OPT_ASSIGN, 1), .assign = ""},
        {AIM_OPT("out", AIM_OPT_ASSIGN, 1), .assign = "output.dir="},
        {AIM_OPT("name", AIM_OPT_ASSIGN, 1), .assign = "output.name="},
        {AIM_OPT("d", AIM_OPT_INTEGERS, 1), .lo = 8, .hi = 20000, .target = o->dims,
         .count = &o->ndims, .max_count = MAX_DIMS},
        {AIM_OPT("seeds", AIM_OPT_INTEGER, 1), .assign = "sgd.seeds=", .lo = 1, .hi = 1000},
        {AIM_OPT("finite", AIM_OPT_OWN, 1), .target = &o->finite, .own = parse_finite},
        {AIM_OPT("jobs", AIM_OPT_INTEGER, 1), .lo = 1, .hi = AIM_POOL_MAX_JOBS,
         .allowed = " (worker processes)", .target = &o->jobs},
        aim_cli_threads};
    const aim_cli_spec spec = {"recovery", options, (int)(sizeof options / sizeof options[0]),
                               print_usage, 1, "one CONFIG.ini at most"};
    aim_cli_args args;
    int rc = aim_cli_parse(&spec, argc, argv, &args);
    if (rc == 0 && aim_cli_load_config("recovery", args.noperands ? args.operand[0] : NULL,
                                       args.sets, args.nsets, &o->cfg))
        rc = -1;
    aim_cli_args_free(&args);
    if (rc)
        return rc;
    if (o->ndims == 0)
        o->dims[o->ndims++] = o->cfg.d;
    /* before anything is written */
    for (int i = 0; o->finite != FINITE_NEVER && i < o->ndims; i++)
        if (aim_cli_start_memory_fits("recovery", &o->cfg, o->dims[i], o->jobs))
            return -1;
    /* the other ranks of an MPI job write seed files only, once rank 0
     * has taken the lock (ranks.h) */
    if (aim_ranks_rank() == 0 && aim_tsv_prepare_dir(&o->cfg))
        return -1;
    return 0;
}

static const char *escape_text(aim_escape e)
{
    return e == AIM_ESCAPE_DRIFT ? "escape" : e == AIM_ESCAPE_INVARIANT ? "invariant"
                                                                        : "undecided";
}

static double samples(const aim_config *cfg, int d, double tau)
{
    return tau * d * (double)d / cfg->eta;
}

/* Relative difference of the two routes (0 when both vanish). */
static double route_gap(const aim_recovery_limit *r)
{
    double gap = 0.0;
    for (int i = 0; i < 2; i++) {
        const double a = r->cross_engine[i], b = r->cross_hermite[i];
        /* kernels are O(1): below 1e-12 both routes say zero */
        const double size = fmax(fabs(r->cross_engine[0]) + fabs(r->cross_engine[1]), 1e-12);
        gap = fmax(gap, fabs(a - b) / size);
    }
    return gap;
}

/* Round-off (below 1e-12 of O(1) quantities) printed as 0. */
static double tidy(double x)
{
    return fabs(x) < 1e-12 ? 0.0 : x;
}

/* " (Corollary 3)" for a model's named result, "" for none */
static const char *result_note(const char *result, char *buf, size_t n)
{
    if (!result)
        return "";
    snprintf(buf, n, " (%s)", result);
    return buf;
}

static void print_start(const aim_config *cfg, const aim_recovery_limit *r)
{
    printf("Start (exact large-d, student and teacher independent): teacher overlap %.3g\n",
           r->start_overlap);
    printf("  cross-gradient (dR/dOmega(S,S*), dR/dPsi(S,S*)):\n");
    printf("    expectation engine    %12.6g %12.6g\n", tidy(r->cross_engine[0]), tidy(r->cross_engine[1]));
    if (cfg->output == AIM_ELEMENTWISE) {
        printf("    Hermite coefficients  %12.6g %12.6g   (relative difference %.2g)\n",
               tidy(r->cross_hermite[0]), tidy(r->cross_hermite[1]), route_gap(r));
        printf("  E[sigma'(h)] (largest over the entries): teacher %.6g, student %.6g\n",
               tidy(r->slope_teacher), tidy(r->slope_student));
    } else {
        printf("    Hermite coefficients  (not for row softmax: not an elementwise map)\n");
    }
    printf("  d overlap/d tau at the start: %.6g (ODE right-hand side), %.6g (from the "
           "cross-gradient); zero below %.2g\n",
           tidy(r->drift_rhs), tidy(r->drift_formula), r->drift_tolerance);
    const aim_model_ops *ops = aim_model_ops_of(cfg);
    char note[64];
    switch (r->escape) {
    case AIM_ESCAPE_DRIFT:
        printf("Verdict: escape. The cross-gradient is non-zero at the start and the overlap "
               "moves at once%s.\n",
               result_note(ops->escape_result, note, sizeof note));
        break;
    case AIM_ESCAPE_INVARIANT:
        printf("Verdict: invariant. The teacher's E[sigma'(h*)] vanishes and the indices are "
               "uncorrelated at the start, so the cross-gradient vanishes for every student "
               "state on the uninformative manifold: the limit ODE never leaves it%s. Only a "
               "finite-d start (a random overlap of order 1/d) can escape.\n",
               result_note(ops->invariant_result, note, sizeof note));
        break;
    default:
        printf("Verdict: undecided at the start. The drift vanishes there, but %s; the limit "
               "ODE and the finite-d start decide.\n",
               cfg->output == AIM_ELEMENTWISE
                   ? "the teacher's E[sigma'(h*)] does not (or the indices are correlated): "
                     "the student's side can move off zero (e.g. a raw mean's fast phase)"
                   : "there is no invariance argument for row softmax");
    }
}

/* Raw centring: the mean's equation and the teacher mean's finite-d
 * terms depend on d, so the limit runs once per dimension (unless ode.d
 * fixes it); centred, once. */
static int limit_per_dimension(const aim_config *cfg)
{
    return cfg->centring == AIM_RAW && cfg->ode_d <= 0;
}

static void print_limit(const aim_config *cfg, const recovery_options *o,
                        const aim_recovery_limit *lim, int nlim)
{
    for (int k = 0; k < nlim; k++) {
        const aim_recovery_limit *r = &lim[k];
        const char *at = "";
        char at_d[64];
        if (nlim > 1) {
            snprintf(at_d, sizeof at_d, " (mean at d = %d)", o->dims[k]);
            at = at_d;
        }
        if (isfinite(r->tau_wr)) {
            printf("Limit ODE%s: weak recovery (|overlap| >= %g) at tau_wr = %.6g; n_wr = "
                   "tau_wr d^2/eta =", at, cfg->recovery_threshold, r->tau_wr);
            for (int i = 0; i < o->ndims; i++)
                if (nlim == 1 || i == k)
                    printf("%s %.4g at d = %d", i && nlim == 1 ? "," : "",
                           samples(cfg, o->dims[i], r->tau_wr), o->dims[i]);
            printf(" (eta = %g)\n", cfg->eta);
        } else {
            printf("Limit ODE%s: no weak recovery by tau = %g (|overlap| = %.3g there)\n", at,
                   r->tau_end, fabs(r->overlap_end));
        }
        if (r->status == AIM_ODE_BLOWUP)
            printf("  the limit ODE stopped: %s\n", r->message);
        if (r->escape == AIM_ESCAPE_INVARIANT && isfinite(r->tau_wr))
            printf("  WARNING: the limit ODE recovered although the start was found invariant: "
                   "please report this configuration\n");
    }
}

/* tau_wr = A + B ln d over the dimensions with a median; returns the
 * number of points used; *half is the half-width of B's 95 % t interval
 * (NAN below 3 points). */
static int log_fit(const aim_recovery_finite *f, int nd, double *A, double *B, double *half)
{
    double x[MAX_DIMS], y[MAX_DIMS], c00, c01, c11, sumsq;
    int m = 0;
    for (int i = 0; i < nd; i++)
        if (isfinite(f[i].median_tau)) {
            x[m] = log((double)f[i].d);
            y[m++] = f[i].median_tau;
        }
    *half = NAN;
    if (m < 2 || gsl_fit_linear(x, 1, y, 1, (size_t)m, A, B, &c00, &c01, &c11, &sumsq))
        return m < 2 ? m : 0;
    /* GSL scales the covariance by the residual variance */
    if (m > 2)
        *half = gsl_cdf_tdist_Pinv(0.975, m - 2) * sqrt(c11);
    return m;
}

static void print_finite(const aim_config *cfg, const aim_recovery_finite *f, int nd)
{
    printf("Finite d: the limit ODE from the initial matrices of SGD seeds %llu .. %llu:\n",
           (unsigned long long)cfg->seed, (unsigned long long)(cfg->seed + f[0].seeds - 1));
    int recovered = 0, blowups = 0;
    for (int i = 0; i < nd; i++) {
        double so = 0.0;
        int grows = 0,   /* seeds whose |overlap| ended above its start */
            started = 0; /* seeds that did not fail at their start */
        for (int s = 0; s < f[i].seeds; s++) {
            if (isfinite(f[i].start_overlap[s])) {
                so += fabs(f[i].start_overlap[s]);
                started++;
            }
            grows += fabs(f[i].overlap_end[s]) > fabs(f[i].start_overlap[s]);
        }
        so = started ? so / started : NAN;
        recovered += f[i].escaped;
        blowups += f[i].blowups;
        printf("  d = %4d: start |overlap| %.3g on average; %d of %d seeds recover", f[i].d, so,
               f[i].escaped, f[i].seeds);
        if (isfinite(f[i].median_tau))
            printf(", median tau_wr = %.4g, n_wr = %.4g\n", f[i].median_tau,
                   samples(cfg, f[i].d, f[i].median_tau));
        else
            printf(" by tau = %g (n = %.4g): no median; |overlap| grew in %d of %d\n",
                   cfg->horizon, samples(cfg, f[i].d, cfg->horizon), grows, f[i].seeds);
        if (f[i].blowups)
            printf("    %d seed(s) blew up before recovering (noise-driven: lower "
                   "training.eta); the median counts them only if they ran past it\n",
                   f[i].blowups);
        if (f[i].above)
            printf("    %d seed(s) start at |overlap| >= %g already (tau_wr = 0): a small d\n",
                   f[i].above, cfg->recovery_threshold);
        if (f[i].failed)
            printf("    %d seed(s) failed (marked in the seeds file with the reason); the "
                   "median counts them as stopped where they failed\n",
                   f[i].failed);
    }
    double A, B, half;
    const int m = log_fit(f, nd, &A, &B, &half);
    if (m >= 2) {
        printf("  fit over %d dimensions: tau_wr = %.4g + %.4g ln d", m, A, B);
        if (isfinite(half))
            printf(" (B 95 %% interval [%.4g, %.4g])", B - half, B + half);
        printf(": %s\n",
               !isfinite(half) ? "two dimensions give no interval: growth in ln d undecided"
               : B - half > 0  ? "tau_wr grows like ln d: n_wr = tau_wr d^2/eta is on the "
                                 "d^2 log d scale at fixed eta"
               : B + half < 0  ? "tau_wr decreases with d"
                               : "no significant growth in ln d: the d^2 scale");
    } else if (recovered == 0 && blowups == 0) {
        printf("  No seed recovers by tau = %g at any of these d: no escape is predicted on "
               "the d^2 log d scale within the horizon (raise training.horizon to look "
               "further).\n",
               cfg->horizon);
    } else {
        printf("  Fewer than two dimensions have a median: no fit.\n");
    }
}

static double predicted(const aim_config *cfg, int d, const aim_recovery_limit *r,
                        const aim_recovery_finite *f)
{
    if (isfinite(r->tau_wr))
        return samples(cfg, d, r->tau_wr);
    return f && isfinite(f->median_tau) ? samples(cfg, d, f->median_tau) : NAN;
}

static const char *seed_status(const aim_recovery_finite *f, int s)
{
    return f->failure[s][0]          ? "failed"
           : isfinite(f->tau_wr[s]) ? "recovered"
           : f->blew_up[s]          ? "blow-up"
                                    : "not-by-horizon";
}

static void put_table(FILE *t, const recovery_options *o, const aim_recovery_limit *lim,
                      int nlim, const aim_recovery_finite *f)
{
    const aim_config *cfg = &o->cfg;
    fprintf(t, "# weak recovery: |overlap| >= %g; n = tau d^2/eta; n_wr_predicted: the limit's "
               "n_wr, else the finite-d median's%s\n",
            cfg->recovery_threshold,
            nlim > 1 ? "; raw centring: the limit at each row's d" : "");
    fputs("d\teta\ttau_wr_limit\tn_wr_limit\tseeds\tescaped\ttau_wr_median\tn_wr_median\t"
          "n_wr_predicted\n", t);
    for (int i = 0; i < o->ndims; i++) {
        const int d = o->dims[i];
        const aim_recovery_limit *r = &lim[nlim > 1 ? i : 0];
        const aim_recovery_finite *fi = f ? &f[i] : NULL;
        fprintf(t, "%d\t%.10g\t%.10g\t%.10g\t%d\t%d\t%.10g\t%.10g\t%.10g\n", d, cfg->eta,
                r->tau_wr, samples(cfg, d, r->tau_wr), fi ? fi->seeds : 0,
                fi ? fi->escaped : 0, fi ? fi->median_tau : NAN,
                fi ? samples(cfg, d, fi->median_tau) : NAN, predicted(cfg, d, r, fi));
    }
}

static void put_start(FILE *s, const aim_recovery_limit *r, int d)
{
    fprintf(s, "quantity\tvalue\n");
    fprintf(s, "d\t%d\n", d);
    fprintf(s, "start_overlap\t%.10g\n", r->start_overlap);
    fprintf(s, "cross_omega_engine\t%.10g\ncross_psi_engine\t%.10g\n", r->cross_engine[0],
            r->cross_engine[1]);
    fprintf(s, "cross_omega_hermite\t%.10g\ncross_psi_hermite\t%.10g\n", r->cross_hermite[0],
            r->cross_hermite[1]);
    fprintf(s, "slope_teacher\t%.10g\nslope_student\t%.10g\n", r->slope_teacher,
            r->slope_student);
    fprintf(s, "drift_rhs\t%.10g\ndrift_formula\t%.10g\ndrift_tolerance\t%.10g\n", r->drift_rhs,
            r->drift_formula, r->drift_tolerance);
    fprintf(s, "escape\t%s\n", escape_text(r->escape));
    fprintf(s, "tau_wr_limit\t%.10g\ntau_end\t%.10g\noverlap_end\t%.10g\n", r->tau_wr,
            r->tau_end, r->overlap_end);
    fprintf(s, "status\t%s\n", r->status == AIM_ODE_BLOWUP ? r->message : "complete");
}

static void put_seeds(FILE *p, const recovery_options *o, const aim_recovery_finite *f)
{
    const aim_config *cfg = &o->cfg;
    for (int i = 0; i < o->ndims; i++)
        for (int k = 0; k < f[i].seeds; k++)
            if (f[i].failure[k][0])
                fprintf(p, "# d = %d, seed %llu failed: %s\n", f[i].d,
                        (unsigned long long)(cfg->seed + (uint64_t)k), f[i].failure[k]);
    fputs("d\tseed\tstart_overlap\ttau_wr\tn_wr\ttau_end\toverlap_end\tstatus\n", p);
    for (int i = 0; i < o->ndims; i++)
        for (int k = 0; k < f[i].seeds; k++)
            fprintf(p, "%d\t%llu\t%.10g\t%.10g\t%.10g\t%.10g\t%.10g\t%s\n", f[i].d,
                    (unsigned long long)(cfg->seed + (uint64_t)k), f[i].start_overlap[k],
                    f[i].tau_wr[k], samples(cfg, f[i].d, f[i].tau_wr[k]), f[i].tau_end[k],
                    f[i].overlap_end[k], seed_status(&f[i], k));
}

/* CVODE's counters of the integrations file k of write_files reports
 * into its sidecar: the limit ODE (the table at every d it ran at, the
 * start analysis at its d), the finite-d seeds (the table and the seeds
 * table). Returns 0 or -1 (said). */
static int record_integrations(aim_tsv *tsv, int k, const recovery_options *o,
                               const aim_recovery_limit *lim, int nlim,
                               const aim_recovery_finite *f)
{
    char what[128];
    for (int i = k == 1 ? nlim - 1 : 0; k != 2 && i < nlim; i++) {
        if (nlim > 1)
            snprintf(what, sizeof what, "limit ODE, d = %d: ", o->dims[i]);
        else
            snprintf(what, sizeof what, "limit ODE: ");
        if (aim_cli_record_integrations(tsv, what, lim[i].integrations, lim[i].stats))
            return -1;
    }
    for (int i = 0; f && k != 1 && i < o->ndims; i++)
        for (int s = 0; s < f[i].seeds; s++) {
            snprintf(what, sizeof what, "d = %d, seed %llu: ", f[i].d,
                     (unsigned long long)(o->cfg.seed + (uint64_t)s));
            if (aim_cli_record_integrations(tsv, what, f[i].integrations[s], f[i].stats[s]))
                return -1;
        }
    return 0;
}

/* The engine's threads of the finite-d seeds, which ran on workers (the
 * "# threads:" line of aim_trajectory_kernel_line is the limit ODE's, run
 * by this process): only where the rule is the quasi-random one, as that
 * line. */
static void put_seed_threads(FILE *s, const recovery_options *o, const aim_recovery_limit *lim,
                             const aim_recovery_finite *f)
{
    if (!f || o->cfg.method == AIM_METHOD_MATRIX || lim->kernel_points == 0)
        return;
    int lo = 0, hi = 0;
    for (int i = 0; i < o->ndims; i++)
        for (int k = 0; k < f[i].seeds; k++) {
            const int t = f[i].threads[k];
            lo = lo && lo < t ? lo : t;
            hi = hi > t ? hi : t;
        }
    if (lo == hi)
        fprintf(s, "# threads of the finite-d seeds: %d (each seed's quasi-random rule, on its "
                   "worker)\n", lo);
    else
        fprintf(s, "# threads of the finite-d seeds: %d to %d (each seed's quasi-random rule, "
                   "on its worker)\n", lo, hi);
}

/* The files replace those of an earlier run together or not at all (one
 * aim_atomic_set, under the lock of NAME: parse_options; it already
 * removes the kept seed files); without finite-d runs an old seeds file
 * goes with them, so the directory never mixes two runs. Frees set. */
static int write_files(const recovery_options *o, const aim_recovery_limit *lim, int nlim,
                       const aim_recovery_finite *f, aim_atomic_set *set, char paths[3][1024])
{
    const aim_config *cfg = &o->cfg;
    static const char *const suffix[3] = {"recovery", "recovery-start", "recovery-seeds"};
    int rc = 0;
    for (int k = 0; !rc && k < 3; k++) {
        aim_tsv *tsv = NULL;
        rc = aim_tsv_path(paths[k], sizeof paths[k], cfg, suffix[k], "tsv");
        if (!rc && k == 2 && !f) { /* no seeds: an old seeds table and its sidecar go */
            char sidecar[sizeof paths[k] + 8];
            rc = aim_atomic_set_remove(set, paths[k]);
            if (!rc && aim_sidecar_path(paths[k], sidecar, sizeof sidecar) == 0)
                rc = aim_atomic_set_remove(set, sidecar);
            break;
        }
        if (!rc && !(tsv = aim_tsv_open(paths[k])))
            rc = -1;
        if (rc)
            break;
        aim_tsv_metadata(tsv, "recovery", cfg);
        if (record_integrations(tsv, k, o, lim, nlim, f)) {
            aim_tsv_abort(tsv);
            rc = -1;
            break;
        }
        FILE *s = aim_tsv_stream(tsv);
        /* the limit ODE's engine: the same rule at every d */
        aim_trajectory_kernel_line(s, cfg, lim[nlim - 1].kernel_points,
                                   lim[nlim - 1].kernel_error);
        if (k != 1)
            put_seed_threads(s, o, &lim[nlim - 1], f);
        if (k == 0)
            put_table(s, o, lim, nlim, f);
        else if (k == 1)
            put_start(s, &lim[nlim - 1], o->dims[o->ndims - 1]);
        else
            put_seeds(s, o, f);
        rc = aim_tsv_add_to(tsv, set); /* checks the stream's write errors */
    }
    if (rc) {
        aim_atomic_set_free(set);
        return -1;
    }
    return aim_atomic_set_commit(set);
}

/* An MPI rank other than 0: its share of the finite-d seeds of every d,
 * in the files rank 0 reads (ranks.h). */
static int share_finite_seeds(const recovery_options *o, int finite)
{
    for (int i = 0; finite && i < o->ndims; i++) {
        aim_recovery_finite f;
        memset(&f, 0, sizeof f);
        if (aim_recovery_seeds_run(&o->cfg, o->dims[i], o->jobs, &seed_starts, &f, NULL) < 0)
            return AIM_EXIT_RUNTIME;
    }
    return 0;
}

int aim_cmd_recovery(int argc, char **argv)
{
    recovery_options o;
    int rc = parse_options(argc, argv, &o);
    if (rc)
        return rc > 0 ? 0 : AIM_EXIT_USAGE;
    const aim_config *cfg = &o.cfg;
    char err[1024];
    aim_recovery_limit lim[MAX_DIMS];
    const int nlim = limit_per_dimension(cfg) ? o.ndims : 1;
    int limit_recovers = 1, blowup = 0, status = 0;
    /* rank 0 runs the limit and tells the others (ranks.h) whether there
     * are finite-d seeds to share */
    for (int k = 0; aim_ranks_rank() == 0 && k < nlim && !status; k++) {
        const int d = o.dims[nlim > 1 ? k : o.ndims - 1];
        if (aim_recovery_limit_analyse(cfg, d, &lim[k], err, sizeof err)) {
            fprintf(stderr, "aimdyn recovery: %s\n", err);
            status = -1;
        }
        limit_recovers &= isfinite(lim[k].tau_wr);
        blowup |= lim[k].status == AIM_ODE_BLOWUP;
    }
    int finite[1] = {o.finite == FINITE_ALWAYS || (o.finite == FINITE_AUTO && !limit_recovers)},
        nfinite = 1;
    if (aim_ranks_share(status, finite, &nfinite, 1))
        return AIM_EXIT_RUNTIME;
    if (aim_ranks_rank() != 0)
        return share_finite_seeds(&o, finite[0]);
    if (nlim > 1)
        printf("(raw centring: the start below at d = %d; the limit runs at each d)\n",
               o.dims[o.ndims - 1]);
    print_start(cfg, &lim[nlim - 1]);
    print_limit(cfg, &o, lim, nlim);
    aim_recovery_finite f[MAX_DIMS];
    memset(f, 0, sizeof f);
    aim_atomic_set *set = aim_atomic_set_create(cfg->dir, cfg->name);
    int exit_code = set ? 0 : AIM_EXIT_RUNTIME;
    for (int i = 0; finite[0] && i < o.ndims && !exit_code; i++) {
        if (aim_recovery_seeds_run(cfg, o.dims[i], o.jobs, &seed_starts, &f[i], set))
            exit_code = AIM_EXIT_RUNTIME;
        blowup |= f[i].blowups > 0 || f[i].failed > 0;
    }
    if (!exit_code && finite[0])
        print_finite(cfg, f, o.ndims);
    char paths[3][1024];
    if (exit_code)
        aim_atomic_set_free(set);
    else if (write_files(&o, lim, nlim, finite[0] ? f : NULL, set, paths))
        exit_code = AIM_EXIT_RUNTIME;
    for (int i = 0; finite[0] && i < o.ndims && !exit_code; i++)
        aim_recovery_seeds_remove_dir(cfg, o.dims[i]);
    if (!exit_code) {
        printf("wrote %s, %s%s%s\n", paths[0], paths[1], finite[0] ? ", " : "",
               finite[0] ? paths[2] : "");
        if (blowup)
            exit_code = AIM_EXIT_BLOWUP;
    }
    for (int i = 0; i < o.ndims; i++)
        aim_recovery_finite_free(&f[i]);
    return exit_code;
}
