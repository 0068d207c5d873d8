/* aim_hierarchy: generation of the truncated moment hierarchy from
 * per-letter step rules; the derivation of every rule is in
 * theory/tied.md (sections 1-4). */
#include "hierarchy.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int kernel;
    double coef;
    int word[2]; /* word[1] = -1: a single moment */
} term;

struct aim_hierarchy {
    aim_dynamics dyn; /* its strings are the caller's literals */
    int order;
    aim_wordset *words;
    int n_tracked;
    int *tracked;        /* word-set index of each equation */
    int *start;          /* terms of equation i: start[i] .. start[i+1]-1 */
    term *terms;
    int n_terms;
    unsigned char *moves; /* per word of the set */
};

/* --- generation --- */

typedef struct {
    const aim_hierarchy *h;
    term *list;
    int n, cap;
    char *err;
    size_t err_n;
    int failed;
} builder;

static const aim_letter_rule *rule_of(const aim_dynamics *dyn, char letter)
{
    for (int r = 0; r < dyn->n_rules; r++)
        if (dyn->rules[r].letter == letter)
            return &dyn->rules[r];
    return NULL;
}

/* Concatenates up to four pieces into buf (room AIM_WORD_MAX + 1);
 * -1 if too long. */
static int join(char *buf, const char *a, const char *b, const char *c,
                const char *e)
{
    const char *parts[4] = {a, b, c, e};
    size_t len = 0;
    for (int i = 0; i < 4; i++) {
        size_t l = strlen(parts[i]);
        if (len + l > AIM_WORD_MAX)
            return -1;
        memcpy(buf + len, parts[i], l);
        len += l;
    }
    buf[len] = '\0';
    return 0;
}

static int lookup(builder *b, const char *w)
{
    int i = aim_wordset_find(b->h->words, w);
    if (i < 0 && !b->failed) {
        snprintf(b->err, b->err_n,
                 "the rules produce the word \"%s\", longer than order + 1 = %d "
                 "or not in the alphabet",
                 w, b->h->order + 1);
        b->failed = 1;
    }
    return i;
}

static void add(builder *b, int kernel, double coef, const char *w1,
                const char *w2)
{
    if (b->failed || coef == 0.0)
        return;
    if (b->n == b->cap) {
        int cap = b->cap ? 2 * b->cap : 64;
        term *t = realloc(b->list, sizeof *t * (size_t)cap);
        if (!t) {
            snprintf(b->err, b->err_n, "out of memory");
            b->failed = 1;
            return;
        }
        b->list = t;
        b->cap = cap;
    }
    term *t = &b->list[b->n];
    t->kernel = kernel;
    t->coef = coef;
    t->word[0] = lookup(b, w1);
    t->word[1] = w2 ? lookup(b, w2) : -1;
    if (t->word[1] >= 0 && t->word[1] < t->word[0]) {
        int s = t->word[0];
        t->word[0] = t->word[1];
        t->word[1] = s;
    }
    if (!b->failed)
        b->n++;
}

/* coef E Tr(G^t A): Gaussian regression of h(A^T) (t = 0) or h(A)
 * (t = 1) onto the student's and teacher's indices. */
static void add_first(builder *b, double coef, int transpose, const char *A)
{
    const aim_dynamics *dyn = &b->h->dyn;
    char At[AIM_WORD_MAX + 1], St[AIM_WORD_MAX + 1], Tt[AIM_WORD_MAX + 1];
    char w[AIM_WORD_MAX + 1];
    if (transpose) {
        if (aim_word_transpose(&dyn->alphabet, A, At)) {
            snprintf(b->err, b->err_n, "word \"%s\" not in the alphabet", A);
            b->failed = 1;
            return;
        }
        A = At;
    }
    if (aim_word_transpose(&dyn->alphabet, dyn->student, St) ||
        aim_word_transpose(&dyn->alphabet, dyn->teacher, Tt)) {
        snprintf(b->err, b->err_n, "the student or teacher word is not in the alphabet");
        b->failed = 1;
        return;
    }
    const char *base[4] = {dyn->student, St, dyn->teacher, Tt};
    const int kernel[4] = {AIM_KERNEL_A_S, AIM_KERNEL_B_S, AIM_KERNEL_A_T,
                           AIM_KERNEL_B_T};
    for (int k = 0; k < 4; k++) {
        if (join(w, base[k], A, "", "")) {
            snprintf(b->err, b->err_n, "word too long");
            b->failed = 1;
            return;
        }
        add(b, kernel[k], coef, w, NULL);
    }
    if (dyn->mean_terms)
        add(b, AIM_KERNEL_MEAN, coef, A, NULL); /* m(A^T) = m(A) */
}

