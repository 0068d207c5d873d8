/* aim_family: what a matrix of one family (a decomposition of config.h:
 * direct, tied, untied) is, for the student and the teacher alike: the
 * teacher is a matrix of one of the students' families. Each family's
 * table sits in its own file (family_direct.c, family_tied.c,
 * family_untied.c), below the equations and the model files, so that
 * those, the starts (draw, inform) and the ODE and SGD layers ask the
 * family instead of testing the decomposition. A new student adds its
 * table and one line to the lookup in family.c (and its aim_model_ops to
 * the registry, registry.c). */
#ifndef AIM_FAMILY_H
#define AIM_FAMILY_H

#include "config.h"
#include "family_ops.h"

/* The family of the decomposition k (config.h), NULL for none. */
const aim_family *aim_family_of(aim_decomposition k);

/* aim_family_of(s->decomposition)->start_overlaps (see there). */
void aim_family_start_overlaps(const aim_matrix_spec *s, double *omega, double *psi,
                               double *trace);

/* 1 when every matrix of the student's and of the teacher's families is
 * symmetric (tied and tied): Psi = Omega for the pair, and the
 * expectation engine drops the antisymmetric coordinates
 * (aim_gauss_create). */
int aim_family_symmetric_pair(const aim_config *cfg);

/* 1 when the matrix s describes is symmetric: its family's always are, or
 * the family takes the symmetric key and s sets it. */
int aim_family_spec_symmetric(const aim_matrix_spec *s);

#endif
