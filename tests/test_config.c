/* Configuration: defaults, examples, every error class with its location,
 * --set precedence, write -> reload round trip, and the documentation of
 * every key. */
#define _POSIX_C_SOURCE 200809L

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "config_check.h"
#include "config_keys.h"

/* ---------- temporary files ---------- */

static char tmpdir[512];
static char made[64][600];
static int nmade;

static int setup_tmpdir(void **state)
{
    (void)state;
    const char *base = getenv("TMPDIR");
    if (!base || !*base)
        base = "/tmp";
    snprintf(tmpdir, sizeof tmpdir, "%s/aimdyn_test_config_XXXXXX", base);
    if (!mkdtemp(tmpdir))
        return -1;
    nmade = 0;
    return 0;
}

static int remove_tmpdir(void **state)
{
    (void)state;
    for (int i = 0; i < nmade; i++)
        remove(made[i]);
    nmade = 0;
    return rmdir(tmpdir);
}

/* Path of a file in the temporary directory (remembered for clean-up). */
static const char *tmp_path(const char *name)
{
    for (int i = 0; i < nmade; i++) {
        const char *slash = strrchr(made[i], '/');
        if (slash && strcmp(slash + 1, name) == 0)
            return made[i];
    }
    assert_true(nmade < 64);
    snprintf(made[nmade], sizeof made[nmade], "%s/%s", tmpdir, name);
    return made[nmade++];
}

