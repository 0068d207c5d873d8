/* Unit tests of the sizes a run is checked for before it allocates
 * (src/cli/memory.h):
 *  - aim_sgd_bytes and aim_holdout_bytes are what aim_sgd_create and
 *    aim_holdout_create allocate (glibc's count of the bytes in use, where
 *    it keeps one: not under the sanitizers), for a direct, a tied and an
 *    untied student;
 *  - the estimates hold the d x d matrices and the held-out samples at
 *    sizes no machine holds, as doubles (no overflow);
 *  - aim_sgd_fits refuses a factored student whose d p passes the BLAS
 *    int lengths (tied student.rho = 1e5 at d = 400: p = 4e7), with the
 *    largest rho allowed, and aim_sgd_create refuses it with that message;
 *  - the SGD seeds' messages (validate/compare.c) name no command: a
 *    worker of `aimdyn sgd` said "aimdyn: compare: ...". */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compare.h"
#include "config_check.h"
#include "holdout.h"
#include "sgd.h"

static void configure(aim_config *cfg, const char *decomposition, const char *rho)
{
    aim_config_error err;
    char dec[64], tdec[64], r[64];
    snprintf(dec, sizeof dec, "model.decomposition=%s", decomposition);
    snprintf(tdec, sizeof tdec, "teacher.decomposition=%s",
             strcmp(decomposition, "direct") ? "tied" : "direct");
    snprintf(r, sizeof r, "student.rho=%s", rho);
    aim_config_defaults(cfg);
    const char *const assign[] = {dec, tdec, r};
    for (int i = 0; i < 3; i++)
        if (aim_config_set(cfg, assign[i], &err))
            fail_msg("%s: %s", assign[i], err.message);
    if (aim_config_validate(cfg, &err))
        fail_msg("%s", err.message);
}

/* The bytes in use as glibc counts them (0, or no change, under an
 * allocator that does not). */
static double in_use(void)
{
    const struct mallinfo2 m = mallinfo2();
    return (double)m.uordblks + (double)m.hblkhd;
}

static void test_estimates_are_the_allocations(void **state)
{
    (void)state;
    static const char *const kinds[][2] = {{"direct", "1"}, {"tied", "1.5"}, {"untied", "0.5"}};
    enum { DIM = 300, SAMPLES = 500 };
    for (int k = 0; k < 3; k++) {
        aim_config cfg;
        configure(&cfg, kinds[k][0], kinds[k][1]);
        const double before = in_use();
        aim_sgd *sgd = aim_sgd_create(&cfg, DIM, 1);
        assert_non_null(sgd);
        const double made = in_use() - before;
        aim_holdout *ho = aim_holdout_create(sgd, 1, SAMPLES);
        assert_non_null(ho);
        const double held = in_use() - before - made;
        const double cols = strcmp(kinds[k][0], "direct") ? aim_sgd_columns_for(&cfg, DIM) : DIM;
        const double want_sgd = aim_sgd_bytes(&cfg, DIM);
        const double want_ho =
            aim_holdout_bytes(SAMPLES, cfg.tokens, DIM, cols, !strcmp(kinds[k][0], "untied"));
        /* where the allocator counts (glibc's; not the sanitizers'): the
         * estimates within 5 % (the structs, the generators) */
        if (made > 0) {
            if (!(made > 0.95 * want_sgd && made < 1.05 * want_sgd + 65536))
                fail_msg("%s: aim_sgd_create took %.0f bytes, estimated %.0f", kinds[k][0],
                         made, want_sgd);
            if (!(held > 0.95 * want_ho && held < 1.05 * want_ho + 65536))
                fail_msg("%s: aim_holdout_create took %.0f bytes, estimated %.0f",
                         kinds[k][0], held, want_ho);
        }
        assert_true(aim_compare_seed_bytes(&cfg, DIM, 3) > want_sgd + want_ho);
        aim_holdout_free(ho);
        aim_sgd_free(sgd);
    }
}

static void test_estimates_at_sizes_no_machine_holds(void **state)
{
    (void)state;
    aim_config cfg;
    configure(&cfg, "direct", "1");
    /* --d 20000: S and S* alone are 6.4 GB */
    assert_true(aim_sgd_bytes(&cfg, 20000) >= 2 * 8.0 * 20000 * 20000);
    /* sgd.holdout = 1e6 at d = 20000: 320 GB of samples */
    assert_true(aim_holdout_bytes(1000000, 2, 20000, 20000, 0) >= 8.0 * 1e6 * 2 * 20000);
    assert_true(aim_compare_seed_bytes(&cfg, 20000, 0) > aim_sgd_bytes(&cfg, 20000));
}

static void test_blas_lengths(void **state)
{
    (void)state;
    aim_config cfg;
    char why[400];
    configure(&cfg, "tied", "1");
    assert_int_equal(aim_sgd_fits(&cfg, 400, why, sizeof why), 0);
    configure(&cfg, "tied", "1e5");
    assert_int_equal(aim_sgd_fits(&cfg, 400, why, sizeof why), -1);
    assert_non_null(strstr(why, "gives p = 40000000 columns"));
    assert_non_null(strstr(why, "allowed: student.rho <= 1.342e+04 at this d"));
    assert_null(aim_sgd_create(&cfg, 400, 1));
}

/* The SGD seeds run of cfg at d, its stderr into buf (size n). */
static void run_seeds_capturing(const aim_config *cfg, int d, char *buf, size_t n)
{
    char path[] = "/tmp/aimdyn-test-sizes-XXXXXX";
    const int fd = mkstemp(path);
    assert_true(fd >= 0);
    fflush(stderr);
    const int saved = dup(2);
    assert_true(saved >= 0 && dup2(fd, 2) == 2);
    double tau[2] = {0, 0.01}, obs[2 * AIM_OBS_COUNT];
    int reached;
    assert_int_equal(aim_compare_run_sgd(cfg, d, tau, 2, obs, &reached), -1);
    fflush(stderr);
    assert_true(dup2(saved, 2) == 2);
    close(saved);
    const ssize_t got = pread(fd, buf, n - 1, 0);
    buf[got > 0 ? got : 0] = '\0';
    close(fd);
    unlink(path);
}

static void test_seed_messages_name_no_command(void **state)
{
    (void)state;
    aim_config cfg;
    char text[2000];
    configure(&cfg, "tied", "1");
    cfg.student.rho = 1e5; /* past the key's check: the seed cannot be made */
    run_seeds_capturing(&cfg, 400, text, sizeof text);
    assert_non_null(strstr(text, "aimdyn: cannot set up SGD seed 1 at d = 400 (said above)"));
    assert_null(strstr(text, "compare"));
    assert_null(strstr(text, "p = 2147483647"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_estimates_are_the_allocations),
        cmocka_unit_test(test_estimates_at_sizes_no_machine_holds),
        cmocka_unit_test(test_blas_lengths),
        cmocka_unit_test(test_seed_messages_name_no_command),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
