/* plot_internal: what the parts of aim_plot share (not installed): the
 * machinery of plot.c that every kind of figure draws with (the formats,
 * gnuplot strings and terminals, gnuplot run on a script that is kept),
 * and the plan of the figure of plot and compare, which plot_plan.c makes
 * from its files and plot_figure.c writes as a script. */
#ifndef AIM_PLOT_INTERNAL_H
#define AIM_PLOT_INTERNAL_H

#include "plot.h"
#include "tsv.h"

#include <stdio.h>

/* ---- plot.c: drawing a figure with gnuplot ---- */

/* The figure formats: the flag, the file extension. */
typedef struct {
    int bit;
    const char *ext;
} aim_plot_format;

enum { AIM_PLOT_NFORMATS = 3 }; /* PNG, SVG, PDF */
extern const aim_plot_format aim_plot_formats[AIM_PLOT_NFORMATS];

/* Writes the body of a figure's gnuplot script into f, drawing each of
 * formats into the output named by the variable out_png, out_svg or
 * out_pdf (aim_plot_draw() defines them). */
typedef void aim_plot_script_fn(FILE *f, const void *ctx, int formats);

/* s as a gnuplot single-quoted string: no escapes, '' stands for '. */
void aim_plot_put_quoted(FILE *f, const char *s);

/* A file name as a gnuplot string that gnuplot cannot take for anything
 * but a file: it runs a name that starts with '<' (data) or '|' (output)
 * as a shell command, and reads '-', '+', '++' and '' as special files,
 * so a relative name gets "./" in front (an absolute one starts with
 * '/'). */
void aim_plot_put_path(FILE *f, const char *path);

/* 1 when s holds a line break: a name or text that a gnuplot script
 * cannot hold (a line is a command). */
int aim_plot_bad_name(const char *s);

/* The terminal of one format with its output (out_png, out_svg or
 * out_pdf: aim_plot_draw() defines them), for a canvas of width x height
 * pixels (a PDF's: width / 72 x height / 72 inches, so that its text has
 * the PNG's proportions); text "enhanced" or "noenhanced". */
void aim_plot_put_terminal(FILE *f, int format, int width, int height, const char *text);

/* Draws the figure in each of formats with gnuplot into temporary files
 * beside stem.png, stem.svg, stem.pdf, checks that each is complete and
 * adds them and the script, stem.gp, to set, to be
 * renamed into place together with it. Returns 0, or -1 with a message
 * on stderr (e.g. gnuplot missing): nothing added, or (out of memory)
 * some files alone, which aim_plot_stale or freeing the set undoes. */
int aim_plot_draw(const char *stem, aim_plot_script_fn *put_script, const void *ctx,
                  int formats, const char *run_vars, aim_atomic_set *set);

/* Adds the removal of stem's files in the formats not in keep (and of
 * its script stem.gp unless keep_script) to set. */
int aim_plot_remove_others(aim_atomic_set *set, const char *stem, int keep, int keep_script);

/* ---- plot_plan.c: the plan of the figure of plot and compare ---- */

/* One panel of the figure: a column of the files against the x axis. */
typedef struct {
    char *col;        /* X: the ODE's X, the SGD's X_mean and X_se */
    const char *label; /* its y label (gnuplot enhanced text); NULL: col, verbatim */
    const char *key;   /* where its key goes */
    const char *option; /* what asked for it, for messages */
} aim_plot_panel;

/* The rows of one seed in a per-seed file (0-based data rows, the column
 * line not counted, as gnuplot's `every` counts them). */
typedef struct {
    int first, last;
} aim_plot_seed_rows;

/* What the figure draws, worked out from its files before the script is
 * written: every file read once and checked (aim_plot_plan_make). */
typedef struct {
    const aim_plot_spec *sp;
    aim_table *ode, *sgd, *seeds; /* per file; seeds: per SGD file, with AIM_PLOT_SEEDS */
    char **seeds_path;
    char **seeds_final; /* per SGD file, with sgd_final: the seeds' file as the kept
                           script names it */
    aim_plot_seed_rows **rows;
    int *nseeds;
    aim_plot_panel *panels;
    int npanels;
    char *title;
} aim_plot_plan;

/* Reads and checks every file, then the panels: risk and overlap, the
 * mean, the order parameters, the moments, the --column ones. Returns 0,
 * or -1 with a message on stderr; either way p is to be freed. */
int aim_plot_plan_make(aim_plot_plan *p, const aim_plot_spec *sp);

/* Frees what p holds (a plan made in full or in part) and clears it. */
void aim_plot_plan_free(aim_plot_plan *p);

#endif
