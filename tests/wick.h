/* Exact expectations of traces of products of Gaussian matrices by
 * Wick's theorem, at any finite d: the brute-force sum over every pairing
 * of the factor occurrences (crossing and twisted ones included), each
 * with its index classes found by union-find straight from the
 * covariances E F[r,c] F[r',c'] = s/d [r = r'][c = c'] of a factor F with
 * i.i.d. N(0, s/d) entries (plus [r = c'][c = r'] for a symmetric Wigner
 * factor, whose diagonal has variance 2 s/d, as SGD draws it). A pairing
 * of the occurrences of n cycles (words) with P pairs and V index classes
 * contributes prod_pairs s * prod_classes (range/d) * d^(V - P - n), so
 *     E prod_cycles Tr(w_c)/d = sum over pairings of that,
 * exactly at finite d when every range is a whole number of rows or
 * columns. Independent of src/planar.c (which keeps the leading, planar
 * pairings only): tests/test_planar.c checks planar.c against the
 * leading order of this sum, tests/test_start.c the initial moments
 * against SGD's matrices with its finite-d mean and covariance. Words are
 * described as in planar.h (factors, letters of one or two factors).
 * Included by a test file after cmocka.h; header-only because each test
 * is one executable. */
#ifndef AIM_WICK_H
#define AIM_WICK_H

#include <math.h>
#include <string.h>

#include "planar.h"
#include "words.h"

#define WICK_MAX 32 /* factor occurrences over all cycles */

typedef struct {
    int m, cycles;
    int start[WICK_MAX + 1]; /* first occurrence of cycle c; start[cycles] = m */
    int factor[WICK_MAX], transposed[WICK_MAX];
    double range[WICK_MAX]; /* of index j, before occurrence j, over d */
} wick_word;

typedef struct {
    double exact;   /* at the given d (0 when d = 0) */
    double leading; /* the coefficient of d^0 */
    int max_power;  /* the largest power of d of a pairing (-1000: none) */
    int pairings;
} wick_sum;

/* Appends the word w of the alphabet ab as a new cycle: each letter is
 * its factors (let, over fac); the index before a letter's first factor
 * ranges over d, the inner one over the second factor's columns when it
 * is transposed (rows otherwise). */
static void wick_add(wick_word *o, const aim_alphabet *ab, const char *w,
                     const aim_planar_factor *fac, const aim_planar_letter *let)
{
    if (!*w)
        fail_msg("wick: the empty word is the constant 1, not a cycle");
    if (o->cycles == 0)
        o->start[0] = 0;
    for (const char *c = w; *c; c++) {
        const char *at = strchr(ab->letters, *c);
        if (!at)
            fail_msg("wick: '%c' is not a letter of %s", *c, ab->letters);
        const aim_planar_letter *l = &let[at - ab->letters];
        for (int j = 0; j < l->n; j++) {
            const aim_planar_factor *f = &fac[l->factor[j]];
            if (o->m == WICK_MAX)
                fail_msg("wick: more than %d occurrences", WICK_MAX);
            o->factor[o->m] = l->factor[j];
            o->transposed[o->m] = l->transpose[j];
            o->range[o->m] = j == 0 || !l->transpose[j] ? 1.0 : (f->symmetric ? 1.0 : f->rho);
            o->m++;
        }
    }
    o->start[++o->cycles] = o->m;
}

static int wick_find(int *parent, int x)
{
    while (parent[x] != x)
        x = parent[x] = parent[parent[x]];
    return x;
}

static int wick_cycle_of(const wick_word *o, int x)
{
    int c = 0;
    while (o->start[c + 1] <= x)
        c++;
    return c;
}

/* the index after occurrence x (the one before the next, cyclically) */
static int wick_after(const wick_word *o, int x)
{
    const int c = wick_cycle_of(o, x);
    return x + 1 == o->start[c + 1] ? o->start[c] : x + 1;
}

typedef struct {
    const wick_word *o;
    const aim_planar_factor *fac;
    double d;
    int connected; /* 1: only pairings that join every cycle (two cycles) */
    wick_sum *out;
} wick_state;

static void wick_pairings(const wick_state *s, unsigned long long used, const int *parent,
                          double weight, int pairs, int cross)
{
    const wick_word *o = s->o;
    int p = 0;
    while (p < o->m && (used >> p & 1))
        p++;
    if (p == o->m) {
        if (s->connected && o->cycles > 1 && !cross)
            return;
        int pr[WICK_MAX], classes = 0;
        memcpy(pr, parent, sizeof pr);
        double w = weight;
        for (int x = 0; x < o->m; x++) {
            if (o->range[wick_find(pr, x)] != o->range[x])
                fail_msg("wick: a class mixes index ranges");
            if (wick_find(pr, x) == x) {
                classes++;
                w *= o->range[x];
            }
        }
        const int power = classes - pairs - o->cycles;
        s->out->pairings++;
        if (power > s->out->max_power)
            s->out->max_power = power;
        if (power == 0)
            s->out->leading += w;
        if (s->d > 0.0)
            s->out->exact += w * pow(s->d, power);
        return;
    }
    /* row and column index of occurrence x */
#define WICK_ROW(x) (o->transposed[x] ? wick_after(o, x) : (x))
#define WICK_COL(x) (o->transposed[x] ? (x) : wick_after(o, x))
    for (int q = p + 1; q < o->m; q++) {
        if ((used >> q & 1) || o->factor[q] != o->factor[p])
            continue;
        const aim_planar_factor *f = &s->fac[o->factor[p]];
        for (int term = 0; term < (f->symmetric ? 2 : 1); term++) {
            int pr[WICK_MAX];
            memcpy(pr, parent, sizeof pr);
            pr[wick_find(pr, WICK_ROW(p))] = wick_find(pr, term ? WICK_COL(q) : WICK_ROW(q));
            pr[wick_find(pr, WICK_COL(p))] = wick_find(pr, term ? WICK_ROW(q) : WICK_COL(q));
            wick_pairings(s, used | 1ull << p | 1ull << q, pr, weight * f->scale, pairs + 1,
                          cross || wick_cycle_of(o, p) != wick_cycle_of(o, q));
        }
    }
#undef WICK_ROW
#undef WICK_COL
}

/* The sum over the pairings of o's occurrences at dimension d (d = 0: the
 * leading order and the largest power only); connected: only pairings
 * with a pair across the two cycles (the covariance of two traces). */
static wick_sum wick_expect(const wick_word *o, const aim_planar_factor *fac, double d,
                            int connected)
{
    wick_sum out = {0.0, 0.0, -1000, 0};
    int parent[WICK_MAX];
    for (int x = 0; x < o->m; x++)
        parent[x] = x;
    const wick_state s = {o, fac, d, connected, &out};
    wick_pairings(&s, 0, parent, 1.0, 0, 0);
    return out;
}

#endif
