/* aim_seeds: the SGD seeds of one dimension (sgd, compare), computed by
 * worker processes (aim_pool), each seed's result kept in a file of its
 * own as it finishes, DIR/.NAME-sgd-dD.seeds/seed-K.tsv, so that a rerun
 * of an interrupted run takes the finished seeds from there. An
 * unfinished seed keeps its state in seed-K.ckpt (checkpoint.h) at the
 * first grid point after cfg->checkpoint CPU seconds since the last one;
 * a rerun continues it from there, with the same bits as a seed never
 * interrupted (the checkpoint holds everything the seed's arithmetic
 * depends on, and the seed's calls of aim_sgd_advance are the same). A
 * checkpoint of another version is removed (said), one of another
 * configuration or not whole refused. SIGINT/SIGTERM during the seeds:
 * see aim_pool_run; what was kept is said.
 *
 * The seed files record the run's configuration and the aimdyn version,
 * and every value to 17 significant digits, which read back to the same
 * double: the arrays assembled from them, and so every result file, are
 * bit-identical to those of one process computing the seeds in turn,
 * whatever the number of workers and the interruptions. A seed file of
 * another version is computed again (said); one of another configuration
 * is refused (remove the folder or choose another --name); one that is
 * not whole (its digest, its full list of "# config" lines: seedfile.h)
 * is refused (remove it: its seed is computed again). */
#ifndef AIM_SEEDS_H
#define AIM_SEEDS_H

#include "atomic.h"
#include "compare.h"
#include "config.h"
#include "words.h"

/* What aim_compare_run_sgd_moments(cfg, d, tau, cfg->points, obs, extra,
 * reached, mom) computes (extra not NULL; mom may be NULL), on jobs
 * workers with one BLAS thread each, the seeds kept as above. The seed
 * files are removed when set is committed (aim_seeds_remove_dir then
 * removes their folder). In an MPI job (ranks.h) every rank computes its
 * share of the seeds and rank 0 alone reads them all into the arrays.
 * Returns 0 (the arrays filled), 1 on a rank other than 0 (its seeds
 * written, the arrays not filled), or -1 after a message "aimdyn CMD:
 * ..." (the seeds that finished are kept). */
int aim_seeds_run(const char *cmd, const aim_config *cfg, int d, const double *tau, int jobs,
                  double *obs, double *extra, int *reached, aim_sgd_moments *mom,
                  aim_atomic_set *set);

/* The column name of the moment of word (an aim_wordset index) in the
 * SGD files: "m_SST" for m(SST) (aim_tsv_column_name), into buf (size
 * n), which it returns. */
const char *aim_seeds_moment_column(const aim_wordset *ws, int word, char *buf, size_t n);

/* After set's commit: removes the seed folder of cfg at d, then empty
 * (a warning when it cannot). */
void aim_seeds_remove_dir(const char *cmd, const aim_config *cfg, int d);

#endif
