/* aim_model: the model interface's functions on a created model (see
 * model.h); the registry that creates one is registry.c. */
#include "model.h"
#include "model_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

const char *aim_model_start_text(const aim_config *cfg)
{
    return cfg->start == AIM_START_SEED   ? "measured from SGD seed sgd.seed at sgd.d"
           : cfg->start == AIM_START_FILE ? "measured on the saved state training.start_file"
                                          : "exact";
}

const char *aim_model_closure_name(aim_closure c)
{
    return c == AIM_CLOSURE_ALIGNED    ? "aligned"
           : c == AIM_CLOSURE_CUMULANT ? "cumulant"
           : c == AIM_CLOSURE_FREE     ? "free"
           : c == AIM_CLOSURE_PSD      ? "psd"
           : c == AIM_CLOSURE_QUADRATURE ? "quadrature"
                                       : "initial";
}

void aim_model_free(aim_model *m)
{
    if (!m)
        return;
    m->ops->free(m->content);
    free(m);
}

const char *aim_model_name(const aim_model *m) { return m->ops->name; }

int aim_model_is_hierarchy(const aim_model *m) { return m->ops->hierarchy; }

const aim_hierarchy *aim_model_equations(const aim_model *m)
{
    return m->ops->equations ? m->ops->equations(m->content) : NULL;
}

int aim_model_size(const aim_model *m) { return m->ops->size(m->content); }

int aim_model_monitored(const aim_model *m)
{
    return m->ops->monitored ? m->ops->monitored(m->content) : 0;
}

int aim_model_initial(aim_model *m, const aim_measured_start *start, double *y0, char *err, size_t n)
{
    return m->ops->initial(m->content, start, y0, err, n);
}

int aim_model_rhs(aim_model *m, const double *y, double *dy)
{
    return m->ops->rhs(m->content, y, dy);
}

const char *aim_model_error(const aim_model *m) { return m->ops->error(m->content); }

const char *aim_model_state_name(const aim_model *m, int i)
{
    return m->ops->state_name(m->content, i);
}

int aim_model_margin_count(const aim_model *m)
{
    return m->ops->margin_count ? m->ops->margin_count(m->content) : 0;
}

void aim_model_margins(aim_model *m, const double *y, double *g)
{
    m->ops->margins(m->content, y, g);
}

const char *aim_model_margin_text(const aim_model *m, int k)
{
    return m->ops->margin_text(m->content, k);
}

aim_model_failure aim_model_failure_of(const aim_model *m)
{
    return m->ops->failure ? m->ops->failure(m->content) : AIM_MODEL_FAILURE_NONE;
}

const char *aim_model_divergence(const aim_model *m) { return m->ops->divergence; }

aim_gauss *aim_model_engine(aim_model *m) { return m->ops->engine(m->content); }

double aim_model_overlap(aim_model *m, const double *y)
{
    return m->ops->overlap(m->content, y);
}

int aim_model_has_terms(const aim_model *m) { return m->ops->terms != NULL; }

int aim_model_terms(aim_model *m, const double *y, double *gradient, double *noise,
                    double *decay)
{
    return m->ops->terms(m->content, y, gradient, noise, decay);
}

int aim_model_observables(aim_model *m, const double *y, double *obs)
{
    return m->ops->observables(m->content, y, obs);
}

int aim_model_tracked_count(const aim_model *m)
{
    return m->ops->tracked_count ? m->ops->tracked_count(m->content) : 0;
}

const char *aim_model_tracked_name(const aim_model *m, int k)
{
    return m->ops->tracked_name(m->content, k);
}

void aim_model_tracked(const aim_model *m, const double *y, const double *obs, double *out)
{
    m->ops->tracked(m->content, y, obs, out);
}

const char *aim_model_warning(const aim_model *m)
{
    return m->ops->warning ? m->ops->warning(m->content) : "";
}

double aim_model_start_mean(const aim_model *m)
{
    return m->ops->start_mean ? m->ops->start_mean(m->content) : NAN;
}

double aim_model_fast_start(const aim_model *m)
{
    return m->ops->fast_start ? m->ops->fast_start(m->content) : NAN;
}

const char *aim_model_fast_name(const aim_model *m)
{
    return m->ops->fast_name ? m->ops->fast_name : "fast variable";
}

int aim_model_fast_rate(aim_model *m, double x, double *rate)
{
    return m->ops->fast_rate(m->content, x, rate);
}

int aim_model_path_observables(aim_model *m, const double *states, const double *fast,
                               int reached, double *obs, int *failed_row)
{
    if (fast)
        return m->ops->path_observables(m->content, states, fast, reached, obs, failed_row);
    const int n = aim_model_size(m);
    for (int i = 0; i < reached; i++)
        if (m->ops->observables(m->content, states + (size_t)i * n, obs + (size_t)i * AIM_OBS_COUNT)) {
            *failed_row = i;
            return -1;
        }
    return 0;
}
