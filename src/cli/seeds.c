/* aim_seeds: SGD seeds on worker processes, kept as they finish (see
 * seeds.h). The seed file is both what a worker hands back to the parent
 * and what a rerun resumes from: one path, so that a resumed seed and a
 * computed one are read by the same code. */
#include "seeds.h"
#include "config_check.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "checkpoint.h"
#include "compare.h"
#include "hook.h"
#include "pool.h"
#include "seedfile.h"
#include "sgd.h"
#include "sgd_state.h"
#include "state.h"
#include "tsv.h"
#include "words.h"

typedef struct {
    const char *cmd;
    const aim_config *cfg;
    int d, points, seeds;
    const double *tau;
    aim_sgd_moments *mom; /* NULL: no moments measured */
    char dir[1100];       /* DIR/.NAME-sgd-dD.seeds */
    double *obs, *extra;  /* the run's arrays, as aim_seeds_run's */
    int *reached;
} seeds_run;

static const char seed_file_what[] =
    "a seed file of an SGD run (seed, tau, the observables, the SGD extras and the moments "
    "at every grid point, a '# reached:' line), as `aimdyn sgd` writes it";

static int seed_path(const seeds_run *r, int s, char *buf, size_t n)
{
    return aim_pool_seed_path(r->cmd, r->dir, r->cfg->seed + (uint64_t)s, buf, n);
}

/* The checkpoint of seed s: its seed file's path, ".ckpt" for ".tsv". */
static int checkpoint_path(const seeds_run *r, int s, char *buf, size_t n)
{
    if (seed_path(r, s, buf, n))
        return -1;
    const size_t len = strlen(buf);
    if (len < 4 || len + 2 > n) {
        fprintf(stderr, "aimdyn %s: output path too long: '%s'\n", r->cmd, buf);
        return -1;
    }
    strcpy(buf + len - 4, ".ckpt");
    return 0;
}

/* A seed's checkpoint once its seed file is kept: the file holds all the
 * checkpoint held. Removed when the seed file is written and again when
 * a rerun reads it (a run killed between the two left it), so that the
 * seed folder empties at the end. */
static void remove_superseded_checkpoint(const seeds_run *r, const char *path)
{
    if (unlink(path) != 0 && errno != ENOENT)
        fprintf(stderr, "aimdyn %s: warning: cannot remove the checkpoint %s: %s\n", r->cmd,
                path, strerror(errno));
}

static int columns_of(const seeds_run *r)
{
    return 2 + AIM_OBS_COUNT + AIM_SGD_EXTRA_COUNT + (r->mom ? r->mom->count : 0);
}

/* The largest checkpoint a seed of r can write: its header's text (the
 * configuration lines, well under a MiB), its rows of results, and its
 * SGD state, which the seed's memory at its peak holds (the SGD side's
 * estimate, compare.h). A larger file is no checkpoint of this run's
 * and is refused before it is read into memory. */
static size_t checkpoint_cap(const seeds_run *r)
{
    const double rows = 8.0 * r->points * columns_of(r);
    return (size_t)((1 << 20) + rows + aim_compare_seed_bytes(r->cfg, r->d, 0));
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
    return aim_seeds_moment_column(r->mom->ws, r->mom->words[c], buf, n);
}

const char *aim_seeds_moment_column(const aim_wordset *ws, int word, char *buf, size_t n)
{
    char name[300];
    snprintf(name, sizeof name, "m(%s)", aim_wordset_word(ws, word));
    return aim_tsv_column_name(name, buf, n);
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
        if (n[b] > 0 && (out ? fwrite(rows[b], sizeof(double), n[b], out)
                             : fread(rows[b], sizeof(double), n[b], in)) != n[b])
            return -1; /* n[b] = 0: no moments, and no array (NULL) to pass */
    return 0;
}

/* After grid point i: its saved state when output.save_state asks for
 * it (aim_sgd_write_state: a file of its own, replaced atomically, written
 * as the seed reaches the point; a seed resumed from its checkpoint or
 * seed file wrote the states before that point in the run that made
 * them). Then the seed's state kept, at the first point after
 * cfg->checkpoint CPU seconds (not after the last point: the seed file
 * follows). The time decides only when; a checkpoint holds the state at
 * a grid point, the same whenever it is taken. */
