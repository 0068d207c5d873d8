/* Output layer: atomic TSV files, the tau grid, the teacher overlap and
 * the SGD statistics / ODE gaps. */
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
#include <sys/stat.h>
#include <unistd.h>

#include "compare.h"
#include "config.h"
#include "config_check.h"
#include "grid.h"
#include "overlaps.h"
#include "tsv.h"
#include <jansson.h>
#include "version.h"

/* ---------- helpers ---------- */

/* |a - b| <= tol in double precision (NaN fails). */
#define assert_close(a, b, tol)                                              \
    do {                                                                     \
        double a_ = (a), b_ = (b), t_ = (tol);                               \
        if (!(fabs(a_ - b_) <= t_))                                          \
            fail_msg("%s = %.17g, expected %.17g (tol %g)", #a, a_, b_, t_); \
    } while (0)

static char *make_tmpdir(void)
{
    const char *base = getenv("TMPDIR");
    if (!base || !*base)
        base = "/tmp";
    char *t = malloc(strlen(base) + 32);
    assert_non_null(t);
    sprintf(t, "%s/aimdyn-test-XXXXXX", base);
    assert_non_null(mkdtemp(t));
    return t;
}

static void remove_tree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return;
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        if (d) {
            struct dirent *e;
            while ((e = readdir(d))) {
                if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                    continue;
                char sub[4096];
                snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
                remove_tree(sub);
            }
            closedir(d);
        }
        rmdir(path);
    } else {
        unlink(path);
    }
}

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            n++;
    closedir(d);
    return n;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap + 1);
    assert_non_null(buf);
    size_t r;
    while ((r = fread(buf + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap) {
            cap *= 2;
            buf = realloc(buf, cap + 1);
            assert_non_null(buf);
        }
    }
    fclose(f);
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

/* What aim_config_write produces for cfg with the metadata prefix. */
static char *config_lines(const aim_config *cfg)
{
    FILE *f = tmpfile();
    assert_non_null(f);
    aim_config_write(cfg, f, "# config ");
    long n = ftell(f);
    assert_true(n > 0);
    rewind(f);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void write_result(const char *path, const aim_config *cfg)
{
    aim_tsv *t = aim_tsv_open(path);
    assert_non_null(t);
    aim_tsv_metadata(t, "aimdyn ode --set training.eta=0.1", cfg);
    FILE *f = aim_tsv_stream(t);
    assert_non_null(f);
    fprintf(f, "tau\trisk\n0\t1.5\n1\t0.25\n");
    assert_int_equal(aim_tsv_commit(t), 0);
}

/* ---------- TSV ---------- */

/* Reads text (written to a temporary file) as kind; returns
 * aim_table_read's result, the table in t on success. */
static int read_text(const char *text, const aim_table_kind *kind, aim_table *t)
{
    char *dir = make_tmpdir();
    char path[600];
    snprintf(path, sizeof path, "%s/t.tsv", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
    int rc = aim_table_read(path, kind, t);
    remove_tree(dir);
    free(dir);
    return rc;
}

/* aim_config_write's text of cfg (malloc'd). */
static char *config_text(const aim_config *cfg)
{
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    assert_non_null(m);
    aim_config_write(cfg, m, NULL);
    assert_int_equal(fclose(m), 0);
    return text;
}

/* The metadata a result file records, read back: the version, and a
 * non-default configuration key for key through aim_table_config; a line
 * the configuration cannot take is named. */
static void test_table_metadata(void **state)
{
    (void)state;
    static const char *const sets[] = {
        "model.decomposition=tied", "teacher.decomposition=tied", "hierarchy.order=3", "model.activation=he2",
        "training.eta=0.0371", "training.horizon=3.25", "training.points=17", "sgd.d=123",
        "sgd.seeds=5", "output.name=meta-test", "output.recovery_threshold=0.3"};
    aim_config cfg, back, defaults;
    aim_config_error err;
    aim_config_defaults(&cfg);
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++)
        assert_int_equal(aim_config_set(&cfg, sets[i], &err), 0);
    if (aim_config_validate(&cfg, &err))
        fail_msg("%s", err.message);
    char *dir = make_tmpdir(), path[600];
    snprintf(path, sizeof path, "%s/m.tsv", dir);
    write_result(path, &cfg);
    aim_table t;
    assert_int_equal(aim_table_read(path, NULL, &t), 0);
    assert_non_null(aim_table_version(&t));
    assert_string_equal(aim_table_version(&t), AIM_VERSION);
    char version[64], msg[256];
    assert_int_equal(aim_tsv_file_version(path, version, sizeof version, msg, sizeof msg), 0);
    assert_string_equal(version, AIM_VERSION);
    assert_int_equal(aim_table_config(&t, &back, &err), 0);
    aim_config_defaults(&defaults);
    char *want = config_text(&cfg), *got = config_text(&back), *def = config_text(&defaults);
    assert_string_not_equal(want, def); /* the round trip is not the defaults' */
    assert_string_equal(got, want);
    free(want);
    free(got);
    free(def);
    /* a recorded line the configuration refuses: named with its key */
    for (int i = 0; i < t.nmeta; i++)
        if (!strncmp(t.meta[i], "# config training.eta = ", 24)) {
            free(t.meta[i]);
            t.meta[i] = strdup("# config training.eta = fast");
            assert_non_null(t.meta[i]);
        }
    assert_int_equal(aim_table_config(&t, &back, &err), -1);
    assert_non_null(strstr(err.message, "# config training.eta = fast: "));
    aim_table_free(&t);
    /* a file of an earlier version: the version line first */
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("# aimdyn old-1\ntau\trisk\n0\t1\n", f);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(aim_tsv_file_version(path, version, sizeof version, msg, sizeof msg), 0);
    assert_string_equal(version, "old-1");
    /* a file without the version line in either place */
    f = fopen(path, "w");
    assert_non_null(f);
    fputs("tau\trisk\n0\t1\n", f);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(aim_tsv_file_version(path, version, sizeof version, msg, sizeof msg), 1);
    remove_tree(dir);
    free(dir);
}

/* The shared reader of result files: what it keeps and what it refuses. */
static void test_table_read(void **state)
{
    (void)state;
    aim_table t;
    /* seeds as integers: 2^53 + 1 and 2^53 are one double, two seeds;
     * tau increases within each seed and starts again with the next */
    assert_int_equal(read_text("# aimdyn test\n# config sgd.d = 40\n"
                               "seed\ttau\toverlap\toverlap_se\tnote\n"
                               "9007199254740993\t0\t-1\tnan\ta b\n"
                               "9007199254740993\t0.5\t1\t0\t-\n"
                               "9007199254740992\t0\tnan\t0.25\tx\r\n"
                               "18446744073709551615\t0\t0\t0\ty\n",
                               &(aim_table_kind){"a test file",
                                                 (const char *const[]){"seed", "note", NULL},
                                                 (const char *const[]){"note", NULL}},
                               &t),
                     0);
    assert_int_equal(t.nrows, 4);
    assert_int_equal(t.ncols, 5);
    assert_true(t.seed[0] == 9007199254740993u && t.seed[2] == 9007199254740992u);
    assert_true(t.seed[3] == UINT64_MAX);
    assert_string_equal(t.text[0 * 5 + 4], "a b");
    assert_string_equal(t.text[2 * 5 + 4], "x");
    assert_null(t.text[0]);
    assert_true(isnan(t.data[4]) && t.data[1 * 5 + 2] == 1.0);
    assert_int_equal(t.nmeta, 2);
    assert_string_equal(aim_table_meta(&t, "# config sgd.d = "), "40");
    assert_null(aim_table_meta(&t, "# config sgd.seeds = "));
    aim_table_free(&t);
    /* the layout aimdyn writes: the column line, then the '#' lines;
     * names read in their safe form (a file of an earlier version has
     * m(SST) where aimdyn now writes m_SST) */
    assert_int_equal(read_text("tau\tm(SST)\n# aimdyn test\n# config sgd.d = 40\n0\t1\n",
                               NULL, &t),
                     0);
    assert_int_equal(t.nmeta, 2);
    assert_int_equal(t.nrows, 1);
    assert_string_equal(aim_table_version(&t), "test");
    assert_int_equal(aim_table_column(&t, "m_SST"), 1);
    aim_table_free(&t);
    /* distinct as written, one name in safe form */
    assert_int_equal(read_text("tau\tm(S)\tm_S\n0\t1\t2\n", NULL, &t), -1);
    assert_int_equal(read_text("tau\n", NULL, &t), 0); /* no rows: a file still */
    assert_int_equal(t.nrows, 0);
    aim_table_free(&t);

    static const char *const refused[] = {
        "tau\tx\n0\t1\n0.5\t2",                /* cut short: no final line break */
        "tau\tx\n0\t1\n\n0.5\t2\n",          /* an empty line */
        "tau\tx\n0\t1\n# late\n",              /* '#' among the rows */
        "tau\tx\n# meta\n0\t1\n# late\n0.5\t2\n",
        "tau\tx\n0\t1\n0.5\n",                 /* a missing cell */
        "tau\ttau\n0\t1\n",                     /* a repeated column name */
        "tau\t\n0\t1\n",                        /* an empty column name */
        "tau\tx\ninf\t1\n",                     /* tau not finite */
        "tau\tx\nnan\t1\n",
        "tau\tx\n-1\t1\n",                      /* tau < 0 */
        "tau\tx\n0.5\t1\n0.5\t2\n",           /* tau not increasing */
        "seed\ttau\n1\t0\n1\t0\n",            /* ... within a seed */
        "seed\ttau\n1.0\t0\n",                  /* a seed that is no integer */
        "seed\ttau\n-1\t0\n",
        "seed\ttau\n18446744073709551616\t0\n", /* above 2^64 - 1 */
        "seed\ttau\n1e3\t0\n",
        "overlap\n1.0000001\n",                   /* an overlap outside [-1, 1] */
        "overlap_mean\n-inf\n",
        "start_overlap\n2\n",
        "risk_se\n-0.5\n",                        /* a negative standard error */
        "x\n0.1x\n",                              /* not a number */
        "x\n\n",
        "# only metadata\n",                       /* no header */
        "",
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        if (read_text(refused[i], NULL, &t) != -1)
            fail_msg("accepted: \"%s\"", refused[i]);
    /* at most 32768 columns */
    for (int cols = 32768; cols <= 32769; cols++) {
        char *text = malloc(16 * (size_t)cols + 16), *p = text;
        assert_non_null(text);
        for (int c = 0; c < cols; c++)
            p += sprintf(p, "%sc%d", c ? "\t" : "", c);
        strcpy(p, "\n");
        assert_int_equal(read_text(text, NULL, &t), cols == 32768 ? 0 : -1);
        if (cols == 32768)
            assert_int_equal(t.ncols, 32768);
        aim_table_free(&t);
        free(text);
    }
    /* at most 2^25 cells: one-character cells are 2 bytes of text each,
     * 8 as doubles (2^20 + 1 rows of 32 cells, 64 MiB of text) */
    {
        const size_t rows = (1 << 20) + 1, line = 64, n = (rows + 1) * line;
        char *text = malloc(n + 1);
        assert_non_null(text);
        for (size_t i = 0; i < n; i++)
            text[i] = i % 2 ? (i % line == line - 1 ? '\n' : '\t') : '0';
        for (int c = 0; c < 32; c++) /* the header: distinct names a..z, A..F */
            text[2 * c] = (char)(c < 26 ? 'a' + c : 'A' + c - 26);
        text[n] = '\0';
        assert_int_equal(read_text(text, NULL, &t), -1);
        free(text);
    }
    const aim_table_kind needs = {"a test file", (const char *const[]){"risk", NULL}, NULL};
    assert_int_equal(read_text("tau\toverlap\n0\t0.5\n", &needs, &t), -1);
    assert_int_equal(read_text("tau\trisk\n0\t0.5\n", &needs, &t), 0);
    aim_table_free(&t);
    assert_int_equal(aim_table_read("/dev/zero", NULL, &t), -1); /* not a regular file */
    /* a row refused after a text cell was kept (found by fuzzing: the
     * cell leaked; LeakSanitizer fails the sanitizer build) */
    const aim_table_kind with_text = {"a test file", NULL, (const char *const[]){"status", NULL}};
    assert_int_equal(read_text("status\tx\nrecovered\t1\nrecovered\tbad\n", &with_text, &t), -1);
}

static void test_tsv_commit(void **state)
{
    (void)state;
    char *dir = make_tmpdir();
    aim_config cfg;
    aim_config_defaults(&cfg);

    /* The directory is created (two levels) on open. */
    char path[4096];
    snprintf(path, sizeof path, "%s/a/b/run.tsv", dir);
    write_result(path, &cfg);

    size_t len;
    char *text = slurp(path, &len);
    assert_non_null(text);

    /* the column line first (numpy.genfromtxt(names=True) takes line 1
     * as the names), then the metadata the writer wrote before it */
    char want[256];
    snprintf(want, sizeof want, "tau\trisk\n# aimdyn %s\n", AIM_VERSION);
    assert_true(strncmp(text, want, strlen(want)) == 0);
    assert_non_null(strstr(text, "\n# command: aimdyn ode --set "
                                 "training.eta=0.1\n"));
    assert_non_null(strstr(text, "\n# date-free\n"));

    char *cl = config_lines(&cfg);
    assert_non_null(strstr(text, cl));
    assert_true(strncmp(cl, "# config ", 9) == 0);
    free(cl);

    /* The rows after the metadata, untouched. */
    static const char rows[] = "\n0\t1.5\n1\t0.25\n";
    assert_true(len > strlen(rows) && !strcmp(text + len - strlen(rows), rows));
    assert_null(strstr(text + 1, "tau\trisk"));
    assert_true(len > 0 && text[len - 1] == '\n');

    /* Only the result and its sidecar in the directory: no temporary
     * left behind. */
    char sub[4096];
    snprintf(sub, sizeof sub, "%s/a/b", dir);
    assert_int_equal(count_entries(sub), 2);

    /* Bit-reproducible: a second identical run gives identical bytes
     * (and overwrites the first file atomically). */
    write_result(path, &cfg);
    size_t len2;
    char *text2 = slurp(path, &len2);
    assert_non_null(text2);
    assert_int_equal(len, len2);
    assert_memory_equal(text, text2, len);
    assert_int_equal(count_entries(sub), 2);

    free(text);
    free(text2);
    remove_tree(dir);
    free(dir);
}

/* The stream puts the column line first however the writer's bytes
 * arrive: '#' lines beyond one stdio buffer (the held lines grow), the
 * column line in pieces, rows after it passed through; a file without a
 * column line is written as it came. */
static void test_tsv_column_first(void **state)
{
    (void)state;
    char *dir = make_tmpdir(), path[600];
    snprintf(path, sizeof path, "%s/c.tsv", dir);
    aim_tsv *t = aim_tsv_open(path);
    assert_non_null(t);
    FILE *f = aim_tsv_stream(t);
    for (int i = 0; i < 400; i++)
        fprintf(f, "# metadata line %03d, long enough to pass 4096 bytes in all\n", i);
    fputs("ta", f);
    fflush(f);
    fputc('u', f);
    fflush(f);
    fputs("\tm_S\n0\t1\n", f);
    fflush(f);
    fputs("0.5\t2\n", f);
    assert_int_equal(aim_tsv_commit(t), 0);
    size_t len;
    char *text = slurp(path, &len);
    assert_non_null(text);
    static const char start[] = "tau\tm_S\n# metadata line 000, ";
    assert_true(!strncmp(text, start, strlen(start)));
    const char *last = strstr(text, "# metadata line 399, ");
    assert_non_null(last);
    assert_string_equal(strchr(last, '\n'), "\n0\t1\n0.5\t2\n");
    free(text);
    aim_table tab;
    assert_int_equal(aim_table_read(path, NULL, &tab), 0);
    assert_int_equal(tab.nmeta, 400);
    assert_int_equal(tab.nrows, 2);
    aim_table_free(&tab);

    t = aim_tsv_open(path);
    assert_non_null(t);
    fputs("# only metadata\n# and more\n", aim_tsv_stream(t));
    assert_int_equal(aim_tsv_commit(t), 0);
    text = slurp(path, &len);
    assert_non_null(text);
    assert_string_equal(text, "# only metadata\n# and more\n");
    free(text);
    remove_tree(dir);
    free(dir);
}

/* The sidecar beside a table (src/results/sidecar.c): JSON that jansson loads,
 * naming its table, every configuration key with the value of the
 * table's '# config' line, typed (numbers as numbers), and the CVODE
 * counters it was given. */
static void test_tsv_sidecar(void **state)
{
    (void)state;
    char *dir = make_tmpdir();
    aim_config cfg;
    aim_config_defaults(&cfg);
    cfg.eta = 0.3;
    char path[4096], json[4096];
    snprintf(path, sizeof path, "%s/run-ode.tsv", dir);
    snprintf(json, sizeof json, "%s/run-ode.json", dir);
    aim_tsv *t = aim_tsv_open(path);
    assert_non_null(t);
    aim_tsv_metadata(t, "ode", &cfg);
    const char *const names[] = {"steps", "rhs_evals", "error_test_failures"};
    const long main_run[] = {7, 9, 0}, fast_phase[] = {3, 5, 1};
    assert_int_equal(aim_tsv_integration(t, "trajectory", 3, names, main_run), 0);
    assert_int_equal(aim_tsv_integration(t, "fast phase", 3, names, fast_phase), 0);
    fprintf(aim_tsv_stream(t), "tau\n0\n");
    assert_int_equal(aim_tsv_commit(t), 0);

    json_error_t err;
    json_t *root = json_load_file(json, JSON_REJECT_DUPLICATES, &err);
    assert_non_null(root);
    assert_string_equal(json_string_value(json_object_get(root, "format")), "aimdyn sidecar 1");
    assert_string_equal(json_string_value(json_object_get(root, "aimdyn_version")), AIM_VERSION);
    assert_string_equal(json_string_value(json_object_get(root, "table")), "run-ode.tsv");
    const json_t *conf = json_object_get(root, "configuration");
    const json_t *eta = json_object_get(json_object_get(conf, "training"), "eta");
    assert_true(json_is_real(eta) && json_real_value(eta) == 0.3);
    assert_true(json_is_integer(json_object_get(json_object_get(conf, "training"), "points")));
    assert_true(json_is_boolean(json_object_get(json_object_get(conf, "student"), "symmetric")));
    assert_true(json_is_string(json_object_get(json_object_get(conf, "model"), "decomposition")));

    /* every '# config KEY = VALUE' line of the table has its key, and
     * no other key is there */
    aim_table tab;
    assert_int_equal(aim_table_read(path, NULL, &tab), 0);
    size_t lines = 0, keys = 0;
    for (int i = 0; i < tab.nmeta; i++) {
        char section[64], key[64];
        if (sscanf(tab.meta[i], "# config %63[^.].%63s =", section, key) != 2)
            continue;
        lines++;
        const json_t *v = json_object_get(json_object_get(conf, section), key);
        assert_non_null(v);
        const char *text = strstr(tab.meta[i], " = ") + 3;
        if (json_is_real(v))
            assert_true(strtod(text, NULL) == json_real_value(v));
        else if (json_is_integer(v))
            assert_true(strtoll(text, NULL, 10) == json_integer_value(v));
        else if (json_is_boolean(v))
            assert_string_equal(text, json_is_true(v) ? "true" : "false");
        else
            assert_string_equal(text, json_string_value(v));
    }
    const char *section;
    const json_t *keyset;
    json_object_foreach((json_t *)conf, section, keyset)
        keys += json_object_size(keyset);
    assert_true(lines > 30);
    assert_int_equal(lines, keys);
    aim_table_free(&tab);

    const json_t *cvode = json_object_get(root, "cvode");
    assert_int_equal(json_array_size(cvode), 2);
    const json_t *fast = json_array_get(cvode, 1);
    assert_string_equal(json_string_value(json_object_get(fast, "integration")),
                        "fast phase");
    assert_int_equal(json_integer_value(json_object_get(fast, "steps")), 3);
    assert_int_equal(json_integer_value(json_object_get(fast, "error_test_failures")), 1);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(cvode, 0), "rhs_evals")), 9);
    json_decref(root);
    remove_tree(dir);
    free(dir);
}

