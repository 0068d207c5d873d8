/* Exact large-d moments of words in products of Gaussian matrices
 * (planar.h): the leading order of the genus expansion. Written for this
 * project; no library computes these mixed moments of letters sharing
 * factors (free probability alone, src/hierarchy/freecum.h, needs free letters).
 *
 * 1. Occurrences and indices. Writing every letter of w as its factors,
 * w becomes a cyclic sequence of m factor occurrences X_0 ... X_{m-1},
 * X_j = F or F^T for a factor F = F_{f_j}, and
 *     Tr(X_0 ... X_{m-1}) = sum over i_0 .. i_{m-1} of
 *                           prod_j (X_j)[i_j, i_{j+1}],   i_m = i_0.
 * Index i_j sits before occurrence j and i_{j+1} after it. Its range is
 * d between two letters and rho d (the inner dimension) between the two
 * factors of a letter. The entry (X_j)[i_j, i_{j+1}] is F[i_j, i_{j+1}]
 * for a plain occurrence and F[i_{j+1}, i_j] for a transposed one: the
 * factor's row index is the one before a plain occurrence, the one after
 * a transposed one.
 *
 * 2. Wick's theorem. The factors are centred Gaussian, distinct factors
 * independent, so the expectation is a sum over pairings of the
 * occurrences, pairs within one factor, of the products of covariances.
 * For a non-symmetric factor E F[r, c] F[r', c'] = (s/d) [r = r'][c = c']:
 * a pair identifies row with row and column with column. For a plain
 * occurrence i with a transposed occurrence j that is
 *     (index before i) = (index after j), (index after i) = (index before j),
 * and for two plain (or two transposed) ones before = before and
 * after = after. A symmetric Wigner factor has E H[r,c] H[r',c'] =
 * (s/d) ([r = r'][c = c'] + [r = c'][c = r']) off the diagonal, one
 * identification of each kind for any two occurrences (the diagonal, one
 * index value in d, only changes lower orders).
 *
 * 3. Why only non-crossing pairings survive. Draw the trace as a polygon
 * whose m sides are the occurrences and whose m corners are the indices;
 * a pair glues two sides, the first identification above ("untwisted")
 * with opposite orientations, the second ("twisted") with equal ones.
 * The glued polygon is a closed surface with F = 1 face, E = m/2 edges
 * and V vertices, the classes of identified indices. Summing each class
 * over its range (rho_c d), with s/d per pair and the 1/d of the
 * normalisation, a pairing contributes
 *     prod_pairs s_f * prod_classes rho_c * d^(V - m/2 - 1),
 * and V - m/2 - 1 = chi - 2 <= 0 (Euler characteristic chi = V - E + F),
 * with equality only for the sphere: orientable (every pair untwisted)
 * and of genus 0, i.e. non-crossing (two crossing untwisted pairs make a
 * handle). In permutation terms (Biane): for untwisted pairings the
 * classes are the cycles of gamma pi (gamma the cyclic shift, pi the
 * pairing), and #cycles(gamma pi) = m/2 + 1 exactly when pi is
 * non-crossing. So the limit is the sum over non-crossing pairings with
 * every pair untwisted (plain with transposed for a non-symmetric
 * factor, any two occurrences of a Wigner factor, with the untwisted
 * identification). Mean zero and independence leave nothing else; a word
 * with an odd number of occurrences of some factor has moment 0.
 *
 * 4. Weight of a non-crossing pairing. An arc (i, j), i < j, identifies
 * the index after i with the index before j, the first and last indices
 * inside the arc; with the arcs nested inside it, by induction, all
 * indices inside (i, j) not enclosed by an inner arc form one class, the
 * arc's inner face, whose range is that of the index after i (all
 * indices of a class have the same range: they are rows, or columns, of
 * one factor). The index before i joins the index after j, in the face
 * enclosing the arc. So V = m/2 + 1 (one face per arc plus the outer
 * face, which holds index 0, a letter boundary of range d), and the
 * weight is prod over arcs (i, j) of s_{f_i} rho_after(i), with
 * rho_after(i) = rho of the index after occurrence i (1 for d).
 *
 * 5. Recursion. Cut the cycle at index 0 (a pairing is non-crossing on
 * the circle iff it is on the line 0 .. m-1). W(a, b), the sum over the
 * non-crossing untwisted pairings of occurrences a .. b-1 (b - a even) of
 * their weights, pairs a with its partner j, enclosing a .. j (their
 * pairings stay inside) and leaving j+1 .. b-1:
 *     W(a, a) = 1,
 *     W(a, b) = sum over j = a+1, a+3, .., b-1, (a, j) an untwisted pair,
 *               of s_{f_a} rho_after(a) W(a+1, j) W(j+1, b),
 * and m(w) = W(0, m): O(m^3) for a word, each pairing counted once (a's
 * partner is unique). tests/test_planar.c checks this against a brute
 * force over all Wick pairings (crossing and twisted included) with
 * explicit index classes, and tests/test_planar_sample.c against sampled
 * matrices.
 *
 * 6. Linked factors (the informed start, theory/model.md sec. 4). Two
 * distinct factors F, G may be correlated on their first q d columns:
 * E F[r, c] G[r', c'] = (c_FG/d) [r = r'][c = c'][c < q d]. A pair of
 * their occurrences then weighs c_FG instead of a scale, under the same
 * untwisted rule, and the Euler argument of sec. 3 is unchanged. Index
 * classes may now hold columns of factors of different widths, and a
 * class ranges over the columns every one of its entries has: the
 * smallest range among the sides of the occurrences around it, and the
 * shared width q of every linked pair whose column index (after a plain,
 * before a transposed occurrence) lies in it. With the face structure
 * of sec. 4 the sides around the inner face of an arc (i, j) are the
 * side after i, the side before j and the outer sides of the arcs
 * directly inside; so the recursion carries, for each segment, its sum
 * split by the smallest outer side of its top-level arcs (k, one of the
 * few distinct ranges, or none):
 *     V(a, a; none) = 1,
 *     V(a, b; min(out(a, j), k)) += c_(a, j) * sum over k' of
 *         V(a+1, j; k') range(min(in(a, j), k')) * V(j+1, b; k),
 * with in(a, j) = min(after a, before j) and out(a, j) = min(before a,
 * after j), each capped by the pair's shared width on its column side,
 * and m(w) = sum over k of V(0, m; k) (the outer face holds index 0,
 * between letters, over d rows). Without links every class has one
 * range and this is the W recursion above. */