static int noise_kernel(int t1, int t2)
{
    return t1 == t2 ? AIM_KERNEL_NOISE_P : AIM_KERNEL_NOISE_O;
}

/* w[from .. to) read cyclically (to may exceed n). */
static void cyclic(char *buf, const char *w, int n, int from, int to)
{
    int len = 0;
    for (int k = from; k < to; k++)
        buf[len++] = w[k % n];
    buf[len] = '\0';
}

static void generate_word(builder *b, const char *w)
{
    const aim_dynamics *dyn = &b->h->dyn;
    const int n = (int)strlen(w);
    char rest[AIM_WORD_MAX + 1], mid[AIM_WORD_MAX + 1];
    char A[AIM_WORD_MAX + 1], B[AIM_WORD_MAX + 1];
    double decay = 0.0;
    for (int i = 0; i < n; i++) {
        const aim_letter_rule *ri = rule_of(dyn, w[i]);
        if (!ri)
            continue;
        decay += ri->decay;
        cyclic(rest, w, n, i + 1, i + n); /* the word after letter i */
        for (int r = 0; r < ri->n_first; r++) {
            const aim_first_term *f = &ri->first[r];
            if (join(A, f->right, rest, f->left, ""))
                goto too_long;
            add_first(b, f->coef, f->transpose, A);
        }
        for (int s = 0; s < ri->n_second; s++) {
            const aim_second_term *q = &ri->second[s];
            if (join(B, q->right, rest, q->left, ""))
                goto too_long;
            add(b, noise_kernel(q->transpose1, q->transpose2), q->coef,
                q->middle, B);
        }
        for (int j = i + 1; j < n; j++) {
            const aim_letter_rule *rj = rule_of(dyn, w[j]);
            if (!rj)
                continue;
            cyclic(mid, w, n, i + 1, j);
            cyclic(rest, w, n, j + 1, i + n);
            for (int r = 0; r < ri->n_first; r++)
                for (int s = 0; s < rj->n_first; s++) {
                    const aim_first_term *f = &ri->first[r], *g = &rj->first[s];
                    if (join(A, f->right, mid, g->left, "") ||
                        join(B, g->right, rest, f->left, ""))
                        goto too_long;
                    add(b, noise_kernel(f->transpose, g->transpose),
                        f->coef * g->coef, A, B);
                }
        }
    }
    add(b, AIM_KERNEL_DECAY, -decay, w, NULL);
    return;
too_long:
    if (!b->failed)
        snprintf(b->err, b->err_n, "a rule makes a word longer than %d letters",
                 AIM_WORD_MAX);
    b->failed = 1;
}

static int term_cmp(const void *pa, const void *pb)
{
    const term *a = pa, *b = pb;
    if (a->kernel != b->kernel)
        return a->kernel - b->kernel;
    if (a->word[0] != b->word[0])
        return a->word[0] - b->word[0];
    return a->word[1] - b->word[1];
}

/* Sorts the terms of one equation and sums those with the same kernel
 * and moments; returns the new count. Coefficients are small integers,
 * so a sum is exactly zero when the terms cancel. */
static int merge(term *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, term_cmp);
    int out = 0;
    for (int i = 0; i < n; i++) {
        if (out > 0 && term_cmp(&t[out - 1], &t[i]) == 0)
            t[out - 1].coef += t[i].coef;
        else
            t[out++] = t[i];
    }
    int kept = 0;
    for (int i = 0; i < out; i++)
        if (t[i].coef != 0.0)
            t[kept++] = t[i];
    return kept;
}

double aim_hierarchy_equations(const aim_alphabet *ab, const char *fixed, int order)
{
    aim_alphabet still = {"", ""};
    size_t k = 0;
    for (size_t i = 0; i < AIM_ALPHABET_MAX && ab->letters[i]; i++)
        if (strchr(fixed, ab->letters[i])) {
            still.letters[k] = ab->letters[i];
            still.transpose[k++] = ab->transpose[i];
        }
    double count = 0.0;
    for (int len = 1; len <= order; len++) {
        const double all = aim_words_classes(ab, len);
        const double unmoved = k ? aim_words_classes(&still, len) : 0.0;
        if (all < 0 || unmoved < 0)
            return -1;
        count += all - unmoved;
    }
    return count;
}

