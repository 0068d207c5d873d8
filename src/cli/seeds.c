/* aim_seeds: SGD seeds on worker processes, kept as they finish (see
 * seeds.h). The seed file is both what a worker hands back to the parent
 * and what a rerun resumes from: one path, so that a resumed seed and a
 * computed one are read by the same code. */
#include "seeds.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pool.h"
#include "ranks.h"
#include "sgd.h"
#include "tsv.h"
#include "version.h"
#include "words.h"

typedef struct {
    const char *cmd;
    const aim_config *cfg;
    int d, points, seeds, done;
    const double *tau;
    aim_sgd_moments *mom; /* NULL: no moments measured */
    char dir[1100];       /* DIR/.NAME-sgd-dD.seeds */
} seeds_run;

static const char seed_file_what[] =
    "a seed file of an SGD run (seed, tau, the observables, the SGD extras and the moments "
    "at every grid point, a '# reached:' line), as `aimdyn sgd` writes it";

static int seeds_dir(const char *cmd, const aim_config *cfg, int d, char *buf, size_t n)
{
    aim_config hidden = *cfg;
    char suffix[32];
    snprintf(hidden.name, sizeof hidden.name, ".%.*s", (int)sizeof hidden.name - 2, cfg->name);
    snprintf(suffix, sizeof suffix, "sgd-d%d", d);
    if (aim_tsv_path(buf, n, &hidden, suffix, "seeds")) {
        fprintf(stderr, "aimdyn %s: output path too long for the seed folder of d = %d\n", cmd,
                d);
        return -1;
    }
    return 0;
}

static int seed_path(const seeds_run *r, int s, char *buf, size_t n)
{
    const int len = snprintf(buf, n, "%s/seed-%llu.tsv", r->dir,
                             (unsigned long long)(r->cfg->seed + (uint64_t)s));
    if (len < 0 || (size_t)len >= n) {
        fprintf(stderr, "aimdyn %s: output path too long: '%s/seed-...'\n", r->cmd, r->dir);
        return -1;
    }
    return 0;
}

static int columns_of(const seeds_run *r)
{
    return 2 + AIM_OBS_COUNT + AIM_SGD_EXTRA_COUNT + (r->mom ? r->mom->count : 0);
}

/* The name of column c of a seed file into buf. */
static const char *column_name(const seeds_run *r, int c, char *buf, size_t n)
{
    if (c == 0)
        return "seed";
    if (c == 1)
        return "tau";
    c -= 2;
    if (c < AIM_OBS_COUNT)
        return aim_obs_names[c];
    c -= AIM_OBS_COUNT;
    if (c < AIM_SGD_EXTRA_COUNT)
        return aim_sgd_extra_names[c];
    c -= AIM_SGD_EXTRA_COUNT;
    snprintf(buf, n, "m(%s)", aim_wordset_word(r->mom->ws, r->mom->words[c]));
    return buf;
}

/* Seed s's values at grid point i, in column order after seed and tau,
 * from (get = 1) or into (get = 0) the run's arrays. */
static void seed_row(const seeds_run *r, int s, int i, double *obs, double *extra,
                     double *mvals, double *row, int get)
{
    const int X = AIM_SGD_EXTRA_COUNT, M = r->mom ? r->mom->count : 0;
    double *cell[3] = {obs + ((size_t)s * r->points + i) * AIM_OBS_COUNT,
                       extra + ((size_t)s * r->points + i) * X,
                       M ? mvals + ((size_t)s * r->points + i) * M : NULL};
    const int width[3] = {AIM_OBS_COUNT, X, M};
    for (int b = 0, c = 0; b < 3; b++)
        for (int k = 0; k < width[b]; k++, c++) {
            if (get)
                row[c] = cell[b][k];
            else
                cell[b][k] = row[c];
        }
}

/* In a worker: seed s (index) computed alone, as the serial loop computes
 * it (the seed cfg->seed + s, its own held-out samples), into its file. */