#include "planar.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One factor occurrence: factor, transposed?, ranges of the indices
 * before and after it (in units of d). */
typedef struct {
    int factor, transposed;
    double rho_before, rho_after;
} occurrence;

/* The validated description: each letter's occurrences, and every pair
 * of factors' covariance (the diagonal: the scales) and shared width. */
typedef struct {
    const aim_planar_factor *factors;
    int n_letters;
    unsigned char code[256]; /* letter -> 1 + its rank, 0 if none */
    occurrence occ[AIM_ALPHABET_MAX][2];
    int n_occ[AIM_ALPHABET_MAX];
    double cov[AIM_PLANAR_FACTORS_MAX][AIM_PLANAR_FACTORS_MAX];
    double shared[AIM_PLANAR_FACTORS_MAX][AIM_PLANAR_FACTORS_MAX];
    int linked; /* any link: the recursion of sec. 6 */
} planar_spec;

static double factor_rho(const aim_planar_factor *f)
{
    return f->symmetric ? 1.0 : f->rho;
}

/* Ranges (units of d) of a factor occurrence's index before / after it:
 * rows d, columns rho d. */
static double range_before(const aim_planar_factor *f, int transposed)
{
    return transposed ? factor_rho(f) : 1.0;
}

static double range_after(const aim_planar_factor *f, int transposed)
{
    return transposed ? 1.0 : factor_rho(f);
}

