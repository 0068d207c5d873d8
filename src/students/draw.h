/* aim_draw: the random initial matrices of the model (student
 * initialisation and teacher, theory/direct.md "Initial values"), shared
 * by online SGD (validate/sgd.c) and the matrix limit process
 * (sim/mlimit.c), so that both start from the very same matrices for the
 * same seed.
 *
 * Random numbers: one gsl_rng_mt19937 per stream, seeded from
 * splitmix64(seed * 4 + stream), stream 0..3 (a fifth would be the next
 * seed's first): the teacher and the student's initialisation; the data
 * (SGD's samples, the matrix process's noise, sim/mlimit.c); SGD's
 * held-out samples (validate/holdout.c). */
#ifndef AIM_DRAW_H
#define AIM_DRAW_H

#include <stddef.h>
#include <stdint.h>

#include <gsl/gsl_rng.h>

#include "config.h"

enum { AIM_DRAW_TEACHER = 0, AIM_DRAW_STUDENT = 1, AIM_DRAW_DATA = 2, AIM_DRAW_HOLDOUT = 3 };

/* The generator of stream k of seed; NULL when out of memory. */
gsl_rng *aim_draw_rng(uint64_t seed, unsigned stream);

/* The data stream of seed when its SGD restarts from a state saved by
 * seed saved_seed at step saved_step (training.start_file): stream
 * AIM_DRAW_DATA of a seed mixed from the three by splitmix64. Not the
 * data stream of seed itself: with seed = saved_seed that would replay
 * the very samples the saved matrices were trained on, which are not
 * fresh samples to them (online SGD's premise; at d = 24 such a replay
 * blew up where fresh data did not). NULL when out of memory. */
gsl_rng *aim_draw_restart_rng(uint64_t seed, uint64_t saved_seed, long saved_step);

/* n i.i.d. N(0, sd^2) entries. */
void aim_draw_gauss(gsl_rng *r, double *A, size_t n, double sd);

/* A direct d x d matrix (row-major) with entries N(0, v/d); symmetric:
 * (A + A^T)/sqrt 2, which keeps the off-diagonal variance v/d. */
void aim_draw_direct(gsl_rng *r, double *S, int d, double v, int symmetric);

/* The teacher of cfg (any family; in raw centring plus teacher.mean/sqrt(d) times I)
 * into St (d x d). Returns 0, or -1 with a message on stderr. */
int aim_draw_teacher(const aim_config *cfg, gsl_rng *r, double *St, int d);

/* The student of cfg at dimension d with its number of factor matrices
 * (the caller's student table) and p = their columns (aim_config_columns):
 * 0 factors: S (d x d) into first; 1: W (d x p) into first; 2: U into
 * first and V into second (both d x p, V at student.scale_v). SGD and the
 * matrix limit process both draw here, so that a replica starts where
 * the SGD seed of the same seed does. */
void aim_draw_student(const aim_config *cfg, gsl_rng *r, int d, int p, int factors,
                      double *first, double *second);

/* The informed start (student.overlap > 0; src/students/inform.h, theory/model.md
 * sec. 4): mixes the student just drawn by aim_draw_student (its fresh
 * Gaussian part) with the teacher of the same seed, in place. A direct
 * student S (first, d x d) takes alpha P(St - (t* + m* / sqrt d) I) +
 * sqrt(1 - c^2) S from the teacher St drawn by aim_draw_teacher; a
 * factored one takes c sqrt(v_X/v*) times the first min(p, p*) columns
 * of its teacher factor plus sqrt(1 - c^2) times its own, the teacher's
 * factors drawn again from the seed's teacher stream (the same numbers
 * aim_draw_teacher drew). Nothing changes when student.overlap = 0.
 * Returns 0, or -1 with a message on stderr (out of memory, or a
 * configuration that bypassed aim_config_validate). */
int aim_draw_inform(const aim_config *cfg, uint64_t seed, int d, int p, int factors,
                    const double *St, double *first, double *second);

#endif
