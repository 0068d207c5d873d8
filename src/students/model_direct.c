/* The direct student (S learned itself) as an aim_model: the closed ODE of
 * its order parameters (direct.h). */
#include <stdio.h>

#include "direct.h"
#include "model.h"

static void *direct_create(const aim_config *cfg, double d, char *err, size_t n)
{
    /* only the raw-mode mean equation needs d; the centred limit does not */
    aim_direct *m = aim_direct_create(cfg, cfg->centring == AIM_RAW ? d : 0.0, cfg->rule);
    if (!m)
        snprintf(err, n,
                 "could not set up the direct model: out of memory, or the "
                 "quasi-random point set could not be whitened (raise ode.qmc_points)");
    return m;
}

static void direct_free(void *c) { aim_direct_free(c); }

static int direct_size(const void *c)
{
    (void)c;
    return AIM_DIRECT_SIZE;
}

static int direct_initial(void *c, const aim_measured_start *start, double *y0, char *err, size_t n)
{
    (void)err;
    (void)n;
    if (start && start->q)
        aim_direct_state_from(c, start->q, y0);
    else
        aim_direct_initial(c, y0);
    return 0;
}

static int direct_rhs(void *c, const double *y, double *dy) { return aim_direct_rhs(c, y, dy); }

static const char *direct_error(const void *c) { return aim_direct_error(c); }

static const char *direct_state_name(const void *c, int i)
{
    return aim_direct_state_name((void *)c, i);
}

static int direct_margin_count(const void *c)
{
    (void)c;
    return AIM_DIRECT_MARGINS;
}

static void direct_margins(void *c, const double *y, double *g) { aim_direct_margins(c, y, g); }

static const char *direct_margin_text(const void *c, int k)
{
    (void)c;
    return aim_direct_margin_text(k);
}

static aim_gauss *direct_engine(void *c) { return aim_direct_gauss(c); }

static double direct_overlap(void *c, const double *y)
{
    aim_overlaps q;
    aim_direct_overlaps(c, y, &q);
    return aim_overlaps_teacher_overlap(&q);
}

/* dS = -G, halved and symmetrised for a symmetric student */
static double direct_cross_drift(const aim_config *cfg, double ts, double omega_c, double psi_c,
                                 const double cross[2])
{
    (void)ts;
    if (cfg->student.symmetric)
        return -0.5 * (cross[0] + cross[1]) * (omega_c + psi_c);
    return -(cross[0] * omega_c + cross[1] * psi_c);
}

static int direct_terms(void *c, const double *y, double *gradient, double *noise,
                        double *decay)
{
    return aim_direct_terms(c, y, gradient, noise, decay);
}

static int direct_observables(void *c, const double *y, double *obs)
{
    return aim_direct_observables(c, y, obs);
}

/* ---- the matrix limit process: S itself ---- */

static void direct_matrix_step(const aim_config *cfg, double *M, double keep,
                               aim_matrix_student *m)
{
    const int D = m->D;
    /* a symmetric student's gradient is (G + G^T)/2 */
    if (cfg->student.symmetric)
        for (int i = 0; i < D; i++)
            for (int j = i + 1; j < D; j++) {
                const size_t a = (size_t)i * D + j, b = (size_t)j * D + i;
                M[a] = M[b] = 0.5 * (M[a] + M[b]);
            }
    const size_t dd = (size_t)D * D;
    for (size_t i = 0; i < dd; i++)
        m->S[i] = keep * m->S[i] - M[i];
}

static void direct_matrix_raw_trace(aim_matrix_student *m, double scale)
{
    const int D = m->D;
    double trace = 0.0;
    for (int i = 0; i < D; i++)
        trace += m->S[(size_t)i * D + i];
    const double t = scale * trace / D;
    for (int i = 0; i < D; i++)
        m->S[(size_t)i * D + i] += t;
}

static double direct_matrix_mean_coupling(const aim_matrix_student *m)
{
    (void)m;
    return 1.0;
}

static const aim_matrix_param direct_matrix = {
    .step = direct_matrix_step,
    .raw_trace = direct_matrix_raw_trace,
    .mean_coupling = direct_matrix_mean_coupling,
    .drift_scale = direct_matrix_mean_coupling,
};

const aim_model_ops aim_direct_model_ops = {
    .name = "direct",
    .create = direct_create,
    .free = direct_free,
    .size = direct_size,
    .initial = direct_initial,
    .rhs = direct_rhs,
    .error = direct_error,
    .state_name = direct_state_name,
    .margin_count = direct_margin_count,
    .margins = direct_margins,
    .margin_text = direct_margin_text,
    .matrix = &direct_matrix,
    .engine = direct_engine,
    .overlap = direct_overlap,
    .cross_drift = direct_cross_drift,
    .terms = direct_terms,
    .observables = direct_observables,
};