static int check_factors(const aim_planar_factor *factors, int n_factors, char *err,
                         size_t n)
{
    if (!factors || n_factors < 1 || n_factors > AIM_PLANAR_FACTORS_MAX) {
        snprintf(err, n, "%d factors (1 .. %d)", factors ? n_factors : 0,
                 AIM_PLANAR_FACTORS_MAX);
        return -1;
    }
    for (int f = 0; f < n_factors; f++) {
        const aim_planar_factor *g = &factors[f];
        if (g->symmetric != 0 && g->symmetric != 1) {
            snprintf(err, n, "factor %d: symmetric must be 0 or 1, not %d", f, g->symmetric);
            return -1;
        }
        if (!(g->scale >= 0.0) || !isfinite(g->scale) ||
            (!g->symmetric && (!(g->rho > 0.0) || !isfinite(g->rho)))) {
            snprintf(err, n, "factor %d: needs rho > 0 and scale >= 0, finite "
                             "(rho = %g, scale = %g)", f, g->rho, g->scale);
            return -1;
        }
    }
    return 0;
}

/* Letter k of the alphabet (character c) into occurrences, checking
 * that the product is d x d. */
static int compile_letter(planar_spec *sp, int n_factors, const aim_planar_letter *l,
                          int k, char c, char *err, size_t n)
{
    if (l->n != 1 && l->n != 2) {
        snprintf(err, n, "letter '%c': a product of 1 or 2 factors, not %d", c, l->n);
        return -1;
    }
    for (int i = 0; i < l->n; i++) {
        if (l->factor[i] < 0 || l->factor[i] >= n_factors ||
            (l->transpose[i] != 0 && l->transpose[i] != 1)) {
            snprintf(err, n, "letter '%c': factor %d is %d (0 .. %d), transpose %d (0 or 1)",
                     c, i, l->factor[i], n_factors - 1, l->transpose[i]);
            return -1;
        }
        const aim_planar_factor *f = &sp->factors[l->factor[i]];
        const double before = range_before(f, l->transpose[i]);
        const double want = i == 0 ? 1.0 : sp->occ[k][0].rho_after;
        if (before != want) {
            snprintf(err, n, "letter '%c': factor %d%s starts with %g d rows where %g d "
                             "are needed", c, l->factor[i], l->transpose[i] ? "^T" : "",
                     before, want);
            return -1;
        }
        sp->occ[k][i] = (occurrence){l->factor[i], l->transpose[i], before,
                                     range_after(f, l->transpose[i])};
    }
    if (sp->occ[k][l->n - 1].rho_after != 1.0) {
        snprintf(err, n, "letter '%c': the product has %g d columns, not d", c,
                 sp->occ[k][l->n - 1].rho_after);
        return -1;
    }
    sp->n_occ[k] = l->n;
    return 0;
}

/* Is letter t the transposed product of letter k? */
static int is_transpose(const planar_spec *sp, int k, int t)
{
    const int nk = sp->n_occ[k];
    if (sp->n_occ[t] != nk)
        return 0;
    for (int i = 0; i < nk; i++) {
        const occurrence *a = &sp->occ[k][i], *b = &sp->occ[t][nk - 1 - i];
        if (a->factor != b->factor)
            return 0;
        if (!sp->factors[a->factor].symmetric && a->transposed == b->transposed)
            return 0;
    }
    return 1;
}

/* The covariances and shared widths of every pair of factors: a factor
 * with itself its scale over its whole width, two distinct factors their
 * link's, or 0 (independent). */