static const char *write_tmp(const char *name, const char *text)
{
    const char *path = tmp_path(name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

static char *read_all(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    size_t got = fread(buf, 1, (size_t)n, f);
    buf[got] = '\0';
    fclose(f);
    return buf;
}

static const char *source_root(void)
{
    const char *root = getenv("AIMDYN_SOURCE_ROOT");
    return (root && *root) ? root : ".";
}

#define assert_contains(haystack, needle)                                    \
    do {                                                                     \
        const char *h_ = (haystack), *n_ = (needle);                         \
        if (!strstr(h_, n_))                                                 \
            fail_msg("\"%s\"\n  does not contain \"%s\"", h_, n_);           \
    } while (0)

/* ---------- error helpers ---------- */

/* The file must fail to load (stage 0) or load and fail validation
 * (stage 1); the message names the file, line, key and value. */
static void expect_file_error(const char *name, const char *text, int stage,
                              int line, const char *key, const char *value,
                              const char *reason)
{
    const char *path = write_tmp(name, text);
    aim_config cfg, before;
    aim_config_error err;
    aim_config_defaults(&cfg);
    before = cfg;
    int rc = aim_config_load(&cfg, path, &err);
    if (stage == 0) {
        if (rc == 0)
            fail_msg("%s loaded, expected an error about %s", name, key);
        /* a failed load leaves cfg unchanged */
        assert_memory_equal(&cfg, &before, sizeof cfg);
    } else {
        if (rc != 0)
            fail_msg("%s: load failed: %s", name, err.message);
        rc = aim_config_validate(&cfg, &err);
        if (rc == 0)
            fail_msg("%s validated, expected an error about %s", name, key);
    }
    char loc[700];
    snprintf(loc, sizeof loc, "%s:%d:", path, line);
    assert_contains(err.message, loc);
    assert_contains(err.message, key);
    assert_contains(err.message, value);
    if (reason)
        assert_contains(err.message, reason);
    assert_contains(err.message, "allowed");
}

static void expect_set_error(const char *assignment, const char *key,
                             const char *value, const char *reason)
{
    aim_config cfg, before;
    aim_config_error err;
    aim_config_defaults(&cfg);
    before = cfg;
    assert_int_equal(aim_config_set(&cfg, assignment, &err), -1);
    assert_memory_equal(&cfg, &before, sizeof cfg);
    char prefix[300];
    snprintf(prefix, sizeof prefix, "--set %s: ", assignment);
    if (strncmp(err.message, prefix, strlen(prefix)) != 0)
        fail_msg("\"%s\" does not start with \"%s\"", err.message, prefix);
    assert_contains(err.message, key);
    assert_contains(err.message, value);
    if (reason)
        assert_contains(err.message, reason);
}

/* ---------- tests ---------- */

static void test_defaults(void **state)
{
    (void)state;
    aim_config cfg;
    aim_config_error err;
    aim_config_defaults(&cfg);
    if (aim_config_validate(&cfg, &err) != 0)
        fail_msg("defaults: %s", err.message);
    assert_int_equal(cfg.decomposition, AIM_DIRECT);
    assert_int_equal(cfg.student.decomposition, AIM_DIRECT);
    assert_int_equal(cfg.tokens, 2);
    assert_int_equal(cfg.centring, AIM_CENTRED);
    assert_int_equal(cfg.output, AIM_ELEMENTWISE);
    assert_int_equal(cfg.activation, AIM_ACT_HERMITE);
    assert_true(cfg.hermite[0] == 0.0 && cfg.hermite[1] == 1.0);
    assert_true(cfg.hermite[2] == 0.70710678118654752);
    assert_int_equal(cfg.hermite_degree, 2);
    assert_true(cfg.cov[0] == 1.0 && cfg.cov[1] == 0.0 && cfg.cov[2] == 0.0 &&
                cfg.cov[3] == 1.0);
    assert_true(cfg.beta == 1.0 && cfg.noise == 0.0);
    assert_true(cfg.student.scale == 0.25 && cfg.teacher.scale == 1.0);
    assert_true(cfg.student.rho == 1.0 && cfg.teacher.mean == 0.0);
    assert_true(cfg.eta == 0.1 && cfg.gamma == 0.0 && cfg.horizon == 0.3);
    assert_int_equal(cfg.points, 31);
    assert_int_equal(cfg.grid, AIM_GRID_LINEAR);
    assert_true(cfg.grid_start == 1e-3);
    assert_true(cfg.rtol == 1e-6 && cfg.atol == 1e-9 && cfg.blowup == 1e4);
    assert_int_equal(cfg.quad_nodes, 0);
    assert_int_equal(cfg.qmc_points, 16384);
    assert_true(cfg.ode_d == 0.0);
    assert_int_equal(cfg.d, 200);
    assert_int_equal(cfg.seeds, 8);
    assert_true(cfg.seed == 1);
    assert_int_equal(cfg.block, 64);
    assert_string_equal(cfg.dir, "out");
    assert_string_equal(cfg.name, "aimdyn");
    assert_string_equal(cfg.source, "built-in default");

    /* load(NULL) leaves cfg untouched */
    aim_config copy = cfg;
    assert_int_equal(aim_config_load(&cfg, NULL, &err), 0);
    assert_memory_equal(&cfg, &copy, sizeof cfg);

    /* p = round(rho d), at least 1 */
    aim_matrix_spec spec = cfg.student;
    spec.rho = 0.5;
    assert_int_equal(aim_config_columns(&spec, 401), 201);
    spec.rho = 1e-6;
    assert_int_equal(aim_config_columns(&spec, 400), 1);
    spec.rho = 2.0;
    assert_int_equal(aim_config_columns(&spec, 400), 800);
}

static void test_examples(void **state)
{
    (void)state;
    static const char *expected[] = {"default.ini",        "direct_he1he2_T2.ini",
                                     "direct_he1he2_T4.ini", "direct_he2.ini",
                                     "direct_raw_mean.ini", "direct_softmax_T4.ini"};
    char dirpath[600];
    snprintf(dirpath, sizeof dirpath, "%s/examples", source_root());
    DIR *dir = opendir(dirpath);
    if (!dir)
        fail_msg("cannot open %s (set AIMDYN_SOURCE_ROOT)", dirpath);
    char names[64][128];
    int count = 0, found = 0;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 4, ".ini") != 0)
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dirpath, e->d_name);
        aim_config cfg;
        aim_config_error err;
        aim_config_defaults(&cfg);
        if (aim_config_load(&cfg, path, &err) != 0)
            fail_msg("%s", err.message);
        if (aim_config_validate(&cfg, &err) != 0)
            fail_msg("%s", err.message);
        assert_string_equal(cfg.source, path);
        for (int i = 0; i < count; i++)
            if (strcmp(names[i], cfg.name) == 0)
                fail_msg("%s: output.name %s used twice", path, cfg.name);
        assert_true(count < 64);
        snprintf(names[count++], sizeof names[0], "%s", cfg.name);
        for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++)
            if (strcmp(e->d_name, expected[i]) == 0)
                found++;

        /* each example says how to run it */
        char *text = read_all(path);
        assert_non_null(text);
        char run[300];
        snprintf(run, sizeof run, "aimdyn compare examples/%s", e->d_name);
        assert_contains(text, run);
        free(text);

        if (strcmp(e->d_name, "default.ini") == 0) {
            aim_config def;
            aim_config_defaults(&def);
            assert_int_equal(aim_config_validate(&def, &err), 0);
            assert_memory_equal(&cfg, &def, offsetof(aim_config, dir));
            assert_string_equal(cfg.dir, def.dir);
            assert_string_equal(cfg.covariance, def.covariance);
        }
        if (strcmp(e->d_name, "direct_he2.ini") == 0) {
            assert_int_equal(cfg.hermite_degree, 2);
            assert_true(cfg.hermite[2] == 1.0 && cfg.hermite[1] == 0.0);
        }
        if (strcmp(e->d_name, "direct_raw_mean.ini") == 0) {
            assert_int_equal(cfg.centring, AIM_RAW);
            assert_true(cfg.teacher.mean == 1.0);
            assert_int_equal(cfg.grid, AIM_GRID_LOG);
        }
        if (strcmp(e->d_name, "direct_softmax_T4.ini") == 0) {
            assert_int_equal(cfg.output, AIM_SOFTMAX);
            assert_int_equal(cfg.tokens, 4);
        }
    }
    closedir(dir);
    assert_int_equal(found, (int)(sizeof expected / sizeof expected[0]));
}

