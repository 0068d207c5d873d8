/* aimdyn agreement: the agreement table of an ODE file and an SGD
 * summary. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "compare.h"
#include "tsv.h"

/* What agreement reads: an ODE file (sgd = 0) or an SGD summary (sgd =
 * 1), with tau and every observable (X, or X_mean and X_se). */
typedef struct {
    char names[2 * AIM_OBS_COUNT][32];
    const char *columns[2 * AIM_OBS_COUNT + 2];
    aim_table_kind kind;
} result_kind;

static void result_kind_init(result_kind *r, int sgd)
{
    int n = 0;
    r->columns[n++] = "tau";
    for (int k = 0; k < AIM_OBS_COUNT; k++)
        for (int j = 0; j < (sgd ? 2 : 1); j++) {
            char *name = r->names[sgd ? 2 * k + j : k];
            snprintf(name, sizeof r->names[0], sgd ? (j ? "%s_se" : "%s_mean") : "%s",
                     aim_obs_names[k]);
            r->columns[n++] = name;
        }
    r->columns[n] = NULL;
    r->kind = (aim_table_kind){sgd ? "an SGD summary file NAME-sgd-dD.tsv (tau, and X_mean, "
                                     "X_se for every observable X)"
                                   : "an ODE result file NAME-ode.tsv (tau and every observable)",
                               r->columns, NULL};
}

/* Observables of a result file read as result_kind on its tau grid
 * (points x OBS), the SGD summary's means and standard errors when sgd is
 * set. Returns the number of rows. */
static int table_observables(const aim_table *t, int sgd, double upto, double *tau, double *a,
                             double *b, int max_rows)
{
    const int kt = aim_table_column(t, "tau");
    int ka[AIM_OBS_COUNT], kb[AIM_OBS_COUNT];
    for (int k = 0; k < AIM_OBS_COUNT; k++) {
        char name[64];
        snprintf(name, sizeof name, sgd ? "%s_mean" : "%s", aim_obs_names[k]);
        ka[k] = aim_table_column(t, name);
        snprintf(name, sizeof name, "%s_se", aim_obs_names[k]);
        kb[k] = aim_table_column(t, name);
    }
    int rows = 0;
    for (int i = 0; i < t->nrows && rows < max_rows; i++) {
        const double *row = t->data + (size_t)i * t->ncols;
        if (row[kt] > upto)
            break;
        tau[rows] = row[kt];
        for (int k = 0; k < AIM_OBS_COUNT; k++) {
            a[(size_t)rows * AIM_OBS_COUNT + k] = row[ka[k]];
            if (sgd)
                b[(size_t)rows * AIM_OBS_COUNT + k] = row[kb[k]];
        }
        rows++;
    }
    return rows;
}

