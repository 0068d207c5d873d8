/* Exact expectations of traces of products of Gaussian matrices by
 * Wick's theorem, at any finite d: the brute-force sum over every pairing
 * of the factor occurrences (crossing and twisted ones included), each
 * with its index classes found by union-find straight from the
 * covariances E F[r,c] F[r',c'] = s/d [r = r'][c = c'] of a factor F with
 * i.i.d. N(0, s/d) entries (plus [r = c'][c = r'] for a symmetric Wigner
 * factor, whose diagonal has variance 2 s/d, as SGD draws it), and those
 * of linked factors (planar.h's aim_planar_link: cov/d on their first
 * shared columns; a class then ranges over the columns all its entries
 * have). A pairing
 * of the occurrences of n cycles (words) with P pairs and V index classes
 * contributes prod_pairs s * prod_classes (range/d) * d^(V - P - n), so
 *     E prod_cycles Tr(w_c)/d = sum over pairings of that,
 * exactly at finite d when every range is a whole number of rows or
 * columns. Independent of src/hierarchy/planar.c (which keeps the leading, planar
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
    const aim_planar_link *links; /* correlated factor pairs (planar.h) */
    int n_links;
    double d;
    int connected; /* 1: only pairings that join every cycle (two cycles) */
    wick_sum *out;
} wick_state;

/* The covariance and shared width (INFINITY: the factor's own) of an
 * entry pair of factors f and g; 0 when independent. */
static double wick_cov(const wick_state *s, int f, int g, double *shared)
{
    *shared = INFINITY;
    if (f == g)
        return s->fac[f].scale;
    for (int i = 0; i < s->n_links; i++) {
        const aim_planar_link *k = &s->links[i];
        if ((k->f == f && k->g == g) || (k->f == g && k->g == f)) {
            *shared = k->shared;
            return k->cov;
        }
    }
    return 0.0;
}

static void wick_pairings(const wick_state *s, unsigned long long used, const int *parent,
                          const double *cap, double weight, int pairs, int cross)
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
        double w = weight, range[WICK_MAX];
        /* a class ranges over the columns all its entries have: the
         * smallest of its indices' ranges and of its linked pairs' shared
         * widths (without links every class has one range) */
        for (int x = 0; x < o->m; x++)
            range[x] = INFINITY;
        for (int x = 0; x < o->m; x++) {
            const int r = wick_find(pr, x);
            if (s->n_links == 0 && o->range[r] != o->range[x])
                fail_msg("wick: a class mixes index ranges");
            range[r] = fmin(range[r], fmin(o->range[x], cap[x]));
        }
        for (int x = 0; x < o->m; x++)
            if (wick_find(pr, x) == x) {
                classes++;
                w *= range[x];
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
        double shared;
        const double cv = (used >> q & 1) ? 0.0 : wick_cov(s, o->factor[p], o->factor[q], &shared);
        if (cv == 0.0)
            continue;
        const aim_planar_factor *f = &s->fac[o->factor[p]];
        for (int term = 0; term < (f->symmetric ? 2 : 1); term++) {
            int pr[WICK_MAX];
            double cp[WICK_MAX];
            memcpy(pr, parent, sizeof pr);
            memcpy(cp, cap, sizeof cp);
            /* the pair's column index runs over the shared columns only
             * (capped on an index of the class; applied at the end) */
            cp[WICK_COL(p)] = fmin(cp[WICK_COL(p)], shared);
            pr[wick_find(pr, WICK_ROW(p))] = wick_find(pr, term ? WICK_COL(q) : WICK_ROW(q));
            pr[wick_find(pr, WICK_COL(p))] = wick_find(pr, term ? WICK_ROW(q) : WICK_COL(q));
            wick_pairings(s, used | 1ull << p | 1ull << q, pr, cp, weight * cv, pairs + 1,
                          cross || wick_cycle_of(o, p) != wick_cycle_of(o, q));
        }
    }
#undef WICK_ROW
#undef WICK_COL
}

/* The sum over the pairings of o's occurrences at dimension d (d = 0: the
 * leading order and the largest power only); connected: only pairings
 * with a pair across the two cycles (the covariance of two traces). */
static inline wick_sum wick_expect_linked(const wick_word *o, const aim_planar_factor *fac,
                                   const aim_planar_link *links, int n_links, double d,
                                   int connected)
{
    wick_sum out = {0.0, 0.0, -1000, 0};
    int parent[WICK_MAX];
    double cap[WICK_MAX];
    for (int x = 0; x < o->m; x++) {
        parent[x] = x;
        cap[x] = INFINITY;
    }
    const wick_state s = {o, fac, links, n_links, d, connected, &out};
    wick_pairings(&s, 0, parent, cap, 1.0, 0, 0);
    return out;
}

static inline wick_sum wick_expect(const wick_word *o, const aim_planar_factor *fac, double d,
                            int connected)
{
    return wick_expect_linked(o, fac, NULL, 0, d, connected);
}

#endif
