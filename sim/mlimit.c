/* aim_mlimit: the limit process simulated with matrices (see mlimit.h and
 * theory/matrix.md). */
#include "mlimit.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>
/* OpenBLAS's cblas.h and GSL's gsl_cblas.h declare the same enums: keep
 * OpenBLAS's and skip GSL's. */
#define __GSL_CBLAS_H__
#include <gsl/gsl_rng.h>

#include "draw.h"
#include "family.h"
#include "gauss.h"
#include "hierarchy.h"
#include "model.h"

/* One path of the process: the student's matrices (S, its factors, the
 * step's work space) and, in raw centring, the mean's relaxation rate
 * |d mu/d tau| per unit of mu - mu* at its last evaluation. */
typedef struct {
    aim_matrix_student st;
    double rate_mean;
} mlimit_path;

struct aim_mlimit {
    aim_config cfg;
    const aim_matrix_param *param; /* the student's parametrisation */
    /* path 0 steps by h (matrix.scheme = euler) or h/2 (richardson); path
     * 1, richardson only, steps by h on the same noise (theory/matrix.md
     * sec. 3): both start from the same matrices */
    mlimit_path path[2];
    int paths;
    int D, p;
    double *St;         /* teacher */
    double *M;          /* D x D: h Gbar + sqrt(h) Z of the step */
    double *X, *X2;     /* D x D: the step's Gaussian matrices (X2: richardson's second
                           half step) */
    double *letters;    /* 4 D x D for aim_words_letters */
    double tr_t, omega_tt, psi_tt;
    int raw;            /* raw centring: the mean moves, lambda = sqrt(d) E_C */
    double d;           /* raw: the dimension of the runs (sqrt d scales the mean) */
    double threshold;   /* weak recovery: |overlap| to reach */
    double last_overlap, last_tau; /* at the previous evaluation */
    double tau_wr;      /* first crossing of the threshold, NAN before */
    /* the step control (matrix.dtau = 0 with richardson): the next step,
     * and path 0's risk, overlap and Omega(S,S) at the last step's start
     * (NAN: none yet) */
    int controlled;
    double h_next, last_risk, last_ov, last_omega;
    long steps;         /* steps taken (of h: richardson's coarse ones) */
    double parted;      /* richardson: the tau at which the paths parted
                           (PARTED), from which path 0 goes on alone; NAN */
    aim_gauss *gauss;
    /* the control variate (matrix.qmc_points): the cheap rule, NULL when
     * the full rule evaluates every state; the anchor state (path 0's
     * order parameters) and the full rule's kernels and risk minus the
     * cheap rule's there */
    aim_gauss *cheap;
    int anchored;
    aim_overlaps anchor;
    double anchor_dk[AIM_KERNEL_COUNT], anchor_drisk;
    double risk;        /* the risk at the last evaluation (the step control) */
    /* the paths' order parameters and kernels at tau, evaluated at the end
     * of the last step (fresh: 1 while the matrices have not moved since) */
    int fresh;
    aim_overlaps q_now[2];
    double k_now[2][AIM_KERNEL_COUNT];
    gsl_rng *noise;
    double tau;
    char error[512];
};

static double trace_of(const double *A, int d)
{
    double t = 0.0;
    for (int i = 0; i < d; i++)
        t += A[(size_t)i * d + i];
    return t;
}

/* Tr(A B) for d x d row-major A, B. */
static double tr_ab(const double *A, const double *B, int d)
{
    double t = 0.0;
    for (int i = 0; i < d; i++)
        t += cblas_ddot(d, A + (size_t)i * d, 1, B + i, d);
    return t;
}

/* The student matrix of a path from its factors, as its family forms one
 * (none when S is learned itself). */
static void form_student(const aim_mlimit *m, mlimit_path *path)
{
    const aim_family *family = aim_family_of(m->cfg.decomposition);
    if (family->form)
        family->form(path->st.F1, path->st.F2, path->st.D, path->st.p, path->st.S);
}

/* Raw centring: sqrt(d) turns the O(1/D) trace deviations of the drawn
 * matrices into O(sqrt(d)/D) deviations of the index means. The
 * teacher's trace is set to its limit value plus the mean shift m* / sqrt(d)
 * of the runs, so that its index mean is m* as in the limit hierarchy; the
 * student's random trace, which breaks the symmetry of an unstable start
 * mean as SGD's does, is rescaled by D/d to the spread of the runs'
 * (unchanged when D = d: the replica starts where SGD seed r does). */
