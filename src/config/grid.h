/* aim_grid: the tau grid on which the ODE output and the SGD
 * measurements are taken (both sides use the same one). */
#ifndef AIM_GRID_H
#define AIM_GRID_H

#include "config_types.h"

/* Fills tau[0 .. cfg->points-1]: tau[0] = 0, last = cfg->horizon;
 * linear, or 0 followed by a geometric sequence from cfg->grid_start. */
void aim_grid_fill(const aim_config *cfg, double *tau);

#endif
