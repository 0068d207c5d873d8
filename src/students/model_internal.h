/* A created model, shared by the registry that creates it (registry.c)
 * and the interface's functions on it (model.c); not installed. */
#ifndef AIM_MODEL_INTERNAL_H
#define AIM_MODEL_INTERNAL_H

#include "model.h"

struct aim_model {
    const aim_model_ops *ops;
    void *content;
};

#endif