static void raw_traces(aim_mlimit *m, mlimit_path *path)
{
    const int D = m->D;
    double omega, psi, trace;
    aim_family_start_overlaps(&m->cfg.teacher, &omega, &psi, &trace);
    const double shift =
        trace + m->cfg.teacher.mean / sqrt(m->d) - trace_of(m->St, D) / D;
    for (int i = 0; i < D; i++)
        m->St[(size_t)i * D + i] += shift;
    m->param->raw_trace(&path->st, (double)D / m->d - 1.0);
}

static void path_free(mlimit_path *path)
{
    free(path->st.S);
    free(path->st.F1);
    free(path->st.F2);
    free(path->st.work);
    free(path->st.dF1);
    free(path->st.dF2);
}

/* A path's matrices, uninitialised. Returns 0 or -1 (out of memory; what
 * was allocated is freed by path_free). */
static int path_alloc(const aim_mlimit *m, mlimit_path *path)
{
    const int D = m->D, p = m->p, factors = m->param->factors;
    const size_t dd = (size_t)D * D, dp = (size_t)D * (size_t)p;
    path->st.D = D;
    path->st.p = p;
    path->st.S = malloc(dd * sizeof *path->st.S);
    if (m->param->work)
        path->st.work = malloc((size_t)m->param->work * dd * sizeof *path->st.work);
    if (factors > 0) {
        path->st.F1 = malloc(dp * sizeof *path->st.F1);
        path->st.dF1 = malloc(dp * sizeof *path->st.dF1);
    }
    if (factors > 1) {
        path->st.F2 = malloc(dp * sizeof *path->st.F2);
        path->st.dF2 = malloc(dp * sizeof *path->st.dF2);
    }
    return path->st.S && (!m->param->work || path->st.work) &&
                   (factors < 1 || (path->st.F1 && path->st.dF1)) &&
                   (factors < 2 || (path->st.F2 && path->st.dF2))
               ? 0
               : -1;
}

/* to's matrices (S and its factors) made equal to from's. */
static void path_copy(const aim_mlimit *m, mlimit_path *to, const mlimit_path *from)
{
    const size_t dd = (size_t)m->D * m->D, dp = (size_t)m->D * (size_t)m->p;
    memcpy(to->st.S, from->st.S, dd * sizeof *to->st.S);
    if (from->st.F1)
        memcpy(to->st.F1, from->st.F1, dp * sizeof *to->st.F1);
    if (from->st.F2)
        memcpy(to->st.F2, from->st.F2, dp * sizeof *to->st.F2);
}

void aim_mlimit_free(aim_mlimit *m)
{
    if (!m)
        return;
    for (int k = 0; k < 2; k++)
        path_free(&m->path[k]);
    free(m->St);
    free(m->M);
    free(m->X);
    free(m->X2);
    free(m->letters);
    aim_gauss_free(m->gauss);
    aim_gauss_free(m->cheap);
    gsl_rng_free(m->noise);
    free(m);
}

double aim_mlimit_bytes(const aim_config *cfg, int D)
{
    const aim_model_ops *ops = aim_model_ops_of(cfg);
    const aim_matrix_param *param = ops ? ops->matrix : NULL;
    if (!param)
        return 0;
    const double dd = (double)D * D, factors = param->factors;
    const double dp = factors > 0 ? D * fmax(1.0, floor(cfg->student.rho * D + 0.5)) : 0;
    const int richardson = cfg->scheme == AIM_SCHEME_RICHARDSON, paths = 1 + richardson;
    /* aim_mlimit_create: St, M, X (and X2), per path S, the step's work
     * matrices, a factor and its change per factor; save_state (euler
     * only, aim_mlimit_drift): S and the factors again; aim_mlimit_words:
     * the letters and aim_words_measure's stack */
    const double words = ops->hierarchy ? 4 + (cfg->order > 2 ? cfg->order - 2 : 0) : 0;
    return 8 * ((3 + richardson + paths * (1 + param->work) + !richardson + words) * dd +
                (2 * paths + !richardson) * factors * dp);
}

