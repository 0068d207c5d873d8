/* Exact large-d moments of words in products of Gaussian matrices
 * (planar.h): the leading order of the genus expansion. Written for this
 * project; no library computes these mixed moments of letters sharing
 * factors (free probability alone, src/freecum.h, needs free letters).
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
 * matrices. */
#include "planar.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* One factor occurrence: factor, transposed?, range of the index after
 * it (in units of d). */
typedef struct {
    int factor, transposed;
    double rho_after;
} occurrence;

/* The validated description: each letter's occurrences. */
typedef struct {
    const aim_planar_factor *factors;
    int n_letters;
    unsigned char code[256]; /* letter -> 1 + its rank, 0 if none */
    occurrence occ[AIM_ALPHABET_MAX][2];
    int n_occ[AIM_ALPHABET_MAX];
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
    if (!factors || n_factors < 1) {
        snprintf(err, n, "no factors");
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
        sp->occ[k][i] = (occurrence){l->factor[i], l->transpose[i],
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

static int compile(planar_spec *sp, const aim_alphabet *ab, const aim_planar_factor *factors,
                   int n_factors, const aim_planar_letter *letters, char *err, size_t n)
{
    memset(sp, 0, sizeof *sp);
    sp->factors = factors;
    if (check_factors(factors, n_factors, err, n))
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

/* m(w) by the recursion of sec. 5; -1 when w is not a word of the
 * alphabet or too long. */
static int word_moment(const planar_spec *sp, const char *w, double *moment)
{
    enum { MAX_OCC = 2 * AIM_WORD_MAX };
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
    /* W[a][b], b - a even; W[a][a] = 1 */
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
    *moment = W[0][m];
    return 0;
}

int aim_planar_word(const aim_alphabet *ab, const char *w,
                    const aim_planar_factor *factors, int n_factors,
                    const aim_planar_letter *letters,
                    double *moment, char *err, size_t n)
{
    planar_spec sp;
    if (compile(&sp, ab, factors, n_factors, letters, err, n))
        return -1;
    if (word_moment(&sp, w, moment)) {
        snprintf(err, n, "'%s' is not a word of at most %d letters of \"%s\"", w,
                 AIM_WORD_MAX, ab->letters);
        return -1;
    }
    return 0;
}

int aim_planar_moments(const aim_wordset *ws, int max_len,
                       const aim_planar_factor *factors, int n_factors,
                       const aim_planar_letter *letters,
                       double *moments, char *err, size_t n)
{
    if (max_len < 0 || max_len > aim_wordset_max_len(ws)) {
        snprintf(err, n, "max_len %d outside 0 .. %d (the word set's)", max_len,
                 aim_wordset_max_len(ws));
        return -1;
    }
    planar_spec sp;
    if (compile(&sp, aim_wordset_alphabet(ws), factors, n_factors, letters, err, n))
        return -1;
    const int end = aim_wordset_first(ws, max_len + 1);
    for (int i = 0; i < end; i++)
        word_moment(&sp, aim_wordset_word(ws, i), &moments[i]);
    return 0;
}