static int compile_links(planar_spec *sp, int n_factors, const aim_planar_link *links,
                         int n_links, char *err, size_t n)
{
    for (int f = 0; f < n_factors; f++) {
        sp->cov[f][f] = sp->factors[f].scale;
        sp->shared[f][f] = factor_rho(&sp->factors[f]);
    }
    if (n_links > 0 && !links) {
        snprintf(err, n, "%d links but no link array", n_links);
        return -1;
    }
    for (int i = 0; i < n_links; i++) {
        const aim_planar_link *k = &links[i];
        if (k->f < 0 || k->f >= n_factors || k->g < 0 || k->g >= n_factors || k->f == k->g) {
            snprintf(err, n, "link %d: factors %d and %d (two distinct ones of 0 .. %d)", i,
                     k->f, k->g, n_factors - 1);
            return -1;
        }
        const aim_planar_factor *a = &sp->factors[k->f], *b = &sp->factors[k->g];
        const double width = fmin(factor_rho(a), factor_rho(b));
        if (a->symmetric != b->symmetric || (a->symmetric && k->shared != 1.0) ||
            !isfinite(k->cov) ||
            fabs(k->cov) > sqrt(a->scale * b->scale) || !(k->shared > 0.0) ||
            k->shared > width || sp->cov[k->f][k->g] != 0.0) {
            snprintf(err, n, "link %d (factors %d, %d): needs factors of one kind (both "
                             "symmetric, then shared = 1, or neither), |cov| <= sqrt of the scales' product "
                             "(%g), 0 < shared <= %g and one link per pair (cov = %g, "
                             "shared = %g)", i, k->f, k->g, sqrt(a->scale * b->scale),
                     width, k->cov, k->shared);
            return -1;
        }
        sp->cov[k->f][k->g] = sp->cov[k->g][k->f] = k->cov;
        sp->linked = 1;
        sp->shared[k->f][k->g] = sp->shared[k->g][k->f] = k->shared;
    }
    return 0;
}

static int compile(planar_spec *sp, const aim_alphabet *ab, const aim_planar_factor *factors,
                   int n_factors, const aim_planar_link *links, int n_links,
                   const aim_planar_letter *letters, char *err, size_t n)
{
    memset(sp, 0, sizeof *sp);
    sp->factors = factors;
    if (check_factors(factors, n_factors, err, n) ||
        compile_links(sp, n_factors, links, n_links, err, n))
        return -1;
    if (!letters) {
        snprintf(err, n, "no letters");
        return -1;
    }
    char empty[AIM_WORD_MAX + 1];
    if (aim_word_canonical(ab, "", empty)) { /* validates the alphabet */
        snprintf(err, n, "invalid alphabet");
        return -1;
    }
    sp->n_letters = (int)strlen(ab->letters);
    for (int i = 0; i < sp->n_letters; i++) {
        sp->code[(unsigned char)ab->letters[i]] = (unsigned char)(i + 1);
        if (compile_letter(sp, n_factors, &letters[i], i, ab->letters[i], err, n))
            return -1;
    }
    for (int i = 0; i < sp->n_letters; i++) {
        const char *t = strchr(ab->letters, ab->transpose[i]);
        if (!is_transpose(sp, i, (int)(t - ab->letters))) {
            snprintf(err, n, "letter '%c' is not the transposed product of letter '%c'",
                     *t, ab->letters[i]);
            return -1;
        }
    }
    return 0;
}

/* Index of the smallest of two ranges (sorted ranges, so the smaller
 * index). */
static int min_index(int a, int b) { return a < b ? a : b; }

/* Position of range r in the sorted distinct ranges R[0 .. nr). */
static int range_index(const double *R, int nr, double r)
{
    int k = 0;
    while (k < nr && R[k] != r)
        k++;
    return k;
}

enum { MAX_OCC = 2 * AIM_WORD_MAX };

/* m(w) of independent factors by the recursion of sec. 5, on the word's
 * m occurrences o (m even): every class has one range, that of the
 * index after the arc's first occurrence. Kept beside the recursion of
 * sec. 6, which gives the same value, because it is several times
 * faster (the hierarchies' random starts have thousands of words). */