static int save_checkpoint(void *ctx, int s, int i, const aim_sgd *sgd)
{
    (void)s;
    seed_checkpoints *c = ctx;
    const seeds_run *r = c->r;
    if (aim_config_saves_state(r->cfg, i)) {
        char path[1200], err[1400];
        if (aim_state_path(r->cfg, r->d, c->seed, r->tau[i], path, sizeof path)) {
            fprintf(stderr, "aimdyn %s: output path too long for the saved state of seed %llu\n",
                    r->cmd, (unsigned long long)c->seed);
            return -1;
        }
        if (aim_sgd_write_state(path, sgd, r->cfg, c->seed, r->tau[i], i, err, sizeof err)) {
            fprintf(stderr, "aimdyn %s: %s\n", r->cmd, err);
            return -1;
        }
    }
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
    const int got = aim_checkpoint_read(r->cmd, c->path, r->cfg, checkpoint_cap(r), &payload, &len);
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

/* In a worker: a seed's grid point reached, to the parent's progress. */
static void report_point(void *ctx, int done, int total, long steps)
{
    (void)ctx;
    aim_pool_report(done, total, (double)steps);
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
    const aim_compare_progress progress = {report_point, NULL};
    seed_checkpoints ck = {r, one.seed, obs, extra, r->mom ? mvals : NULL, cpu_seconds(), ""};
    const aim_sgd_checkpoints hooks = {resume_checkpoint, save_checkpoint, &ck};
    if (!obs || !extra || !mvals || !row)
        fprintf(stderr, "aimdyn %s: out of memory\n", r->cmd);
    else if (checkpoint_path(r, s, ck.path, sizeof ck.path) == 0 &&
             aim_compare_run_sgd_checkpointed(&one, r->d, r->tau, P, obs, extra, &reached,
                                              r->mom ? &mom : NULL, &hooks, &progress) == 0 &&
             seed_path(r, s, path, sizeof path) == 0 && (tsv = aim_tsv_open(path))) {
        FILE *f = aim_tsv_stream(tsv);
        aim_tsv_scratch(tsv); /* kept until the run's files are written */
        aim_tsv_seal(tsv);    /* read back: whole, or refused (seedfile.h) */
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
        if (rc == 0) {
            aim_hook_event("seed-kept", "seed", (long)one.seed, NULL, 0);
            remove_superseded_checkpoint(r, ck.path);
            aim_hook_event("seed-done", "seed", (long)one.seed, NULL, 0);
        }
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
    if (checkpoint_path(r, s, path, sizeof path))
        return -1;
    const int got = aim_checkpoint_read(r->cmd, path, r->cfg, checkpoint_cap(r), &payload, &len);
    free(payload);
    if (got == 2 && unlink(path) != 0) {
        fprintf(stderr, "aimdyn %s: cannot remove %s: %s\n", r->cmd, path, strerror(errno));
        return -1;
    }
    return got < 0 ? -1 : 1;
}

/* Seed s from its file into the run's arrays. Returns 0; 1 when there is
 * no file, or one of another aimdyn version (said: computed again; its
 * checkpoint checked); -1 when the file is not a seed file of this
 * configuration, or its checkpoint is refused (said). */
static int read_seed(void *ctx, int s)
{
    static const char *const needed[] = {"seed", "tau", NULL};
    static const aim_table_kind kind = {seed_file_what, needed, NULL};
    const seeds_run *r = ctx;
    char path[1200];
    aim_table t;
    if (seed_path(r, s, path, sizeof path))
        return -1;
    const int kept = aim_seedfile_read(r->cmd, path, &kind, r->cfg, r->dir, &t);
    if (kept > 0) /* to compute: from its checkpoint, if it has one */
        return check_checkpoint(r, s);
    if (kept)
        return kept;
    int rc = -1;
    if ((r->reached[s] = check_seed_table(r, s, path, &t)) >= 0) {
        double *mvals = r->mom ? r->mom->values : NULL;
        for (int i = 0; i < r->points; i++)
            seed_row(r, s, i, r->obs, r->extra, mvals, t.data + (size_t)i * t.ncols + 2, 0);
        rc = checkpoint_path(r, s, path, sizeof path);
        if (rc == 0)
            remove_superseded_checkpoint(r, path);
    }
    aim_table_free(&t);
    return rc;
}

/* After SIGINT/SIGTERM stopped the workers: what a rerun finds. */
static void seeds_interrupted(void *ctx)
{
    const seeds_run *r = ctx;
    int kept = 0, continued = 0;
    char path[1200];
    for (int s = 0; s < r->seeds; s++) {
        if (seed_path(r, s, path, sizeof path) == 0 && access(path, F_OK) == 0)
            kept++;
        else if (checkpoint_path(r, s, path, sizeof path) == 0 && access(path, F_OK) == 0)
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
    seeds_run r = {cmd, cfg, d, cfg->points, cfg->seeds, tau, mom, "", obs, extra, reached};
    if (aim_pool_seeds_dir(cmd, cfg, "sgd", d, r.dir, sizeof r.dir) ||
        aim_atomic_inner_folder(r.dir))
        return -1;
    const aim_pool_seeds_spec spec = {cmd,
                                      jobs,
                                      d,
                                      r.seeds,
                                      cfg->seed,
                                      r.dir,
                                      read_seed,
                                      compute_seed,
                                      &r,
                                      (double)aim_sgd_steps_for(cfg, d, tau[r.points - 1]),
                                      "steps",
                                      seeds_interrupted};
    return aim_pool_run_seeds(&spec, set);
}

void aim_seeds_remove_dir(const char *cmd, const aim_config *cfg, int d)
{
    aim_pool_seeds_remove_dir(cmd, cfg, "sgd", d);
}
