/* bench_planar: the time of the exact large-d moments (planar.h) of the
 * untied student and teacher's words: the whole wordset up to 5 and to
 * 7 letters, and one word of 11 letters (22 occurrences). The untied
 * hierarchy asks for the wordset up to 5 letters at every right-hand
 * side it builds, so that must stay well under 0.5 s (it takes
 * milliseconds); this program says when it does not (exit 1). Moved here
 * from tests/test_planar.c, where a bound on wall time failed by the
 * machine's load rather than by the code (issue 32). Usage: bench_planar */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "planar.h"
#include "words.h"

/* the untied student and teacher of the hierarchy (tests/test_planar.c) */
static const aim_alphabet untied = {"ABKkTt", "ABkKtT"};
static const aim_planar_factor untied_factors[] = {
    {0.5, 0.25, 0}, {0.5, 0.4, 0}, {1.0, 1.0, 0}, {1.0, 1.0, 0}};
static const aim_planar_letter untied_letters[] = {
    {2, {0, 0}, {0, 1}}, {2, {1, 1}, {0, 1}}, {2, {0, 1}, {0, 1}},
    {2, {1, 0}, {0, 1}}, {2, {2, 3}, {0, 1}}, {2, {3, 2}, {0, 1}}};

/* the requirement on the wordset up to 5 letters, in seconds */
#define WORDSET5_LIMIT 0.5

static double seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The wordset up to len letters: its time in seconds, or -1 (said). */
static double time_wordset(int len)
{
    aim_wordset *ws = aim_wordset_create(&untied, len);
    double *m = ws ? malloc(sizeof(double) * (size_t)aim_wordset_count(ws)) : NULL;
    char err[256] = "";
    double dt = -1.0;
    if (!m) {
        fprintf(stderr, "bench_planar: out of memory\n");
    } else {
        const double t0 = seconds();
        if (aim_planar_moments(ws, len, untied_factors, 4, untied_letters, m, err, sizeof err))
            fprintf(stderr, "bench_planar: wordset up to %d letters: %s\n", len, err);
        else
            dt = seconds() - t0;
        printf("untied wordset up to %d letters: %d words in %.4f s\n", len,
               aim_wordset_count(ws), dt);
    }
    free(m);
    aim_wordset_free(ws);
    return dt;
}

int main(void)
{
    const double five = time_wordset(5);
    if (five < 0.0 || time_wordset(7) < 0.0)
        return 1;
    const double t0 = seconds();
    double sum = 0.0;
    char err[256] = "";
    for (int r = 0; r < 1000; r++) {
        double m = NAN;
        if (aim_planar_word(&untied, "AKkBTtAKkBA", untied_factors, 4, untied_letters, &m, err,
                            sizeof err)) {
            fprintf(stderr, "bench_planar: AKkBTtAKkBA: %s\n", err);
            return 1;
        }
        sum += m;
    }
    printf("one word of 11 letters (22 occurrences): %.2f us (m = %.6g)\n",
           (seconds() - t0) * 1e3, sum / 1000);
    if (five >= WORDSET5_LIMIT) {
        printf("bench_planar: the wordset up to 5 letters took %.3f s; required: under %.1f s\n",
               five, WORDSET5_LIMIT);
        return 1;
    }
    return 0;
}
