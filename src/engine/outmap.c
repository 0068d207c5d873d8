#include "outmap.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_sf_erf.h>
#include <gsl/gsl_sf_hermite.h>

#ifdef AIM_HAVE_MVEC
#include <immintrin.h>
/* glibc's vector exponentials (libmvec, the x86-64 vector ABI): 2 lanes
 * on SSE2, 4 on AVX2; within 4 ulp of exp. */
__m128d _ZGVbN2v_exp(__m128d x);
__m256d _ZGVdN4v_exp(__m256d x);
#endif

struct aim_outmap {
    int tokens;
    aim_output_kind kind;
    aim_activation activation;
    double hermite[AIM_MAX_HERMITE];
    int degree;
    double beta;
};

aim_outmap *aim_outmap_create(const aim_config *cfg)
{
    aim_outmap *map = calloc(1, sizeof *map);
    if (!map)
        return NULL;
    map->tokens = cfg->tokens;
    map->kind = cfg->output;
    map->activation = cfg->activation;
    memcpy(map->hermite, cfg->hermite, sizeof map->hermite);
    map->degree = cfg->hermite_degree;
    map->beta = cfg->beta;
    return map;
}

void aim_outmap_free(aim_outmap *map) { free(map); }

int aim_outmap_is_elementwise(const aim_outmap *map)
{
    return map->kind == AIM_ELEMENTWISE;
}

double aim_outmap_sigma(const aim_outmap *map, double x)
{
    switch (map->activation) {
    case AIM_ACT_TANH:
        return tanh(x);
    case AIM_ACT_ERF:
        return gsl_sf_erf(x);
    case AIM_ACT_RELU:
        return x > 0.0 ? x : 0.0;
    case AIM_ACT_HERMITE:
    default:
        break;
    }
    double s = 0.0;
    for (int k = 0; k <= map->degree; k++)
        if (map->hermite[k] != 0.0)
            s += map->hermite[k] * gsl_sf_hermite_prob(k, x);
    return s;
}

double aim_outmap_dsigma(const aim_outmap *map, double x)
{
    switch (map->activation) {
    case AIM_ACT_TANH: {
        double th = tanh(x);
        return 1.0 - th * th;
    }
    case AIM_ACT_ERF:
        return M_2_SQRTPI * exp(-x * x);
    case AIM_ACT_RELU:
        return x > 0.0 ? 1.0 : 0.0;
    case AIM_ACT_HERMITE:
    default:
        break;
    }
    /* He_k' = k He_{k-1} for probabilists' Hermite polynomials. */
    double s = 0.0;
    for (int k = 1; k <= map->degree; k++)
        if (map->hermite[k] != 0.0)
            s += map->hermite[k] * k * gsl_sf_hermite_prob(k - 1, x);
    return s;
}

/* x_c = beta (row_c - max row): the exponents of a row softmax, whose
 * largest is 0 so that no exponential overflows. */
static void shifted_row(const aim_outmap *map, const double *row, double *x)
{
    const int T = map->tokens;
    double top = row[0];
    for (int c = 1; c < T; c++)
        if (row[c] > top)
            top = row[c];
    for (int c = 0; c < T; c++)
        x[c] = map->beta * (row[c] - top);
}

/* Row softmax: f_ac = exp(beta h_ac) / sum_c' exp(beta h_ac'). */
static void softmax_forward(const aim_outmap *map, const double *h, double *f)
{
    const int T = map->tokens;
    for (int a = 0; a < T; a++) {
        shifted_row(map, h + a * T, f + a * T);
        double norm = 0.0;
        for (int c = 0; c < T; c++) {
            f[a * T + c] = exp(f[a * T + c]);
            norm += f[a * T + c];
        }
        const double inv = 1.0 / norm;
        for (int c = 0; c < T; c++)
            f[a * T + c] *= inv;
    }
}

#ifdef AIM_HAVE_MVEC
__attribute__((target("avx2"))) static void exp_avx2(double *x, int n)
{
    for (int i = 0; i < n; i += 4)
        _mm256_storeu_pd(x + i, _ZGVdN4v_exp(_mm256_loadu_pd(x + i)));
}
#endif

/* x_i = exp(x_i) for i < n, x padded to a multiple of 4. The engine's
 * quasi-random rule takes one row softmax per point and side, and glibc's
 * scalar exp was a third of its time; libmvec's vector forms take 2 (SSE2)
 * to 4 (AVX2) at once at a quarter to a half of the cost. Which form runs
 * is fixed per machine, so that results stay bit for bit the same from
 * run to run. */