int aim_cmd_agreement(int argc, char **argv)
{
    const char *ode[MAX_ORDERS], *sgd = NULL;
    int nodes = 0;
    double upto = INFINITY;
    const aim_cli_option options[] = {
        {AIM_OPT("ode", AIM_OPT_TEXTS, 1), .target = ode, .count = &nodes,
         .max_count = MAX_ORDERS},
        {AIM_OPT("sgd", AIM_OPT_TEXT, 1), .target = &sgd},
        {AIM_OPT("upto", AIM_OPT_REAL, 1), .min = 0, .min_open = 1, .max = INFINITY,
         .allowed = "a real number > 0 (the last tau compared)", .target = &upto}};
    int extra;
    const int parsed = aim_cli_parse_files("agreement", options,
                                           (int)(sizeof options / sizeof options[0]), argc,
                                           argv, &extra);
    if (parsed)
        return parsed > 0 ? 0 : AIM_EXIT_USAGE;
    if (extra || !sgd || !nodes) {
        fprintf(stderr, "aimdyn agreement: needs --sgd FILE and at least one --ode FILE "
                        "(see `aimdyn agreement --help`)\n");
        return AIM_EXIT_USAGE;
    }
    result_kind sgd_kind, ode_kind;
    result_kind_init(&sgd_kind, 1);
    result_kind_init(&ode_kind, 0);
    aim_table ts;
    if (aim_table_read(sgd, &sgd_kind.kind, &ts))
        return AIM_EXIT_USAGE;
    const size_t cells = (size_t)ts.nrows * AIM_OBS_COUNT + 1;
    double *tau_s = malloc(sizeof(double) * ((size_t)ts.nrows + 1)),
           *tau_o = malloc(sizeof(double) * ((size_t)ts.nrows + 1));
    double *mean = malloc(sizeof(double) * cells), *se = malloc(sizeof(double) * cells),
           *obs = malloc(sizeof(double) * cells);
    int exit_code = AIM_EXIT_USAGE;
    if (!tau_s || !tau_o || !mean || !se || !obs) {
        fprintf(stderr, "aimdyn agreement: out of memory\n");
        exit_code = AIM_EXIT_RUNTIME;
        goto done;
    }
    int ns = table_observables(&ts, 1, upto, tau_s, mean, se, ts.nrows);
    if (ns < 1) {
        fprintf(stderr, "aimdyn agreement: %s: no row up to --upto; allowed: an SGD summary "
                        "file NAME-sgd-dD.tsv with a row at tau <= --upto\n", sgd);
        goto done;
    }
    printf("%-28s %-10s %12s %10s %10s %10s  %s\n", "ode file", "observable", "max_gap",
           "at_tau", "gap/se", "rel_gap", "verdict");
    for (int j = 0; j < nodes; j++) {
        aim_table to;
        if (aim_table_read(ode[j], &ode_kind.kind, &to))
            goto done;
        int no = table_observables(&to, 0, upto, tau_o, obs, NULL, ns);
        int same = 1;
        for (int i = 0; same && i < ns; i++) /* a stopped ODE has fewer rows */
            same = i >= no || fabs(tau_o[i] - tau_s[i]) <= 1e-9 * fmax(1.0, fabs(tau_s[i]));
        if (!same) {
            fprintf(stderr, "aimdyn agreement: %s and %s are not on the same tau grid "
                            "(compare files made with the same training.horizon, "
                            "training.points and training.grid)\n", ode[j], sgd);
            aim_table_free(&to);
            goto done;
        }
        for (size_t i = (size_t)(no > 0 ? no : 0) * AIM_OBS_COUNT; i < (size_t)ns * AIM_OBS_COUNT; i++)
            obs[i] = NAN; /* past a stop: an infinite gap */
        aim_gap gaps[AIM_OBS_COUNT];
        aim_compare_gaps(ns, tau_s, obs, mean, se, gaps);
        const char *base = strrchr(ode[j], '/') ? strrchr(ode[j], '/') + 1 : ode[j];
        for (int k = 0; k < AIM_OBS_COUNT; k++) {
            int raw_mean = 0; /* the mean is a row of its own in raw centring only */
            for (int i = 0; k == AIM_OBS_MEAN && i < ns; i++)
                raw_mean |= mean[(size_t)i * AIM_OBS_COUNT + k] != 0.0;
            if (k == AIM_OBS_MEAN && !raw_mean)
                continue;
            double scale = 0.0;
            for (int i = 0; i < no; i++)
                scale = fmax(scale, fabs(obs[(size_t)i * AIM_OBS_COUNT + k]));
            printf("%-28.28s %-10s %12.4g %10.4g %10.3g %10.3g  %s\n", base, aim_obs_names[k],
                   gaps[k].max_abs, gaps[k].tau_abs, gaps[k].max_z,
                   scale > 0 ? gaps[k].max_abs / scale : NAN,
                   aim_compare_verdict(&gaps[k], NULL, 0, 1));
            /* the ODE risk against the Gaussian formula on SGD's order
             * parameters, where the file has it (theory/measurement.md) */
            const int cgm = k == AIM_OBS_RISK ? aim_table_column(&ts, "risk_gauss_mean") : -1;
            const int cgs = aim_table_column(&ts, "risk_gauss_se");
            if (cgm >= 0 && cgs >= 0) {
                aim_gap g = aim_compare_gap(ns, tau_s, obs + k, AIM_OBS_COUNT, ts.data + cgm,
                                            ts.data + cgs, (size_t)ts.ncols);
                printf("%-28.28s %-10s %12.4g %10.4g %10.3g %10.3g  %s\n", base, "risk_gauss",
                       g.max_abs, g.tau_abs, g.max_z, scale > 0 ? g.max_abs / scale : NAN,
                       aim_compare_verdict(&g, NULL, 0, 1));
            }
        }
        /* tracked moments m(w), columns m_w, present in both files (tied
         * and untied) */
        for (int c = 0; c < to.ncols; c++) {
            char name[160];
            if (strncmp(to.names[c], "m_", 2) != 0)
                continue;
            snprintf(name, sizeof name, "%s_mean", to.names[c]);
            int cm = aim_table_column(&ts, name);
            snprintf(name, sizeof name, "%s_se", to.names[c]);
            int cs = aim_table_column(&ts, name);
            if (cm < 0 || cs < 0)
                continue;
            double scale = 0.0;
            for (int i = 0; i < ns; i++) { /* the ODE column, NaN past its end */
                obs[i] = i < no ? to.data[(size_t)i * to.ncols + c] : NAN;
                if (!isnan(obs[i]))
                    scale = fmax(scale, fabs(obs[i]));
            }
            aim_gap g = aim_compare_gap(ns, tau_s, obs, 1, ts.data + cm, ts.data + cs,
                                        (size_t)ts.ncols);
            printf("%-28.28s %-10s %12.4g %10.4g %10.3g %10.3g  %s\n", base, to.names[c],
                   g.max_abs, g.tau_abs, g.max_z, scale > 0 ? g.max_abs / scale : NAN,
                   aim_compare_verdict(&g, NULL, 0, 1));
        }
        aim_table_free(&to);
    }
    exit_code = 0;
done:
    aim_table_free(&ts);
    free(tau_s);
    free(tau_o);
    free(mean);
    free(se);
    free(obs);
    return exit_code;
}
