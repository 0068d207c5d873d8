/* aim_sgd: online SGD for the attention-indexed model at finite d, the
 * ground truth the ODE is checked against (theory/model.md sec. 5).
 *
 * One aim_sgd is one seed: its own teacher, initialisation and data
 * stream, all drawn from GSL generators seeded from the seed, so that a
 * seed reproduces bit for bit. Steps are unrolled in blocks of
 * cfg->block samples (theory/model.md sec. 5): one matrix product for the
 * block's indices at the block's start parameters (per factor for the
 * tied W and the untied U, V), T x T Gram blocks for the corrections,
 * one rank-(block T) update (per factor). Students: direct S (sgd.c),
 * tied S = W W^T (sgd_tied.c), untied S = U V^T (sgd_untied.c). */
#ifndef AIM_SGD_H
#define AIM_SGD_H

#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "overlaps.h"

typedef struct aim_sgd aim_sgd;

/* Draws teacher and student for dimension d from seed. Students: direct
 * and untied (any centring), tied (centred only); the teacher may be of
 * any family. With cfg->start_file set, the teacher and the student are
 * instead those of that saved state (validate/state.h, checked against
 * cfg and d), seed decides the held-out samples, and the data stream is
 * a fresh one of seed and the state's seed and step
 * (aim_draw_restart_rng).
 * NULL on allocation failure, an unsupported combination or a state
 * that cannot start this run (message on stderr). */
aim_sgd *aim_sgd_create(const aim_config *cfg, int d, uint64_t seed);

/* The columns p = round(student.rho d) of cfg's factored student at d,
 * not clamped to an int, or 0 for a direct one. */
double aim_sgd_columns_for(const aim_config *cfg, int d);

/* Whether the sizes of cfg's student at d fit the int lengths of the
 * BLAS calls (d p and sgd.block T p for p = round(student.rho d)
 * columns): 0, or -1 with what does not and what is allowed in why
 * (size n). aim_sgd_create refuses what does not. */
int aim_sgd_fits(const aim_config *cfg, int d, char *why, size_t n);

/* The bytes aim_sgd_create(cfg, d, .) allocates, from the configuration
 * alone: the d x d student and teacher (8 d^2 bytes each), the factors
 * (8 d p each), the block's buffers. A double: no overflow at any size. */
double aim_sgd_bytes(const aim_config *cfg, int d);

/* A copy of the current matrices with a fresh data stream seeded from
 * data_seed (used by the short-horizon drift tests). */
aim_sgd *aim_sgd_clone(const aim_sgd *sgd, uint64_t data_seed);

void aim_sgd_free(aim_sgd *sgd);

/* Checkpoints: the full state of a seed between two calls of
 * aim_sgd_advance, to continue it bit for bit. aim_sgd_save writes the
 * step count, the data generator's state, the teacher and the student's
 * parameters to out, binary in this machine's byte order and double
 * format (GSL's gsl_rng_fwrite is native binary too; a checkpoint is not
 * meant to move between machines). Returns 0, or -1 when a write fails
 * (said). aim_sgd_restore reads such a state into sgd, created with the
 * same configuration and d (S of a factored student refreshed from the
 * factors). Returns 0, or -1 when in does not hold a state of this
 * student, d and generator (said; sgd is then to be freed). */
int aim_sgd_save(const aim_sgd *sgd, FILE *out);
int aim_sgd_restore(aim_sgd *sgd, FILE *in);

/* Runs `steps` more online steps. Returns 0, or 1 when an order
 * parameter became non-finite or exceeded cfg->blowup (blow-up; the
 * state is then left as it was at the end of the last finite block).
 * The checked quantities: direct, Omega(S,S) and in raw centring
 * |Tr S|/sqrt d at the end of each block; tied, Tr S/d = ||W||_F^2/d at
 * every step; untied, ||U||_F^2/d and ||V||_F^2/d at every step. Also a
 * student index beyond the bound such a state allows, or a non-finite
 * error, is a blow-up. */
int aim_sgd_advance(aim_sgd *sgd, long steps);

long aim_sgd_steps(const aim_sgd *sgd);
int aim_sgd_dim(const aim_sgd *sgd);

/* Order parameters computed exactly from the current matrices. */
void aim_sgd_overlaps(const aim_sgd *sgd, aim_overlaps *q);

/* Steps needed to reach slow time tau at dimension d: round(tau d^2/eta). */
long aim_sgd_steps_for(const aim_config *cfg, int d, double tau);

/* Read-only access to the current matrices (which = 0 student S, 1
 * teacher S*), d x d row-major; valid until the next advance or free. */
const double *aim_sgd_matrix(const aim_sgd *sgd, int which);

/* Tied student (S = W W^T): the factor W, d x p row-major, valid until
 * the next advance or free; NULL for a direct or an untied student.
 * aim_sgd_matrix(s, 0) holds W W^T, refreshed at creation and after
 * every advance. */
const double *aim_sgd_factor(const aim_sgd *sgd);

/* Untied student (S = U V^T): returns 0 and sets *U, *V to the factors,
 * d x p row-major, valid until the next advance or free; -1 (pointers
 * untouched) for another student. aim_sgd_matrix(s, 0) holds U V^T,
 * refreshed at creation and after every advance. */
int aim_sgd_untied_factors(const aim_sgd *sgd, const double **U,
                           const double **V);

/* The learned parameters (what aim_sgd_save keeps besides the teacher):
 * direct S (d x d), tied W, untied U and V (d x p, row-major), their
 * lengths and names ("S", "W", "U", "V"); returns how many (1 or 2).
 * Valid until the next advance or free. */
int aim_sgd_params(const aim_sgd *sgd, const double *arrays[2], size_t lengths[2],
                   const char *names[2]);

/* Columns p of the factors W (tied) or U, V (untied), round(rho d); 0
 * for a direct student. */
int aim_sgd_columns(const aim_sgd *sgd);

/* Testing hook: copies the samples of the last block drawn by
 * aim_sgd_advance (the tokens x, (steps T) x d row-major, sample k in
 * rows k T .. k T + T - 1, and the standard label noises xi, steps x T^2)
 * and returns its number of steps (0 before any step). Either pointer
 * may be NULL. */
int aim_sgd_last_samples(const aim_sgd *sgd, double *x, double *xi);

#endif
