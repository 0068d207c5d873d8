/* The quasi-random rule's sums over a point set at one state: blocks of
 * points through the output map LANES at a time, in chunks on the
 * engine's threads, the teacher's outputs kept across states. */
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_blas.h>

#include "gauss_internal.h"
#include "omp_directive.h"

#ifdef _OPENMP
#include <omp.h>
#endif

/* the most numbers an engine keeps of its teacher's outputs (64 MiB;
 * as many as its point set has, 2 T^2 per point) */
#define TEACHER_KEPT_MAX (1L << 23)

/* out = A B for T x T matrices (per point, where a BLAS call would cost
 * more than the product). */
static void small_product(int T, const double *A, const double *B, double *out)
{
    for (int a = 0; a < T; a++)
        for (int d = 0; d < T; d++) {
            double t = 0.0;
            for (int c = 0; c < T; c++)
                t += A[a * T + c] * B[c * T + d];
            out[a * T + d] = t;
        }
}

/* The noise kernels' error part at one point, <E, C E C> and
 * <E, C E^T C> = <E, (C E C)^T>: O(T^3) (O(T^2) for a diagonal C) instead
 * of the sum over all T^4 pairs of entries. */
static void error_kernels(const aim_gauss *g, const double *e, double *ko, double *kp)
{
    const int T = g->T;
    const double *C = g->C;
    double so = 0.0, sp = 0.0;
    if (g->c_diagonal) {
        for (int a = 0; a < T; a++)
            for (int b = 0; b < T; b++) {
                const double w = C[a * T + a] * C[b * T + b] * e[a * T + b];
                so += w * e[a * T + b];
                sp += w * e[b * T + a];
            }
    } else {
        double ec[MAXT2], cec[MAXT2];
        small_product(T, e, C, ec);
        small_product(T, C, ec, cec);
        for (int a = 0; a < T; a++)
            for (int b = 0; b < T; b++) {
                so += e[a * T + b] * cec[a * T + b];
                sp += e[a * T + b] * cec[b * T + a];
            }
    }
    *ko = so;
    *kp = sp;
}

#define LANES AIM_OUTMAP_LANES

/* error_kernels for LANES points (e interleaved) into ko[l], kp[l]: for
 * a diagonal C the same operations in the same order, point by point;
 * else error_kernels itself per point. */
AIM_VECTOR_CLONES
static void error_kernels_lanes(const aim_gauss *g, const double *e, double ko[LANES],
                                double kp[LANES])
{
    const int T = g->T, T2 = g->T2;
    const double *C = g->C;
    if (!g->c_diagonal) {
        for (int l = 0; l < LANES; l++) {
            double one[MAXT2];
            for (int p = 0; p < T2; p++)
                one[p] = e[p * LANES + l];
            error_kernels(g, one, &ko[l], &kp[l]);
        }
        return;
    }
    double so[LANES] = {0}, sp[LANES] = {0};
    for (int a = 0; a < T; a++)
        for (int b = 0; b < T; b++) {
            const double c = C[a * T + a] * C[b * T + b];
            const double *eab = e + (a * T + b) * LANES, *eba = e + (b * T + a) * LANES;
            for (int l = 0; l < LANES; l++) {
                const double w = c * eab[l];
                so[l] += w * eab[l];
                sp[l] += w * eba[l];
            }
        }
    for (int l = 0; l < LANES; l++) {
        ko[l] = so[l];
        kp[l] = sp[l];
    }
}

/* 1 when the antisymmetric factor Fa (aim_gauss_state_factors) is not zero: the
 * antisymmetric latent coordinates carry variance. */
static int has_antisymmetric(const double Fa[4])
{
    return Fa[0] != 0.0 || Fa[2] != 0.0 || Fa[3] != 0.0;
}

/* One block of nb points (y: nb x nlat) at the state of index means mu
 * and factors Fs, Fa, added to the unweighted sums s; unless
 * s->risk_only, also the kernels, E[e], E[e_p Y_k,p] and, when s->eyc is
 * set, the block's E[e Y] part into s->eyc (T^2 x nlat, overwritten for
 * the first block of a chunk; diff its work space). Every point z is used
 * with -z: h = mu +- D. The points go through the output map LANES at a
 * time (aim_outmap_forward_lanes), and each lane keeps its own sums,
 * added in lane order at the end of the block: the order of every sum is
 * fixed by the point count alone. teacher (NULL: none): the teacher's
 * outputs at the block's points (g->teacher_f from the block's first
 * point on), read, or made and written there when make_teacher is 1. */
