/* The drift measurement shared by the drift tests (test_drift.c,
 * test_drift_tied.c, test_drift_untied.c; theory/direct.md sec. 10): every term of a
 * model's right-hand side against the same term measured on online SGD at
 * finite d, with a tolerance made of standard errors and a measured
 * finite-d term. Included by a test file after cmocka.h; header-only
 * because each test is one executable.
 *
 * The estimator: one SGD step at a fixed state, expanded in its step
 * ------------------------------------------------------------------
 * A state of online SGD (the matrices after training to tau0) is held
 * fixed. One step with a fresh sample moves every factor of the
 * parameters linearly in eps = eta/d (theory/direct.md sec. 2.1),
 *     F' = F + eps dF,   dF = -(G_g P + (gamma/d) F),
 * G = grad_S l = (X^T E X - c s I)/sqrt d, s = sum_ab e_ab C_ab, G_g = G,
 * G^T or G + G^T and P the factor G acts on (direct S: the identity; tied
 * W: W with G + G^T; untied U: V with G, V: U with G^T). Every letter (a
 * product of two factors, or one) is therefore a polynomial of degree 2 in
 * eps, L' = L + eps L1 + eps^2 L2 (drift_derive), and the normalised trace
 * m(w) of a word w of n letters one of degree 2n:
 *     m(w)' - m(w) = eps a1 + eps^2 a2 + O(eps^3),
 *     a1 = sum_i m(w, L_i -> L1_i),
 *     a2 = sum_i m(w, L_i -> L2_i) + sum_{i<j} m(w, L_i -> L1_i, L_j -> L1_j).
 * A step advances tau by eta/d^2, so the drift of m(w) per unit tau is
 *     E[a1] d + E[a2] eta + O(eta^2 d^{-1/2}),
 * whose first part is the model's first-order (gradient) term plus its
 * weight decay and whose second part is its second-order (noise) term:
 * the expansion measures each part separately, at the state, with no
 * trajectory and no window (the O(eps^3) part, third-order terms, is not
 * in the hierarchies and is not measured). Per sample, every trace with a
 * G in it reduces to T x T matrices: with H(W) = X W X^T (the tokens
 * times the letters' product; drift_hword),
 *     Tr(G_g A)         = (tr(E_g H(A)) - c s_g Tr A) / sqrt d,
 *     Tr(G_g A G_h B)   = [tr(E_g H(A) E_h H(B)) - c s_h tr(E_g H(AB))
 *                          - c s_g tr(E_h H(BA)) + c s_g s_h Tr(AB)] / d,
 * E_g = e, e^T, e + e^T and s_g = s, s, 2s; Tr of a word is d times its
 * measured moment. The errors e = J^T (f(h(S)) - f(h(S*)) - sqrt(Delta)
 * xi) are those of SGD (symmetrised for a symmetric direct student).
 * drift_check_step checks the whole chain against one real step of
 * aim_sgd with the same sample: the letters after the step equal L + eps
 * L1 + eps^2 L2, and a1, a2 equal their dense evaluation, to round-off.
 *
 * Variance. The samples are independent, so the standard error of each
 * part is its sample standard deviation over sqrt(samples). The weight
 * decay part of a1 does not depend on the sample: it is compared exactly
 * (to round-off). Two exact devices reduce the variance: each token
 * sample is used with the label noise xi and with -xi (antithetic: the
 * part of e linear in xi cancels; xi is N(0,1) by the data law), and
 * every first-order trace tr(E_g h^c(A)), h^c(A) = (H(A) - C Tr A)/sqrt d
 * the centred index, is taken minus tr(Ebar_g h^c(A)) with Ebar the mean
 * error of the earlier batches: E[h^c(A)] = 0 exactly for Gaussian
 * tokens, so the control variate changes no expectation; it removes the
 * error's mean (large in raw centring, where e has the index mean in it).
 * In raw centring the first-order part also splits exactly into its
 * identity part (1 - c) s_g m(A) sqrt d (the lambda terms of
 * theory/untied.md sec. 2, the fast -d E_C of the direct mean) and the
 * centred part; when the model reports its mean part the two are
 * compared separately (the identity part's large variance would
 * otherwise hide the O(1) centred one).
 *
 * Tolerance
 * ---------
 * At finite d the measured part differs from the limit term by a
 * finite-size bias (theory/direct.md sec. 7, theory/tied.md sec. 8,
 * theory/untied.md sec. 8): of order 1/d for direct attention with a
 * traceless teacher and for output maps of definite parity, of order
 * 1/sqrt d when a traceful letter meets a map without parity (token norms,
 * skewed diagonal indices; the centred trace of a non-linear direct run),
 * and zero for the first-order terms of a linear (He1) map, whose Gaussian
 * regression is exact at any d (Wick). Each case measures the gap g(d) =
 * measured - model at d = 200, 400, 800 (two or three d) on states with
 * the same limit moments (the free Gaussian start, or SGD trained to the
 * same tau0 at each d) and fits, by weighted least squares,
 *     g(d) = g_inf + b d^-p  (+ c d^-2p),
 * p = 1 or 1/2 as the theory notes say (p = 0: no finite-d term, g_inf is
 * the weighted mean). The second order is fitted to a term that vanishes
 * in the limit (below 1 % of the largest of its part: a pure finite-d
 * series, whose d^-2p part is as large as its d^-p part relative to
 * itself) and where the case says both orders are of the same size at
 * these d (the noise terms of tied softmax). A case passes when, for
 * every compared part,
 *     |g_inf| <= K SE(g_inf)   and   P(chi^2 of the fit) >= 2 Phi(-K):
 * the limit of the measured term must be the model's term, and the d
 * points must follow the assumed law. K = DRIFT_K = 4 standard errors: a
 * two-sided 6e-5 per comparison, so that the ~450 comparisons of the
 * three drift tests together fail by chance with probability below 3 %
 * (Bonferroni; they are positively correlated, so less). Nothing else is
 * allowed: a 5 % error in a term moves g_inf by 5 % of the term, which the
 * cases are sized to see (SE(g_inf) about 1 % or less of the terms each
 * case is there to check; the tables print every gap, fit and z; the
 * margins of 5 % errors in every term are in the theory notes). The
 * weight-decay parts are exact on both sides and must agree to
 * DRIFT_ROUNDOFF relative. A part the model does not describe at the
 * state (the untied raw mean's O(1) second-order rest while E_C is of
 * order one, theory/untied.md sec. 8) is printed and not compared; the
 * test says why. */
#ifndef AIM_DRIFT_HARNESS_H
#define AIM_DRIFT_HARNESS_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cblas.h>
/* OpenBLAS's cblas.h and GSL's gsl_cblas.h declare the same enums: keep
 * OpenBLAS's (as validate/sgd.c does). */
#define __GSL_CBLAS_H__
#include <gsl/gsl_cdf.h>
#include <gsl/gsl_multifit.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "compare.h"
#include "config.h"
#include "config_check.h"
#include "outmap.h"
#include "sgd.h"
#include "words.h"

#define DRIFT_K 4.0
#define DRIFT_ROUNDOFF 1e-9
#define DRIFT_WORD 16  /* longest word of the expansion */
#define DRIFT_PIECES 8 /* pieces of a letter's change per order */
#define DRIFT_MAX_D 3  /* dimensions per case */
#define DRIFT_BATCH 32 /* samples per batch of token products */

enum { DRIFT_G = 0, DRIFT_GT, DRIFT_GSYM }; /* G, G^T, G + G^T */

/* A factor of the parameters: dF = -(G_g partner + (gamma/d) F) per unit
 * step (partner 0: the identity); moves = 0 for the teacher. */
typedef struct {
    char name;
    int moves;
    char partner;
    int g;
} drift_factor;

/* A letter: left right^T (two factors), left (right = 0) or left^T
 * (right = 0, transposed = 1). */
typedef struct {
    char letter;
    char left, right;
    int transposed;
} drift_letter;

/* Sets the configuration key "section.key=value" (kv; NULL: none) and
 * validates the configuration, failing the test on an error. */
static void drift_config(aim_config *cfg, const char *kv)
{
    aim_config_error e;
    if (kv && aim_config_set(cfg, kv, &e))
        fail_msg("%s: %s", kv, e.message);
    if (aim_config_validate(cfg, &e))
        fail_msg("configuration: %s", e.message);
}

/* --- the expansion of one step --- */

/* A piece of a letter's change: coef L (ng = 0), coef w0 G_g w1 (ng = 1)
 * or coef w0 G_g w1 G_h w2 (ng = 2). */
typedef struct {
    double coef;
    int ng;
    int g[2];
    char w[3][DRIFT_WORD + 1];
} drift_piece;