static void exp_block(double *x, int n)
{
#ifdef AIM_HAVE_MVEC
    /* asked at every call (a read of what the loader recorded): a static
     * flag set lazily would be a data race between the engine's threads */
    if (__builtin_cpu_supports("avx2")) {
        exp_avx2(x, n);
        return;
    }
    for (int i = 0; i < n; i += 2)
        _mm_storeu_pd(x + i, _ZGVbN2v_exp(_mm_loadu_pd(x + i)));
#else
    for (int i = 0; i < n; i++)
        x[i] = exp(x[i]);
#endif
}

/* Row softmax as softmax_forward, every row's exponentials in one
 * exp_block call (the expectation engine's form; the SGD keeps
 * softmax_forward). */
static void softmax_forward_block(const aim_outmap *map, const double *h, double *f)
{
    const int T = map->tokens, n = T * T;
    double x[AIM_MAX_TOKENS * AIM_MAX_TOKENS + 3];
    for (int a = 0; a < T; a++)
        shifted_row(map, h + a * T, x + a * T);
    for (int i = n; i < ((n + 3) & ~3); i++)
        x[i] = 0.0;
    exp_block(x, n);
    for (int a = 0; a < T; a++) {
        double norm = 0.0;
        for (int c = 0; c < T; c++)
            norm += x[a * T + c];
        const double inv = 1.0 / norm;
        for (int c = 0; c < T; c++)
            f[a * T + c] = x[a * T + c] * inv;
    }
}

/* fm = softmax(-D) from fp = softmax(D) without exponentials: row by
 * row, exp(-beta D_c) is proportional to 1 / fp_c, scaled here by the
 * row's smallest fp so that it stays <= 1. Returns -1 when an fp_c
 * underflowed (a row range of beta D beyond about 700), where the
 * reciprocal is not available. */
static int softmax_reflect(const aim_outmap *map, const double *fp, double *fm)
{
    const int T = map->tokens;
    for (int a = 0; a < T; a++) {
        const double *pa = fp + a * T;
        double low = pa[0];
        for (int c = 1; c < T; c++)
            if (pa[c] < low)
                low = pa[c];
        if (!(low >= DBL_MIN))
            return -1;
        double norm = 0.0;
        for (int c = 0; c < T; c++) {
            fm[a * T + c] = low / pa[c];
            norm += fm[a * T + c];
        }
        const double inv = 1.0 / norm;
        for (int c = 0; c < T; c++)
            fm[a * T + c] *= inv;
    }
    return 0;
}

/* d f_ac / d h_ab = beta f_ac (delta_cb - f_ab), zero across rows. */
static void softmax_jacobian(const aim_outmap *map, const double *f, double *jac)
{
    const int T = map->tokens, n = T * T;
    memset(jac, 0, sizeof(double) * (size_t)n * (size_t)n);
    for (int a = 0; a < T; a++)
        for (int c = 0; c < T; c++)
            for (int b = 0; b < T; b++) {
                double fac = f[a * T + c], fab = f[a * T + b];
                jac[(a * T + c) * n + (a * T + b)] =
                    map->beta * fac * ((c == b ? 1.0 : 0.0) - fab);
            }
}

void aim_outmap_forward(const aim_outmap *map, const double *h, double *f,
                        double *deriv)
{
    const int n = map->tokens * map->tokens;
    if (map->kind == AIM_SOFTMAX) {
        softmax_forward(map, h, f);
        return;
    }
    for (int i = 0; i < n; i++)
        f[i] = aim_outmap_sigma(map, h[i]);
    for (int i = 0; deriv && i < n; i++)
        deriv[i] = aim_outmap_dsigma(map, h[i]);
}

void aim_outmap_forward_pair(const aim_outmap *map, const double *m, const double *D,
                             double *fp, double *fm, double *derivp, double *derivm)
{
    const int n = map->tokens * map->tokens;
    double h[AIM_MAX_TOKENS * AIM_MAX_TOKENS] = {0};
    int centred = 1;
    for (int i = 0; i < n; i++) {
        h[i] = m[i] + D[i];
        centred = centred && m[i] == 0.0;
    }
    if (map->kind != AIM_SOFTMAX) {
        aim_outmap_forward(map, h, fp, derivp);
        for (int i = 0; i < n; i++)
            h[i] = m[i] - D[i];
        aim_outmap_forward(map, h, fm, derivm);
        return;
    }
    softmax_forward_block(map, h, fp);
    if (centred && softmax_reflect(map, fp, fm) == 0)
        return;
    for (int i = 0; i < n; i++)
        h[i] = m[i] - D[i];
    softmax_forward_block(map, h, fm);
}

#define LANES AIM_OUTMAP_LANES

/* softmax_forward_block at h = m + D (sign 1) or m - D (sign -1) for
 * LANES points (D, f interleaved), each with the same operations in the
 * same order (m + -D is m - D exactly). */
