/* aim_plot_heatmap: the categorical heatmap of aimdyn sweep (its phase
 * diagram), one panel per value of a third key, one colour scale. */
#include "plot_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The colour scale over the finite values of every panel: one scale, so
 * that equal colours mean equal values across panels; logarithmic when
 * they span more than a factor 10 (weak-recovery times often span
 * decades, and a linear scale would paint all but the slowest alike),
 * else linear from 0, so that values a few per cent apart do not look
 * like opposite ends of the scale. */
static void heatmap_scale(FILE *f, const aim_plot_heatmap_spec *sp)
{
    double lo = INFINITY, hi = -INFINITY;
    const int cells = sp->npanels * sp->ny * sp->nx;
    for (int c = 0; c < cells; c++)
        if (isfinite(sp->value[c])) {
            lo = fmin(lo, sp->value[c]);
            hi = fmax(hi, sp->value[c]);
        }
    if (!(lo <= hi)) { /* no coloured cell */
        fputs("unset colorbox\nset cbrange [0:1]\n", f);
        return;
    }
    if (lo > 0.0 && hi > 10.0 * lo) { /* whole decades: labelled at both ends */
        fputs("set logscale cb\n", f);
        lo = pow(10.0, floor(log10(lo)));
        hi = pow(10.0, ceil(log10(hi)));
    } else if (lo > 0.0)
        lo = 0.0;
    if (lo == hi) { /* gnuplot refuses an empty range */
        const double pad = lo == 0.0 ? 1.0 : 0.1 * fabs(lo);
        lo -= pad;
        hi += pad;
    }
    fprintf(f, "set cbrange [%.17g:%.17g]\nset format cb \"%%g\"\n", lo, hi);
}

/* Datablocks $cK (coloured cells: i j value), $gK (grey cells: i j) and
 * $tK (i j "text") of panel k. */
static void heatmap_blocks(FILE *f, const aim_plot_heatmap_spec *sp, int k)
{
    const int base = k * sp->ny * sp->nx;
    fprintf(f, "$c%d << EOD\n", k);
    for (int c = 0; c < sp->ny * sp->nx; c++)
        if (isfinite(sp->value[base + c]))
            fprintf(f, "%d %d %.17g\n", c % sp->nx, c / sp->nx, sp->value[base + c]);
    fprintf(f, "EOD\n$g%d << EOD\n", k);
    for (int c = 0; c < sp->ny * sp->nx; c++)
        if (!isfinite(sp->value[base + c]))
            fprintf(f, "%d %d\n", c % sp->nx, c / sp->nx);
    fprintf(f, "EOD\n$t%d << EOD\n", k);
    for (int c = 0; c < sp->ny * sp->nx; c++)
        fprintf(f, "%d %d \"%s\"\n", c % sp->nx, c / sp->nx, sp->text[base + c]);
    fputs("EOD\n", f);
}

/* The coloured (finite) cells of panel k; the others are grey. */
static int heatmap_coloured(const aim_plot_heatmap_spec *sp, int k)
{
    int n = 0;
    for (int c = 0; c < sp->ny * sp->nx; c++)
        n += isfinite(sp->value[k * sp->ny * sp->nx + c]) != 0;
    return n;
}

/* Categorical tics: the labels in the given order at 0, 1, ... */
static void heatmap_tics(FILE *f, const char *axis, const char *const *labels, int n)
{
    fprintf(f, "set %stics (", axis);
    for (int i = 0; i < n; i++) {
        fputs(i ? ", " : "", f);
        aim_plot_put_quoted(f, labels[i]);
        fprintf(f, " %d", i);
    }
    fputs(")\n", f);
}