typedef struct {
    int n[2];
    drift_piece p[2][DRIFT_PIECES]; /* orders eps, eps^2 */
} drift_change;

/* A term of the eps^order coefficient of a moment: kind 0 coef m(w),
 * kind 1 coef Tr(G_g A)/d, kind 2 coef Tr(G_g A G_h B)/d; decay marks the
 * kind-0 terms of order 1 (weight decay). */
typedef struct {
    int order, kind, decay;
    double coef;
    int g[2];
    int ha, hb, hab, hba; /* H-words A, B, AB, BA (-1: not needed) */
    int ma, mab, mw;      /* moments m(A), m(AB), m(w) (word-set indices) */
} drift_atom;

typedef struct {
    int n_factors, n_letters;
    drift_factor factors[6];
    drift_letter letters[AIM_ALPHABET_MAX];
    aim_alphabet ab;
    drift_change change[AIM_ALPHABET_MAX];
    char student, teacher;
    double c, gamma_d; /* centring switch, gamma/d */
    const aim_wordset *ws;
    int n_words;
    char (*words)[DRIFT_WORD + 1];
    int *atom_start; /* atoms of word i: atom_start[i] .. atom_start[i + 1] - 1 */
    drift_atom *atoms;
    int n_atoms, cap_atoms;
    /* H-words X W X^T = (X W_left)(X W_right^T)^T and the prefixes X W */
    int n_h, cap_h;
    char (*hword)[DRIFT_WORD + 1];
    int *h_left, *h_right;
    int n_pre, cap_pre;
    char (*pre)[DRIFT_WORD + 1];
    int *pre_parent, *pre_letter;
    int h_student, h_teacher, h_gram;
    int failed;
} drift_expansion;

static int drift_letter_index(const drift_expansion *x, char c)
{
    const char *p = c ? strchr(x->ab.letters, c) : NULL;
    return p ? (int)(p - x->ab.letters) : -1;
}

static const drift_factor *drift_factor_of(const drift_expansion *x, char name)
{
    for (int i = 0; i < x->n_factors; i++)
        if (x->factors[i].name == name)
            return &x->factors[i];
    return NULL;
}

/* The letter left right^T (0 when the alphabet has none). */
static char drift_letter_of(const drift_expansion *x, char left, char right)
{
    for (int i = 0; i < x->n_letters; i++)
        if (x->letters[i].left == left && x->letters[i].right == right)
            return x->letters[i].letter;
    return 0;
}

static int drift_transpose_g(int g) { return g == DRIFT_G ? DRIFT_GT : g == DRIFT_GT ? DRIFT_G : g; }

static void drift_add_piece(drift_change *ch, int order, double coef, const char *w0, int g0,
                            const char *w1, int g1, const char *w2)
{
    drift_piece *p = &ch->p[order - 1][ch->n[order - 1]++];
    memset(p, 0, sizeof *p);
    p->coef = coef;
    p->ng = w1 ? (w2 ? 2 : 1) : 0;
    p->g[0] = g0;
    p->g[1] = g1;
    snprintf(p->w[0], sizeof p->w[0], "%s", w0 ? w0 : "");
    snprintf(p->w[1], sizeof p->w[1], "%s", w1 ? w1 : "");
    snprintf(p->w[2], sizeof p->w[2], "%s", w2 ? w2 : "");
}

/* The change of every letter, from its factors' steps: for L = F1 F2^T
 * with dF1 = -(G1 P1 + g F1), dF2^T = -(P2^T G2^T + g F2^T), g = gamma/d,
 *     L1 = -G1 (P1 F2^T) - (F1 P2^T) G2^T - 2 g L,
 *     L2 = G1 (P1 P2^T) G2^T + g G1 (P1 F2^T) + g (F1 P2^T) G2^T + g^2 L;
 * for L = F (F^T) with the identity as partner, L1 = -G_g - g L (-G_g^T -
 * g L), L2 = 0. */
static void drift_derive(drift_expansion *x)
{
    const double g = x->gamma_d;
    for (int i = 0; i < x->n_letters; i++) {
        const drift_letter *l = &x->letters[i];
        drift_change *ch = &x->change[drift_letter_index(x, l->letter)];
        memset(ch, 0, sizeof *ch);
        const drift_factor *f1 = drift_factor_of(x, l->left);
        if (!f1) {
            x->failed = 1;
            return;
        }
        if (!f1->moves)
            continue;
        if (!l->right) {
            if (f1->partner) { /* only the identity partner is a one-factor letter */
                x->failed = 1;
                return;
            }
            drift_add_piece(ch, 1, -1.0, "", l->transposed ? drift_transpose_g(f1->g) : f1->g,
                            "", 0, NULL);
            drift_add_piece(ch, 1, -g, NULL, 0, NULL, 0, NULL);
            continue;
        }
        const drift_factor *f2 = drift_factor_of(x, l->right);
        const char p1f2[2] = {f2 ? drift_letter_of(x, f1->partner, l->right) : 0, 0};
        const char f1p2[2] = {f2 ? drift_letter_of(x, l->left, f2->partner) : 0, 0};
        const char p1p2[2] = {f2 ? drift_letter_of(x, f1->partner, f2->partner) : 0, 0};
        if (!p1f2[0] || !f1p2[0] || !p1p2[0]) {
            x->failed = 1;
            return;
        }
        const int g1 = f1->g, g2 = drift_transpose_g(f2->g);
        drift_add_piece(ch, 1, -1.0, "", g1, p1f2, 0, NULL);
        drift_add_piece(ch, 1, -1.0, f1p2, g2, "", 0, NULL);
        drift_add_piece(ch, 1, -2.0 * g, NULL, 0, NULL, 0, NULL);
        drift_add_piece(ch, 2, 1.0, "", g1, p1p2, g2, "");
        drift_add_piece(ch, 2, g, "", g1, p1f2, 0, NULL);
        drift_add_piece(ch, 2, g, f1p2, g2, "", 0, NULL);
        drift_add_piece(ch, 2, g * g, NULL, 0, NULL, 0, NULL);
    }
}

static int drift_find_str(char (*list)[DRIFT_WORD + 1], int n, const char *w)
{
    for (int i = 0; i < n; i++)
        if (strcmp(list[i], w) == 0)
            return i;
    return -1;
}

/* Room for one more element in *p (n used, *cap allocated). */
static int drift_grow(void **p, int *cap, int n, size_t size)
{
    if (n < *cap)
        return 0;
    const int c = *cap ? 2 * *cap : 32;
    void *q = realloc(*p, size * (size_t)c);
    if (!q)
        return -1;
    *p = q;
    *cap = c;
    return 0;
}

/* Index of the prefix product X W, registered after its parents. */
static int drift_prefix(drift_expansion *x, const char *w)
{
    int i = drift_find_str(x->pre, x->n_pre, w);
    if (i >= 0 || x->failed)
        return i < 0 ? 0 : i;
    const size_t n = strlen(w);
    int parent = -1;
    if (n > 0) {
        char up[DRIFT_WORD + 1];
        memcpy(up, w, n - 1);
        up[n - 1] = '\0';
        parent = drift_prefix(x, up);
    }
    void *pre = x->pre, *pp = x->pre_parent, *pl = x->pre_letter;
    int c0 = x->cap_pre, c1 = x->cap_pre, c2 = x->cap_pre;
    if (drift_grow(&pre, &c0, x->n_pre, sizeof *x->pre) ||
        drift_grow(&pp, &c1, x->n_pre, sizeof(int)) || drift_grow(&pl, &c2, x->n_pre, sizeof(int))) {
        x->failed = 1;
        return 0;
    }
    x->pre = pre;
    x->pre_parent = pp;
    x->pre_letter = pl;
    x->cap_pre = c0;
    i = x->n_pre++;
    snprintf(x->pre[i], sizeof x->pre[i], "%s", w);
    x->pre_parent[i] = parent;
    x->pre_letter[i] = n > 0 ? drift_letter_index(x, w[n - 1]) : -1;
    return i;
}

/* Index of the H-word X W X^T = (X W_left) (X W_right^T)^T, W_left the
 * first half of W (rounded up): prefixes of at most half the length. */