AIM_VECTOR_CLONES
static void softmax_block_lanes(const aim_outmap *map, const double *m, const double *D,
                                double sign, double *f)
{
    const int T = map->tokens, n = T * T;
    double x[AIM_MAX_TOKENS * AIM_MAX_TOKENS * LANES];
    for (int a = 0; a < T; a++) {
        double row[AIM_MAX_TOKENS * LANES], top[LANES];
        for (int c = 0; c < T; c++)
            for (int l = 0; l < LANES; l++)
                row[c * LANES + l] = m[a * T + c] + sign * D[(a * T + c) * LANES + l];
        for (int l = 0; l < LANES; l++)
            top[l] = row[l];
        for (int c = 1; c < T; c++)
            for (int l = 0; l < LANES; l++)
                top[l] = row[c * LANES + l] > top[l] ? row[c * LANES + l] : top[l];
        for (int c = 0; c < T; c++)
            for (int l = 0; l < LANES; l++)
                x[(a * T + c) * LANES + l] = map->beta * (row[c * LANES + l] - top[l]);
    }
    exp_block(x, n * LANES);
    for (int a = 0; a < T; a++) {
        double norm[LANES] = {0};
        for (int c = 0; c < T; c++)
            for (int l = 0; l < LANES; l++)
                norm[l] += x[(a * T + c) * LANES + l];
        double inv[LANES];
        for (int l = 0; l < LANES; l++)
            inv[l] = 1.0 / norm[l];
        for (int c = 0; c < T; c++)
            for (int l = 0; l < LANES; l++)
                f[(a * T + c) * LANES + l] = x[(a * T + c) * LANES + l] * inv[l];
    }
}

/* softmax_reflect for LANES points (fp, fm interleaved); returns -1 when
 * an fp_c of some point underflowed (that point's fm then not set). */
AIM_VECTOR_CLONES
static int softmax_reflect_lanes(const aim_outmap *map, const double *fp, double *fm)
{
    const int T = map->tokens;
    int ok = 1;
    for (int a = 0; a < T; a++) {
        const double *pa = fp + a * T * LANES;
        double low[LANES], norm[LANES] = {0}, inv[LANES];
        for (int l = 0; l < LANES; l++)
            low[l] = pa[l];
        for (int c = 1; c < T; c++)
            for (int l = 0; l < LANES; l++)
                low[l] = pa[c * LANES + l] < low[l] ? pa[c * LANES + l] : low[l];
        for (int l = 0; l < LANES; l++)
            ok = ok && low[l] >= DBL_MIN;
        for (int c = 0; c < T; c++)
            for (int l = 0; l < LANES; l++) {
                fm[(a * T + c) * LANES + l] = low[l] / pa[c * LANES + l];
                norm[l] += fm[(a * T + c) * LANES + l];
            }
        for (int l = 0; l < LANES; l++)
            inv[l] = 1.0 / norm[l];
        for (int c = 0; c < T; c++)
            for (int l = 0; l < LANES; l++)
                fm[(a * T + c) * LANES + l] *= inv[l];
    }
    return ok ? 0 : -1;
}

AIM_VECTOR_CLONES
void aim_outmap_forward_lanes(const aim_outmap *map, const double *m, const double *D,
                              double *fp, double *fm, double *derivp, double *derivm)
{
    const int n = map->tokens * map->tokens;
    if (map->kind != AIM_SOFTMAX) { /* elementwise: every lane alike */
        for (int i = 0; i < n * LANES; i++) {
            const double hp = m[i / LANES] + D[i], hm = m[i / LANES] - D[i];
            fp[i] = aim_outmap_sigma(map, hp);
            fm[i] = aim_outmap_sigma(map, hm);
            if (derivp)
                derivp[i] = aim_outmap_dsigma(map, hp);
            if (derivm)
                derivm[i] = aim_outmap_dsigma(map, hm);
        }
        return;
    }
    int centred = 1;
    for (int i = 0; i < n; i++)
        centred = centred && m[i] == 0.0;
    softmax_block_lanes(map, m, D, 1.0, fp);
    if (centred && softmax_reflect_lanes(map, fp, fm) == 0)
        return;
    if (!centred) {
        softmax_block_lanes(map, m, D, -1.0, fm);
        return;
    }
    /* an underflow: each point as aim_outmap_forward_pair takes it */
    for (int l = 0; l < LANES; l++) {
        double one[AIM_MAX_TOKENS * AIM_MAX_TOKENS] = {0}, fone[AIM_MAX_TOKENS * AIM_MAX_TOKENS];
        for (int i = 0; i < n; i++)
            one[i] = fp[i * LANES + l];
        if (softmax_reflect(map, one, fone) != 0) {
            for (int i = 0; i < n; i++)
                one[i] = m[i] - D[i * LANES + l];
            softmax_forward_block(map, one, fone);
        }
        for (int i = 0; i < n; i++)
            fm[i * LANES + l] = fone[i];
    }
}