aim_hierarchy *aim_hierarchy_create(const aim_dynamics *dyn, int order,
                                    char *err, size_t n)
{
    if (order < 1 || order + 1 > AIM_WORD_MAX) {
        snprintf(err, n, "order %d outside 1..%d", order, AIM_WORD_MAX - 1);
        return NULL;
    }
    char fixed[AIM_ALPHABET_MAX + 1] = "";
    for (size_t i = 0, k = 0; i < AIM_ALPHABET_MAX && dyn->alphabet.letters[i]; i++)
        if (!rule_of(dyn, dyn->alphabet.letters[i]))
            fixed[k++] = dyn->alphabet.letters[i];
    const double equations = aim_hierarchy_equations(&dyn->alphabet, fixed, order);
    if (equations > AIM_HIERARCHY_MAX_EQUATIONS) {
        snprintf(err, n, "the order-%d hierarchy has %.0f equations; allowed: at most %d",
                 order, equations, AIM_HIERARCHY_MAX_EQUATIONS);
        return NULL;
    }
    aim_hierarchy *h = calloc(1, sizeof *h);
    if (!h) {
        snprintf(err, n, "out of memory");
        return NULL;
    }
    h->dyn = *dyn;
    h->order = order;
    h->words = aim_wordset_create(&dyn->alphabet, order + 1);
    int count = h->words ? aim_wordset_count(h->words) : 0;
    h->moves = calloc((size_t)count + 1, 1);
    h->tracked = malloc(sizeof *h->tracked * ((size_t)count + 1));
    h->start = malloc(sizeof *h->start * ((size_t)count + 2));
    if (!h->words || !h->moves || !h->tracked || !h->start) {
        snprintf(err, n, "out of memory (or an invalid alphabet)");
        aim_hierarchy_free(h);
        return NULL;
    }
    for (int i = 0; i < count; i++) {
        for (const char *c = aim_wordset_word(h->words, i); *c; c++)
            if (rule_of(dyn, *c))
                h->moves[i] = 1;
        if (h->moves[i] && aim_wordset_len(h->words, i) <= order)
            h->tracked[h->n_tracked++] = i;
    }
    builder b = {.h = h, .err = err, .err_n = n};
    for (int e = 0; e < h->n_tracked && !b.failed; e++) {
        int first = b.n;
        h->start[e] = first;
        generate_word(&b, aim_wordset_word(h->words, h->tracked[e]));
        if (!b.failed)
            b.n = first + merge(b.list + first, b.n - first);
    }
    if (b.failed) {
        free(b.list);
        aim_hierarchy_free(h);
        return NULL;
    }
    h->start[h->n_tracked] = b.n;
    h->terms = b.list;
    h->n_terms = b.n;
    return h;
}

void aim_hierarchy_free(aim_hierarchy *h)
{
    if (!h)
        return;
    aim_wordset_free(h->words);
    free(h->moves);
    free(h->tracked);
    free(h->start);
    free(h->terms);
    free(h);
}

int aim_hierarchy_order(const aim_hierarchy *h) { return h->order; }
const aim_wordset *aim_hierarchy_words(const aim_hierarchy *h) { return h->words; }
int aim_hierarchy_size(const aim_hierarchy *h) { return h->n_tracked; }
int aim_hierarchy_tracked(const aim_hierarchy *h, int i) { return h->tracked[i]; }
int aim_hierarchy_moves(const aim_hierarchy *h, int word) { return h->moves[word]; }
int aim_hierarchy_terms(const aim_hierarchy *h) { return h->n_terms; }

void aim_hierarchy_eval(const aim_hierarchy *h, const double *moments,
                        const double kernels[AIM_KERNEL_COUNT],
                        double *gradient, double *noise, double *decay)
{
    for (int e = 0; e < h->n_tracked; e++) {
        double sum[3] = {0.0, 0.0, 0.0}; /* gradient, noise, decay */
        for (int k = h->start[e]; k < h->start[e + 1]; k++) {
            const term *t = &h->terms[k];
            double v = t->coef * kernels[t->kernel] * moments[t->word[0]];
            if (t->word[1] >= 0)
                v *= moments[t->word[1]];
            int kind = t->kernel <= AIM_KERNEL_B_T || t->kernel == AIM_KERNEL_MEAN ? 0
                       : t->kernel == AIM_KERNEL_DECAY                        ? 2
                                                                              : 1;
            sum[kind] += v;
        }
        if (gradient)
            gradient[e] = sum[0];
        if (noise)
            noise[e] = sum[1];
        if (decay)
            decay[e] = sum[2];
    }
}

