/* aim_plot_scaling: the figure of aimdyn scaling, samples to weak
 * recovery against d on log-log axes (seeds, medians with their
 * confidence intervals, the power-law fit, the predictions). */
#include "plot_internal.h"

#include <math.h>
#include <stdio.h>

/* Datablock $name (gnuplot 5) of the rows i < n whose ncols columns are
 * all finite, so that undefined values draw nothing; a blank line in
 * their place breaks a connecting line there (one only: two would start
 * a new data set). Returns the rows written: gnuplot refuses to plot an
 * empty block. */
static int scaling_block(FILE *f, const char *name, int n, const double *const *cols,
                         int ncols)
{
    int rows = 0, gap = 0;
    fprintf(f, "$%s << EOD\n", name);
    for (int i = 0; i < n; i++) {
        int finite = 1;
        for (int k = 0; k < ncols; k++)
            finite &= isfinite(cols[k][i]);
        if (!finite) {
            if (rows && !gap)
                fputc('\n', f);
            gap = 1;
            continue;
        }
        gap = 0;
        for (int k = 0; k < ncols; k++)
            fprintf(f, "%s%.17g", k ? " " : "", cols[k][i]);
        fputc('\n', f);
        rows++;
    }
    fputs("EOD\n", f);
    return rows;
}

/* Rows of each datablock, for choosing the plot elements. */
typedef struct {
    int seeds, medians, bars, preds;
} scaling_rows;

/* The data once at the top of the script (both terminals use it), the
 * axis range over every d, the d values as x tics. */
static void scaling_data(FILE *f, const aim_plot_scaling_spec *sp, scaling_rows *rows)
{
    const double *seeds[] = {sp->seed_d, sp->seed_n};
    const double *medians[] = {sp->d, sp->median};
    const double *bars[] = {sp->d, sp->median, sp->ci_lo, sp->ci_hi};
    const double *preds[] = {sp->pred_d, sp->pred_n};
    rows->seeds = scaling_block(f, "seeds", sp->n_seeds, seeds, 2);
    rows->medians = scaling_block(f, "medians", sp->n_dims, medians, 2);
    rows->bars = scaling_block(f, "bars", sp->n_dims, bars, 4);
    rows->preds = scaling_block(f, "predictions", sp->n_pred, preds, 2);
    double lo = INFINITY, hi = 0.0;
    fputs("set xtics (", f);
    for (int i = 0; i < sp->n_dims + sp->n_pred; i++) {
        double d = i < sp->n_dims ? sp->d[i] : sp->pred_d[i - sp->n_dims];
        fprintf(f, "%s%.17g", i ? ", " : "", d);
        lo = fmin(lo, d);
        hi = fmax(hi, d);
    }
    /* a margin of a quarter octave each side keeps the end points off the frame */
    fprintf(f, ")\nset xrange [%.17g:%.17g]\n", lo / 1.19, hi * 1.19);
    if (isfinite(sp->fit_c) && isfinite(sp->fit_a))
        fprintf(f, "fit_c = %.17g\nfit_a = %.17g\n", sp->fit_c, sp->fit_a);
    /* a single value (one d, one seed) leaves gnuplot an empty y range */
    const double *ys[] = {sp->seed_n, sp->median, sp->ci_lo, sp->ci_hi, sp->pred_n};
    const int ny[] = {sp->n_seeds, sp->n_dims, sp->n_dims, sp->n_dims, sp->n_pred};
    lo = INFINITY;
    hi = -INFINITY;
    for (int k = 0; k < 5; k++)
        for (int i = 0; i < ny[k]; i++)
            if (isfinite(ys[k][i])) {
                lo = fmin(lo, ys[k][i]);
                hi = fmax(hi, ys[k][i]);
            }
    if (lo == hi && !isfinite(sp->fit_a))
        fprintf(f, "set yrange [%.17g:%.17g]\n", lo / 3, hi * 3);
}

static void scaling_element(FILE *f, int *first)
{
    fputs(*first ? "plot " : ", \\\n     ", f);
    *first = 0;
}

static void scaling_figure(FILE *f, const aim_plot_scaling_spec *sp, const scaling_rows *rows)
{
    fputs("set logscale xy\nset grid\nset key top left opaque\nset samples 200\n"
          "set format y \"10^{%L}\"\n"
          "set xlabel \"dimension d\"\n"
          "set ylabel \"samples to weak recovery n_{wr}\"\n",
          f);
    if (sp->title) {
        fputs("set title ", f);
        aim_plot_put_quoted(f, sp->title);
        fputs(" noenhanced\n", f);
    }
    int first = 1;
    if (rows->seeds) {
        scaling_element(f, &first);
        fputs("$seeds using 1:2 with points pt 7 ps 0.8 lc rgb \"#a0c0392b\" "
              "title \"seeds (recovered)\"", f);
    }
    if (rows->bars) {
        scaling_element(f, &first);
        fputs("$bars using 1:2:3:4 with yerrorbars ps 0 lw 1.5 lc rgb \"#c0392b\" "
              "title \"confidence interval of the median\"", f);
    }
    if (rows->medians) {
        scaling_element(f, &first);
        fputs("$medians using 1:2 with points pt 7 ps 1.4 lc rgb \"#c0392b\" "
              "title \"median\"", f);
    }
    if (isfinite(sp->fit_c) && isfinite(sp->fit_a)) {
        scaling_element(f, &first);
        fputs("fit_c * x**fit_a with lines lw 2 lc rgb \"#1f4e9c\" title ", f);
        aim_plot_put_quoted(f, sp->fit_key ? sp->fit_key : "power law");
    }
    if (rows->preds) {
        scaling_element(f, &first);
        fputs("$predictions using 1:2 with linespoints pt 6 ps 1.4 lw 2 dt 2 "
              "lc rgb \"#2ca02c\" title \"prediction (aimdyn recovery)\"", f);
    }
    if (first) /* nothing finite to draw: an empty frame says so */
        fputs("set label 1 \"no recovered seed, no prediction\" at graph 0.5, 0.5 center\n"
              "set yrange [1:10]\nplot 1/0 notitle", f);
    fputs("\nunset output\n", f);
}

/* The data once at the top (every format uses it), then the figure in
 * each format. */
static void scaling_script(FILE *f, const void *ctx, int formats)
{
    const aim_plot_scaling_spec *sp = ctx;
    scaling_rows rows;
    scaling_data(f, sp, &rows);
    for (int k = 0; k < AIM_PLOT_NFORMATS; k++)
        if (formats & aim_plot_formats[k].bit) {
            aim_plot_put_terminal(f, aim_plot_formats[k].bit, 800, 600, "enhanced");
            scaling_figure(f, sp, &rows);
        }
}

int aim_plot_scaling(const aim_plot_scaling_spec *sp, const char *stem, aim_atomic_set *set)
{
    if (aim_plot_bad_name(stem) || (sp->title && aim_plot_bad_name(sp->title)) ||
        (sp->fit_key && aim_plot_bad_name(sp->fit_key))) {
        fprintf(stderr, "aimdyn plot: unusable figure name or text (line break)\n");
        return -1;
    }
    if (sp->n_dims + sp->n_pred == 0) {
        fprintf(stderr, "aimdyn plot: no dimension to plot\n");
        return -1;
    }
    return aim_plot_draw(stem, scaling_script, sp, AIM_PLOT_PNG | AIM_PLOT_SVG, NULL, set);
}
