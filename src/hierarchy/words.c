/* Words and their moments (words.h). Internally a word is a string of
 * codes, code = 1 + the letter's rank in the alphabet, so that strcmp
 * orders words by the letter order (a prefix before its extensions) and
 * NUL still terminates. */
#include "words.h"

#include <math.h>
#include "outer.h"

#include <stdlib.h>
#include <string.h>

#include <cblas.h>

struct aim_wordset {
    aim_alphabet ab;
    int k;                   /* letters */
    unsigned char code[256]; /* letter -> code, 0 when not a letter */
    unsigned char tcode[AIM_ALPHABET_MAX + 1]; /* code -> its transpose's */
    int max_len, count;
    int first[AIM_WORD_MAX + 2];
    char *words; /* count strings of stride max_len + 1, in letters */
    unsigned char *codes; /* the same strings in codes */
    int *lex;    /* word indices in plain lexicographic (prefix) order */
    int *slot;   /* hash table of the words by their codes: index, or -1 */
    size_t slot_mask;
};

/* The code tables of ab; -1 unless the alphabet is valid: 1 ..
 * AIM_ALPHABET_MAX distinct printable letters, each transpose a letter,
 * and transposition an involution. */
static int alphabet_codes(const aim_alphabet *ab, unsigned char code[256],
                          unsigned char tcode[AIM_ALPHABET_MAX + 1])
{
    const size_t k = strnlen(ab->letters, AIM_ALPHABET_MAX + 1);
    if (k == 0 || k > AIM_ALPHABET_MAX || strnlen(ab->transpose, AIM_ALPHABET_MAX + 1) != k)
        return -1;
    memset(code, 0, 256);
    for (size_t i = 0; i < k; i++) {
        const unsigned char c = (unsigned char)ab->letters[i];
        if (c <= ' ' || c >= 127 || code[c])
            return -1;
        code[c] = (unsigned char)(i + 1);
    }
    tcode[0] = 0;
    for (size_t i = 0; i < k; i++) {
        const unsigned char t = code[(unsigned char)ab->transpose[i]];
        if (!t)
            return -1;
        tcode[i + 1] = t;
    }
    for (size_t i = 1; i <= k; i++)
        if (tcode[tcode[i]] != i)
            return -1;
    return 0;
}

/* Codes of w into out; its length, or -1 when too long or not a word. */
static int encode(const unsigned char code[256], const char *w, unsigned char *out)
{
    int n = 0;
    for (; w[n]; n++) {
        if (n == AIM_WORD_MAX)
            return -1;
        const unsigned char c = code[(unsigned char)w[n]];
        if (!c)
            return -1;
        out[n] = c;
    }
    out[n] = 0;
    return n;
}

/* Is rotation r of a (length n) smaller than b? */
static int rotation_less(const unsigned char *a, int r, const unsigned char *b, int n)
{
    for (int i = 0; i < n; i++) {
        const unsigned char x = a[(r + i) % n];
        if (x != b[i])
            return x < b[i];
    }
    return 0;
}

/* t = the transposed word of a: reversed, every letter transposed. */
static void transpose_codes(const unsigned char tcode[], const unsigned char *a, int n,
                            unsigned char *t)
{
    for (int i = 0; i < n; i++)
        t[i] = tcode[a[n - 1 - i]];
}

/* In place: the smallest of the rotations of a and of its transpose. */
static void canonicalise(const unsigned char tcode[], unsigned char *a, int n)
{
    unsigned char t[AIM_WORD_MAX + 1], best[AIM_WORD_MAX + 1];
    transpose_codes(tcode, a, n, t);
    memcpy(best, a, (size_t)n);
    for (int pass = 0; pass < 2; pass++) {
        const unsigned char *s = pass ? t : a;
        for (int r = 0; r < n; r++)
            if (rotation_less(s, r, best, n))
                for (int i = 0; i < n; i++)
                    best[i] = s[(r + i) % n];
    }
    memcpy(a, best, (size_t)n);
}

static void decode(const aim_alphabet *ab, const unsigned char *a, int n, char *out)
{
    for (int i = 0; i < n; i++)
        out[i] = ab->letters[a[i] - 1];
    out[n] = '\0';
}

