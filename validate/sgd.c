/* aim_sgd: online SGD (theory/model.md sec. 1-5): creation, data and the
 * pieces every student shares. Each student (S learned itself, W W^T,
 * U V^T) is an aim_sgd_student in a file of its own, sgd_direct.c,
 * sgd_tied.c and sgd_untied.c, with its exactly unrolled block step
 * (theory/model.md sec. 5); the registry below maps model.decomposition to
 * it (state: sgd_internal.h; the helpers their steps share: sgd_block.c).
 *
 * Random numbers: the streams of src/students/draw.h: teacher, student (the
 * initial matrices are drawn there), data, and the held-out samples that
 * measure the risk (validate/holdout.c; a stream of its own, so that the
 * training data, and every trajectory, do not depend on it). Per step the
 * data stream draws the T x d token matrix Z (row-major) and then the
 * T^2 label noises, so the stream does not depend on the block size.
 * aim_sgd_clone(sgd, data_seed) draws the data stream of
 * aim_sgd_create(cfg, d, data_seed). The GSL error handler is switched
 * off around the Cholesky factorisation and the generator's state I/O of
 * a checkpoint only (not thread-safe: create, save and restore seeds
 * from one thread).
 *
 * T x T products are plain loops (T <= 8); every product involving d is
 * a CBLAS call.
 */
#include "sgd.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>
/* OpenBLAS's cblas.h and GSL's gsl_cblas.h declare the same enums: keep
 * OpenBLAS's and skip GSL's (gsl_blas_types.h only needs the enum names). */
#define __GSL_CBLAS_H__
#include <gsl/gsl_errno.h>
#include <gsl/gsl_linalg.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "draw.h"
#include "outmap.h"
#include "sgd_internal.h"

static void free_buffers(aim_sgd *s)
{
    free(s->X); free(s->P); free(s->Pv); free(s->Q); free(s->Y);
    free(s->Rv); free(s->K); free(s->xi); free(s->HR); free(s->E);
    free(s->tE); free(s->uE); free(s->apow); free(s->zw); free(s->jac);
    free(s->Ut); free(s->Kw);
}

void aim_sgd_free(aim_sgd *s)
{
    if (!s)
        return;
    free(s->S);
    free(s->W);
    free(s->U);
    free(s->V);
    free(s->St);
    free_buffers(s);
    aim_outmap_free(s->map);
    gsl_rng_free(s->rdata);
    free(s);
}

/* The registry: one student per decomposition (config.h), in its order. */
extern const aim_sgd_student aim_sgd_direct_student, aim_sgd_tied_student,
    aim_sgd_untied_student;

static const aim_sgd_student *const students[] = {
    [AIM_DIRECT] = &aim_sgd_direct_student,
    [AIM_TIED] = &aim_sgd_tied_student,
    [AIM_UNTIED] = &aim_sgd_untied_student,
};

static const aim_sgd_student *student_of(const aim_config *cfg)
{
    const unsigned kind = (unsigned)cfg->decomposition;
    return kind < sizeof students / sizeof *students ? students[kind] : NULL;
}

