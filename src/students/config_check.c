/* aim_config_validate: a configuration checked as a whole (see
 * config_check.h): every key in range again, the combinations of keys no
 * run can take, the starts, the saved states and the informed start. It
 * sits with the students, above src/config, because the informed start's
 * check builds the student's start construction (inform.h). */
#include "config_check.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_keys.h"
#include "family.h"
#include "grid.h"
#include "inform.h"

/* ------------------------------------------------------------------ */
/* Validation                                                          */
/* ------------------------------------------------------------------ */

/* Order in which keys were set: default < earlier file < line < --set. */
static long origin_rank(const aim_config *cfg, int i)
{
    int l = cfg->key_line[i];
    if (l == -1)
        return 1L << 40;
    if (l == -2)
        return 1;
    return l > 0 ? 1 + (long)l : 0;
}

/* "FILE:LINE", "--set", ... for key i. */
static void origin_text(const aim_config *cfg, int i, char *buf, size_t n)
{
    int l = cfg->key_line[i];
    if (l > 0)
        snprintf(buf, n, "%s:%d", cfg->source, l);
    else if (l == -1)
        snprintf(buf, n, "--set");
    else if (l == -2)
        snprintf(buf, n, "an earlier config file");
    else
        snprintf(buf, n, "default");
}

/* Message about key i (located where it was set), optionally in
 * combination with key j (-1: none), then reason and what is allowed. */
static void combo_error(const aim_config *cfg, aim_config_error *err, int i,
                        int j, const char *reason, const char *allowed)
{
    if (!err)
        return;
    /* the later-set key locates the conflict */
    if (j >= 0 && origin_rank(cfg, j) > origin_rank(cfg, i)) {
        int t = i;
        i = j;
        j = t;
    }
    char *msg = err->message;
    size_t n = sizeof err->message;
    msg[0] = '\0';
    char vi[2200], vj[2200], where[600];
    aim_config_keys[i].get(&aim_config_keys[i], cfg, vi, sizeof vi);
    int l = cfg->key_line[i];
    if (l > 0)
        aim_config_append(msg, n, "%s:%d: ", cfg->source, l);
    else if (l == -1)
        aim_config_append(msg, n, "--set %s.%s=%.200s: ", aim_config_keys[i].section,
                          aim_config_keys[i].key, vi);
    aim_config_append(msg, n, "%s.%s = ", aim_config_keys[i].section, aim_config_keys[i].key);
    aim_config_append_value(msg, n, vi);
    if (l == 0 || l == -2) {
        origin_text(cfg, i, where, sizeof where);
        aim_config_append(msg, n, " (%s)", where);
    }
    if (j >= 0) {
        aim_config_keys[j].get(&aim_config_keys[j], cfg, vj, sizeof vj);
        origin_text(cfg, j, where, sizeof where);
        aim_config_append(msg, n, " with %s.%s = ", aim_config_keys[j].section,
                          aim_config_keys[j].key);
        aim_config_append_value(msg, n, vj);
        aim_config_append(msg, n, " (%s)", where);
    }
    aim_config_append(msg, n, ": %s; allowed: %s", reason, allowed);
}

/* training.start_file and hierarchy.start: a saved state is the start
 * of every run, and hierarchy.start names it (set to file here when it
 * was not given, so that the recorded configuration says what ran). */
static int validate_starts(aim_config *cfg, aim_config_error *err)
{
    const int k_start = aim_config_key_index("hierarchy", "start");
    const int k_file = aim_config_key_index("training", "start_file");
    if (cfg->start_file[0] && cfg->start == AIM_START_EXACT && cfg->key_line[k_start] == 0)
        cfg->start = AIM_START_FILE;
    if (cfg->start == AIM_START_FILE && !cfg->start_file[0]) {
        combo_error(cfg, err, k_start, k_file,
                    "hierarchy.start = file measures the start on the saved state of "
                    "training.start_file",
                    "training.start_file = a state saved by aimdyn sgd --save-state, or "
                    "hierarchy.start = exact | seed");
        return -1;
    }
    if (cfg->start_file[0] && cfg->start != AIM_START_FILE) {
        combo_error(cfg, err, k_file, k_start,
                    "a saved state is the start of every run (ODE and SGD)",
                    "hierarchy.start = file (or not given), or training.start_file empty");
        return -1;
    }
    if (cfg->start_digest[0] && !cfg->start_file[0]) {
        combo_error(cfg, err, aim_config_key_index("training", "start_digest"), k_file,
                    "a digest is that of the saved state training.start_file",
                    "training.start_digest empty without training.start_file");
        return -1;
    }
    if (cfg->start_file[0] && cfg->student.overlap != 0.0) {
        combo_error(cfg, err, k_file, aim_config_key_index("student", "overlap"),
                    "a saved state already fixes the student's overlap with the teacher",
                    "student.overlap = 0 with training.start_file");
        return -1;
    }
    if (cfg->start_file[0] && cfg->method == AIM_METHOD_MATRIX) {
        combo_error(cfg, err, k_file, aim_config_key_index("ode", "method"),
                    "the matrix limit process draws its replicas' matrices itself",
                    "ode.method = auto with training.start_file");
        return -1;
    }
    return 0;
}