static double independent_moment(const planar_spec *sp, const occurrence *o, int m)
{
    double W[MAX_OCC + 1][MAX_OCC + 1];
    for (int a = 0; a <= m; a++)
        W[a][a] = 1.0;
    for (int len = 2; len <= m; len += 2)
        for (int a = 0; a + len <= m; a++) {
            const int b = a + len;
            const aim_planar_factor *f = &sp->factors[o[a].factor];
            double sum = 0.0;
            for (int j = a + 1; j < b; j += 2)
                if (o[j].factor == o[a].factor &&
                    (f->symmetric || o[j].transposed != o[a].transposed))
                    sum += W[a + 1][j] * W[j + 1][b];
            W[a][b] = sum * f->scale * o[a].rho_after;
        }
    return W[0][m];
}

/* m(w) by the recursion of sec. 5 and 6: 0 (the moment in *moment), -1
 * when w is not a word of the alphabet or too long, -2 out of memory. */
static int word_moment(const planar_spec *sp, const char *w, double *moment)
{
    occurrence o[MAX_OCC];
    int m = 0;
    for (int i = 0; w[i]; i++) {
        const int k = sp->code[(unsigned char)w[i]] - 1;
        if (k < 0 || i >= AIM_WORD_MAX)
            return -1;
        for (int j = 0; j < sp->n_occ[k]; j++)
            o[m++] = sp->occ[k][j];
    }
    if (m % 2) {
        *moment = 0.0;
        return 0;
    }
    if (!sp->linked) {
        *moment = independent_moment(sp, o, m);
        return 0;
    }
    /* the distinct ranges a face can have: the sides' and the shared
     * widths of the links, sorted; index nr stands for "no side yet" */
    double R[2 * MAX_OCC + AIM_PLANAR_FACTORS_MAX * AIM_PLANAR_FACTORS_MAX];
    int nr = 0;
    for (int j = 0; j < m; j++) {
        const double side[2] = {o[j].rho_before, o[j].rho_after};
        for (int e = 0; e < 2; e++)
            if (range_index(R, nr, side[e]) == nr)
                R[nr++] = side[e];
    }
    for (int f = 0; f < AIM_PLANAR_FACTORS_MAX; f++)
        for (int g = 0; g < AIM_PLANAR_FACTORS_MAX; g++)
            if (sp->cov[f][g] != 0.0 && range_index(R, nr, sp->shared[f][g]) == nr)
                R[nr++] = sp->shared[f][g];
    for (int i = 1; i < nr; i++) /* insertion sort: a handful of values */
        for (int j = i; j > 0 && R[j - 1] > R[j]; j--) {
            const double t = R[j];
            R[j] = R[j - 1];
            R[j - 1] = t;
        }
    const int nk = nr + 1;
    /* V[(a (m + 1) + b) nk + k]: sec. 6 */
    double *V = calloc((size_t)(m + 1) * (size_t)(m + 1) * (size_t)nk, sizeof *V);
    if (!V)
        return -2;
#define CELL(a, b, k) V[((size_t)(a) * (size_t)(m + 1) + (size_t)(b)) * (size_t)nk + (size_t)(k)]
    for (int a = 0; a <= m; a++)
        CELL(a, a, nr) = 1.0;
    for (int len = 2; len <= m; len += 2)
        for (int a = 0; a + len <= m; a++) {
            const int b = a + len;
            const occurrence *oa = &o[a];
            const int sym = sp->factors[oa->factor].symmetric;
            for (int j = a + 1; j < b; j += 2) {
                const occurrence *oj = &o[j];
                const double cv = sp->cov[oa->factor][oj->factor];
                if (cv == 0.0 || (!sym && oj->transposed == oa->transposed))
                    continue;
                /* the pair's column index (the inner face for a plain a,
                 * the enclosing one for a transposed a) runs over the
                 * shared columns only */
                const int cap = range_index(R, nr, sp->shared[oa->factor][oj->factor]);
                int in_side = min_index(range_index(R, nr, oa->rho_after),
                                        range_index(R, nr, oj->rho_before));
                int out_side = min_index(range_index(R, nr, oa->rho_before),
                                         range_index(R, nr, oj->rho_after));
                if (!sym && !oa->transposed)
                    in_side = min_index(in_side, cap);
                else if (!sym)
                    out_side = min_index(out_side, cap);
                double inner = 0.0;
                for (int k = 0; k < nk; k++)
                    if (CELL(a + 1, j, k) != 0.0)
                        inner += CELL(a + 1, j, k) * R[min_index(in_side, k)];
                if (inner == 0.0)
                    continue;
                for (int k = 0; k < nk; k++)
                    if (CELL(j + 1, b, k) != 0.0)
                        CELL(a, b, min_index(out_side, k)) += cv * inner * CELL(j + 1, b, k);
            }
        }
    /* the outer face holds index 0, between two letters: d rows */
    double sum = 0.0;
    for (int k = 0; k < nk; k++)
        sum += CELL(0, m, k);
#undef CELL
    free(V);
    *moment = sum;
    return 0;
}

