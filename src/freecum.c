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

#include <stdlib.h>
#include <string.h>

struct aim_freecum {
    const aim_wordset *ws;
    int max_len;
    size_t *term_start;  /* terms of word i: term_start[i] .. [i + 1] - 1 */
    double *mult;        /* partitions merged into the term */
    size_t *block_start; /* blocks of term t: block_start[t] .. [t + 1] - 1 */
    int *blocks;         /* word indices of the blocks, ascending */
    size_t nterms, nblocks, cap_mult, cap_start, cap_blocks;
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

static int term_compare(const void *x, const void *y)
{
    const term *s = x, *t = y;
    if (s->nb != t->nb)
        return s->nb < t->nb ? -1 : 1;
    for (int i = 0; i < s->nb; i++)
        if (s->b[i] != t->b[i])
            return s->b[i] < t->b[i] ? -1 : 1;
    return 0;
}

static int int_compare(const void *x, const void *y)
{
    const int a = *(const int *)x, b = *(const int *)y;
    return (a > b) - (a < b);
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

static int append_term(aim_freecum *fc, const term *t, double mult)
{
    double *m = grow(fc->mult, &fc->cap_mult, fc->nterms + 1, sizeof *m);
    if (!m)
        return -1;
    fc->mult = m;
    size_t *start = grow(fc->block_start, &fc->cap_start, fc->nterms + 2, sizeof *start);
    if (!start)
        return -1;
    fc->block_start = start;
    int *blocks = grow(fc->blocks, &fc->cap_blocks, fc->nblocks + (size_t)t->nb, sizeof *blocks);
    if (!blocks)
        return -1;
    fc->blocks = blocks;
    fc->mult[fc->nterms] = mult;
    memcpy(fc->blocks + fc->nblocks, t->b, sizeof(int) * (size_t)t->nb);
    fc->nblocks += (size_t)t->nb;
    fc->nterms++;
    fc->block_start[fc->nterms] = fc->nblocks;
    return 0;
}

/* The merged expansion of word i (length n) over the partitions nc. */
static int expand_word(aim_freecum *fc, int i, const nc_state *nc, term *work)
{
    const char *w = aim_wordset_word(fc->ws, i);
    const int n = nc->n;
    size_t m = 0;
    for (size_t p = 0; p < nc->count; p++) {
        const unsigned char *label = nc->out + p * (size_t)n;
        int nb = 0;
        for (int j = 0; j < n; j++)
            if (label[j] + 1 > nb)
                nb = label[j] + 1;
        if (nb == 1)
            continue;
        term *t = &work[m++];
        t->nb = nb;
        for (int b = 0; b < nb; b++) {
            char sub[AIM_WORD_MAX + 1];
            int len = 0;
            for (int j = 0; j < n; j++)
                if (label[j] == b)
                    sub[len++] = w[j];
            sub[len] = '\0';
            t->b[b] = aim_wordset_find(fc->ws, sub);
        }
        qsort(t->b, (size_t)nb, sizeof(int), int_compare);
    }
    qsort(work, m, sizeof *work, term_compare);
    for (size_t s = 0; s < m;) {
        size_t e = s + 1;
        while (e < m && term_compare(&work[s], &work[e]) == 0)
            e++;
        if (append_term(fc, &work[s], (double)(e - s)))
            return -1;
        s = e;
    }
    return 0;
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
    fc->block_start = grow(NULL, &fc->cap_start, 1, sizeof *fc->block_start);
    if (!fc->term_start || !fc->block_start) {
        aim_freecum_free(fc);
        return NULL;
    }
    fc->block_start[0] = 0;
    int failed = 0;
    for (int n = 0; n <= fc->max_len && !failed; n++) {
        nc_state nc = {.n = n};
        term *work = NULL;
        if (n > 0) {
            nc_extend(&nc, 0);
            work = malloc(sizeof *work * nc.count);
            failed = nc.failed || !work;
        }
        for (int i = aim_wordset_first(ws, n); i < aim_wordset_first(ws, n + 1); i++) {
            fc->term_start[i] = fc->nterms;
            if (!failed && n > 0)
                failed = expand_word(fc, i, &nc, work);
        }
        free(work);
        free(nc.out);
    }
    fc->term_start[count] = fc->nterms;
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
    free(fc->mult);
    free(fc->block_start);
    free(fc->blocks);
    free(fc);
}

/* Sum over the word's partitions other than the one-block one. */
static double partition_sum(const aim_freecum *fc, int i, const double *cumulants)
{
    double s = 0.0;
    for (size_t t = fc->term_start[i]; t < fc->term_start[i + 1]; t++) {
        double prod = fc->mult[t];
        for (size_t b = fc->block_start[t]; b < fc->block_start[t + 1]; b++)
            prod *= cumulants[fc->blocks[b]];
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
