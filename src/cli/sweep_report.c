/* aimdyn sweep: what a finished sweep shows. DIR/NAME-sweep.tsv, the
 * heatmap of tau_wr, the table and the cost on stdout, and the exit
 * status from the points' outcomes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plot.h"
#include "ranks.h"
#include "sweep_internal.h"
#include "tsv.h"

/* The table into set. */
int aim_sweep_write_table(const sweep *sw, char *path, size_t n, aim_atomic_set *set)
{
    if (aim_tsv_path(path, n, &sw->base, "sweep", "tsv"))
        return -1;
    aim_tsv *tsv = aim_tsv_open(path);
    int rc = -1;
    if (tsv) {
        FILE *f = aim_tsv_stream(tsv);
        aim_tsv_metadata(tsv, "sweep", &sw->base);
        for (int p = 0; p < sw->npoints; p++) {
            char what[64];
            snprintf(what, sizeof what, "point %d of %d: ", p + 1, sw->npoints);
            if (aim_cli_record_integrations(tsv, what, sw->res[p].integrations,
                                            sw->res[p].stats)) {
                aim_tsv_abort(tsv);
                return -1;
            }
        }
        for (int v = 0; v < sw->nvary; v++) {
            fprintf(f, "# vary: %s =", sw->vary[v].key);
            for (int i = 0; i < sw->vary[v].count; i++)
                fprintf(f, "%s%s", i ? "," : " ", sw->vary[v].values[i]);
            fputc('\n', f);
        }
        fprintf(f, "# sweep: %d points, each the configuration above with its row's values; "
                   "the limit ODE as `aimdyn ode` integrates it\n"
                   "# tau_wr: first tau with |teacher overlap| >= %g (nan: not reached); "
                   "n_wr = tau_wr d^2 / eta at d = sgd.d; tau_end: the last grid point "
                   "reached, overlap_end and risk_end there\n",
                sw->npoints, sw->base.recovery_threshold);
        char name[sizeof sw->vary[0].key + 2];
        for (int v = 0; v < sw->nvary; v++) /* training.eta: column training_eta */
            fprintf(f, "%s\t", aim_tsv_column_name(sw->vary[v].key, name, sizeof name));
        fprintf(f, "%s\n", aim_sweep_result_header);
        for (int p = 0; p < sw->npoints; p++) {
            for (int v = 0; v < sw->nvary; v++)
                fprintf(f, "%s\t", aim_sweep_point_value(sw, p, v));
            aim_sweep_put_result(f, &sw->res[p]);
        }
        rc = aim_tsv_add_to(tsv, set);
    }
    return rc;
}

/* The heatmap into set: cell (panel = value of the third key, row =
 * second, column = first) coloured by tau_wr and annotated. stem is
 * DIR/NAME-sweep. */
int aim_sweep_draw_heatmap(const sweep *sw, const char *stem, aim_atomic_set *set)
{
    const int nx = sw->vary[0].count, ny = sw->nvary > 1 ? sw->vary[1].count : 1;
    const int np = sw->nvary > 2 ? sw->vary[2].count : 1;
    double *value = malloc(sizeof(double) * (size_t)sw->npoints);
    char(*text)[40] = malloc(sizeof *text * (size_t)sw->npoints);
    const char **texts = malloc(sizeof *texts * (size_t)sw->npoints);
    int rc = -1;
    if (!value || !text || !texts) {
        fprintf(stderr, "aimdyn sweep: out of memory\n");
        goto done;
    }
    for (int p = 0; p < sw->npoints; p++) {
        const int i = aim_sweep_value_index(sw, p, 0);
        const int j = sw->nvary > 1 ? aim_sweep_value_index(sw, p, 1) : 0;
        const int k = sw->nvary > 2 ? aim_sweep_value_index(sw, p, 2) : 0;
        const int c = (k * ny + j) * nx + i;
        const point_result *r = &sw->res[p];
        const int blowup = !strcmp(r->status, "blow-up");
        value[c] = r->tau_wr;
        if (isfinite(r->tau_wr))
            snprintf(text[c], sizeof text[c], "%.3g%s", r->tau_wr, blowup ? ", blow-up" : "");
        else if (blowup || !strcmp(r->status, "failed"))
            snprintf(text[c], sizeof text[c], "%s", r->status);
        else /* the ODE ran to the horizon without recovering */
            snprintf(text[c], sizeof text[c], "not by %.3g", r->tau_end);
        texts[c] = text[c];
    }
    char title[128];
    snprintf(title, sizeof title, "limit-ODE weak-recovery time tau_wr (|teacher overlap| >= %g)",
             sw->base.recovery_threshold);
    const aim_plot_heatmap_spec spec = {
        .title = title,
        .xlabel = sw->vary[0].key,
        .ylabel = sw->nvary > 1 ? sw->vary[1].key : "",
        .cblabel = "tau_wr",
        .panel_key = sw->nvary > 2 ? sw->vary[2].key : "",
        .x = sw->vary[0].values,
        .y = sw->nvary > 1 ? sw->vary[1].values : NULL,
        .panel = sw->nvary > 2 ? sw->vary[2].values : NULL,
        .nx = nx,
        .ny = ny,
        .npanels = np,
        .value = value,
        .text = texts};
    rc = aim_plot_heatmap(&spec, stem, set);
done:
    free(value);
    free(text);
    free(texts);
    return rc;
}

