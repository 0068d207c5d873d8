#include "gram.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_eigen.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_matrix.h>

/* An eigenvalue counts as non-negative down to this fraction of the
 * matrix's largest: round-off of the symmetric eigensolver on a matrix
 * whose entries span the moments of lengths 0 .. M + 1. */
#define GRAM_ROUNDOFF 1e-12
/* The projection aims at eigenvalues >= GRAM_FLOOR of the largest,
 * slightly inside the cone: alternating projections between two sets that
 * barely meet converge slowly, and a target inside lets the rounds stop
 * once the consistent point is semi-definite. */
#define GRAM_FLOOR 1e-9

typedef struct {
    int n;
    int *word;     /* n x n: the word index of each entry */
    double *scale; /* n: the congruence that gives the matrix a unit diagonal */
    gsl_matrix *a, *p, *y, *evec;
    gsl_vector *eval;
    gsl_eigen_symmv_workspace *ws;
} gram_matrix;

struct aim_gram {
    int count; /* words of length 0 .. M + 1 */
    gram_matrix m[2];
    unsigned char *fixed; /* per word: no student letter (or the empty word) */
    double *weight;       /* per word: sum of the squared scales of its entries */
    double *sum;          /* count: work */
};

/* Every word of length <= len over the two letters, shortest first, into
 * list (room for 2^(len + 1) - 1 words of AIM_WORD_MAX + 1 chars). */
static int all_words(const char *letters, int len, char (*list)[AIM_WORD_MAX + 1])
{
    int n = 0;
    list[n++][0] = '\0';
    for (int l = 1; l <= len; l++)
        for (int c = 0; c < 1 << l; c++, n++) {
            for (int k = 0; k < l; k++)
                list[n][k] = letters[c >> (l - 1 - k) & 1];
            list[n][l] = '\0';
        }
    return n;
}

static void matrix_release(gram_matrix *g)
{
    free(g->word);
    free(g->scale);
    gsl_matrix_free(g->a);
    gsl_matrix_free(g->p);
    gsl_matrix_free(g->y);
    gsl_matrix_free(g->evec);
    gsl_vector_free(g->eval);
    if (g->ws)
        gsl_eigen_symmv_free(g->ws);
}

/* The matrix [m(u^T middle v)] over the words u, v of length <= len. */
static int matrix_init(gram_matrix *g, const aim_wordset *ws, int len, const char *middle)
{
    const aim_alphabet *ab = aim_wordset_alphabet(ws);
    const int n = (1 << (len + 1)) - 1;
    char(*list)[AIM_WORD_MAX + 1] = malloc(sizeof *list * (size_t)n);
    g->n = n;
    g->word = malloc(sizeof *g->word * (size_t)n * (size_t)n);
    g->scale = malloc(sizeof *g->scale * (size_t)n);
    g->a = gsl_matrix_alloc((size_t)n, (size_t)n);
    g->p = gsl_matrix_calloc((size_t)n, (size_t)n);
    g->y = gsl_matrix_alloc((size_t)n, (size_t)n);
    g->evec = gsl_matrix_alloc((size_t)n, (size_t)n);
    g->eval = gsl_vector_alloc((size_t)n);
    g->ws = gsl_eigen_symmv_alloc((size_t)n);
    int ok = list && g->word && g->scale && g->a && g->p && g->y && g->evec && g->eval && g->ws;
    if (ok)
        all_words(ab->letters, len, list);
    for (int i = 0; ok && i < n; i++)
        for (int j = 0; ok && j < n; j++) {
            char w[2 * AIM_WORD_MAX + 2];
            ok = aim_word_transpose(ab, list[i], w) == 0;
            strcat(w, middle);
            strcat(w, list[j]);
            const int id = w[0] ? aim_wordset_find(ws, w) : 0;
            g->word[i * n + j] = id;
            ok = ok && id >= 0;
        }
    free(list);
    return ok ? 0 : -1;
}

aim_gram *aim_gram_create(const aim_wordset *ws, int order)
{
    const aim_alphabet *ab = aim_wordset_alphabet(ws);
    if (order < 1 || aim_wordset_max_len(ws) < order + 1 || strlen(ab->letters) != 2 ||
        (order + 1) / 2 + 1 > AIM_WORD_MAX)
        return NULL;
    aim_gram *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->count = aim_wordset_first(ws, order + 2);
    g->fixed = calloc((size_t)g->count, 1);
    g->weight = calloc((size_t)g->count, sizeof *g->weight);
    g->sum = calloc((size_t)g->count, sizeof *g->sum);
    const char student[2] = {ab->letters[0], '\0'};
    if (!g->fixed || !g->weight || !g->sum || matrix_init(&g->m[0], ws, (order + 1) / 2, "") ||
        matrix_init(&g->m[1], ws, order / 2, student)) {
        aim_gram_free(g);
        return NULL;
    }
    for (int i = 0; i < g->count; i++)
        g->fixed[i] = i == 0 || !strchr(aim_wordset_word(ws, i), student[0]);
    return g;
}

void aim_gram_free(aim_gram *g)
{
    if (!g)
        return;
    matrix_release(&g->m[0]);
    matrix_release(&g->m[1]);
    free(g->fixed);
    free(g->weight);
    free(g->sum);
    free(g);
}

