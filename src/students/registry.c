/* The registry of the students: one aim_model_ops per decomposition
 * (config.h), the lookup of cfg's student, and the creation of its model
 * (see model.h). It sits above the model files it lists, which call only
 * the helpers of model.c. */
#include "model.h"
#include "model_internal.h"

#include <stdio.h>
#include <stdlib.h>

/* one entry per decomposition (config.h), in its order */
extern const aim_model_ops aim_direct_model_ops, aim_tied_model_ops, aim_untied_model_ops;

static const aim_model_ops *const registry[] = {
    [AIM_DIRECT] = &aim_direct_model_ops,
    [AIM_TIED] = &aim_tied_model_ops,
    [AIM_UNTIED] = &aim_untied_model_ops,
};

const aim_model_ops *aim_model_ops_of(const aim_config *cfg)
{
    const unsigned kind = (unsigned)cfg->decomposition;
    return kind < sizeof registry / sizeof *registry ? registry[kind] : NULL;
}

const char *aim_model_limit_text(const aim_config *cfg)
{
    const aim_model_ops *ops = aim_model_ops_of(cfg);
    if (ops && ops->limit_text)
        return ops->limit_text(cfg);
    return cfg->centring == AIM_RAW
               ? "limit d -> infinity for the order parameters, finite d for the raw mean"
               : "limit d -> infinity";
}

void aim_model_describe(const aim_config *cfg, int equations, double start_mean, int matrix,
                        FILE *out)
{
    const aim_model_ops *ops = aim_model_ops_of(cfg);
    if (ops && ops->describe)
        ops->describe(cfg, equations, start_mean, matrix, out);
}

aim_model *aim_model_create(const aim_config *cfg, double d, char *err, size_t n)
{
    const aim_model_ops *ops = aim_model_ops_of(cfg);
    if (!ops) {
        snprintf(err, n, "no model for decomposition %d", (int)cfg->decomposition);
        return NULL;
    }
    aim_model *m = malloc(sizeof *m);
    if (!m) {
        snprintf(err, n, "out of memory");
        return NULL;
    }
    m->ops = ops;
    if (!(m->content = m->ops->create(cfg, d, err, n))) {
        free(m);
        return NULL;
    }
    return m;
}
