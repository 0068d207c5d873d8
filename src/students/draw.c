/* aim_draw: initial matrices (see draw.h). */
#include "draw.h"
#include "family.h"
#include "inform.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <gsl/gsl_randist.h>

static uint64_t splitmix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

gsl_rng *aim_draw_rng(uint64_t seed, unsigned stream)
{
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    if (!r)
        return NULL;
    uint64_t h = splitmix64(seed * 4u + stream);
    unsigned long s = (unsigned long)((h ^ (h >> 32)) & 0xffffffffUL);
    gsl_rng_set(r, s ? s : 1UL);
    return r;
}

gsl_rng *aim_draw_restart_rng(uint64_t seed, uint64_t saved_seed, long saved_step)
{
    const uint64_t mixed =
        splitmix64(splitmix64(splitmix64(seed) ^ saved_seed) ^ (uint64_t)saved_step);
    return aim_draw_rng(mixed, AIM_DRAW_DATA);
}

void aim_draw_gauss(gsl_rng *r, double *A, size_t n, double sd)
{
    for (size_t i = 0; i < n; i++)
        A[i] = gsl_ran_gaussian_ziggurat(r, sd);
}

void aim_draw_direct(gsl_rng *r, double *S, int d, double v, int symmetric)
{
    aim_draw_gauss(r, S, (size_t)d * d, sqrt(v / d));
    if (!symmetric)
        return;
    const double sqrt2 = sqrt(2.0);
    for (int p = 0; p < d; p++) {
        S[(size_t)p * d + p] *= sqrt2;
        for (int q = p + 1; q < d; q++) {
            double s = (S[(size_t)p * d + q] + S[(size_t)q * d + p]) / sqrt2;
            S[(size_t)p * d + q] = s;
            S[(size_t)q * d + p] = s;
        }
    }
}

int aim_draw_teacher(const aim_config *cfg, gsl_rng *r, double *St, int d)
{
    const aim_matrix_spec *t = &cfg->teacher;
    const aim_family *family = aim_family_of(t->decomposition);
    if (family->factors == 0) {
        aim_draw_direct(r, St, d, t->scale, t->symmetric);
    } else {
        int p = aim_config_columns(t, d);
        if (p < 1) {
            fprintf(stderr, "aim_draw: teacher has %d columns\n", p);
            return -1;
        }
        double sd = sqrt(t->scale / d);
        size_t n = (size_t)d * p;
        double *W = malloc(n * sizeof *W * (size_t)family->factors);
        if (!W) {
            fprintf(stderr, "aim_draw: out of memory (teacher factors)\n");
            return -1;
        }
        /* the factors one after the other (W; U, then V) */
        aim_draw_gauss(r, W, n * (size_t)family->factors, sd);
        family->form(W, family->factors > 1 ? W + n : NULL, d, p, St);
        free(W);
    }
    if (cfg->centring == AIM_RAW && t->mean != 0.0) {
        double m = t->mean / sqrt((double)d);
        for (int i = 0; i < d; i++)
            St[(size_t)i * d + i] += m;
    }
    return 0;
}

void aim_draw_student(const aim_config *cfg, gsl_rng *r, int d, int p, int factors,
                      double *first, double *second)
{
    const aim_matrix_spec *s = &cfg->student;
    if (factors == 0) {
        aim_draw_direct(r, first, d, s->scale, s->symmetric);
        return;
    }
    aim_draw_gauss(r, first, (size_t)d * p, sqrt(s->scale / d));
    if (factors > 1) {
        const double sv = s->scale_v != 0.0 ? s->scale_v : s->scale;
        aim_draw_gauss(r, second, (size_t)d * p, sqrt(sv / d));
    }
}

/* Columns 0 .. q-1 of the d x p student factor X mixed with those of the
 * d x pt teacher factor F: X <- a F + b X. */
static void mix_columns(double *X, int p, const double *F, int pt, int d, int q, double a,
                        double b)
{
    for (int i = 0; i < d; i++)
        for (int c = 0; c < q; c++)
            X[(size_t)i * p + c] = a * F[(size_t)i * pt + c] + b * X[(size_t)i * p + c];
}

static int inform_direct(const aim_config *cfg, double c, int d, const double *St, double *S)
{
    aim_inform_direct_start start;
    char err[512];
    if (aim_inform_direct(cfg, c, &start, err, sizeof err)) {
        fprintf(stderr, "aim_draw: %s\n", err);
        return -1;
    }
    /* S*_0 = St minus the teacher's large-d trace and raw mean on the
     * diagonal; a symmetric student takes its symmetric part */
    const double shift = aim_inform_teacher_trace(cfg) +
                         (cfg->centring == AIM_RAW ? cfg->teacher.mean / sqrt((double)d) : 0.0);
    const int sym = cfg->student.symmetric;
    for (int i = 0; i < d; i++)
        for (int j = 0; j < d; j++) {
            const size_t ij = (size_t)i * d + j;
            double t = sym ? 0.5 * (St[ij] + St[(size_t)j * d + i]) : St[ij];
            if (i == j)
                t -= shift;
            S[ij] = start.alpha * t + start.beta * S[ij];
        }
    return 0;
}

int aim_draw_inform(const aim_config *cfg, uint64_t seed, int d, int p, int factors,
                    const double *St, double *first, double *second)
{
    if (cfg->student.overlap == 0.0)
        return 0;
    double c;
    char err[512];
    if (aim_inform_mixing(cfg, &c, err, sizeof err)) {
        fprintf(stderr, "aim_draw: %s\n", err);
        return -1;
    }
    if (factors == 0)
        return inform_direct(cfg, c, d, St, first);
    /* the teacher's factors, drawn again as aim_draw_teacher drew them */
    const aim_matrix_spec *t = &cfg->teacher;
    const int pt = aim_config_columns(t, d), q = p < pt ? p : pt;
    const int tf = aim_family_of(t->decomposition)->factors;
    const size_t n = (size_t)d * (size_t)pt;
    double *F = malloc(n * sizeof *F * (size_t)tf);
    gsl_rng *r = aim_draw_rng(seed, AIM_DRAW_TEACHER);
    if (!F || !r) {
        fprintf(stderr, "aim_draw: out of memory (the informed start)\n");
        free(F);
        gsl_rng_free(r);
        return -1;
    }
    aim_draw_gauss(r, F, n * (size_t)tf, sqrt(t->scale / d));
    gsl_rng_free(r);
    const double b = sqrt(1.0 - c * c), vs = cfg->student.scale;
    const double vv = cfg->student.scale_v != 0.0 ? cfg->student.scale_v : vs;
    /* W <- W*; U <- U*, V <- V* (untied teacher) or U, V <- W* (tied) */
    mix_columns(first, p, F, pt, d, q, c * sqrt(vs / t->scale), b);
    if (factors > 1)
        mix_columns(second, p, F + n * (size_t)(tf - 1), pt, d, q, c * sqrt(vv / t->scale), b);
    free(F);
    return 0;
}
