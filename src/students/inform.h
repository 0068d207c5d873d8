/* aim_inform: the informed start, a student whose teacher overlap (the
 * overlap column, theory/model.md sec. 6) starts at student.overlap in
 * the limit d -> infinity, for the ODE and for SGD alike
 * (theory/model.md sec. 4, "Informed start"). The student's matrices mix
 * the teacher's with the fresh Gaussian ones of a random start through
 * one coefficient c in [0, 1]:
 *   - direct: S = alpha P(S* - (t* + m* / sqrt d) I) + sqrt(1 - c^2) G, with
 *     t* the teacher's large-d trace Tr(S*)/d without its raw mean m*, P
 *     the identity (or the symmetric part for a symmetric student), G the
 *     random start and alpha = c sqrt(v / Omega(P(.), P(.))) so that
 *     Omega(S, S) stays v;
 *   - tied (teacher tied) and untied (teacher tied or untied): each
 *     student factor X of scale v_X (W; U, V) takes, in its first
 *     q = min(p, p*) columns, c sqrt(v_X / v*) times the same columns of
 *     its teacher factor (W*; U*, V*, or W* for both U and V) plus
 *     sqrt(1 - c^2) times its own random start; the other columns keep
 *     the random start. Every factor keeps its i.i.d. N(0, v_X/d) law.
 * c = 0 is the random start; c is the root of overlap(c) =
 * student.overlap (closed form for direct, GSL's Brent solver on the
 * planar moments otherwise). */
#ifndef AIM_INFORM_H
#define AIM_INFORM_H

#include <stddef.h>

#include "config.h"
#include "family.h"

/* c for cfg (0 when student.overlap = 0). Returns 0, or -1 with a
 * message naming student.overlap in err (n bytes) when the student and
 * teacher families have no informed start or the overlap is above the
 * largest this construction reaches (c = 1). */
int aim_inform_mixing(const aim_config *cfg, double *c, char *err, size_t n);

/* The factors, links and letters (family.h) of a factored (tied or
 * untied) student and its teacher at coefficient c, from the student's
 * family (aim_family.inform; cfg's student has factors). Returns 0, or
 * -1 with a message in err for a student/teacher pair without an
 * informed start. */
int aim_inform_describe(const aim_config *cfg, double c, aim_inform_planar *out, char *err,
                        size_t n);

/* A direct student's informed start at coefficient c: the mixing
 * S = alpha P(S* - (t* + m* / sqrt d) I) + beta G and its large-d order
 * parameters, Omega and Psi of S with itself and with S* (its trace and
 * mean are those of the random start: 0). */
typedef struct {
    double alpha, beta;
    double omega_ss, psi_ss, omega_st, psi_st;
} aim_inform_direct_start;

/* Returns 0, or -1 with a message in err. */
int aim_inform_direct(const aim_config *cfg, double c, aim_inform_direct_start *out,
                      char *err, size_t n);

/* The teacher's large-d trace Tr(S*)/d without its raw mean (its
 * family's start trace: rho* v* for tied, 0 otherwise): what the direct
 * construction removes. */
double aim_inform_teacher_trace(const aim_config *cfg);

#endif
