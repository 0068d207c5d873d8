/* aim_ranks: the processes of an MPI job (mpirun, srun) sharing one
 * campaign. Every MPI call of aimdyn is in ranks.c; built without MPI
 * (meson -Dmpi=disabled, or no MPI found) the functions below are those
 * of a job of one rank, so that their callers need no #ifdef.
 *
 * How the ranks share a campaign (docs/scaling.md): every rank runs the
 * same command line. Rank 0 alone takes the output locks, removes what a
 * killed run left, reads the seed (point) files that a previous run
 * finished and sends the list of those still to do to every rank; rank r
 * computes the entries k = r, r + R, r + 2R, ... of that list on its own
 * workers (aim_pool) and writes each result into its seed (point) file,
 * exactly as a serial run does. After a barrier rank 0 reads every file
 * back and writes the summaries: the same bytes as a serial run, since
 * what it assembles comes from the same files. The other ranks write
 * nothing else. The files must be on a file system that every rank sees.
 *
 * MPI is started only when the process was launched by an MPI launcher
 * (the environment of OpenMPI, PMI or PMIx says so): a serial run never
 * touches MPI, so it needs no MPI daemon nor network. */
#ifndef AIM_RANKS_H
#define AIM_RANKS_H

/* Starts MPI when launched by mpirun/srun (see above). Returns 0, or -1
 * after a message (MPI would not start). */
int aim_ranks_init(int *argc, char ***argv);

/* This process's rank and the job's number of ranks (0 and 1 without
 * MPI). */
int aim_ranks_rank(void);
int aim_ranks_count(void);
/* Whether MPI was started (launched by mpirun or srun, even as one rank). */
int aim_ranks_started(void);

/* Sends rank 0's tasks[0 .. *ntasks - 1] (ntasks at most max) and its
 * status to every rank: the others receive them into tasks and ntasks.
 * Returns the status rank 0 sent (0 or -1: every rank then stops). */
int aim_ranks_share(int status, int *tasks, int *ntasks, int max);

/* Waits until every rank has come here. */
void aim_ranks_barrier(void);

/* The end of the process with exit code rc: with several ranks, a rank
 * that failed (failed not 0: it may have left before the others' next
 * aim_ranks_share or barrier) ends the whole job (MPI_Abort with rc)
 * rather than leave them waiting, unless the failure was rank 0's, sent
 * to every rank by aim_ranks_share (they all stop alike); otherwise MPI
 * is finalized. Returns rc. */
int aim_ranks_end(int rc, int failed);

#endif
