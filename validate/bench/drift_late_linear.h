/* drift_late's linear modes (drift_late_linear.c; usage: drift_late.c):
 * the Jacobian of the closed hierarchy and the Gram spectrum at the
 * reference's states. Internal to the benchmark. */
#ifndef AIM_DRIFT_LATE_LINEAR_H
#define AIM_DRIFT_LATE_LINEAR_H

#include "drift_late_context.h"

/* Each returns 0, or -1 (said). */
int drift_late_mode_jacobian(ctx *c, const char *taus, double floor);
int drift_late_mode_gram(ctx *c);

#endif
