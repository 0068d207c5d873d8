#include "outmap.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_sf_erf.h>
#include <gsl/gsl_sf_hermite.h>

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

/* Row softmax: f_ac = exp(beta h_ac) / sum_c' exp(beta h_ac'), and
 * d f_ac / d h_ab = beta f_ac (delta_cb - f_ab), zero across rows. */
static void softmax_apply(const aim_outmap *map, const double *h, double *f,
                          double *jac)
{
    const int T = map->tokens, n = T * T;
    for (int a = 0; a < T; a++) {
        const double *row = h + a * T;
        double top = row[0];
        for (int c = 1; c < T; c++)
            if (row[c] > top)
                top = row[c];
        double norm = 0.0;
        for (int c = 0; c < T; c++) {
            f[a * T + c] = exp(map->beta * (row[c] - top));
            norm += f[a * T + c];
        }
        for (int c = 0; c < T; c++)
            f[a * T + c] /= norm;
    }
    if (!jac)
        return;
    memset(jac, 0, sizeof(double) * (size_t)n * (size_t)n);
    for (int a = 0; a < T; a++)
        for (int c = 0; c < T; c++)
            for (int b = 0; b < T; b++) {
                double fac = f[a * T + c], fab = f[a * T + b];
                jac[(a * T + c) * n + (a * T + b)] =
                    map->beta * fac * ((c == b ? 1.0 : 0.0) - fab);
            }
}

void aim_outmap_apply(const aim_outmap *map, const double *h, double *f,
                      double *jac)
{
    const int n = map->tokens * map->tokens;
    if (map->kind == AIM_SOFTMAX) {
        softmax_apply(map, h, f, jac);
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
