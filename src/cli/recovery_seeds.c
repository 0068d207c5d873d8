/* aim_recovery_seeds: recovery's finite-d starts on worker processes,
 * kept as they finish (see recovery_seeds.h). As in aim_seeds, the seed
 * file is both what a worker hands back to the parent and what a rerun
 * resumes from. */
#include "recovery_seeds.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "pool.h"
#include "seedfile.h"
#include "tsv.h"

#define CMD "recovery"

typedef struct {
    const aim_config *cfg;
    int d, seeds;
    const aim_start_source *source;
    aim_recovery_finite *out;
    char dir[1100]; /* DIR/.NAME-recovery-dD.seeds */
} recovery_run;

/* The start and end values are teacher overlaps, but not named as such:
 * the table reader holds a column named *overlap* to [-1, 1], and the
 * last value of an ODE that blew up need not be. */
static const char *const seed_columns[] = {"seed",        "start_value", "tau_wr", "tau_end",
                                           "end_value",   "blew_up",     NULL};
static const char seed_file_what[] =
    "a seed file of `aimdyn recovery` (one row: seed, start_value, tau_wr, tau_end, "
    "end_value, blew_up; a '# failure: ' line when its ODE failed, a '# engine threads: N' "
    "line, N >= 1, and a '# cvode: ' line per integration)";
static const char failure_prefix[] = "# failure: ";
/* the engine's threads in the worker, which the parent's may differ from */
static const char threads_prefix[] = "# engine threads: ";

static int seed_path(const recovery_run *r, int s, char *buf, size_t n)
{
    return aim_pool_seed_path(CMD, r->dir, r->cfg->seed + (uint64_t)s, buf, n);
}

/* In a worker: seed index s computed alone into its file. */
static int compute_seed(void *ctx, int s)
{
    const recovery_run *r = ctx;
    const uint64_t seed = r->cfg->seed + (uint64_t)s;
    aim_recovery_seed res;
    char path[1200];
    aim_tsv *tsv;
    if (aim_recovery_seed_run(r->cfg, r->d, seed, r->source, &res)) {
        fprintf(stderr, "aimdyn " CMD ": out of memory\n");
        return -1;
    }
    aim_recovery_seed_print(stderr, r->d, seed, &res, r->cfg->recovery_threshold);
    if (seed_path(r, s, path, sizeof path) || !(tsv = aim_tsv_open(path)))
        return -1;
    FILE *f = aim_tsv_stream(tsv);
    aim_tsv_scratch(tsv); /* kept until the run's files are written */
    aim_tsv_seal(tsv);    /* read back: whole, or refused (seedfile.h) */
    aim_tsv_metadata(tsv, CMD, r->cfg);
    fprintf(f, "# recovery seed %llu (seed %d of %d) at d = %d: the limit ODE from its initial "
               "matrices, kept until the run's files are written; values to 17 digits (read "
               "back to the same double)\n",
            (unsigned long long)seed, s + 1, r->seeds, r->d);
    if (res.failure[0]) {
        /* one line: a line break would end the metadata line */
        for (char *c = res.failure; *c; c++)
            if (*c == '\n' || *c == '\r')
                *c = ' ';
        fprintf(f, "%s%s\n", failure_prefix, res.failure);
    }
    fprintf(f, "%s%d\n", threads_prefix, res.threads);
    aim_cli_put_integrations(f, res.integrations, res.stats);
    for (int c = 0; seed_columns[c]; c++)
        fprintf(f, "%s%s", c ? "\t" : "", seed_columns[c]);
    fprintf(f, "\n%llu\t%.17g\t%.17g\t%.17g\t%.17g\t%d\n", (unsigned long long)seed,
            res.start_overlap, res.tau_wr, res.tau_end, res.overlap_end, res.blew_up);
    return aim_tsv_commit(tsv);
}

/* Seed s from its file into r->out. Returns 0; 1 when there is no file,
 * or one of another aimdyn version (said: computed again); -1 when the
 * file is not a seed file of this configuration (said). */
static int read_seed(void *ctx, int s)
{
    recovery_run *r = ctx;
    static const aim_table_kind kind = {seed_file_what, seed_columns, NULL};
    const uint64_t seed = r->cfg->seed + (uint64_t)s;
    char path[1200];
    aim_table t;
    if (seed_path(r, s, path, sizeof path))
        return -1;
    const int kept = aim_seedfile_read(CMD, path, &kind, r->cfg, r->dir, &t);
    if (kept)
        return kept;
    const double *v = t.data;
    const char *failure = aim_table_meta(&t, failure_prefix);
    const char *threads = aim_table_meta(&t, threads_prefix);
    char *end = NULL;
    const long nthreads = threads ? strtol(threads, &end, 10) : 0;
    if (t.ncols != 6 || t.nrows != 1 || t.seed[0] != seed || (v[5] != 0 && v[5] != 1) ||
        nthreads < 1 || nthreads > INT_MAX || (*end && *end != '\n')) {
        fprintf(stderr, "aimdyn " CMD ": %s: not one row of the 6 columns for seed %llu with "
                        "blew_up 0 or 1 and its engine threads; allowed: %s\n", path,
                (unsigned long long)seed, seed_file_what);
        aim_table_free(&t);
        return -1;
    }
    aim_recovery_seed res = {.start_overlap = v[1], .tau_wr = v[2], .tau_end = v[3],
                             .overlap_end = v[4], .blew_up = (int)v[5], .threads = (int)nthreads};
    if ((res.integrations = aim_cli_get_integrations(&t, CMD, path, res.stats)) < 0) {
        aim_table_free(&t);
        return -1;
    }
    if (failure)
        snprintf(res.failure, sizeof res.failure, "%.*s", (int)strcspn(failure, "\n"), failure);
    aim_recovery_finite_put(r->out, s, &res, r->cfg->recovery_threshold);
    aim_table_free(&t);
    return 0;
}

int aim_recovery_seeds_run(const aim_config *cfg, int d, int jobs,
                           const aim_start_source *source, aim_recovery_finite *out,
                           aim_atomic_set *set)
{
    recovery_run r = {cfg, d, cfg->seeds, source, out, ""};
    if (aim_pool_seeds_dir(CMD, cfg, "recovery", d, r.dir, sizeof r.dir) ||
        aim_atomic_inner_folder(r.dir))
        return -1;
    if (aim_recovery_finite_init(out, d, r.seeds)) {
        fprintf(stderr, "aimdyn " CMD ": out of memory\n");
        return -1;
    }
    const aim_pool_seeds_spec spec = {CMD,          jobs, d,   r.seeds, cfg->seed, r.dir,
                                      read_seed,    compute_seed, &r, 0, NULL, NULL};
    const int st = aim_pool_run_seeds(&spec, set);
    if (st) {
        aim_recovery_finite_free(out);
        return st;
    }
    aim_recovery_finite_median(out);
    return 0;
}

void aim_recovery_seeds_remove_dir(const aim_config *cfg, int d)
{
    aim_pool_seeds_remove_dir(CMD, cfg, "recovery", d);
}