static void heatmap_figure(FILE *f, const aim_plot_heatmap_spec *sp, int cols)
{
    const int rows = (sp->npanels + cols - 1) / cols;
    /* a multiplot title is centred on the canvas, not on the plot area
     * (which the colour box narrows), so a long title fits */
    fprintf(f, "set multiplot layout %d,%d title ", rows, cols);
    aim_plot_put_quoted(f, sp->title);
    fputc('\n', f);
    fprintf(f, "unset key\nset tics scale 0\nset style fill solid 1.0 noborder\n"
               "set xrange [-0.5:%d.5]\nset yrange [-0.5:%d.5]\n",
            sp->nx - 1, sp->ny - 1);
    /* pale green (#f7fcf0) to mid blue (#4eb3d3): short times (fast
     * learning) pale; the black annotations stay readable on every colour */
    fputs("set palette defined (0 \"#f7fcf0\", 1 \"#ccebc5\", 2 \"#7bccc4\", "
          "3 \"#4eb3d3\")\n", f);
    heatmap_scale(f, sp);
    fputs("set cblabel ", f);
    aim_plot_put_quoted(f, sp->cblabel);
    fputs("\nset xlabel ", f);
    aim_plot_put_quoted(f, sp->xlabel);
    fputc('\n', f);
    heatmap_tics(f, "x", sp->x, sp->nx);
    if (sp->ny > 1) {
        heatmap_tics(f, "y", sp->y, sp->ny);
        fputs("set ylabel ", f);
        aim_plot_put_quoted(f, sp->ylabel);
        fputc('\n', f);
    } else {
        fputs("unset ytics\nunset ylabel\n", f);
    }
    for (int k = 0; k < sp->npanels; k++) {
        if (sp->npanels > 1) {
            fputs("set title sprintf('%s = %s', ", f);
            aim_plot_put_quoted(f, sp->panel_key);
            fputs(", ", f);
            aim_plot_put_quoted(f, sp->panel[k]);
            fputs(")\n", f);
        }
        /* gnuplot refuses to plot an empty block */
        const int coloured = heatmap_coloured(sp, k), grey = sp->ny * sp->nx - coloured;
        fputs("plot ", f);
        if (coloured)
            fprintf(f, "$c%d using 1:2:(0.5):(0.5):3 with boxxyerror lc palette, ", k);
        if (grey)
            fprintf(f, "$g%d using 1:2:(0.5):(0.5) with boxxyerror lc rgb \"#c8c8c8\", ", k);
        fprintf(f, "$t%d using 1:2:3 with labels font \",9\"\n", k);
    }
    fputs("unset multiplot\nunset output\n", f);
}

/* The script of the heatmap: the data once at the top (every format uses
 * it), then the figure in each format. */
static void heatmap_script(FILE *f, const void *ctx, int formats)
{
    const aim_plot_heatmap_spec *sp = ctx;
    const int cols = sp->npanels < 3 ? sp->npanels : 3;
    const int rows = (sp->npanels + cols - 1) / cols;
    /* room for every cell's annotation and the tick labels */
    int width = cols * (260 + 90 * sp->nx), height = 60 + rows * (150 + 60 * sp->ny);
    width = width < 600 ? 600 : width > 6000 ? 6000 : width;
    height = height < 300 ? 300 : height > 6000 ? 6000 : height;
    for (int k = 0; k < sp->npanels; k++)
        heatmap_blocks(f, sp, k);
    /* keys and values are shown verbatim: no enhanced text (an '_' would
     * turn into a subscript) */
    for (int k = 0; k < AIM_PLOT_NFORMATS; k++)
        if (formats & aim_plot_formats[k].bit) {
            aim_plot_put_terminal(f, aim_plot_formats[k].bit, width, height, "noenhanced");
            heatmap_figure(f, sp, cols);
        }
}

/* Texts go into gnuplot strings and datablocks: no line breaks, and no
 * double quote in a cell's text. */
static int heatmap_bad_text(const aim_plot_heatmap_spec *sp)
{
    const char *const *lists[] = {sp->x, sp->y, sp->panel};
    const int counts[] = {sp->nx, sp->ny > 1 ? sp->ny : 0, sp->npanels > 1 ? sp->npanels : 0};
    int bad = aim_plot_bad_name(sp->title) || aim_plot_bad_name(sp->xlabel) ||
              aim_plot_bad_name(sp->cblabel) || (sp->ny > 1 && aim_plot_bad_name(sp->ylabel)) ||
              (sp->npanels > 1 && aim_plot_bad_name(sp->panel_key));
    for (int l = 0; l < 3; l++)
        for (int i = 0; i < counts[l]; i++)
            bad |= aim_plot_bad_name(lists[l][i]);
    for (int c = 0; c < sp->npanels * sp->ny * sp->nx; c++)
        bad |= aim_plot_bad_name(sp->text[c]) || strchr(sp->text[c], '"') != NULL;
    return bad;
}

int aim_plot_heatmap(const aim_plot_heatmap_spec *sp, const char *stem, aim_atomic_set *set)
{
    if (sp->nx < 1 || sp->ny < 1 || sp->npanels < 1) {
        fprintf(stderr, "aimdyn plot: empty heatmap\n");
        return -1;
    }
    if (aim_plot_bad_name(stem) || heatmap_bad_text(sp)) {
        fprintf(stderr, "aimdyn plot: unusable figure name or text (line break or '\"')\n");
        return -1;
    }
    return aim_plot_draw(stem, heatmap_script, sp, AIM_PLOT_PNG | AIM_PLOT_SVG, NULL, set);
}