/* Everything but the matrices' contents and the data generator. */
static aim_sgd *alloc_common(const aim_config *cfg, int d)
{
    if (cfg->student.decomposition != cfg->decomposition) {
        fprintf(stderr, "aim_sgd: the student's decomposition differs from "
                        "the model's\n");
        return NULL;
    }
    const aim_sgd_student *student = student_of(cfg);
    if (!student) {
        fprintf(stderr, "aim_sgd: no student for decomposition %d\n",
                (int)cfg->decomposition);
        return NULL;
    }
    if (student->centred_only && cfg->centring != AIM_CENTRED) {
        fprintf(stderr, "aim_sgd: a %s student needs centred indices "
                        "(theory/model.md sec. 2)\n", student->name);
        return NULL;
    }
    if (cfg->tokens < 1 || cfg->tokens > AIM_MAX_TOKENS) {
        fprintf(stderr, "aim_sgd: tokens = %d out of range 1..%d\n",
                cfg->tokens, AIM_MAX_TOKENS);
        return NULL;
    }
    if (d < 1 || d > 46340) {
        fprintf(stderr, "aim_sgd: d = %d out of range 1..46340\n", d);
        return NULL;
    }
    if (cfg->block < 1) {
        fprintf(stderr, "aim_sgd: block = %d must be >= 1\n", cfg->block);
        return NULL;
    }
    char why[300];
    if (aim_sgd_fits(cfg, d, why, sizeof why)) {
        fprintf(stderr, "aim_sgd: %s\n", why);
        return NULL;
    }
    const int p = student->factors > 0 ? aim_config_columns(&cfg->student, d) : 0;
    aim_sgd *s = calloc(1, sizeof *s);
    if (!s) {
        fprintf(stderr, "aim_sgd: out of memory\n");
        return NULL;
    }
    s->cfg = *cfg;
    s->d = d;
    s->T = cfg->tokens;
    s->block = cfg->block;
    s->c = cfg->centring == AIM_CENTRED ? 1.0 : 0.0;
    s->symmetric = student->factors == 0 && cfg->student.symmetric != 0;
    s->student = student;
    s->p = p;

    int T = s->T, T2 = T * T;
    for (int a = 0; a < T; a++)
        for (int b = 0; b < T; b++)
            s->C[a * T + b] = s->L[a * T + b] = cfg->cov[a * T + b];
    gsl_matrix_view Lv = gsl_matrix_view_array(s->L, (size_t)T, (size_t)T);
    gsl_error_handler_t *old = gsl_set_error_handler_off();
    int st = gsl_linalg_cholesky_decomp1(&Lv.matrix);
    gsl_set_error_handler(old);
    if (st) {
        fprintf(stderr, "aim_sgd: token covariance C is not positive "
                        "definite (%s)\n", gsl_strerror(st));
        free(s);
        return NULL;
    }
    for (int a = 0; a < T; a++)
        for (int b = a + 1; b < T; b++)
            s->L[a * T + b] = 0.0;

    size_t dd = (size_t)d * d, n = (size_t)s->block * T;
    size_t cols = p > 0 ? (size_t)p : (size_t)d;
    s->S = malloc(dd * sizeof *s->S);
    s->St = malloc(dd * sizeof *s->St);
    s->X = malloc(n * d * sizeof *s->X);
    s->P = malloc(n * cols * sizeof *s->P);
    s->Q = malloc(n * d * sizeof *s->Q);
    s->Y = malloc(n * cols * sizeof *s->Y);
    s->K = malloc(n * n * sizeof *s->K);
    s->xi = malloc((size_t)s->block * T2 * sizeof *s->xi);
    s->HR = malloc((size_t)s->block * T2 * sizeof *s->HR);
    s->E = malloc((size_t)s->block * T2 * sizeof *s->E);
    s->tE = malloc((size_t)s->block * sizeof *s->tE);
    s->uE = malloc((size_t)s->block * sizeof *s->uE);
    s->apow = malloc(((size_t)s->block + 1) * sizeof *s->apow);
    s->jac = malloc((size_t)T2 * T2 * sizeof *s->jac);
    if (p > 0) { /* Ut, Kw: T rows per factor */
        size_t rows = (size_t)student->factors * T;
        s->Ut = malloc(rows * p * sizeof *s->Ut);
        s->Kw = malloc(rows * n * sizeof *s->Kw);
    }
    s->map = aim_outmap_create(cfg);
    if (!s->S || !s->St || !s->X || !s->P || !s->Q || !s->Y || !s->K ||
        !s->xi || !s->HR || !s->E || !s->tE || !s->uE || !s->apow ||
        !s->jac || !s->map || (p > 0 && (!s->Ut || !s->Kw)) ||
        (student->alloc && student->alloc(s, n))) {
        fprintf(stderr, "aim_sgd: out of memory (d = %d, block = %d)\n", d,
                s->block);
        aim_sgd_free(s);
        return NULL;
    }
    return s;
}

const aim_state_arrays *aim_sgd_state_arrays(int decomposition)
{
    const unsigned kind = (unsigned)decomposition;
    return kind < sizeof students / sizeof *students ? &students[kind]->saved : NULL;
}