/* The grid point of tau (within 1e-9 relative, the rounding of a typed
 * decimal against the computed grid), or -1. */
static int grid_point_of(const double *grid, int points, double tau)
{
    for (int i = 0; i < points; i++)
        if (fabs(grid[i] - tau) <= 1e-9 * fmax(1.0, fabs(grid[i])))
            return i;
    return -1;
}

/* Marks in keep[0..points-1] the grid points output.save_state names:
 * 0, or -1 with the first tau that is not one in *bad. */
static int save_state_points(const aim_config *cfg, const double *grid, char *keep,
                             double *bad)
{
    const int all = !strcmp(cfg->save_state, "all");
    memset(keep, all, (size_t)cfg->points);
    if (all || !strcmp(cfg->save_state, "none"))
        return 0;
    for (const char *p = cfg->save_state; *p;) {
        char *end;
        const double tau = strtod(p, &end);
        const int i = grid_point_of(grid, cfg->points, tau);
        if (i < 0) {
            *bad = tau;
            return -1;
        }
        keep[i] = 1;
        p = *end == ',' ? end + 1 : end;
    }
    return 0;
}

static int validate_save_state(const aim_config *cfg, aim_config_error *err)
{
    if (!strcmp(cfg->save_state, "none"))
        return 0;
    double *grid = malloc(sizeof *grid * (size_t)cfg->points);
    char *keep = malloc((size_t)cfg->points);
    if (!grid || !keep) {
        free(grid);
        free(keep);
        if (err)
            snprintf(err->message, sizeof err->message, "out of memory");
        return -1;
    }
    aim_grid_fill(cfg, grid);
    const int k_save = aim_config_key_index("output", "save_state");
    double bad;
    int rc = 0;
    if (save_state_points(cfg, grid, keep, &bad)) {
        char reason[AIM_CONFIG_WHY];
        snprintf(reason, sizeof reason, "tau = %g is not a point of the grid (saved states "
                 "are taken where SGD is measured)", bad);
        combo_error(cfg, err, k_save, aim_config_key_index("training", "points"), reason,
                    "none, all, or grid points tau (0, training.horizon / (training.points - "
                    "1), ... on a linear grid)");
        rc = -1;
    }
    /* the file names give tau as %g: two saved points must differ there */
    char a[32] = "", b[32];
    for (int i = 0, last = -1; rc == 0 && i < cfg->points; i++) {
        if (!keep[i])
            continue;
        snprintf(b, sizeof b, "%g", grid[i]);
        if (last >= 0 && !strcmp(a, b)) {
            char reason[AIM_CONFIG_WHY];
            snprintf(reason, sizeof reason, "the grid points tau = %.17g and %.17g would save "
                     "their states under the same name (tau%s)", grid[last], grid[i], b);
            combo_error(cfg, err, k_save, aim_config_key_index("training", "points"), reason,
                        "grid points that differ in their first 6 digits");
            rc = -1;
        }
        memcpy(a, b, sizeof a);
        last = i;
    }
    free(grid);
    free(keep);
    return rc;
}

int aim_config_saves_state(const aim_config *cfg, int point)
{
    if (!strcmp(cfg->save_state, "none") || point < 0 || point >= cfg->points)
        return 0;
    double *grid = malloc(sizeof *grid * (size_t)cfg->points);
    char *keep = malloc((size_t)cfg->points);
    double bad;
    int saved = 0;
    if (grid && keep) {
        aim_grid_fill(cfg, grid);
        saved = save_state_points(cfg, grid, keep, &bad) == 0 && keep[point];
    }
    free(grid);
    free(keep);
    return saved;
}

