#include "quadrature.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>
/* OpenBLAS's cblas.h and GSL's gsl_cblas.h (pulled in by gsl_eigen.h)
 * declare the same enums: keep OpenBLAS's, as src/students/draw.c does. */
#define __GSL_CBLAS_H__
#include <gsl/gsl_eigen.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_matrix.h>

struct aim_quadrature {
    int order, count;
    double floor; /* relative eigenvalue below which a direction is dropped */
    int n;       /* words of length <= k = floor(M / 2): the GNS basis */
    int n_short; /* ... of length < k */
    int n_half; /* words of length <= ceil((M + 1) / 2): the vacuum vectors */
    int *gram_id;   /* n x n: word index of u^T v */
    int *op_id[2];  /* n x n: word index of u^T a v, a = student, teacher */
    unsigned char *fixed;
    int *variant_start; /* count + 1: offsets into variant_pair */
    int *variant_pair;  /* 2 per variant: vacuum vector indices (left, right) */
    double *scale, *basis, *work, *op[2], *psi, *raw, *vacuum;
    gsl_matrix *g, *evec, *x, *xvec;
    gsl_vector *eval, *xval;
    gsl_eigen_symmv_workspace *ws_g, *ws_x, *ws_short;
};

/* Index of a word in the list of all words of length <= len ordered by
 * length, then by code (the first letter the most significant bit, letter
 * k of the alphabet the bit value k). */
static int code_index(int len, int code) { return (1 << len) - 1 + code; }

static int string_code(const char *letters, const char *w, int len)
{
    int code = 0;
    for (int i = 0; i < len; i++)
        code = code << 1 | (w[i] == letters[1]);
    return code;
}

static void code_string(const char *letters, int len, int code, char *out)
{
    for (int i = 0; i < len; i++)
        out[i] = letters[code >> (len - 1 - i) & 1];
    out[len] = '\0';
}

/* The word of list index i: its length and code. */
static void index_word(int i, int *len, int *code)
{
    int l = 0;
    while (code_index(l + 1, 0) <= i)
        l++;
    *len = l;
    *code = i - code_index(l, 0);
}

/* The word u^T middle v of the basis words u = index i, v = index j. */
static int compose(const aim_wordset *ws, int i, int j, const char *middle)
{
    const char *letters = aim_wordset_alphabet(ws)->letters;
    char w[2 * AIM_WORD_MAX + 2], v[AIM_WORD_MAX + 1];
    int lu, cu, lv, cv;
    index_word(i, &lu, &cu);
    index_word(j, &lv, &cv);
    code_string(letters, lu, cu, v);
    for (int c = 0; c < lu; c++) /* transposed: reversed, letters symmetric */
        w[c] = v[lu - 1 - c];
    w[lu] = '\0';
    strcat(w, middle);
    code_string(letters, lv, cv, v);
    strcat(w, v);
    return w[0] ? aim_wordset_find(ws, w) : 0;
}

/* For each word, every rotation of it and of its reversal, split in two
 * halves at len / 2: <1| s |1> = <psi(left reversed), psi(right)>. */
static int set_variants(aim_quadrature *q, const aim_wordset *ws)
{
    const char *letters = aim_wordset_alphabet(ws)->letters;
    int total = 0;
    for (int i = 1; i < q->count; i++)
        total += 2 * aim_wordset_len(ws, i);
    q->variant_start = malloc(sizeof *q->variant_start * (size_t)(q->count + 1));
    q->variant_pair = malloc(sizeof *q->variant_pair * 2 * (size_t)total);
    if (!q->variant_start || !q->variant_pair)
        return -1;
    int at = 0;
    q->variant_start[0] = q->variant_start[1] = 0;
    for (int i = 1; i < q->count; i++) {
        const char *w = aim_wordset_word(ws, i);
        const int len = (int)strlen(w), half = len / 2;
        for (int rev = 0; rev < 2; rev++)
            for (int t = 0; t < len; t++) {
                char s[AIM_WORD_MAX + 1], left[AIM_WORD_MAX + 1];
                for (int c = 0; c < len; c++) {
                    const int src = (t + c) % len;
                    s[c] = w[rev ? len - 1 - src : src];
                }
                for (int c = 0; c < half; c++)
                    left[c] = s[half - 1 - c];
                q->variant_pair[2 * at] = code_index(half, string_code(letters, left, half));
                q->variant_pair[2 * at + 1] =
                    code_index(len - half, string_code(letters, s + half, len - half));
                at++;
            }
        q->variant_start[i + 1] = at;
    }
    return 0;
}