AIM_VECTOR_CLONES
static void block_sums(const aim_gauss *g, const double *y0, int nb, double mu[2][MAXT2],
                       const double Fs[4], const double Fa[4], int first, double *diff,
                       double *teacher, int make_teacher, qmc_estimate *s)
{
    const int T2 = g->T2, nlat = g->nlat, nsym = g->nsym, nanti = g->nanti;
    const int all = !s->risk_only;
    /* Fa = 0 (Psi = Omega: a tied student and teacher): the antisymmetric
     * latent coordinates carry no variance, and E[e_p Y_k,p] of k = 2, 3
     * meets a zero coefficient (aim_gauss_error_index) */
    const int anti = has_antisymmetric(Fa);
    const int group_size = 2 * T2 * LANES;
    /* interleaved: entry p of lane l at p * LANES + l */
    double D[2][MAXT2 * LANES], f[2][MAXT2 * LANES], fs[2][MAXT2 * LANES];
    double deriv[2][MAXT2 * LANES], r[MAXT2 * LANES], e[2][MAXT2 * LANES];
    double yv[4][MAXT2 * LANES]; /* Y_k,p at the points */
    /* the lanes' sums */
    double risk[LANES] = {0}, ko[LANES] = {0}, kp[LANES] = {0};
    double err[MAXT2 * LANES] = {0}, eyd[4][MAXT2 * LANES] = {{0}};
    for (int b0 = 0; b0 < nb; b0 += LANES) {
        const int lanes = nb - b0 < LANES ? nb - b0 : LANES;
        /* the teacher's outputs: kept ones read in place, else made (into
         * the keeping place when they are to be kept) */
        double *kept = teacher ? teacher + (size_t)(b0 / LANES) * group_size : NULL;
        double *ts[2] = {kept ? kept : fs[0], kept ? kept + T2 * LANES : fs[1]};
        const int make = !kept || make_teacher;
        for (int l = 0; l < LANES; l++) {
            /* a lane past the block's end repeats its first point, and
             * its sums are left out */
            const double *y = y0 + (size_t)(b0 + (l < lanes ? l : 0)) * nlat;
            /* the student (index 0) is row 1 of the teacher-first
             * factors, the teacher row 0 */
            if (!anti) { /* once per symmetric entry: the same numbers */
                double ds[MAXT2], dt[MAXT2];
                for (int j = 0; j < nsym; j++) {
                    ds[j] = Fs[2] * y[j] + Fs[3] * y[nsym + j];
                    dt[j] = make ? Fs[0] * y[j] : 0.0; /* the teacher's, when made */
                }
                for (int p = 0; p < T2; p++) {
                    const int j = g->sym_at[p];
                    D[0][p * LANES + l] = ds[j];
                    D[1][p * LANES + l] = dt[j];
                    yv[0][p * LANES + l] = y[j];
                    yv[1][p * LANES + l] = y[nsym + j];
                }
                continue;
            }
            for (int p = 0; p < T2; p++) {
                const double ys0 = y[g->sym_at[p]], ys1 = y[nsym + g->sym_at[p]];
                double ya0 = 0.0, ya1 = 0.0;
                if (g->anti_sign[p] != 0.0) {
                    ya0 = g->anti_sign[p] * y[2 * nsym + g->anti_at[p]];
                    ya1 = g->anti_sign[p] * y[2 * nsym + nanti + g->anti_at[p]];
                }
                D[0][p * LANES + l] = Fs[2] * ys0 + Fs[3] * ys1 + Fa[2] * ya0 + Fa[3] * ya1;
                D[1][p * LANES + l] = Fs[0] * ys0 + Fa[0] * ya0;
                yv[0][p * LANES + l] = ys0;
                yv[1][p * LANES + l] = ys1;
                yv[2][p * LANES + l] = ya0;
                yv[3][p * LANES + l] = ya1;
            }
        }
        const double keep[LANES] = {1.0, lanes > 1, lanes > 2, lanes > 3};
        /* the points z (index 0) and -z (index 1) */
        if (make)
            aim_outmap_forward_lanes(g->map, mu[1], D[1], ts[0], ts[1], NULL, NULL);
        aim_outmap_forward_lanes(g->map, mu[0], D[0], f[0], f[1], all ? deriv[0] : NULL,
                                 all ? deriv[1] : NULL);
        for (int side = 0; side < 2; side++) {
            double rr[LANES] = {0};
            for (int c = 0; c < T2; c++)
                for (int l = 0; l < LANES; l++) {
                    const double rc = f[side][c * LANES + l] - ts[side][c * LANES + l];
                    r[c * LANES + l] = rc;
                    rr[l] += rc * rc;
                }
            for (int l = 0; l < LANES; l++)
                risk[l] += keep[l] * 0.5 * rr[l];
            if (!all)
                continue;
            aim_outmap_pullback_lanes(g->map, f[side], deriv[side], r, e[side]);
            if (lanes < LANES) /* the repeated points' errors out of every sum */
                for (int p = 0; p < T2; p++)
                    for (int l = lanes; l < LANES; l++)
                        e[side][p * LANES + l] = 0.0;
            double ko_pt[LANES], kp_pt[LANES];
            error_kernels_lanes(g, e[side], ko_pt, kp_pt);
            if (g->noise > 0.0) /* J^T J carries the label noise */
                for (int l = 0; l < lanes; l++) {
                    double fl[MAXT2], dl[MAXT2], go, gp;
                    for (int p = 0; p < T2; p++) {
                        fl[p] = f[side][p * LANES + l];
                        dl[p] = deriv[side][p * LANES + l];
                    }
                    aim_outmap_gram(g->map, fl, dl, g->C, &go, &gp);
                    ko_pt[l] += g->noise * go;
                    kp_pt[l] += g->noise * gp;
                }
            for (int l = 0; l < LANES; l++) {
                ko[l] += ko_pt[l];
                kp[l] += kp_pt[l];
            }
            for (int i = 0; i < T2 * LANES; i++)
                err[i] += e[side][i];
        }
        if (!all)
            continue;
        /* E[e_p Y(z)] over z and -z: (e(z) - e(-z)) Y(z), since Y is
         * linear in z */
        for (int k = 0; k < (anti ? 4 : 2); k++)
            for (int i = 0; i < T2 * LANES; i++)
                eyd[k][i] += (e[0][i] - e[1][i]) * yv[k][i];
        if (s->eyc)
            for (int l = 0; l < lanes; l++)
                for (int p = 0; p < T2; p++)
                    diff[(size_t)(b0 + l) * T2 + p] = e[0][p * LANES + l] - e[1][p * LANES + l];
    }
    for (int l = 0; l < LANES; l++)
        s->risk += risk[l];
    if (!all)
        return;
    for (int l = 0; l < LANES; l++) {
        s->k_omega += ko[l];
        s->k_psi += kp[l];
        for (int p = 0; p < T2; p++) {
            s->err[p] += err[p * LANES + l];
            for (int k = 0; k < 4; k++)
                s->eyd[k][p] += eyd[k][p * LANES + l];
        }
    }
    /* every E[e_p yc_j], for the block diff^T y */
    if (s->eyc)
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T2, nlat, nb, 1.0, diff, T2, y0,
                    nlat, first ? 0.0 : 1.0, s->eyc, nlat);
}