static int drift_hword(drift_expansion *x, const char *w)
{
    int i = drift_find_str(x->hword, x->n_h, w);
    if (i >= 0 || x->failed)
        return i < 0 ? 0 : i;
    const size_t n = strlen(w), nl = (n + 1) / 2;
    char left[DRIFT_WORD + 1], rt[DRIFT_WORD + 1];
    memcpy(left, w, nl);
    left[nl] = '\0';
    if (aim_word_transpose(&x->ab, w + nl, rt)) {
        x->failed = 1;
        return 0;
    }
    const int pl = drift_prefix(x, left), pr = drift_prefix(x, rt);
    void *hw = x->hword, *hl = x->h_left, *hr = x->h_right;
    int c0 = x->cap_h, c1 = x->cap_h, c2 = x->cap_h;
    if (x->failed || drift_grow(&hw, &c0, x->n_h, sizeof *x->hword) ||
        drift_grow(&hl, &c1, x->n_h, sizeof(int)) || drift_grow(&hr, &c2, x->n_h, sizeof(int))) {
        x->failed = 1;
        return 0;
    }
    x->hword = hw;
    x->h_left = hl;
    x->h_right = hr;
    x->cap_h = c0;
    i = x->n_h++;
    snprintf(x->hword[i], sizeof x->hword[i], "%s", w);
    x->h_left[i] = pl;
    x->h_right[i] = pr;
    return i;
}

static int drift_moment(drift_expansion *x, const char *w)
{
    const int i = aim_wordset_find(x->ws, w);
    if (i < 0)
        x->failed = 1;
    return i < 0 ? 0 : i;
}

static void drift_cat(char *out, const char *a, const char *b, const char *c)
{
    snprintf(out, DRIFT_WORD + 1, "%s%s%s", a, b, c);
}

static void drift_add_atom(drift_expansion *x, int order, int kind, int decay, double coef,
                           int g0, int g1, const char *A, const char *B, const char *w)
{
    void *p = x->atoms;
    if (coef == 0.0 || x->failed)
        return;
    if (drift_grow(&p, &x->cap_atoms, x->n_atoms, sizeof *x->atoms)) {
        x->failed = 1;
        return;
    }
    x->atoms = p;
    drift_atom *a = &x->atoms[x->n_atoms++];
    memset(a, 0, sizeof *a);
    a->order = order;
    a->kind = kind;
    a->decay = decay;
    a->coef = coef;
    a->g[0] = g0;
    a->g[1] = g1;
    a->ha = a->hb = a->hab = a->hba = -1;
    a->mw = drift_moment(x, w);
    if (kind >= 1) {
        a->ha = drift_hword(x, A);
        a->ma = drift_moment(x, A);
    }
    if (kind == 2) {
        char ab[DRIFT_WORD + 1], ba[DRIFT_WORD + 1];
        drift_cat(ab, A, B, "");
        drift_cat(ba, B, A, "");
        a->hb = drift_hword(x, B);
        a->mab = drift_moment(x, ab);
        if (x->c != 0.0) {
            a->hab = drift_hword(x, ab);
            a->hba = drift_hword(x, ba);
        }
    }
}

/* w[from .. to) read cyclically */
static void drift_cyclic(char *out, const char *w, int n, int from, int to)
{
    int k = 0;
    for (int i = from; i < to; i++)
        out[k++] = w[i % n];
    out[k] = '\0';
}

/* The terms of the eps and eps^2 coefficients of m(w): by cyclicity, a
 * piece P G Q at letter i gives Tr(G Q R_i P), R_i the word after i. */
static void drift_word_atoms(drift_expansion *x, const char *w)
{
    const int n = (int)strlen(w);
    char rest[DRIFT_WORD + 1], mid[DRIFT_WORD + 1], A[DRIFT_WORD + 1], B[DRIFT_WORD + 1];
    for (int i = 0; i < n; i++) {
        const drift_change *ci = &x->change[drift_letter_index(x, w[i])];
        drift_cyclic(rest, w, n, i + 1, i + n);
        for (int o = 0; o < 2; o++)
            for (int r = 0; r < ci->n[o]; r++) {
                const drift_piece *p = &ci->p[o][r];
                if (p->ng == 0) {
                    drift_add_atom(x, o + 1, 0, o == 0, p->coef, 0, 0, "", "", w);
                } else if (p->ng == 1) {
                    drift_cat(A, p->w[1], rest, p->w[0]);
                    drift_add_atom(x, o + 1, 1, 0, p->coef, p->g[0], 0, A, "", w);
                } else {
                    drift_cat(B, p->w[2], rest, p->w[0]);
                    drift_add_atom(x, o + 1, 2, 0, p->coef, p->g[0], p->g[1], p->w[1], B, w);
                }
            }
        for (int j = i + 1; j < n; j++) {
            const drift_change *cj = &x->change[drift_letter_index(x, w[j])];
            drift_cyclic(mid, w, n, i + 1, j);
            drift_cyclic(rest, w, n, j + 1, i + n);
            for (int r = 0; r < ci->n[0]; r++)
                for (int s = 0; s < cj->n[0]; s++) {
                    const drift_piece *p = &ci->p[0][r], *q = &cj->p[0][s];
                    const double coef = p->coef * q->coef;
                    char around[DRIFT_WORD + 1];
                    if (p->ng == 0 && q->ng == 0) {
                        drift_add_atom(x, 2, 0, 0, coef, 0, 0, "", "", w);
                    } else if (p->ng == 0) { /* letter i kept */
                        drift_cyclic(around, w, n, j + 1, j + n);
                        drift_cat(A, q->w[1], around, q->w[0]);
                        drift_add_atom(x, 2, 1, 0, coef, q->g[0], 0, A, "", w);
                    } else if (q->ng == 0) { /* letter j kept */
                        drift_cyclic(around, w, n, i + 1, i + n);
                        drift_cat(A, p->w[1], around, p->w[0]);
                        drift_add_atom(x, 2, 1, 0, coef, p->g[0], 0, A, "", w);
                    } else {
                        drift_cat(A, p->w[1], mid, q->w[0]);
                        drift_cat(B, q->w[1], rest, p->w[0]);
                        drift_add_atom(x, 2, 2, 0, coef, p->g[0], q->g[0], A, B, w);
                    }
                }
        }
    }
}

static void drift_expansion_free(drift_expansion *x)
{
    if (!x)
        return;
    free(x->words);
    free(x->atom_start);
    free(x->atoms);
    free(x->hword);
    free(x->h_left);
    free(x->h_right);
    free(x->pre);
    free(x->pre_parent);
    free(x->pre_letter);
    free(x);
}

/* The expansion of the words words[0 .. nw - 1] (moments read from ws).
 * NULL when out of memory or inconsistent. */
static drift_expansion *drift_expansion_create(const drift_factor *factors, int nf,
                                               const drift_letter *letters, int nl, char student,
                                               char teacher, const aim_config *cfg, int d,
                                               const aim_wordset *ws, const char *const *words,
                                               int nw)
{
    drift_expansion *x = calloc(1, sizeof *x);
    if (!x || nf > 6 || nl > AIM_ALPHABET_MAX) {
        free(x);
        return NULL;
    }
    x->n_factors = nf;
    memcpy(x->factors, factors, sizeof *factors * (size_t)nf);
    x->ab = *aim_wordset_alphabet(ws);
    for (int i = 0; i < nl; i++) /* the letters of this alphabet */
        if (drift_letter_index(x, letters[i].letter) >= 0)
            x->letters[x->n_letters++] = letters[i];
    x->student = student;
    x->teacher = teacher;
    x->c = cfg->centring == AIM_CENTRED ? 1.0 : 0.0;
    x->gamma_d = cfg->gamma / d;
    x->ws = ws;
    x->n_words = nw;
    x->words = calloc((size_t)nw, sizeof *x->words);
    x->atom_start = calloc((size_t)nw + 1, sizeof *x->atom_start);
    if (!x->words || !x->atom_start)
        x->failed = 1;
    if (!x->failed)
        drift_derive(x);
    const char sw[2] = {student, 0}, tw[2] = {teacher, 0};
    x->h_student = drift_hword(x, sw);
    x->h_teacher = drift_hword(x, tw);
    x->h_gram = drift_hword(x, "");
    for (int i = 0; i < nw && !x->failed; i++) {
        if (strlen(words[i]) > DRIFT_WORD / 2) {
            x->failed = 1;
            break;
        }
        snprintf(x->words[i], sizeof x->words[i], "%s", words[i]);
        x->atom_start[i] = x->n_atoms;
        drift_word_atoms(x, words[i]);
        x->atom_start[i + 1] = x->n_atoms;
    }
    if (x->failed) {
        drift_expansion_free(x);
        return NULL;
    }
    return x;
}

/* --- samples at a fixed state --- */

