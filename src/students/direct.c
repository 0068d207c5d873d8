#include "direct.h"
#include "family.h"
#include "inform.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

enum { Q_SS = 0, P_SS, Q_ST, P_ST, TRACE_OR_MEAN };

static const char *const state_names[AIM_DIRECT_SIZE] = {
    "omega_ss", "psi_ss", "omega_st", "psi_st", "trace_or_mean"};

struct aim_direct {
    aim_gauss *gauss;
    int raw, symmetric;
    double d; /* 0: limit */
    double eta, gamma;
    /* teacher order parameters (fixed during training) */
    double omega_t, psi_t, trace_t, mean_t;
    /* student order parameters at the start (random or informed) */
    double omega_s0, psi_s0, omega_st0, psi_st0;
    char error[320];
};

const char *aim_direct_state_name(void *ctx, int i)
{
    (void)ctx;
    return state_names[i];
}

aim_direct *aim_direct_create(const aim_config *cfg, double d,
                              aim_gauss_rule rule)
{
    aim_direct *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->gauss = aim_gauss_create(cfg, rule, aim_family_symmetric_pair(cfg));
    if (!m->gauss) {
        free(m);
        return NULL;
    }
    m->raw = cfg->centring == AIM_RAW;
    m->symmetric = cfg->student.symmetric;
    m->d = d;
    m->eta = cfg->eta;
    m->gamma = cfg->gamma;
    aim_family_start_overlaps(&cfg->teacher, &m->omega_t, &m->psi_t, &m->trace_t);
    double trace_s0, mixing;
    aim_family_start_overlaps(&cfg->student, &m->omega_s0, &m->psi_s0, &trace_s0);
    if (cfg->student.overlap > 0.0) {
        /* informed start (src/students/inform.h); the configuration was validated,
         * so a failure here is a configuration that bypassed it */
        char err[512];
        aim_inform_direct_start start;
        if (aim_inform_mixing(cfg, &mixing, err, sizeof err) ||
            aim_inform_direct(cfg, mixing, &start, err, sizeof err)) {
            fprintf(stderr, "aim_direct: %s\n", err);
            aim_direct_free(m);
            return NULL;
        }
        m->omega_s0 = start.omega_ss;
        m->psi_s0 = start.psi_ss;
        m->omega_st0 = start.omega_st;
        m->psi_st0 = start.psi_st;
    }
    if (m->raw) {
        m->mean_t = cfg->teacher.mean;
        /* The teacher mean term m_t I / sqrt d adds m_t^2 / d to the
         * teacher's Omega and Psi and m_t / sqrt d to its normalised
         * trace: finite-d terms that vanish in the limit. */
        if (d > 0.0) {
            m->omega_t += m->mean_t * m->mean_t / d;
            m->psi_t += m->mean_t * m->mean_t / d;
            m->trace_t += m->mean_t / sqrt(d);
        }
    }
    return m;
}

aim_gauss *aim_direct_gauss(aim_direct *m) { return m->gauss; }

void aim_direct_free(aim_direct *m)
{
    if (!m)
        return;
    aim_gauss_free(m->gauss);
    free(m);
}

const char *aim_direct_error(const aim_direct *m) { return m->error; }

void aim_direct_initial(const aim_direct *m, double y[AIM_DIRECT_SIZE])
{
    y[Q_SS] = m->omega_s0;
    y[P_SS] = m->psi_s0;
    y[Q_ST] = m->omega_st0; /* 0 for the random start: independent */
    y[P_ST] = m->psi_st0;
    y[TRACE_OR_MEAN] = 0.0; /* a traceless student (informed: by construction) */
}

void aim_direct_state_from(aim_direct *m, const aim_overlaps *q,
                           double y[AIM_DIRECT_SIZE])
{
    y[Q_SS] = q->omega[0][0];
    y[P_SS] = q->psi[0][0];
    y[Q_ST] = q->omega[0][1];
    y[P_ST] = q->psi[0][1];
    y[TRACE_OR_MEAN] = m->raw ? q->mean[0] : q->trace[0];
    m->omega_t = q->omega[1][1];
    m->psi_t = q->psi[1][1];
    m->trace_t = q->trace[1];
    if (m->raw)
        m->mean_t = q->mean[1];
}