/* g->teacher_f for a sum over the point set yc at q (factors Fs, Fa),
 * with *make 1 when it is to be made (the key has changed), or NULL:
 * not g's own rule (a copy of the kernel error estimate), or too large
 * to keep, or out of memory (block_sums then makes the teacher's outputs
 * as it goes, the same numbers). */
static double *kept_teacher(aim_gauss *g, const double *yc, int npts, const aim_overlaps *q,
                            const double Fs[4], const double Fa[4], int *make)
{
    const size_t numbers = (size_t)((npts + LANES - 1) / LANES) * 2 * g->T2 * LANES;
    if (yc != g->yc || numbers > TEACHER_KEPT_MAX)
        return NULL;
    const double key[3] = {q->mean[1], Fs[0], Fa[0]};
    if (g->teacher_valid && g->teacher_yc == yc && memcmp(key, g->teacher_key, sizeof key) == 0)
        return g->teacher_f;
    if (g->teacher_yc != yc) {
        free(g->teacher_f);
        g->teacher_f = aim_gauss_set_memory(numbers);
        g->teacher_yc = g->teacher_f ? yc : NULL;
    }
    g->teacher_valid = 0;
    memcpy(g->teacher_key, key, sizeof key);
    *make = g->teacher_f != NULL;
    return g->teacher_f;
}

/* The generic rule over the point set yc (npts x nlat, qmc_rule) at the
 * state q with factors Fs, Fa (aim_gauss_state_factors), in chunks of blocks on
 * the engine's threads (see MAX_CHUNKS: the same numbers on any number
 * of threads). With out->risk_only only the risk is computed (the
 * output map forward, no pull-back, kernels or E[e Y]), summed in the
 * same order as with everything, so that it is the same number bit for
 * bit; every E[e_p yc_j] only when out->eyc is set. Returns 0. */
