/* aim_holdout: the risk of an SGD seed measured on held-out samples
 * (theory/measurement.md). Each seed gets n samples of its own, drawn
 * once from a random stream of their own (validate/sgd.c: stream 3, so
 * the training data and the trajectory do not depend on them) and kept
 * for the whole run; at any state of the seed the risk
 *     R = E[l] - T^2 Delta / 2 = E_X[ 1/2 sum_ab (f(h_ab(S)) - f(h_ab(S*)))^2 ]
 * is their average, with its standard error sd(l)/sqrt(n). The label
 * noise is integrated out exactly (its contribution to E[l] is T^2
 * Delta / 2 whatever X is); the indices and the outputs are those of the
 * samples, so this is a measurement, not the Gaussian formula. */
#ifndef AIM_HOLDOUT_H
#define AIM_HOLDOUT_H

#include <stdint.h>

#include "sgd.h"

typedef struct aim_holdout aim_holdout;

/* Draws `samples` (>= 2) held-out samples for sgd (its configuration,
 * dimension and teacher) from the held-out stream of seed, and the
 * teacher's outputs on them. Memory: samples x T x d doubles. NULL with
 * a message on stderr naming sgd.holdout (out of memory, samples < 2). */
aim_holdout *aim_holdout_create(const aim_sgd *sgd, uint64_t seed, int samples);

/* The bytes aim_holdout_create allocates for `samples` samples of
 * `tokens` tokens at d, for a student of cols columns (d: direct) with
 * (second = 1) or without a second factor (untied). */
double aim_holdout_bytes(int samples, int tokens, int d, double cols, int second);

void aim_holdout_free(aim_holdout *h);

/* The held-out risk of sgd's current matrices (sgd: the seed h was
 * created for) and its standard error over the samples. Returns 0, or 1
 * when an index or a loss is not finite (the state has blown up; *risk
 * and *se are then NaN). */
int aim_holdout_risk(aim_holdout *h, const aim_sgd *sgd, double *risk, double *se);

int aim_holdout_samples(const aim_holdout *h);

/* Testing hook: the tokens of held-out sample i, T x d row-major. */
const double *aim_holdout_tokens(const aim_holdout *h, int i);

#endif
