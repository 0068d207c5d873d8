/* aim_plot_figure: the figure of plot and compare, risk and teacher
 * overlap (and the panels asked for) against tau or n / d^2: its gnuplot
 * script written from the plan of its files (plot_plan.c), ODE curves
 * with their bands, SGD means with error bars, each seed's curve. */
#define _POSIX_C_SOURCE 200809L

#include "plot_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The ODE curves of one SGD run (e.g. one per truncation order) share a
 * blue-to-green ramp so that convergence reads as a colour sequence;
 * paired cases (one SGD file per ODE file) get a categorical colour
 * each. */
static const char *curve_colour(const aim_plot_spec *sp, int i)
{
    static const char *const ramp[] = {"#9ecae1", "#6baed6", "#4292c6",
                                       "#2171b5", "#08519c", "#08306b",
                                       "#2ca25f", "#006d2c"};
    static const char *const cases[] = {"#1f4e9c", "#c0392b", "#2ca02c", "#8e44ad",
                                        "#e67e22", "#17becf", "#7f7f7f", "#bcbd22"};
    const int nramp = (int)(sizeof ramp / sizeof ramp[0]);
    if (sp->n_sgd > 1)
        return cases[i % (int)(sizeof cases / sizeof cases[0])];
    return sp->n_ode == 1 ? "#1f4e9c"
                          : ramp[(i * (nramp - 1)) / (sp->n_ode > 1 ? sp->n_ode - 1 : 1)];
}

/* The colour of SGD file i (its means and its seeds). */
static const char *sgd_colour(const aim_plot_spec *sp, int i)
{
    return sp->n_sgd > 1 ? curve_colour(sp, i) : "#c0392b";
}

/* The x column: tau, or n / d^2. */
static void put_x(FILE *f, const aim_plot_spec *sp)
{
    if (sp->samples_d > 0)
        fprintf(f, "(column(\"n\")/%.17g)", sp->samples_d * sp->samples_d);
    else
        fputs("\"tau\"", f);
}

/* Column col + suffix of table t as a gnuplot string, named as the file
 * names it (gnuplot reads the file's header: a file of an earlier version
 * has m(SST) where the reader gives m_SST; a column name may hold any
 * character but a tab or a line break). */
static void put_column(FILE *f, const aim_table *t, const char *col, const char *suffix)
{
    char name[320];
    snprintf(name, sizeof name, "%s%s", col, suffix);
    const int c = aim_table_column(t, name);
    aim_plot_put_quoted(f, c >= 0 ? t->header[c] : name);
}

/* The half-width of the band of file i around col: the truncation error
 * estimate (col_trunc; relative for the risk) where it is a number, else
 * the replicas' standard error (col_se) - a hierarchy handed over to the
 * matrix process has the one before the hand-over and the other after. */
static void put_half_width(FILE *f, const aim_plot_plan *p, int i, const char *col, int has_trunc,
                           int has_se)
{
    const int relative = strcmp(col, "risk") == 0;
    if (has_trunc && has_se) {
        fputs("(column(", f);
        put_column(f, &p->ode[i], col, "_trunc");
        fputs(") == column(", f);
        put_column(f, &p->ode[i], col, "_trunc");
        fputs(") ? ", f);
    }
    if (has_trunc) {
        fputs("column(", f);
        put_column(f, &p->ode[i], col, "_trunc");
        fputs(")", f);
        if (relative) {
            fputs("*column(", f);
            put_column(f, &p->ode[i], col, "");
            fputs(")", f);
        }
    }
    if (has_trunc && has_se)
        fputs(" : ", f);
    if (has_se) {
        fputs("column(", f);
        put_column(f, &p->ode[i], col, "_se");
        fputs(")", f);
    }
    if (has_trunc && has_se)
        fputs(")", f);
}

/* The band of ODE file i around column col, when the file has one: the
 * truncation error estimate of a hierarchy or the replicas' standard
 * error of the matrix method (put_half_width). */