/* v with %.4g, or "none" where it is not defined (never a bare nan) */
static const char *shown(char buf[32], double v)
{
    return isnan(v) ? "none" : (snprintf(buf, 32, "%.4g", v), buf);
}

/* The table on stdout, and what the sweep cost: the wall time, and the
 * integrations' times summed over the points computed in this run. */
void aim_sweep_print_summary(const sweep *sw, int computed, double wall)
{
    int width[MAX_VARY];
    for (int v = 0; v < sw->nvary; v++) {
        width[v] = (int)strlen(sw->vary[v].key);
        for (int i = 0; i < sw->vary[v].count; i++)
            if ((int)strlen(sw->vary[v].values[i]) > width[v])
                width[v] = (int)strlen(sw->vary[v].values[i]);
    }
    for (int v = 0; v < sw->nvary; v++)
        printf("%-*s  ", width[v], sw->vary[v].key);
    printf("%-14s %10s %10s %10s\n", "status", "tau_wr", "n_wr", "tau_end");
    double ode = 0.0;
    for (int p = 0; p < sw->npoints; p++) {
        const point_result *r = &sw->res[p];
        char b[3][32];
        for (int v = 0; v < sw->nvary; v++)
            printf("%-*s  ", width[v], aim_sweep_point_value(sw, p, v));
        printf("%-14s %10s %10s %10s\n", r->status, shown(b[0], r->tau_wr),
               shown(b[1], r->n_wr), shown(b[2], r->tau_end));
    }
    for (int p = 0; p < sw->npoints; p++)
        if (sw->done[p] == COMPUTED && !isnan(sw->res[p].seconds)) /* NaN: another rank's */
            ode += sw->res[p].seconds;
    printf("%d points (%d computed, %d kept from an earlier run), %d jobs: wall time %.2f s, "
           "ODE time %.2f s summed over the computed points%s",
           sw->npoints, computed, sw->npoints - computed, sw->jobs, wall, ode,
           aim_ranks_count() > 1 ? " of rank 0" : "");
    if (computed > 0 && wall > 0)
        printf(" (speed-up %.2f)", ode / wall);
    printf("\n");
}

/* The exit status of a sweep whose table is written, its failed and
 * blown-up points said on stderr: a failed point or heatmap is a run-time
 * failure, else a blow-up is recorded as such. */
int aim_sweep_result_status(const sweep *sw, int heatmap_failed)
{
    int failed = 0, blowups = 0;
    for (int p = 0; p < sw->npoints; p++) {
        failed += !strcmp(sw->res[p].status, "failed");
        blowups += !strcmp(sw->res[p].status, "blow-up");
    }
    if (failed)
        fprintf(stderr, "aimdyn sweep: %d point%s could not be integrated (status failed; the "
                        "message column says why; a rerun computes %s again)\n", failed,
                failed > 1 ? "s" : "", failed > 1 ? "them" : "it");
    if (blowups)
        fprintf(stderr, "aimdyn sweep: %d point%s blew up (status blow-up, recorded in the "
                        "table)\n", blowups, blowups > 1 ? "s" : "");
    return failed || heatmap_failed ? AIM_EXIT_RUNTIME : blowups ? AIM_EXIT_BLOWUP : 0;
}
