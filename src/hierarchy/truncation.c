#include "truncation.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Dykstra rounds of the psd closure per evaluation (theory/tied.md
 * sec. 13 gives the measured counts). */
#define GRAM_ROUNDS 200
/* The quadrature closure drops the directions of the unit-diagonal moment
 * matrices below this fraction of the largest eigenvalue: the construction
 * divides by them, and the moments a truncated hierarchy carries are not
 * exactly those of real matrices, so a direction that small is their
 * error, not the pair's. At 1e-10 the order-8 run of Figure 1 did not
 * finish in 216 s of CPU; at 1e-6 it takes 8 s (theory/tied.md sec. 14). */
#define QUADRATURE_FLOOR 1e-6

struct aim_truncation {
    const aim_hierarchy *h;
    const aim_wordset *words;
    aim_freecum *fc;
    int order, count, first_long, size;
    double *start, *start_cum, *cum;
    unsigned char *rule;  /* per long word */
    int *target, *power;  /* per long word */
    unsigned char *mixed; /* per word */
    int num, den;         /* alignment c = cum[num] / cum[den]; num < 0: none */
    int one;              /* the geometric rule's kappa_1 word */
    double scale;         /* ... and its divisor */
    aim_gram *gram;       /* closure psd: the moment matrices; else NULL */
    aim_quadrature *quad; /* closure quadrature: its construction; else NULL */
};

aim_truncation *aim_truncation_create(const aim_hierarchy *h)
{
    aim_truncation *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->h = h;
    t->words = aim_hierarchy_words(h);
    t->order = aim_hierarchy_order(h);
    t->count = aim_wordset_count(t->words);
    t->first_long = aim_wordset_first(t->words, t->order + 1);
    t->size = aim_hierarchy_size(h);
    t->num = t->den = t->one = -1;
    t->scale = 1.0;
    const size_t c = (size_t)t->count, nl = c - (size_t)t->first_long;
    t->fc = aim_freecum_create(t->words);
    t->start = calloc(c, sizeof *t->start);
    t->start_cum = calloc(c, sizeof *t->start_cum);
    t->cum = calloc(c, sizeof *t->cum);
    t->rule = calloc(nl + 1, 1);
    t->target = calloc(nl + 1, sizeof *t->target);
    t->power = calloc(nl + 1, sizeof *t->power);
    t->mixed = calloc(c, 1);
    if (!t->fc || !t->start || !t->start_cum || !t->cum || !t->rule || !t->target ||
        !t->power || !t->mixed) {
        aim_truncation_free(t);
        return NULL;
    }
    return t;
}

void aim_truncation_free(aim_truncation *t)
{
    if (!t)
        return;
    aim_freecum_free(t->fc);
    aim_gram_free(t->gram);
    aim_quadrature_free(t->quad);
    free(t->start);
    free(t->start_cum);
    free(t->cum);
    free(t->rule);
    free(t->target);
    free(t->power);
    free(t->mixed);
    free(t);
}

int aim_truncation_first_long(const aim_truncation *t) { return t->first_long; }

double *aim_truncation_start(aim_truncation *t) { return t->start; }

double *aim_truncation_start_cumulants(aim_truncation *t) { return t->start_cum; }

void aim_truncation_start_from_cumulants(aim_truncation *t)
{
    t->start[0] = 1.0;
    aim_freecum_moments(t->fc, t->start_cum, t->start, 1, t->order + 1);
}

void aim_truncation_cumulants_from_start(aim_truncation *t)
{
    aim_freecum_cumulants(t->fc, t->start, t->start_cum, t->order + 1);
}

void aim_truncation_rule(aim_truncation *t, int word, aim_close_rule rule, int target,
                         int power)
{
    const int j = word - t->first_long;
    t->rule[j] = (unsigned char)rule;
    t->target[j] = target;
    t->power[j] = power;
}

void aim_truncation_mixed(aim_truncation *t, int word) { t->mixed[word] = 1; }

void aim_truncation_alignment(aim_truncation *t, int num, int den)
{
    t->num = num;
    t->den = den;
}

void aim_truncation_geometric(aim_truncation *t, int one, double scale)
{
    t->one = one;
    t->scale = scale;
}

void aim_truncation_initial(const aim_truncation *t, double *y)
{
    for (int i = 0; i < t->size; i++)
        y[i] = t->start[aim_hierarchy_tracked(t->h, i)];
}

void aim_truncation_fill(const aim_truncation *t, const double *y, double *mom)
{
    memcpy(mom, t->start, sizeof *mom * (size_t)t->count);
    for (int i = 0; i < t->size; i++)
        mom[aim_hierarchy_tracked(t->h, i)] = y[i];
}

