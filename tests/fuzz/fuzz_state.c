/* libFuzzer target: the reader of saved SGD states (aim_state_read,
 * validate/state.c, with the SGD students' arrays) on arbitrary bytes, as training.start_file reads a
 * file from elsewhere. Beyond the sanitizers it checks what an accepted
 * state promises: d in 8..20000, columns 0 exactly for a direct student,
 * the matrices of the declared sizes with finite values only, tau finite
 * and >= 0. */
#include "fuzz_memfile.h"

#include <math.h>

#include "sgd_state.h"
#include "state.h"

static fuzz_memfile input;

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "accepted state breaks: %s\n", what);
        abort();
    }
}

static void all_finite(const double *a, size_t n)
{
    for (size_t i = 0; i < n; i++)
        check(isfinite(a[i]), "every value finite");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[1024];
    aim_state *st = aim_state_read(fuzz_memfile_put(&input, data, size), aim_sgd_state_arrays,
                                    err, sizeof err);
    if (!st) {
        check(err[0] != '\0', "a refusal says why");
        return 0;
    }
    const int d = aim_state_dim(st);
    check(d >= 8 && d <= 20000, "d in 8..20000");
    check(isfinite(aim_state_tau(st)) && aim_state_tau(st) >= 0, "tau finite and >= 0");
    all_finite(aim_state_teacher(st), (size_t)d * (size_t)d);
    const double *arrays[2];
    size_t len[2];
    const int n = aim_state_params(st, arrays, len);
    check(n == 1 || n == 2, "one or two parameter arrays");
    for (int k = 0; k < n; k++) {
        check(len[k] > 0 && len[k] % (size_t)d == 0, "arrays of d rows");
        all_finite(arrays[k], len[k]);
    }
    aim_state_free(st);
    return 0;
}