/* The codes of w and of the alphabet's transposes; the length of w, or -1
 * when the alphabet or the word is invalid. */
static int encode_word(const aim_alphabet *ab, const char *w, unsigned char tcode[],
                       unsigned char *a)
{
    unsigned char code[256];
    if (alphabet_codes(ab, code, tcode))
        return -1;
    return encode(code, w, a);
}

int aim_word_canonical(const aim_alphabet *ab, const char *w, char *out)
{
    unsigned char tcode[AIM_ALPHABET_MAX + 1], a[AIM_WORD_MAX + 1];
    const int n = encode_word(ab, w, tcode, a);
    if (n < 0)
        return -1;
    canonicalise(tcode, a, n);
    decode(ab, a, n, out);
    return 0;
}

int aim_word_transpose(const aim_alphabet *ab, const char *w, char *out)
{
    unsigned char tcode[AIM_ALPHABET_MAX + 1], a[AIM_WORD_MAX + 1], t[AIM_WORD_MAX + 1];
    const int n = encode_word(ab, w, tcode, a);
    if (n < 0)
        return -1;
    transpose_codes(tcode, a, n, t);
    decode(ab, t, n, out);
    return 0;
}

static int gcd(int a, int b)
{
    while (b) {
        const int t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* A class is an orbit of the 2 len maps "rotate by r" and "transpose,
 * then rotate by r"; by Burnside's lemma their number is the mean number
 * of words each map fixes. Rotation by r fixes k^gcd(r, len) words (one
 * letter per cycle of positions). Transposing and rotating by r fixes a
 * word when a_i = t(a_(r - i mod len)) for every i: the positions with
 * 2i = r (mod len) need a letter that is its own transpose (f of them),
 * the others pair up, one free letter per pair. */
double aim_words_classes(const aim_alphabet *ab, int len)
{
    unsigned char code[256], tcode[AIM_ALPHABET_MAX + 1];
    if (len < 0 || alphabet_codes(ab, code, tcode))
        return -1;
    if (len == 0)
        return 1;
    const int k = (int)strlen(ab->letters);
    int f = 0;
    for (int i = 1; i <= k; i++)
        f += tcode[i] == i;
    double fixed = 0.0;
    for (int r = 0; r < len; r++) {
        const int singles = len % 2 ? 1 : r % 2 ? 0 : 2;
        fixed += pow(k, gcd(r, len)) + pow(f, singles) * pow(k, (len - singles) / 2);
    }
    return fixed / (2.0 * len);
}

/* Enumeration: the canonical words of a length are necklaces (smallest
 * of their rotations), which the Fredricksen-Kessler-Maiorana recursion
 * generates in lexicographic order, k^n / n of them up to a bounded
 * factor; of those we keep the ones not above their transpose's class. */
typedef struct {
    aim_wordset *ws;
    int n, cap;
    unsigned char a[AIM_WORD_MAX + 1]; /* a[0] = 1 (first code), word a[1..n] */
    int failed;
} fkm_state;

static void keep_if_canonical(fkm_state *st)
{
    aim_wordset *ws = st->ws;
    const int n = st->n;
    unsigned char c[AIM_WORD_MAX + 1];
    memcpy(c, st->a + 1, (size_t)n);
    canonicalise(ws->tcode, c, n);
    if (memcmp(c, st->a + 1, (size_t)n) != 0)
        return;
    const size_t stride = (size_t)ws->max_len + 1;
    if (ws->count == st->cap) {
        const int cap = st->cap ? 2 * st->cap : 64;
        char *w = realloc(ws->words, stride * (size_t)cap);
        if (!w) {
            st->failed = 1;
            return;
        }
        ws->words = w;
        st->cap = cap;
    }
    decode(&ws->ab, st->a + 1, n, ws->words + stride * (size_t)ws->count);
    ws->count++;
}

static void fkm(fkm_state *st, int t, int p)
{
    if (st->failed)
        return;
    if (t > st->n) {
        if (st->n % p == 0)
            keep_if_canonical(st);
        return;
    }
    st->a[t] = st->a[t - p];
    fkm(st, t + 1, p);
    for (int j = st->a[t - p] + 1; j <= st->ws->k; j++) {
        st->a[t] = (unsigned char)j;
        fkm(st, t + 1, t);
    }
}

static int lex_compare(const void *x, const void *y)
{
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* The lexicographic order of all words, used by aim_words_measure to
 * walk the prefix tree depth first. */
static int build_lex(aim_wordset *ws)
{
    const size_t n = (size_t)ws->count, stride = (size_t)ws->max_len + 1;
    const unsigned char **ptr = malloc(n * sizeof *ptr);
    ws->lex = malloc(n * sizeof *ws->lex);
    if (!ptr || !ws->lex) {
        free(ptr);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        ptr[i] = ws->codes + stride * i;
    qsort(ptr, n, sizeof *ptr, lex_compare);
    for (size_t i = 0; i < n; i++)
        ws->lex[i] = (int)((size_t)(ptr[i] - ws->codes) / stride);
    free(ptr);
    return 0;
}

/* FNV-1a over the codes of a canonical word (NUL-terminated). */
static size_t hash_codes(const unsigned char *a)
{
    size_t h = (size_t)14695981039346656037ULL;
    for (; *a; a++)
        h = (h ^ *a) * (size_t)1099511628211ULL;
    return h;
}

/* Open addressing over a table of at least twice as many slots as
 * words: the hierarchy's generator and the free cumulants look words up
 * millions of times at high order, where a binary search over the
 * words' letters dominated their cost. */
static int build_index(aim_wordset *ws)
{
    const size_t n = (size_t)ws->count, stride = (size_t)ws->max_len + 1;
    ws->codes = malloc(n * stride);
    size_t slots = 16;
    while (slots < 2 * n)
        slots *= 2;
    ws->slot = malloc(slots * sizeof *ws->slot);
    if (!ws->codes || !ws->slot)
        return -1;
    ws->slot_mask = slots - 1;
    for (size_t k = 0; k < slots; k++)
        ws->slot[k] = -1;
    for (size_t i = 0; i < n; i++) {
        unsigned char *a = ws->codes + stride * i;
        encode(ws->code, ws->words + stride * i, a);
        size_t k = hash_codes(a) & ws->slot_mask;
        while (ws->slot[k] >= 0)
            k = (k + 1) & ws->slot_mask;
        ws->slot[k] = (int)i;
    }
    return 0;
}

aim_wordset *aim_wordset_create(const aim_alphabet *ab, int max_len)
{
    if (!ab || max_len < 0 || max_len > AIM_WORD_MAX)
        return NULL;
    aim_wordset *ws = calloc(1, sizeof *ws);
    if (!ws)
        return NULL;
    if (alphabet_codes(ab, ws->code, ws->tcode)) {
        free(ws);
        return NULL;
    }
    ws->ab = *ab;
    ws->k = (int)strlen(ab->letters);
    ws->max_len = max_len;
    fkm_state st = {.ws = ws};
    for (int n = 0; n <= max_len && !st.failed; n++) {
        ws->first[n] = ws->count;
        st.n = n;
        st.a[0] = 1;
        if (n == 0)
            keep_if_canonical(&st);
        else
            fkm(&st, 1, 1);
    }
    ws->first[max_len + 1] = ws->count;
    if (st.failed || build_index(ws) || build_lex(ws)) {
        aim_wordset_free(ws);
        return NULL;
    }
    return ws;
}

void aim_wordset_free(aim_wordset *ws)
{
    if (!ws)
        return;
    free(ws->words);
    free(ws->codes);
    free(ws->lex);
    free(ws->slot);
    free(ws);
}

const aim_alphabet *aim_wordset_alphabet(const aim_wordset *ws) { return &ws->ab; }
int aim_wordset_max_len(const aim_wordset *ws) { return ws->max_len; }
int aim_wordset_count(const aim_wordset *ws) { return ws->count; }

int aim_wordset_first(const aim_wordset *ws, int len)
{
    return ws->first[len];
}

const char *aim_wordset_word(const aim_wordset *ws, int i)
{
    return ws->words + ((size_t)ws->max_len + 1) * (size_t)i;
}

int aim_wordset_len(const aim_wordset *ws, int i)
{
    int n = 0;
    while (i >= ws->first[n + 1])
        n++;
    return n;
}

int aim_wordset_find(const aim_wordset *ws, const char *w)
{
    unsigned char a[AIM_WORD_MAX + 1];
    const int n = encode(ws->code, w, a);
    if (n < 0 || n > ws->max_len)
        return -1;
    canonicalise(ws->tcode, a, n);
    const size_t stride = (size_t)ws->max_len + 1;
    for (size_t k = hash_codes(a) & ws->slot_mask; ws->slot[k] >= 0;
         k = (k + 1) & ws->slot_mask)
        if (memcmp(ws->codes + stride * (size_t)ws->slot[k], a, (size_t)n + 1) == 0)
            return ws->slot[k];
    return -1;
}

/* Tr(P L) = sum_ij P_ij L_ji */
static double trace_product(const double *P, const double *L, int d)
{
    double t = 0.0;
    for (int i = 0; i < d; i++)
        t += cblas_ddot(d, P + (size_t)i * d, 1, L + i, d);
    return t;
}

/* Walks the words in lexicographic order, so that consecutive words
 * share the longest possible prefix: stack[j] holds the product of the
 * current prefix's first j + 2 letters, and a word's moment needs the
 * product of all but its last letter. Each distinct proper prefix of
 * length >= 2 costs one dgemm, and memory stays at max_len - 2 matrices
 * whatever the number of words. */
int aim_words_measure(const aim_wordset *ws, int max_len,
                      const double *const *matrices, int d, double *moments)
{
    if (max_len > ws->max_len)
        max_len = ws->max_len;
    const int nstack = max_len > 2 ? max_len - 2 : 0;
    const size_t dd = (size_t)d * (size_t)d;
    double *stack = NULL;
    if (nstack > 0 && !(stack = malloc(sizeof(double) * dd * (size_t)nstack)))
        return -1;
    unsigned char prefix[AIM_WORD_MAX + 1] = {0}, a[AIM_WORD_MAX + 1];
    int have = 0; /* letters of prefix whose product is available */
    for (int r = 0; r < ws->count; r++) {
        const int i = ws->lex[r];
        const int n = encode(ws->code, aim_wordset_word(ws, i), a);
        if (n > max_len)
            continue;
        if (n == 0) {
            moments[i] = 1.0;
            continue;
        }
        const double *last = matrices[a[n - 1] - 1];
        if (n == 1) {
            double t = 0.0;
            for (int j = 0; j < d; j++)
                t += last[(size_t)j * d + j];
            moments[i] = t / d;
            continue;
        }
        int common = 0;
        while (common < have && common < n - 1 && prefix[common] == a[common])
            common++;
        have = common > 0 ? common : 1;
        prefix[0] = a[0];
        for (; have < n - 1; have++) {
            const double *P = have == 1 ? matrices[a[0] - 1] : stack + dd * (size_t)(have - 2);
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, d, d, d, 1.0, P, d,
                        matrices[a[have] - 1], d, 0.0, stack + dd * (size_t)(have - 1), d);
            prefix[have] = a[have];
        }
        const double *P = n == 2 ? matrices[a[0] - 1] : stack + dd * (size_t)(n - 3);
        moments[i] = trace_product(P, last, d) / d;
    }
    free(stack);
    return 0;
}

int aim_words_letters(const aim_alphabet *ab, const double *S, const double *St,
                      const double *U, const double *V, int d, int p, double *buf,
                      const double **mats)
{
    const size_t dd = (size_t)d * d;
    for (int k = 0; ab->letters[k]; k++) {
        const char c = ab->letters[k];
        double *out = NULL;
        switch (c) {
        case 'S':
        case 'K':
            mats[k] = S;
            continue;
        case 'T':
            mats[k] = St;
            continue;
        case 'k':
        case 't': {
            const double *src = c == 'k' ? S : St;
            out = buf + (c == 'k' ? 0 : 1) * dd;
            for (int i = 0; i < d; i++)
                for (int j = 0; j < d; j++)
                    out[(size_t)j * d + i] = src[(size_t)i * d + j];
            break;
        }
        case 'A':
        case 'B':
            if (!U || !V)
                return -1;
            out = buf + (c == 'A' ? 2 : 3) * dd;
            aim_outer(c == 'A' ? U : V, d, p, out);
            break;
        default:
            return -1;
        }
        mats[k] = out;
    }
    return 0;
}