aim_quadrature *aim_quadrature_create(const aim_wordset *ws, int order, double rank_floor)
{
    const aim_alphabet *ab = aim_wordset_alphabet(ws);
    if (order < 1 || !(rank_floor >= 0.0 && rank_floor < 1.0) || aim_wordset_max_len(ws) < order + 1 ||
        strlen(ab->letters) != 2 ||
        strcmp(ab->letters, ab->transpose) != 0)
        return NULL;
    aim_quadrature *q = calloc(1, sizeof *q);
    if (!q)
        return NULL;
    q->order = order;
    q->floor = rank_floor;
    q->count = aim_wordset_first(ws, order + 2);
    const int k = order / 2, n = code_index(k + 1, 0);
    q->n = n;
    q->n_short = code_index(k, 0);
    q->n_half = code_index((order + 2) / 2 + 1, 0);
    const size_t nn = (size_t)n * (size_t)n;
    q->gram_id = malloc(sizeof *q->gram_id * nn);
    q->op_id[0] = malloc(sizeof *q->op_id[0] * nn);
    q->op_id[1] = malloc(sizeof *q->op_id[1] * nn);
    q->fixed = calloc((size_t)q->count, 1);
    q->scale = malloc(sizeof *q->scale * (size_t)n);
    q->basis = malloc(sizeof *q->basis * nn);
    q->work = malloc(sizeof *q->work * nn);
    q->op[0] = malloc(sizeof *q->op[0] * nn);
    q->op[1] = malloc(sizeof *q->op[1] * nn);
    q->psi = malloc(sizeof *q->psi * (size_t)q->n_half * (size_t)n);
    q->raw = calloc((size_t)q->count, sizeof *q->raw);
    q->vacuum = malloc(sizeof *q->vacuum * (size_t)n);
    q->g = gsl_matrix_alloc((size_t)n, (size_t)n);
    q->evec = gsl_matrix_alloc((size_t)n, (size_t)n);
    q->x = gsl_matrix_alloc((size_t)n, (size_t)n);
    q->xvec = gsl_matrix_alloc((size_t)n, (size_t)n);
    q->eval = gsl_vector_alloc((size_t)n);
    q->xval = gsl_vector_alloc((size_t)n);
    q->ws_g = gsl_eigen_symmv_alloc((size_t)n);
    q->ws_short = gsl_eigen_symmv_alloc((size_t)(q->n_short > 0 ? q->n_short : 1));
    int ok = q->gram_id && q->op_id[0] && q->op_id[1] && q->fixed && q->scale && q->basis &&
             q->work && q->op[0] && q->op[1] && q->psi && q->raw && q->vacuum && q->g && q->evec && q->x &&
             q->xvec && q->eval && q->xval && q->ws_g && q->ws_short && set_variants(q, ws) == 0;
    const char student[2] = {ab->letters[0], '\0'}, teacher[2] = {ab->letters[1], '\0'};
    for (int e = 0; ok && e < n * n; e++) {
        q->gram_id[e] = compose(ws, e / n, e % n, "");
        q->op_id[0][e] = compose(ws, e / n, e % n, student);
        q->op_id[1][e] = compose(ws, e / n, e % n, teacher);
        ok = q->gram_id[e] >= 0 && q->op_id[0][e] >= 0 && q->op_id[1][e] >= 0;
    }
    for (int i = 0; ok && i < q->count; i++)
        q->fixed[i] = i == 0 || !strchr(aim_wordset_word(ws, i), student[0]);
    if (!ok) {
        aim_quadrature_free(q);
        return NULL;
    }
    return q;
}

void aim_quadrature_free(aim_quadrature *q)
{
    if (!q)
        return;
    free(q->gram_id);
    free(q->op_id[0]);
    free(q->op_id[1]);
    free(q->fixed);
    free(q->variant_start);
    free(q->variant_pair);
    free(q->scale);
    free(q->basis);
    free(q->work);
    free(q->op[0]);
    free(q->op[1]);
    free(q->psi);
    free(q->raw);
    free(q->vacuum);
    gsl_matrix_free(q->g);
    gsl_matrix_free(q->evec);
    gsl_matrix_free(q->x);
    gsl_matrix_free(q->xvec);
    gsl_vector_free(q->eval);
    gsl_vector_free(q->xval);
    if (q->ws_g)
        gsl_eigen_symmv_free(q->ws_g);
    if (q->ws_x)
        gsl_eigen_symmv_free(q->ws_x);
    if (q->ws_short)
        gsl_eigen_symmv_free(q->ws_short);
    free(q);
}