/* Column names numpy and pandas keep as they are: identifiers, case
 * kept, distinct where the names were. */
static void test_column_names(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"m(SST)", "m_SST"},         {"m(Kk)", "m_Kk"},         {"m(kK)", "m_kK"},
        {"m(SST)_mean", "m_SST_mean"}, {"m(S)_se", "m_S_se"},   {"risk_holdout_se", "risk_holdout_se"},
        {"tau", "tau"},              {"a.b-c d", "a_b_c_d"},    {"2nd", "_2nd"},
        {"x_", "x_"},                {"(x)", "_x"},             {"()", "_"},
    };
    char buf[64];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        assert_string_equal(aim_tsv_column_name(cases[i][0], buf, sizeof buf), cases[i][1]);
    /* cut to the buffer, still terminated */
    assert_string_equal(aim_tsv_column_name("m(SST)", buf, 4), "m_S");
}

static void test_tsv_abort(void **state)
{
    (void)state;
    char *dir = make_tmpdir();
    aim_config cfg;
    aim_config_defaults(&cfg);
    char path[4096];
    snprintf(path, sizeof path, "%s/run.tsv", dir);

    aim_tsv *t = aim_tsv_open(path);
    assert_non_null(t);
    aim_tsv_metadata(t, "test", &cfg);
    fprintf(aim_tsv_stream(t), "tau\n0\n");
    /* While open, the data lives in a temporary beside the target. */
    assert_int_equal(count_entries(dir), 1);
    assert_int_equal(access(path, F_OK), -1);
    aim_tsv_abort(t);
    assert_int_equal(access(path, F_OK), -1);
    assert_int_equal(count_entries(dir), 0);

    /* Abort does not touch an existing result either. */
    write_result(path, &cfg);
    size_t len;
    char *before = slurp(path, &len);
    t = aim_tsv_open(path);
    assert_non_null(t);
    fprintf(aim_tsv_stream(t), "garbage\n");
    aim_tsv_abort(t);
    size_t len2;
    char *after = slurp(path, &len2);
    assert_non_null(after);
    assert_int_equal(len, len2);
    assert_memory_equal(before, after, len);
    assert_int_equal(count_entries(dir), 2);
    free(before);
    free(after);

    remove_tree(dir);
    free(dir);
}