double aim_sgd_columns_for(const aim_config *cfg, int d)
{
    const aim_sgd_student *student = student_of(cfg);
    return student && student->factors > 0 ? fmax(1.0, floor(cfg->student.rho * d + 0.5))
                                           : 0.0;
}

int aim_sgd_fits(const aim_config *cfg, int d, char *why, size_t n)
{
    const double p = aim_sgd_columns_for(cfg, d), rows = (double)cfg->block * cfg->tokens;
    /* CBLAS lengths are int: d p and (block T) p must fit */
    if (d * p > INT_MAX || rows * p > INT_MAX) {
        snprintf(why, n, "student.rho = %g at d = %d gives p = %.0f columns: d p = %.3g and "
                         "sgd.block x T x p = %.3g must be at most 2^31 - 1 = %d (BLAS "
                         "lengths); allowed: student.rho <= %.4g at this d", cfg->student.rho,
                 d, p, d * p, rows * p, INT_MAX,
                 floor(INT_MAX / fmax(d, rows)) / d);
        return -1;
    }
    return 0;
}

double aim_sgd_bytes(const aim_config *cfg, int d)
{
    const aim_sgd_student *student = student_of(cfg);
    const double factors = student ? student->factors : 0, p = aim_sgd_columns_for(cfg, d);
    const double D = d, T2 = (double)cfg->tokens * cfg->tokens, block = cfg->block;
    const double n = block * cfg->tokens, cols = p > 0 ? p : D;
    /* alloc_common: S, St; X, Q, P, Y, K; xi, HR, E; tE, uE, apow; jac;
     * Ut, Kw */
    double values = 2 * D * D + n * (2 * D + 2 * cols + n) + 3 * block * T2 + 3 * block + 1 +
                    T2 * T2 + factors * cfg->tokens * (p + n);
    /* the student's alloc (tied_alloc: W; untied_alloc: U, V, Pv, Rv, zw) */
    values += factors * D * p + (factors > 1 ? 2 * n * p + block : 0);
    return 8 * values;
}

static void cache_teacher(aim_sgd *s)
{
    s->tr_t = aim_sgd_i_trace(s->St, s->d);
    s->omega_tt = aim_sgd_i_tr_abt(s->St, s->St, s->d) / s->d;
    s->psi_tt = aim_sgd_i_tr_ab(s->St, s->St, s->d) / s->d;
}

/* The teacher and the learned parameters of the saved state
 * cfg->start_file (the drawn ones replaced), and the data stream of a
 * restart (aim_draw_restart_rng) for seed: 0, or -1 (said). */
static int load_state(aim_sgd *s, uint64_t seed)
{
    char err[1024];
    aim_state *st = aim_state_read(s->cfg.start_file, aim_sgd_state_arrays, err, sizeof err);
    if (!st || aim_state_check(st, &s->cfg, s->d, err, sizeof err)) {
        fprintf(stderr, "aimdyn: %s\n", err);
        aim_state_free(st);
        return -1;
    }
    double *arrays[2];
    size_t lengths[2];
    const double *saved[2];
    size_t saved_len[2];
    const int n = s->student->params(s, arrays, lengths);
    /* aim_state_check matched the student, d and p: the same arrays */
    aim_state_params(st, saved, saved_len);
    memcpy(s->St, aim_state_teacher(st), sizeof *s->St * (size_t)s->d * (size_t)s->d);
    for (int k = 0; k < n; k++)
        memcpy(arrays[k], saved[k], sizeof *arrays[k] * lengths[k]);
    gsl_rng *data = aim_draw_restart_rng(seed, aim_state_seed(st), aim_state_step(st));
    aim_state_free(st);
    if (!data) {
        fprintf(stderr, "aim_sgd: out of memory (generator)\n");
        return -1;
    }
    gsl_rng_free(s->rdata);
    s->rdata = data;
    return 0;
}

int aim_sgd_params(const aim_sgd *s, const double *arrays[2], size_t lengths[2],
                   const char *names[2])
{
    double *a[2];
    const int n = s->student->params(s, a, lengths);
    for (int k = 0; k < n; k++) {
        arrays[k] = a[k];
        names[k] = s->student->saved.names[k];
    }
    return n;
}

