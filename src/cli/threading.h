/* aim_threading: how aimdyn's threads behave without being told: one
 * BLAS thread in every process (the expectation engine's threads, the
 * matrix process's replicas and the worker processes are the
 * parallelism), and OpenMP threads that sleep when idle rather than spin
 * beside the one thread that works between two parallel regions. */
#ifndef AIM_CLI_THREADING_H
#define AIM_CLI_THREADING_H

/* The engine's threads when neither --threads nor OMP_NUM_THREADS says:
 * the cores this process may use (aim_cores_available), at most
 * AIM_GAUSS_MAX_THREADS. */
int aim_threading_default(void);

/* At the start of main: keeps argv as given (getopt reorders it) for
 * aim_threading_passive, and gives BLAS one thread unless
 * OPENBLAS_NUM_THREADS or GOTO_NUM_THREADS is set. */
void aim_threading_init(int argc, char **argv);

/* Before the engine runs on more than one thread (aim_gauss_threads() >
 * 1): unless OMP_WAIT_POLICY or GOMP_SPINCOUNT is set, aimdyn starts
 * itself again, the same process with the same arguments (execv of
 * /proc/self/exe), with OMP_WAIT_POLICY=passive: GNU libgomp reads it
 * once, as it is loaded, before main. Not after MPI started (the new
 * image would start it again). Returns when it did not (a note names why
 * when the execv failed). */
void aim_threading_passive(const char *cmd);

#endif
