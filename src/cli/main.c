/* aimdyn: command-line front end. Each subcommand reads a configuration
 * (file + --set overrides), runs one stage of the pipeline and writes
 * TSV files (atomically) and figures. Exit status: 0 success, 1 bad
 * usage or configuration (nothing run, nothing written), 2 run-time
 * failure (no result file left), 3 blow-up (the file records it). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <gsl/gsl_errno.h>

#include "cli.h"
#include "hook.h"
#include "progress.h"
#include "ranks.h"
#include "sidecar.h"
#include "threading.h"
#include "trajectory.h"
#include "version.h"

static int run_command(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        aim_cli_usage(argc < 2 ? stderr : stdout, NULL);
        return argc < 2 ? AIM_EXIT_USAGE : 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("aimdyn %s\n", AIM_VERSION);
        return 0;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "ode"))
        return aim_cmd_ode(argc - 1, argv + 1);
    if (!strcmp(cmd, "sgd"))
        return aim_cmd_sgd(argc - 1, argv + 1);
    if (!strcmp(cmd, "compare"))
        return aim_cmd_compare(argc - 1, argv + 1);
    if (!strcmp(cmd, "plot"))
        return aim_cmd_plot(argc - 1, argv + 1);
    if (!strcmp(cmd, "hierarchy"))
        return aim_cmd_hierarchy(argc - 1, argv + 1);
    if (!strcmp(cmd, "agreement"))
        return aim_cmd_agreement(argc - 1, argv + 1);
    if (!strcmp(cmd, "recovery"))
        return aim_cmd_recovery(argc - 1, argv + 1);
    if (!strcmp(cmd, "sweep"))
        return aim_cmd_sweep(argc - 1, argv + 1);
    if (!strcmp(cmd, "scaling"))
        return aim_cmd_scaling(argc - 1, argv + 1);
    if (!strcmp(cmd, "rerun"))
        return aim_cmd_rerun(argc - 1, argv + 1, run_command);
    if (!strcmp(cmd, "help")) { /* aimdyn help [COMMAND]: COMMAND --help */
        if (argc < 3) {
            aim_cli_usage(stdout, NULL);
            return 0;
        }
        char *help[] = {argv[0], argv[2], "--help", NULL};
        return run_command(3, help);
    }
    if (!strcmp(cmd, "keys")) {
        if (argc > 2) {
            aim_cli_usage(stdout, "keys");
            return strcmp(argv[2], "--help") && strcmp(argv[2], "-h") ? AIM_EXIT_USAGE : 0;
        }
        aim_config_describe(stdout);
        return 0;
    }
    fprintf(stderr, "aimdyn: unknown command '%s'; allowed: ode, sgd, compare, hierarchy, agreement, plot, recovery, sweep, scaling, keys, help, rerun "
                    "(see aimdyn --help)\n", cmd);
    return AIM_EXIT_USAGE;
}

/* What a command printed is checked once, here: stdout is buffered, so a
 * full disk (> /dev/full) shows only when it is flushed. A write error
 * is a run-time failure (exit 2), even after an otherwise complete run or
 * a recorded blow-up; a usage error or failure keeps its own status. */
static int finish_stdout(int rc)
{
    errno = 0;
    const int flushed = fflush(stdout) == 0 && !ferror(stdout);
    int err = errno;
    if (fclose(stdout) != 0 && flushed)
        err = errno;
    else if (flushed)
        return rc;
    fprintf(stderr, "aimdyn: cannot write to standard output: %s\n",
            strerror(err ? err : EIO));
    return rc == AIM_EXIT_USAGE || rc == AIM_EXIT_RUNTIME ? rc : AIM_EXIT_RUNTIME;
}

int main(int argc, char **argv)
{
    /* first: the arguments as given, for a start again with idle OpenMP
     * threads asleep (aim_threading_passive), and one BLAS thread */
    aim_threading_init(argc, argv);
    /* GSL's default handler aborts; every GSL status is checked instead,
     * and out-of-range special-function values surface as non-finite
     * numbers that the blow-up checks report. */
    gsl_set_error_handler_off();
    /* the library's notes of a run in progress honour --quiet, and a long
     * run's progress shows with its ETA (src/cli/progress.h) */
    aim_trajectory_set_notes(aim_progress_library_note, NULL);
    static const aim_trajectory_progress_ops stages = {
        aim_progress_stage_begin, aim_progress_stage_update, aim_progress_stage_finished,
        aim_progress_stage_end};
    aim_trajectory_set_progress(&stages, argc > 1 ? argv[1] : "");
    /* a malformed test hook or progress setting is refused before anything
     * runs (docs/testing.md) */
    if (aim_hook_init() || aim_progress_init())
        return AIM_EXIT_USAGE;
    if (aim_ranks_init(&argc, &argv))
        return AIM_EXIT_RUNTIME;
    /* every result file's sidecar records it (`aimdyn rerun` replaces it
     * with the command line it reruns) */
    if (aim_sidecar_set_command_line(argc, argv)) {
        fprintf(stderr, "aimdyn: out of memory\n");
        return aim_ranks_end(AIM_EXIT_RUNTIME, 1);
    }
    const char *cmd = argc > 1 ? argv[1] : "";
    if (aim_ranks_count() > 1 && !strcmp(cmd, "scaling") && aim_ranks_rank() != 0)
        return aim_ranks_end(0, 0); /* scaling reads files: rank 0 alone runs it */
    if (aim_ranks_count() > 1 && strcmp(cmd, "sgd") && strcmp(cmd, "compare") &&
        strcmp(cmd, "sweep") && strcmp(cmd, "recovery") && strcmp(cmd, "scaling")) {
        /* every rank refuses alike: no rank to abort (two ranks calling
         * MPI_Abort at once crash OpenMPI 4.1's mpirun), one message */
        if (aim_ranks_rank() == 0)
            fprintf(stderr, "aimdyn %s: not for %d MPI ranks; allowed under mpirun or srun "
                            "with more than one rank: sgd, compare, sweep, recovery, scaling (docs/scaling.md)\n",
                    cmd, aim_ranks_count());
        return aim_ranks_end(AIM_EXIT_USAGE, 0);
    }
    const int rc = finish_stdout(run_command(argc, argv));
    /* a blow-up (exit 3) is a finished run, its files written */
    return aim_ranks_end(rc, rc == AIM_EXIT_USAGE || rc == AIM_EXIT_RUNTIME);
}
