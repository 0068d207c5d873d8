/* aim_direct: the closed limit ODE of direct attention (S learned as a
 * d x d matrix) in the slow time tau = n eta / d^2; derivation in
 * theory/direct.md. State: Omega(S,S), Psi(S,S), Omega(S,S*), Psi(S,S*),
 * and Tr S / d (centred) or the mean m = Tr S / sqrt d (raw; its
 * equation carries the factor d of the fast clock t = n eta / d). */
#ifndef AIM_DIRECT_H
#define AIM_DIRECT_H

#include "config.h"
#include "gauss.h"
#include "overlaps.h"

#define AIM_DIRECT_SIZE 5

typedef struct aim_direct aim_direct;

/* d: the dimension of the raw-mode mean equation and of the O(1/d)
 * teacher-mean terms; 0 means the limit d -> infinity (centred only). */
aim_direct *aim_direct_create(const aim_config *cfg, double d,
                              aim_gauss_rule rule);
void aim_direct_free(aim_direct *m);
/* The expectation engine (its point count and kernel error estimate). */
aim_gauss *aim_direct_gauss(aim_direct *m);

/* Names of the state components, for output headers. */
const char *aim_direct_state_name(void *ctx, int i);

/* Exact large-d initial state: independent Gaussian student and teacher,
 * or the informed start of student.overlap > 0 (src/students/inform.h; teacher
 * order parameters from its family). */
void aim_direct_initial(const aim_direct *m, double y[AIM_DIRECT_SIZE]);

/* State measured from given order parameters (e.g. an SGD seed). The
 * teacher's order parameters are taken from q as well. */
void aim_direct_state_from(aim_direct *m, const aim_overlaps *q,
                           double y[AIM_DIRECT_SIZE]);

void aim_direct_overlaps(const aim_direct *m, const double y[AIM_DIRECT_SIZE],
                         aim_overlaps *q);

/* Right-hand side dy/dtau split into its terms: first-order (gradient),
 * second-order (SGD noise, proportional to eta) and weight decay; any
 * of the three may be NULL. Returns 0, or -1 (see aim_direct_error). */
int aim_direct_terms(aim_direct *m, const double y[AIM_DIRECT_SIZE],
                     double *gradient, double *noise, double *decay);
/* Raw centring: the gradient term of the mean split into its fast part
 * -d E[sum_ab e_ab C_ab] and its O(1) part -A~_I (theory/direct.md sec.
 * 2.6); they add to the mean's gradient term of aim_direct_terms. Returns
 * 0, or -1 (see aim_direct_error; also for centred indices). */
int aim_direct_mean_parts(aim_direct *m, const double y[AIM_DIRECT_SIZE], double *fast,
                          double *slow);
int aim_direct_rhs(aim_direct *m, const double y[AIM_DIRECT_SIZE],
                   double dy[AIM_DIRECT_SIZE]);
const char *aim_direct_error(const aim_direct *m);

/* The validity margins at y (theory/stops.md sec. 1): continuous, >= 0
 * while the order parameters are those of real matrices, AIM_DIRECT_MARGINS
 * of them, each named by aim_direct_margin_text. */
#define AIM_DIRECT_MARGINS 2
void aim_direct_margins(const aim_direct *m, const double y[AIM_DIRECT_SIZE], double *g);
const char *aim_direct_margin_text(int k);

/* Observables (risk included) at state y. Returns 0 or -1. */
int aim_direct_observables(aim_direct *m, const double y[AIM_DIRECT_SIZE],
                           double obs[AIM_OBS_COUNT]);

#endif