/* The scales 1 / sqrt(diagonal) at mom (a non-positive diagonal entry
 * gets 1: the matrix is then not semi-definite, or that row is 0). */
static void set_scale(gram_matrix *g, const double *mom)
{
    for (int i = 0; i < g->n; i++) {
        const double d = mom[g->word[i * g->n + i]];
        g->scale[i] = d > 0.0 ? 1.0 / sqrt(d) : 1.0;
    }
}

/* a = the scaled matrix of mom. */
static void fill(gram_matrix *g, const double *mom)
{
    for (int i = 0; i < g->n; i++)
        for (int j = 0; j < g->n; j++)
            gsl_matrix_set(g->a, (size_t)i, (size_t)j,
                           g->scale[i] * g->scale[j] * mom[g->word[i * g->n + j]]);
}

/* Eigen-decomposition of a copy of src; its smallest eigenvalue relative
 * to the largest in *margin. */
static int decompose(gram_matrix *g, const gsl_matrix *src, double *margin)
{
    gsl_matrix_memcpy(g->y, src);
    if (gsl_eigen_symmv(g->y, g->eval, g->evec, g->ws) != GSL_SUCCESS)
        return -1;
    const double top = gsl_vector_max(g->eval);
    *margin = top > 0.0 ? gsl_vector_min(g->eval) / top : -1.0;
    return 0;
}

int aim_gram_margins(aim_gram *g, const double *mom, double *h, double *hp)
{
    double *out[2] = {h, hp};
    for (int k = 0; k < 2; k++) {
        set_scale(&g->m[k], mom);
        fill(&g->m[k], mom);
        if (decompose(&g->m[k], g->m[k].a, out[k]))
            return -1;
    }
    return 0;
}

double aim_gram_distance(aim_gram *g, const double *a, const double *b, const double *at)
{
    double s = 0.0;
    set_scale(&g->m[0], at);
    set_scale(&g->m[1], at);
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < g->m[k].n; i++)
            for (int j = 0; j < g->m[k].n; j++) {
                const int w = g->m[k].word[i * g->m[k].n + j];
                const double c = g->m[k].scale[i] * g->m[k].scale[j];
                s += c * c * (a[w] - b[w]) * (a[w] - b[w]);
            }
    return sqrt(s);
}

/* y = the decomposed matrix with its eigenvalues raised to at least
 * floor times the largest. */
static void psd_part(gram_matrix *g, double floor)
{
    const size_t n = (size_t)g->n;
    const double low = floor * gsl_vector_max(g->eval);
    gsl_matrix_set_zero(g->y);
    for (size_t k = 0; k < n; k++) {
        const double l = fmax(gsl_vector_get(g->eval, k), low);
        if (l <= 0.0)
            continue;
        for (size_t i = 0; i < n; i++) {
            const double vi = l * gsl_matrix_get(g->evec, i, k);
            for (size_t j = 0; j < n; j++)
                gsl_matrix_set(g->y, i, j,
                               gsl_matrix_get(g->y, i, j) + vi * gsl_matrix_get(g->evec, j, k));
        }
    }
}

/* Dykstra's algorithm for the nearest point of the intersection of the
 * positive semi-definite pairs (a cone) and the pairs that are the Gram
 * matrices of one moment sequence with the teacher's words given (an
 * affine set, whose projection averages each free word over its
 * entries). The affine set needs no correction term. Written here
 * because GSL has no semi-definite programming; the matrices are at most
 * 31 x 31 (M = 8). */
int aim_gram_project(aim_gram *g, double *mom, int max_iter)
{
    double margin[2];
    memset(g->weight, 0, sizeof *g->weight * (size_t)g->count);
    for (int k = 0; k < 2; k++) {
        gram_matrix *m = &g->m[k];
        set_scale(m, mom);
        for (int e = 0; e < m->n * m->n; e++) {
            const double c = m->scale[e / m->n] * m->scale[e % m->n];
            g->weight[m->word[e]] += c * c;
        }
        fill(m, mom);
        gsl_matrix_set_zero(m->p);
        if (decompose(&g->m[k], g->m[k].a, &margin[k]))
            return -1;
    }
    int round = 0;
    while (round < max_iter && (margin[0] < -GRAM_ROUNDOFF || margin[1] < -GRAM_ROUNDOFF)) {
        round++;
        memset(g->sum, 0, sizeof *g->sum * (size_t)g->count);
        for (int k = 0; k < 2; k++) {
            gram_matrix *m = &g->m[k];
            gsl_matrix_add(m->a, m->p); /* a = x + p */
            if (decompose(m, m->a, &margin[k]))
                return -1;
            psd_part(m, GRAM_FLOOR);
            gsl_matrix_sub(m->a, m->y);
            gsl_matrix_memcpy(m->p, m->a); /* p = x + p - y */
            for (int e = 0; e < m->n * m->n; e++)
                g->sum[m->word[e]] += m->scale[e / m->n] * m->scale[e % m->n] *
                                      m->y->data[(e / m->n) * m->y->tda + e % m->n];
        }
        for (int i = 0; i < g->count; i++)
            if (!g->fixed[i] && g->weight[i] > 0.0)
                mom[i] = g->sum[i] / g->weight[i];
        for (int k = 0; k < 2; k++) {
            fill(&g->m[k], mom);
            if (decompose(&g->m[k], g->m[k].a, &margin[k]))
                return -1;
        }
    }
    return round;
}
