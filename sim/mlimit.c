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

struct aim_mlimit {
    aim_config cfg;
    const aim_matrix_param *param; /* the student's parametrisation */
    aim_matrix_student st;         /* S (tied W W^T, untied U V^T), its factors */
    double *St;         /* teacher */
    double *M;          /* D x D: h Gbar + sqrt(h) Z of the step */
    double *X;          /* D x D: the step's Gaussian matrix */
    double *letters;    /* 4 D x D for aim_words_letters */
    double tr_t, omega_tt, psi_tt;
    int raw;            /* raw centring: the mean moves, lambda = sqrt(d) E_C */
    double d;           /* raw: the dimension of the runs (sqrt d scales the mean) */
    double rate_mean;   /* raw: |d mu/d tau| per unit of mu - mu*, last evaluation */
    double threshold;   /* weak recovery: |overlap| to reach */
    double last_overlap, last_tau; /* at the previous evaluation */
    double tau_wr;      /* first crossing of the threshold, NAN before */
    aim_gauss *gauss;
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

/* The student matrix from its factors, as its family forms one (none when
 * S is learned itself). */
static void form_student(aim_mlimit *m)
{
    const aim_family *family = aim_family_of(m->cfg.decomposition);
    if (family->form)
        family->form(m->st.F1, m->st.F2, m->st.D, m->st.p, m->st.S);
}

/* Raw centring: sqrt(d) turns the O(1/D) trace deviations of the drawn
 * matrices into O(sqrt(d)/D) deviations of the index means. The
 * teacher's trace is set to its limit value plus the mean shift m* / sqrt(d)
 * of the runs, so that its index mean is m* as in the limit hierarchy; the
 * student's random trace, which breaks the symmetry of an unstable start
 * mean as SGD's does, is rescaled by D/d to the spread of the runs'
 * (unchanged when D = d: the replica starts where SGD seed r does). */
static void raw_traces(aim_mlimit *m)
{
    const int D = m->st.D;
    double omega, psi, trace;
    aim_family_start_overlaps(&m->cfg.teacher, &omega, &psi, &trace);
    const double shift =
        trace + m->cfg.teacher.mean / sqrt(m->d) - trace_of(m->St, D) / D;
    for (int i = 0; i < D; i++)
        m->St[(size_t)i * D + i] += shift;
    m->param->raw_trace(&m->st, (double)D / m->d - 1.0);
}

void aim_mlimit_free(aim_mlimit *m)
{
    if (!m)
        return;
    free(m->st.S);
    free(m->St);
    free(m->st.F1);
    free(m->st.F2);
    free(m->M);
    free(m->X);
    free(m->st.work);
    free(m->st.dF1);
    free(m->st.dF2);
    free(m->letters);
    aim_gauss_free(m->gauss);
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
    /* aim_mlimit_create: S, St, M, X, the step's work matrices, a factor
     * and its change per factor; save_state: S and the factors again;
     * aim_mlimit_words: the letters and aim_words_measure's stack */
    const double words = ops->hierarchy ? 4 + (cfg->order > 2 ? cfg->order - 2 : 0) : 0;
    return 8 * ((4 + param->work + 1 + words) * dd + 3 * factors * dp);
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
    m->st.D = D;
    m->raw = cfg->centring == AIM_RAW;
    m->d = d;
    m->threshold = cfg->recovery_threshold;
    m->tau_wr = NAN;
    m->last_overlap = NAN;
    m->param = param;
    const int factored = param->factors > 0;
    m->st.p = factored ? aim_config_columns(&cfg->student, D) : 0;
    const size_t dd = (size_t)D * D, dp = (size_t)D * (size_t)m->st.p;
    m->st.S = malloc(dd * sizeof *m->st.S);
    m->St = malloc(dd * sizeof *m->St);
    m->M = malloc(dd * sizeof *m->M);
    m->X = malloc(dd * sizeof *m->X);
    if (param->work)
        m->st.work = malloc((size_t)param->work * dd * sizeof *m->st.work);
    if (factored) {
        m->st.F1 = malloc(dp * sizeof *m->st.F1);
        m->st.dF1 = malloc(dp * sizeof *m->st.dF1);
    }
    if (param->factors > 1) {
        m->st.F2 = malloc(dp * sizeof *m->st.F2);
        m->st.dF2 = malloc(dp * sizeof *m->st.dF2);
    }
    m->gauss = aim_gauss_create(cfg, cfg->rule, aim_family_symmetric_pair(cfg));
    /* the noise plays the part of SGD's data stream */
    m->noise = aim_draw_rng(seed, AIM_DRAW_DATA);
    gsl_rng *rt = aim_draw_rng(seed, AIM_DRAW_TEACHER);
    gsl_rng *rs = aim_draw_rng(seed, AIM_DRAW_STUDENT);
    int ok = m->st.S && m->St && m->M && m->X && m->gauss && m->noise && rt && rs &&
             (!factored || (m->st.F1 && m->st.dF1)) && (!param->work || m->st.work) &&
             (param->factors < 2 || (m->st.F2 && m->st.dF2));
    if (ok && aim_draw_teacher(cfg, rt, m->St, D) != 0)
        ok = 0;
    if (ok) {
        aim_draw_student(cfg, rs, D, m->st.p, param->factors, factored ? m->st.F1 : m->st.S,
                         m->st.F2);
        if (aim_draw_inform(cfg, seed, D, m->st.p, param->factors, m->St,
                            factored ? m->st.F1 : m->st.S, m->st.F2))
            ok = 0;
    }
    if (ok) {
        if (m->raw)
            raw_traces(m);
        form_student(m);
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

void aim_mlimit_overlaps(const aim_mlimit *m, aim_overlaps *q)
{
    const int D = m->st.D;
    const size_t dd = (size_t)D * D;
    memset(q, 0, sizeof *q);
    q->omega[0][0] = cblas_ddot((int)dd, m->st.S, 1, m->st.S, 1) / D;
    q->psi[0][0] = tr_ab(m->st.S, m->st.S, D) / D;
    q->omega[0][1] = q->omega[1][0] = cblas_ddot((int)dd, m->st.S, 1, m->St, 1) / D;
    q->psi[0][1] = q->psi[1][0] = tr_ab(m->st.S, m->St, D) / D;
    q->omega[1][1] = m->omega_tt;
    q->psi[1][1] = m->psi_tt;
    q->trace[0] = trace_of(m->st.S, D) / D;
    q->trace[1] = m->tr_t / D;
    if (m->raw) {
        q->mean[0] = sqrt(m->d) * q->trace[0];
        q->mean[1] = sqrt(m->d) * q->trace[1];
    }
}

/* The mean's relaxation rate in raw centring: d mu/d tau = -d c E_C(mu) +
 * slower terms, c = m(A) + m(B) (untied) or 1 (direct), so the rate is
 * d c |dE_C/dmu| (theory/matrix.md sec. 5); the step must resolve it. From
 * a central difference of the engine's E_C, which leaves the engine
 * evaluated at q. */
static int mean_rate(aim_mlimit *m, aim_overlaps *q)
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
    const double c = m->param->mean_coupling(&m->st);
    m->rate_mean = m->d * c * fabs(e[0] - e[1]) / (2.0 * dmu);
    return aim_gauss_eval(m->gauss, q);
}

/* Weak recovery: the first step at which |overlap| reaches the threshold,
 * the crossing interpolated linearly within the step (an O(h^2) error). */
static void watch_recovery(aim_mlimit *m, const aim_overlaps *q)
{
    const double v = fabs(aim_overlaps_teacher_overlap(q));
    if (isnan(m->tau_wr) && v >= m->threshold)
        m->tau_wr = isnan(m->last_overlap) || v == m->last_overlap
                        ? m->tau
                        : m->last_tau + (m->threshold - m->last_overlap) /
                                            (v - m->last_overlap) * (m->tau - m->last_tau);
    m->last_overlap = v;
    m->last_tau = m->tau;
}

/* The engine at the current matrices. */
static int evaluate(aim_mlimit *m, aim_overlaps *q)
{
    aim_mlimit_overlaps(m, q);
    if (m->last_tau != m->tau || isnan(m->last_overlap))
        watch_recovery(m, q);
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
    if ((m->raw ? mean_rate(m, q) : aim_gauss_eval(m->gauss, q)) != 0) {
        snprintf(m->error, sizeof m->error, "expectation engine at tau = %.6g: %s", m->tau,
                 aim_gauss_error(m->gauss));
        return -1;
    }
    return 0;
}

/* The kernels at the last evaluation; raw: lambda = sqrt(d) E_C, the
 * identity part of the mean gradient. */
static void kernels(const aim_mlimit *m, double k[AIM_KERNEL_COUNT])
{
    aim_hierarchy_kernels(m->gauss, m->cfg.eta, m->cfg.gamma, k);
    if (m->raw)
        k[AIM_KERNEL_MEAN] = sqrt(m->d) * aim_gauss_error_mean(m->gauss);
}

/* M = h Gbar + sign sqrt(h) Z (see mlimit.h), Z from the Gaussian matrix
 * m->X (a symmetric student's step symmetrises it). */
static void step_matrix(aim_mlimit *m, double h, const double k[AIM_KERNEL_COUNT],
                        double sign)
{
    const int D = m->st.D;
    const double ko = k[AIM_KERNEL_NOISE_O], kp = k[AIM_KERNEL_NOISE_P];
    /* c1 + c2 = sqrt(K_O + K_P), c1 - c2 = sqrt(K_O - K_P); K_O >= |K_P| by
     * Cauchy-Schwarz, up to the engine's round-off */
    const double sp = sqrt(fmax(ko + kp, 0.0)), sm = sqrt(fmax(ko - kp, 0.0));
    const double zs = sign * sqrt(h / D), c1 = 0.5 * (sp + sm) * zs,
                 c2 = 0.5 * (sp - sm) * zs;
    const double as = h * k[AIM_KERNEL_A_S], bs = h * k[AIM_KERNEL_B_S],
                 at = h * k[AIM_KERNEL_A_T], bt = h * k[AIM_KERNEL_B_T];
    const double *S = m->st.S, *T = m->St, *X = m->X;
    for (int i = 0; i < D; i++)
        for (int j = 0; j < D; j++) {
            const size_t a = (size_t)i * D + j, b = (size_t)j * D + i;
            m->M[a] = as * S[a] + bs * S[b] + at * T[a] + bt * T[b] + c1 * X[a] + c2 * X[b];
        }
    const double lambda = h * k[AIM_KERNEL_MEAN];
    for (int i = 0; lambda != 0.0 && i < D; i++)
        m->M[(size_t)i * D + i] += lambda;
}

/* One step: the student's own SGD rule with its gradient G replaced by M
 * (theory/matrix.md sec. 2) and weight decay h gamma per factor. */
static void apply_step(aim_mlimit *m, double h)
{
    m->param->step(&m->cfg, m->M, 1.0 - h * m->cfg.gamma, &m->st);
    form_student(m);
}

/* The step that resolves the raw mean's relaxation: 0.2 / rate keeps the
 * explicit step accurate to a few percent of the fast transient and far
 * from its stability limit 2 / rate. */
#define MEAN_STEP 0.2

int aim_mlimit_advance(aim_mlimit *m, double span, double hmax)
{
    const long steps = (long)ceil(span / hmax - 1e-9);
    const double h0 = steps > 0 ? span / (double)steps : 0.0;
    double left = span;
    while (left > 1e-12 * span) {
        aim_overlaps q;
        const int rc = evaluate(m, &q);
        if (rc)
            return rc;
        double h = h0;
        if (m->raw && m->rate_mean * h > MEAN_STEP)
            h = MEAN_STEP / m->rate_mean;
        if (h > left)
            h = left;
        double k[AIM_KERNEL_COUNT];
        kernels(m, k);
        aim_draw_gauss(m->noise, m->X, (size_t)m->st.D * m->st.D, 1.0);
        step_matrix(m, h, k, 1.0);
        apply_step(m, h);
        m->tau += h;
        left -= h;
    }
    aim_overlaps q;
    return evaluate(m, &q) > 0 ? 1 : 0;
}

int aim_mlimit_observables(aim_mlimit *m, double obs[AIM_OBS_COUNT])
{
    aim_overlaps q;
    aim_mlimit_overlaps(m, &q);
    if (aim_gauss_observables(m->gauss, &q, obs)) {
        snprintf(m->error, sizeof m->error, "expectation engine at tau = %.6g: %s", m->tau,
                 aim_gauss_error(m->gauss));
        return -1;
    }
    return 0;
}

int aim_mlimit_words(aim_mlimit *m, const aim_wordset *ws, int max_len,
                     double *moments)
{
    const double *mats[AIM_ALPHABET_MAX];
    if (!m->letters &&
        !(m->letters = malloc(4 * sizeof *m->letters * (size_t)m->st.D * (size_t)m->st.D)))
        return -1;
    if (aim_words_letters(aim_wordset_alphabet(ws), m->st.S, m->St, m->st.F1,
                          m->st.F2, m->st.D, m->st.p,
                          m->letters, mats))
        return -1;
    return aim_words_measure(ws, max_len, mats, m->st.D, moments) ? -1 : 0;
}

/* The state to return to after a trial step. */
typedef struct {
    double *S, *F1, *F2;
} saved_state;

static int save_state(const aim_mlimit *m, saved_state *s)
{
    const size_t dd = (size_t)m->st.D * m->st.D, dp = (size_t)m->st.D * m->st.p;
    s->S = malloc(dd * sizeof *s->S);
    s->F1 = dp ? malloc(dp * sizeof *s->F1) : NULL;
    s->F2 = m->st.F2 ? malloc(dp * sizeof *s->F2) : NULL;
    if (!s->S || (dp && !s->F1) || (m->st.F2 && !s->F2))
        return -1;
    memcpy(s->S, m->st.S, dd * sizeof *s->S);
    if (dp)
        memcpy(s->F1, m->st.F1, dp * sizeof *s->F1);
    if (m->st.F2)
        memcpy(s->F2, m->st.F2, dp * sizeof *s->F2);
    return 0;
}

static void restore_state(aim_mlimit *m, const saved_state *s)
{
    const size_t dd = (size_t)m->st.D * m->st.D, dp = (size_t)m->st.D * m->st.p;
    memcpy(m->st.S, s->S, dd * sizeof *s->S);
    if (dp)
        memcpy(m->st.F1, s->F1, dp * sizeof *s->F1);
    if (m->st.F2)
        memcpy(m->st.F2, s->F2, dp * sizeof *s->F2);
}

int aim_mlimit_drift(aim_mlimit *m, const double *h, int nh, int pairs,
                     const aim_wordset *ws, int max_len, double *rate, double *rate_se)
{
    const int n = aim_wordset_count(ws);
    saved_state s = {0};
    double *m0 = malloc(sizeof *m0 * (size_t)n), *mp = malloc(sizeof *mp * (size_t)n),
           *mm = malloc(sizeof *mm * (size_t)n),
           *sq = calloc((size_t)n * (size_t)nh, sizeof *sq);
    int rc = -1;
    aim_overlaps q;
    if (!m0 || !mp || !mm || !sq || save_state(m, &s) || aim_mlimit_words(m, ws, max_len, m0))
        goto done;
    if ((rc = evaluate(m, &q)) != 0)
        goto done;
    double k[AIM_KERNEL_COUNT];
    kernels(m, k);
    for (int i = 0; i < n * nh; i++)
        rate[i] = 0.0;
    rc = -1;
    for (int r = 0; r < pairs; r++) {
        aim_draw_gauss(m->noise, m->X, (size_t)m->st.D * m->st.D, 1.0);
        for (int j = 0; j < nh; j++) {
            for (int side = 0; side < 2; side++) {
                step_matrix(m, h[j], k, side ? -1.0 : 1.0);
                apply_step(m, h[j]);
                const int failed = aim_mlimit_words(m, ws, max_len, side ? mm : mp);
                restore_state(m, &s);
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
    free(s.S);
    free(s.F1);
    free(s.F2);
    free(m0);
    free(mp);
    free(mm);
    free(sq);
    return rc;
}

double aim_mlimit_tau(const aim_mlimit *m) { return m->tau; }

double aim_mlimit_recovery_time(const aim_mlimit *m) { return m->tau_wr; }

const char *aim_mlimit_error(const aim_mlimit *m) { return m->error; }
