/* The tied student (S = W W^T) as an aim_model: its truncated moment
 * hierarchy (tied.h), tracking the moments of every word it integrates. */
#include <stdio.h>
#include <string.h>

#include <cblas.h>

#include "draw.h"
#include "model.h"
#include "tied.h"

static void *tied_create(const aim_config *cfg, double d, char *err, size_t n)
{
    (void)d; /* the tied hierarchy is the limit d -> infinity */
    char why[256];
    aim_tied *m = aim_tied_create(cfg, cfg->rule, why, sizeof why);
    if (!m)
        snprintf(err, n, "could not set up the tied hierarchy: %s", why);
    return m;
}

static void tied_free(void *c) { aim_tied_free(c); }

static void tied_alphabet(const aim_config *cfg, aim_alphabet *ab)
{
    (void)cfg;
    *ab = (aim_alphabet){"ST", "ST"};
}

static void tied_describe(const aim_config *cfg, int equations, double start_mean, int matrix,
                          FILE *out)
{
    (void)start_mean;
    if (matrix)
        return;
    fprintf(out,
            "# tied hierarchy: order M = %d (%d equations), closure %s, start %s; "
            "m(w) = Tr(w)/d, S student, T teacher\n",
            cfg->order, equations, aim_model_closure_name(cfg->closure),
            aim_model_start_text(cfg));
}

static const aim_hierarchy *tied_equations(const void *c) { return aim_tied_hierarchy(c); }

static int tied_size(const void *c) { return aim_tied_size(c); }

static int tied_monitored(const void *c) { return aim_tied_order_parameters(c); }

static int tied_initial(void *c, const aim_measured_start *start, double *y0, char *err, size_t n)
{
    if (start && start->moments)
        aim_tied_set_start(c, start->moments);
    aim_tied_initial(c, y0);
    if (aim_tied_check(c, y0)) {
        snprintf(err, n,
                 "the start moments are not those of a positive semi-definite S and a "
                 "symmetric S*: %s",
                 aim_tied_error(c));
        return -1;
    }
    return 0;
}

static int tied_rhs(void *c, const double *y, double *dy) { return aim_tied_rhs(c, y, dy); }

static const char *tied_error(const void *c) { return aim_tied_error(c); }

static const char *tied_state_name(const void *c, int i)
{
    return aim_tied_state_name((void *)c, i);
}

static int tied_margin_count(const void *c) { return aim_tied_margin_count(c); }

static void tied_margins(void *c, const double *y, double *g) { aim_tied_margins(c, y, g); }

static const char *tied_margin_text(const void *c, int k) { return aim_tied_margin_text(c, k); }

static aim_model_failure tied_failure(const void *c)
{
    return aim_tied_left_valid(c) ? AIM_MODEL_FAILURE_INVALID : AIM_MODEL_FAILURE_NONE;
}

static aim_gauss *tied_engine(void *c) { return aim_tied_gauss(c); }

static double tied_overlap(void *c, const double *y) { return aim_tied_overlap(c, y); }

static int tied_terms(void *c, const double *y, double *gradient, double *noise, double *decay)
{
    return aim_tied_terms(c, y, gradient, noise, decay);
}

static int tied_observables(void *c, const double *y, double *obs)
{
    return aim_tied_observables(c, y, obs);
}

static void tied_tracked(const void *c, const double *y, const double *obs, double *out)
{
    (void)obs;
    memcpy(out, y, sizeof *out * (size_t)aim_tied_size(c));
}

/* dS = -((G + G^T) S + S (G + G^T)) */
static double tied_cross_drift(const aim_config *cfg, double ts, double omega_c, double psi_c,
                               const double cross[2])
{
    (void)cfg;
    return -2.0 * (cross[0] + cross[1]) * ts * (omega_c + psi_c);
}

/* ---- the matrix limit process: S = W W^T, W = F1 ---- */

static void tied_matrix_step(const aim_config *cfg, double *M, double keep,
                             aim_matrix_student *m)
{
    (void)cfg;
    const int D = m->D, p = m->p;
    const size_t dp = (size_t)D * p;
    /* grad_W = (G + G^T) W, in single precision (theory/matrix.md sec.
     * 3: its rounding is far below the process's 1/D); W itself is kept
     * and updated in double */
    float *Msym = m->fwork, *W = Msym + (size_t)D * D, *dW = W + dp;
    for (int i = 0; i < D; i++)
        for (int j = i; j < D; j++) {
            const size_t a = (size_t)i * D + j, b = (size_t)j * D + i;
            Msym[a] = Msym[b] = (float)(M[a] + M[b]);
        }
    for (size_t i = 0; i < dp; i++)
        W[i] = (float)m->F1[i];
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, D, p, D, 1.0f, Msym, D, W, p, 0.0f,
                dW, p);
    for (size_t i = 0; i < dp; i++)
        m->F1[i] = keep * m->F1[i] - (double)dW[i];
}

/* no raw centring: a tied student needs centred indices (config_check.c) */
static const aim_matrix_param tied_matrix = {
    .factors = 1,
    .step = tied_matrix_step,
};

const aim_model_ops aim_tied_model_ops = {
    .name = "tied",
    .hierarchy = 1,
    .alphabet = tied_alphabet,
    .moving = "S",
    .equations = tied_equations,
    .describe = tied_describe,
    .create = tied_create,
    .free = tied_free,
    .size = tied_size,
    .monitored = tied_monitored,
    .initial = tied_initial,
    .rhs = tied_rhs,
    .error = tied_error,
    .state_name = tied_state_name,
    .margin_count = tied_margin_count,
    .margins = tied_margins,
    .margin_text = tied_margin_text,
    .failure = tied_failure,
    .matrix = &tied_matrix,
    .engine = tied_engine,
    .overlap = tied_overlap,
    .cross_drift = tied_cross_drift,
    .escape_result = "Corollary 3",
    .terms = tied_terms,
    .observables = tied_observables,
    .tracked_count = tied_size,
    .tracked_name = tied_state_name,
    .tracked = tied_tracked,
};
