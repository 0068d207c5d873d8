/* aim_cli: what the command modules of the aimdyn front end share
 * (exit codes, the weak-recovery threshold, configuration loading). Each
 * command lives in its own file (main.c: ode, sgd, compare, hierarchy,
 * agreement, plot; cmd_recovery.c, cmd_sweep.c, cmd_scaling.c) and
 * main() dispatches on the command name. */
#ifndef AIM_CLI_H
#define AIM_CLI_H

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

int aim_cmd_recovery(int argc, char **argv);
int aim_cmd_sweep(int argc, char **argv);
int aim_cmd_scaling(int argc, char **argv);

#endif