typedef struct {
    drift_expansion *x;
    int d, T, B;
    double c, sqrt_noise;
    int symmetric;
    const double *lm[AIM_ALPHABET_MAX]; /* dense d x d letters */
    const double *mom;                  /* measured moments (word-set order) */
    double trs, trt;                    /* Tr S, Tr S* */
    double L[AIM_MAX_TOKENS * AIM_MAX_TOKENS], C[AIM_MAX_TOKENS * AIM_MAX_TOKENS];
    double ebar[AIM_MAX_TOKENS * AIM_MAX_TOKENS]; /* mean error of the earlier batches */
    double esum[AIM_MAX_TOKENS * AIM_MAX_TOKENS];
    long ecount;
    double *X, *xi, *prebuf, *H;
    double **P;
    aim_outmap *map;
    gsl_rng *r;
} drift_sampler;

static void drift_sampler_free(drift_sampler *s)
{
    if (!s)
        return;
    free(s->X);
    free(s->xi);
    free(s->prebuf);
    free(s->H);
    free(s->P);
    aim_outmap_free(s->map);
    gsl_rng_free(s->r);
    free(s);
}

/* Samples of batches of B at the state whose letters and moments are
 * given; its own generator, seeded from seed. */
static drift_sampler *drift_sampler_create(drift_expansion *x, const aim_config *cfg, int d,
                                           int B, const double *const *letters,
                                           const double *mom, uint64_t seed)
{
    drift_sampler *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->x = x;
    s->d = d;
    s->T = cfg->tokens;
    s->B = B;
    s->c = x->c;
    s->sqrt_noise = sqrt(cfg->noise);
    s->symmetric = cfg->decomposition == AIM_DIRECT && cfg->student.symmetric;
    for (int k = 0; x->ab.letters[k]; k++)
        s->lm[k] = letters[k];
    s->mom = mom;
    const char sw[2] = {x->student, 0}, tw[2] = {x->teacher, 0};
    s->trs = d * mom[aim_wordset_find(x->ws, sw)];
    s->trt = d * mom[aim_wordset_find(x->ws, tw)];
    const int T = s->T;
    /* C = L L^T, L lower triangular (a T x T Cholesky, T <= 8) */
    memcpy(s->C, cfg->cov, sizeof(double) * (size_t)T * T);
    for (int a = 0; a < T; a++)
        for (int b = 0; b <= a; b++) {
            double v = s->C[a * T + b];
            for (int q = 0; q < b; q++)
                v -= s->L[a * T + q] * s->L[b * T + q];
            s->L[a * T + b] = a == b ? sqrt(v) : v / s->L[b * T + b];
        }
    const size_t rows = (size_t)B * T;
    s->X = malloc(rows * d * sizeof *s->X);
    s->xi = malloc((size_t)B * T * T * sizeof *s->xi);
    s->prebuf = malloc((size_t)x->n_pre * rows * d * sizeof *s->prebuf);
    s->P = malloc((size_t)x->n_pre * sizeof *s->P);
    s->H = malloc((size_t)B * x->n_h * T * T * sizeof *s->H);
    s->map = aim_outmap_create(cfg);
    s->r = gsl_rng_alloc(gsl_rng_mt19937);
    if (!s->X || !s->xi || !s->prebuf || !s->P || !s->H || !s->map || !s->r) {
        drift_sampler_free(s);
        return NULL;
    }
    gsl_rng_set(s->r, (unsigned long)(seed % 4294967291u) + 1u);
    for (int i = 0; i < x->n_pre; i++)
        s->P[i] = x->pre_parent[i] < 0 ? s->X : s->prebuf + (size_t)i * rows * d;
    return s;
}

/* Every H-word X_k W X_k^T of the B samples in s->X: the prefixes by
 * one dgemm per letter over the batch, then T^2 dot products. */
static void drift_indices(drift_sampler *s)
{
    const int T = s->T, d = s->d, B = s->B, T2 = T * T;
    const drift_expansion *x = s->x;
    for (int i = 0; i < x->n_pre; i++)
        if (x->pre_parent[i] >= 0)
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, B * T, d, d, 1.0,
                        s->P[x->pre_parent[i]], d, s->lm[x->pre_letter[i]], d, 0.0, s->P[i],
                        d);
    for (int k = 0; k < B; k++)
        for (int h = 0; h < x->n_h; h++) {
            const double *Pl = s->P[x->h_left[h]] + (size_t)k * T * d;
            const double *Pr = s->P[x->h_right[h]] + (size_t)k * T * d;
            double *Hk = s->H + ((size_t)k * x->n_h + h) * T2;
            for (int a = 0; a < T; a++)
                for (int b = 0; b < T; b++)
                    Hk[a * T + b] = cblas_ddot(d, Pl + (size_t)a * d, 1, Pr + (size_t)b * d, 1);
        }
}

/* Draws B samples (tokens X = L Z, label noises xi) and their H-words. */
static void drift_draw(drift_sampler *s)
{
    const int T = s->T, d = s->d, T2 = T * T;
    double z[AIM_MAX_TOKENS];
    for (int k = 0; k < s->B; k++) {
        double *Xk = s->X + (size_t)k * T * d;
        for (int i = 0; i < d; i++) {
            for (int a = 0; a < T; a++)
                z[a] = gsl_ran_gaussian_ziggurat(s->r, 1.0);
            for (int a = 0; a < T; a++) {
                double v = 0.0;
                for (int q = 0; q <= a; q++)
                    v += s->L[a * T + q] * z[q];
                Xk[(size_t)a * d + i] = v;
            }
        }
        for (int q = 0; q < T2; q++)
            s->xi[k * T2 + q] = gsl_ran_gaussian_ziggurat(s->r, 1.0);
    }
    drift_indices(s);
}

/* The errors of sample k with label noise sign * xi: E[0] = e (e_ab =
 * dl/dh_ab, symmetrised for a symmetric direct student as SGD does),
 * E[1] = e^T, E[2] = e + e^T, and sg = (s, s, 2 s), s = sum_ab e_ab C_ab. */
static void drift_errors(const drift_sampler *s, int k, double sign,
                         double E[3][AIM_MAX_TOKENS * AIM_MAX_TOKENS], double sg[3])
{
    const drift_expansion *x = s->x;
    const int T = s->T, T2 = T * T;
    const double sqd = sqrt((double)s->d);
    const double *Hk = s->H + (size_t)k * x->n_h * T2;
    double hs[AIM_MAX_TOKENS * AIM_MAX_TOKENS] = {0}, ht[AIM_MAX_TOKENS * AIM_MAX_TOKENS] = {0};
    double fs[AIM_MAX_TOKENS * AIM_MAX_TOKENS], ft[AIM_MAX_TOKENS * AIM_MAX_TOKENS];
    double r[AIM_MAX_TOKENS * AIM_MAX_TOKENS];
    double jac[AIM_MAX_TOKENS * AIM_MAX_TOKENS * AIM_MAX_TOKENS * AIM_MAX_TOKENS];
    for (int q = 0; q < T2; q++) {
        hs[q] = (Hk[x->h_student * T2 + q] - s->c * s->C[q] * s->trs) / sqd;
        ht[q] = (Hk[x->h_teacher * T2 + q] - s->c * s->C[q] * s->trt) / sqd;
    }
    aim_outmap_apply(s->map, ht, ft, NULL);
    aim_outmap_apply(s->map, hs, fs, jac);
    for (int q = 0; q < T2; q++)
        r[q] = fs[q] - ft[q] - sign * s->sqrt_noise * s->xi[k * T2 + q];
    for (int q = 0; q < T2; q++) {
        double v = 0.0;
        for (int p = 0; p < T2; p++)
            v += jac[p * T2 + q] * r[p];
        E[0][q] = v;
    }
    if (s->symmetric)
        for (int a = 0; a < T; a++)
            for (int b = a + 1; b < T; b++)
                E[0][a * T + b] = E[0][b * T + a] = 0.5 * (E[0][a * T + b] + E[0][b * T + a]);
    double sC = 0.0;
    for (int a = 0; a < T; a++)
        for (int b = 0; b < T; b++) {
            E[1][a * T + b] = E[0][b * T + a];
            E[2][a * T + b] = E[0][a * T + b] + E[0][b * T + a];
            sC += E[0][a * T + b] * s->C[a * T + b];
        }
    sg[0] = sg[1] = sC;
    sg[2] = 2.0 * sC;
}

/* sum_ab M_ab H_ba */
static double drift_tr(const double *M, const double *H, int T)
{
    double t = 0.0;
    for (int a = 0; a < T; a++)
        for (int b = 0; b < T; b++)
            t += M[a * T + b] * H[b * T + a];
    return t;
}

/* tr(M1 H1 M2 H2) */
static double drift_tr4(const double *M1, const double *H1, const double *M2, const double *H2,
                        int T)
{
    double P[AIM_MAX_TOKENS * AIM_MAX_TOKENS], Q[AIM_MAX_TOKENS * AIM_MAX_TOKENS];
    for (int a = 0; a < T; a++)
        for (int b = 0; b < T; b++) {
            double u = 0.0, v = 0.0;
            for (int q = 0; q < T; q++) {
                u += M1[a * T + q] * H1[q * T + b];
                v += M2[a * T + q] * H2[q * T + b];
            }
            P[a * T + b] = u;
            Q[a * T + b] = v;
        }
    return drift_tr(P, Q, T);
}

