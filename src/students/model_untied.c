/* The untied student (S = U V^T) as an aim_model: its truncated moment
 * hierarchy (untied.h). In raw centring the index mean has two clocks;
 * in the adiabatic mode its fast phase on t = d tau is the model's fast
 * variable, and the observables are the composite of the two phases
 * (theory/untied.md sec. 3). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "family_untied.h"
#include "model.h"
#include "untied.h"

typedef struct {
    aim_untied *h;
    double d;      /* the dimension of the raw mean's terms */
    int raw;       /* raw centring: the index mean is a variable */
    int adiabatic; /* ... and follows the critical manifold on tau */
    double mean0;  /* the start of the mean Tr S/sqrt d */
    char warning[512];
} untied_model;

static void *untied_create(const aim_config *cfg, double d, char *err, size_t n)
{
    untied_model *u = calloc(1, sizeof *u);
    char why[256] = "out of memory";
    if (!u || !(u->h = aim_untied_create(cfg, d, cfg->rule, why, sizeof why))) {
        snprintf(err, n, "could not set up the untied hierarchy: %s", why);
        free(u);
        return NULL;
    }
    u->d = d;
    u->raw = cfg->centring == AIM_RAW;
    u->adiabatic = u->raw && cfg->mean_mode == AIM_MEAN_ADIABATIC;
    u->mean0 = aim_untied_start_mean(u->h);
    return u;
}

static void untied_free(void *c)
{
    untied_model *u = c;
    if (u)
        aim_untied_free(u->h);
    free(u);
}

static const char *untied_limit_text(const aim_config *cfg)
{
    if (cfg->centring != AIM_RAW)
        return "limit d -> infinity";
    return cfg->mean_mode == AIM_MEAN_STIFF
               ? "the stiff system at the finite d of ode.d (or sgd.d)"
               : "limit d -> infinity; the mean's start and fast phase at this d";
}

static void untied_describe(const aim_config *cfg, int equations, double start_mean,
                            int matrix, FILE *out)
{
    if (!matrix) {
        fprintf(out,
                "# untied hierarchy: order M = %d (%d equations), closure %s, start %s; "
                "m(w) = Tr(w)/d, A = U U^T, B = V V^T (m(A^k) = tA_k, m(B^k) = tB_k), "
                "K = U V^T = S, k = V U^T, T teacher, t its transpose\n",
                cfg->order, equations, aim_model_closure_name(cfg->closure),
                aim_model_start_text(cfg));
        if (cfg->centring == AIM_RAW)
            fprintf(out, "# mean: %s\n",
                    cfg->mean_mode == AIM_MEAN_ADIABATIC
                        ? "adiabatic limit: the fast phase on t = d tau with frozen moments, "
                          "then the critical manifold dR/dm = 0 on tau (composite)"
                        : "stiff system at finite d, integrated with the moments");
    }
    if (cfg->centring == AIM_RAW)
        fprintf(out,
                "# start: student mean Tr S/sqrt d = %.6g (0, or its typical size "
                "sqrt(rho v v_V/d) when 0 is an unstable critical point of the fast "
                "flow; measured for a seed start)\n",
                start_mean);
}

static const aim_hierarchy *untied_equations(const void *c)
{
    return aim_untied_hierarchy(((const untied_model *)c)->h);
}

static int untied_size(const void *c) { return aim_untied_size(((const untied_model *)c)->h); }

static int untied_monitored(const void *c)
{
    return aim_untied_order_parameters(((const untied_model *)c)->h);
}

static int untied_initial(void *c, const aim_measured_start *start, double *y0, char *err, size_t n)
{
    untied_model *u = c;
    if (start && start->moments) {
        /* the seed's mean Tr S/sqrt d, from its m(K) = Tr S/d */
        const int wk = aim_wordset_find(aim_hierarchy_words(aim_untied_hierarchy(u->h)), "K");
        u->mean0 = u->raw ? start->moments[wk] * sqrt((double)start->d) : 0.0;
        aim_untied_set_start(u->h, start->moments, u->mean0);
    }
    aim_untied_balance(u->h, u->warning, sizeof u->warning);
    aim_untied_initial(u->h, y0);
    if (u->adiabatic && aim_untied_settle(u->h, u->mean0)) {
        snprintf(err, n, "%s", aim_untied_error(u->h));
        return -1;
    }
    if (aim_untied_check(u->h, y0)) {
        snprintf(err, n, "the start moments are not those of real U, V: %s",
                 aim_untied_error(u->h));
        return -1;
    }
    return 0;
}

