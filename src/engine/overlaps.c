/* aim_overlaps: observables derived from the order parameters. */
#include "overlaps.h"

#include <math.h>

const char *const aim_obs_names[AIM_OBS_COUNT] = {
    [AIM_OBS_RISK] = "risk",         [AIM_OBS_OVERLAP] = "overlap",
    [AIM_OBS_OMEGA_SS] = "omega_ss", [AIM_OBS_PSI_SS] = "psi_ss",
    [AIM_OBS_OMEGA_ST] = "omega_st", [AIM_OBS_PSI_ST] = "psi_st",
    [AIM_OBS_TRACE] = "trace",       [AIM_OBS_MEAN] = "mean",
};

/* Squared Frobenius norm / d of the traceless part of S_i:
 * Tr((S - t I)(S - t I)^T)/d = Omega(S, S) - t^2. */
static double traceless_norm2(const aim_overlaps *q, int i)
{
    return q->omega[i][i] - q->trace[i] * q->trace[i];
}

/* A traceless part counts as zero when its squared norm is at round-off
 * level relative to Omega(S, S) (e.g. S = c I measured from a matrix). */
static int negligible(double norm2, double omega)
{
    return norm2 <= 1e-13 * fabs(omega);
}

double aim_overlaps_teacher_overlap(const aim_overlaps *q)
{
    double ns = traceless_norm2(q, 0);
    double nt = traceless_norm2(q, 1);
    if (isnan(ns) || isnan(nt))
        return NAN;
    if (negligible(ns, q->omega[0][0]) || negligible(nt, q->omega[1][1]))
        return 0.0;
    /* Tr((S - t_s I)(S* - t_t I)^T)/d = Omega(S, S*) - t_s t_t. */
    double c = (q->omega[0][1] - q->trace[0] * q->trace[1]) / sqrt(ns * nt);
    /* Cauchy-Schwarz: |c| <= 1 up to round-off. */
    if (c > 1.0)
        c = 1.0;
    else if (c < -1.0)
        c = -1.0;
    return c;
}

void aim_overlaps_observables(const aim_overlaps *q, double obs[AIM_OBS_COUNT])
{
    obs[AIM_OBS_OVERLAP] = aim_overlaps_teacher_overlap(q);
    obs[AIM_OBS_OMEGA_SS] = q->omega[0][0];
    obs[AIM_OBS_PSI_SS] = q->psi[0][0];
    obs[AIM_OBS_OMEGA_ST] = q->omega[0][1];
    obs[AIM_OBS_PSI_ST] = q->psi[0][1];
    obs[AIM_OBS_TRACE] = q->trace[0];
    obs[AIM_OBS_MEAN] = q->mean[0];
}