static void test_tsv_uncreatable(void **state)
{
    (void)state;
    char *dir = make_tmpdir();
    /* A regular file where a directory is needed: fails even as root. */
    char file[4096], path[4096];
    snprintf(file, sizeof file, "%s/plain", dir);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fclose(f);
    snprintf(path, sizeof path, "%s/plain/sub/run.tsv", dir);
    assert_null(aim_tsv_open(path));
    snprintf(path, sizeof path, "%s/plain/run.tsv", dir);
    assert_null(aim_tsv_open(path));
    /* Nothing was created next to the file. */
    assert_int_equal(count_entries(dir), 1);
    remove_tree(dir);
    free(dir);
}

static void test_tsv_path(void **state)
{
    (void)state;
    aim_config cfg;
    aim_config_defaults(&cfg);
    snprintf(cfg.dir, sizeof cfg.dir, "out/x");
    snprintf(cfg.name, sizeof cfg.name, "run");
    char buf[64];
    assert_int_equal(aim_tsv_path(buf, sizeof buf, &cfg, "ode", "tsv"), 0);
    assert_string_equal(buf, "out/x/run-ode.tsv");
    snprintf(cfg.dir, sizeof cfg.dir, "out/");
    assert_int_equal(aim_tsv_path(buf, sizeof buf, &cfg, "sgd-d400", "tsv"), 0);
    assert_string_equal(buf, "out/run-sgd-d400.tsv");
    /* Exactly fitting, then one byte short. */
    size_t need = strlen("out/run-sgd-d400.tsv") + 1;
    assert_int_equal(aim_tsv_path(buf, need, &cfg, "sgd-d400", "tsv"), 0);
    assert_int_equal(aim_tsv_path(buf, need - 1, &cfg, "sgd-d400", "tsv"), -1);
}

