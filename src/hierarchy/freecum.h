/* aim_freecum: multivariate free cumulants of the words of an
 * aim_wordset, and moments from cumulants, through the moment-cumulant
 * formula of free probability:
 *     phi(L1 ... Ln) = sum over non-crossing partitions pi of {1..n} of
 *                      prod over blocks B of pi of kappa(L_B),
 * where L_B is the sub-word of the letters at B's positions, in order.
 * For a tracial state (the normalised trace) kappa is invariant under
 * rotation of its arguments, and for real matrices under transposition,
 * so cumulants are indexed by the same canonical words as moments.
 * Used for the exact initial moments of independent (asymptotically
 * free) matrices, whose mixed cumulants vanish, and for the hierarchy's
 * closures (theory/tied.md). */
#ifndef AIM_FREECUM_H
#define AIM_FREECUM_H

#include "words.h"

typedef struct aim_freecum aim_freecum;

/* Precomputes the non-crossing partition expansion of every word of ws
 * (as lists of block word indices). ws must outlive the object. NULL on
 * allocation failure. */
aim_freecum *aim_freecum_create(const aim_wordset *ws);
void aim_freecum_free(aim_freecum *fc);

/* Cumulants of every word of length 1 .. max_len from the moments of
 * the same words (moments[0] = 1 is the empty word); cumulants[0] is
 * set to 0. Entries above max_len are left untouched. */
void aim_freecum_cumulants(const aim_freecum *fc, const double *moments,
                           double *cumulants, int max_len);

/* Moments of every word of length min_len .. max_len (1 <= min_len)
 * from the cumulants of all words of length 1 .. max_len. Entries
 * outside that range are left untouched. */
void aim_freecum_moments(const aim_freecum *fc, const double *cumulants,
                         double *moments, int min_len, int max_len);

#endif