static void test_file_errors(void **state)
{
    (void)state;
    /* unknown section, unknown key */
    expect_file_error("sec.ini", "[model]\ntokens = 2\n\n[trainig]\neta = 0.1\n", 0,
                      4, "trainig", "[trainig]", "unknown section");
    /* an unknown section is refused even without keys under it */
    expect_file_error("emptysec.ini", "[model]\ntokens = 2\n[frobnicate]\n", 0, 3,
                      "frobnicate", "[frobnicate]", "unknown section");
    expect_file_error("emptysec2.ini", "[model]\n  [ode] ; comment\n[ sgd ]\n", 0, 3,
                      " sgd ", "[ sgd ]", "unknown section");
    expect_file_error("key.ini", "; c\n[training]\netaa = 0.1\n", 0, 3,
                      "training.etaa", "0.1", "unknown key");
    expect_file_error("nosec.ini", "eta = 0.1\n", 0, 1, "eta", "0.1", NULL);
    /* malformed numbers */
    expect_file_error("num.ini", "[training]\n\n\neta = 0.1x\n", 0, 4,
                      "training.eta", "\"0.1x\"", "not a number");
    expect_file_error("num2.ini", "[sgd]\nd = 4e2\n", 0, 2, "sgd.d", "4e2",
                      "not an integer");
    expect_file_error("num3.ini", "[model]\nhermite = 0 1 x\n", 0, 2,
                      "model.hermite", "0 1 x", "not a number");
    expect_file_error("num4.ini", "[training]\neta =\n", 0, 2, "training.eta",
                      "\"\"", "not a number");
    /* non-finite */
    expect_file_error("inf.ini", "[training]\nhorizon = inf\n", 0, 2,
                      "training.horizon", "inf", "not finite");
    expect_file_error("nan.ini", "[model]\nnoise = nan\n", 0, 2, "model.noise",
                      "nan", "not finite");
    expect_file_error("huge.ini", "[teacher]\nmean = 1e400\n", 0, 2,
                      "teacher.mean", "1e400", "not finite");
    /* out of range */
    expect_file_error("range1.ini", "[training]\neta = 0\n", 0, 2, "training.eta",
                      "\"0\"", "out of range");
    expect_file_error("range2.ini", "[model]\ntokens = 9\n", 0, 2, "model.tokens",
                      "9", "out of range");
    expect_file_error("range3.ini", "[ode]\nrtol = 0.5\n", 0, 2, "ode.rtol", "0.5",
                      "out of range");
    expect_file_error("range4.ini", "[ode]\nquad_nodes = 1\n", 0, 2,
                      "ode.quad_nodes", "1", "out of range");
    expect_file_error("range5.ini", "[ode]\nd = 0.5\n", 0, 2, "ode.d", "0.5",
                      "out of range");
    expect_file_error("range6.ini", "[sgd]\nseed = -1\n", 0, 2, "sgd.seed", "-1",
                      "out of range");
    expect_file_error("range7.ini", "[sgd]\nseed = 18446744073709551616\n", 0, 2,
                      "sgd.seed", "18446744073709551616", "out of range");
    /* bad words */
    expect_file_error("enum1.ini", "[model]\noutput = sigmoid\n", 0, 2,
                      "model.output", "sigmoid", "unknown value");
    expect_file_error("enum2.ini", "[model]\nactivation = he5\n", 0, 2,
                      "model.activation", "he5", "unknown value");
    expect_file_error("enum3.ini", "[student]\nsymmetric = maybe\n", 0, 2,
                      "student.symmetric", "maybe", "not a boolean");
    expect_file_error("name.ini", "[output]\nname = a/b\n", 0, 2, "output.name",
                      "a/b", "not allowed");
    expect_file_error("zero.ini", "[model]\nhermite = 0 0 0\n", 0, 2,
                      "model.hermite", "0 0 0", "zero");
    /* bad covariances */
    expect_file_error("cov1.ini", "[model]\ncovariance = 1 0.5 0.4 1\n", 0, 2,
                      "model.covariance", "1 0.5 0.4 1", "not symmetric");
    expect_file_error("cov2.ini", "[model]\ncovariance = 1 0.5 0.5 2\n", 0, 2,
                      "model.covariance", "1 0.5 0.5 2", "diagonal");
    expect_file_error("cov3.ini", "[model]\ncovariance = 1 2 2 1\n", 0, 2,
                      "model.covariance", "1 2 2 1", "not positive definite");
    expect_file_error("cov4.ini",
                      "[model]\ntokens = 3\ncovariance = 1 0 0 1\n", 0, 3,
                      "model.covariance", "1 0 0 1", "needs 9");
    expect_file_error("cov5.ini", "[model]\ncovariance = 1 0 0 1 0\n", 0, 2,
                      "model.covariance", "1 0 0 1 0", "square");
    expect_file_error("cov6.ini",
                      "[model]\ncovariance = equicorrelated:-0.4\ntokens = 4\n", 0,
                      2, "model.covariance", "equicorrelated:-0.4", "-1/(T-1)");
    expect_file_error("cov7.ini", "[model]\ncovariance = equicorrelated:1\n", 0, 2,
                      "model.covariance", "equicorrelated:1", "R < 1");
    expect_file_error("cov8.ini", "[model]\ncovariance = unit\n", 0, 2,
                      "model.covariance", "unit", NULL);
    /* impossible combinations (found by validate, located by line) */
    expect_file_error("combo1.ini",
                      "[model]\ncentring = raw\n[teacher]\ndecomposition = tied\n",
                      1, 4, "teacher.decomposition", "tied", "centred");
    expect_file_error("combo2.ini",
                      "[teacher]\nmean = 1\n", 1, 2, "teacher.mean", "\"1\"",
                      "model.centring");
    expect_file_error("combo3.ini",
                      "[model]\ndecomposition = untied\n[hierarchy]\norder = 1\n", 1, 4,
                      "hierarchy.order", "1", "hierarchy.order >= 2");
    expect_file_error("combo4.ini",
                      "[model]\ndecomposition = tied\ncentring = raw\n", 1, 3,
                      "model.decomposition", "tied", "model.centring");
    expect_file_error("combo5.ini",
                      "[teacher]\ndecomposition = untied\nsymmetric = true\n", 1,
                      3, "teacher.symmetric", "true", "teacher.decomposition");
    expect_file_error("combo6.ini",
                      "[student]\nsymmetric = yes\n[model]\ndecomposition = tied\n",
                      1, 4, "model.decomposition", "tied", "student.symmetric");
    expect_file_error("combo6b.ini", "[model]\ndecomposition = tied\n", 1, 2,
                      "model.decomposition", "tied", "symmetric teacher");
    expect_file_error("combo7.ini",
                      "[training]\ngrid = log\ngrid_start = 0.6\n", 1, 3,
                      "training.grid_start", "0.6", "training.horizon");
    expect_file_error("combo8.ini", "[ode]\nquad_nodes = 3\n", 1, 2,
                      "ode.quad_nodes", "3", "model.hermite");
    expect_file_error("combo9.ini",
                      "[model]\ndecomposition = untied\n[hierarchy]\nclosure = psd\n", 1, 4,
                      "hierarchy.closure", "psd", "model.decomposition = tied");
    expect_file_error("combo9b.ini",
                      "[model]\ndecomposition = untied\n[hierarchy]\nclosure = quadrature\n", 1,
                      4, "hierarchy.closure", "quadrature", "model.decomposition = tied");
    expect_file_error("combo9c.ini",
                      "[model]\ndecomposition = tied\n[teacher]\ndecomposition = direct\n"
                      "symmetric = yes\n[hierarchy]\nclosure = quadrature\n",
                      1, 7, "hierarchy.closure", "quadrature", "teacher.decomposition = tied");
    /* seeds sgd.seed .. sgd.seed + sgd.seeds - 1 must not wrap around */
    expect_file_error("seedwrap.ini", "[sgd]\nseed = 18446744073709551610\nseeds = 7\n", 1,
                      3, "sgd.seeds", "sgd.seed = \"18446744073709551610\"", "wrap");
    /* syntax error (the line quoted) and missing file */
    expect_file_error("syntax.ini", "[model]\ntokens 2\n", 0, 2, "\"tokens 2\"",
                      "syntax error", NULL);
    aim_config cfg;
    aim_config_error err;
    aim_config_defaults(&cfg);
    assert_int_equal(aim_config_load(&cfg, tmp_path("missing.ini"), &err), -1);
    assert_contains(err.message, "missing.ini");
}