/* ---------- grid ---------- */

static void test_grid_linear(void **state)
{
    (void)state;
    aim_config cfg;
    aim_config_defaults(&cfg);
    cfg.grid = AIM_GRID_LINEAR;
    cfg.points = 51;
    cfg.horizon = 2.5;
    double tau[51];
    for (int i = 0; i < 51; i++)
        tau[i] = NAN;
    aim_grid_fill(&cfg, tau);
    assert_true(tau[0] == 0.0);
    assert_true(tau[50] == 2.5);
    for (int i = 0; i < 51; i++)
        assert_close(tau[i], 0.05 * i, 1e-12);
}

static void test_grid_log(void **state)
{
    (void)state;
    aim_config cfg;
    aim_config_defaults(&cfg);
    cfg.grid = AIM_GRID_LOG;
    cfg.points = 7;
    cfg.horizon = 10.0;
    cfg.grid_start = 1e-3;
    double tau[8];
    tau[7] = -42.0; /* sentinel: only `points` entries are written */
    aim_grid_fill(&cfg, tau);
    assert_true(tau[0] == 0.0);
    assert_true(tau[1] == 1e-3);
    assert_true(tau[6] == 10.0);
    assert_true(tau[7] == -42.0);
    for (int i = 1; i < 7; i++)
        assert_close(tau[i], pow(10.0, -3.0 + 0.8 * (i - 1)),
                            1e-12 * tau[i]);
    for (int i = 1; i < 7; i++)
        assert_true(tau[i] > tau[i - 1]);
    /* Constant ratio. */
    for (int i = 2; i < 6; i++)
        assert_close(tau[i + 1] / tau[i], tau[i] / tau[i - 1], 1e-12);
}