aim_mlimit *aim_mlimit_create(const aim_config *cfg, int D, double d, uint64_t seed,
                              char *err, size_t n)
{
    const aim_model_ops *ops = aim_model_ops_of(cfg);
    const aim_matrix_param *param = ops ? ops->matrix : NULL;
    if (!param) {
        snprintf(err, n, "the matrix limit process has no student %d", (int)cfg->decomposition);
        return NULL;
    }
    if (cfg->centring == AIM_RAW &&
        (!param->raw_trace || cfg->mean_mode == AIM_MEAN_ADIABATIC || !(d >= 1.0))) {
        snprintf(err, n, "the matrix limit process integrates raw centring as the stiff "
                         "system at a finite d >= 1 (hierarchy.mean = stiff), for direct "
                         "and untied students");
        return NULL;
    }
    if (D < 2 || D > 46340) {
        snprintf(err, n, "matrix dimension %d out of range 2..46340", D);
        return NULL;
    }
    aim_mlimit *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(err, n, "out of memory");
        return NULL;
    }
    m->cfg = *cfg;
    m->D = D;
    m->raw = cfg->centring == AIM_RAW;
    m->d = d;
    m->threshold = cfg->recovery_threshold;
    m->tau_wr = NAN;
    m->last_overlap = NAN;
    m->last_risk = NAN;
    m->parted = NAN;
    m->param = param;
    m->paths = cfg->scheme == AIM_SCHEME_RICHARDSON ? 2 : 1;
    m->controlled = m->paths > 1 && !(cfg->matrix_dtau > 0.0);
    const int factored = param->factors > 0;
    m->p = factored ? aim_config_columns(&cfg->student, D) : 0;
    const size_t dd = (size_t)D * D;
    m->St = malloc(dd * sizeof *m->St);
    m->M = malloc(dd * sizeof *m->M);
    m->X = malloc(dd * sizeof *m->X);
    if (m->paths > 1)
        m->X2 = malloc(dd * sizeof *m->X2);
    int ok = m->St && m->M && m->X && (m->paths < 2 || m->X2);
    for (int k = 0; k < m->paths; k++)
        ok = ok && path_alloc(m, &m->path[k]) == 0;
    m->gauss = aim_gauss_create(cfg, cfg->rule, aim_family_symmetric_pair(cfg));
    /* the noise plays the part of SGD's data stream */
    m->noise = aim_draw_rng(seed, AIM_DRAW_DATA);
    gsl_rng *rt = aim_draw_rng(seed, AIM_DRAW_TEACHER);
    gsl_rng *rs = aim_draw_rng(seed, AIM_DRAW_STUDENT);
    ok = ok && m->gauss && m->noise && rt && rs;
    mlimit_path *start = &m->path[0];
    if (ok && aim_draw_teacher(cfg, rt, m->St, D) != 0)
        ok = 0;
    if (ok) {
        aim_draw_student(cfg, rs, D, m->p, param->factors, factored ? start->st.F1 : start->st.S,
                         start->st.F2);
        if (aim_draw_inform(cfg, seed, D, m->p, param->factors, m->St,
                            factored ? start->st.F1 : start->st.S, start->st.F2))
            ok = 0;
    }
    if (ok) {
        if (m->raw)
            raw_traces(m, start);
        form_student(m, start);
        for (int k = 1; k < m->paths; k++)
            path_copy(m, &m->path[k], start);
        m->tr_t = trace_of(m->St, D);
        m->omega_tt = cblas_ddot((int)dd, m->St, 1, m->St, 1) / D;
        m->psi_tt = tr_ab(m->St, m->St, D) / D;
    }
    gsl_rng_free(rt);
    gsl_rng_free(rs);
    if (!ok) {
        snprintf(err, n, "out of memory (matrix dimension %d), or the expectation engine "
                         "could not be set up",
                 D);
        aim_mlimit_free(m);
        return NULL;
    }
    return m;
}

/* Order parameters of a path's matrices. */
static void path_overlaps(const aim_mlimit *m, const mlimit_path *path, aim_overlaps *q)
{
    const int D = m->D;
    const size_t dd = (size_t)D * D;
    const double *S = path->st.S;
    memset(q, 0, sizeof *q);
    q->omega[0][0] = cblas_ddot((int)dd, S, 1, S, 1) / D;
    q->psi[0][0] = tr_ab(S, S, D) / D;
    q->omega[0][1] = q->omega[1][0] = cblas_ddot((int)dd, S, 1, m->St, 1) / D;
    q->psi[0][1] = q->psi[1][0] = tr_ab(S, m->St, D) / D;
    q->omega[1][1] = m->omega_tt;
    q->psi[1][1] = m->psi_tt;
    q->trace[0] = trace_of(S, D) / D;
    q->trace[1] = m->tr_t / D;
    if (m->raw) {
        q->mean[0] = sqrt(m->d) * q->trace[0];
        q->mean[1] = sqrt(m->d) * q->trace[1];
    }
}

void aim_mlimit_overlaps(const aim_mlimit *m, aim_overlaps *q)
{
    path_overlaps(m, &m->path[0], q);
}

/* The mean's relaxation rate in raw centring: d mu/d tau = -d c E_C(mu) +
 * slower terms, c = m(A) + m(B) (untied) or 1 (direct), so the rate is
 * d c |dE_C/dmu| (theory/matrix.md sec. 5); the step must resolve it. From
 * a central difference of the engine's E_C, which leaves the engine
 * evaluated at q. */
