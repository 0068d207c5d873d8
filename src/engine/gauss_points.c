#define _DEFAULT_SOURCE /* madvise (aim_gauss_set_memory): outside _XOPEN_SOURCE */
/* The quasi-random rule's point sets: the quasi-random normal points,
 * whitened and shifted, made into the packed entries of L Z L^T; and
 * what the engines of a process share under one mutex, the point sets
 * and the kernel error estimates. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <gsl/gsl_blas.h>
#include <gsl/gsl_linalg.h>
#include <gsl/gsl_qrng.h>
#include <gsl/gsl_rng.h>

#include "gauss_internal.h"
#include "normal.h"

/* Point sets kept for reuse by later engines of the process (see
 * aim_gauss_shared_rule: the rules; the kernel error estimate's copies are not
 * kept, kernel_spread), and kernel error estimates (see error_slot). */
#define RULE_SLOTS 24
#define ERROR_SLOTS 16

/* Latent coordinates: for k = 0, 1 the T(T+1)/2 entries (e <= f) of the
 * symmetric matrix Zs_k (off-diagonal variance 1, diagonal 2), then for
 * k = 0, 1 the T(T-1)/2 entries (e < f) of the antisymmetric Za_k. */
static void latent_matrices(int T, const double *z, double Z[4][MAXT2])
{
    int j = 0;
    for (int k = 0; k < 2; k++)
        for (int e = 0; e < T; e++)
            for (int f = e; f < T; f++, j++) {
                double v = e == f ? M_SQRT2 * z[j] : z[j];
                Z[k][e * T + f] = Z[k][f * T + e] = v;
            }
    for (int k = 2; k < 4; k++)
        for (int e = 0; e < T; e++) {
            Z[k][e * T + e] = 0.0;
            for (int f = e + 1; f < T; f++, j++) {
                Z[k][e * T + f] = z[j];
                Z[k][f * T + e] = -z[j];
            }
        }
}

/* out = L M L^T for T x T matrices */
static void congruence(int T, const double *L, const double *M, double *out)
{
    double tmp[MAXT2];
    for (int a = 0; a < T; a++)
        for (int f = 0; f < T; f++) {
            double s = 0.0;
            for (int e = 0; e <= a; e++)
                s += L[a * T + e] * M[e * T + f];
            tmp[a * T + f] = s;
        }
    for (int a = 0; a < T; a++)
        for (int b = 0; b < T; b++) {
            double s = 0.0;
            for (int f = 0; f <= b; f++)
                s += tmp[a * T + f] * L[b * T + f];
            out[a * T + b] = s;
        }
}

/* Fixed quasi-random standard normal points (npts x dim): the first dim
 * coordinates of the set of dimension whole. The point set
 * is used with its antithetic image (z, -z), which makes every odd moment
 * exact; it is then whitened so that its second moments are exactly the
 * identity, which makes the rule exact for the linear-in-index parts of
 * the integrands (the whole integrand for a linear output map). shift
 * (dim numbers in [0, 1)) rotates the unit cube first
 * (u -> frac(u + shift)): one randomised copy of the rule
 * (aim_gauss_random_shifts). Into points; returns 0 or -1. */
