/* What drift_late's modes share (drift_late.c: the reference, the setup,
 * the drift and run modes, main; drift_late_linear.c: the jacobian and
 * gram modes): the reference's table, the context every mode works on,
 * and the right-hand sides at given moments (drift_late_context.c, which
 * calls neither mode file). Internal to the benchmark. */
#ifndef AIM_DRIFT_LATE_CONTEXT_H
#define AIM_DRIFT_LATE_CONTEXT_H

#include <gsl/gsl_matrix.h>

#include "config.h"
#include "hierarchy.h"
#include "quadrature.h"
#include "tied.h"
#include "words.h"

/* The reference's table: rows x cols numbers and the header's names. */
typedef struct {
    int rows, cols;
    char **names;
    double *x;
} table;

/* Everything the modes share. */
typedef struct {
    aim_config cfg;
    aim_tied *m;
    const aim_hierarchy *h;
    const aim_wordset *ws;
    int M, n, count, first_long, w_s, w_ss, w_st;
    table ref;
    int col_tau, col_overlap, col_risk;
    double *teacher; /* moments of the pure-teacher words (count) */
    double *z;       /* rows x count: every word at every grid point */
    double jac_step; /* relative step of the Jacobian's differences */
    double *zse;     /* rows x count: standard errors (m(S), m(SS), m(ST) only; else 0) */
} ctx;

/* The reference's tau at grid point (row) r. */
double drift_late_ref_tau(const ctx *c, int r);

/* Tracked words of every word vector (the state y). */
void drift_late_tracked_of(const ctx *c, const double *mom, double *y);

/* The right-hand side at every word's moment mom (no closure). */
int drift_late_rhs_at(ctx *c, const double *mom, double *dy);

/* Every word's moment from the tracked words y, closed by the quadrature
 * at the given floor (the prior of the even-M completion: the aligned
 * closure, as src/hierarchy/truncation.c does). */
int drift_late_quadrature_moments(ctx *c, aim_quadrature *q, const double *y, double *mom);

/* d overlap / d (m(S), m(SS), m(ST)) at mom, analytically. */
void drift_late_overlap_gradient(const ctx *c, const double *mom, double grad[3]);

#endif
