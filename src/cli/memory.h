/* The memory a run needs, checked against what the machine has before
 * anything is allocated: a size that cannot fit is refused with the
 * number, instead of failing when malloc does (or when the kernel ends
 * the process). The need comes from the configuration alone, through the
 * estimates beside the code that allocates (aim_compare_seed_bytes,
 * aim_mlimit_bytes); what the machine has is its physical memory (or
 * the address-space limit of a process, ulimit -v, when lower), or the
 * cap AIMDYN_MEMORY_GB (gigabytes of 1e9 bytes) when that is set. */
#ifndef AIM_CLI_MEMORY_H
#define AIM_CLI_MEMORY_H

#include "config.h"

/* The SGD seeds of cfg at d on jobs worker processes (at most one per
 * seed), each measuring the moments of words up to moment_len letters
 * (0: none): 0, or -1 after "aimdyn CMD: ..." naming the need, the
 * workers, the memory and what is allowed (also when the student's sizes
 * overflow the BLAS lengths, aim_sgd_fits). */
int aim_cli_sgd_memory_fits(const char *cmd, const aim_config *cfg, int d, int jobs,
                            int moment_len);

/* The matrix limit process of cfg (ode.method = matrix, or a hierarchy
 * that may hand over to it, hierarchy.beyond = matrix): matrix.replicas
 * replicas, as many at a time as each run has engine threads (threads:
 * a pool's workers run one unless --threads is given), in runs
 * processes at once (a sweep's workers; else 1). 0 (also when cfg does
 * not use it), or -1 after a message as above. */
int aim_cli_matrix_memory_fits(const char *cmd, const aim_config *cfg, int runs, int threads);

/* The finite-d starts of cfg at d (the matrices SGD would start from,
 * drawn and measured: recovery's seeds, a hierarchy's start on SGD seed
 * sgd.seed) on jobs worker processes (at most one per seed): 0, or -1
 * after a message as above. */
int aim_cli_start_memory_fits(const char *cmd, const aim_config *cfg, int d, int jobs);

#endif