void aim_direct_overlaps(const aim_direct *m, const double y[AIM_DIRECT_SIZE],
                         aim_overlaps *q)
{
    q->omega[0][0] = y[Q_SS];
    q->psi[0][0] = y[P_SS];
    q->omega[0][1] = q->omega[1][0] = y[Q_ST];
    q->psi[0][1] = q->psi[1][0] = y[P_ST];
    q->omega[1][1] = m->omega_t;
    q->psi[1][1] = m->psi_t;
    if (m->raw) {
        q->mean[0] = y[TRACE_OR_MEAN];
        q->mean[1] = m->mean_t;
        q->trace[0] = m->d > 0.0 ? y[TRACE_OR_MEAN] / sqrt(m->d) : 0.0;
    } else {
        q->mean[0] = q->mean[1] = 0.0;
        q->trace[0] = y[TRACE_OR_MEAN];
    }
    q->trace[1] = m->trace_t;
}

/* The raw mean's first-order term at the engine's current point q:
 * dm/dt = -E[sum e_ab C_ab] on the fast clock t = d tau (fast), plus the
 * O(1) term -sqrt(d) E[sum e_ab h^c_ab(I)] of the token-norm fluctuations,
 * whose regression coefficients are Tr S_i / d = m_i / sqrt d (slow;
 * theory/direct.md, sec. 2.6). */
static void mean_parts(const aim_direct *m, const aim_overlaps *q, double *fast, double *slow)
{
    const double tr[2] = {q->trace[0], q->trace[1]};
    *fast = -m->d * aim_gauss_error_mean(m->gauss);
    *slow = -sqrt(m->d) * aim_gauss_error_index(m->gauss, tr, tr, 0.0, 0);
}

int aim_direct_mean_parts(aim_direct *m, const double y[AIM_DIRECT_SIZE], double *fast,
                          double *slow)
{
    if (!m->raw) {
        snprintf(m->error, sizeof m->error, "the mean's parts exist in raw centring only");
        return -1;
    }
    aim_overlaps q;
    aim_direct_overlaps(m, y, &q);
    if (aim_gauss_eval(m->gauss, &q)) {
        snprintf(m->error, sizeof m->error, "%s", aim_gauss_error(m->gauss));
        return -1;
    }
    mean_parts(m, &q, fast, slow);
    return 0;
}

/* For any real S and S* the symmetric and antisymmetric parts of the
 * index covariances, Vs = (Omega + Psi)/2 and Va = (Omega - Psi)/2 (2 x 2
 * over student and teacher), are positive semi-definite: their
 * determinants are the margins. A student that reaches its teacher puts
 * Vs on the boundary, and the integrator's error then carries it across;
 * the allowance of 1e-7 of the squared scale makes a margin turn negative
 * before the expectation engine refuses the state (a pivot below -1e-6 of
 * the scale, src/engine/gauss_factor.c), so that the run stops at the root with every
 * valid row kept instead of failing in a right-hand side. */
void aim_direct_margins(const aim_direct *m, const double y[AIM_DIRECT_SIZE], double *g)
{
    aim_overlaps q;
    aim_direct_overlaps(m, y, &q);
    const double scale = fmax(fabs(q.omega[0][0]), fabs(q.omega[1][1]));
    for (int k = 0; k < AIM_DIRECT_MARGINS; k++) {
        const double sign = k == 0 ? 1.0 : -1.0;
        double v[2][2];
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 2; j++)
                v[i][j] = 0.5 * (q.omega[i][j] + sign * q.psi[i][j]);
        g[k] = v[0][0] * v[1][1] - v[0][1] * v[1][0] + 1e-7 * scale * scale;
    }
}

const char *aim_direct_margin_text(int k)
{
    return k == 0 ? "the symmetric parts of student and teacher have a positive semi-definite "
                    "covariance, (Omega + Psi)/2 (with a teacher overlap near 1: the student has "
                    "reached its teacher to the integrator's accuracy, ode.rtol)"
                  : "the antisymmetric parts of student and teacher have a positive "
                    "semi-definite covariance, (Omega - Psi)/2";
}