/* Per tracked word, for sample k of the last draw (averaged over the
 * label-noise signs +xi, -xi when there is label noise): the identity
 * part (a1id) and the centred part (a1c, minus its control variate) of
 * the eps coefficient without weight decay, its weight-decay part (a1dec,
 * the same for every sample) and the eps^2 coefficient (a2). plain: the
 * coefficients of the sample as drawn (+xi only, no control variate), for
 * the check against a real step. */
static void drift_eval(drift_sampler *s, int k, int plain, double *a1id, double *a1c,
                       double *a1dec, double *a2)
{
    const drift_expansion *x = s->x;
    const int T = s->T, T2 = T * T, d = s->d;
    const int signs = s->sqrt_noise > 0.0 && !plain ? 2 : 1, cv = !plain;
    const double sqd = sqrt((double)d), c = s->c, *m = s->mom;
    const double *Hk = s->H + (size_t)k * x->n_h * T2;
    double Eb[3][AIM_MAX_TOKENS * AIM_MAX_TOKENS];
    for (int a = 0; a < T; a++)
        for (int b = 0; b < T; b++) {
            const double e = cv ? s->ebar[a * T + b] : 0.0, et = cv ? s->ebar[b * T + a] : 0.0;
            Eb[0][a * T + b] = e;
            Eb[1][a * T + b] = et;
            Eb[2][a * T + b] = e + et;
        }
    for (int w = 0; w < x->n_words; w++)
        a1id[w] = a1c[w] = a1dec[w] = a2[w] = 0.0;
    for (int sign = 0; sign < signs; sign++) {
        double E[3][AIM_MAX_TOKENS * AIM_MAX_TOKENS], sg[3];
        drift_errors(s, k, sign ? -1.0 : 1.0, E, sg);
        for (int q = 0; q < T2; q++)
            s->esum[q] += E[0][q];
        s->ecount++;
        for (int w = 0; w < x->n_words; w++) {
            double vid = 0.0, vc = 0.0, vd = 0.0, v2 = 0.0;
            for (int i = x->atom_start[w]; i < x->atom_start[w + 1]; i++) {
                const drift_atom *a = &x->atoms[i];
                if (a->kind == 0) {
                    const double v = a->coef * m[a->mw];
                    if (a->order == 2)
                        v2 += v;
                    else
                        vd += v;
                } else if (a->kind == 1) {
                    /* Tr(G_g A)/d = (1 - c) s_g m(A)/sqrt d + tr(E_g h^c(A))/d */
                    double hc[AIM_MAX_TOKENS * AIM_MAX_TOKENS];
                    for (int q = 0; q < T2; q++)
                        hc[q] = (Hk[a->ha * T2 + q] - s->C[q] * d * m[a->ma]) / sqd;
                    const double id = (1.0 - c) * sg[a->g[0]] * m[a->ma] / sqd;
                    const double cen = (drift_tr(E[a->g[0]], hc, T) - drift_tr(Eb[a->g[0]], hc, T)) / d;
                    if (a->order == 2)
                        v2 += a->coef * (id + cen);
                    else {
                        vid += a->coef * id;
                        vc += a->coef * cen;
                    }
                } else {
                    const double *Ea = E[a->g[0]], *Ebb = E[a->g[1]];
                    double t = drift_tr4(Ea, Hk + a->ha * T2, Ebb, Hk + a->hb * T2, T);
                    if (c != 0.0)
                        t += -sg[a->g[1]] * drift_tr(Ea, Hk + a->hab * T2, T) -
                             sg[a->g[0]] * drift_tr(Ebb, Hk + a->hba * T2, T) +
                             sg[a->g[0]] * sg[a->g[1]] * d * m[a->mab];
                    v2 += a->coef * t / ((double)d * d);
                }
            }
            a1id[w] += vid / signs;
            a1c[w] += vc / signs;
            a1dec[w] += vd / signs;
            a2[w] += v2 / signs;
        }
    }
}

/* Fixes the control variate's mean error for the next batch. */
static void drift_next_batch(drift_sampler *s)
{
    const int T2 = s->T * s->T;
    for (int q = 0; q < T2; q++)
        s->ebar[q] = s->ecount ? s->esum[q] / s->ecount : 0.0;
}

/* --- the model and the state --- */

/* The factors of an SGD state: the matrix of factor name (d x *cols,
 * row-major), or NULL. */
typedef const double *(*drift_factor_fn)(const aim_sgd *sgd, char name, int *cols);

/* Dense d x d letters of the state (buf: one d x d block per letter),
 * mats[l] for letter l. Returns 0 or -1. */
static int drift_letter_matrices(const drift_expansion *x, const aim_sgd *sgd,
                                 drift_factor_fn factor, double *buf, const double **mats)
{
    const int d = aim_sgd_dim(sgd);
    const size_t dd = (size_t)d * d;
    for (int i = 0; i < x->n_letters; i++) {
        const drift_letter *l = &x->letters[i];
        const int li = drift_letter_index(x, l->letter);
        double *out = buf + (size_t)li * dd;
        int c1, c2;
        const double *F1 = factor(sgd, l->left, &c1);
        if (!F1)
            return -1;
        if (l->right) {
            const double *F2 = factor(sgd, l->right, &c2);
            if (!F2 || c1 != c2)
                return -1;
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, d, d, c1, 1.0, F1, c1, F2, c2,
                        0.0, out, d);
        } else if (l->transposed) {
            for (int a = 0; a < d; a++)
                for (int b = 0; b < d; b++)
                    out[(size_t)b * d + a] = F1[(size_t)a * d + b];
        } else {
            memcpy(out, F1, dd * sizeof *out);
        }
        mats[li] = out;
    }
    return 0;
}

/* A model under test and the SGD step it describes. */
typedef struct {
    /* the step: factors and letters, the letters of S and S* */
    const drift_factor *factors;
    int n_factors;
    const drift_letter *letters;
    int n_letters;
    char student, teacher;
    drift_factor_fn factor;
    /* the model at dimension d (NULL on failure) and its release */
    void *(*create)(const aim_config *cfg, int d);
    void (*destroy)(void *model);
    const aim_wordset *(*words)(void *model); /* the moments it reads */
    int (*size)(void *model);
    const char *(*name)(void *model, int i);
    /* quantity i is scale(i, d) m(word(i)) */
    const char *(*word)(void *model, int i);
    double (*scale)(void *model, int i, int d);
    /* its first-order, second-order and decay terms at measured moments;
     * mean (may be left NULL by the model: then set to NAN) is the part of
     * the first-order term that is the identity part of G (raw
     * centring). Returns 0 or -1. */
    int (*terms)(void *model, const double *mom, int d, double *first, double *second,
                 double *decay, double *mean);
} drift_model;

/* The finite-d law of a term: g(d) = g_inf + b d^-p (+ c d^-2p when
 * orders = 2; p = 0: g_inf alone); a term not compared is outside the
 * model's scope (the test says why; its measured gaps are printed). */
typedef struct drift_law {
    double p;
    int orders;
    int compared;
    int vanishing; /* (input) the term is below 1 % of the largest of its part */
} drift_law;

typedef struct {
    const char *label;
    int n_d;
    int d[DRIFT_MAX_D];
    long samples[DRIFT_MAX_D];
    double tau0;      /* SGD training before the state */
    double eta_train; /* learning rate of that training (0: the model's) */
    double p_first, p_second; /* finite-d laws d^-p (0: none) */
    /* fit two orders, d^-p and d^-2p, to every term of the first-order
     * (bit 0) or second-order (bit 1) parts: where both are of the same
     * size at the d measured (terms that vanish in the limit always get
     * two) */
    int two_orders;
    /* the law of quantity name's part where it differs from the above
     * (NULL: none differs): the callback gets it filled in and may change
     * it */
    void (*law)(const char *name, int part, struct drift_law *law);
} drift_case;

/* The parts compared */
enum { DRIFT_FIRST = 0, DRIFT_FIRST_CENTRED, DRIFT_FIRST_MEAN, DRIFT_SECOND, DRIFT_PARTS };
static const char *const drift_part_names[DRIFT_PARTS] = {"first", "first/c", "first/id",
                                                          "second"};

/* One case at one d: per quantity and part, the model's term, the
 * measured one and its standard error; the decay parts. */