AIM_VECTOR_CLONES
void aim_outmap_pullback_lanes(const aim_outmap *map, const double *f, const double *deriv,
                               const double *r, double *e)
{
    const int T = map->tokens;
    if (map->kind != AIM_SOFTMAX) {
        for (int i = 0; i < T * T * LANES; i++)
            e[i] = deriv[i] * r[i];
        return;
    }
    for (int a = 0; a < T; a++) {
        const double *fa = f + a * T * LANES, *ra = r + a * T * LANES;
        double dot[LANES] = {0};
        for (int c = 0; c < T; c++)
            for (int l = 0; l < LANES; l++)
                dot[l] += fa[c * LANES + l] * ra[c * LANES + l];
        for (int b = 0; b < T; b++)
            for (int l = 0; l < LANES; l++)
                e[(a * T + b) * LANES + l] =
                    map->beta * fa[b * LANES + l] * (ra[b * LANES + l] - dot[l]);
    }
}

void aim_outmap_pullback(const aim_outmap *map, const double *f, const double *deriv,
                         const double *r, double *e)
{
    const int T = map->tokens;
    if (map->kind != AIM_SOFTMAX) {
        for (int i = 0; i < T * T; i++)
            e[i] = deriv[i] * r[i];
        return;
    }
    /* row a: beta (diag f_a - f_a f_a^T) r_a */
    for (int a = 0; a < T; a++) {
        const double *fa = f + a * T, *ra = r + a * T;
        double dot = 0.0;
        for (int c = 0; c < T; c++)
            dot += fa[c] * ra[c];
        for (int b = 0; b < T; b++)
            e[a * T + b] = map->beta * fa[b] * (ra[b] - dot);
    }
}

void aim_outmap_gram(const aim_outmap *map, const double *f, const double *deriv,
                     const double *C, double *omega, double *psi)
{
    const int T = map->tokens;
    double so = 0.0, sp = 0.0;
    if (map->kind != AIM_SOFTMAX) {
        /* J^T J = diag(sigma'^2) */
        for (int a = 0; a < T; a++)
            for (int b = 0; b < T; b++) {
                const double d2 = deriv[a * T + b] * deriv[a * T + b];
                so += C[a * T + a] * C[b * T + b] * d2;
                sp += C[a * T + b] * C[b * T + a] * d2;
            }
        *omega = so;
        *psi = sp;
        return;
    }
    /* Per row, J_a = beta (D - f f^T) with D = diag f_a is symmetric, and
     * J_a^2 = beta^2 (D^2 - g f^T - f g^T + |f|^2 f f^T), g = D f:
     * omega = sum_a C_aa tr(J_a^2 C), psi = sum_a |J_a c_a|^2 (c_a row a). */
    const double b2 = map->beta * map->beta;
    for (int a = 0; a < T; a++) {
        const double *fa = f + a * T, *ca = C + a * T;
        double g[AIM_MAX_TOKENS], Cf[AIM_MAX_TOKENS];
        double ff = 0.0, dcf = 0.0, fcf = 0.0, gcf = 0.0, fc = 0.0;
        for (int b = 0; b < T; b++) {
            g[b] = fa[b] * fa[b];
            ff += g[b];
            dcf += g[b] * C[b * T + b];
            fc += fa[b] * ca[b];
            double s = 0.0;
            for (int c = 0; c < T; c++)
                s += C[b * T + c] * fa[c];
            Cf[b] = s;
        }
        for (int b = 0; b < T; b++) {
            fcf += fa[b] * Cf[b];
            gcf += g[b] * Cf[b];
        }
        so += C[a * T + a] * b2 * (dcf - 2.0 * gcf + ff * fcf);
        double jc2 = 0.0;
        for (int b = 0; b < T; b++) {
            const double jc = fa[b] * (ca[b] - fc);
            jc2 += jc * jc;
        }
        sp += b2 * jc2;
    }
    *omega = so;
    *psi = sp;
}

void aim_outmap_apply(const aim_outmap *map, const double *h, double *f,
                      double *jac)
{
    const int n = map->tokens * map->tokens;
    if (map->kind == AIM_SOFTMAX) {
        softmax_forward(map, h, f);
        if (jac)
            softmax_jacobian(map, f, jac);
        return;
    }
    for (int i = 0; i < n; i++)
        f[i] = aim_outmap_sigma(map, h[i]);
    if (!jac)
        return;
    memset(jac, 0, sizeof(double) * (size_t)n * (size_t)n);
    for (int i = 0; i < n; i++)
        jac[i * n + i] = aim_outmap_dsigma(map, h[i]);
}
