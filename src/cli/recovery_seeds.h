/* aim_recovery_seeds: the finite-d starts of `aimdyn recovery` (the limit
 * ODE from the initial matrices of each SGD seed at one dimension)
 * computed by worker processes (aim_pool), each seed's result kept in a
 * file of its own as it finishes, DIR/.NAME-recovery-dD.seeds/seed-K.tsv,
 * so that a rerun of an interrupted run takes the finished seeds from
 * there, as aim_seeds does for the SGD seeds of sgd and compare.
 *
 * The seed files record the run's configuration and the aimdyn version,
 * and every value to 17 significant digits, which read back to the same
 * double; every seed, computed or kept, is read from its file: the
 * results are bit-identical for every number of workers. A seed file of
 * another version is computed again (said); one of another configuration
 * is refused (remove the folder or choose another --name). */
#ifndef AIM_RECOVERY_SEEDS_H
#define AIM_RECOVERY_SEEDS_H

#include "atomic.h"
#include "config.h"
#include "recovery.h"

/* What aim_recovery_finite_run(cfg, d, cfg->seeds, ...) computes, into
 * out (free with aim_recovery_finite_free), on jobs workers with one BLAS
 * thread each, the seeds kept as above and their files removed when set
 * is committed (aim_recovery_seeds_remove_dir then removes the folder).
 * Returns 0; 1 on an MPI rank other than 0 once its share of the seeds is
 * written (out then freed; rank 0 reads them, aim_pool_run_seeds); or -1
 * after a message "aimdyn recovery: ..." (the seeds that finished are
 * kept). */
int aim_recovery_seeds_run(const aim_config *cfg, int d, int jobs,
                           const aim_start_source *source, aim_recovery_finite *out,
                           aim_atomic_set *set);

/* After set's commit: removes the seed folder of cfg at d, then empty
 * (a warning when it cannot). */
void aim_recovery_seeds_remove_dir(const aim_config *cfg, int d);

#endif