/* ---------- overlaps ---------- */

static aim_overlaps make_q(double oss, double ott, double ost, double ts,
                           double tt)
{
    aim_overlaps q;
    memset(&q, 0, sizeof q);
    q.omega[0][0] = oss;
    q.omega[1][1] = ott;
    q.omega[0][1] = q.omega[1][0] = ost;
    q.trace[0] = ts;
    q.trace[1] = tt;
    return q;
}

static void test_teacher_overlap(void **state)
{
    (void)state;
    /* (1.5 - 1 * 0.5) / sqrt((2 - 1)(3 - 0.25)) */
    aim_overlaps q = make_q(2.0, 3.0, 1.5, 1.0, 0.5);
    assert_close(aim_overlaps_teacher_overlap(&q), 1.0 / sqrt(2.75),
                        1e-14);
    /* Centred-free start: Omega_st = t_s t_t gives 0 (tied, theory/model.md sec. 7). */
    q = make_q(1.3, 2.0, 0.4 * 0.7, 0.4, 0.7);
    assert_close(aim_overlaps_teacher_overlap(&q), 0.0, 1e-15);
    /* S = S* (traceless parts equal): 1; S = -S*: -1. */
    q = make_q(2.0, 2.0, 2.0, 0.5, 0.5);
    assert_close(aim_overlaps_teacher_overlap(&q), 1.0, 1e-14);
    q = make_q(2.0, 2.0, -2.0, -0.5, 0.5);
    assert_close(aim_overlaps_teacher_overlap(&q), -1.0, 1e-14);
    /* S = c I: zero traceless part -> 0, not NaN. */
    q = make_q(0.09, 3.0, 0.15, 0.3, 0.5);
    double c = aim_overlaps_teacher_overlap(&q);
    assert_false(isnan(c));
    assert_true(c == 0.0);
    /* Same for the teacher, and for both zero. */
    q = make_q(2.0, 0.25, 0.5, 1.0, 0.5);
    assert_true(aim_overlaps_teacher_overlap(&q) == 0.0);
    q = make_q(0.0, 0.0, 0.0, 0.0, 0.0);
    assert_true(aim_overlaps_teacher_overlap(&q) == 0.0);
    /* NaN order parameters (blow-up) stay NaN. */
    q = make_q(NAN, 2.0, 0.5, 1.0, 0.5);
    assert_true(isnan(aim_overlaps_teacher_overlap(&q)));
}