/* op (n x n) = [mom(u^T a v)] for the letter of id. */
static void fill_op(const aim_quadrature *q, const int *id, const double *mom, double *op)
{
    for (int e = 0; e < q->n * q->n; e++)
        op[e] = mom[id[e]];
}

/* Even M: the entries of op between two words of length k are words of
 * length M + 1, not tracked. They get the smallest values that keep op
 * positive semi-definite, the Schur completion B^T A^+ B of the blocks
 * A (words of length < k) and B (length < k against length k): the flat
 * extension, which adds no rank, so the compression is consistent with
 * the Gram matrix (for one letter: the lower principal representation,
 * Gauss-Radau with a node at 0). */
static int complete(aim_quadrature *q, double *op)
{
    const int n = q->n, n1 = q->n_short, n2 = n - n1;
    for (int i = 0; i < n1; i++) {
        const double d = op[i * n + i];
        q->scale[i] = d > 0.0 ? 1.0 / sqrt(d) : 1.0;
    }
    gsl_matrix_view a = gsl_matrix_submatrix(q->x, 0, 0, (size_t)n1, (size_t)n1);
    gsl_matrix_view v = gsl_matrix_submatrix(q->xvec, 0, 0, (size_t)n1, (size_t)n1);
    gsl_vector_view l = gsl_vector_subvector(q->xval, 0, (size_t)n1);
    for (int e = 0; e < n1 * n1; e++)
        gsl_matrix_set(&a.matrix, (size_t)(e / n1), (size_t)(e % n1),
                       q->scale[e / n1] * q->scale[e % n1] * op[(e / n1) * n + e % n1]);
    if (gsl_eigen_symmv(&a.matrix, &l.vector, &v.matrix, q->ws_short) != GSL_SUCCESS)
        return -1;
    const double top = gsl_vector_max(&l.vector);
    /* work (n1 x n2): Lambda^+1/2 V^T D^-1/2 B, so that Z = work^T work */
    for (int c = 0; c < n1; c++) {
        const double lc = gsl_vector_get(&l.vector, (size_t)c);
        const double f = top > 0.0 && lc > q->floor * top ? 1.0 / sqrt(lc) : 0.0;
        for (int j = 0; j < n2; j++) {
            double s = 0.0;
            for (int i = 0; i < n1; i++)
                s += gsl_matrix_get(&v.matrix, (size_t)i, (size_t)c) * q->scale[i] *
                     op[i * n + n1 + j];
            q->work[c * n2 + j] = f * s;
        }
    }
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, n2, n2, n1, 1.0, q->work, n2, q->work,
                n2, 0.0, op + (size_t)n1 * (size_t)n + (size_t)n1, n);
    return 0;
}

/* op = basis^T op basis (r x r, row-major, in op's room). */
static void compress(aim_quadrature *q, double *op, int r)
{
    const int n = q->n;
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, r, n, 1.0, op, n, q->basis, r,
                0.0, q->work, r);
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, r, r, n, 1.0, q->basis, r, q->work, r,
                0.0, op, r);
}

/* The student's operator with its negative eigenvalues raised to 0 (a
 * positive semi-definite student has a positive semi-definite
 * compression). */
static int clip_negative(aim_quadrature *q, double *op, int r)
{
    gsl_matrix_view x = gsl_matrix_submatrix(q->x, 0, 0, (size_t)r, (size_t)r);
    gsl_matrix_view v = gsl_matrix_submatrix(q->xvec, 0, 0, (size_t)r, (size_t)r);
    gsl_vector_view l = gsl_vector_subvector(q->xval, 0, (size_t)r);
    for (int e = 0; e < r * r; e++)
        gsl_matrix_set(&x.matrix, (size_t)(e / r), (size_t)(e % r), op[e]);
    if (q->ws_x)
        gsl_eigen_symmv_free(q->ws_x);
    q->ws_x = gsl_eigen_symmv_alloc((size_t)r);
    if (!q->ws_x || gsl_eigen_symmv(&x.matrix, &l.vector, &v.matrix, q->ws_x) != GSL_SUCCESS)
        return -1;
    if (gsl_vector_min(&l.vector) >= 0.0)
        return 0;
    memset(op, 0, sizeof *op * (size_t)r * (size_t)r);
    for (int c = 0; c < r; c++) {
        const double lc = gsl_vector_get(&l.vector, (size_t)c);
        if (lc <= 0.0)
            continue;
        for (int i = 0; i < r; i++)
            for (int j = 0; j < r; j++)
                op[i * r + j] += lc * gsl_matrix_get(&v.matrix, (size_t)i, (size_t)c) *
                                 gsl_matrix_get(&v.matrix, (size_t)j, (size_t)c);
    }
    return 0;
}

