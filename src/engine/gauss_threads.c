/* The Gaussian expectation engine's threads: the process-wide thread
 * count, one thread after a fork, and an engine's per-thread work space. */
#include <stdlib.h>

#include "gauss_internal.h"
#include "omp_directive.h"

/* The engine's threads (aim_gauss_set_threads): process-wide, like a
 * BLAS's thread count, since the engines are made deep inside the models
 * and the thread count changes no result. */
static int engine_threads = 1;
/* Whether this process has run a team of threads, and whether it is a
 * child forked after one (aim_gauss_after_fork): one thread from then on. */
static int team_started, team_lost;

int aim_gauss_set_threads(int threads)
{
    if (threads < 1 || threads > AIM_GAUSS_MAX_THREADS)
        return -1;
    engine_threads = threads;
    return 0;
}

int aim_gauss_threads(void)
{
#ifdef _OPENMP
    return team_lost ? 1 : engine_threads;
#else
    return 1;
#endif
}

void aim_gauss_team_started(void)
{
    OMP(omp atomic write)
    team_started = 1;
}

int aim_gauss_after_fork(void)
{
    /* GNU libgomp keeps its thread pool across a fork, though its threads
     * are not there in the child: the child's next team would wait for
     * them for ever */
    team_lost = team_started;
    return team_lost;
}

/* g->work for threads threads (kept for the next evaluation). Returns 0,
 * or -1 when out of memory (the work space as it was). */
int aim_gauss_thread_work(aim_gauss *g, int threads)
{
    if (g->work_threads >= threads)
        return 0;
    const size_t per = (size_t)QMC_BLOCK * g->T2;
    double *work = realloc(g->work, sizeof(double) * per * (size_t)threads);
    if (!work)
        return -1;
    g->work = work;
    g->work_threads = threads;
    return 0;
}