int aim_gauss_qmc_sum(aim_gauss *g, const double *yc, int npts, const aim_overlaps *q,
                      const double Fs[4], const double Fa[4], qmc_estimate *out)
{
    const int T2 = g->T2, nlat = g->nlat, all = !out->risk_only, full = all && out->eyc;
    const int blocks = (npts + QMC_BLOCK - 1) / QMC_BLOCK;
    const int chunks = blocks < MAX_CHUNKS ? blocks : MAX_CHUNKS;
    int threads = aim_gauss_threads() < chunks ? aim_gauss_threads() : chunks;
    /* short of memory for more, the threads there is work space for (the
     * same numbers) */
    if (aim_gauss_thread_work(g, threads))
        threads = g->work_threads;
    double mu[2][MAXT2];
    for (int i = 0; i < 2; i++)
        for (int p = 0; p < T2; p++)
            mu[i][p] = g->C[p] * q->mean[i];
    int make_teacher = 0;
    double *teacher = kept_teacher(g, yc, npts, q, Fs, Fa, &make_teacher);
    qmc_estimate part[MAX_CHUNKS];
    if (threads > 1)
        aim_gauss_team_started();
    OMP(omp parallel num_threads(threads) if (threads > 1))
    {
#ifdef _OPENMP
        double *diff = g->work + (size_t)omp_get_thread_num() * QMC_BLOCK * T2;
#else
        double *diff = g->work;
#endif
        OMP(omp for schedule(dynamic, 1))
        for (int c = 0; c < chunks; c++) {
            qmc_estimate *s = &part[c];
            *s = (qmc_estimate){.risk_only = !all,
                                .eyc = full ? g->chunk_eyc + (size_t)c * T2 * nlat : NULL};
            const int last = (int)((long)(c + 1) * blocks / chunks);
            for (int blk = (int)((long)c * blocks / chunks); blk < last; blk++) {
                const int start = blk * QMC_BLOCK;
                const int nb = npts - start < QMC_BLOCK ? npts - start : QMC_BLOCK;
                block_sums(g, yc + (size_t)start * nlat, nb, mu, Fs, Fa,
                           blk == (int)((long)c * blocks / chunks), diff,
                           teacher ? teacher + (size_t)(start / LANES) * 2 * T2 * LANES : NULL,
                           make_teacher, s);
            }
        }
    }
    if (make_teacher)
        g->teacher_valid = 1;
    double risk = 0, ko = 0, kp = 0, err[MAXT2] = {0}, eyd[4][MAXT2] = {{0}};
    if (full)
        memset(out->eyc, 0, sizeof(double) * (size_t)T2 * nlat);
    for (int c = 0; c < chunks; c++) {
        risk += part[c].risk;
        if (!all)
            continue;
        ko += part[c].k_omega;
        kp += part[c].k_psi;
        for (int p = 0; p < T2; p++)
            err[p] += part[c].err[p];
        for (int k = 0; k < 4; k++)
            for (int p = 0; p < T2; p++)
                eyd[k][p] += part[c].eyd[k][p];
        for (int i = 0; full && i < T2 * nlat; i++)
            out->eyc[i] += part[c].eyc[i];
    }
    const double weight = 1.0 / (2.0 * npts);
    out->risk = risk * weight;
    if (!all)
        return 0;
    out->k_omega = ko * weight;
    out->k_psi = kp * weight;
    for (int p = 0; p < T2; p++)
        out->err[p] = err[p] * weight;
    for (int k = 0; k < 4; k++)
        for (int p = 0; p < T2; p++)
            out->eyd[k][p] = eyd[k][p] * weight;
    for (int i = 0; full && i < T2 * nlat; i++)
        out->eyc[i] *= weight;
    return 0;
}

/* aim_gauss_state_factors for g: a symmetric engine (g->nlat < 2 T^2) has no
 * antisymmetric coordinates, so a state whose antisymmetric part is not
 * zero (beyond round-off: chol_semidefinite_scaled) is refused. */
int aim_gauss_engine_factors(const aim_gauss *g, const aim_overlaps *q, double Fs[4],
                             double Fa[4])
{
    if (aim_gauss_state_factors(q, Fs, Fa))
        return -1;
    return g->nlat < 2 * g->T2 && has_antisymmetric(Fa) ? -1 : 0;
}
