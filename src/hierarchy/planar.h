/* aim_planar: exact large-d moments m(w) = lim Tr(L1 L2 ... Ln)/d of the
 * words of an aim_wordset whose letters are products of independent
 * Gaussian random matrices (the leading order of the genus expansion:
 * non-crossing pairings; the derivation heads planar.c). These are the
 * initial moments of the hierarchies at tau = 0: a tied student W W^T, an
 * untied one (A = U U^T, B = V V^T, K = U V^T, k = V U^T), and direct,
 * Wigner, tied or untied teachers, in any combination of independent
 * factors, including letters that share a factor (A and K share U), where
 * the letters are not free and aim_freecum cannot be used alone, and of
 * factors linked on shared columns (the informed start; *_linked).
 *
 * Dimensions are multiples of d: every letter is d x d, and each factor
 * has d rows and rho d columns. */
#ifndef AIM_PLANAR_H
#define AIM_PLANAR_H

#include <stddef.h>

#include "words.h"

/* A Gaussian factor: a d x (rho d) matrix with i.i.d. N(0, scale/d)
 * entries (rho > 0, scale >= 0), or, symmetric = 1, a d x d Wigner
 * matrix, symmetric, with off-diagonal entries N(0, scale/d) (rho is then
 * ignored and taken as 1; the diagonal's variance does not enter at
 * large d). Distinct factors are independent. */
typedef struct {
    double rho, scale;
    int symmetric;
} aim_planar_factor;

/* A letter as the product of n = 1 or 2 factors, factor[i] (an index into
 * the factor array), transposed when transpose[i] = 1. Examples with
 * factors 0 = U, 1 = V, 2 = G: A = U U^T is {2, {0, 0}, {0, 1}}, K = U V^T
 * is {2, {0, 1}, {0, 1}}, k = V U^T is {2, {1, 0}, {0, 1}}, a direct
 * non-symmetric teacher T = G is {1, {2}, {0}} and its transpose t is
 * {1, {2}, {1}}. The product must be d x d: a factor's rho d columns must
 * meet a d (one factor: rho = 1) or the next factor's equal inner
 * dimension (U V^T needs rho_U = rho_V, compared exactly). */
typedef struct {
    int n;
    int factor[2];
    int transpose[2];
} aim_planar_letter;

/* At most this many factors in one description. */
#define AIM_PLANAR_FACTORS_MAX 8

/* A correlation between two distinct factors f and g of one kind (both
 * non-symmetric, or both Wigner with shared = 1): they share their d rows
 * and their first shared d columns (0 < shared <= both widths), where
 * E F_f[r, c] F_g[r, c] = cov/d (|cov| <= sqrt(scale_f scale_g)); every
 * other pair of entries is independent. The informed start
 * (theory/model.md sec. 4, src/students/inform.h) mixes student and teacher
 * factors this way. */
typedef struct {
    int f, g;
    double cov, shared;
} aim_planar_link;

/* moments[i] = m(w_i) for every word i of ws of length <= max_len
 * (moments[0] = 1; entries of longer words are left untouched).
 * letters[k] describes letter k of the wordset's alphabet (all of them,
 * in the alphabet's order), and the letter the alphabet names as k's
 * transpose must be the transposed product (factors reversed, each
 * non-symmetric one's transpose flag flipped). Cost: O(n^3) per word of
 * n factor occurrences, microseconds at n = 22. Returns 0, or -1 with a
 * message in err (n bytes) for an inconsistent description (a bad factor
 * or letter, mismatched dimensions, a transpose letter that is not the
 * transposed product) or max_len outside 0 .. the set's max_len. */
int aim_planar_moments(const aim_wordset *ws, int max_len,
                       const aim_planar_factor *factors, int n_factors,
                       const aim_planar_letter *letters,
                       double *moments, char *err, size_t n);

/* The same for one word w of the alphabet ab (any word of up to
 * AIM_WORD_MAX letters, canonical or not) into *moment. Returns 0, or -1
 * with a message in err as above, or for a word not of the alphabet. */
int aim_planar_word(const aim_alphabet *ab, const char *w,
                    const aim_planar_factor *factors, int n_factors,
                    const aim_planar_letter *letters,
                    double *moment, char *err, size_t n);

/* The same two with linked factors (links[0 .. n_links), each pair of
 * factors linked at most once; n_links = 0: the independent factors of
 * the functions above). Returns 0, or -1 with a message in err as above,
 * also for a bad link or out of memory. */
int aim_planar_moments_linked(const aim_wordset *ws, int max_len,
                              const aim_planar_factor *factors, int n_factors,
                              const aim_planar_link *links, int n_links,
                              const aim_planar_letter *letters,
                              double *moments, char *err, size_t n);
int aim_planar_word_linked(const aim_alphabet *ab, const char *w,
                           const aim_planar_factor *factors, int n_factors,
                           const aim_planar_link *links, int n_links,
                           const aim_planar_letter *letters,
                           double *moment, char *err, size_t n);

#endif