typedef struct {
    int d;
    long samples;
    int products; /* prefix products X W per sample (the cost) */
    double overlap, seconds;
    double *model, *meas, *se; /* [part * n + i] */
    double *decay_model, *decay_meas;
    double *mom; /* the measured moments of the state */
} drift_point;

static void drift_point_free(drift_point *p)
{
    free(p->model);
    free(p->meas);
    free(p->se);
    free(p->decay_model);
    free(p->decay_meas);
    free(p->mom);
}

static double drift_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Teacher overlap of the state (theory/direct.md sec. 5) from its order
 * parameters. */
static double drift_overlap(const aim_sgd *s)
{
    aim_overlaps q;
    aim_sgd_overlaps(s, &q);
    const double ts = q.trace[0], tt = q.trace[1];
    return (q.omega[0][1] - ts * tt) /
           sqrt((q.omega[0][0] - ts * ts) * (q.omega[1][1] - tt * tt));
}

/* Names of the tracked words of a model, for the expansion. */
static const char **drift_words(const drift_model *dm, void *model, int n)
{
    const char **w = malloc(sizeof *w * (size_t)n);
    for (int i = 0; w && i < n; i++)
        w[i] = dm->word(model, i);
    return w;
}

/* The model's terms at the measured moments of point pt into its model
 * arrays. */
static void drift_model_terms(const aim_config *cfg, const drift_model *dm, drift_point *pt)
{
    void *model = dm->create(cfg, pt->d);
    assert_non_null(model);
    const int n = dm->size(model);
    double *first = pt->model + DRIFT_FIRST * n, *mean = pt->model + DRIFT_FIRST_MEAN * n;
    for (int i = 0; i < n; i++)
        mean[i] = NAN;
    assert_int_equal(dm->terms(model, pt->mom, pt->d, first, pt->model + DRIFT_SECOND * n,
                               pt->decay_model, mean),
                     0);
    for (int i = 0; i < n; i++)
        pt->model[DRIFT_FIRST_CENTRED * n + i] = first[i] - mean[i];
    dm->destroy(model);
}

/* AIMDYN_DRIFT_SAMPLES=f (an integer >= 1) multiplies the samples of
 * every case: the longer campaign (validate/campaigns/campaign_drift.sh) runs the
 * same cases with smaller standard errors. */
static long drift_sample_factor(void)
{
    const char *f = getenv("AIMDYN_DRIFT_SAMPLES");
    const long v = f ? strtol(f, NULL, 10) : 1;
    return v >= 1 ? v : 1;
}

/* Measures the case at dimension d (index k of the case) into pt. */
static void drift_measure(const aim_config *cfg, const drift_case *dc, int k,
                          const drift_model *dm, drift_point *pt)
{
    const int d = dc->d[k];
    const double t0 = drift_now();
    void *model = dm->create(cfg, d);
    assert_non_null(model);
    const aim_wordset *ws = dm->words(model);
    const int n = dm->size(model), count = aim_wordset_count(ws);
    const char **words = drift_words(dm, model, n);
    assert_non_null(words);
    drift_expansion *x = drift_expansion_create(dm->factors, dm->n_factors, dm->letters,
                                                dm->n_letters, dm->student, dm->teacher, cfg, d,
                                                ws, words, n);
    assert_non_null(x);

    aim_config train = *cfg;
    if (dc->eta_train > 0.0)
        train.eta = dc->eta_train;
    aim_sgd *base = aim_sgd_create(&train, d, cfg->seed);
    assert_non_null(base);
    assert_int_equal(aim_sgd_advance(base, aim_sgd_steps_for(&train, d, dc->tau0)), 0);
    const int nl = (int)strlen(x->ab.letters);
    double *buf = malloc(sizeof *buf * (size_t)nl * d * d);
    double *mom = malloc(sizeof *mom * (size_t)count);
    const double *mats[AIM_ALPHABET_MAX];
    assert_true(buf && mom);
    assert_int_equal(drift_letter_matrices(x, base, dm->factor, buf, mats), 0);
    assert_int_equal(aim_compare_measure_words(base, ws, aim_wordset_max_len(ws), mom), 0);

    memset(pt, 0, sizeof *pt);
    pt->d = d;
    pt->overlap = drift_overlap(base);
    pt->model = calloc((size_t)DRIFT_PARTS * n, sizeof *pt->model);
    pt->meas = calloc((size_t)DRIFT_PARTS * n, sizeof *pt->meas);
    pt->se = calloc((size_t)DRIFT_PARTS * n, sizeof *pt->se);
    pt->decay_model = calloc((size_t)n, sizeof *pt->decay_model);
    pt->decay_meas = calloc((size_t)n, sizeof *pt->decay_meas);
    double *acc = calloc(6 * (size_t)n, sizeof *acc); /* sums of id, c, second; squares */
    double *sq = calloc(6 * (size_t)n, sizeof *sq);
    double *v = malloc(sizeof *v * 4 * (size_t)n);
    assert_true(pt->model && pt->meas && pt->se && pt->decay_model && pt->decay_meas && acc &&
                sq && v);

    pt->mom = mom;
    drift_model_terms(cfg, dm, pt);

    /* the measured parts */
    drift_sampler *s = drift_sampler_create(x, cfg, d, DRIFT_BATCH, mats, mom,
                                            cfg->seed * 7919u + (uint64_t)d);
    assert_non_null(s);
    double *a1id = v, *a1c = v + n, *a1dec = v + 2 * n, *a2 = v + 3 * n;
    long done = 0;
    const long target = dc->samples[k] * drift_sample_factor();
    while (done < target) {
        drift_next_batch(s);
        drift_draw(s);
        for (int b = 0; b < s->B; b++, done++) {
            drift_eval(s, b, 0, a1id, a1c, a1dec, a2);
            for (int i = 0; i < n; i++) {
                const double sc = dm->scale(model, i, d);
                const double part[3] = {sc * d * a1id[i], sc * d * a1c[i], sc * cfg->eta * a2[i]};
                /* first = id + c: its variance needs the cross term */
                const double tot = part[0] + part[1];
                for (int p = 0; p < 3; p++) {
                    acc[p * n + i] += part[p];
                    sq[p * n + i] += part[p] * part[p];
                }
                acc[3 * n + i] += tot;
                sq[3 * n + i] += tot * tot;
                pt->decay_meas[i] = sc * d * a1dec[i];
            }
        }
    }
    pt->samples = done;
    pt->products = x->n_pre - 1;
    const int map[4] = {DRIFT_FIRST_MEAN, DRIFT_FIRST_CENTRED, DRIFT_SECOND, DRIFT_FIRST};
    for (int p = 0; p < 4; p++)
        for (int i = 0; i < n; i++) {
            const double mu = acc[p * n + i] / done;
            pt->meas[map[p] * n + i] = mu;
            pt->se[map[p] * n + i] = sqrt(fmax(sq[p * n + i] / done - mu * mu, 0.0) / (done - 1));
        }
    pt->seconds = drift_now() - t0;
    drift_sampler_free(s);
    drift_expansion_free(x);
    aim_sgd_free(base);
    free(buf);
    free(acc);
    free(sq);
    free(v);
    free(words);
    dm->destroy(model);
}

/* --- the finite-d fit and the verdict --- */

typedef struct {
    double g_inf, se_inf, b, se_b, chi2;
    int dof;
} drift_fit;

/* Weighted least squares of g(d) = g_inf + b d^-p (+ c d^-2p when orders
 * = 2) over the points; p = 0: g_inf alone, the weighted mean. */
static drift_fit drift_fit_points(int n, const int *d, const double *g, const double *se,
                                  double p, int orders)
{
    drift_fit f = {0};
    const int k = p > 0.0 ? (orders < n ? 1 + orders : n) : 1;
    gsl_matrix *X = gsl_matrix_alloc((size_t)n, (size_t)k);
    gsl_matrix *cov = gsl_matrix_alloc((size_t)k, (size_t)k);
    gsl_vector *w = gsl_vector_alloc((size_t)n), *y = gsl_vector_alloc((size_t)n);
    gsl_vector *c = gsl_vector_alloc((size_t)k);
    gsl_multifit_linear_workspace *ws = gsl_multifit_linear_alloc((size_t)n, (size_t)k);
    assert_true(X && cov && w && y && c && ws);
    for (int i = 0; i < n; i++) {
        const double x = p > 0.0 ? pow(d[i], -p) : 0.0;
        for (int j = 0; j < k; j++)
            gsl_matrix_set(X, (size_t)i, (size_t)j, pow(x, j));
        gsl_vector_set(w, (size_t)i, 1.0 / (se[i] * se[i]));
        gsl_vector_set(y, (size_t)i, g[i]);
    }
    assert_int_equal(gsl_multifit_wlinear(X, w, y, c, cov, &f.chi2, ws), 0);
    f.g_inf = gsl_vector_get(c, 0);
    f.se_inf = sqrt(gsl_matrix_get(cov, 0, 0));
    if (k > 1) {
        f.b = gsl_vector_get(c, 1);
        f.se_b = sqrt(gsl_matrix_get(cov, 1, 1));
    }
    f.dof = n - k;
    gsl_multifit_linear_free(ws);
    gsl_matrix_free(X);
    gsl_matrix_free(cov);
    gsl_vector_free(w);
    gsl_vector_free(y);
    gsl_vector_free(c);
    return f;
}

