/* The SGD side of saved states (validate/state.h), apart from the
 * installed sgd.h: what each student's state holds, for the reader, and
 * the writing of a seed's matrices. Defined in sgd.c. */
#ifndef AIM_SGD_STATE_H
#define AIM_SGD_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "sgd.h"
#include "state.h"

/* The arrays of the learned parameters of decomposition k's student, as
 * a saved state holds them (the student's aim_sgd_student.saved), NULL
 * for no student: the layout aim_state_read is given. */
const aim_state_arrays *aim_sgd_state_arrays(int decomposition);

/* Writes sgd's matrices (seed `seed`, at grid point `point` of tau
 * `tau`, run configuration cfg) to the state file path (aim_state_write).
 * Returns 0, or -1 with the reason in err (size n). */
int aim_sgd_write_state(const char *path, const aim_sgd *sgd, const aim_config *cfg,
                        uint64_t seed, double tau, int point, char *err, size_t n);

#endif