static int mean_rate(aim_mlimit *m, mlimit_path *path, aim_overlaps *q)
{
    const double mu = q->mean[0], dmu = 1e-4 * (1.0 + fabs(mu));
    double e[2];
    for (int s = 0; s < 2; s++) {
        aim_overlaps qs = *q;
        qs.mean[0] = mu + (s ? -dmu : dmu);
        if (aim_gauss_eval(m->gauss, &qs))
            return -1;
        e[s] = aim_gauss_error_mean(m->gauss);
    }
    const double c = m->param->mean_coupling(&path->st);
    path->rate_mean = m->d * c * fabs(e[0] - e[1]) / (2.0 * dmu);
    return aim_gauss_eval(m->gauss, q);
}

/* The |teacher overlap| the process gives now: path 0's, or with
 * richardson the extrapolation 2 x path 0's - path 1's (q: the paths'
 * order parameters). */
static double extrapolated_overlap(const aim_mlimit *m, const aim_overlaps q[2])
{
    const double v = fabs(aim_overlaps_teacher_overlap(&q[0]));
    return m->paths > 1 ? 2.0 * v - fabs(aim_overlaps_teacher_overlap(&q[1])) : v;
}

/* Weak recovery: the first step at which |overlap| reaches the threshold,
 * the crossing interpolated linearly within the step (an O(h^2) error). */
static void watch_recovery(aim_mlimit *m, const aim_overlaps q[2])
{
    if (m->last_tau == m->tau && !isnan(m->last_overlap))
        return;
    const double v = extrapolated_overlap(m, q);
    if (isnan(m->tau_wr) && v >= m->threshold)
        m->tau_wr = isnan(m->last_overlap) || v == m->last_overlap
                        ? m->tau
                        : m->last_tau + (m->threshold - m->last_overlap) /
                                            (v - m->last_overlap) * (m->tau - m->last_tau);
    m->last_overlap = v;
    m->last_tau = m->tau;
}

/* The kernels at engine g's last evaluation; raw: lambda = sqrt(d) E_C,
 * the identity part of the mean gradient. */
static void kernels(const aim_mlimit *m, const aim_gauss *g, double k[AIM_KERNEL_COUNT])
{
    aim_hierarchy_kernels(g, m->cfg.eta, m->cfg.gamma, k);
    if (m->raw)
        k[AIM_KERNEL_MEAN] = sqrt(m->d) * aim_gauss_error_mean(g);
}

/* How far the anchor may be: the cheap rule's error is a smooth function
 * of the state, so the corrected kernels' error is the full rule's at the
 * anchor plus the change of the cheap rule's error since the anchor, about
 * (its error) x (the relative move): with an eighth of the points (an
 * error up to 8 times the full rule's) and moves below 10 %, up to about
 * 0.8 of the full rule's own. Measured on Figure 1 (D = 100, 4 replicas,
 * the same steps and noise): every row within 1.2e-4 in the overlap and
 * 0.17 % in the risk of the full rule's run, against 1.1e-3 and 0.42 %
 * for the cheap rule alone (theory/matrix.md sec. 3). */
#define ANCHOR_MOVE 0.1

/* 1 when the order parameters q have moved from the anchor's by more than
 * ANCHOR_MOVE: Omega(S,S), Psi(S,S) relative to Omega(S,S) there, the
 * student-teacher ones relative to sqrt(Omega(S,S) Omega(S*,S*)). */
static int moved_from_anchor(const aim_mlimit *m, const aim_overlaps *q)
{
    const aim_overlaps *a = &m->anchor;
    const double self = fabs(a->omega[0][0]), cross = sqrt(self * fabs(a->omega[1][1]));
    return fabs(q->omega[0][0] - a->omega[0][0]) > ANCHOR_MOVE * self ||
           fabs(q->psi[0][0] - a->psi[0][0]) > ANCHOR_MOVE * self ||
           fabs(q->omega[0][1] - a->omega[0][1]) > ANCHOR_MOVE * cross ||
           fabs(q->psi[0][1] - a->psi[0][1]) > ANCHOR_MOVE * cross;
}

/* The kernels k and the risk at q, by the full rule, or by the cheap rule
 * corrected at the anchor (matrix.qmc_points; re-anchored when q has moved
 * from it). Returns 0, or -1 with the failing engine's message in
 * m->error. */
