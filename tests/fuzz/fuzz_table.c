/* libFuzzer target: the reader of result files (aim_table_read, through
 * aim_lines) on arbitrary bytes, as agreement, plot, scaling and a
 * sweep's resume use it. Beyond the sanitizers it checks that what it
 * accepts has the properties src/results/tsv.h promises: tau finite, >= 0 and
 * increasing within a seed, overlaps in [-1, 1], standard errors >= 0,
 * text kept exactly for the text columns only, column names in their
 * identifier form (aim_tsv_column_name). */
#include "fuzz_memfile.h"

#include <math.h>
#include <string.h>

#include "tsv.h"

static fuzz_memfile input;

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "accepted table breaks: %s\n", what);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const text[] = {"status", "message", NULL};
    static const aim_table_kind kind = {"a fuzz input", NULL, text};
    aim_table t;
    if (aim_table_read(fuzz_memfile_put(&input, data, size), &kind, &t))
        return 0;
    const int kt = aim_table_column(&t, "tau"), ks = aim_table_column(&t, "seed");
    check((ks >= 0) == (t.seed != NULL), "a seed array exactly with a seed column");
    for (int c = 0; c < t.ncols; c++) {
        const char *name = t.names[c];
        const size_t len = strlen(name);
        char safe[64];
        check(len >= sizeof safe || !strcmp(aim_tsv_column_name(name, safe, sizeof safe), name),
              "names kept in their identifier form");
        const int is_text = !strcmp(name, "status") || !strcmp(name, "message");
        const int is_se = len >= 3 && !strcmp(name + len - 3, "_se");
        const int is_overlap = !is_se && (!strcmp(name, "overlap") ||
                                          !strncmp(name, "overlap_", 8) ||
                                          (len >= 8 && !strcmp(name + len - 8, "_overlap")));
        for (int i = 0; i < t.nrows; i++) {
            const double v = t.data[(size_t)i * t.ncols + c];
            const char *cell = t.text ? t.text[(size_t)i * t.ncols + c] : NULL;
            check(is_text ? cell && isnan(v) : !cell, "text exactly in the text columns");
            if (c == kt) {
                check(isfinite(v) && v >= 0, "tau finite and >= 0");
                if (i > 0 && (ks < 0 || t.seed[i] == t.seed[i - 1]))
                    check(v > t.data[(size_t)(i - 1) * t.ncols + c], "tau increasing");
            }
            if (is_overlap)
                check(isnan(v) || fabs(v) <= 1, "overlap in [-1, 1]");
            if (is_se)
                check(isnan(v) || v >= 0, "standard error >= 0");
        }
    }
    for (int i = 0; i < t.nmeta; i++)
        check(t.meta[i][0] == '#' && aim_table_meta(&t, t.meta[i]) != NULL, "metadata kept");
    aim_table_free(&t);
    return 0;
}