static int compute_seed(void *ctx, int s)
{
    const seeds_run *r = ctx;
    aim_config one = *r->cfg;
    one.seed = r->cfg->seed + (uint64_t)s;
    one.seeds = 1;
    const int P = r->points, X = AIM_SGD_EXTRA_COUNT, M = r->mom ? r->mom->count : 0;
    double *obs = malloc(sizeof(double) * (size_t)P * AIM_OBS_COUNT);
    double *extra = malloc(sizeof(double) * (size_t)P * X);
    double *mvals = malloc(sizeof(double) * ((size_t)P * M + 1));
    double *row = malloc(sizeof(double) * (size_t)columns_of(r));
    aim_sgd_moments mom = r->mom ? *r->mom : (aim_sgd_moments){0};
    mom.values = mvals;
    int reached = 0, rc = -1;
    char path[1200];
    aim_tsv *tsv = NULL;
    if (!obs || !extra || !mvals || !row)
        fprintf(stderr, "aimdyn %s: out of memory\n", r->cmd);
    else if (aim_compare_run_sgd_moments(&one, r->d, r->tau, P, obs, extra, &reached,
                                         r->mom ? &mom : NULL) == 0 &&
             seed_path(r, s, path, sizeof path) == 0 && (tsv = aim_tsv_open(path))) {
        FILE *f = aim_tsv_stream(tsv);
        aim_tsv_metadata(tsv, "sgd", r->cfg);
        fprintf(f, "# sgd seed %llu (seed %d of %d) at d = %d, kept until the run's files are "
                   "written; values to 17 digits (read back to the same double)\n"
                   "# reached: %d of %d grid points\n",
                (unsigned long long)one.seed, s + 1, r->seeds, r->d, reached, P);
        char name[300];
        for (int c = 0; c < columns_of(r); c++)
            fprintf(f, "%s%s", c ? "\t" : "", column_name(r, c, name, sizeof name));
        fputc('\n', f);
        for (int i = 0; i < P; i++) {
            seed_row(r, 0, i, obs, extra, mvals, row, 1);
            fprintf(f, "%llu\t%.17g", (unsigned long long)one.seed, r->tau[i]);
            for (int c = 0; c < columns_of(r) - 2; c++)
                fprintf(f, "\t%.17g", row[c]);
            fputc('\n', f);
        }
        rc = aim_tsv_commit(tsv);
    }
    free(obs);
    free(extra);
    free(mvals);
    free(row);
    return rc;
}

/* The parts of a seed file that must be as this run writes them: the
 * columns, one row per grid point at its tau, the seed, the reached
 * count. Returns the reached count, or -1 after a message. */
static int check_seed_table(const seeds_run *r, int s, const char *path, const aim_table *t)
{
    const uint64_t seed = r->cfg->seed + (uint64_t)s;
    int ok = t->ncols == columns_of(r) && t->nrows == r->points && t->seed;
    char name[300];
    for (int c = 0; ok && c < t->ncols; c++)
        ok = !strcmp(t->names[c], column_name(r, c, name, sizeof name));
    for (int i = 0; ok && i < t->nrows; i++)
        ok = t->seed[i] == seed && t->data[(size_t)i * t->ncols + 1] == r->tau[i];
    const char *line = aim_table_meta(t, "# reached: ");
    char *end = NULL;
    const long reached = line ? strtol(line, &end, 10) : -1;
    if (!ok || !end || reached < 0 || reached > r->points ||
        strncmp(end, " of ", 4) != 0) {
        fprintf(stderr, "aimdyn %s: %s: not the columns, grid, seed %llu or reached count of "
                        "this run; allowed: %s\n", r->cmd, path, (unsigned long long)seed,
                seed_file_what);
        return -1;
    }
    return (int)reached;
}

/* Seed s from its file into the run's arrays. Returns 0; 1 when there is
 * no file, or one of another aimdyn version (said: computed again); -1
 * when the file is not a seed file of this configuration (said). */
static int read_seed(const seeds_run *r, int s, double *obs, double *extra, int *reached)
{
    char path[1200], version[128];
    if (seed_path(r, s, path, sizeof path))
        return -1;
    if (access(path, F_OK) != 0)
        return 1;
    const int v = aim_pool_check_version(r->cmd, path, seed_file_what, version, sizeof version);
    if (v > 0)
        fprintf(stderr, "%s: %s was written by aimdyn %s, this is aimdyn %s: seed computed "
                        "again\n", r->cmd, path, version, AIM_VERSION);
    if (v)
        return v;
    static const char *const needed[] = {"seed", "tau", NULL};
    const aim_table_kind kind = {seed_file_what, needed, NULL};
    aim_table t;
    if (aim_table_read(path, &kind, &t))
        return -1;
    aim_config recorded;
    aim_config_error err;
    char *there = NULL, *here = aim_pool_config_lines(r->cfg);
    int rc = -1;
    if (!here)
        fprintf(stderr, "aimdyn %s: out of memory\n", r->cmd);
    else if (aim_table_config(&t, &recorded, &err))
        fprintf(stderr, "aimdyn %s: %s: %s\n", r->cmd, path, err.message);
    else if (!(there = aim_pool_config_lines(&recorded)))
        fprintf(stderr, "aimdyn %s: out of memory\n", r->cmd);
    else if (strcmp(there, here)) {
        char diff[2048];
        aim_pool_first_difference(there, here, diff, sizeof diff);
        fprintf(stderr, "aimdyn %s: %s was written by a run of another configuration (%s); "
                        "remove the folder %s or choose another --name\n", r->cmd, path, diff,
                r->dir);
    } else if ((reached[s] = check_seed_table(r, s, path, &t)) >= 0) {
        double *mvals = r->mom ? r->mom->values : NULL;
        for (int i = 0; i < r->points; i++)
            seed_row(r, s, i, obs, extra, mvals, t.data + (size_t)i * t.ncols + 2, 0);
        rc = 0;
    }
    free(here);
    free(there);
    aim_table_free(&t);
    return rc;
}