static void put_band(FILE *f, const aim_plot_plan *p, int i, const char *col, int *first)
{
    const aim_plot_spec *sp = p->sp;
    char trunc[320], se[320];
    snprintf(trunc, sizeof trunc, "%s_trunc", col);
    snprintf(se, sizeof se, "%s_se", col);
    const int has_trunc = aim_table_column(&p->ode[i], trunc) >= 0;
    const int has_se = aim_table_column(&p->ode[i], se) >= 0;
    if (!has_trunc && !has_se)
        return;
    if (!*first)
        fputs(", \\\n     ", f);
    *first = 0;
    fprintf(f, "ode_%d using ", i + 1);
    put_x(f, sp);
    for (int side = -1; side <= 1; side += 2) {
        fputs(":(column(", f);
        put_column(f, &p->ode[i], col, "");
        fputs(side < 0 ? ")-" : ")+", f);
        put_half_width(f, p, i, col, has_trunc, has_se);
        fputs(")", f);
    }
    fprintf(f, " with filledcurves fs transparent solid 0.25 noborder lc rgb \"%s\" notitle",
            curve_colour(sp, i));
}

/* A thin, half-transparent line per seed of SGD file i, under the mean. */
static void put_seeds(FILE *f, const aim_plot_plan *p, int i, const char *col, int *first)
{
    const aim_plot_spec *sp = p->sp;
    for (int s = 0; s < p->nseeds[i]; s++) {
        if (!*first)
            fputs(", \\\n     ", f);
        *first = 0;
        fprintf(f, "seeds_%d every ::%d::%d using ", i + 1, p->rows[i][s].first,
                p->rows[i][s].last);
        put_x(f, sp);
        /* #AARRGGBB: AA is the transparency */
        fputc(':', f);
        put_column(f, &p->seeds[i], col, "");
        fprintf(f, " with lines lw 0.8 lc rgb \"#a0%s\" ", sgd_colour(sp, i) + 1);
        if (i == 0 && s == 0 && sp->n_sgd == 1)
            fputs("title \"SGD seeds\"", f);
        else
            fputs("notitle", f);
    }
}

static void put_panel(FILE *f, const aim_plot_plan *p, const aim_plot_panel *pn)
{
    const aim_plot_spec *sp = p->sp;
    fprintf(f, "set key %s opaque\nset ylabel ", pn->key);
    aim_plot_put_quoted(f, pn->label ? pn->label : pn->col);
    fprintf(f, "%s\nplot ", pn->label ? "" : " noenhanced");
    int first = 1;
    for (int i = 0; i < sp->n_ode; i++)
        put_band(f, p, i, pn->col, &first);
    for (int i = 0; p->seeds && i < sp->n_sgd; i++)
        put_seeds(f, p, i, pn->col, &first);
    for (int i = 0; i < sp->n_ode; i++, first = 0) {
        if (!first)
            fputs(", \\\n     ", f);
        fprintf(f, "ode_%d using ", i + 1);
        put_x(f, sp);
        fputc(':', f);
        put_column(f, &p->ode[i], pn->col, "");
        fprintf(f, " with lines lw 2 lc rgb \"%s\" title ", curve_colour(sp, i));
        aim_plot_put_quoted(f, sp->labels ? sp->labels[i] : "limit ODE");
    }
    for (int i = 0; i < sp->n_sgd; i++, first = 0) {
        if (!first)
            fputs(", \\\n     ", f);
        fprintf(f, "sgd_%d using ", i + 1);
        put_x(f, sp);
        fputc(':', f);
        put_column(f, &p->sgd[i], pn->col, "_mean");
        fputc(':', f);
        put_column(f, &p->sgd[i], pn->col, "_se");
        fprintf(f, " with yerrorbars pt 7 ps 0.5 lc rgb \"%s\" ", sgd_colour(sp, i));
        if (sp->n_sgd > 1)
            fputs("notitle", f);
        else
            fputs("title \"SGD mean +- s.e.\"", f);
    }
    fputc('\n', f);
}

/* Columns and rows of the multiplot, and the canvas in pixels (a PDF's
 * in points: pixels / 72 inches, so that its text has the PNG's
 * proportions). */
static void figure_layout(const aim_plot_plan *p, int *rows, int *cols, int *width, int *height)
{
    *cols = p->npanels > 3 ? 2 : 1;
    *rows = (p->npanels + *cols - 1) / *cols;
    *width = *cols == 1 ? 900 : 1500;
    *height = *rows * 340 < 1000 ? 1000 : *rows * 340 > 6000 ? 6000 : *rows * 340;
}