static void test_file_accepts(void **state)
{
    (void)state;
    const char *path = write_tmp(
        "ok.ini",
        "# comment\n"
        "model.tokens = 3\n"
        "[training]\n"
        "eta = 0.2 ; inline comment\n"
        "eta = 0.05\n"
        "  points = 7\n"
        "grid = LOG\n"
        "[model]\n"
        "covariance = 1,0.5,0.5; 0.5,1,0.5; 0.5 0.5 1\n"
        "activation = he1\n"
        "centring = raw\n"
        "[teacher]\n"
        "mean = -2\n"
        "decomposition = tied\n"
        "decomposition = untied\n"
        "[output]\n"
        "dir = \" a dir;x \"\n");
    aim_config cfg;
    aim_config_error err;
    aim_config_defaults(&cfg);
    if (aim_config_load(&cfg, path, &err) != 0)
        fail_msg("%s", err.message);
    if (aim_config_validate(&cfg, &err) != 0)
        fail_msg("%s", err.message);
    assert_int_equal(cfg.tokens, 3);
    assert_true(cfg.eta == 0.05); /* last wins */
    assert_int_equal(cfg.points, 7);
    assert_int_equal(cfg.grid, AIM_GRID_LOG);
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++)
            assert_true(cfg.cov[a * 3 + b] == (a == b ? 1.0 : 0.5));
    assert_int_equal(cfg.hermite_degree, 1);
    assert_true(cfg.hermite[1] == 1.0 && cfg.hermite[2] == 0.0);
    assert_true(cfg.teacher.mean == -2.0);
    assert_int_equal(cfg.teacher.decomposition, AIM_UNTIED);
    assert_string_equal(cfg.dir, " a dir;x ");
    assert_string_equal(cfg.source, path);

    /* a long line: an explicit 8 x 8 covariance at full precision */
    char text[4096] = "[model]\ntokens = 8\ncovariance =";
    for (int a = 0; a < 8; a++)
        for (int b = 0; b < 8; b++) {
            size_t used = strlen(text);
            snprintf(text + used, sizeof text - used, " %.17g",
                     a == b ? 1.0 : 0.012345678901234567);
        }
    strcat(text, "\n[sgd]\nd = 800\n");
    path = write_tmp("long.ini", text);
    aim_config_defaults(&cfg);
    if (aim_config_load(&cfg, path, &err) != 0)
        fail_msg("%s", err.message);
    if (aim_config_validate(&cfg, &err) != 0)
        fail_msg("%s", err.message);
    assert_int_equal(cfg.tokens, 8);
    assert_true(cfg.cov[1] == 0.012345678901234567 && cfg.cov[63] == 1.0);
    assert_int_equal(cfg.d, 800);
    /* loads apply on top of the current configuration */
    path = write_tmp("ontop.ini", "[sgd]\nseeds = 3\n");
    assert_int_equal(aim_config_load(&cfg, path, &err), 0);
    assert_int_equal(cfg.d, 800);
    assert_int_equal(cfg.seeds, 3);
    assert_int_equal(cfg.tokens, 8);
}

