/* What a run needs against what the machine has (see memory.h). */
#include "memory.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include "compare.h"
#include "gauss.h"
#include "mlimit.h"
#include "model.h"
#include "sgd.h"

#define GB 1e9

/* The bytes the run may take, into *bytes, and where that comes from
 * into source: 0, or -1 after a message (AIMDYN_MEMORY_GB malformed). */
static int machine_memory(const char *cmd, double *bytes, const char **source)
{
    const char *cap = getenv("AIMDYN_MEMORY_GB");
    if (cap && *cap) {
        char *end;
        errno = 0;
        const double v = strtod(cap, &end);
        if (*end || errno || !(v > 0) || !isfinite(v)) {
            fprintf(stderr, "aimdyn %s: AIMDYN_MEMORY_GB = '%s': not a number of gigabytes; "
                            "allowed: a real number > 0 (the memory a run may take), or unset "
                            "(the machine's physical memory)\n", cmd, cap);
            return -1;
        }
        *bytes = v * GB;
        *source = "AIMDYN_MEMORY_GB";
        return 0;
    }
    const long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGE_SIZE);
    /* unknown: no bound from here (malloc's failure is then the check) */
    *bytes = pages > 0 && size > 0 ? (double)pages * (double)size : INFINITY;
    *source = "physical memory";
    /* a process limited below that (ulimit -v: a batch job's share) */
    struct rlimit limit;
    if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY &&
        (double)limit.rlim_cur < *bytes) {
        *bytes = (double)limit.rlim_cur;
        *source = "the address-space limit of a process, ulimit -v";
    }
    return 0;
}

/* bytes as "%.3g GB", or MB below 1 GB, into buf (size SIZE_TEXT) */
enum { SIZE_TEXT = 32 };
static const char *size_text(double bytes, char *buf)
{
    snprintf(buf, SIZE_TEXT, "%.3g %s", bytes >= GB ? bytes / GB : bytes / 1e6,
             bytes >= GB ? "GB" : "MB");
    return buf;
}

/* need bytes in all, one bytes per unit ("SUBJECT needs ONE per UNIT");
 * 0, or -1 after a message. */
static int fits(const char *cmd, double need, double one, const char *subject,
                const char *unit, const char *allowed)
{
    double have;
    const char *source;
    if (machine_memory(cmd, &have, &source))
        return -1;
    if (need <= have)
        return 0;
    char one_text[SIZE_TEXT], need_text[SIZE_TEXT], have_text[SIZE_TEXT];
    fprintf(stderr, "aimdyn %s: %s needs %s per %s = %s; this machine has %s (%s); allowed: at "
                    "most %s in all: %s\n", cmd, subject, size_text(one, one_text), unit,
            size_text(need, need_text), size_text(have, have_text), source, have_text, allowed);
    return -1;
}

int aim_cli_sgd_memory_fits(const char *cmd, const aim_config *cfg, int d, int jobs,
                            int moment_len)
{
    char why[400], subject[300], unit[200];
    if (aim_sgd_fits(cfg, d, why, sizeof why)) {
        fprintf(stderr, "aimdyn %s: %s\n", cmd, why);
        return -1;
    }
    const int workers = jobs < cfg->seeds ? jobs : cfg->seeds;
    const double seed = aim_compare_seed_bytes(cfg, d, moment_len);
    snprintf(subject, sizeof subject, "d = %d (sgd.d, --d) with sgd.holdout = %d, model.tokens "
                                      "= %d%s", d, cfg->holdout, cfg->tokens,
             cfg->decomposition == AIM_DIRECT ? "" : " and student.rho");
    snprintf(unit, sizeof unit, "SGD worker (x %d worker%s, --jobs and sgd.seeds)", workers,
             workers == 1 ? "" : "s");
    return fits(cmd, seed * workers, seed, subject, unit,
                "a smaller d, sgd.holdout or student.rho, or fewer --jobs");
}

int aim_cli_matrix_memory_fits(const char *cmd, const aim_config *cfg, int runs, int threads)
{
    /* a hierarchy hands over to the process where its truncation fails
     * (hierarchy.beyond = matrix): whether it will is known only then, so
     * the process must fit from the start */
    const int hands_over = aim_model_ops_of(cfg)->hierarchy && cfg->beyond == AIM_BEYOND_MATRIX;
    if (cfg->method != AIM_METHOD_MATRIX && !hands_over)
        return 0;
    const int at_once = threads < cfg->replicas ? threads : cfg->replicas;
    const double one = aim_mlimit_bytes(cfg, cfg->matrix_d);
    char subject[300], unit[300];
    snprintf(subject, sizeof subject, "the matrix limit process%s at matrix.d = %d%s",
             cfg->method == AIM_METHOD_MATRIX ? "" : " (the hand-over, hierarchy.beyond = matrix)",
             cfg->matrix_d, cfg->decomposition == AIM_DIRECT ? "" : " with student.rho");
    if (runs > 1)
        snprintf(unit, sizeof unit, "replica (x %d at a time: matrix.replicas, --threads; x %d "
                                    "runs at once: --jobs)", at_once, runs);
    else
        snprintf(unit, sizeof unit, "replica (x %d at a time: matrix.replicas, --threads)",
                 at_once);
    return fits(cmd, one * at_once * runs, one, subject, unit,
                cfg->method == AIM_METHOD_MATRIX
                    ? "a smaller matrix.d or student.rho, or fewer --threads or --jobs"
                    : "a smaller matrix.d or student.rho, fewer --threads or --jobs, or "
                      "hierarchy.beyond = stop");
}

int aim_cli_start_memory_fits(const char *cmd, const aim_config *cfg, int d, int jobs)
{
    char why[400], subject[300], unit[200];
    if (aim_sgd_fits(cfg, d, why, sizeof why)) {
        fprintf(stderr, "aimdyn %s: %s\n", cmd, why);
        return -1;
    }
    /* a start draws the matrices SGD would start from (draw.h) and
     * measures them: what aim_sgd_create holds, less the held-out data
     * (recovery's finite-d seeds; a hierarchy's hierarchy.start = seed) */
    const int workers = jobs < cfg->seeds ? jobs : cfg->seeds;
    const double seed = aim_sgd_bytes(cfg, d);
    snprintf(subject, sizeof subject, "a finite-d start at d = %d (--d)%s", d,
             cfg->decomposition == AIM_DIRECT ? "" : " with student.rho");
    snprintf(unit, sizeof unit, "seed (x %d worker%s, --jobs and --seeds)", workers,
             workers == 1 ? "" : "s");
    return fits(cmd, seed * workers, seed, subject, unit,
                "a smaller d or student.rho, or fewer --jobs");
}
