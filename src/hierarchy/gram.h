/* aim_gram: the moment (Gram) matrices of a moment sequence of two
 * letters, a student P (letter 0 of the alphabet, positive semi-definite)
 * and a teacher (letter 1), and the nearest sequence that makes them
 * positive semi-definite (theory/tied.md sec. 13). For words u, v of the
 * alphabet (every word, not only canonical ones):
 *     H[u][v]  = m(u^T v),    |u|, |v| <= floor((M + 1) / 2),
 *     HP[u][v] = m(u^T P v),  |u|, |v| <= floor(M / 2),
 * where u^T is the transposed word. For real matrices with P >= 0 both are
 * positive semi-definite (H is the Gram matrix of the matrices u in the
 * trace inner product, HP that of u^T P^(1/2)). Together they hold every
 * word of length 1 .. M + 1. */
#ifndef AIM_GRAM_H
#define AIM_GRAM_H

#include "words.h"

typedef struct aim_gram aim_gram;

/* For the words of ws up to length M + 1 (ws's max_len >= M + 1, its
 * alphabet two letters). NULL on allocation failure or bad arguments. */
aim_gram *aim_gram_create(const aim_wordset *ws, int order);
void aim_gram_free(aim_gram *g);

/* The smallest eigenvalue of H and of HP at moments mom (indexed by ws),
 * each scaled to a unit diagonal (D^-1/2 H D^-1/2, D its diagonal: the
 * same cone, and entries of one size although the moments of length 0 ..
 * M + 1 span orders of magnitude), relative to its largest eigenvalue.
 * Returns 0, or -1 when the eigensolver fails. */
int aim_gram_margins(aim_gram *g, const double *mom, double *h, double *hp);

/* The Frobenius distance of the pairs (H, HP) of two moment sequences a,
 * b, scaled by the diagonals at moments `at`: the norm in which
 * aim_gram_project(at) is nearest. */
double aim_gram_distance(aim_gram *g, const double *a, const double *b, const double *at);

/* Replaces the moments of every word that contains the student letter by
 * the nearest (in the Frobenius norm of the pair H, HP scaled by their
 * diagonals at the given moments) moments whose H and HP are positive
 * semi-definite;
 * the teacher's words and m(empty) = 1 stay. Unchanged when both already
 * are (eigenvalues >= -1e-12 of the largest). Dykstra's alternating
 * projections, at most max_iter rounds (after them the smallest relative
 * eigenvalue can still be slightly negative: theory/tied.md sec. 13 gives
 * the measured residuals). Returns the rounds taken (0: no change
 * needed), or -1 when the eigensolver fails. */
int aim_gram_project(aim_gram *g, double *mom, int max_iter);

#endif
