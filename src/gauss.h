/* aim_gauss: the Gaussian expectation engine. Given the order parameters
 * of {S, S*} (aim_overlaps), the token covariance C, the output map and
 * the label noise, it computes the population risk and every scalar
 * Gaussian expectation the ODE right-hand sides need, with a
 * deterministic rule so that the result is a smooth function of the
 * order parameters:
 *   - elementwise maps: Gauss-Hermite product rules on the 2 (entry) and
 *     4 (pair of entries) dimensional index laws; exact for finite
 *     Hermite series when quad_nodes >= 2 * degree;
 *   - row softmax: a fixed Sobol (or Halton, above 40 dimensions) point
 *     set, antithetic, mapped through the Cholesky factor of the index
 *     covariance; accuracy set by qmc_points.
 * The "generic" rule (the quasi-random one) can be forced for any map;
 * the tests use it to check the elementwise rule. */
#ifndef AIM_GAUSS_H
#define AIM_GAUSS_H

#include "config.h"
#include "outmap.h"
#include "overlaps.h"

typedef struct aim_gauss aim_gauss;

aim_gauss *aim_gauss_create(const aim_config *cfg, aim_gauss_rule rule);
void aim_gauss_free(aim_gauss *g);

/* Evaluates every expectation at q. Returns 0, or -1 when q is not a
 * valid covariance (message in aim_gauss_error). */
int aim_gauss_eval(aim_gauss *g, const aim_overlaps *q);
const char *aim_gauss_error(const aim_gauss *g);

/* R = E[l] - T^2 Delta / 2. */
double aim_gauss_risk(const aim_gauss *g);
/* E[sum e_ab e_a'b' C_aa' C_bb'] and E[sum e_ab e_a'b' C_ab' C_ba'],
 * label noise included. */
double aim_gauss_noise_omega(const aim_gauss *g);
double aim_gauss_noise_psi(const aim_gauss *g);
/* E[sum_ab e_ab C_ab] (drives the raw-mode mean). */
double aim_gauss_error_mean(const aim_gauss *g);
/* E[sum_ab e_ab h_ab(B)] (transpose = 0) or E[sum_ab e_ab h_ba(B)]
 * (transpose = 1) for any matrix B, given Omega(B, S_i), Psi(B, S_i)
 * (i = student, teacher) and B's index mean. */
double aim_gauss_error_index(const aim_gauss *g, const double omega_b[2],
                             const double psi_b[2], double mean_b,
                             int transpose);

/* Every observable at q (risk included). Returns 0 or -1. */
int aim_gauss_observables(aim_gauss *g, const aim_overlaps *q,
                          double obs[AIM_OBS_COUNT]);

#endif
