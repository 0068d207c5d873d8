/* aim_ranks: MPI, or a job of one rank without it (see ranks.h). */
#include "ranks.h"

#include <stdio.h>
#include <stdlib.h>

#ifdef AIM_HAVE_MPI
#include <mpi.h>

static int rank, count = 1, started;
/* rank 0 sent every rank a failure: they all stop in step, none to abort */
static int failure_shared;

/* The variables that OpenMPI's mpirun, a PMI launcher (MPICH's hydra,
 * srun --mpi=pmi2) and a PMIx one (srun --mpi=pmix) give each rank. A
 * process without them is a serial run: MPI_Init there would start a
 * singleton MPI (OpenMPI forks a daemon for it), which a run that needs
 * no MPI must not depend on. */
static int launched_by_mpi(void)
{
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK");
}

int aim_ranks_init(int *argc, char ***argv)
{
    if (!launched_by_mpi())
        return 0;
    if (MPI_Init(argc, argv) != MPI_SUCCESS) {
        fprintf(stderr, "aimdyn: MPI_Init failed (launched by mpirun or srun)\n");
        return -1;
    }
    started = 1;
    /* MPI's default handler on MPI_COMM_WORLD aborts the job on an error,
     * so the calls below need no status checks of their own */
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &count);
    return 0;
}

int aim_ranks_rank(void)
{
    return rank;
}

int aim_ranks_count(void)
{
    return count;
}

int aim_ranks_started(void)
{
    return started;
}

int aim_ranks_share(int status, int *tasks, int *ntasks, int max)
{
    if (count == 1)
        return status;
    int head[2] = {status, status ? 0 : *ntasks};
    MPI_Bcast(head, 2, MPI_INT, 0, MPI_COMM_WORLD);
    if (head[0] != 0) {
        failure_shared = 1;
        return head[0];
    }
    if (head[1] < 0 || head[1] > max) { /* the same on every rank: all stop */
        fprintf(stderr, "aimdyn: rank %d: %d tasks from rank 0, at most %d expected\n", rank,
                head[1], max);
        failure_shared = 1;
        return -1;
    }
    *ntasks = head[1];
    if (*ntasks > 0)
        MPI_Bcast(tasks, *ntasks, MPI_INT, 0, MPI_COMM_WORLD);
    return 0;
}

void aim_ranks_barrier(void)
{
    if (count > 1)
        MPI_Barrier(MPI_COMM_WORLD);
}

int aim_ranks_end(int rc, int failed)
{
    if (!started)
        return rc;
    /* MPI_Abort only for a failure the other ranks do not know of (two
     * ranks aborting at once crash OpenMPI 4.1's mpirun) */
    if (failed && count > 1 && !failure_shared) {
        fprintf(stderr, "aimdyn: rank %d of %d failed (exit status %d): ending every rank\n",
                rank, count, rc);
        MPI_Abort(MPI_COMM_WORLD, rc);
    }
    MPI_Finalize();
    return rc;
}

#else /* a job of one rank */

int aim_ranks_init(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

int aim_ranks_rank(void)
{
    return 0;
}

int aim_ranks_count(void)
{
    return 1;
}

int aim_ranks_started(void)
{
    return 0;
}

int aim_ranks_share(int status, int *tasks, int *ntasks, int max)
{
    (void)tasks;
    (void)ntasks;
    (void)max;
    return status;
}

void aim_ranks_barrier(void)
{
}

int aim_ranks_end(int rc, int failed)
{
    (void)failed;
    return rc;
}

#endif