static void test_observables(void **state)
{
    (void)state;
    aim_overlaps q = make_q(2.0, 3.0, 1.5, 1.0, 0.5);
    q.psi[0][0] = 0.7;
    q.psi[1][1] = 0.9;
    q.psi[0][1] = q.psi[1][0] = -0.2;
    q.mean[0] = 4.0;
    q.mean[1] = 5.0;
    double obs[AIM_OBS_COUNT];
    obs[AIM_OBS_RISK] = 123.0;
    aim_overlaps_observables(&q, obs);
    assert_true(obs[AIM_OBS_RISK] == 123.0); /* left to the engine */
    assert_close(obs[AIM_OBS_OVERLAP], 1.0 / sqrt(2.75), 1e-14);
    assert_true(obs[AIM_OBS_OMEGA_SS] == 2.0);
    assert_true(obs[AIM_OBS_PSI_SS] == 0.7);
    assert_true(obs[AIM_OBS_OMEGA_ST] == 1.5);
    assert_true(obs[AIM_OBS_PSI_ST] == -0.2);
    assert_true(obs[AIM_OBS_TRACE] == 1.0);
    assert_true(obs[AIM_OBS_MEAN] == 4.0);

    const char *names[AIM_OBS_COUNT] = {"risk", "overlap", "omega_ss",
                                        "psi_ss", "omega_st", "psi_st",
                                        "trace", "mean"};
    for (int k = 0; k < AIM_OBS_COUNT; k++)
        assert_string_equal(aim_obs_names[k], names[k]);
}

