/* Free moment-cumulant formula over canonical words (freecum.h).
 *
 * Why one cumulant per canonical word: the normalised trace is tracial,
 * phi(ab) = phi(ba), and the free cumulants of a tracial state are
 * invariant under cyclic rotation of their arguments; for real matrices
 * phi(w) = phi(w^T), and reflecting {1..n} maps non-crossing partitions
 * to non-crossing partitions, so by induction on the length kappa(w) =
 * kappa(w^T) as well. A block's sub-word may therefore be looked up by
 * its canonical class.
 *
 * Each word's expansion is stored without its one-block partition (that
 * term is kappa(w) itself), and partitions whose blocks have the same
 * multiset of classes are merged into one term with a multiplicity,
 * which for a few letters shrinks the tables several-fold. */
#include "freecum.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct aim_freecum {
    const aim_wordset *ws;
    int max_len;
    size_t *term_start;  /* terms of word i: term_start[i] .. [i + 1] - 1 */
    size_t *block_first; /* blocks of word i's first term */
    unsigned *mult;      /* partitions merged into the term */
    unsigned char *nb;   /* blocks of the term, stored one term after the other */
    int *blocks;         /* word indices of the blocks, ascending per term */
    size_t nterms, nblocks, cap_mult, cap_nb, cap_blocks;
};

/* The non-crossing partitions of {0..n-1} as block labels per element
 * (labels in order of first element). Element k may join block b only if
 * every element between b's last element l and k lies in a block opened
 * after l; otherwise such a block, having elements on both sides of l,
 * would cross b. Checking this at every join excludes all crossings. */
typedef struct {
    int n, nb;
    unsigned char label[AIM_WORD_MAX];
    int first[AIM_WORD_MAX], last[AIM_WORD_MAX];
    unsigned char *out;
    size_t count, cap;
    int failed;
} nc_state;

static void nc_emit(nc_state *st)
{
    if (st->count == st->cap) {
        const size_t cap = st->cap ? 2 * st->cap : 64;
        unsigned char *p = realloc(st->out, cap * (size_t)st->n);
        if (!p) {
            st->failed = 1;
            return;
        }
        st->out = p;
        st->cap = cap;
    }
    memcpy(st->out + st->count * (size_t)st->n, st->label, (size_t)st->n);
    st->count++;
}

static void nc_extend(nc_state *st, int k)
{
    if (st->failed)
        return;
    if (k == st->n) {
        nc_emit(st);
        return;
    }
    const int nb = st->nb;
    st->label[k] = (unsigned char)nb;
    st->first[nb] = st->last[nb] = k;
    st->nb++;
    nc_extend(st, k + 1);
    st->nb--;
    for (int b = 0; b < nb; b++) {
        const int l = st->last[b];
        int ok = 1;
        for (int j = l + 1; j < k && ok; j++)
            ok = st->first[st->label[j]] > l;
        if (!ok)
            continue;
        st->label[k] = (unsigned char)b;
        st->last[b] = k;
        nc_extend(st, k + 1);
        st->last[b] = l;
    }
}

typedef struct {
    int nb;
    int b[AIM_WORD_MAX];
} term;

static int term_compare(const term *s, const term *t)
{
    if (s->nb != t->nb)
        return s->nb < t->nb ? -1 : 1;
    for (int i = 0; i < s->nb; i++)
        if (s->b[i] != t->b[i])
            return s->b[i] < t->b[i] ? -1 : 1;
    return 0;
}

/* Sorting pointers: moving the terms themselves cost as much as
 * comparing them. */
static int term_ptr_compare(const void *x, const void *y)
{
    return term_compare(*(const term *const *)x, *(const term *const *)y);
}

_Static_assert(AIM_WORD_MAX <= 32, "a block's positions fit a 32-bit mask");

static int mask_compare(const void *x, const void *y)
{
    const uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    return (a > b) - (a < b);
}

/* The non-crossing partitions of one length but the one-block one, as
 * blocks of positions. Each distinct block (a bit mask of positions) has
 * an id, so that a word's sub-words are looked up once per distinct
 * block (at most 2^n - 2) rather than once per block of every partition
 * (about 6400 at length 8). */
typedef struct {
    int n;
    size_t count;     /* partitions */
    unsigned char *nb; /* blocks of each partition */
    int *block;       /* partition p's block ids at p * n .., in label order */
    uint32_t *mask;   /* the distinct blocks, ascending */
    size_t nmask;
} shapes;

static void shapes_free(shapes *sh)
{
    free(sh->nb);
    free(sh->block);
    free(sh->mask);
}

