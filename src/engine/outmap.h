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
 * jac[i * T^2 + j] = d f_i / d h_j) is filled when not NULL. The dense
 * Jacobian is the reference the closed forms below are tested against. */
void aim_outmap_apply(const aim_outmap *map, const double *h, double *f,
                      double *jac);

/* f(h), and in deriv (T^2, when not NULL; elementwise maps only)
 * sigma'(h): what the two products below need of h. */
void aim_outmap_forward(const aim_outmap *map, const double *h, double *f,
                        double *deriv);

/* f(m + D) into fp and f(m - D) into fm (derivp, derivm as deriv
 * above), the antithetic pair of the engine's rule. For softmax with
 * m = 0 the second comes from the first without exponentials (about
 * half the cost); it equals the direct value to round-off. */
void aim_outmap_forward_pair(const aim_outmap *map, const double *m, const double *D,
                             double *fp, double *fm, double *derivp, double *derivm);

/* The engine's points go through the map AIM_OUTMAP_LANES at a time,
 * their numbers interleaved: entry p of point l at p * AIM_OUTMAP_LANES
 * + l, so that one operation serves every point (the compiler's vector
 * instructions) where a row softmax of T = 4 alone fills no vector. */
#define AIM_OUTMAP_LANES 4

/* The lane loops compiled twice, for AVX2 (one 4-lane vector per
 * operation) and for the baseline (two SSE2 halves), the form chosen at
 * load time by the machine: the same operations in the same order (no
 * contraction into fused multiply-adds, -std=c17), so the same numbers
 * bit for bit on either. */
#ifdef AIM_HAVE_TARGET_CLONES
#define AIM_VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define AIM_VECTOR_CLONES
#endif

/* aim_outmap_forward_pair for AIM_OUTMAP_LANES points of a common m (T^2,
 * not interleaved): D, fp, fm, derivp, derivm interleaved. Each point's
 * numbers are bit for bit those of aim_outmap_forward_pair. */
void aim_outmap_forward_lanes(const aim_outmap *map, const double *m, const double *D,
                              double *fp, double *fm, double *derivp, double *derivm);

/* aim_outmap_pullback for AIM_OUTMAP_LANES points, every array
 * interleaved; bit for bit the same numbers. */
void aim_outmap_pullback_lanes(const aim_outmap *map, const double *f, const double *deriv,
                               const double *r, double *e);

/* e = J^T r for the Jacobian J of f at the h given to aim_outmap_forward
 * (f, deriv its results), in O(T^2): J is diagonal (elementwise) or one
 * T x T block per row, beta (diag f_a - f_a f_a^T) (softmax). */
void aim_outmap_pullback(const aim_outmap *map, const double *f, const double *deriv,
                         const double *r, double *e);

/* The traces of J^T J against the two token weights of the noise kernels:
 * omega = sum_pq (J^T J)_pq C_ac C_bd and psi = sum_pq (J^T J)_pq C_ad C_bc
 * over entries p = (a, b), q = (c, d), in O(T^3) instead of O(T^6). */
void aim_outmap_gram(const aim_outmap *map, const double *f, const double *deriv,
                     const double *C, double *omega, double *psi);

#endif