static int qmc_points(int dim, int whole, int npts, const double *shift, double *points)
{
    /* GSL's Sobol generator stops at 40 dimensions; Halton goes on. Both
     * make coordinate j the same whatever the dimension, so the first dim
     * of a whole-dimensional set are a set of dim (chosen by whole). */
    const gsl_qrng_type *type = whole <= 40 ? gsl_qrng_sobol : gsl_qrng_halton;
    gsl_qrng *q = gsl_qrng_alloc(type, (unsigned)dim);
    double *cov = calloc((size_t)dim * (size_t)dim, sizeof(double));
    int rc = -1;
    if (!q || !cov)
        goto done;
    double u[4 * MAXT2];
    gsl_qrng_get(q, u); /* the first point has zero coordinates: skip it */
    for (int i = 0; i < npts; i++) {
        if (gsl_qrng_get(q, u) != 0)
            goto done;
        double *z = points + (size_t)i * dim;
        for (int j = 0; j < dim; j++) {
            double v = u[j] + shift[j];
            v -= floor(v);
            if (v <= 0.0) /* the quantile needs (0, 1) */
                v = 0.5 / npts;
            z[j] = v;
        }
    }
    aim_normal_quantiles(points, (size_t)npts * dim);
    /* second moments Z^T Z / npts (lower triangle), their Cholesky factor
     * K, and the whitened points Z K^-T */
    cblas_dsyrk(CblasRowMajor, CblasLower, CblasTrans, dim, npts, 1.0 / npts, points, dim,
                0.0, cov, dim);
    gsl_matrix_view K = gsl_matrix_view_array(cov, (size_t)dim, (size_t)dim);
    if (gsl_linalg_cholesky_decomp1(&K.matrix) != GSL_SUCCESS)
        goto done;
    cblas_dtrsm(CblasRowMajor, CblasRight, CblasLower, CblasTrans, CblasNonUnit, npts, dim,
                1.0, cov, dim, points, dim);
    rc = 0;
done:
    free(cov);
    if (q)
        gsl_qrng_free(q);
    return rc;
}

/* count random shifts of dim numbers in [0, 1) (count x dim, row-major)
 * from the generator seeded with seed: the same on every machine.
 * Returns 0 or -1. */
int aim_gauss_random_shifts(unsigned long seed, int count, int dim, double *shifts)
{
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    if (!rng)
        return -1;
    gsl_rng_set(rng, seed);
    for (int i = 0; i < count * dim; i++)
        shifts[i] = gsl_rng_uniform(rng);
    gsl_rng_free(rng);
    return 0;
}

/* The point set as the generic rule uses it: the packed entries of
 * Y_k = L Z_k L^T (k = 0..3) per point, as many as z has (nlat), into yc
 * (npts x nlat); they are linear in z, yc = Z g->pack. With uncorrelated
 * tokens (g->c_diagonal: L diagonal, its off-diagonal entries exact
 * zeros, and so are g->pack's) g->pack is diagonal and yc is Z scaled
 * column by column, in place: the numbers a dgemm by that diagonal matrix makes
 * (every product with a zero adds an exact zero), without its second
 * buffer and its pass over it. Else one dgemm, work: npts x nlat
 * numbers. Returns 0 or -1. */
static int qmc_rule(const aim_gauss *g, int npts, const double *shift, double *work,
                    double *yc)
{
    const int nlat = g->nlat;
    if (qmc_points(nlat, 2 * g->T2, npts, shift, g->c_diagonal ? yc : work))
        return -1;
    if (g->c_diagonal) {
        for (size_t i = 0; i < (size_t)npts; i++)
            for (int j = 0; j < nlat; j++)
                yc[i * nlat + j] *= g->pack[(size_t)j * nlat + j];
        return 0;
    }
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, npts, nlat, nlat, 1.0, work, nlat,
                g->pack, nlat, 0.0, yc, nlat);
    return 0;
}

/* Memory for a point set of n numbers, NULL when out of memory. A large
 * set is asked for on transparent huge pages where the kernel offers
 * them: a whole run writes tens of megabytes of fresh sets, and the page
 * faults of 4 KiB pages took about a sixth of the T = 4 example's run
 * (perf; 2 MiB pages cut that run's CPU time by about a tenth). */
#define HUGE_PAGE (1L << 21)
double *aim_gauss_set_memory(size_t n)
{
    const size_t bytes = sizeof(double) * n;
    void *mem = NULL;
    if (bytes < HUGE_PAGE)
        return malloc(bytes);
    if (posix_memalign(&mem, HUGE_PAGE, bytes) != 0)
        return NULL;
#ifdef MADV_HUGEPAGE
    madvise(mem, bytes, MADV_HUGEPAGE); /* advice: nothing to do if refused */
#endif
    return mem;
}

/* The point set of npts points (qmc_rule) made into yc (npts x nlat),
 * 0 or -1. */
int aim_gauss_fill_rule(const aim_gauss *g, int npts, const double *shift, double *yc)
{
    double *work = g->c_diagonal ? NULL : malloc(sizeof(double) * (size_t)npts * g->nlat);
    const int rc = (!g->c_diagonal && !work) || qmc_rule(g, npts, shift, work, yc) ? -1 : 0;
    free(work);
    return rc;
}