int aim_sgd_write_state(const char *path, const aim_sgd *s, const aim_config *cfg,
                        uint64_t seed, double tau, int point, char *err, size_t n)
{
    aim_state_content c = {s->d, s->p, s->steps, s->St, 0, {NULL, NULL}, {0, 0}, {NULL, NULL}};
    c.count = aim_sgd_params(s, c.arrays, c.lengths, c.names);
    return aim_state_write(path, &c, cfg, seed, tau, point, err, n);
}

aim_sgd *aim_sgd_create(const aim_config *cfg, int d, uint64_t seed)
{
    aim_sgd *s = alloc_common(cfg, d);
    if (!s)
        return NULL;
    gsl_rng *rt = aim_draw_rng(seed, AIM_DRAW_TEACHER), *rs = aim_draw_rng(seed, AIM_DRAW_STUDENT);
    s->rdata = aim_draw_rng(seed, AIM_DRAW_DATA);
    if (!rt || !rs || !s->rdata) {
        fprintf(stderr, "aim_sgd: out of memory (generators)\n");
        gsl_rng_free(rt);
        gsl_rng_free(rs);
        aim_sgd_free(s);
        return NULL;
    }
    int st = aim_draw_teacher(cfg, rt, s->St, d);
    s->student->draw(s, rs);
    /* the informed start (student.overlap > 0; nothing otherwise) */
    const int nf = s->student->factors;
    double *first = nf == 0 ? s->S : nf == 1 ? s->W : s->U;
    if (!st)
        st = aim_draw_inform(cfg, seed, d, s->p, nf, s->St, first, s->V);
    if (st == 0 && cfg->start_file[0])
        st = load_state(s, seed);
    if (s->student->refresh)
        s->student->refresh(s);
    gsl_rng_free(rt);
    gsl_rng_free(rs);
    if (st) {
        aim_sgd_free(s);
        return NULL;
    }
    cache_teacher(s);
    return s;
}

aim_sgd *aim_sgd_clone(const aim_sgd *src, uint64_t data_seed)
{
    aim_sgd *s = alloc_common(&src->cfg, src->d);
    if (!s)
        return NULL;
    s->rdata = aim_draw_rng(data_seed, AIM_DRAW_DATA);
    if (!s->rdata) {
        fprintf(stderr, "aim_sgd: out of memory (generator)\n");
        aim_sgd_free(s);
        return NULL;
    }
    size_t dd = (size_t)src->d * src->d;
    memcpy(s->S, src->S, dd * sizeof *s->S);
    memcpy(s->St, src->St, dd * sizeof *s->St);
    if (s->student->copy)
        s->student->copy(s, src);
    s->tr_t = src->tr_t;
    s->omega_tt = src->omega_tt;
    s->psi_tt = src->psi_tt;
    s->steps = src->steps;
    return s;
}

/* The fixed part of a saved state, checked on restore. */
typedef struct {
    int32_t decomposition, d, p, rng_size;
    int64_t steps;
    char rng[16]; /* gsl_rng_name of the data generator */
} saved_head;

static saved_head head_of(const aim_sgd *s)
{
    saved_head h;
    memset(&h, 0, sizeof h); /* no stray bytes in the padding */
    h.decomposition = (int32_t)s->cfg.decomposition;
    h.d = s->d;
    h.p = s->p;
    h.rng_size = (int32_t)gsl_rng_size(s->rdata);
    h.steps = s->steps;
    snprintf(h.rng, sizeof h.rng, "%s", gsl_rng_name(s->rdata));
    return h;
}

int aim_sgd_save(const aim_sgd *s, FILE *out)
{
    double *arrays[2];
    size_t lengths[2];
    const int n = s->student->params(s, arrays, lengths);
    const saved_head h = head_of(s);
    const size_t dd = (size_t)s->d * s->d;
    /* gsl_rng_fwrite reports a failed write through the GSL error handler */
    gsl_error_handler_t *old = gsl_set_error_handler_off();
    int ok = fwrite(&h, sizeof h, 1, out) == 1 && gsl_rng_fwrite(out, s->rdata) == GSL_SUCCESS;
    gsl_set_error_handler(old);
    ok = ok && fwrite(s->St, sizeof *s->St, dd, out) == dd;
    for (int k = 0; ok && k < n; k++)
        ok = fwrite(arrays[k], sizeof *arrays[k], lengths[k], out) == lengths[k];
    if (!ok)
        fprintf(stderr, "aim_sgd: cannot write the state of the seed\n");
    return ok ? 0 : -1;
}

