/* aim_threading: one BLAS thread, and OpenMP's idle threads asleep (see
 * threading.h). With GNU libgomp's default wait policy a thread that
 * finished its share of a parallel region spins for about 3 ms
 * (GOMP_SPINCOUNT 300000) before it sleeps; the hierarchy's right-hand
 * side opens the engine's region many times a step with serial work
 * (CVODE, BLAS) between them, so the idle threads spin through most of
 * it: measured in README.md (--threads), on 2 threads the order-6 tied
 * hierarchy took 5.5 times the CPU of one thread (the median of 4 runs;
 * 3.2 to 11), passive the same. */
#include "threading.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef AIM_HAVE_OPENBLAS_THREADS
#include <cblas.h>
#endif

#include "cores.h"
#include "gauss.h"
#include "progress.h"
#include "ranks.h"

int aim_threading_default(void)
{
    const int n = aim_cores_available();
    return n < AIM_GAUSS_MAX_THREADS ? n : AIM_GAUSS_MAX_THREADS;
}

/* argv as main received it, NULL-terminated (NULL: out of memory) */
static char **kept;

void aim_threading_init(int argc, char **argv)
{
    kept = malloc(sizeof *kept * ((size_t)argc + 1));
    if (kept) {
        memcpy(kept, argv, sizeof *kept * (size_t)argc);
        kept[argc] = NULL;
    }
    if (getenv("OPENBLAS_NUM_THREADS") || getenv("GOTO_NUM_THREADS"))
        return;
    /* the variable for the image aim_threading_passive starts (OpenBLAS
     * reads it as it is loaded) and for any library loaded later */
    setenv("OPENBLAS_NUM_THREADS", "1", 1);
#ifdef AIM_HAVE_OPENBLAS_THREADS
    openblas_set_num_threads(1);
#endif
}

void aim_threading_passive(const char *cmd)
{
    if (aim_gauss_threads() < 2 || !kept || getenv("OMP_WAIT_POLICY") ||
        getenv("GOMP_SPINCOUNT") || aim_ranks_started())
        return;
    /* the options are being read: nothing has been written, nothing is
     * lost with this image */
    if (setenv("OMP_WAIT_POLICY", "passive", 1))
        return;
    execv("/proc/self/exe", kept);
    const int err = errno;
    unsetenv("OMP_WAIT_POLICY");
    aim_progress_note("aimdyn %s: note: could not start again with OMP_WAIT_POLICY=passive "
                      "(execv /proc/self/exe: %s): idle OpenMP threads spin for a while "
                      "before they sleep, which costs CPU time on a busy machine; set "
                      "OMP_WAIT_POLICY=passive\n",
                      cmd, strerror(err));
}