static int untied_rhs(void *c, const double *y, double *dy)
{
    return aim_untied_rhs(((untied_model *)c)->h, y, dy);
}

static const char *untied_error(const void *c)
{
    return aim_untied_error(((const untied_model *)c)->h);
}

static const char *untied_state_name(const void *c, int i)
{
    return aim_untied_state_name(((const untied_model *)c)->h, i);
}

static int untied_margin_count(const void *c)
{
    return aim_untied_margin_count(((const untied_model *)c)->h);
}

static void untied_margins(void *c, const double *y, double *g)
{
    aim_untied_margins(((untied_model *)c)->h, y, g);
}

static const char *untied_margin_text(const void *c, int k)
{
    return aim_untied_margin_text(((const untied_model *)c)->h, k);
}

static aim_model_failure untied_failure(const void *c)
{
    const int why = aim_untied_left_valid(((const untied_model *)c)->h);
    return why == AIM_UNTIED_RUNAWAY ? AIM_MODEL_FAILURE_DIVERGED
           : why                     ? AIM_MODEL_FAILURE_INVALID
                                     : AIM_MODEL_FAILURE_NONE;
}

static aim_gauss *untied_engine(void *c) { return aim_untied_gauss(((untied_model *)c)->h); }

static double untied_overlap(void *c, const double *y)
{
    return aim_untied_overlap(((untied_model *)c)->h, y);
}

static int untied_terms(void *c, const double *y, double *gradient, double *noise,
                        double *decay)
{
    return aim_untied_terms(((untied_model *)c)->h, y, gradient, noise, decay);
}

/* Observables leave the next right-hand side as they found it (see
 * untied_path_observables). */
static int untied_observables(void *c, const double *y, double *obs)
{
    aim_untied *h = ((untied_model *)c)->h;
    aim_untied_memo memo;
    aim_untied_memo_save(h, &memo);
    const int rc = aim_untied_observables(h, y, obs);
    aim_untied_memo_restore(h, &memo);
    return rc;
}

static const char *untied_moment_name(const void *c, int k)
{
    return aim_untied_moment_name(((const untied_model *)c)->h, k);
}

/* The state as moments; in raw centring the slot of K holds m(K) = mean /
 * sqrt d at the d of the runs, as SGD measures it (the adiabatic state
 * holds its limit 0, the stiff one the mean itself). */
static void untied_tracked(const void *c, const double *y, const double *obs, double *out)
{
    const untied_model *u = c;
    memcpy(out, y, sizeof *out * (size_t)aim_untied_size(u->h));
    if (u->raw)
        out[aim_untied_k_slot(u->h)] = obs[AIM_OBS_MEAN] / sqrt(u->d);
}

static const char *untied_warning(const void *c) { return ((const untied_model *)c)->warning; }

static double untied_start_mean(const void *c) { return ((const untied_model *)c)->mean0; }

static double untied_fast_start(const void *c)
{
    const untied_model *u = c;
    return u->adiabatic ? u->mean0 : NAN;
}

static int untied_fast_rate(void *c, double x, double *rate)
{
    return aim_untied_fast_rate(((untied_model *)c)->h, x, rate);
}

/* The composite of the fast phase and the slow one,
 *     mean(tau) = m_fast(d tau) + m*(q(tau)) - m*(q(0)),
 * uniformly valid to leading order (theory/untied.md sec. 3). */
/* The adiabatic path's observables; the root tracking and kernel cache
 * they move are put back after, so that a path observed while CVODE is
 * between grid points integrates on as it would unobserved. */
static int untied_path_observables(void *c, const double *states, const double *fast,
                                   int reached, double *obs, int *failed_row)
{
    untied_model *u = c;
    const int n = aim_untied_size(u->h);
    aim_untied_memo memo;
    aim_untied_memo_save(u->h, &memo);
    *failed_row = 0;
    int rc = aim_untied_settle(u->h, u->mean0);
    double root0 = NAN;
    for (int i = 0; rc == 0 && i < reached; i++) {
        double root;
        *failed_row = i;
        rc = aim_untied_mean(u->h, states + (size_t)i * n, &root) ||
             aim_untied_observables_with_mean(u->h, states + (size_t)i * n,
                                              fast[i] + root - (i == 0 ? root : root0),
                                              obs + (size_t)i * AIM_OBS_COUNT);
        if (i == 0)
            root0 = root;
    }
    aim_untied_memo_restore(u->h, &memo);
    return rc ? -1 : 0;
}

