/* aim_tied: the limit ODE of tied attention (S = W W^T, W d x rho d) in
 * the slow time tau = n eta / d^2: the moment hierarchy in the letters
 * S (student) and T (the symmetric teacher S*) truncated at order
 * M = cfg->order, with the closure cfg->closure for the words of length
 * M + 1 (theory/tied.md). State: the moments m(w) = Tr(w)/d of every
 * word of length 1..M with at least one S, shortest first. */
#ifndef AIM_TIED_H
#define AIM_TIED_H

#include <stddef.h>

#include "config.h"
#include "gauss.h"
#include "hierarchy.h"
#include "overlaps.h"

typedef struct aim_tied aim_tied;

/* NULL with a message in err (size n) on failure. The start is the
 * exact large-d one (cfg->start is applied by the caller through
 * aim_tied_set_start). */
aim_tied *aim_tied_create(const aim_config *cfg, aim_gauss_rule rule,
                          char *err, size_t n);
void aim_tied_free(aim_tied *m);
/* The expectation engine (its point count and kernel error estimate). */
aim_gauss *aim_tied_gauss(aim_tied *m);

const aim_hierarchy *aim_tied_hierarchy(const aim_tied *m);
int aim_tied_size(const aim_tied *m);
/* "m(SST)": the name of state component i */
const char *aim_tied_state_name(void *m, int i);
/* State components that are order parameters (length <= 2), first in
 * the state: the ones watched for blow-up. */
int aim_tied_order_parameters(const aim_tied *m);

/* Moments of every word of the hierarchy's word set (lengths 0..M + 1)
 * at the start: exact free values of independent Gaussian student and
 * teacher (student free cumulants rho v^n; teacher rho* v*^n when tied,
 * semicircle kappa_2 = v* when direct symmetric). */
const double *aim_tied_start_moments(const aim_tied *m);
/* Replaces the start by measured moments (same indexing; e.g. from an
 * SGD seed's initial matrices): the teacher's moments and the initial
 * closure then use them too. */
void aim_tied_set_start(aim_tied *m, const double *moments);
void aim_tied_initial(const aim_tied *m, double *y);

/* The right-hand side split into first-order (gradient), second-order
 * (SGD noise) and weight-decay terms (any may be NULL). Returns 0 or -1
 * (aim_tied_error). */
int aim_tied_terms(aim_tied *m, const double *y, double *gradient,
                   double *noise, double *decay);
int aim_tied_rhs(aim_tied *m, const double *y, double *dy);
/* The same terms at given moments of every word up to length M + 1 (no
 * closure): the drift tests evaluate the rules at measured moments. */
int aim_tied_terms_at(aim_tied *m, const double *moments, double *gradient,
                      double *noise, double *decay);
/* Moments of every word (lengths 0..M + 1) at state y, closure applied.
 * -1 (the message in the error) where the closure fails
 * (aim_truncation_close): the long words are then not the closure's. The
 * right-hand side and the observables fail there; the margins and the
 * overlap, which CVODE's root finding needs as plain values, go on with
 * the closure's prior (the failed right-hand side stops the run). */
int aim_tied_moments(aim_tied *m, const double *y, double *moments);
/* Order parameters of {S, S*} from moments of every word. */
void aim_tied_overlaps(const aim_tied *m, const double *moments, aim_overlaps *q);
/* The validity margins at y (theory/stops.md sec. 1): continuous
 * functions of the state, >= 0 while the low moments can be those of a
 * positive semi-definite S and a symmetric S*: m(S) >= 0, m(SS) >= m(S)^2
 * (M >= 2), m(SS)^2 <= m(S) m(SSS) (M >= 3), and the Cauchy-Schwarz
 * inequality of the traceless parts (|overlap| <= 1, unclamped). A
 * truncated hierarchy leaves this set when its closure error has grown;
 * the ODE driver stops where a margin turns negative. g has
 * aim_tied_margin_count entries; aim_tied_margin_text names each. */
int aim_tied_margin_count(const aim_tied *m);
void aim_tied_margins(aim_tied *m, const double *y, double *g);
const char *aim_tied_margin_text(const aim_tied *m, int k);
/* 0 when every margin at y is >= 0; else -1 with the violated
 * condition in aim_tied_error. */
int aim_tied_check(aim_tied *m, const double *y);
/* 1 when the last right-hand side failed because its moments were not
 * those of any pair of matrices (the Gram matrix of S and S* not positive
 * semi-definite): a truncation that left the valid moments. */
int aim_tied_left_valid(const aim_tied *m);
int aim_tied_observables(aim_tied *m, const double *y, double obs[AIM_OBS_COUNT]);
/* The teacher overlap at y (no expectation engine involved). */
double aim_tied_overlap(aim_tied *m, const double *y);
const char *aim_tied_error(const aim_tied *m);

#endif