static int engine_kernels(aim_mlimit *m, const aim_overlaps *q, double k[AIM_KERNEL_COUNT])
{
    if (m->cheap && m->anchored && !moved_from_anchor(m, q)) {
        if (aim_gauss_eval(m->cheap, q))
            goto cheap_failed;
        kernels(m, m->cheap, k);
        for (int i = 0; i < AIM_KERNEL_COUNT; i++)
            k[i] += m->anchor_dk[i];
        m->risk = aim_gauss_risk(m->cheap) + m->anchor_drisk;
        return 0;
    }
    if (aim_gauss_eval(m->gauss, q)) {
        snprintf(m->error, sizeof m->error, "expectation engine at tau = %.6g: %s", m->tau,
                 aim_gauss_error(m->gauss));
        return -1;
    }
    kernels(m, m->gauss, k);
    m->risk = aim_gauss_risk(m->gauss);
    /* the cheap rule, once the full rule's point count is known (it may
     * be chosen at the first evaluation, ode.kernel_tol) */
    if (!m->cheap && !m->raw && m->cfg.matrix_qmc_points > 0 &&
        aim_gauss_points(m->gauss) >= 4 * m->cfg.matrix_qmc_points) {
        aim_config cheap = m->cfg;
        cheap.qmc_points = m->cfg.matrix_qmc_points;
        cheap.kernel_tol = 0.0;
        if (!(m->cheap = aim_gauss_create(&cheap, cheap.rule, aim_family_symmetric_pair(&cheap)))) {
            snprintf(m->error, sizeof m->error, "out of memory (the cheap rule)");
            return -1;
        }
    }
    if (!m->cheap)
        return 0;
    double kc[AIM_KERNEL_COUNT];
    if (aim_gauss_eval(m->cheap, q))
        goto cheap_failed;
    kernels(m, m->cheap, kc);
    for (int i = 0; i < AIM_KERNEL_COUNT; i++)
        m->anchor_dk[i] = k[i] - kc[i];
    m->anchor_drisk = m->risk - aim_gauss_risk(m->cheap);
    m->anchor = *q;
    m->anchored = 1;
    return 0;
cheap_failed:
    snprintf(m->error, sizeof m->error, "expectation engine (matrix.qmc_points) at tau = %.6g: %s",
             m->tau, aim_gauss_error(m->cheap));
    return -1;
}

/* The engine at a path's matrices (q: their order parameters, k: the
 * kernels there). Returns 0, 1 on blow-up, -1 when the engine fails. */
static int evaluate(aim_mlimit *m, mlimit_path *path, aim_overlaps *q,
                    double k[AIM_KERNEL_COUNT])
{
    path_overlaps(m, path, q);
    if (!isfinite(q->omega[0][0]) || q->omega[0][0] > m->cfg.blowup) {
        snprintf(m->error, sizeof m->error,
                 "blow-up: Omega(S,S) = %g passed ode.blowup = %g at tau = %.6g",
                 q->omega[0][0], m->cfg.blowup, m->tau);
        return 1;
    }
    if (m->raw && !isfinite(q->mean[0])) {
        snprintf(m->error, sizeof m->error, "blow-up: the student mean is %g at tau = %.6g",
                 q->mean[0], m->tau);
        return 1;
    }
    if (!m->raw)
        return engine_kernels(m, q, k);
    if (mean_rate(m, path, q) != 0) {
        snprintf(m->error, sizeof m->error, "expectation engine at tau = %.6g: %s", m->tau,
                 aim_gauss_error(m->gauss));
        return -1;
    }
    kernels(m, m->gauss, k);
    m->risk = aim_gauss_risk(m->gauss);
    return 0;
}

/* The step control (theory/matrix.md sec. 3): the largest relative change
 * of path 0's risk, and absolute change of its overlap, and relative
 * change of Omega(S,S), over the step that ended at q (the engine
 * evaluated there), sets the next step so that it is about
 * matrix.step_tol: h_next = h 0.9 tol / change, within [h / 5, 2 h];
 * and no longer than tol over the drift's rate, (|a_S| + |b_S|) times
 * the student's drift_scale at the kernels k there. */
static void control_step(aim_mlimit *m, const mlimit_path *path, const aim_overlaps *q,
                         const double k[AIM_KERNEL_COUNT], double h)
{
    const double risk = m->risk, ov = aim_overlaps_teacher_overlap(q),
                 omega = q->omega[0][0];
    if (!isnan(m->last_risk) && h > 0.0) {
        const double change =
            fmax(fabs(risk - m->last_risk) / fmax(fabs(m->last_risk), 1e-300),
                 fmax(fabs(ov - m->last_ov),
                      fabs(omega - m->last_omega) / fmax(m->last_omega, 1e-300)));
        const double f = change > 0.0 ? 0.9 * m->cfg.matrix_step_tol / change : 2.0;
        m->h_next = h * fmin(2.0, fmax(0.2, f));
    }
    /* a stiff balance moves the order parameters little while each step
     * moves the matrices much: the drift's own rate bounds the step too */
    const double rate = (fabs(k[AIM_KERNEL_A_S]) + fabs(k[AIM_KERNEL_B_S])) *
                        m->param->drift_scale(&path->st);
    if (rate > 0.0 && m->h_next > 0.0 && m->h_next * rate > m->cfg.matrix_step_tol)
        m->h_next = m->cfg.matrix_step_tol / rate;
    m->last_risk = risk;
    m->last_ov = ov;
    m->last_omega = omega;
}

