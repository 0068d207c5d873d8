/* aim_plot: publication figures with gnuplot (run as a program). */
#ifndef AIM_PLOT_H
#define AIM_PLOT_H

#include "atomic.h"

/* Every figure is drawn by gnuplot into temporary files (by default
 * STEM.png and STEM.svg), checked complete (gnuplot's exit status, then
 * the PNG's signature and IEND chunk, the SVG's closing tag, the PDF's
 * header and end-of-file marker) and added to a set (aim_atomic) that
 * the caller commits, so that all replace the old figure together, with
 * the files the figure shows, or not at all; its gnuplot script stays
 * beside it (STEM.gp, in the set), to be restyled and rerun. File names reach gnuplot in
 * a form it cannot run as a command. gnuplot runs without a shell (fork
 * and execv of the gnuplot found on PATH), its script on standard input. */

enum {
    AIM_PLOT_LOG_TAU = 1,  /* tau on a log axis (log grids, fast phases) */
    AIM_PLOT_MEAN = 2,     /* a panel: the student mean (raw centring) */
    AIM_PLOT_SEEDS = 4,    /* each seed's curve (the SGD files' per-seed data) */
    AIM_PLOT_ORDER = 8,    /* panels: omega_ss, psi_ss, omega_st, psi_st */
    AIM_PLOT_MOMENTS = 16  /* a panel per tracked moment m(w) */
};

/* The longest column name a panel takes (--column, and the columns of
 * --panels): its X_trunc, X_se and X_mean companions must fit the
 * figure's names. */
#define AIM_PLOT_MAX_COLUMN 200

/* Figure formats (aim_plot_spec.formats; 0: PNG and SVG). */
enum { AIM_PLOT_PNG = 1, AIM_PLOT_SVG = 2, AIM_PLOT_PDF = 4 };

/* Risk and teacher overlap against tau: ODE curves over SGD means with
 * error bars (either may be absent; flags from the enum above). An ODE
 * file with a truncation error estimate (X_trunc) or replica standard
 * errors (X_se, the matrix method) gets a shaded band around its curve. With one
 * SGD file (or none) the ODE curves share a blue ramp (e.g. truncation
 * orders, each with its key label; labels NULL: "limit ODE"); with as
 * many SGD files as ODE files (n_sgd == n_ode > 1) file i of each kind
 * is one case (e.g. one activation), drawn in its own colour and named
 * by labels[i]. samples_d > 0 puts n / d^2 with d = samples_d on a log x
 * axis instead of tau (every file must then be for that d). columns[0 ..
 * n_columns-1] add a panel each (a column X of the ODE files, X_mean and
 * X_se of the SGD files). With AIM_PLOT_SEEDS the SGD file NAME.tsv's
 * per-seed file NAME-seeds.tsv gives a thin line per seed under the
 * mean. The title names the model, d and the number of seeds (the SGD
 * files' metadata). ode_final and sgd_final, when not NULL, are the names
 * the kept script gives the files (their final names, where the figure is
 * drawn from temporary files before the set that renames them is
 * committed, as compare does); NULL: ode and sgd themselves. */
typedef struct {
    const char *const *ode;
    const char *const *ode_final;
    const char *const *labels; /* NULL: "limit ODE" */
    int n_ode;
    const char *const *sgd;
    const char *const *sgd_final;
    int n_sgd;
    double samples_d;
    int flags;
    const char *const *columns;
    int n_columns;
    int formats;
} aim_plot_spec;

/* Draws the figure into set (STEM.png, STEM.svg, STEM.pdf as
 * spec->formats says, and STEM.gp), removing the stem's files of the
 * other formats (they would show other data). Returns 0, or -1 with a
 * message on stderr (e.g. gnuplot missing or failed, a figure
 * incomplete). */
int aim_plot_figure(const aim_plot_spec *spec, const char *stem, aim_atomic_set *set);

/* Checks, as aim_plot_figure does first, that every file of spec is a
 * result file of its kind (--ode: an ODE file, --sgd: an SGD summary, its
 * per-seed file with AIM_PLOT_SEEDS) with data rows and the columns the
 * figure draws (aim_table_read: a device or a FIFO would hang gnuplot).
 * Returns 0, or -1 with a message on stderr naming the option, the file
 * and what it should be. */
int aim_plot_check_inputs(const aim_plot_spec *spec);

/* A categorical heatmap, e.g. a sweep's phase diagram: on each panel an
 * nx x ny grid of cells, column i labelled x[i] and row j labelled y[j]
 * (in the given order), coloured by value (one colour scale for all
 * panels, logarithmic when the finite values span more than a factor
 * 10); a NaN cell is grey. Every cell is annotated with its text. With
 * npanels > 1 one panel per panel[k], titled "panel_key = panel[k]".
 * Cell (k, j, i) is element (k * ny + j) * nx + i of value and text.
 * Draws stem.png, stem.svg and stem.gp into set. Returns 0, or -1 with a
 * message on stderr (e.g. gnuplot missing or failed). */
typedef struct {
    const char *title;
    const char *xlabel, *ylabel, *cblabel; /* ylabel unused when ny == 1 */
    const char *panel_key;
    const char *const *x, *const *y, *const *panel;
    int nx, ny, npanels;
    const double *value;
    const char *const *text;
} aim_plot_heatmap_spec;

int aim_plot_heatmap(const aim_plot_heatmap_spec *spec, const char *stem, aim_atomic_set *set);

/* 1 when a gnuplot executable is on PATH, else 0. */
int aim_plot_available(void);

/* The figure of `aimdyn scaling`: samples to weak recovery n_wr against
 * the dimension d on log-log axes. Non-finite values are left out (a
 * median that is not defined, an open confidence bound, a prediction of
 * no escape). */
typedef struct {
    int n_dims;
    const double *d, *median, *ci_lo, *ci_hi; /* per d */
    int n_seeds;
    const double *seed_d, *seed_n; /* the recovered seeds, faint points */
    double fit_c, fit_a;           /* the power law c d^a; NaN: no fit */
    const char *fit_key;           /* its key entry (gnuplot enhanced text) */
    int n_pred;
    const double *pred_d, *pred_n; /* predictions (aimdyn recovery) */
    const char *title;             /* NULL: none */
} aim_plot_scaling_spec;

/* Draws stem.png, stem.svg and stem.gp into set. Returns 0, or -1 with a
 * message on stderr (e.g. gnuplot missing or failed). */
int aim_plot_scaling(const aim_plot_scaling_spec *spec, const char *stem, aim_atomic_set *set);

/* Adds the removal of stem.png, .svg, .pdf and .gp to set: a figure that could
 * not be drawn must not stay beside the new files it would show (compare,
 * sweep, scaling). Returns 0 or -1 (said). */
int aim_plot_stale(aim_atomic_set *set, const char *stem);

#endif