/* output.fold needs S and -S to be equivalent students: an output map
 * even in the index (elementwise, a Hermite series of even degrees only;
 * tanh, erf, relu and softmax are not even), a student of which -S is
 * again a student (not tied: W W^T is positive semi-definite), and for
 * fold = mean a student mean that can have a sign (raw centring). */
static int validate_fold(const aim_config *cfg, aim_config_error *err)
{
    if (cfg->fold == AIM_FOLD_NONE)
        return 0;
    const int k_fold = aim_config_key_index("output", "fold");
    int odd = -1;
    for (int k = 1; k < AIM_MAX_HERMITE && odd < 0; k += 2)
        if (cfg->hermite[k] != 0.0)
            odd = k;
    char reason[AIM_CONFIG_WHY];
    int other = -1;
    if (cfg->output != AIM_ELEMENTWISE) {
        snprintf(reason, sizeof reason, "a row softmax is not even in the index, so S and -S "
                 "are not equivalent students");
        other = aim_config_key_index("model", "output");
    } else if (cfg->activation != AIM_ACT_HERMITE) {
        snprintf(reason, sizeof reason, "tanh, erf and relu are not even, so S and -S are not "
                 "equivalent students");
        other = aim_config_key_index("model", "activation");
    } else if (odd >= 0) {
        snprintf(reason, sizeof reason, "the Hermite series has an odd part (c%d = %g), so S "
                 "and -S are not equivalent students", odd, cfg->hermite[odd]);
        other = aim_config_key_index("model", "hermite");
    } else if (aim_family_of(cfg->decomposition)->psd) {
        snprintf(reason, sizeof reason, "a tied student W W^T is positive semi-definite: -S "
                 "is not a tied student");
        other = aim_config_key_index("model", "decomposition");
    } else if (cfg->fold == AIM_FOLD_MEAN && cfg->centring != AIM_RAW) {
        snprintf(reason, sizeof reason, "centred indices have no student mean to fold by");
        other = aim_config_key_index("model", "centring");
    }
    if (other < 0)
        return 0;
    combo_error(cfg, err, k_fold, other, reason,
                "output.fold = none, or an even output map (model.output = elementwise with "
                "only even Hermite coefficients, e.g. model.activation = he2), a direct or "
                "untied student, and for fold = mean model.centring = raw (fold = overlap for "
                "centred indices)");
    return -1;
}

