/* aim_gauss: the Gaussian expectation engine. Given the order parameters
 * of {S, S*} (aim_overlaps), the token covariance C, the output map and
 * the label noise, it computes the population risk and every scalar
 * Gaussian expectation the ODE right-hand sides need, with a
 * deterministic rule so that the result is a smooth function of the
 * order parameters:
 *   - elementwise maps: per entry, the 2 (entry) and 4 (pair of entries)
 *     dimensional index laws: relu and erf in closed form
 *     (theory/direct.md sec. 3.6), the others by Gauss-Hermite product
 *     rules, exact for finite Hermite series when quad_nodes >= 2 *
 *     degree;
 *   - row softmax: a fixed Sobol (or Halton, above 40 dimensions) point
 *     set, antithetic, mapped through the Cholesky factor of the index
 *     covariance; accuracy set by qmc_points, or chosen for a given
 *     relative kernel error kernel_tol. The point set is shifted by one
 *     fixed random shift; its error is estimated at the first and the
 *     last state evaluated from copies under other random shifts.
 * The "generic" rule (the quasi-random one) can be forced for any map,
 * and the "hermite" rule (Gauss-Hermite) for any elementwise map; the
 * tests use them to check the elementwise rules. */
#ifndef AIM_GAUSS_H
#define AIM_GAUSS_H

#include "config.h"
#include "outmap.h"
#include "overlaps.h"

typedef struct aim_gauss aim_gauss;

/* symmetric: S and S* are symmetric whatever the state (a tied student
 * and teacher: Psi = Omega), so the generic rule's point set leaves out
 * the antisymmetric coordinates; the caller knows the families
 * (src/students/family.h, aim_family_symmetric_pair). */
aim_gauss *aim_gauss_create(const aim_config *cfg, aim_gauss_rule rule, int symmetric);
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

/* The threads of every engine's quasi-random rule, process-wide: 1 (the
 * default) to AIM_GAUSS_MAX_THREADS. The points are summed in blocks
 * whose sums are added in block order, so that the results are the same
 * bit for bit on any number of threads. Returns 0, or -1 (nothing
 * changed) for a count out of range. */
#define AIM_GAUSS_MAX_THREADS 1024
int aim_gauss_set_threads(int threads);
/* The threads the engine runs on: the count set, or 1 in a build without
 * OpenMP. */
int aim_gauss_threads(void);
/* In a child process just forked: when the parent has run the engine on
 * more than one thread, the child runs it on one (OpenMP's threads do not
 * survive a fork, and GNU libgomp would wait for them); returns 1 then,
 * else 0. */
int aim_gauss_after_fork(void);
/* Says that the caller has run a team of threads of its own (the matrix
 * process's replicas): a child forked after it runs one thread, as after
 * the engine's own teams. */
void aim_gauss_team_started(void);

/* The engines of a process share their quasi-random point sets (one per
 * tokens, token covariance and point count) and their kernel error
 * estimates (per point set, integrand and first state), bit for bit what
 * each would compute alone. This frees the point sets no engine holds
 * and forgets the estimates (memory back; the tests start afresh). */
void aim_gauss_cache_clear(void);

/* The kernels the ODE reads, at the last evaluation, into v, for
 * measuring the rule's actual error against a finer rule (the tests,
 * validate/bench/kernel_accuracy.c): the risk, K_omega, K_psi, then the
 * drift kernels aim_gauss_error_mean and aim_gauss_error_index
 * (transpose 0, 1) for B of (Omega, Psi) = (e_i, e_i) and (e_i, 0),
 * i = student, teacher (every drift kernel is a combination of these
 * nine). */
#define AIM_GAUSS_KERNEL_VALUES 12
void aim_gauss_kernel_values(const aim_gauss *g, double v[AIM_GAUSS_KERNEL_VALUES]);
/* The relative errors of the groups of kernels (the risk, K_omega,
 * K_psi, the drift kernels) of the values v against the reference values
 * ref (both as aim_gauss_kernel_values orders them): per group, its
 * largest |v - ref| over its largest |ref| (INFINITY when that is 0 and
 * the error is not). */
#define AIM_GAUSS_KERNEL_GROUPS 4
void aim_gauss_kernel_gaps(const double v[AIM_GAUSS_KERNEL_VALUES],
                           const double ref[AIM_GAUSS_KERNEL_VALUES],
                           double gaps[AIM_GAUSS_KERNEL_GROUPS]);

/* 1 when cfg's rule (ode.rule) takes its output map's expectations in
 * closed form (auto, relu and erf), else 0. */
int aim_gauss_closed_forms(const aim_config *cfg);

/* The quasi-random rule's point count (0 for Gauss-Hermite and the
 * closed forms), fixed at the first evaluation. */
int aim_gauss_points(const aim_gauss *g);
/* The estimated relative kernel error of the quasi-random rule, into
 * *err: the larger of the estimates at the first and at the last state
 * evaluated, each the largest over the risk, K_omega, K_psi and the drift
 * kernels (E[e], every E[e Y]) of the 95 % Student-t bound on the rule's error
 * from the spread of 8 copies of the rule under other random shifts (the
 * rule is the point set under one fixed random shift, a draw from the same
 * law), relative to its group's largest value. The estimates of the two
 * states are made on the first request, on the same 8 point sets
 * (ode.kernel_tol makes the first state's earlier): about 8 point sets
 * and 8 evaluations per state. NAN for Gauss-Hermite or before any
 * evaluation. Returns 0, or -1 (out of memory; message in
 * aim_gauss_error). */
int aim_gauss_kernel_error(aim_gauss *g, double *err);
/* 1 when ode.kernel_tol stops at points points for cfg (4 times more would
 * pass the cap on the stored point set, 2^25 numbers), else 0. */
int aim_gauss_points_capped(const aim_config *cfg, int points);

/* The risk alone at q, into *risk: the same number, bit for bit, as
 * aim_gauss_risk after aim_gauss_eval(g, q), at a fraction of the cost
 * (the output map forward only: no pull-back, noise kernels, drift
 * kernels or pair integrals), for what needs the risk only (observables
 * at output points, the formula's risk of measured order parameters). It
 * refuses the states aim_gauss_eval refuses, but a non-finite kernel
 * with a finite risk; it leaves the last evaluation (aim_gauss_risk and
 * the kernels) as it was, except at the quasi-random rule's first state,
 * which is evaluated in full since it fixes the point count. Returns 0 or
 * -1 (message in aim_gauss_error). */
int aim_gauss_risk_at(aim_gauss *g, const aim_overlaps *q, double *risk);

/* Every observable at q (the risk by aim_gauss_risk_at). Returns 0 or
 * -1. */
int aim_gauss_observables(aim_gauss *g, const aim_overlaps *q,
                          double obs[AIM_OBS_COUNT]);

#endif
