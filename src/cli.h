/* aim_cli: what the command modules of the aimdyn front end share
 * (exit codes, the weak-recovery threshold, configuration loading). Each
 * command lives in its own file (main.c: ode, sgd, compare, hierarchy,
 * agreement, plot; cmd_recovery.c, cmd_sweep.c, cmd_scaling.c) and
 * main() dispatches on the command name. */
#ifndef AIM_CLI_H
#define AIM_CLI_H

#include "atomic.h"
#include "config.h"

enum { AIM_EXIT_USAGE = 1, AIM_EXIT_RUNTIME = 2, AIM_EXIT_BLOWUP = 3 };

/* AIM_RECOVERY_THRESHOLD, the weak-recovery threshold */
#include "trajectory.h"

/* The help lines of --set, --out, --name and --help. */
extern const char *const aim_cli_usage_common;

/* cfg = defaults, then the file at path (NULL: the built-in default
 * example), then the assignments sets[0 .. nsets-1] ("section.key=value")
 * in order, then validation. Returns 0, or -1 after printing
 * "aimdyn CMD: reason" to stderr. */
int aim_cli_load_config(const char *cmd, const char *path, const char *const *sets,
                        int nsets, aim_config *cfg);

/* A figure stem given on the command line (option opt, e.g. --figure):
 * one line, a file name after its last '/', and not starting with '|' or
 * '<' (gnuplot would run the rest as a shell command). Returns 0, or -1
 * after a message naming the option, the value and what is allowed. */
int aim_cli_check_figure(const char *cmd, const char *opt, const char *stem);

/* An input file handed to gnuplot (plot --ode, --sgd): not starting with
 * '|' or '<'. Returns 0, or -1 after a message. */
int aim_cli_check_input(const char *cmd, const char *opt, const char *path);

/* Takes the output lock of a figure stem (its directory and file name:
 * aim_atomic_lock) and, when set is not NULL, makes the set that its
 * files join. Returns 0, 1 when another run holds the lock, -1 (said). */
int aim_cli_lock_figure(const char *stem, aim_atomic_set **set);

int aim_cmd_recovery(int argc, char **argv);
int aim_cmd_sweep(int argc, char **argv);
int aim_cmd_scaling(int argc, char **argv);

#endif