int aim_sgd_restore(aim_sgd *s, FILE *in)
{
    double *arrays[2];
    size_t lengths[2];
    const int n = s->student->params(s, arrays, lengths);
    saved_head h, want = head_of(s);
    const size_t dd = (size_t)s->d * s->d;
    int ok = fread(&h, sizeof h, 1, in) == 1 && h.steps >= 0;
    want.steps = h.steps;
    ok = ok && memcmp(&h, &want, sizeof h) == 0;
    gsl_error_handler_t *old = gsl_set_error_handler_off();
    ok = ok && gsl_rng_fread(in, s->rdata) == GSL_SUCCESS;
    gsl_set_error_handler(old);
    ok = ok && fread(s->St, sizeof *s->St, dd, in) == dd;
    for (int k = 0; ok && k < n; k++)
        ok = fread(arrays[k], sizeof *arrays[k], lengths[k], in) == lengths[k];
    if (!ok) {
        fprintf(stderr, "aim_sgd: not a saved state of a %s student at d = %d\n",
                s->student->name, s->d);
        return -1;
    }
    s->steps = (long)h.steps;
    cache_teacher(s);
    if (s->student->refresh)
        s->student->refresh(s);
    return 0;
}

int aim_sgd_advance(aim_sgd *s, long steps)
{
    if (steps <= 0)
        return 0;
    if (s->student->begin)
        s->student->begin(s);
    long done = 0;
    int rc = 0;
    while (steps > 0) {
        int b = steps < s->block ? (int)steps : s->block;
        if (s->student->block(s, b)) {
            rc = 1;
            break;
        }
        steps -= b;
        done += b;
    }
    if (done > 0 && s->student->refresh) /* S from the factors for its readers */
        s->student->refresh(s);
    return rc;
}

long aim_sgd_steps(const aim_sgd *s) { return s->steps; }

int aim_sgd_dim(const aim_sgd *s) { return s->d; }

void aim_sgd_overlaps(const aim_sgd *s, aim_overlaps *q)
{
    int d = s->d;
    double trS = aim_sgd_i_trace(s->S, d);
    q->omega[0][0] = aim_sgd_i_tr_abt(s->S, s->S, d) / d;
    q->omega[0][1] = q->omega[1][0] = aim_sgd_i_tr_abt(s->S, s->St, d) / d;
    q->omega[1][1] = s->omega_tt;
    q->psi[0][0] = aim_sgd_i_tr_ab(s->S, s->S, d) / d;
    q->psi[0][1] = q->psi[1][0] = aim_sgd_i_tr_ab(s->S, s->St, d) / d;
    q->psi[1][1] = s->psi_tt;
    q->trace[0] = trS / d;
    q->trace[1] = s->tr_t / d;
    if (s->c == 0.0) {
        q->mean[0] = trS / sqrt((double)d);
        q->mean[1] = s->tr_t / sqrt((double)d);
    } else {
        q->mean[0] = q->mean[1] = 0.0;
    }
}

long aim_sgd_steps_for(const aim_config *cfg, int d, double tau)
{
    return lround(tau * (double)d * d / cfg->eta);
}

const double *aim_sgd_matrix(const aim_sgd *s, int which)
{
    return which == 0 ? s->S : s->St;
}

const double *aim_sgd_factor(const aim_sgd *s)
{
    return s->W;
}

int aim_sgd_untied_factors(const aim_sgd *s, const double **U,
                           const double **V)
{
    if (!s->U)
        return -1;
    *U = s->U;
    *V = s->V;
    return 0;
}

int aim_sgd_columns(const aim_sgd *s) { return s->p; }

int aim_sgd_last_samples(const aim_sgd *s, double *x, double *xi)
{
    int b = s->last_block, T = s->T;
    if (x)
        memcpy(x, s->X, (size_t)b * T * s->d * sizeof *x);
    if (xi)
        memcpy(xi, s->xi, (size_t)b * T * T * sizeof *xi);
    return b;
}