static void seed_finished(void *ctx, int s, double seconds)
{
    seeds_run *r = ctx;
    fprintf(stderr, "%s d=%d: seed %llu finished in %.1f s (%d/%d seeds done)\n", r->cmd, r->d,
            (unsigned long long)(r->cfg->seed + (uint64_t)s), seconds, ++r->done, r->seeds);
}

int aim_seeds_run(const char *cmd, const aim_config *cfg, int d, const double *tau, int jobs,
                  double *obs, double *extra, int *reached, aim_sgd_moments *mom,
                  aim_atomic_set *set)
{
    seeds_run r = {cmd, cfg, d, cfg->points, cfg->seeds, 0, tau, mom, ""};
    if (seeds_dir(cmd, cfg, d, r.dir, sizeof r.dir))
        return -1;
    const int rank = aim_ranks_rank(), ranks = aim_ranks_count();
    int *pending = malloc(sizeof(int) * (size_t)r.seeds);
    int *share = malloc(sizeof(int) * (size_t)r.seeds);
    if (!pending || !share) {
        fprintf(stderr, "aimdyn %s: out of memory\n", cmd);
        free(pending);
        free(share);
        return -1;
    }
    int npending = 0, nshare = 0, rc = 0;
    /* rank 0 alone looks at the seed folder (the other ranks of an MPI
     * job, ranks.h, write there only once it has) */
    if (rank == 0) {
        /* the temporary files of a killed run's workers */
        if (access(r.dir, F_OK) == 0 && aim_atomic_clean(r.dir, "seed") < 0)
            rc = -1;
        for (int s = 0; s < r.seeds && rc == 0; s++) {
            const int got = read_seed(&r, s, obs, extra, reached);
            if (got < 0)
                rc = -1;
            else if (got > 0)
                pending[npending++] = s;
        }
    }
    rc = aim_ranks_share(rc, pending, &npending, r.seeds);
    r.done = r.seeds - npending;
    if (rc == 0 && rank == 0 && r.done > 0)
        fprintf(stderr, "%s d=%d: %d of %d seeds resumed from %s (finished by an earlier run)\n",
                cmd, d, r.done, r.seeds, r.dir);
    /* this rank's seeds: every ranks-th of those to do, from its rank on */
    for (int k = rank; rc == 0 && k < npending; k += ranks)
        share[nshare++] = pending[k];
    if (rc == 0 && nshare > 0) {
        const aim_pool_spec spec = {cmd, jobs, share, nshare, compute_seed, seed_finished, &r};
        aim_pool_run(&spec); /* the seeds left undone are counted below */
    }
    if (rc == 0)
        aim_ranks_barrier(); /* every rank's seed files are written */
    if (rc == 0 && rank != 0) {
        free(pending);
        free(share);
        return 1; /* rank 0 reads them */
    }
    int missing = 0;
    for (int k = 0; k < npending && rc == 0; k++) {
        const int got = read_seed(&r, pending[k], obs, extra, reached);
        missing += got > 0;
        rc = got < 0 ? -1 : 0;
    }
    if (rc == 0 && missing) {
        fprintf(stderr, "aimdyn %s: %d of %d seeds at d = %d have no result (see above); "
                        "rerun the same command to compute them (the finished seeds are "
                        "kept in %s)\n", cmd, missing, r.seeds, d, r.dir);
        rc = -1;
    }
    char path[1200];
    for (int s = 0; s < r.seeds && rc == 0; s++)
        rc = seed_path(&r, s, path, sizeof path) || aim_atomic_set_remove(set, path) ? -1 : 0;
    free(pending);
    free(share);
    return rc;
}

void aim_seeds_remove_dir(const char *cmd, const aim_config *cfg, int d)
{
    char dir[1100];
    if (seeds_dir(cmd, cfg, d, dir, sizeof dir) == 0 && rmdir(dir) != 0 && errno != ENOENT)
        fprintf(stderr, "aimdyn %s: warning: cannot remove the seed folder %s: %s\n", cmd, dir,
                strerror(errno));
}