/* A new point set of npts points (qmc_rule), NULL on failure. */
static double *new_rule(const aim_gauss *g, int npts, const double *shift)
{
    double *yc = aim_gauss_set_memory((size_t)npts * g->nlat);
    if (yc && aim_gauss_fill_rule(g, npts, shift, yc)) {
        free(yc);
        yc = NULL;
    }
    return yc;
}

/* The point sets are the same for every engine of the same tokens, token
 * covariance (its Cholesky factor L) and point count, and making one
 * (npts x 2 T^2 normal quantiles, whitening, one dgemm) costs about ten
 * engine evaluations. The engines of one process share them: the runs of
 * a sweep, the orders of a compare, a truncated hierarchy's order M - 1
 * estimate. Each entry is the point set qmc_rule made for its key, so
 * that a shared set is bit for bit the one an engine would make; entries
 * no engine uses are kept (at most RULE_SLOTS entries in all, the least
 * recently used unused one replaced first, and at most MAX_STORED numbers
 * in the unused ones: ode.kernel_tol's sets can be that large). */
typedef struct {
    int T, npts, nlat;
    double L[MAXT2];
    double *yc; /* NULL: a free slot */
    int users;
    unsigned long used; /* when last handed out */
} rule_slot;
static rule_slot rule_slots[RULE_SLOTS];
static unsigned long rule_clock;
static pthread_mutex_t rule_lock = PTHREAD_MUTEX_INITIALIZER;

/* The rule of npts points for g (qmc_rule, shifted by g->shift): a
 * shared one of the same key, or a new one, shared if a slot is free or
 * unused. Release it with aim_gauss_release_rule. NULL when out of memory. */
const double *aim_gauss_shared_rule(const aim_gauss *g, int npts)
{
    pthread_mutex_lock(&rule_lock);
    rule_slot *spare = NULL;
    for (int i = 0; i < RULE_SLOTS; i++) {
        rule_slot *r = &rule_slots[i];
        if (r->yc && r->T == g->T && r->npts == npts && r->nlat == g->nlat &&
            memcmp(r->L, g->L, sizeof(double) * (size_t)g->T2) == 0) {
            r->users++;
            r->used = ++rule_clock;
            pthread_mutex_unlock(&rule_lock);
            return r->yc;
        }
        if (!r->yc) { /* a free slot first, */
            if (!spare || spare->yc)
                spare = r;
        } else if (!r->users && (!spare || (spare->yc && r->used < spare->used))) {
            spare = r; /* else the least recently used unused one */
        }
    }
    /* made under the lock: another engine asking for the same set waits
     * for it instead of making it again */
    double *yc = new_rule(g, npts, g->shift);
    if (yc && spare) {
        free(spare->yc);
        *spare = (rule_slot){.T = g->T, .npts = npts, .nlat = g->nlat, .yc = yc, .users = 1,
                             .used = ++rule_clock};
        memcpy(spare->L, g->L, sizeof(double) * (size_t)g->T2);
    }
    pthread_mutex_unlock(&rule_lock);
    return yc;
}

/* The numbers held by the unused shared point sets. */
static long unused_numbers(void)
{
    long n = 0;
    for (int i = 0; i < RULE_SLOTS; i++)
        if (rule_slots[i].yc && !rule_slots[i].users)
            n += (long)rule_slots[i].npts * rule_slots[i].nlat;
    return n;
}

/* Gives back a point set from aim_gauss_shared_rule (NULL: nothing). One in no slot
 * (made when every slot was in use) is freed. */
void aim_gauss_release_rule(const double *yc)
{
    if (!yc)
        return;
    pthread_mutex_lock(&rule_lock);
    int shared = 0;
    for (int i = 0; i < RULE_SLOTS; i++)
        if (rule_slots[i].yc == yc) {
            rule_slots[i].users--;
            shared = 1;
        }
    while (unused_numbers() > MAX_STORED) { /* the least recently used go */
        rule_slot *old = NULL;
        for (int i = 0; i < RULE_SLOTS; i++)
            if (rule_slots[i].yc && !rule_slots[i].users && (!old || rule_slots[i].used < old->used))
                old = &rule_slots[i];
        free(old->yc);
        *old = (rule_slot){0};
    }
    pthread_mutex_unlock(&rule_lock);
    if (!shared)
        free((double *)yc);
}