/* Writes n bytes (NULs included) to a temporary file. */
static const char *write_bytes(const char *name, const char *bytes, size_t n)
{
    const char *path = tmp_path(name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(bytes, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
    return path;
}

/* Loads path; returns the message ("" when it loaded). */
static const char *load_message(const char *path, aim_config *cfg)
{
    static aim_config_error err;
    aim_config_defaults(cfg);
    if (aim_config_load(cfg, path, &err) == 0)
        err.message[0] = '\0';
    return err.message;
}

/* "[model]\n" + a comment of len bytes ('x' after ';') + "\n" + tail. */
static const char *long_comment(const char *name, size_t len, const char *tail)
{
    size_t n = 8 + len + 1 + strlen(tail);
    char *text = malloc(n);
    assert_non_null(text);
    memcpy(text, "[model]\n;", 9);
    memset(text + 9, 'x', len - 1);
    text[8 + len] = '\n';
    memcpy(text + 9 + len, tail, strlen(tail));
    const char *path = write_bytes(name, text, n);
    free(text);
    return path;
}

/* What inih could not see or said wrongly: a NUL byte inside a value (it
 * cut the value short), a line too long for its buffer (a "syntax
 * error" on the wrong line), lines that cross its 512-byte first read,
 * a last line without a line break, a file too large. */
static void test_file_input_limits(void **state)
{
    (void)state;
    aim_config cfg;
    char loc[700];
    static const char nul[] = "[model]\nactivation = he1\0junk\n";
    const char *path = write_bytes("nul.ini", nul, sizeof nul - 1);
    const char *msg = load_message(path, &cfg);
    snprintf(loc, sizeof loc, "%s:2:", path);
    assert_contains(msg, loc);
    assert_contains(msg, "NUL byte at column 17");

    /* 65533 bytes is the longest line (inih's 64 KiB buffer holds it,
     * "\r\n" and the NUL); the line numbers after it stay right */
    path = long_comment("edge.ini", 65533, "tokens = 3\nspeed = 1\n");
    msg = load_message(path, &cfg);
    snprintf(loc, sizeof loc, "%s:4:", path);
    assert_contains(msg, loc);
    assert_contains(msg, "unknown key \"speed\"");
    path = long_comment("long.ini", 65534, "tokens = 3\n");
    msg = load_message(path, &cfg);
    snprintf(loc, sizeof loc, "%s:2:", path);
    assert_contains(msg, loc);
    assert_contains(msg, "line longer than 65533 bytes");
    path = long_comment("longer.ini", 70000, "tokens = 3\n");
    msg = load_message(path, &cfg);
    assert_contains(msg, loc + strlen(path)); /* ":2:" */
    assert_contains(msg, "line longer than 65533 bytes");

    /* values on lines of 511 .. 513 bytes (inih reads 511 at first, then
     * grows its buffer) and a last line without a line break */
    for (int len = 511; len <= 513; len++) {
        char text[700] = "[model]\nhermite = 0";
        size_t used = strlen(text) - 8;
        while (used < (size_t)len - 1)
            text[8 + used++] = ' ';
        strcpy(text + 8 + used, "1\ntokens = 1");
        assert_int_equal(strlen(text), 8 + (size_t)len + strlen("\ntokens = 1"));
        path = write_tmp("edge512.ini", text);
        msg = load_message(path, &cfg);
        assert_string_equal(msg, "");
        assert_true(cfg.hermite[0] == 0.0 && cfg.hermite[1] == 1.0);
        assert_int_equal(cfg.hermite_degree, 1);
        assert_int_equal(cfg.tokens, 1);
    }

    /* a UTF-8 byte-order mark before the first section */
    path = write_tmp("bom.ini", "\xEF\xBB\xBF[model]\ntokens = 3\n");
    assert_string_equal(load_message(path, &cfg), "");
    assert_int_equal(cfg.tokens, 3);

    /* more than 1 MiB: a configuration is a few dozen short lines */
    size_t big = (1 << 20) + 1;
    char *text = malloc(big);
    assert_non_null(text);
    for (size_t i = 0; i < big; i++)
        text[i] = i % 100 == 99 ? '\n' : i % 100 == 0 ? ';' : 'x';
    path = write_bytes("big.ini", text, big);
    free(text);
    msg = load_message(path, &cfg);
    assert_contains(msg, "1048576 bytes");
    assert_contains(msg, "allowed");
}

static void test_set(void **state)
{
    (void)state;
    const char *path = write_tmp("set.ini", "[training]\neta = 0.2\n[sgd]\nd = 800\n");
    aim_config cfg;
    aim_config_error err;
    aim_config_defaults(&cfg);
    assert_int_equal(aim_config_load(&cfg, path, &err), 0);
    assert_true(cfg.eta == 0.2);
    assert_int_equal(aim_config_set(&cfg, "training.eta=0.05", &err), 0);
    assert_int_equal(aim_config_set(&cfg, " model.hermite = \"0 0 1\" ", &err), 0);
    assert_int_equal(aim_config_set(&cfg, "sgd.seed=18446744073709551615", &err), 0);
    assert_int_equal(aim_config_set(&cfg, "sgd.seeds=1", &err), 0); /* the last seed */
    assert_int_equal(aim_config_set(&cfg, "model.tokens=3", &err), 0);
    assert_int_equal(aim_config_set(&cfg, "model.covariance=equicorrelated:0.25", &err), 0);
    assert_int_equal(aim_config_validate(&cfg, &err), 0);
    assert_true(cfg.eta == 0.05);        /* --set beats the file */
    assert_int_equal(cfg.d, 800);        /* the rest of the file stays */
    assert_int_equal(cfg.hermite_degree, 2);
    assert_true(cfg.seed == UINT64_MAX);
    assert_true(cfg.cov[1] == 0.25 && cfg.cov[4] == 1.0);

    /* the covariance may come before the tokens it needs */
    aim_config_defaults(&cfg);
    assert_int_equal(aim_config_set(&cfg, "model.covariance=1 0 0 0 1 0 0 0 1", &err), 0);
    assert_int_equal(aim_config_validate(&cfg, &err), -1);
    assert_contains(err.message, "model.covariance");
    assert_contains(err.message, "model.tokens");
    assert_int_equal(aim_config_set(&cfg, "model.tokens=3", &err), 0);
    assert_int_equal(aim_config_validate(&cfg, &err), 0);

    /* errors */
    expect_set_error("training.eta=-1", "training.eta", "\"-1\"", "out of range");
    expect_set_error("training.eta=abc", "training.eta", "abc", "not a number");
    expect_set_error("training.eta=inf", "training.eta", "inf", "not finite");
    expect_set_error("foo.eta=1", "foo", "1", "unknown section");
    expect_set_error("training.etaa=1", "training.etaa", "1", "unknown key");
    expect_set_error("model.output=sigmoid", "model.output", "sigmoid",
                     "unknown value");
    expect_set_error("model.covariance=1 2 2 1", "model.covariance", "1 2 2 1",
                     "positive definite");
    expect_set_error("training.eta", "", "", "section.key=value");
    expect_set_error("output.dir=a ;b", "output.dir", "a ;b", "';'");
    expect_set_error("eta=1", "", "", "section.key=value");

    /* combination errors after --set name the override */
    aim_config_defaults(&cfg);
    assert_int_equal(aim_config_set(&cfg, "teacher.mean=0.5", &err), 0);
    assert_int_equal(aim_config_validate(&cfg, &err), -1);
    assert_contains(err.message, "--set teacher.mean=0.5");
    assert_contains(err.message, "model.centring");
    assert_int_equal(aim_config_set(&cfg, "model.centring=raw", &err), 0);
    assert_int_equal(aim_config_validate(&cfg, &err), 0);

    /* validate re-checks fields changed directly */
    aim_config_defaults(&cfg);
    cfg.points = 1;
    assert_int_equal(aim_config_validate(&cfg, &err), -1);
    assert_contains(err.message, "training.points");
}

/* A configuration far from the defaults, with awkward reals. */
static void unusual_config(aim_config *cfg)
{
    aim_config_error err;
    static const char *sets[] = {
        "model.tokens=3",
        "model.covariance=1 0.1 -0.2; 0.1 1 0.30000000000000004; -0.2 0.30000000000000004 1",
        "model.centring=raw",
        "model.output=softmax",
        "model.activation=hermite",
        "model.hermite=0.1 0.2 0.3 0.4 0.5 0.6 0.7 0.8 -1e-300",
        "model.beta=3.3333333333333335",
        "model.noise=1e-7",
        "student.symmetric=yes",
        "student.rho=0.7",
        "student.scale=0.123456789012345678",
        "teacher.decomposition=untied",
        "teacher.rho=2.5",
        "teacher.scale=1.1",
        "teacher.mean=-0.7071067811865476",
        "training.eta=0.07",
        "training.gamma=1e-3",
        "training.horizon=1.2345",
        "training.points=77",
        "training.grid=log",
        "training.grid_start=1.2345678901234567e-99", /* near its floor, 1e-100 */
        "ode.rtol=1e-8",
        "ode.atol=1e-12",
        "ode.quad_nodes=20",
        "ode.qmc_points=1024",
        "ode.d=123.5",
        "ode.blowup=1e6",
        "sgd.d=256",
        "sgd.seeds=3",
        "sgd.seed=12345678901234567890",
        "sgd.block=4",
        "output.dir= tmp;out ",
        "output.name=run-1.a_b",
    };
    aim_config_defaults(cfg);
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++)
        if (aim_config_set(cfg, sets[i], &err) != 0)
            fail_msg("%s", err.message);
    if (aim_config_validate(cfg, &err) != 0)
        fail_msg("%s", err.message);
}

static void assert_same_config(const aim_config *a, const aim_config *b)
{
    /* every numeric field precedes dir */
    assert_memory_equal(a, b, offsetof(aim_config, dir));
    assert_string_equal(a->dir, b->dir);
    assert_string_equal(a->name, b->name);
    assert_string_equal(a->covariance, b->covariance);
}

static void test_round_trip(void **state)
{
    (void)state;
    aim_config cfg, back;
    aim_config_error err;
    unusual_config(&cfg);
    assert_string_equal(cfg.dir, "tmp;out");
    assert_true(cfg.seed == 12345678901234567890ULL);

    /* empty prefix: the written text is a config file */
    const char *path = tmp_path("written.ini");
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    aim_config_write(&cfg, f, "");
    fclose(f);
    aim_config_defaults(&back);
    if (aim_config_load(&back, path, &err) != 0)
        fail_msg("%s", err.message);
    if (aim_config_validate(&back, &err) != 0)
        fail_msg("%s", err.message);
    assert_same_config(&cfg, &back);

    /* "# " metadata lines, fed back through --set */
    path = tmp_path("written_meta.txt");
    f = fopen(path, "w");
    assert_non_null(f);
    aim_config_write(&cfg, f, "# ");
    fclose(f);
    char *text = read_all(path);
    assert_non_null(text);
    aim_config_defaults(&back);
    int lines = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        assert_true(strncmp(line, "# ", 2) == 0);
        if (aim_config_set(&back, line + 2, &err) != 0)
            fail_msg("%s", err.message);
        lines++;
    }
    free(text);
    if (aim_config_validate(&back, &err) != 0)
        fail_msg("%s", err.message);
    assert_same_config(&cfg, &back);

    /* defaults round trip too, and every key is written once */
    aim_config_defaults(&cfg);
    assert_int_equal(aim_config_validate(&cfg, &err), 0);
    path = tmp_path("written_default.ini");
    f = fopen(path, "w");
    assert_non_null(f);
    aim_config_write(&cfg, f, NULL);
    fclose(f);
    text = read_all(path);
    int n = 0;
    for (const char *p = text; *p; p++)
        n += *p == '\n';
    free(text);
    assert_int_equal(n, lines);
    aim_config_defaults(&back);
    back.eta = 0.3; /* the file must set every key */
    back.tokens = 5;
    assert_int_equal(aim_config_load(&back, path, &err), 0);
    assert_int_equal(aim_config_validate(&back, &err), 0);
    assert_same_config(&cfg, &back);
}