int aim_direct_terms(aim_direct *m, const double y[AIM_DIRECT_SIZE],
                     double *gradient, double *noise, double *decay)
{
    aim_overlaps q;
    aim_direct_overlaps(m, y, &q);
    if (aim_gauss_eval(m->gauss, &q)) {
        snprintf(m->error, sizeof m->error, "%s", aim_gauss_error(m->gauss));
        return -1;
    }
    const aim_gauss *g = m->gauss;
    /* E[sum e_ab h_ab(B)] and E[sum e_ab h_ba(B)] for B = S and S*. */
    const double om_s[2] = {q.omega[0][0], q.omega[0][1]};
    const double ps_s[2] = {q.psi[0][0], q.psi[0][1]};
    const double om_t[2] = {q.omega[1][0], q.omega[1][1]};
    const double ps_t[2] = {q.psi[1][0], q.psi[1][1]};
    double a_s = aim_gauss_error_index(g, om_s, ps_s, q.mean[0], 0);
    double a_st = aim_gauss_error_index(g, om_s, ps_s, q.mean[0], 1);
    double a_t = aim_gauss_error_index(g, om_t, ps_t, q.mean[1], 0);
    double a_tt = aim_gauss_error_index(g, om_t, ps_t, q.mean[1], 1);
    double k_o = aim_gauss_noise_omega(g), k_p = aim_gauss_noise_psi(g);
    if (m->symmetric) {
        /* the symmetrised gradient (G + G^T)/2 */
        a_t = a_tt = 0.5 * (a_t + a_tt);
        k_o = k_p = 0.5 * (k_o + k_p);
    }
    double grad[AIM_DIRECT_SIZE], nse[AIM_DIRECT_SIZE] = {0}, dec[AIM_DIRECT_SIZE];
    grad[Q_SS] = -2.0 * a_s;
    grad[P_SS] = -2.0 * a_st;
    grad[Q_ST] = -a_t;
    grad[P_ST] = -a_tt;
    nse[Q_SS] = m->eta * k_o;
    nse[P_SS] = m->eta * k_p;
    if (m->raw) {
        double fast, slow;
        mean_parts(m, &q, &fast, &slow);
        grad[TRACE_OR_MEAN] = fast + slow;
    } else {
        /* the identity matrix as regressor: Omega(I, S_i) = Psi(I, S_i)
         * = Tr S_i / d */
        const double tr[2] = {q.trace[0], q.trace[1]};
        grad[TRACE_OR_MEAN] = -aim_gauss_error_index(g, tr, tr, 0.0, 0);
    }
    dec[Q_SS] = -2.0 * m->gamma * y[Q_SS];
    dec[P_SS] = -2.0 * m->gamma * y[P_SS];
    dec[Q_ST] = -m->gamma * y[Q_ST];
    dec[P_ST] = -m->gamma * y[P_ST];
    dec[TRACE_OR_MEAN] = -m->gamma * y[TRACE_OR_MEAN];
    for (int i = 0; i < AIM_DIRECT_SIZE; i++) {
        if (gradient)
            gradient[i] = grad[i];
        if (noise)
            noise[i] = nse[i];
        if (decay)
            decay[i] = dec[i];
    }
    return 0;
}

int aim_direct_rhs(aim_direct *m, const double y[AIM_DIRECT_SIZE],
                   double dy[AIM_DIRECT_SIZE])
{
    double grad[AIM_DIRECT_SIZE], nse[AIM_DIRECT_SIZE], dec[AIM_DIRECT_SIZE];
    if (aim_direct_terms(m, y, grad, nse, dec))
        return -1;
    for (int i = 0; i < AIM_DIRECT_SIZE; i++)
        dy[i] = grad[i] + nse[i] + dec[i];
    return 0;
}

int aim_direct_observables(aim_direct *m, const double y[AIM_DIRECT_SIZE],
                           double obs[AIM_OBS_COUNT])
{
    aim_overlaps q;
    aim_direct_overlaps(m, y, &q);
    if (aim_gauss_observables(m->gauss, &q, obs)) {
        snprintf(m->error, sizeof m->error, "%s", aim_gauss_error(m->gauss));
        return -1;
    }
    return 0;
}