static void put_figure(FILE *f, const aim_plot_plan *p)
{
    const aim_plot_spec *sp = p->sp;
    int rows, cols, width, height;
    figure_layout(p, &rows, &cols, &width, &height);
    fprintf(f, "set multiplot layout %d,%d title ", rows, cols);
    aim_plot_put_quoted(f, p->title);
    fputs(" noenhanced\nset grid\n", f);
    if (sp->samples_d > 0)
        fprintf(f, "set xlabel \"samples n / d^2 (d = %g%s)\"\n", sp->samples_d,
                sp->n_sgd > 1 ? "; lines: ODE, points: SGD mean +- s.e." : "");
    else
        fputs("set xlabel \"tau\"\n", f);
    if (sp->flags & AIM_PLOT_LOG_TAU || sp->samples_d > 0) /* 0 has no place on it */
        fputs("set logscale x\nset format x \"10^{%L}\"\n", f);
    for (int k = 0; k < p->npanels; k++)
        put_panel(f, p, &p->panels[k]);
    fputs("unset multiplot\nunset output\n", f);
}

/* The data files as the variables ode_I, sgd_I and seeds_I (I from 1):
 * for the kept script (run = 0) their final names, each a default that
 * gnuplot -e may override; for this run (run = 1) the files it reads,
 * which may still be temporary (compare draws before its commit). */
static void put_data_files(FILE *f, const aim_plot_plan *p, int run)
{
    const aim_plot_spec *sp = p->sp;
    for (int kind = 0; kind < 3; kind++) {
        static const char *const var[] = {"ode", "sgd", "seeds"};
        const int n = kind == 0 ? sp->n_ode : kind == 1 ? sp->n_sgd : p->seeds ? sp->n_sgd : 0;
        for (int i = 0; i < n; i++) {
            const char *file = kind == 0   ? (!run && sp->ode_final ? sp->ode_final : sp->ode)[i]
                               : kind == 1 ? (!run && sp->sgd_final ? sp->sgd_final : sp->sgd)[i]
                                           : (!run && sp->sgd_final ? p->seeds_final
                                                                     : p->seeds_path)[i];
            if (run)
                fprintf(f, "%s_%d = ", var[kind], i + 1);
            else
                fprintf(f, "if (!exists(\"%s_%d\")) %s_%d = ", var[kind], i + 1, var[kind],
                        i + 1);
            aim_plot_put_path(f, file);
            fputc('\n', f);
        }
    }
}

/* The figure once, drawn in a loop over the formats, so that a restyled
 * kept script changes every format alike. */
static void figure_script(FILE *f, const void *ctx, int formats)
{
    const aim_plot_plan *p = ctx;
    int rows, cols, width, height;
    figure_layout(p, &rows, &cols, &width, &height);
    fputs("set encoding utf8\n"
          "set datafile commentschars \"#\"\n"
          "set datafile separator \"\\t\"\n",
          f);
    put_data_files(f, p, 0);
    fputs("do for [format in \"", f);
    for (int k = 0, n = 0; k < AIM_PLOT_NFORMATS; k++)
        if (formats & aim_plot_formats[k].bit)
            fprintf(f, "%s%s", n++ ? " " : "", aim_plot_formats[k].ext);
    fputs("\"] {\n", f);
    for (int k = 0; k < AIM_PLOT_NFORMATS; k++)
        if (formats & aim_plot_formats[k].bit) {
            fprintf(f, "if (format eq \"%s\") {\n", aim_plot_formats[k].ext);
            aim_plot_put_terminal(f, aim_plot_formats[k].bit, width, height, "enhanced");
            fputs("}\n", f);
        }
    put_figure(f, p);
    fputs("}\n", f);
}

int aim_plot_figure(const aim_plot_spec *sp, const char *stem, aim_atomic_set *set)
{
    if (aim_plot_bad_name(stem)) {
        fprintf(stderr, "aimdyn plot: unusable file name (line break)\n");
        return -1;
    }
    aim_plot_plan p;
    const int formats = sp->formats ? sp->formats : AIM_PLOT_PNG | AIM_PLOT_SVG;
    int rc = aim_plot_plan_make(&p, sp);
    char *run_vars = NULL;
    size_t len = 0;
    FILE *f = rc == 0 ? open_memstream(&run_vars, &len) : NULL;
    if (f)
        put_data_files(f, &p, 1);
    if (rc == 0 && (!f || fclose(f) != 0)) {
        fprintf(stderr, "aimdyn: out of memory (the gnuplot script of %s)\n", stem);
        rc = -1;
    }
    if (rc == 0)
        rc = aim_plot_draw(stem, figure_script, &p, formats, run_vars, set);
    free(run_vars);
    /* files of the stem that this figure does not replace would show other data */
    if (rc == 0)
        rc = aim_plot_remove_others(set, stem, formats, 1);
    aim_plot_plan_free(&p);
    return rc;
}