/* ---------- statistics and gaps ---------- */

#define K AIM_OBS_COUNT
#define IDX(s, i, k, points) (((size_t)(s) * (points) + (i)) * K + (k))

static void test_compare_stats(void **state)
{
    (void)state;
    enum { SEEDS = 4, POINTS = 3 };
    double obs[SEEDS * POINTS * K];
    /* Observable k at point i of seed s: base + small spread; point 1
     * misses seed 3 (blow-up), point 2 only has seed 0. */
    const double v[SEEDS] = {1.0, 2.0, 4.0, 5.0};
    for (int s = 0; s < SEEDS; s++)
        for (int i = 0; i < POINTS; i++)
            for (int k = 0; k < K; k++)
                obs[IDX(s, i, k, POINTS)] = 10.0 * k + v[s] + i;
    obs[IDX(3, 1, AIM_OBS_RISK, POINTS)] = NAN;
    for (int s = 1; s < SEEDS; s++)
        obs[IDX(s, 2, AIM_OBS_RISK, POINTS)] = NAN;
    /* One observable that no seed reached at point 2. */
    for (int s = 0; s < SEEDS; s++)
        obs[IDX(s, 2, AIM_OBS_MEAN, POINTS)] = NAN;

    double mean[POINTS * K], se[POINTS * K];
    aim_compare_stats(SEEDS, POINTS, obs, mean, se);

    /* Four seeds: mean 3, sample variance 10/3, se = sqrt(10/3)/2. */
    assert_close(mean[0 * K + AIM_OBS_OVERLAP], 13.0, 1e-12);
    assert_close(se[0 * K + AIM_OBS_OVERLAP], sqrt(10.0 / 3.0) / 2.0,
                        1e-12);
    assert_close(mean[2 * K + AIM_OBS_TRACE], 10.0 * AIM_OBS_TRACE + 5,
                        1e-12);
    /* Three seeds {1, 2, 4} + 1: mean 10/3 , var 7/3, se sqrt(7/9). */
    assert_close(mean[1 * K + AIM_OBS_RISK], 1.0 + 7.0 / 3.0, 1e-12);
    assert_close(se[1 * K + AIM_OBS_RISK], sqrt(7.0 / 9.0), 1e-12);
    /* One seed: its value, stderr 0. */
    assert_close(mean[2 * K + AIM_OBS_RISK], 3.0, 1e-12);
    assert_true(se[2 * K + AIM_OBS_RISK] == 0.0);
    /* No seed: NaN, NaN. */
    assert_true(isnan(mean[2 * K + AIM_OBS_MEAN]));
    assert_true(isnan(se[2 * K + AIM_OBS_MEAN]));
}