/* The verdict of a fit: the limit within K standard errors, the points
 * on the assumed law (chi^2 tail probability at least that of K). */
static int drift_fit_ok(const drift_fit *f)
{
    const double alpha = 2.0 * gsl_cdf_ugaussian_Q(DRIFT_K);
    const int on_law = f->dof < 1 || gsl_cdf_chisq_Q(f->chi2, f->dof) >= alpha;
    return fabs(f->g_inf) <= DRIFT_K * f->se_inf && on_law;
}

/* The verdict on the points of a case: every compared part's fit, and
 * the decay parts. Prints the table when verbose. Returns the number of
 * failures; *worst (may be NULL) gets the largest |g_inf| / (K SE(g_inf))
 * of the compared parts. */
static int drift_judge(const drift_case *dc, const drift_model *dm, void *model, int n,
                       const drift_point *pts, int verbose, double *worst)
{
    /* the largest term of each part, the floor of the scale the gaps are
     * shown in (% of the term, or of 1 % of the largest for tiny terms) */
    double largest[DRIFT_PARTS] = {0};
    for (int part = 0; part < DRIFT_PARTS; part++)
        for (int i = 0; i < n; i++)
            for (int k = 0; k < dc->n_d; k++)
                largest[part] = fmax(largest[part], fabs(pts[k].model[part * n + i]));
    int bad = 0;
    if (worst)
        *worst = 0.0;
    for (int i = 0; i < n; i++) {
        const int split = !isnan(pts[0].model[DRIFT_FIRST_MEAN * n + i]);
        for (int part = 0; part < DRIFT_PARTS; part++) {
            if (split ? part == DRIFT_FIRST : part == DRIFT_FIRST_CENTRED || part == DRIFT_FIRST_MEAN)
                continue;
            int dd[DRIFT_MAX_D];
            double g[DRIFT_MAX_D], se[DRIFT_MAX_D], ref = 0.0;
            for (int k = 0; k < dc->n_d; k++) {
                dd[k] = pts[k].d;
                g[k] = pts[k].meas[part * n + i] - pts[k].model[part * n + i];
                /* round-off floors a part that is the same for every sample */
                se[k] = fmax(pts[k].se[part * n + i],
                             DRIFT_ROUNDOFF * (fabs(pts[k].meas[part * n + i]) +
                                               fabs(pts[k].model[part * n + i])));
                ref += fabs(pts[k].model[part * n + i]) / dc->n_d;
            }
            if (ref == 0.0 && pts[0].se[part * n + i] == 0.0 && g[0] == 0.0)
                continue; /* no such term (a moment with no noise term) */
            /* a term that vanishes in the limit (below 1 % of the largest of
             * its part) is a pure finite-d series: two orders are fitted */
            drift_law law = {part == DRIFT_SECOND ? dc->p_second : dc->p_first, 1, 1, 0};
            law.vanishing = ref < 0.01 * largest[part];
            if (law.vanishing || (dc->two_orders >> (part == DRIFT_SECOND)) & 1)
                law.orders = 2;
            if (dc->law)
                dc->law(dm->name(model, i), part, &law);
            if (!law.compared) {
                if (verbose) {
                    print_message("  %-9s %-8s %11.4g", dm->name(model, i),
                                  drift_part_names[part], ref);
                    for (int k = 0; k < dc->n_d; k++)
                        print_message(" %+.4g+-%-.2g", g[k], se[k]);
                    print_message("  (gap and SE absolute; not compared)\n");
                }
                continue;
            }
            const drift_fit f = drift_fit_points(dc->n_d, dd, g, se, law.p, law.orders);
            const int ok = drift_fit_ok(&f);
            bad += !ok;
            if (worst)
                *worst = fmax(*worst, fabs(f.g_inf) / (DRIFT_K * f.se_inf));
            if (!verbose)
                continue;
            ref = fmax(ref, 0.01 * largest[part]);
            const double unit = ref > 0.0 ? 100.0 / ref : 1.0;
            print_message("  %-9s %-8s %11.4g", dm->name(model, i), drift_part_names[part], ref);
            for (int k = 0; k < dc->n_d; k++)
                print_message(" %6.2f+-%-5.2f", g[k] * unit, se[k] * unit);
            print_message(" %6.2f+-%-6.2f %6.1f+-%-6.1f %7.2f %6.3f %s\n", f.g_inf * unit,
                          f.se_inf * unit, f.b * unit, f.se_b * unit,
                          f.se_inf > 0 ? f.g_inf / f.se_inf : 0.0,
                          f.dof > 0 ? gsl_cdf_chisq_Q(f.chi2, f.dof) : 1.0, ok ? "ok" : "FAIL");
        }
        for (int k = 0; k < dc->n_d; k++) {
            const double dmod = pts[k].decay_model[i], dmeas = pts[k].decay_meas[i];
            if (fabs(dmod - dmeas) > DRIFT_ROUNDOFF * (fabs(dmod) + fabs(dmeas))) {
                if (verbose)
                    print_message("  %-9s decay at d = %d: model %.12g, measured %.12g FAIL\n",
                                  dm->name(model, i), pts[k].d, dmod, dmeas);
                bad++;
            }
        }
    }
    return bad;
}

/* Measures the case at each of its d, prints the table and fails the test
 * when a part is outside its tolerance. */
static void drift_run(const aim_config *cfg, const drift_case *dc, const drift_model *dm)
{
    drift_point pts[DRIFT_MAX_D];
    for (int k = 0; k < dc->n_d; k++)
        drift_measure(cfg, dc, k, dm, &pts[k]);
    void *model = dm->create(cfg, dc->d[dc->n_d - 1]);
    assert_non_null(model);
    const int n = dm->size(model);
    print_message("%s (eta = %g; state: SGD to tau0 = %g at eta = %g; finite-d laws: first "
                  "d^-%g, second d^-%g)\n",
                  dc->label, cfg->eta, dc->tau0, dc->eta_train > 0.0 ? dc->eta_train : cfg->eta,
                  dc->p_first, dc->p_second);
    for (int k = 0; k < dc->n_d; k++)
        print_message("  d = %d: %ld samples, %d token products each, teacher overlap %.3f, "
                      "%.1f s\n",
                      pts[k].d, pts[k].samples, pts[k].products, pts[k].overlap, pts[k].seconds);
    print_message("  %-9s %-8s %11s", "quantity", "part", "term");
    for (int k = 0; k < dc->n_d; k++)
        print_message("   gap%%(d=%d)", pts[k].d);
    print_message("   %-15s %-15s %7s %6s\n", "limit gap %", "b (x d^-p) %", "z", "P");
    double worst = 0.0;
    const int bad = drift_judge(dc, dm, model, n, pts, 1, &worst);
    print_message("  largest |limit gap| / (%g SE): %.2f tolerances\n", DRIFT_K, worst);
    dm->destroy(model);
    for (int k = 0; k < dc->n_d; k++)
        drift_point_free(&pts[k]);
    assert_int_equal(bad, 0);
}

/* --- the check of the expansion against one real SGD step --- */

/* out (d x d) = product of the letters of w (the identity for ""). */
static void drift_dense_word(const drift_sampler *s, const char *w, double *out, double *tmp)
{
    const int d = s->d;
    memset(out, 0, sizeof *out * (size_t)d * d);
    for (int i = 0; i < d; i++)
        out[(size_t)i * d + i] = 1.0;
    for (const char *c = w; *c; c++) {
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, d, d, d, 1.0, out, d,
                    s->lm[drift_letter_index(s->x, *c)], d, 0.0, tmp, d);
        memcpy(out, tmp, sizeof *out * (size_t)d * d);
    }
}

/* out = A B */
static void drift_dense_mul(int d, const double *A, const double *B, double *out)
{
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, d, d, d, 1.0, A, d, B, d, 0.0, out, d);
}

/* The changes L1, L2 of every letter for sample k of the last draw,
 * dense: ch[(2 l + o) d^2] for letter l and order o + 1. */
