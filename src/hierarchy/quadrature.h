/* aim_quadrature: the quadrature closure (theory/tied.md sec. 14), the
 * non-commutative analogue of Gauss quadrature for a moment sequence of
 * two symmetric letters, a student P (letter 0, positive semi-definite)
 * and a teacher (letter 1). From the moments, the GNS construction on the
 * words of length <= k = floor(M / 2): the Gram matrix
 *     G[u][v] = m(u^T v)
 * (lengths <= 2k <= M: tracked) has a range of rank r (eigenvalues below
 * a relative threshold dropped), in which the compressed multiplication
 * operators
 *     X_a[u][v] = m(u^T a v),  a = P, teacher
 * (lengths <= 2k + 1: tracked when M is odd; at even M the entries with
 * |u| = |v| = k are words of length M + 1, read from the moments passed
 * in, i.e. the prior closure's values) are r x r real symmetric matrices,
 * X_P with its negative eigenvalues raised to 0. Every word w containing
 * the student letter then gets the vacuum moment <1| w(X_P, X_T) |1> of
 * that pair, averaged over the rotations and the transposition of w (the
 * vacuum state is not a trace). For one letter this is Gauss quadrature:
 * the tracked moments are reproduced (where G keeps its full rank), the
 * longer ones are those of an r-atom law. */
#ifndef AIM_QUADRATURE_H
#define AIM_QUADRATURE_H

#include "words.h"

typedef struct aim_quadrature aim_quadrature;

/* For the words of ws up to length M + 1 (ws's max_len >= M + 1, its
 * alphabet two self-transposed letters). Eigenvalues of the unit-diagonal
 * Gram matrix (and of the block the even-M completion inverts) below
 * rank_floor times the largest are dropped (0 <= rank_floor < 1). NULL on
 * allocation failure or bad arguments. */
aim_quadrature *aim_quadrature_create(const aim_wordset *ws, int order, double rank_floor);
void aim_quadrature_free(aim_quadrature *q);

/* Replaces the moments of every word of length 1 .. M + 1 that contains
 * the student letter by the symmetrised vacuum moments of the compressed
 * pair built from mom (teacher's words and m(empty) = 1 stay). Returns
 * the rank r kept, or -1 when the eigensolver fails or G has no positive
 * eigenvalue (mom unchanged then). */
int aim_quadrature_close(aim_quadrature *q, double *mom);

/* The vacuum moments before the symmetrisation: for every word i of the
 * set up to length M + 1 (its canonical representative as written),
 * raw[i] = <1| w_i(X_P, X_T) |1>, after aim_quadrature_close. The test
 * of the construction (tests/test_closure_quadrature.c). */
void aim_quadrature_vacuum(const aim_quadrature *q, double *raw);

#endif