/* dS = -(G B + A G), m(A) + m(B) = rho (v + v_V) at the start */
static double untied_cross_drift(const aim_config *cfg, double ts, double omega_c,
                                 double psi_c, const double cross[2])
{
    (void)ts;
    const double v_v = cfg->student.scale_v > 0 ? cfg->student.scale_v : cfg->student.scale;
    const double ta_tb = cfg->student.rho * (cfg->student.scale + v_v);
    return -ta_tb * (cross[0] * omega_c + cross[1] * psi_c);
}

/* ---- the matrix limit process: S = U V^T, U = F1, V = F2 ---- */

static void untied_matrix_step(const aim_config *cfg, double *M, double keep,
                               aim_matrix_student *m)
{
    (void)cfg;
    const int D = m->D, p = m->p;
    const size_t dd = (size_t)D * D, dp = (size_t)D * p;
    /* grad_U = G V, grad_V = G^T U, both at the old factors, in single
     * precision (theory/matrix.md sec. 3: its rounding is far below the
     * process's 1/D); U and V themselves are kept and updated in double */
    float *Mf = m->fwork, *U = Mf + dd, *V = U + dp, *dU = V + dp, *dV = dU + dp;
    for (size_t i = 0; i < dd; i++)
        Mf[i] = (float)M[i];
    for (size_t i = 0; i < dp; i++) {
        U[i] = (float)m->F1[i];
        V[i] = (float)m->F2[i];
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, D, p, D, 1.0f, Mf, D, V, p, 0.0f, dU,
                p);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, D, p, D, 1.0f, Mf, D, U, p, 0.0f, dV,
                p);
    for (size_t i = 0; i < dp; i++) {
        m->F1[i] = keep * m->F1[i] - (double)dU[i];
        m->F2[i] = keep * m->F2[i] - (double)dV[i];
    }
}

/* U += c V moves Tr(U V^T) by c ||V||^2 and the other moments by
 * O(c) = O(1/D) */
static void untied_matrix_raw_trace(aim_matrix_student *m, double scale)
{
    const size_t dp = (size_t)m->D * m->p;
    const double c = scale * cblas_ddot((int)dp, m->F1, 1, m->F2, 1) /
                     cblas_ddot((int)dp, m->F2, 1, m->F2, 1);
    cblas_daxpy((int)dp, c, m->F2, 1, m->F1, 1);
}

/* c = m(A) + m(B) = (||U||^2 + ||V||^2)/D */
static double untied_matrix_mean_coupling(const aim_matrix_student *m)
{
    const size_t dp = (size_t)m->D * m->p;
    return (cblas_ddot((int)dp, m->F1, 1, m->F1, 1) + cblas_ddot((int)dp, m->F2, 1, m->F2, 1)) /
           m->D;
}

static const aim_matrix_param untied_matrix = {
    .factors = 2,
    .step = untied_matrix_step,
    .raw_trace = untied_matrix_raw_trace,
    .mean_coupling = untied_matrix_mean_coupling,
};

const aim_model_ops aim_untied_model_ops = {
    .name = "untied",
    .hierarchy = 1,
    .alphabet = aim_untied_alphabet,
    .moving = "ABKk",
    .equations = untied_equations,
    .limit_text = untied_limit_text,
    .describe = untied_describe,
    .create = untied_create,
    .free = untied_free,
    .size = untied_size,
    .monitored = untied_monitored,
    .initial = untied_initial,
    .rhs = untied_rhs,
    .error = untied_error,
    .state_name = untied_state_name,
    .margin_count = untied_margin_count,
    .margins = untied_margins,
    .margin_text = untied_margin_text,
    .failure = untied_failure,
    .divergence = "student mean",
    .matrix = &untied_matrix,
    .engine = untied_engine,
    .overlap = untied_overlap,
    .cross_drift = untied_cross_drift,
    .escape_result = "Corollary 4 (i)",
    .invariant_result = "Corollary 4 (ii)",
    .terms = untied_terms,
    .observables = untied_observables,
    .tracked_count = untied_size,
    .tracked_name = untied_moment_name,
    .tracked = untied_tracked,
    .warning = untied_warning,
    .start_mean = untied_start_mean,
    .fast_name = "mean",
    .fast_start = untied_fast_start,
    .fast_rate = untied_fast_rate,
    .path_observables = untied_path_observables,
};
