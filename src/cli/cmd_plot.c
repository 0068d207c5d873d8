/* aimdyn plot: figures from result files. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "plot.h"

int aim_cmd_plot(int argc, char **argv)
{
    static const struct option longopts[] = {{"ode", required_argument, NULL, 'o'},
                                             {"label", required_argument, NULL, 'L'},
                                             {"sgd", required_argument, NULL, 's'},
                                             {"figure", required_argument, NULL, 'f'},
                                             {"log-tau", no_argument, NULL, 'l'},
                                             {"mean", no_argument, NULL, 'm'},
                                             {"samples", required_argument, NULL, 'n'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    const char *ode[MAX_ORDERS], *labels[MAX_ORDERS], *sgd[MAX_ORDERS], *stem = NULL;
    int c, flags = 0, nodes = 0, nlabels = 0, nsgd = 0;
    double samples_d = 0.0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'o':
        case 'L':
        case 's': {
            int *count = c == 'o' ? &nodes : c == 'L' ? &nlabels : &nsgd;
            const char **list = c == 'o' ? ode : c == 'L' ? labels : sgd;
            if (*count == MAX_ORDERS) {
                fprintf(stderr, "aimdyn plot: %s given more than %d times\n",
                        c == 'o' ? "--ode" : c == 'L' ? "--label" : "--sgd", MAX_ORDERS);
                return AIM_EXIT_USAGE;
            }
            list[(*count)++] = optarg;
            break;
        }
        case 'f': stem = optarg; break;
        case 'l': flags |= AIM_PLOT_LOG_TAU; break;
        case 'm': flags |= AIM_PLOT_MEAN; break;
        case 'n': {
            char *end;
            samples_d = strtod(optarg, &end);
            if (end == optarg || *end || !(samples_d >= 1.0) || !isfinite(samples_d)) {
                fprintf(stderr, "aimdyn plot: --samples \"%s\": the dimension d of the files; "
                                "allowed: a number >= 1\n", optarg);
                return AIM_EXIT_USAGE;
            }
            break;
        }
        case 'h': aim_cli_usage(stdout, "plot"); return 0;
        default:
            fprintf(stderr, "aimdyn plot: see `aimdyn plot --help`\n");
            return AIM_EXIT_USAGE;
        }
    }
    if (optind < argc || !stem || (!nodes && !nsgd)) {
        fprintf(stderr, "aimdyn plot: needs --figure STEM and at least one of --ode FILE, "
                        "--sgd FILE (see `aimdyn plot --help`)\n");
        return AIM_EXIT_USAGE;
    }
    if (aim_cli_check_figure("plot", "--figure", stem))
        return AIM_EXIT_USAGE;
    for (int i = 0; i < nodes + nsgd; i++)
        if (aim_cli_check_input("plot", i < nodes ? "--ode" : "--sgd",
                                i < nodes ? ode[i] : sgd[i - nodes]))
            return AIM_EXIT_USAGE;
    for (int i = 0; i < nlabels; i++)
        if (strchr(labels[i], '\n') || strchr(labels[i], '\r')) {
            fprintf(stderr, "aimdyn plot: --label %d contains a line break; allowed: one line "
                            "of text\n", i + 1);
            return AIM_EXIT_USAGE;
        }
    if (nlabels && nlabels != nodes) {
        fprintf(stderr, "aimdyn plot: %d --label for %d --ode files: give one label per "
                        "ODE file, or none\n", nlabels, nodes);
        return AIM_EXIT_USAGE;
    }
    if (nsgd > 1 && nsgd != nodes) {
        fprintf(stderr, "aimdyn plot: %d --sgd for %d --ode files: give one SGD file for all "
                        "ODE files, or one per ODE file (paired in order)\n", nsgd, nodes);
        return AIM_EXIT_USAGE;
    }
    const aim_plot_spec sp = {ode, nlabels ? labels : NULL, nodes, sgd, nsgd, samples_d, flags};
    if (aim_plot_check_inputs(&sp))
        return AIM_EXIT_USAGE;
    aim_atomic_set *set = NULL;
    const int locked = aim_cli_lock_figure(stem, &set);
    if (locked)
        return locked > 0 ? AIM_EXIT_USAGE : AIM_EXIT_RUNTIME;
    /* on failure the old figure stays as it was */
    if (aim_plot_figure(&sp, stem, set)) {
        aim_atomic_set_free(set);
        return AIM_EXIT_RUNTIME;
    }
    if (aim_atomic_set_commit(set))
        return AIM_EXIT_RUNTIME;
    printf("wrote %s.png and %s.svg\n", stem, stem);
    return 0;
}