int aim_quadrature_close(aim_quadrature *q, double *mom)
{
    const int n = q->n;
    for (int i = 0; i < n; i++) {
        const double d = mom[q->gram_id[i * n + i]];
        q->scale[i] = d > 0.0 ? 1.0 / sqrt(d) : 1.0;
    }
    for (int e = 0; e < n * n; e++)
        gsl_matrix_set(q->g, (size_t)(e / n), (size_t)(e % n),
                       q->scale[e / n] * q->scale[e % n] * mom[q->gram_id[e]]);
    if (gsl_eigen_symmv(q->g, q->eval, q->evec, q->ws_g) != GSL_SUCCESS)
        return -1;
    const double top = gsl_vector_max(q->eval);
    if (!(top > 0.0))
        return -1;
    /* basis (n x r): D^-1/2 V_r Lambda_r^-1/2, an orthonormal basis of the
     * range in the coordinates of the words; the vacuum |1> has the
     * coordinates Lambda_r^1/2 V_r^T D^1/2 e_empty */
    int r = 0;
    double *e0 = q->vacuum, norm = 0.0;
    for (int c = 0; c < n; c++) {
        const double l = gsl_vector_get(q->eval, (size_t)c);
        if (l <= q->floor * top)
            continue;
        r++;
    }
    int col = 0;
    for (int c = 0; c < n; c++) {
        const double l = gsl_vector_get(q->eval, (size_t)c);
        if (l <= q->floor * top)
            continue;
        for (int i = 0; i < n; i++)
            q->basis[i * r + col] = q->scale[i] * gsl_matrix_get(q->evec, (size_t)i, (size_t)c) /
                                    sqrt(l);
        e0[col] = sqrt(l) * gsl_matrix_get(q->evec, 0, (size_t)c) / q->scale[0];
        norm += e0[col] * e0[col];
        col++;
    }
    for (int a = 0; a < 2; a++) {
        fill_op(q, q->op_id[a], mom, q->op[a]);
        if (q->order % 2 == 0 && complete(q, q->op[a]))
            return -1;
    }
    compress(q, q->op[0], r);
    compress(q, q->op[1], r);
    if (clip_negative(q, q->op[0], r))
        return -1;
    /* psi(w) = w(X) |1>, the vacuum normalised (a state: m(empty) = 1) */
    norm = sqrt(norm);
    for (int c = 0; c < r; c++)
        q->psi[c] = e0[c] / norm;
    for (int i = 1; i < q->n_half; i++) {
        int len, code;
        index_word(i, &len, &code);
        const int letter = code >> (len - 1) & 1;
        const int rest = code_index(len - 1, code & ((1 << (len - 1)) - 1));
        cblas_dgemv(CblasRowMajor, CblasNoTrans, r, r, 1.0, q->op[letter], r,
                    q->psi + (size_t)rest * (size_t)r, 1, 0.0, q->psi + (size_t)i * (size_t)r, 1);
    }
    for (int i = 1; i < q->count; i++) {
        double sum = 0.0;
        const int from = q->variant_start[i], to = q->variant_start[i + 1];
        for (int v = from; v < to; v++) {
            const double dot =
                cblas_ddot(r, q->psi + (size_t)q->variant_pair[2 * v] * (size_t)r, 1,
                           q->psi + (size_t)q->variant_pair[2 * v + 1] * (size_t)r, 1);
            if (v == from)
                q->raw[i] = dot;
            sum += dot;
        }
        if (!q->fixed[i])
            mom[i] = sum / (to - from);
    }
    return r;
}

void aim_quadrature_vacuum(const aim_quadrature *q, double *raw)
{
    memcpy(raw, q->raw, sizeof *raw * (size_t)q->count);
}