static int shapes_create(shapes *sh, const nc_state *nc)
{
    const int n = nc->n;
    memset(sh, 0, sizeof *sh);
    sh->n = n;
    sh->nb = malloc(nc->count + 1);
    sh->block = malloc(sizeof *sh->block * (nc->count * (size_t)n + 1));
    uint32_t *all = malloc(sizeof *all * (nc->count * (size_t)n + 1));
    if (!sh->nb || !sh->block || !all) {
        free(all);
        return -1;
    }
    size_t nall = 0;
    for (size_t p = 0; p < nc->count; p++) {
        const unsigned char *label = nc->out + p * (size_t)n;
        uint32_t m[AIM_WORD_MAX] = {0};
        int nb = 0;
        for (int j = 0; j < n; j++) {
            m[label[j]] |= (uint32_t)1 << j;
            if (label[j] + 1 > nb)
                nb = label[j] + 1;
        }
        if (nb == 1)
            continue;
        sh->nb[sh->count] = (unsigned char)nb;
        for (int k = 0; k < nb; k++) {
            sh->block[sh->count * (size_t)n + (size_t)k] = (int)nall;
            all[nall++] = m[k];
        }
        sh->count++;
    }
    /* the block slots hold positions in all[]; map them to distinct ids */
    uint32_t *sorted = malloc(sizeof *sorted * (nall + 1));
    if (!sorted) {
        free(all);
        return -1;
    }
    memcpy(sorted, all, sizeof *sorted * nall);
    qsort(sorted, nall, sizeof *sorted, mask_compare);
    for (size_t i = 0; i < nall; i++)
        if (sh->nmask == 0 || sorted[sh->nmask - 1] != sorted[i])
            sorted[sh->nmask++] = sorted[i];
    sh->mask = sorted;
    for (size_t p = 0; p < sh->count; p++)
        for (int k = 0; k < sh->nb[p]; k++) {
            int *slot = &sh->block[p * (size_t)n + (size_t)k];
            const uint32_t *id = bsearch(&all[*slot], sh->mask, sh->nmask, sizeof *sh->mask,
                                         mask_compare);
            *slot = (int)(id - sh->mask);
        }
    free(all);
    return 0;
}

/* p with room for need elements (doubling), or NULL with p untouched. */
static void *grow(void *p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return p;
    size_t c = *cap ? *cap : 256;
    while (c < need)
        c *= 2;
    void *q = realloc(p, c * size);
    if (q)
        *cap = c;
    return q;
}

static int append_term(aim_freecum *fc, const term *t, unsigned mult)
{
    unsigned *m = grow(fc->mult, &fc->cap_mult, fc->nterms + 1, sizeof *m);
    if (!m)
        return -1;
    fc->mult = m;
    unsigned char *nb = grow(fc->nb, &fc->cap_nb, fc->nterms + 1, sizeof *nb);
    if (!nb)
        return -1;
    fc->nb = nb;
    int *blocks = grow(fc->blocks, &fc->cap_blocks, fc->nblocks + (size_t)t->nb, sizeof *blocks);
    if (!blocks)
        return -1;
    fc->blocks = blocks;
    fc->mult[fc->nterms] = mult;
    fc->nb[fc->nterms] = (unsigned char)t->nb;
    memcpy(fc->blocks + fc->nblocks, t->b, sizeof(int) * (size_t)t->nb);
    fc->nblocks += (size_t)t->nb;
    fc->nterms++;
    return 0;
}

/* Work space of one length's expansions. */
typedef struct {
    term *terms;
    const term **unique;  /* the distinct terms */
    unsigned *mult;       /* partitions per distinct term, by its position in terms */
    const term **table;   /* hash table of the distinct terms, NULL: empty */
    size_t table_mask;
    int *sub; /* word index of each distinct block's sub-word */
} expansion;

static size_t term_hash(const term *t)
{
    size_t h = (size_t)t->nb;
    for (int k = 0; k < t->nb; k++)
        h = h * 0x9E3779B97F4A7C15ULL + (size_t)t->b[k];
    return h ^ h >> 29;
}

/* The merged expansion of word i over the partitions sh: the terms in
 * ascending order of (number of blocks, block words), equal terms
 * merged. Merging first, by hashing, leaves the sort a fraction of the
 * partitions (Catalan(n) - 1 of them, 1429 at length 8). */
static int expand_word(aim_freecum *fc, int i, const shapes *sh, expansion *x)
{
    const char *w = aim_wordset_word(fc->ws, i);
    const int n = sh->n;
    for (size_t id = 0; id < sh->nmask; id++) {
        char sub[AIM_WORD_MAX + 1];
        int len = 0;
        for (int j = 0; j < n; j++)
            if (sh->mask[id] >> j & 1)
                sub[len++] = w[j];
        sub[len] = '\0';
        x->sub[id] = aim_wordset_find(fc->ws, sub);
    }
    memset(x->table, 0, sizeof *x->table * (x->table_mask + 1));
    size_t nunique = 0;
    for (size_t p = 0; p < sh->count; p++) {
        term *t = &x->terms[p];
        t->nb = sh->nb[p];
        for (int k = 0; k < t->nb; k++) { /* insertion sort: at most n blocks */
            const int v = x->sub[sh->block[p * (size_t)n + (size_t)k]];
            int j = k;
            for (; j > 0 && t->b[j - 1] > v; j--)
                t->b[j] = t->b[j - 1];
            t->b[j] = v;
        }
        size_t h = term_hash(t) & x->table_mask;
        while (x->table[h] && term_compare(x->table[h], t) != 0)
            h = (h + 1) & x->table_mask;
        if (x->table[h]) {
            x->mult[x->table[h] - x->terms]++;
            continue;
        }
        x->table[h] = t;
        x->mult[p] = 1;
        x->unique[nunique++] = t;
    }
    qsort(x->unique, nunique, sizeof *x->unique, term_ptr_compare);
    for (size_t u = 0; u < nunique; u++)
        if (append_term(fc, x->unique[u], x->mult[x->unique[u] - x->terms]))
            return -1;
    return 0;
}

