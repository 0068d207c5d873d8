/* The parts of the Gaussian expectation engine (gauss.h) share this
 * header: the engine's struct, the constants more than one part uses, and
 * what each part offers the parts after it. Not installed. Each part
 * calls only the ones listed before it:
 *   gauss_factor.c       lower factors of the index laws, solves with them
 *   gauss_points.c       the quasi-random point sets, and the process's
 *                        shared point sets and kernel error estimates
 *   gauss_closed.c       the closed forms of relu and erf (orthant.c)
 *   gauss_elementwise.c  the per-entry rule of elementwise maps:
 *                        Gauss-Hermite, or gauss_closed.c
 *   gauss_threads.c      the engine's thread count and work space
 *   gauss_sum.c          the quasi-random rule's sums over a point set
 *   gauss_error.c        the kernel error estimate (ode.kernel_tol too)
 *   gauss.c              create and free, the evaluations, the kernels */
#ifndef AIM_GAUSS_INTERNAL_H
#define AIM_GAUSS_INTERNAL_H

#include <stddef.h>

#include "gauss.h"
#include "orthant.h"

#define MAXT AIM_MAX_TOKENS
#define MAXT2 (MAXT * MAXT)

/* Points per block of the generic rule: one dgemm of its E[e Y] part,
 * whose work space stays in cache. */
#define QMC_BLOCK 256
/* The point set is cut into at most MAX_CHUNKS chunks of whole blocks,
 * the unit of work of the engine's threads. Each chunk's sums are formed
 * block by block (block_sums), and the chunks' sums are added in chunk
 * order once all are done, whatever the thread count: the chunks depend
 * on the point count only, so that the results are bit for bit the same
 * on any number of threads, and no thread waits for another until the
 * end. */
#define MAX_CHUNKS 64
/* The rule is the point set shifted by one fixed random shift (seed
 * RULE_SEED): a draw from the same law as the REPLICATES copies shifted
 * by other random shifts (seed REPLICATE_SEED) whose spread estimates its
 * error. Unshifted, the rule's error was up to 3 times the copies'
 * (theory/direct.md sec. 3.5). Both fixed: the rule and the estimate are
 * reproducible. 8 copies give the spread to about 25 %; the estimate is
 * the Student-t bound at confidence ESTIMATE_CONFIDENCE on their 7
 * degrees of freedom. */
#define RULE_SEED 20
#define REPLICATES 8
#define REPLICATE_SEED 15
#define ESTIMATE_CONFIDENCE 0.95
/* the cap on the stored point set (points x 2 T^2 doubles: 256 MiB) */
#define MAX_STORED (1L << 25)

struct aim_gauss {
    int T, T2;
    double C[MAXT2], L[MAXT2]; /* token covariance and its Cholesky factor */
    double noise;
    aim_outmap *map;
    aim_activation activation;
    int elementwise; /* 1: per-entry rule; 0: generic QMC */
    /* the per-entry rule's integrals: NULL by Gauss-Hermite, else in
     * closed form (gauss_closed.c) */
    aim_orthant *orthant;

    /* Gauss-Hermite nodes/weights for the standard normal (weights sum
     * to 1); n2 for entry integrals, n4 for pair integrals. */
    int n2, n4;
    double *x2, *w2, *x4, *w4;

    /* Generic rule: npts standard normal points z of dimension
     * 2 T^2, stored as what they become, Y_k = L Z_k L^T (which
     * does not depend on the state): per point the nsym independent
     * entries of the symmetric Y_0 and Y_1, then the nanti of the
     * antisymmetric Y_2 and Y_3 (latent_matrices' order). Entry q of Y_k
     * is yc[sym_at[q]] (k = 0, 1, plus k nsym) or anti_sign[q] times
     * yc[2 nsym + k' nanti + anti_at[q]] (k = 2 + k'). nlat of them are
     * stored: all 2 T^2, or for a symmetric student and teacher (tied:
     * Psi = Omega, so the antisymmetric coordinates carry no variance
     * and meet only zero coefficients) the 2 nsym symmetric ones, the
     * leading columns of the whole set (generic_setup). */
    int npts, nlat, nsym, nanti;
    const double *yc;             /* npts x nlat, shared (aim_gauss_shared_rule) */
    double *pack;                 /* nlat x nlat: z -> packed Y (qmc_rule) */
    int sym_at[MAXT2], anti_at[MAXT2];
    double anti_sign[MAXT2];
    int c_diagonal;               /* C diagonal: the noise kernels in O(T^2) */
    /* per thread (work_threads of them): a block's e(z) - e(-z)
     * (QMC_BLOCK x T^2), for every E[e_p yc_j] */
    double *work;
    int work_threads;
    /* per chunk: its sums of diff_p yc_j (T^2 x nlat), for the kernel
     * error estimate (kernel_spread) */
    double *chunk_eyc;
    double *eyc;                  /* T^2 x nlat: sum of diff_p yc_j */
    /* Kernel error (aim_gauss_kernel_error) at the first state evaluated,
     * where the point count is also chosen when kernel_tol > 0; NAN until
     * estimated. */
    double kernel_tol, kernel_err;
    aim_overlaps first, last; /* the first and last states evaluated */
    int have_first;
    double shift[4 * MAXT2]; /* the rule's random shift (RULE_SEED) */
    /* what, beside the point set and the state, the kernels depend on:
     * the key of the kernel error cache */
    double integrand[AIM_MAX_HERMITE + 4 + MAXT2];