void aim_hierarchy_kernels(const aim_gauss *g, double eta, double gamma,
                           double k[AIM_KERNEL_COUNT])
{
    /* regression coefficients: the error's covariance with a unit of
     * Omega or Psi of the student or of the teacher ({omega_b, psi_b}) */
    static const double unit[4][2][2] = {{{1, 0}, {0, 0}},
                                         {{0, 0}, {1, 0}},
                                         {{0, 1}, {0, 0}},
                                         {{0, 0}, {0, 1}}};
    for (int i = 0; i < 4; i++)
        k[AIM_KERNEL_A_S + i] = aim_gauss_error_index(g, unit[i][0], unit[i][1], 0.0, 0);
    k[AIM_KERNEL_NOISE_O] = eta * aim_gauss_noise_omega(g);
    k[AIM_KERNEL_NOISE_P] = eta * aim_gauss_noise_psi(g);
    k[AIM_KERNEL_DECAY] = gamma;
    k[AIM_KERNEL_MEAN] = 0.0;
}

int aim_hierarchy_order_parameters(const aim_hierarchy *h)
{
    int n = 0;
    for (int i = 0; i < h->n_tracked; i++)
        n += aim_wordset_len(h->words, h->tracked[i]) <= 2;
    return n;
}

char **aim_hierarchy_state_names(const aim_hierarchy *h)
{
    char **names = calloc((size_t)h->n_tracked + 1, sizeof *names);
    for (int i = 0; names && i < h->n_tracked; i++) {
        const char *w = aim_wordset_word(h->words, h->tracked[i]);
        const size_t len = strlen(w) + 4;
        if (!(names[i] = malloc(len))) {
            for (int j = 0; j < i; j++)
                free(names[j]);
            free(names);
            return NULL;
        }
        snprintf(names[i], len, "m(%s)", w);
    }
    return names;
}

/* --- printing --- */

/* A moment as text, m(SST), or LaTeX, m(S^{2} S^{*}) with runs as powers. */
static void print_moment(const aim_hierarchy *h, FILE *out, int word, int latex)
{
    const char *w = aim_wordset_word(h->words, word);
    if (!latex) {
        fprintf(out, "m(%s)", *w ? w : "");
        return;
    }
    if (!*w) {
        fputs("1", out);
        return;
    }
    fputs("m(", out);
    const char *letters = h->dyn.alphabet.letters;
    for (const char *c = w; *c;) {
        int run = 1;
        while (c[run] == *c)
            run++;
        int k = (int)(strchr(letters, *c) - letters);
        const char *name = h->dyn.latex_names[k] ? h->dyn.latex_names[k] : "?";
        if (c != w)
            fputc(' ', out);
        if (run > 1)
            fprintf(out, "{%s}^{%d}", name, run);
        else
            fputs(name, out);
        c += run;
    }
    fputc(')', out);
}

/* Kernel symbols; a_x and b_x (and K_O, K_P) that always come together
 * with equal coefficients print as their sum g_x (K). */
static const char *symbol(int kernel, int merged, int latex)
{
    static const char *const text[AIM_KERNEL_COUNT] = {
        "a_S", "b_S", "a_T", "b_T", "eta K_O", "eta K_P", "gamma", "lambda"};
    static const char *const tex[AIM_KERNEL_COUNT] = {
        "a_S", "b_S", "a_T", "b_T", "\\eta K_\\Omega", "\\eta K_\\Psi", "\\gamma", "\\lambda"};
    if (merged) {
        if (kernel == AIM_KERNEL_A_S)
            return "g_S";
        if (kernel == AIM_KERNEL_A_T)
            return "g_T";
        if (kernel == AIM_KERNEL_NOISE_O)
            return latex ? "\\eta K" : "eta K";
    }
    return latex ? tex[kernel] : text[kernel];
}

static void print_coef(FILE *out, double c, int first)
{
    if (first)
        fputs(c < 0 ? "-" : "", out);
    else
        fputs(c < 0 ? " - " : " + ", out);
    double a = fabs(c);
    if (a != 1.0)
        fprintf(out, "%g ", a);
}