/* The expansions of the words of length n. */
static int expand_length(aim_freecum *fc, int n)
{
    const int first = aim_wordset_first(fc->ws, n), end = aim_wordset_first(fc->ws, n + 1);
    nc_state nc = {.n = n};
    shapes sh = {0};
    expansion x = {0};
    int failed = 0;
    if (n > 0) {
        nc_extend(&nc, 0);
        failed = nc.failed || shapes_create(&sh, &nc);
        if (!failed) {
            x.table_mask = 15;
            while (x.table_mask + 1 < 2 * sh.count)
                x.table_mask = 2 * x.table_mask + 1;
            x.terms = malloc(sizeof *x.terms * (sh.count + 1));
            x.unique = malloc(sizeof *x.unique * (sh.count + 1));
            x.mult = malloc(sizeof *x.mult * (sh.count + 1));
            x.table = malloc(sizeof *x.table * (x.table_mask + 1));
            x.sub = malloc(sizeof *x.sub * (sh.nmask + 1));
            failed = !x.terms || !x.unique || !x.mult || !x.table || !x.sub;
        }
    }
    for (int i = first; i < end; i++) {
        fc->term_start[i] = fc->nterms;
        fc->block_first[i] = fc->nblocks;
        if (!failed && n > 0)
            failed = expand_word(fc, i, &sh, &x);
    }
    free(x.terms);
    free(x.unique);
    free(x.mult);
    free(x.table);
    free(x.sub);
    shapes_free(&sh);
    free(nc.out);
    return failed ? -1 : 0;
}

aim_freecum *aim_freecum_create(const aim_wordset *ws)
{
    aim_freecum *fc = calloc(1, sizeof *fc);
    if (!fc)
        return NULL;
    fc->ws = ws;
    fc->max_len = aim_wordset_max_len(ws);
    const int count = aim_wordset_count(ws);
    fc->term_start = calloc((size_t)count + 1, sizeof *fc->term_start);
    fc->block_first = calloc((size_t)count + 1, sizeof *fc->block_first);
    if (!fc->term_start || !fc->block_first) {
        aim_freecum_free(fc);
        return NULL;
    }
    int failed = 0;
    for (int n = 0; n <= fc->max_len && !failed; n++)
        failed = expand_length(fc, n);
    fc->term_start[count] = fc->nterms;
    fc->block_first[count] = fc->nblocks;
    if (failed) {
        aim_freecum_free(fc);
        return NULL;
    }
    return fc;
}

void aim_freecum_free(aim_freecum *fc)
{
    if (!fc)
        return;
    free(fc->term_start);
    free(fc->block_first);
    free(fc->mult);
    free(fc->nb);
    free(fc->blocks);
    free(fc);
}

/* Sum over the word's partitions other than the one-block one. */
static double partition_sum(const aim_freecum *fc, int i, const double *cumulants)
{
    double s = 0.0;
    const int *b = fc->blocks + fc->block_first[i];
    for (size_t t = fc->term_start[i]; t < fc->term_start[i + 1]; t++) {
        double prod = fc->mult[t];
        for (int k = 0; k < fc->nb[t]; k++)
            prod *= cumulants[*b++];
        s += prod;
    }
    return s;
}

void aim_freecum_cumulants(const aim_freecum *fc, const double *moments,
                           double *cumulants, int max_len)
{
    if (max_len > fc->max_len)
        max_len = fc->max_len;
    cumulants[0] = 0.0;
    /* words are ordered by length, so every block's cumulant is known */
    const int end = aim_wordset_first(fc->ws, max_len + 1);
    for (int i = 1; i < end; i++)
        cumulants[i] = moments[i] - partition_sum(fc, i, cumulants);
}

void aim_freecum_moments(const aim_freecum *fc, const double *cumulants,
                         double *moments, int min_len, int max_len)
{
    if (max_len > fc->max_len)
        max_len = fc->max_len;
    if (min_len < 1)
        min_len = 1; /* the empty word's moment is 1, not a sum of cumulants */
    const int end = aim_wordset_first(fc->ws, max_len + 1);
    for (int i = aim_wordset_first(fc->ws, min_len); i < end; i++)
        moments[i] = cumulants[i] + partition_sum(fc, i, cumulants);
}