/* A kernel error estimate (kernel_spread: REPLICATES evaluations, each
 * on its own point set) is a function of the point set's key, the
 * integrand and the state: kept for the engines of the process that meet
 * the same (the orders of a compare start from the same state), at most
 * ERROR_SLOTS, the oldest replaced first. */
typedef struct {
    error_key key;
    double err;
    int set;
} error_slot;
static error_slot error_slots[ERROR_SLOTS];
static int error_next;

void aim_gauss_kernel_error_key(const aim_gauss *g, const aim_overlaps *q, error_key *k)
{
    memset(k, 0, sizeof *k); /* the padding too: keys are compared by memcmp */
    k->T = g->T;
    k->npts = g->npts;
    k->nlat = g->nlat;
    memcpy(k->L, g->L, sizeof k->L);
    memcpy(k->integrand, g->integrand, sizeof k->integrand);
    k->state = *q;
}

/* 1 and the cached estimate in *err when there is one for k, else 0. */
int aim_gauss_cached_kernel_error(const error_key *k, double *err)
{
    pthread_mutex_lock(&rule_lock);
    int found = 0;
    for (int i = 0; i < ERROR_SLOTS && !found; i++)
        if (error_slots[i].set && memcmp(&error_slots[i].key, k, sizeof *k) == 0) {
            *err = error_slots[i].err;
            found = 1;
        }
    pthread_mutex_unlock(&rule_lock);
    return found;
}

void aim_gauss_keep_kernel_error(const error_key *k, double err)
{
    pthread_mutex_lock(&rule_lock);
    error_slots[error_next] = (error_slot){.key = *k, .err = err, .set = 1};
    error_next = (error_next + 1) % ERROR_SLOTS;
    pthread_mutex_unlock(&rule_lock);
}

static void clear_kernel_errors(void)
{
    pthread_mutex_lock(&rule_lock);
    memset(error_slots, 0, sizeof error_slots);
    error_next = 0;
    pthread_mutex_unlock(&rule_lock);
}

void aim_gauss_cache_clear(void)
{
    pthread_mutex_lock(&rule_lock);
    for (int i = 0; i < RULE_SLOTS; i++)
        if (rule_slots[i].yc && !rule_slots[i].users) {
            free(rule_slots[i].yc);
            rule_slots[i] = (rule_slot){0};
        }
    pthread_mutex_unlock(&rule_lock);
    clear_kernel_errors();
}

/* g->pack: row j is the packed Y of the unit latent vector e_j, j <
 * nlat (the packing keeps symmetric and antisymmetric coordinates apart,
 * so the symmetric block alone serves a symmetric engine). */
int aim_gauss_packing_matrix(aim_gauss *g)
{
    const int T = g->T, nlat = g->nlat;
    g->pack = calloc((size_t)nlat * nlat, sizeof(double));
    if (!g->pack)
        return -1;
    double unit[4 * MAXT2] = {0}, Z[4][MAXT2], Y[4][MAXT2];
    for (int j = 0; j < nlat; j++) {
        unit[j] = 1.0;
        latent_matrices(T, unit, Z);
        unit[j] = 0.0;
        for (int k = 0; k < 4; k++)
            congruence(T, g->L, Z[k], Y[k]);
        double *y = g->pack + (size_t)j * nlat;
        int i = 0;
        for (int k = 0; k < 2; k++)
            for (int e = 0; e < T; e++)
                for (int f = e; f < T; f++)
                    y[i++] = Y[k][e * T + f];
        for (int k = 2; k < 4 && nlat > i; k++) /* symmetric ones only: none */
            for (int e = 0; e < T; e++)
                for (int f = e + 1; f < T; f++)
                    y[i++] = Y[k][e * T + f];
    }
    return 0;
}