static void print_equation(const aim_hierarchy *h, FILE *out, int e, int latex)
{
    const int lo = h->start[e], hi = h->start[e + 1];
    /* partner[k]: the b_x / K_P term merged into term k, -1 if none;
     * used[k]: already printed as somebody's partner */
    int n = hi - lo;
    int *partner = malloc(sizeof(int) * (size_t)(n ? n : 1));
    unsigned char *used = calloc((size_t)(n ? n : 1), 1);
    if (!partner || !used) {
        free(partner);
        free(used);
        fputs("(out of memory)\n", out);
        return;
    }
    for (int k = 0; k < n; k++) {
        partner[k] = -1;
        const term *t = &h->terms[lo + k];
        int other = t->kernel == AIM_KERNEL_A_S    ? AIM_KERNEL_B_S
                    : t->kernel == AIM_KERNEL_A_T  ? AIM_KERNEL_B_T
                    : t->kernel == AIM_KERNEL_NOISE_O ? AIM_KERNEL_NOISE_P
                                                      : -1;
        if (other < 0)
            continue;
        for (int j = 0; j < n; j++) {
            const term *u = &h->terms[lo + j];
            if (!used[j] && u->kernel == other && u->coef == t->coef &&
                u->word[0] == t->word[0] && u->word[1] == t->word[1]) {
                partner[k] = j;
                used[j] = 1;
                break;
            }
        }
    }
    int tracked = h->tracked[e];
    if (latex) {
        fputs("\\frac{d}{d\\tau} ", out);
        print_moment(h, out, tracked, 1);
        fputs(" &= ", out);
    } else {
        fputs("d ", out);
        print_moment(h, out, tracked, 0);
        fputs("/dtau = ", out);
    }
    int first = 1;
    for (int kernel = 0; kernel < AIM_KERNEL_COUNT; kernel++)
        for (int merged = 1; merged >= 0; merged--) {
            int inner_first = 1;
            for (int j = 0; j < n; j++) {
                const term *u = &h->terms[lo + j];
                if (used[j] || u->kernel != kernel || (partner[j] >= 0) != merged)
                    continue;
                if (inner_first) {
                    fprintf(out, "%s%s ", first ? "" : " + ",
                            symbol(kernel, merged, latex));
                    fputs(latex ? "\\left(" : "(", out);
                }
                print_coef(out, u->coef, inner_first);
                /* m() = 1 is left out of products */
                if (u->word[1] < 0 || u->word[0] != 0)
                    print_moment(h, out, u->word[0], latex);
                if (u->word[1] >= 0) {
                    if (u->word[0] != 0)
                        fputc(' ', out);
                    print_moment(h, out, u->word[1], latex);
                }
                inner_first = 0;
                first = 0;
            }
            if (!inner_first)
                fputs(latex ? "\\right)" : ")", out);
        }
    if (first)
        fputs("0", out);
    fputs(latex ? " \\\\\n" : "\n", out);
    free(partner);
    free(used);
}

void aim_hierarchy_print(const aim_hierarchy *h, FILE *out, int latex)
{
    const char *pre = latex ? "% " : "# ";
    fprintf(out, "%sorder M = %d: %d equations, %d terms; right-hand sides "
                 "read words up to length %d\n",
            pre, h->order, h->n_tracked, h->n_terms, h->order + 1);
    fprintf(out, "%sletters:", pre);
    for (int k = 0; h->dyn.alphabet.letters[k]; k++)
        fprintf(out, " %c = %s", h->dyn.alphabet.letters[k],
                h->dyn.text_names[k] ? h->dyn.text_names[k] : "?");
    fprintf(out, "\n%sm(w) = Tr(w)/d; E[sum_ab e_ab h_ab(B)] = a_S Omega(B,S) + "
                 "b_S Psi(B,S) + a_T Omega(B,S*) + b_T Psi(B,S*);\n"
                 "%sg_x = a_x + b_x; K_O = E[sum e_ab e_a'b' C_aa' C_bb'], "
                 "K_P = E[sum e_ab e_a'b' C_ab' C_ba'], K = K_O + K_P\n",
            pre, pre);
    if (h->dyn.mean_terms)
        fprintf(out, "%slambda = sqrt(d) E[sum_ab e_ab C_ab] (raw centring; "
                     "theory/untied.md)\n", pre);
    if (latex)
        fputs("\\begin{align*}\n", out);
    for (int e = 0; e < h->n_tracked; e++)
        print_equation(h, out, e, latex);
    if (latex)
        fputs("\\end{align*}\n", out);
}