/* The extrapolation assumes that the two paths differ by their
 * discretisation errors, O(h): where they part by more than this in the
 * teacher overlap, or by this fraction in Omega(S,S) (an unstable
 * direction amplifying their difference, at a small D), 2 x path 0 -
 * path 1 is no estimate of anything, and path 0 goes on alone (an
 * Euler-Maruyama path of steps h/2, error O(h)). */
#define PARTED 0.05

/* Every path evaluated at the current tau (q, k: per path), the weak
 * recovery watched, the paths' parting checked; h: the step that led
 * here (0: none), for the step control. Returns as evaluate. */
static int evaluate_paths(aim_mlimit *m, aim_overlaps q[2], double k[2][AIM_KERNEL_COUNT],
                          double h)
{
    for (int p = 0; p < m->paths; p++) {
        const int rc = evaluate(m, &m->path[p], &q[p], k[p]);
        if (rc)
            return rc;
        if (p == 0 && m->controlled)
            control_step(m, &m->path[0], &q[0], k[0], h);
    }
    if (m->paths > 1 &&
        (fabs(aim_overlaps_teacher_overlap(&q[0]) - aim_overlaps_teacher_overlap(&q[1])) >
             PARTED ||
         fabs(q[0].omega[0][0] - q[1].omega[0][0]) > PARTED * q[0].omega[0][0])) {
        m->paths = 1;
        m->parted = m->tau;
    }
    watch_recovery(m, q);
    return 0;
}

/* M = h Gbar + sign sqrt(h) Z for a path (see mlimit.h), Z from the
 * Gaussian matrix X (a symmetric student's step symmetrises it). */
static void step_matrix(aim_mlimit *m, const mlimit_path *path, double h,
                        const double k[AIM_KERNEL_COUNT], double sign, const double *X)
{
    const int D = m->D;
    const double ko = k[AIM_KERNEL_NOISE_O], kp = k[AIM_KERNEL_NOISE_P];
    /* c1 + c2 = sqrt(K_O + K_P), c1 - c2 = sqrt(K_O - K_P); K_O >= |K_P| by
     * Cauchy-Schwarz, up to the engine's round-off */
    const double sp = sqrt(fmax(ko + kp, 0.0)), sm = sqrt(fmax(ko - kp, 0.0));
    const double zs = sign * sqrt(h / D), c1 = 0.5 * (sp + sm) * zs,
                 c2 = 0.5 * (sp - sm) * zs;
    const double as = h * k[AIM_KERNEL_A_S], bs = h * k[AIM_KERNEL_B_S],
                 at = h * k[AIM_KERNEL_A_T], bt = h * k[AIM_KERNEL_B_T];
    const double *S = path->st.S, *T = m->St;
    for (int i = 0; i < D; i++)
        for (int j = 0; j < D; j++) {
            const size_t a = (size_t)i * D + j, b = (size_t)j * D + i;
            m->M[a] = as * S[a] + bs * S[b] + at * T[a] + bt * T[b] + c1 * X[a] + c2 * X[b];
        }
    const double lambda = h * k[AIM_KERNEL_MEAN];
    for (int i = 0; lambda != 0.0 && i < D; i++)
        m->M[(size_t)i * D + i] += lambda;
}

/* One step of a path: the student's own SGD rule with its gradient G
 * replaced by M (theory/matrix.md sec. 2) and weight decay h gamma per
 * factor. */
static void apply_step(aim_mlimit *m, mlimit_path *path, double h)
{
    m->param->step(&m->cfg, m->M, 1.0 - h * m->cfg.gamma, &path->st);
    form_student(m, path);
}

/* The step that resolves the raw mean's relaxation: 0.2 / rate keeps the
 * explicit step accurate to a few percent of the fast transient and far
 * from its stability limit 2 / rate. */
#define MEAN_STEP 0.2

/* One step of h from the paths' evaluation k. Euler: path 0 by h on the
 * noise X. Richardson: path 0 by two steps of h/2 on X and X2, path 1 by
 * one of h on (X + X2)/sqrt 2, the sum of the same Brownian increments
 * (theory/matrix.md sec. 3). Returns as evaluate (the mid-step
 * evaluation of path 0). */