    /* Results of the last evaluation. */
    double risk, k_omega, k_psi;
    double err[MAXT2];          /* E[e_p] */
    /* generic: E[e_p Y_k,p] for Y = L Z L^T, Z the symmetric (k = 0, 1)
     * or antisymmetric (k = 2, 3) latent matrices: of E[e_p Y_k,q] the
     * drift kernels need q = p and q = p^T only, and Y_k,p^T = +-Y_k,p */
    double eyd[4][MAXT2];
    /* 2 x 2 lower factors, row-major, of the latent law with the teacher
     * first (aim_gauss_state_factors) */
    double Fs[4], Fa[4];
    /* The teacher's outputs at every point of the rule (and its antithetic
     * image), as block_sums makes them, LANES points interleaved: with the
     * teacher first they do not depend on the student, so they are made
     * at the first evaluation and read at the next ones (while the key
     * stays: the rule, the teacher's mean and factor entries). NULL when
     * the set is too large to keep them (TEACHER_KEPT_MAX). */
    double *teacher_f;
    const double *teacher_yc;
    double teacher_key[3];
    int teacher_valid;
    /* elementwise: per entry, 2 x 2 factor and E[e_p z_j] */
    double F2[MAXT2][4];
    double ez2[MAXT2][2];

    char error[256];
};

/* What one point set gives at one state (the rule's sums, weighted). */
typedef struct {
    int risk_only; /* 1: the risk alone */
    double risk, k_omega, k_psi;
    double err[MAXT2];
    double eyd[4][MAXT2]; /* E[e_p Y_k,p] */
    /* T^2 x nlat: every E[e_p yc_j] (one dgemm per block), which the
     * kernel error estimate compares across its copies of the rule; NULL:
     * not wanted */
    double *eyc;
} qmc_estimate;

/* The key of a kernel error estimate (see aim_gauss_kernel_error_key). */
typedef struct {
    int T, npts, nlat;
    double L[MAXT2];
    double integrand[AIM_MAX_HERMITE + 4 + MAXT2];
    aim_overlaps state;
} error_key;

/* gauss_factor.c */
int aim_gauss_chol_semidefinite(int n, const double *V, double *F);
void aim_gauss_forward_solve(int n, const double *F, const double *g, double *c);
int aim_gauss_state_factors(const aim_overlaps *q, double Fs[4], double Fa[4]);

/* gauss_points.c */
int aim_gauss_random_shifts(unsigned long seed, int count, int dim, double *shifts);
double *aim_gauss_set_memory(size_t n);
int aim_gauss_fill_rule(const aim_gauss *g, int npts, const double *shift, double *yc);
const double *aim_gauss_shared_rule(const aim_gauss *g, int npts);
void aim_gauss_release_rule(const double *yc);
void aim_gauss_kernel_error_key(const aim_gauss *g, const aim_overlaps *q, error_key *k);
int aim_gauss_cached_kernel_error(const error_key *k, double *err);
void aim_gauss_keep_kernel_error(const error_key *k, double err);
int aim_gauss_packing_matrix(aim_gauss *g);

/* The sums of the per-entry rule of an entry: E[e], E[e z0], E[e z1],
 * E[e^2], E[sigma'^2], E[(f - f*)^2] for the entry's law mu + F z. */
enum { SUM_E, SUM_EZ0, SUM_EZ1, SUM_EE, SUM_DD, SUM_RR, SUMS };

/* gauss_closed.c */
int aim_gauss_closed_map(const aim_config *cfg);
void aim_gauss_closed_entry(const aim_gauss *g, const double mu[2], const double F[4],
                            double acc[SUMS]);
double aim_gauss_closed_pair(const aim_gauss *g, const double mu[4], const double V[16]);

/* gauss_elementwise.c */
int aim_gauss_hermite_rule(int n, double **x, double **w);
int aim_gauss_polynomial_nodes(const aim_config *cfg);
int aim_gauss_eval_elementwise(aim_gauss *g, const aim_overlaps *q);
int aim_gauss_risk_elementwise(const aim_gauss *g, const aim_overlaps *q, double *risk);

/* gauss_threads.c */
int aim_gauss_thread_work(aim_gauss *g, int threads);

/* gauss_sum.c */
int aim_gauss_qmc_sum(aim_gauss *g, const double *yc, int npts, const aim_overlaps *q,
                      const double Fs[4], const double Fa[4], qmc_estimate *out);
int aim_gauss_engine_factors(const aim_gauss *g, const aim_overlaps *q, double Fs[4],
                             double Fa[4]);

/* gauss_error.c */
int aim_gauss_first_points(const aim_gauss *g);
int aim_gauss_choose_points(aim_gauss *g, const aim_overlaps *q, qmc_estimate *est);

#endif