static void test_compare_gaps(void **state)
{
    (void)state;
    enum { POINTS = 4 };
    double tau[POINTS] = {0.0, 0.5, 1.0, 1.5};
    double ode[POINTS * K], mean[POINTS * K], se[POINTS * K];
    for (int i = 0; i < POINTS * K; i++) {
        ode[i] = 1.0;
        mean[i] = 1.0;
        se[i] = 0.1;
    }
    /* Risk: abs gap largest at tau 1.5 (0.3, se 1 -> z 0.3), z largest at
     * tau 0.5 (0.2 / 0.01 = 20); tau 1.0 has no SGD mean (skipped even
     * though the ODE is far off there). */
    ode[1 * K + AIM_OBS_RISK] = 1.2;
    se[1 * K + AIM_OBS_RISK] = 0.01;
    ode[2 * K + AIM_OBS_RISK] = 100.0;
    mean[2 * K + AIM_OBS_RISK] = NAN;
    se[2 * K + AIM_OBS_RISK] = NAN;
    mean[3 * K + AIM_OBS_RISK] = 1.3;
    se[3 * K + AIM_OBS_RISK] = 1.0;
    /* Overlap: gap with stderr 0 counts in abs, not in z. */
    ode[2 * K + AIM_OBS_OVERLAP] = 0.5;
    se[2 * K + AIM_OBS_OVERLAP] = 0.0;
    ode[3 * K + AIM_OBS_OVERLAP] = 1.1;
    /* Trace: stderr 0 everywhere -> no z at all. */
    for (int i = 0; i < POINTS; i++)
        se[i * K + AIM_OBS_TRACE] = 0.0;
    mean[1 * K + AIM_OBS_TRACE] = 0.75;
    mean[3 * K + AIM_OBS_TRACE] = 1.25; /* tie: the first one is kept */
    /* Psi_ss: neither an SGD mean nor an ODE value at tau 0 (skipped),
     * agreement elsewhere. */
    mean[0 * K + AIM_OBS_PSI_SS] = NAN;
    ode[0 * K + AIM_OBS_PSI_SS] = NAN;
    /* Omega_st: equal z at tau 0.5 and 1.5, the first one is kept. */
    ode[1 * K + AIM_OBS_OMEGA_ST] = 1.25;
    ode[3 * K + AIM_OBS_OMEGA_ST] = 1.25;
    se[0 * K + AIM_OBS_PSI_SS] = NAN;

    aim_gap g[K];
    aim_compare_gaps(POINTS, tau, ode, mean, se, g);

    assert_close(g[AIM_OBS_RISK].max_abs, 0.3, 1e-12);
    assert_close(g[AIM_OBS_RISK].tau_abs, 1.5, 0);
    assert_close(g[AIM_OBS_RISK].max_z, 20.0, 1e-9);
    assert_close(g[AIM_OBS_RISK].tau_z, 0.5, 0);

    assert_close(g[AIM_OBS_OVERLAP].max_abs, 0.5, 1e-12);
    assert_close(g[AIM_OBS_OVERLAP].tau_abs, 1.0, 0);
    assert_close(g[AIM_OBS_OVERLAP].max_z, 1.0, 1e-9);
    assert_close(g[AIM_OBS_OVERLAP].tau_z, 1.5, 0);

    assert_close(g[AIM_OBS_TRACE].max_abs, 0.25, 1e-12);
    assert_close(g[AIM_OBS_TRACE].tau_abs, 0.5, 0);
    assert_true(isnan(g[AIM_OBS_TRACE].max_z));

    /* Perfect agreement: gap 0, z 0, at the first compared point. */
    assert_true(g[AIM_OBS_PSI_SS].max_abs == 0.0);
    assert_true(g[AIM_OBS_PSI_SS].max_z == 0.0);
    assert_close(g[AIM_OBS_PSI_SS].tau_abs, 0.5, 0);
    assert_true(g[AIM_OBS_OMEGA_SS].max_abs == 0.0);
    assert_close(g[AIM_OBS_OMEGA_ST].max_z, 2.5, 1e-12);
    assert_close(g[AIM_OBS_OMEGA_ST].tau_z, 0.5, 0);
    assert_close(g[AIM_OBS_OMEGA_SS].tau_abs, 0.0, 0);

    /* An ODE that stopped (NaN) where SGD has a mean is an infinite gap. */
    ode[2 * K + AIM_OBS_PSI_ST] = NAN;
    aim_compare_gaps(POINTS, tau, ode, mean, se, g);
    assert_true(isinf(g[AIM_OBS_PSI_ST].max_abs));
    assert_close(g[AIM_OBS_PSI_ST].tau_abs, 1.0, 0);

    /* No SGD mean anywhere: nothing compared (NaN). */
    for (int i = 0; i < POINTS; i++)
        mean[i * K + AIM_OBS_MEAN] = NAN;
    aim_compare_gaps(POINTS, tau, ode, mean, se, g);
    assert_true(isnan(g[AIM_OBS_MEAN].max_abs));
    assert_true(isnan(g[AIM_OBS_MEAN].max_z));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tsv_commit),
        cmocka_unit_test(test_tsv_column_first),
        cmocka_unit_test(test_column_names),
        cmocka_unit_test(test_tsv_abort),
        cmocka_unit_test(test_tsv_sidecar),
        cmocka_unit_test(test_tsv_uncreatable),
        cmocka_unit_test(test_tsv_path),
        cmocka_unit_test(test_table_read),
        cmocka_unit_test(test_table_metadata),
        cmocka_unit_test(test_grid_linear),
        cmocka_unit_test(test_grid_log),
        cmocka_unit_test(test_teacher_overlap),
        cmocka_unit_test(test_observables),
        cmocka_unit_test(test_compare_stats),
        cmocka_unit_test(test_compare_gaps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