int aim_config_validate(aim_config *cfg, aim_config_error *err)
{
    if (err)
        err->message[0] = '\0';

    /* 1. every key in range (catches fields changed directly in code) */
    for (int i = 0; i < aim_config_nkeys; i++) {
        aim_config scratch = *cfg;
        char text[2200], why[AIM_CONFIG_WHY];
        aim_config_keys[i].get(&aim_config_keys[i], cfg, text, sizeof text);
        if (aim_config_keys[i].set(&aim_config_keys[i], &scratch, text, why, sizeof why) != 0) {
            combo_error(cfg, err, i, -1, why, aim_config_keys[i].allowed);
            return -1;
        }
    }
    /* the keys are in range: both families exist */
    const aim_family *student = aim_family_of(cfg->decomposition),
                     *teacher = aim_family_of(cfg->teacher.decomposition);
    int k_dec = aim_config_key_index("model", "decomposition");
    int k_tokens = aim_config_key_index("model", "tokens");
    int k_cov = aim_config_key_index("model", "covariance");
    int k_centring = aim_config_key_index("model", "centring");
    int k_hermite = aim_config_key_index("model", "hermite");
    int k_tdec = aim_config_key_index("teacher", "decomposition");
    int k_tmean = aim_config_key_index("teacher", "mean");
    int k_ssym = aim_config_key_index("student", "symmetric");
    int k_tsym = aim_config_key_index("teacher", "symmetric");
    int k_gstart = aim_config_key_index("training", "grid_start");
    int k_horizon = aim_config_key_index("training", "horizon");
    int k_quad = aim_config_key_index("ode", "quad_nodes");

    /* 2. covariance for the current tokens */
    double cov[AIM_MAX_TOKENS * AIM_MAX_TOKENS];
    char why[AIM_CONFIG_WHY];
    if (aim_config_covariance_parse(cfg->covariance, cfg->tokens, cov, NULL, 0, why,
                         sizeof why) != 0) {
        combo_error(cfg, err, k_cov, k_tokens, why, aim_config_keys[k_cov].allowed);
        return -1;
    }

    /* 3. impossible combinations */
    if (cfg->centring == AIM_RAW && student->psd) {
        combo_error(cfg, err, k_dec, k_centring,
                    "tied attention needs centred indices (its positive "
                    "semi-definite S has Tr S ~ d, so a raw index mean of "
                    "order sqrt d; theory/model.md sec. 2)",
                    "model.centring = centred, or model.decomposition = direct "
                    "| untied");
        return -1;
    }
    if (cfg->centring == AIM_RAW && teacher->psd) {
        combo_error(cfg, err, k_tdec, k_centring,
                    "a tied teacher needs centred indices (its positive "
                    "semi-definite S* has Tr S* ~ d, so a raw index mean of "
                    "order sqrt d; theory/model.md sec. 2)",
                    "model.centring = centred, or teacher.decomposition = "
                    "direct | untied");
        return -1;
    }
    if (cfg->teacher.mean != 0.0 && cfg->centring == AIM_CENTRED) {
        combo_error(cfg, err, k_tmean, k_centring,
                    "a teacher mean is invisible to centred indices",
                    "teacher.mean = 0, or model.centring = raw");
        return -1;
    }
    if (cfg->student.symmetric && !student->symmetric_key) {
        combo_error(cfg, err, k_ssym, k_dec,
                    "symmetric applies to direct students only (tied is "
                    "symmetric by construction, untied is not)",
                    "student.symmetric = false, or model.decomposition = direct");
        return -1;
    }
    if (cfg->teacher.symmetric && !teacher->symmetric_key) {
        combo_error(cfg, err, k_tsym, k_tdec,
                    "symmetric applies to direct teachers only (tied is "
                    "symmetric by construction, untied is not)",
                    "teacher.symmetric = false, or teacher.decomposition = direct");
        return -1;
    }
    if (cfg->grid == AIM_GRID_LOG && !(cfg->grid_start < cfg->horizon)) {
        char reason[AIM_CONFIG_WHY];
        snprintf(reason, sizeof reason,
                 "a log grid starts below the horizon (training.grid = log)");
        combo_error(cfg, err, k_gstart, k_horizon, reason,
                    "training.grid_start < training.horizon");
        return -1;
    }
    if (cfg->quad_nodes != 0 && cfg->output == AIM_ELEMENTWISE &&
        cfg->activation == AIM_ACT_HERMITE &&
        cfg->quad_nodes < 2 * cfg->hermite_degree) {
        char reason[AIM_CONFIG_WHY], allowed[AIM_CONFIG_WHY];
        snprintf(reason, sizeof reason,
                 "too few Gauss-Hermite nodes for a Hermite series of degree "
                 "%d (exact from 2 x degree = %d nodes)",
                 cfg->hermite_degree, 2 * cfg->hermite_degree);
        snprintf(allowed, sizeof allowed,
                 "ode.quad_nodes = 0 (automatic) or >= %d",
                 2 * cfg->hermite_degree);
        combo_error(cfg, err, k_quad, k_hermite, reason, allowed);
        return -1;
    }
    /* SGD runs that no machine can finish (and whose step counts would
     * overflow) are rejected rather than silently truncated. */
    const double steps = cfg->horizon * (double)cfg->d * cfg->d / cfg->eta;
    if (steps > 1e12) {
        char reason[AIM_CONFIG_WHY];
        snprintf(reason, sizeof reason,
                 "the SGD run would take %.3g steps (training.horizon x sgd.d^2 / "
                 "training.eta)", steps);
        combo_error(cfg, err, k_horizon, aim_config_key_index("training", "eta"), reason,
                    "at most 1e12 steps: a shorter horizon, a larger eta or a smaller sgd.d");
        return -1;
    }
    /* seed i is sgd.seed + i: the last one must not wrap around to 0 */
    if (cfg->seed > UINT64_MAX - (uint64_t)(cfg->seeds - 1)) {
        char reason[AIM_CONFIG_WHY], allowed[AIM_CONFIG_WHY];
        snprintf(reason, sizeof reason, "seeds sgd.seed .. sgd.seed + sgd.seeds - 1 pass "
                 "2^64 - 1 = %" PRIu64 " and would wrap around to 0", UINT64_MAX);
        snprintf(allowed, sizeof allowed, "sgd.seed <= %" PRIu64 " - (sgd.seeds - 1)",
                 UINT64_MAX);
        combo_error(cfg, err, aim_config_key_index("sgd", "seed"),
                    aim_config_key_index("sgd", "seeds"), reason, allowed);
        return -1;
    }
    /* the quasi-random rule whitens its point set: it needs clearly more
     * points than latent dimensions (2 T^2) */
    if (cfg->qmc_points < 64 * cfg->tokens * cfg->tokens) {
        char reason[AIM_CONFIG_WHY], allowed[AIM_CONFIG_WHY];
        snprintf(reason, sizeof reason,
                 "too few quasi-random points for T = %d (2 T^2 = %d latent dimensions)",
                 cfg->tokens, 2 * cfg->tokens * cfg->tokens);
        snprintf(allowed, sizeof allowed, "ode.qmc_points >= 64 T^2 = %d",
                 64 * cfg->tokens * cfg->tokens);
        combo_error(cfg, err, aim_config_key_index("ode", "qmc_points"), k_tokens, reason, allowed);
        return -1;
    }

    /* The matrix process integrates the raw mean as the stiff system at
     * finite d (theory/matrix.md sec. 5). */
    if (cfg->method == AIM_METHOD_MATRIX && cfg->centring == AIM_RAW &&
        cfg->mean_mode == AIM_MEAN_ADIABATIC) {
        combo_error(cfg, err, aim_config_key_index("ode", "method"),
                    aim_config_key_index("hierarchy", "mean"),
                    "the matrix limit process integrates the raw mean as the stiff system "
                    "at the finite d of the runs, not its adiabatic limit",
                    "hierarchy.mean = stiff with ode.method = matrix, or ode.method = auto");
        return -1;
    }

    /* The tied hierarchy has the letters S and S*, both symmetric. */
    if (student->symmetric && !aim_family_spec_symmetric(&cfg->teacher)) {
        combo_error(cfg, err, k_tdec, k_dec,
                    "a tied student needs a symmetric teacher (its moment "
                    "hierarchy has the symmetric letters S and S*)",
                    "teacher.decomposition = tied, or teacher.decomposition = "
                    "direct with teacher.symmetric = true");
        return -1;
    }

    /* the untied order parameters Omega and Psi are words of length 2 */
    if (cfg->order < student->min_order) {
        combo_error(cfg, err, aim_config_key_index("hierarchy", "order"), k_dec,
                    "the untied hierarchy needs words of length 2 (Omega and Psi of "
                    "S = U V^T are m(K k) and m(K K))",
                    "hierarchy.order >= 2");
        return -1;
    }
    /* the psd and quadrature closures' moment matrices are those of two
     * symmetric letters */
    if (student->closures_refused & (1u << cfg->closure)) {
        combo_error(cfg, err, aim_config_key_index("hierarchy", "closure"), k_dec,
                    "the psd and quadrature closures are built for the tied hierarchy's two "
                    "symmetric letters S, S* (theory/tied.md secs. 13, 14)",
                    "hierarchy.closure = aligned | cumulant | free | initial, or "
                    "model.decomposition = tied");
        return -1;
    }
    /* at even M the quadrature closure completes the teacher's moment matrix
     * as that of a positive semi-definite matrix */
    if (student->symmetric && cfg->closure == AIM_CLOSURE_QUADRATURE && !teacher->psd) {
        combo_error(cfg, err, aim_config_key_index("hierarchy", "closure"), k_tdec,
                    "the quadrature closure completes the teacher's moment matrix as that of "
                    "a positive semi-definite teacher (theory/tied.md sec. 14)",
                    "teacher.decomposition = tied, or hierarchy.closure = aligned | "
                    "cumulant | free | initial | psd");
        return -1;
    }

    if (validate_starts(cfg, err) || validate_save_state(cfg, err) || validate_fold(cfg, err))
        return -1;
    /* the informed start: a construction for this student and teacher
     * that reaches the overlap (src/students/inform.h) */
    if (cfg->student.overlap != 0.0) {
        double mixing;
        char reason[AIM_CONFIG_WHY];
        if (aim_inform_mixing(cfg, &mixing, reason, sizeof reason)) {
            combo_error(cfg, err, aim_config_key_index("student", "overlap"), k_tdec, reason,
                        aim_config_keys[aim_config_key_index("student", "overlap")].allowed);
            return -1;
        }
    }

    cfg->student.decomposition = cfg->decomposition;
    cfg->student.mean = 0.0;
    cfg->teacher.overlap = 0.0;
    memset(cfg->cov, 0, sizeof cfg->cov);
    memcpy(cfg->cov, cov, sizeof(double) * (size_t)(cfg->tokens * cfg->tokens));
    if (cfg->source[0] == '\0')
        snprintf(cfg->source, sizeof cfg->source, "built-in default");
    return 0;
}