static int step_paths(aim_mlimit *m, double h, double k[2][AIM_KERNEL_COUNT])
{
    const size_t dd = (size_t)m->D * m->D;
    aim_draw_gauss(m->noise, m->X, dd, 1.0);
    if (m->paths == 1) {
        step_matrix(m, &m->path[0], h, k[0], 1.0, m->X);
        apply_step(m, &m->path[0], h);
        return 0;
    }
    aim_draw_gauss(m->noise, m->X2, dd, 1.0);
    step_matrix(m, &m->path[0], 0.5 * h, k[0], 1.0, m->X);
    apply_step(m, &m->path[0], 0.5 * h);
    aim_overlaps q;
    double kmid[AIM_KERNEL_COUNT];
    const int rc = evaluate(m, &m->path[0], &q, kmid);
    if (rc)
        return rc;
    step_matrix(m, &m->path[0], 0.5 * h, kmid, 1.0, m->X2);
    apply_step(m, &m->path[0], 0.5 * h);
    for (size_t i = 0; i < dd; i++)
        m->X[i] = (m->X[i] + m->X2[i]) * M_SQRT1_2;
    step_matrix(m, &m->path[1], h, k[1], 1.0, m->X);
    apply_step(m, &m->path[1], h);
    return 0;
}

int aim_mlimit_advance(aim_mlimit *m, double span, double hmax)
{
    const long steps = (long)ceil(span / hmax - 1e-9);
    const double h0 = steps > 0 ? span / (double)steps : 0.0;
    double left = span;
    /* the first controlled step: a sixteenth of the first span, doubled
     * at most every step until the control finds its size */
    if (m->controlled && !(m->h_next > 0.0))
        m->h_next = fmin(span, hmax) / 16.0;
    /* the evaluation at tau: the one that ended the last advance, unless
     * the matrices moved since (or it failed) */
    int rc = m->fresh ? 0 : evaluate_paths(m, m->q_now, m->k_now, 0.0);
    if (rc)
        return rc;
    m->fresh = 1;
    while (left > 1e-12 * span) {
        double h = h0;
        if (m->controlled) {
            h = fmin(m->h_next, hmax);
            /* equal steps to the end of the span rather than a sliver */
            if (h < left && h > 0.5 * left)
                h = 0.5 * left;
        }
        for (int p = 0; m->raw && p < m->paths; p++)
            if (m->path[p].rate_mean * h > MEAN_STEP)
                h = MEAN_STEP / m->path[p].rate_mean;
        if (h > left)
            h = left;
        m->fresh = 0;
        if ((rc = step_paths(m, h, m->k_now)) != 0)
            return rc;
        m->steps++;
        m->tau += h;
        left -= h;
        /* a blow-up at the end of the span is reported now; an engine
         * failure there by the next advance, which evaluates again */
        if ((rc = evaluate_paths(m, m->q_now, m->k_now, h)) != 0)
            return left > 1e-12 * span || rc > 0 ? rc : 0;
        m->fresh = 1;
    }
    return 0;
}

/* Every observable of a path, the risk by the full rule, or by the cheap
 * one corrected at the anchor as the kernels are (engine_kernels) while
 * the state is near it. Returns 0 or -1. */
static int path_observables(aim_mlimit *m, const mlimit_path *path, double obs[AIM_OBS_COUNT])
{
    aim_overlaps q;
    path_overlaps(m, path, &q);
    aim_overlaps_observables(&q, obs);
    const int near = m->cheap && m->anchored && !moved_from_anchor(m, &q);
    aim_gauss *g = near ? m->cheap : m->gauss;
    if (aim_gauss_risk_at(g, &q, &obs[AIM_OBS_RISK])) {
        snprintf(m->error, sizeof m->error, "expectation engine at tau = %.6g: %s", m->tau,
                 aim_gauss_error(g));
        return -1;
    }
    if (near)
        obs[AIM_OBS_RISK] += m->anchor_drisk;
    return 0;
}

int aim_mlimit_observables(aim_mlimit *m, double obs[AIM_OBS_COUNT])
{
    double coarse[AIM_OBS_COUNT];
    for (int p = 0; p < m->paths; p++)
        if (path_observables(m, &m->path[p], p ? coarse : obs))
            return -1;
    for (int i = 0; m->paths > 1 && i < AIM_OBS_COUNT; i++)
        obs[i] = 2.0 * obs[i] - coarse[i];
    return 0;
}

/* The words of ws up to max_len on one path's matrices. */
static int path_words(aim_mlimit *m, const mlimit_path *path, const aim_wordset *ws,
                      int max_len, double *moments)
{
    const double *mats[AIM_ALPHABET_MAX];
    if (!m->letters &&
        !(m->letters = malloc(4 * sizeof *m->letters * (size_t)m->D * (size_t)m->D)))
        return -1;
    if (aim_words_letters(aim_wordset_alphabet(ws), path->st.S, m->St, path->st.F1,
                          path->st.F2, m->D, m->p, m->letters, mats))
        return -1;
    return aim_words_measure(ws, max_len, mats, m->D, moments) ? -1 : 0;
}

