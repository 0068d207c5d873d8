/* bench_engine: the CPU cost of one call of the expectation engine
 * (aim_gauss_eval, row softmax, at its default point count) for
 * T = 2, 3, 4, 6, 8, with the values it computes, so that two builds of
 * the engine can be timed and compared in one run
 * (validate/bench/bench_engine.sh builds an older commit beside this one; this
 * file uses only the engine interface both have).
 *
 *   bench_engine [SECONDS]      per T and case, one line: case, T, CPU
 *                               milliseconds per call (calls repeated for
 *                               SECONDS of CPU time, default 1), CPU
 *                               milliseconds of the set-up and first call,
 *                               then the engine's values at 17 digits
 *   bench_engine --run CMD ...  runs CMD (its standard output discarded)
 *                               and prints the CPU seconds (user + system)
 *                               it took, its children included
 *
 * Cases: "tied", the start of examples/tied_softmax_T4.ini's student and
 * teacher (Psi = Omega, independent tokens); "general", an untied student
 * and teacher, correlated tokens, Psi != Omega, raw means and label
 * noise, which exercises every term of the engine. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <gsl/gsl_errno.h>

#include "config.h"
#include "config_check.h"
#include "family.h"
#include "gauss.h"

static double cpu_now(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0) {
        perror("bench_engine: clock_gettime");
        exit(1);
    }
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int run_command(char **argv)
{
    pid_t pid = fork();
    if (pid < 0) {
        perror("bench_engine: fork");
        return 1;
    }
    if (pid == 0) { /* the command's own output is not wanted here */
        if (!freopen("/dev/null", "w", stdout))
            _exit(127);
        execvp(argv[0], argv);
        perror("bench_engine: exec");
        _exit(127);
    }
    int status;
    struct rusage ru; /* this process has no other children */
    if (waitpid(pid, &status, 0) != pid || getrusage(RUSAGE_CHILDREN, &ru) != 0) {
        perror("bench_engine: waitpid");
        return 1;
    }
    const double cpu = (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
                       (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
    printf("%.4f\n", cpu);
    /* the ODE runs of the benchmark may stop early on purpose (exit 3) */
    return WIFEXITED(status) && (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 3) ? 0 : 1;
}

static int configure(aim_config *cfg, int T, int general)
{
    aim_config_error err;
    char tokens[32];
    snprintf(tokens, sizeof tokens, "model.tokens=%d", T);
    /* tied: S and S* symmetric (the engine keeps the symmetric latent
     * coordinates alone); general: untied, whose Psi != Omega needs all */
    const char *sets[] = {tokens, "model.output=softmax",
                          general ? "model.decomposition=untied" : "model.decomposition=tied",
                          general ? "teacher.decomposition=untied" : "teacher.decomposition=tied",
                          general ? "model.covariance=equicorrelated:0.2" : "model.beta=1",
                          general ? "model.noise=0.05" : "model.beta=1"};
    aim_config_defaults(cfg);
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++)
        if (aim_config_set(cfg, sets[i], &err)) {
            fprintf(stderr, "bench_engine: %s\n", err.message);
            return -1;
        }
    if (aim_config_validate(cfg, &err)) {
        fprintf(stderr, "bench_engine: %s\n", err.message);
        return -1;
    }
    return 0;
}

static int bench(int T, int general, double budget)
{
    aim_config cfg;
    if (configure(&cfg, T, general))
        return -1;
    const double t_setup = cpu_now();
    aim_gauss *g = aim_gauss_create(&cfg, AIM_RULE_AUTO, aim_family_symmetric_pair(&cfg));
    if (!g) {
        fprintf(stderr, "bench_engine: engine set-up failed at T = %d\n", T);
        return -1;
    }
    /* tied: student scale 0.25 and teacher scale 1 at rho = 1 (the
     * example's start); general: an arbitrary valid state */
    const aim_overlaps tied = {.omega = {{0.125, 0.25}, {0.25, 2.0}},
                               .psi = {{0.125, 0.25}, {0.25, 2.0}}},
                       other = {.omega = {{0.8, 0.3}, {0.3, 1.0}},
                                .psi = {{0.2, 0.1}, {0.1, -0.3}},
                                .mean = {0.4, -0.5}};
    const aim_overlaps q = general ? other : tied;
    /* the first call includes what a newer engine does once (its point
     * set's error estimate): timed with the set-up */
    if (aim_gauss_eval(g, &q)) {
        fprintf(stderr, "bench_engine: %s\n", aim_gauss_error(g));
        aim_gauss_free(g);
        return -1;
    }
    const double setup = cpu_now() - t_setup;
    long calls = 0;
    const double t0 = cpu_now();
    double spent;
    do {
        if (aim_gauss_eval(g, &q)) {
            fprintf(stderr, "bench_engine: %s\n", aim_gauss_error(g));
            aim_gauss_free(g);
            return -1;
        }
        calls++;
    } while ((spent = cpu_now() - t0) < budget);
    const double ob[2] = {0.25, -0.1}, pb[2] = {0.05, 0.15};
    printf("%s\t%d\t%.4f\t%.4f\t%.17g\t%.17g\t%.17g\t%.17g\t%.17g\t%.17g\n",
           general ? "general" : "tied", T, 1e3 * spent / (double)calls, 1e3 * setup, aim_gauss_risk(g),
           aim_gauss_noise_omega(g), aim_gauss_noise_psi(g), aim_gauss_error_mean(g),
           aim_gauss_error_index(g, ob, pb, 0.3, 0), aim_gauss_error_index(g, ob, pb, 0.3, 1));
    aim_gauss_free(g);
    return 0;
}

int main(int argc, char **argv)
{
    gsl_set_error_handler_off();
    if (argc > 2 && strcmp(argv[1], "--run") == 0)
        return run_command(argv + 2);
    const double budget = argc > 1 ? atof(argv[1]) : 1.0;
    if (!(budget > 0.0)) {
        fprintf(stderr, "bench_engine: SECONDS = '%s'; allowed: a number > 0\n", argv[1]);
        return 1;
    }
    const int tokens[] = {2, 3, 4, 6, 8};
    printf("case\tT\tms_per_call\tsetup_ms\trisk\tK_omega\tK_psi\tE_e_C\tE_e_hB\tE_e_hBt\n");
    for (int general = 0; general <= 1; general++)
        for (size_t i = 0; i < sizeof tokens / sizeof tokens[0]; i++)
            if (bench(tokens[i], general, budget))
                return 1;
    return 0;
}