static int word_error(int status, const aim_alphabet *ab, const char *w, char *err, size_t n)
{
    if (status == -2)
        snprintf(err, n, "out of memory");
    else
        snprintf(err, n, "'%s' is not a word of at most %d letters of \"%s\"", w,
                 AIM_WORD_MAX, ab->letters);
    return -1;
}

int aim_planar_word_linked(const aim_alphabet *ab, const char *w,
                           const aim_planar_factor *factors, int n_factors,
                           const aim_planar_link *links, int n_links,
                           const aim_planar_letter *letters,
                           double *moment, char *err, size_t n)
{
    planar_spec sp;
    if (compile(&sp, ab, factors, n_factors, links, n_links, letters, err, n))
        return -1;
    const int st = word_moment(&sp, w, moment);
    return st ? word_error(st, ab, w, err, n) : 0;
}

int aim_planar_word(const aim_alphabet *ab, const char *w,
                    const aim_planar_factor *factors, int n_factors,
                    const aim_planar_letter *letters,
                    double *moment, char *err, size_t n)
{
    return aim_planar_word_linked(ab, w, factors, n_factors, NULL, 0, letters, moment, err,
                                  n);
}

int aim_planar_moments_linked(const aim_wordset *ws, int max_len,
                              const aim_planar_factor *factors, int n_factors,
                              const aim_planar_link *links, int n_links,
                              const aim_planar_letter *letters,
                              double *moments, char *err, size_t n)
{
    if (max_len < 0 || max_len > aim_wordset_max_len(ws)) {
        snprintf(err, n, "max_len %d outside 0 .. %d (the word set's)", max_len,
                 aim_wordset_max_len(ws));
        return -1;
    }
    planar_spec sp;
    if (compile(&sp, aim_wordset_alphabet(ws), factors, n_factors, links, n_links, letters,
                err, n))
        return -1;
    const int end = aim_wordset_first(ws, max_len + 1);
    for (int i = 0; i < end; i++) {
        const int st = word_moment(&sp, aim_wordset_word(ws, i), &moments[i]);
        if (st)
            return word_error(st, aim_wordset_alphabet(ws), aim_wordset_word(ws, i), err, n);
    }
    return 0;
}

int aim_planar_moments(const aim_wordset *ws, int max_len,
                       const aim_planar_factor *factors, int n_factors,
                       const aim_planar_letter *letters,
                       double *moments, char *err, size_t n)
{
    return aim_planar_moments_linked(ws, max_len, factors, n_factors, NULL, 0, letters,
                                     moments, err, n);
}