int aim_mlimit_words(aim_mlimit *m, const aim_wordset *ws, int max_len, double *moments)
{
    const int n = aim_wordset_count(ws);
    if (path_words(m, &m->path[0], ws, max_len, moments))
        return -1;
    if (m->paths < 2)
        return 0;
    double *coarse = malloc(sizeof *coarse * (size_t)n);
    const int rc = coarse ? path_words(m, &m->path[1], ws, max_len, coarse) : -1;
    for (int i = 0; rc == 0 && i < n; i++)
        if (aim_wordset_len(ws, i) <= max_len)
            moments[i] = 2.0 * moments[i] - coarse[i];
    free(coarse);
    return rc;
}

/* Path 0's matrices, into a path of their own (S and the factors only),
 * to return to after a trial step. Returns 0 or -1 (out of memory). */
static int save_state(const aim_mlimit *m, mlimit_path *saved)
{
    const mlimit_path *path = &m->path[0];
    const size_t dd = (size_t)m->D * m->D, dp = (size_t)m->D * m->p;
    saved->st.S = malloc(dd * sizeof *saved->st.S);
    saved->st.F1 = path->st.F1 ? malloc(dp * sizeof *saved->st.F1) : NULL;
    saved->st.F2 = path->st.F2 ? malloc(dp * sizeof *saved->st.F2) : NULL;
    if (!saved->st.S || (path->st.F1 && !saved->st.F1) || (path->st.F2 && !saved->st.F2))
        return -1;
    path_copy(m, saved, path);
    return 0;
}

int aim_mlimit_drift(aim_mlimit *m, const double *h, int nh, int pairs,
                     const aim_wordset *ws, int max_len, double *rate, double *rate_se)
{
    mlimit_path *path = &m->path[0];
    if (m->paths > 1) {
        snprintf(m->error, sizeof m->error,
                 "the one-step drift is that of matrix.scheme = euler (the step the "
                 "extrapolated scheme is made of)");
        return -1;
    }
    const int n = aim_wordset_count(ws);
    mlimit_path s = {0};
    double *m0 = malloc(sizeof *m0 * (size_t)n), *mp = malloc(sizeof *mp * (size_t)n),
           *mm = malloc(sizeof *mm * (size_t)n),
           *sq = calloc((size_t)n * (size_t)nh, sizeof *sq);
    int rc = -1;
    aim_overlaps q;
    double k[AIM_KERNEL_COUNT];
    if (!m0 || !mp || !mm || !sq || save_state(m, &s) || path_words(m, path, ws, max_len, m0))
        goto done;
    /* the kernels of the full rule at this very state (re-anchored here),
     * as the model's right-hand side it is checked against has them */
    m->anchored = 0;
    m->fresh = 0;
    if ((rc = evaluate(m, path, &q, k)) != 0)
        goto done;
    for (int i = 0; i < n * nh; i++)
        rate[i] = 0.0;
    rc = -1;
    for (int r = 0; r < pairs; r++) {
        aim_draw_gauss(m->noise, m->X, (size_t)m->D * m->D, 1.0);
        for (int j = 0; j < nh; j++) {
            for (int side = 0; side < 2; side++) {
                step_matrix(m, path, h[j], k, side ? -1.0 : 1.0, m->X);
                apply_step(m, path, h[j]);
                const int failed = path_words(m, path, ws, max_len, side ? mm : mp);
                path_copy(m, path, &s);
                if (failed)
                    goto done;
            }
            for (int i = 0; i < n; i++) {
                const double v = (mp[i] + mm[i] - 2.0 * m0[i]) / (2.0 * h[j]);
                rate[j * n + i] += v / pairs;
                sq[j * n + i] += v * v / pairs;
            }
        }
    }
    for (int i = 0; rate_se && i < n * nh; i++)
        rate_se[i] = pairs > 1 ? sqrt(fmax(sq[i] - rate[i] * rate[i], 0.0) / (pairs - 1)) : NAN;
    rc = 0;
done:
    if (rc < 0 && !m->error[0])
        snprintf(m->error, sizeof m->error, "out of memory");
    path_free(&s);
    free(m0);
    free(mp);
    free(mm);
    free(sq);
    return rc;
}

double aim_mlimit_tau(const aim_mlimit *m) { return m->tau; }

long aim_mlimit_steps(const aim_mlimit *m) { return m->steps; }

double aim_mlimit_parted(const aim_mlimit *m) { return m->parted; }

double aim_mlimit_recovery_time(const aim_mlimit *m) { return m->tau_wr; }

const char *aim_mlimit_error(const aim_mlimit *m) { return m->error; }
