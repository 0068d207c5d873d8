/* aim_overlaps: the finite set of order parameters of the pair {S, S*}
 * that fixes the joint law of all attention indices (theory/model.md sec. 2-3,
 * the paper's Theorem 1), and the observables derived from it.
 * Index 0 is the student S, index 1 the teacher S*. */
#ifndef AIM_OVERLAPS_H
#define AIM_OVERLAPS_H

#include "config.h"

typedef struct {
    double omega[2][2]; /* Omega(S_i, S_j) = Tr(S_i S_j^T) / d */
    double psi[2][2];   /* Psi(S_i, S_j)   = Tr(S_i S_j) / d   */
    double mean[2];     /* E[h_ab] = C_ab mean: Tr S / sqrt d in raw
                           centring, 0 when centred */
    double trace[2];    /* Tr S / d (enters the teacher overlap) */
} aim_overlaps;

/* Observable columns shared by the ODE and SGD outputs. */
enum {
    AIM_OBS_RISK = 0,
    AIM_OBS_OVERLAP,  /* Frobenius cosine of the traceless parts */
    AIM_OBS_OMEGA_SS, /* Omega(S, S)  */
    AIM_OBS_PSI_SS,   /* Psi(S, S)    */
    AIM_OBS_OMEGA_ST, /* Omega(S, S*) */
    AIM_OBS_PSI_ST,   /* Psi(S, S*)   */
    AIM_OBS_TRACE,    /* Tr S / d     */
    AIM_OBS_MEAN,     /* Tr S / sqrt d (raw centring) */
    AIM_OBS_COUNT
};

extern const char *const aim_obs_names[AIM_OBS_COUNT];

/* Teacher overlap: (Omega_st - t_s t_t) / sqrt((Omega_ss - t_s^2)
 * (Omega_tt - t_t^2)); 0 when either traceless part vanishes. */
double aim_overlaps_teacher_overlap(const aim_overlaps *q);

/* Fills every observable but the risk (which needs the expectation
 * engine, see aim_gauss_observables). */
void aim_overlaps_observables(const aim_overlaps *q, double obs[AIM_OBS_COUNT]);

#endif
