/* aim_outmap: the output map f applied to a T x T index matrix
 * (elementwise sigma, or row softmax), with its Jacobian. */
#ifndef AIM_OUTMAP_H
#define AIM_OUTMAP_H

#include "config.h"

typedef struct aim_outmap aim_outmap;

aim_outmap *aim_outmap_create(const aim_config *cfg);
void aim_outmap_free(aim_outmap *map);

int aim_outmap_is_elementwise(const aim_outmap *map);

/* Elementwise maps: sigma(x) and sigma'(x). */
double aim_outmap_sigma(const aim_outmap *map, double x);
double aim_outmap_dsigma(const aim_outmap *map, double x);

/* f(h) for a row-major T x T matrix h; jac (T^2 x T^2, row-major,
 * jac[i * T^2 + j] = d f_i / d h_j) is filled when not NULL. */
void aim_outmap_apply(const aim_outmap *map, const double *h, double *f,
                      double *jac);

#endif