/* The cumulants of the long words by the plan. c: the regression
 * coefficient of the aligned closure, from a tracked pair cumulant (at
 * order 1 the pair is itself being closed: no correlation is known,
 * c = 0). */
static void close_cumulants(const aim_truncation *t, double *cum, int aligned)
{
    double c = 0.0;
    if (aligned && t->num >= 0 && t->num < t->first_long && cum[t->den] > 0.0)
        c = cum[t->num] / cum[t->den];
    for (int i = t->first_long; i < t->count; i++) {
        const int j = i - t->first_long;
        switch ((aim_close_rule)t->rule[j]) {
        case AIM_CLOSE_KEEP:
            cum[i] = t->start_cum[i];
            break;
        case AIM_CLOSE_ALIGNED:
            cum[i] = aligned ? pow(c, t->power[j]) * t->start_cum[t->target[j]] : 0.0;
            break;
        case AIM_CLOSE_GEOMETRIC:
            cum[i] = cum[t->target[j]] * cum[t->one] / t->scale;
            break;
        default:
            cum[i] = 0.0;
        }
    }
}

int aim_truncation_close(aim_truncation *t, aim_closure closure, double *mom)
{
    const int M = t->order;
    switch (closure) {
    case AIM_CLOSURE_INITIAL:
        break; /* the long words keep their start values */
    case AIM_CLOSURE_ALIGNED:
    case AIM_CLOSURE_CUMULANT:
    case AIM_CLOSURE_PSD:
    case AIM_CLOSURE_QUADRATURE:
        aim_freecum_cumulants(t->fc, mom, t->cum, M);
        close_cumulants(t, t->cum, closure != AIM_CLOSURE_CUMULANT);
        aim_freecum_moments(t->fc, t->cum, mom, M + 1, M + 1);
        if (closure == AIM_CLOSURE_PSD && t->gram)
            aim_gram_project(t->gram, mom, GRAM_ROUNDS);
        /* the aligned values are the prior of the words of length M + 1
         * that the construction does not determine (even M) */
        if (closure == AIM_CLOSURE_QUADRATURE && t->quad && aim_quadrature_close(t->quad, mom) < 0)
            return -1;
        break;
    case AIM_CLOSURE_FREE:
        aim_freecum_cumulants(t->fc, mom, t->cum, M);
        for (int i = 1; i < t->first_long; i++)
            if (t->mixed[i])
                t->cum[i] = 0.0;
        close_cumulants(t, t->cum, 0);
        aim_freecum_moments(t->fc, t->cum, mom, M + 1, M + 1);
        break;
    }
    return 0;
}

int aim_truncation_use_gram(aim_truncation *t)
{
    if (!t->gram)
        t->gram = aim_gram_create(t->words, t->order);
    return t->gram ? 0 : -1;
}

int aim_truncation_use_quadrature(aim_truncation *t)
{
    if (!t->quad)
        t->quad = aim_quadrature_create(t->words, t->order, QUADRATURE_FLOOR);
    return t->quad ? 0 : -1;
}

int aim_truncation_model_init(aim_truncation_model *m, const aim_dynamics *dyn,
                              const aim_config *cfg, aim_gauss_rule rule, int symmetric,
                              char *err, size_t n)
{
    memset(m, 0, sizeof *m);
    m->h = aim_hierarchy_create(dyn, cfg->order, err, n);
    if (!m->h)
        return -1;
    m->words = aim_hierarchy_words(m->h);
    m->count = aim_wordset_count(m->words);
    m->size = aim_hierarchy_size(m->h);
    m->n_params = aim_hierarchy_order_parameters(m->h);
    m->trunc = aim_truncation_create(m->h);
    m->start = m->trunc ? aim_truncation_start(m->trunc) : NULL;
    m->gauss = aim_gauss_create(cfg, rule, symmetric);
    m->mom = calloc((size_t)m->count, sizeof *m->mom);
    m->names = aim_hierarchy_state_names(m->h);
    if (!m->trunc || !m->gauss || !m->mom || !m->names ||
        (cfg->closure == AIM_CLOSURE_PSD && aim_truncation_use_gram(m->trunc)) ||
        (cfg->closure == AIM_CLOSURE_QUADRATURE && aim_truncation_use_quadrature(m->trunc))) {
        snprintf(err, n, "out of memory, or the quasi-random point set could not be "
                         "whitened (raise ode.qmc_points)");
        aim_truncation_model_release(m);
        return -1;
    }
    return 0;
}

void aim_truncation_model_release(aim_truncation_model *m)
{
    if (m->names)
        for (int i = 0; i < m->size; i++)
            free(m->names[i]);
    free(m->names);
    aim_truncation_free(m->trunc);
    free(m->mom);
    aim_gauss_free(m->gauss);
    aim_hierarchy_free(m->h);
    memset(m, 0, sizeof *m);
}