static void drift_dense_changes(const drift_sampler *s, int k, double *ch)
{
    const drift_expansion *x = s->x;
    const int d = s->d, T = s->T, nl = (int)strlen(x->ab.letters);
    const size_t dd = (size_t)d * d;
    double E[3][AIM_MAX_TOKENS * AIM_MAX_TOKENS], sg[3];
    drift_errors(s, k, 1.0, E, sg);
    double *G = malloc(3 * dd * sizeof *G), *w = malloc(3 * dd * sizeof *w);
    double *t1 = malloc(dd * sizeof *t1), *t2 = malloc(dd * sizeof *t2);
    assert_true(G && w && t1 && t2);
    const double *Xk = s->X + (size_t)k * T * d, sqd = sqrt((double)d);
    for (int g = 0; g < 3; g++) { /* G_g = (X^T E_g X - c s_g I)/sqrt d */
        double *Gg = G + g * dd;
        memset(Gg, 0, dd * sizeof *Gg);
        for (int a = 0; a < T; a++)
            for (int b = 0; b < T; b++)
                cblas_dger(CblasRowMajor, d, d, E[g][a * T + b] / sqd, Xk + (size_t)a * d, 1,
                           Xk + (size_t)b * d, 1, Gg, d);
        for (int i = 0; i < d; i++)
            Gg[(size_t)i * d + i] -= s->c * sg[g] / sqd;
    }
    memset(ch, 0, 2 * (size_t)nl * dd * sizeof *ch);
    for (int l = 0; l < nl; l++)
        for (int o = 0; o < 2; o++) {
            const drift_change *c = &x->change[l];
            double *out = ch + (2 * (size_t)l + o) * dd;
            for (int r = 0; r < c->n[o]; r++) {
                const drift_piece *p = &c->p[o][r];
                if (p->ng == 0) {
                    cblas_daxpy((int)dd, p->coef, s->lm[l], 1, out, 1);
                    continue;
                }
                for (int q = 0; q <= p->ng; q++)
                    drift_dense_word(s, p->w[q], w + q * dd, t1);
                drift_dense_mul(d, w, G + p->g[0] * dd, t1); /* w0 G */
                drift_dense_mul(d, t1, w + dd, t2);          /* w0 G w1 */
                if (p->ng == 2) {
                    drift_dense_mul(d, t2, G + p->g[1] * dd, t1);
                    drift_dense_mul(d, t1, w + 2 * dd, t2);
                }
                cblas_daxpy((int)dd, p->coef, t2, 1, out, 1);
            }
        }
    free(G);
    free(w);
    free(t1);
    free(t2);
}

/* m(w) with letter i replaced by R1 and letter j by R2 (j >= 0), dense. */
static double drift_dense_trace(const drift_sampler *s, const char *w, int i, const double *R1,
                                int j, const double *R2, double *acc, double *tmp)
{
    const int d = s->d;
    memset(acc, 0, sizeof *acc * (size_t)d * d);
    for (int q = 0; q < d; q++)
        acc[(size_t)q * d + q] = 1.0;
    for (int p = 0; w[p]; p++) {
        const double *L = p == i ? R1 : p == j ? R2 : s->lm[drift_letter_index(s->x, w[p])];
        drift_dense_mul(d, acc, L, tmp);
        memcpy(acc, tmp, sizeof *acc * (size_t)d * d);
    }
    double t = 0.0;
    for (int q = 0; q < d; q++)
        t += acc[(size_t)q * d + q];
    return t / d;
}

/* Checks the expansion at a small d against real steps of aim_sgd from
 * the state of training cfg to tau0: for a few samples, the letters after
 * the step (from aim_sgd's factors) against L + eps L1 + eps^2 L2, and the
 * coefficients a1, a2 of every tracked word against their dense
 * evaluation, both to round-off. */
static void drift_check_step(const aim_config *cfg, int d, double tau0, const drift_model *dm)
{
    void *model = dm->create(cfg, d);
    assert_non_null(model);
    const aim_wordset *ws = dm->words(model);
    const int n = dm->size(model), nl = (int)strlen(aim_wordset_alphabet(ws)->letters);
    const char **words = drift_words(dm, model, n);
    assert_non_null(words);
    drift_expansion *x = drift_expansion_create(dm->factors, dm->n_factors, dm->letters,
                                                dm->n_letters, dm->student, dm->teacher, cfg, d,
                                                ws, words, n);
    assert_non_null(x);
    aim_sgd *base = aim_sgd_create(cfg, d, cfg->seed);
    assert_non_null(base);
    assert_int_equal(aim_sgd_advance(base, aim_sgd_steps_for(cfg, d, tau0)), 0);
    const size_t dd = (size_t)d * d;
    double *buf = malloc(sizeof *buf * nl * dd), *after = malloc(sizeof *after * nl * dd);
    double *ch = malloc(sizeof *ch * 2 * nl * dd), *acc = malloc(sizeof *acc * dd);
    double *tmp = malloc(sizeof *tmp * dd), *mom = malloc(sizeof *mom * aim_wordset_count(ws));
    double *v = malloc(sizeof *v * 6 * (size_t)n);
    const double *L[AIM_ALPHABET_MAX], *L2[AIM_ALPHABET_MAX];
    assert_true(buf && after && ch && acc && tmp && mom && v);
    assert_int_equal(drift_letter_matrices(x, base, dm->factor, buf, L), 0);
    assert_int_equal(aim_compare_measure_words(base, ws, aim_wordset_max_len(ws), mom), 0);
    drift_sampler *s = drift_sampler_create(x, cfg, d, 1, L, mom, 1);
    assert_non_null(s);
    const double eps = cfg->eta / d;
    double worst_letter = 0.0, worst_coef = 0.0;
    for (int rep = 0; rep < 3; rep++) {
        aim_sgd *c = aim_sgd_clone(base, 500 + (uint64_t)rep);
        assert_non_null(c);
        assert_int_equal(aim_sgd_advance(c, 1), 0);
        assert_int_equal(aim_sgd_last_samples(c, s->X, s->xi), 1);
        drift_indices(s);
        assert_int_equal(drift_letter_matrices(x, c, dm->factor, after, L2), 0);
        drift_dense_changes(s, 0, ch);
        for (int l = 0; l < nl; l++) {
            double err = 0.0, size = 0.0;
            for (size_t q = 0; q < dd; q++) {
                const double pred = L[l][q] + eps * ch[2 * l * dd + q] +
                                    eps * eps * ch[(2 * l + 1) * dd + q];
                err = fmax(err, fabs(L2[l][q] - pred));
                size = fmax(size, fabs(eps * ch[2 * l * dd + q]));
            }
            if (size > 0.0)
                worst_letter = fmax(worst_letter, err / size);
        }
        double *id = v, *cen = v + n, *dec = v + 2 * n, *a2 = v + 3 * n;
        double *b1 = v + 4 * n, *b2 = v + 5 * n;
        drift_eval(s, 0, 1, id, cen, dec, a2);
        for (int w = 0; w < n; w++) {
            const char *word = x->words[w];
            const int len = (int)strlen(word);
            b1[w] = b2[w] = 0.0;
            for (int i = 0; i < len; i++) {
                const int li = drift_letter_index(x, word[i]);
                b1[w] += drift_dense_trace(s, word, i, ch + 2 * li * dd, -1, NULL, acc, tmp);
                b2[w] += drift_dense_trace(s, word, i, ch + (2 * li + 1) * dd, -1, NULL, acc, tmp);
                for (int j = i + 1; j < len; j++) {
                    const int lj = drift_letter_index(x, word[j]);
                    b2[w] += drift_dense_trace(s, word, i, ch + 2 * li * dd, j,
                                               ch + 2 * lj * dd, acc, tmp);
                }
            }
            const double a1 = id[w] + cen[w] + dec[w];
            worst_coef = fmax(worst_coef, fabs(a1 - b1[w]) / (fabs(b1[w]) + 1e-300));
            worst_coef = fmax(worst_coef, fabs(a2[w] - b2[w]) / (fabs(b2[w]) + 1e-300));
        }
        aim_sgd_free(c);
    }
    print_message("one real SGD step (d = %d, tau0 = %g): letters within %.1e of the expansion, "
                  "coefficients within %.1e of their dense value (relative)\n",
                  d, tau0, worst_letter, worst_coef);
    assert_true(worst_letter < DRIFT_ROUNDOFF);
    assert_true(worst_coef < DRIFT_ROUNDOFF);
    drift_sampler_free(s);
    drift_expansion_free(x);
    aim_sgd_free(base);
    free(buf);
    free(after);
    free(ch);
    free(acc);
    free(tmp);
    free(mom);
    free(v);
    free(words);
    dm->destroy(model);
}

#endif