/* aim_config_get gives every key as aim_config_write writes it, and
 * refuses an unknown key or a buffer too small; aim_config_new holds the
 * defaults. */
static void test_get(void **state)
{
    (void)state;
    aim_config cfg;
    aim_config_error err;
    unusual_config(&cfg);
    for (int i = 0; i < aim_config_nkeys; i++) {
        const aim_config_key *k = &aim_config_keys[i];
        char name[200], written[2200], got[2200];
        snprintf(name, sizeof name, "%s.%s", k->section, k->key);
        k->get(k, &cfg, written, sizeof written); /* what aim_config_write writes */
        if (aim_config_get(&cfg, name, got, sizeof got, &err) != 0)
            fail_msg("%s", err.message);
        assert_string_equal(got, written);
    }

    char small[4];
    assert_int_equal(aim_config_get(&cfg, "training.eta", small, sizeof small, &err), -1);
    assert_contains(err.message, "training.eta");
    char buf[64];
    assert_int_equal(aim_config_get(&cfg, "training.nokey", buf, sizeof buf, &err), -1);
    assert_contains(err.message, "training.nokey: no such key");
    assert_int_equal(aim_config_get(&cfg, "training", buf, sizeof buf, &err), -1);
    assert_int_equal(aim_config_get(&cfg, "trainingx.eta", buf, sizeof buf, &err), -1);
    assert_int_equal(aim_config_get(&cfg, "training.eta", buf, sizeof buf, NULL), 0);
    assert_string_equal(buf, "0.07");

    aim_config *heap = aim_config_new();
    assert_non_null(heap);
    aim_config_defaults(&cfg);
    assert_same_config(heap, &cfg);
    aim_config_free(heap);
    aim_config_free(NULL);
}

