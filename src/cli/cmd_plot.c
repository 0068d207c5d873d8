/* aimdyn plot: figures from result files. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "plot.h"
#include "tsv.h"

#define MAX_COLUMNS 16 /* --column panels */

/* A value of --format or --panels: comma-separated names, each adding
 * its bit to *bits. */
static int add_named_bits(const char *option, const char *value, const char *const names[],
                          const int bits_of[], int n, int *bits)
{
    int picked[8], count;
    if (aim_cli_name_list("plot", option, value, names, n, picked, &count))
        return -1;
    for (int i = 0; i < count; i++)
        *bits |= bits_of[picked[i]];
    return 0;
}

/* The formats, named by their file extensions. */
static const char *const format_names[] = {"png", "svg", "pdf"};
static const int format_bits[] = {AIM_PLOT_PNG, AIM_PLOT_SVG, AIM_PLOT_PDF};

static int own_format(void *target, const char *value)
{
    return add_named_bits("--format", value, format_names, format_bits, 3, target);
}

static int own_panels(void *target, const char *value)
{
    static const char *const names[] = {"order", "moments", "mean"};
    static const int bits[] = {AIM_PLOT_ORDER, AIM_PLOT_MOMENTS, AIM_PLOT_MEAN};
    return add_named_bits("--panels", value, names, bits, 3, target);
}

int aim_cmd_plot(int argc, char **argv)
{
    const char *ode[MAX_ORDERS], *labels[MAX_ORDERS], *sgd[MAX_ORDERS], *stem = NULL;
    const char *columns[MAX_COLUMNS];
    int flags = 0, nodes = 0, nlabels = 0, nsgd = 0, ncolumns = 0, formats = 0;
    double samples_d = 0.0;
    const aim_cli_option options[] = {
        {AIM_OPT("ode", AIM_OPT_TEXTS, 1), .target = ode, .count = &nodes,
         .max_count = MAX_ORDERS},
        {AIM_OPT("label", AIM_OPT_TEXTS, 1), .target = labels, .count = &nlabels,
         .max_count = MAX_ORDERS},
        {AIM_OPT("sgd", AIM_OPT_TEXTS, 1), .target = sgd, .count = &nsgd,
         .max_count = MAX_ORDERS},
        {AIM_OPT("figure", AIM_OPT_TEXT, 1), .target = &stem},
        {AIM_OPT("log-tau", AIM_OPT_FLAG, 0), .target = &flags, .bits = AIM_PLOT_LOG_TAU},
        {AIM_OPT("mean", AIM_OPT_FLAG, 0), .target = &flags, .bits = AIM_PLOT_MEAN},
        {AIM_OPT("seeds", AIM_OPT_FLAG, 0), .target = &flags, .bits = AIM_PLOT_SEEDS},
        {AIM_OPT("panels", AIM_OPT_OWN, 1), .target = &flags, .own = own_panels},
        {AIM_OPT("column", AIM_OPT_TEXTS, 1), .target = columns, .count = &ncolumns,
         .max_count = MAX_COLUMNS},
        {AIM_OPT("format", AIM_OPT_OWN, 1), .target = &formats, .own = own_format},
        {AIM_OPT("samples", AIM_OPT_REAL, 1), .min = 1, .max = DBL_MAX,
         .allowed = "a number >= 1 (the dimension d of the files)", .target = &samples_d}};
    int extra;
    const int parsed = aim_cli_parse_files("plot", options,
                                           (int)(sizeof options / sizeof options[0]), argc,
                                           argv, &extra);
    if (parsed)
        return parsed > 0 ? 0 : AIM_EXIT_USAGE;
    if (extra || !stem || (!nodes && !nsgd)) {
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
    /* a column as its file names it: "m(SS)" is the column m_SS (at most
     * one character longer, aim_tsv_column_name) */
    char column_names[MAX_COLUMNS][AIM_PLOT_MAX_COLUMN + 2];
    for (int i = 0; i < ncolumns; i++) {
        if (strlen(columns[i]) > AIM_PLOT_MAX_COLUMN) {
            fprintf(stderr, "aimdyn plot: --column %.40s...: %zu characters; allowed: a column "
                            "name of the files, at most %d characters\n", columns[i],
                    strlen(columns[i]), AIM_PLOT_MAX_COLUMN);
            return AIM_EXIT_USAGE;
        }
        columns[i] = aim_tsv_column_name(columns[i], column_names[i], sizeof column_names[i]);
    }
    const aim_plot_spec sp = {.ode = ode, .labels = nlabels ? labels : NULL, .n_ode = nodes,
                              .sgd = sgd, .n_sgd = nsgd, .samples_d = samples_d, .flags = flags,
                              .columns = columns, .n_columns = ncolumns,
                              .formats = formats ? formats : AIM_PLOT_PNG | AIM_PLOT_SVG};
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
    printf("wrote");
    for (int k = 0; k < 3; k++)
        if (sp.formats & format_bits[k])
            printf(" %s.%s", stem, format_names[k]);
    printf(" and %s.gp (its gnuplot script)\n", stem);
    return 0;
}
