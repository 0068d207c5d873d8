/* aim_seeds: SGD seeds on worker processes, kept as they finish (see
 * seeds.h). The seed file is both what a worker hands back to the parent
 * and what a rerun resumes from: one path, so that a resumed seed and a
 * computed one are read by the same code. */
#include "seeds.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "checkpoint.h"
#include "pool.h"
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

/* The seed file (ext "tsv") or the checkpoint (ext "ckpt") of seed s. */
static int seed_file(const seeds_run *r, int s, const char *ext, char *buf, size_t n)
{
    const int len = snprintf(buf, n, "%s/seed-%llu.%s", r->dir,
                             (unsigned long long)(r->cfg->seed + (uint64_t)s), ext);
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

/* ---- checkpoints inside a seed (checkpoint.h) ---- */

/* The payload of a seed's checkpoint: this head, the seed's rows of the
 * observables, the extras and the moments at grid points 0..next-1, then
 * the aim_sgd state (aim_sgd_save) at grid point next-1. */
typedef struct {
    uint64_t seed;
    int32_t next, points, obs, extra, moments, unused;
} checkpoint_head;

typedef struct {
    const seeds_run *r;
    uint64_t seed;
    double *obs, *extra, *mvals; /* the seed's rows */
    double last;                 /* CPU seconds at the seed's start or last checkpoint */
    char path[1200];
} seed_checkpoints;

static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static checkpoint_head head_of(const seed_checkpoints *c, int next)
{
    checkpoint_head h;
    memset(&h, 0, sizeof h); /* no stray bytes in the padding */
    h.seed = c->seed;
    h.next = next;
    h.points = c->r->points;
    h.obs = AIM_OBS_COUNT;
    h.extra = AIM_SGD_EXTRA_COUNT;
    h.moments = c->r->mom ? c->r->mom->count : 0;
    return h;
}

/* The rows of grid points 0..next-1, written (out) or read (in). */
static int seed_rows(const seed_checkpoints *c, int next, FILE *out, FILE *in)
{
    const checkpoint_head h = head_of(c, next);
    double *rows[3] = {c->obs, c->extra, c->mvals};
    const size_t n[3] = {(size_t)next * (size_t)h.obs, (size_t)next * (size_t)h.extra,
                         (size_t)next * (size_t)h.moments};
    for (int b = 0; b < 3; b++)
        if ((out ? fwrite(rows[b], sizeof(double), n[b], out)
                 : fread(rows[b], sizeof(double), n[b], in)) != n[b])
            return -1;
    return 0;
}

/* After grid point i: the seed's state kept, at the first point after
 * cfg->checkpoint CPU seconds (not after the last point: the seed file
 * follows). The time decides only when; a checkpoint holds the state at
 * a grid point, the same whenever it is taken. */
static int save_checkpoint(void *ctx, int s, int i, const aim_sgd *sgd)
{
    (void)s;
    seed_checkpoints *c = ctx;
    const seeds_run *r = c->r;
    if (i + 1 >= r->points || cpu_seconds() - c->last < r->cfg->checkpoint)
        return 0;
    if (mkdir(r->dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "aimdyn %s: cannot create the seed folder %s: %s\n", r->cmd, r->dir,
                strerror(errno));
        return -1;
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    const checkpoint_head h = head_of(c, i + 1);
    int ok = m && fwrite(&h, sizeof h, 1, m) == 1 && seed_rows(c, i + 1, m, NULL) == 0 &&
             aim_sgd_save(sgd, m) == 0;
    ok = m && fclose(m) == 0 && ok;
    const int rc = ok ? aim_checkpoint_write(r->cmd, c->path, r->cfg, buf, len) : -1;
    if (!ok)
        fprintf(stderr, "aimdyn %s: out of memory writing the checkpoint '%s'\n", r->cmd,
                c->path);
    free(buf);
    c->last = cpu_seconds();
    return rc;
}

/* Before the seed's first grid point: its state from its checkpoint, if
 * any. Returns the grid point to continue from, or -1 (said). */
static int resume_checkpoint(void *ctx, int s, aim_sgd *sgd)
{
    (void)s;
    seed_checkpoints *c = ctx;
    const seeds_run *r = c->r;
    void *payload;
    size_t len;
    const int got = aim_checkpoint_read(r->cmd, c->path, r->cfg, &payload, &len);
    if (got)
        return got > 0 ? 0 : -1;
    FILE *in = len ? fmemopen(payload, len, "rb") : NULL;
    checkpoint_head h, want;
    int ok = in && fread(&h, sizeof h, 1, in) == 1;
    if (ok) {
        want = head_of(c, h.next);
        ok = !memcmp(&h, &want, sizeof h) && h.next >= 1 && h.next < r->points &&
             seed_rows(c, h.next, NULL, in) == 0 && aim_sgd_restore(sgd, in) == 0 &&
             fgetc(in) == EOF;
    }
    if (in)
        fclose(in);
    free(payload);
    if (!ok) {
        fprintf(stderr, "aimdyn %s: %s: not a checkpoint of seed %llu on this grid; remove it "
                        "(the seed is then computed from its start)\n", r->cmd, c->path,
                (unsigned long long)c->seed);
        return -1;
    }
    fprintf(stderr, "%s d=%d: seed %llu continued from its checkpoint at grid point %d of %d "
                    "(step %ld)\n", r->cmd, r->d, (unsigned long long)c->seed, (int)h.next,
            r->points, aim_sgd_steps(sgd));
    return h.next;
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
    seed_checkpoints ck = {r, one.seed, obs, extra, r->mom ? mvals : NULL, cpu_seconds(), ""};
    const aim_sgd_checkpoints hooks = {resume_checkpoint, save_checkpoint, &ck};
    if (!obs || !extra || !mvals || !row)
        fprintf(stderr, "aimdyn %s: out of memory\n", r->cmd);
    else if (seed_file(r, s, "ckpt", ck.path, sizeof ck.path) == 0 &&
             aim_compare_run_sgd_checkpointed(&one, r->d, r->tau, P, obs, extra, &reached,
                                              r->mom ? &mom : NULL, &hooks) == 0 &&
             seed_file(r, s, "tsv", path, sizeof path) == 0 && (tsv = aim_tsv_open(path))) {
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
        /* the seed file holds all the checkpoint held */
        if (rc == 0 && unlink(ck.path) != 0 && errno != ENOENT)
            fprintf(stderr, "aimdyn %s: warning: cannot remove the checkpoint %s: %s\n", r->cmd,
                    ck.path, strerror(errno));
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

/* The checkpoint of seed s, if any, checked before the workers start:
 * one of another configuration, or not whole, is refused (-1, said);
 * one of another version is removed (said). Returns 1 (the seed is to be
 * computed) or -1. */
static int check_checkpoint(const seeds_run *r, int s)
{
    char path[1200];
    void *payload;
    size_t len;
    if (seed_file(r, s, "ckpt", path, sizeof path))
        return -1;
    const int got = aim_checkpoint_read(r->cmd, path, r->cfg, &payload, &len);
    free(payload);
    if (got == 2 && unlink(path) != 0) {
        fprintf(stderr, "aimdyn %s: cannot remove %s: %s\n", r->cmd, path, strerror(errno));
        return -1;
    }
    return got < 0 ? -1 : 1;
}

/* Seed s from its file into the run's arrays. Returns 0; 1 when there is
 * no file, or one of another aimdyn version (said: computed again); -1
 * when the file is not a seed file of this configuration (said). */
static int read_seed(const seeds_run *r, int s, double *obs, double *extra, int *reached)
{
    char path[1200], version[128];
    if (seed_file(r, s, "tsv", path, sizeof path))
        return -1;
    if (access(path, F_OK) != 0)
        return check_checkpoint(r, s);
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

/* After SIGINT/SIGTERM stopped the workers: what a rerun finds. */
static void seeds_interrupted(void *ctx)
{
    const seeds_run *r = ctx;
    int kept = 0, continued = 0;
    char path[1200];
    for (int s = 0; s < r->seeds; s++) {
        if (seed_file(r, s, "tsv", path, sizeof path) == 0 && access(path, F_OK) == 0)
            kept++;
        else if (seed_file(r, s, "ckpt", path, sizeof path) == 0 && access(path, F_OK) == 0)
            continued++;
    }
    fprintf(stderr, "aimdyn %s: interrupted; %d of %d seeds at d = %d kept and %d checkpointed "
                    "in %s: rerun the same command to continue\n", r->cmd, kept, r->seeds, r->d,
            continued, r->dir);
}

int aim_seeds_run(const char *cmd, const aim_config *cfg, int d, const double *tau, int jobs,
                  double *obs, double *extra, int *reached, aim_sgd_moments *mom,
                  aim_atomic_set *set)
{
    seeds_run r = {cmd, cfg, d, cfg->points, cfg->seeds, 0, tau, mom, ""};
    if (seeds_dir(cmd, cfg, d, r.dir, sizeof r.dir))
        return -1;
    /* the temporary files of a killed run's workers */
    if (access(r.dir, F_OK) == 0 && aim_atomic_clean(r.dir, "seed") < 0)
        return -1;
    int *pending = malloc(sizeof(int) * (size_t)r.seeds);
    if (!pending) {
        fprintf(stderr, "aimdyn %s: out of memory\n", cmd);
        return -1;
    }
    int npending = 0, rc = 0;
    for (int s = 0; s < r.seeds && rc == 0; s++) {
        const int got = read_seed(&r, s, obs, extra, reached);
        if (got < 0)
            rc = -1;
        else if (got > 0)
            pending[npending++] = s;
    }
    r.done = r.seeds - npending;
    if (rc == 0 && r.done > 0)
        fprintf(stderr, "%s d=%d: %d of %d seeds resumed from %s (finished by an earlier run)\n",
                cmd, d, r.done, r.seeds, r.dir);
    if (rc == 0 && npending > 0) {
        const aim_pool_spec spec = {cmd,           jobs, pending, npending, compute_seed,
                                    seed_finished, &r,   seeds_interrupted};
        aim_pool_run(&spec); /* the seeds left undone are counted below */
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
    }
    char path[1200];
    for (int s = 0; s < r.seeds && rc == 0; s++)
        for (int k = 0; k < 2 && rc == 0; k++)
            rc = seed_file(&r, s, k ? "ckpt" : "tsv", path, sizeof path) ||
                         aim_atomic_set_remove(set, path)
                     ? -1
                     : 0;
    free(pending);
    return rc;
}

void aim_seeds_remove_dir(const char *cmd, const aim_config *cfg, int d)
{
    char dir[1100];
    if (seeds_dir(cmd, cfg, d, dir, sizeof dir) == 0 && rmdir(dir) != 0 && errno != ENOENT)
        fprintf(stderr, "aimdyn %s: warning: cannot remove the seed folder %s: %s\n", cmd, dir,
                strerror(errno));
}