/* Every key written by aim_config_write ("section.key = ...") appears in
 * docs/config.md (as `section.key`) and in aim_config_describe. */
static void test_docs(void **state)
{
    (void)state;
    char docpath[600];
    snprintf(docpath, sizeof docpath, "%s/docs/config.md", source_root());
    char *doc = read_all(docpath);
    if (!doc)
        fail_msg("cannot read %s", docpath);

    aim_config cfg;
    aim_config_defaults(&cfg);
    const char *keys_path = tmp_path("keys.txt");
    const char *help_path = tmp_path("describe.txt");
    FILE *f = fopen(keys_path, "w");
    assert_non_null(f);
    aim_config_write(&cfg, f, "");
    fclose(f);
    f = fopen(help_path, "w");
    assert_non_null(f);
    aim_config_describe(f);
    fclose(f);
    char *keys = read_all(keys_path);
    char *help = read_all(help_path);
    assert_non_null(keys);
    assert_non_null(help);

    int count = 0;
    for (char *line = strtok(keys, "\n"); line; line = strtok(NULL, "\n")) {
        char *eq = strstr(line, " = ");
        assert_non_null(eq);
        *eq = '\0';
        char quoted[200];
        snprintf(quoted, sizeof quoted, "`%s`", line);
        if (!strstr(doc, quoted))
            fail_msg("%s does not document %s", docpath, quoted);
        assert_contains(help, line);
        count++;
    }
    assert_true(count >= 35);
    assert_true(count <= AIM_CONFIG_MAX_KEYS);
    free(keys);
    free(help);
    free(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),   cmocka_unit_test(test_examples),
        cmocka_unit_test(test_file_errors), cmocka_unit_test(test_file_accepts),
        cmocka_unit_test(test_file_input_limits),
        cmocka_unit_test(test_set),        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_get),        cmocka_unit_test(test_docs),
    };
    return cmocka_run_group_tests(tests, setup_tmpdir, remove_tmpdir);
}
