/* The runs an aim_trajectory_reuse keeps for the orders after them: a
 * hierarchy run's observables before its truncation cut, and a
 * hand-over's matrix limit process, each with what identifies it bit for
 * bit (trajectory.h, aim_trajectory_reuse). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "trajectory_internal.h"

/* cfg as the text of every key (aim_config_write: reals at 17 digits, so
 * that equal text is equal values) but the file name, which differs
 * between the orders of one compare, and the token covariance it
 * resolves to; not the struct's bytes, whose padding and string tails are
 * not values. Into *key (malloc'ed, *len bytes); 0, or -1 when out of
 * memory. */
int aim_trajectory_i_config_key(const aim_config *cfg, char **key, size_t *len)
{
    aim_config c = *cfg;
    c.name[0] = '\0';
    *key = NULL;
    FILE *f = open_memstream(key, len);
    if (!f)
        return -1;
    aim_config_write(&c, f, NULL);
    const int ok = fwrite(c.cov, sizeof c.cov, 1, f) == 1;
    if (fclose(f) != 0 || !ok) {
        free(*key);
        *key = NULL;
        return -1;
    }
    return 0;
}

aim_trajectory_reuse *aim_trajectory_reuse_create(void)
{
    return calloc(1, sizeof(aim_trajectory_reuse));
}

static void kept_clear(aim_trajectory_kept_run *k)
{
    free(k->key);
    free(k->tau);
    free(k->start);
    free(k->obs);
    memset(k, 0, sizeof *k);
}

void aim_trajectory_i_kept_matrix_clear(aim_trajectory_kept_matrix *k)
{
    free(k->key);
    free(k->tau);
    free(k->obs);
    aim_trajectory_moments_free(&k->moments);
    memset(k, 0, sizeof *k);
}

void aim_trajectory_reuse_free(aim_trajectory_reuse *r)
{
    if (!r)
        return;
    for (int i = 0; i < AIM_TRAJECTORY_REUSE_KEPT; i++)
        kept_clear(&r->runs[i]);
    aim_trajectory_i_kept_matrix_clear(&r->matrix);
    free(r);
}

void aim_trajectory_reuse_orders(aim_trajectory_reuse *r, int highest) { r->highest = highest; }

int aim_trajectory_reused(const aim_trajectory_reuse *r) { return r->reused; }

/* The start moments a hierarchy of cfg's order reads: every word of length
 * 0 .. order + 1 (aim_measured_start); -1 when the word set cannot be
 * made. */
static int start_count(const aim_config *cfg)
{
    aim_alphabet ab;
    aim_model_ops_of(cfg)->alphabet(cfg, &ab);
    aim_wordset *ws = aim_wordset_create(&ab, cfg->order + 1);
    const int count = ws ? aim_wordset_count(ws) : -1;
    aim_wordset_free(ws);
    return count;
}

/* 1 when k holds the run of cfg (whose key is key, len) at d on tau from
 * start. */
static int kept_matches(const aim_trajectory_kept_run *k, const char *key, size_t len,
                        const aim_config *cfg, int d, const double *tau,
                        const aim_measured_start *start)
{
    if (!k->key || d != k->d || len != k->key_len || memcmp(key, k->key, len) != 0 ||
        memcmp(tau, k->tau, sizeof *tau * (size_t)cfg->points) != 0)
        return 0;
    if (!start || !start->moments)
        return k->count == 0 && !(start && start->q);
    return k->count > 0 && !start->q &&
           memcmp(start->moments, k->start, sizeof *k->start * (size_t)k->count) == 0;
}

/* The run of cfg at d on tau from start kept in r, or NULL. */
const aim_trajectory_kept_run *aim_trajectory_i_reuse_find(const aim_trajectory_reuse *r,
                                                           const aim_config *cfg, int d,
                                                           const double *tau,
                                                           const aim_measured_start *start)
{
    char *key;
    size_t len;
    if (!r || aim_trajectory_i_config_key(cfg, &key, &len))
        return NULL;
    const aim_trajectory_kept_run *found = NULL;
    for (int i = 0; i < AIM_TRAJECTORY_REUSE_KEPT && !found; i++)
        if (kept_matches(&r->runs[i], key, len, cfg, d, tau, start))
            found = &r->runs[i];
    free(key);
    return found;
}

/* Keeps the run of cfg (observables obs before its truncation cut, its
 * report) in r (NULL: nowhere), in place of the oldest one kept; a start
 * with direct order parameters is not kept. */
void aim_trajectory_i_reuse_keep(aim_trajectory_reuse *r, const aim_config *cfg, int d,
                                 const double *tau, const aim_measured_start *start,
                                 const double *obs, const aim_ode_report *report)
{
    if (!r || aim_trajectory_i_reuse_find(r, cfg, d, tau, start))
        return;
    aim_trajectory_kept_run *k = &r->runs[r->next];
    kept_clear(k);
    const int points = cfg->points;
    const int count = start && start->moments ? start_count(cfg) : 0;
    if ((start && start->q) || count < 0 || aim_trajectory_i_config_key(cfg, &k->key, &k->key_len))
        return;
    k->d = d;
    k->count = count;
    k->tau = malloc(sizeof *k->tau * (size_t)points);
    k->obs = malloc(sizeof *k->obs * (size_t)points * AIM_OBS_COUNT);
    k->start = count > 0 ? malloc(sizeof *k->start * (size_t)count) : NULL;
    if (!k->tau || !k->obs || (count > 0 && !k->start)) {
        kept_clear(k); /* nothing kept: the next order integrates its own */
        return;
    }
    memcpy(k->tau, tau, sizeof *tau * (size_t)points);
    memcpy(k->obs, obs, sizeof *obs * (size_t)points * AIM_OBS_COUNT);
    if (count > 0)
        memcpy(k->start, start->moments, sizeof *k->start * (size_t)count);
    k->report = *report;
    r->next = (r->next + 1) % AIM_TRAJECTORY_REUSE_KEPT;
}
