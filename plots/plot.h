/* aim_plot: publication figures with gnuplot (run as a program). */
#ifndef AIM_PLOT_H
#define AIM_PLOT_H

#include "atomic.h"

/* Every figure is a pair STEM.png and STEM.svg, drawn by gnuplot into
 * temporary files, checked complete (gnuplot's exit status, then the
 * PNG's signature and IEND chunk, the SVG's closing tag) and added to a
 * set (aim_atomic) that the caller commits, so that both replace the old
 * pair together, with the files the figure shows, or not at all. File
 * names reach gnuplot in a form it cannot run as a command. */

enum {
    AIM_PLOT_LOG_TAU = 1, /* tau on a log axis (log grids, fast phases) */
    AIM_PLOT_MEAN = 2     /* a third panel: the student mean (raw centring) */
};

/* Risk and teacher overlap against tau: ODE curves over SGD means with
 * error bars (either may be absent; flags from the enum above). An ODE
 * file with a truncation error estimate (X_trunc) or replica standard
 * errors (X_se, the matrix method) gets a shaded band around its curve. With one
 * SGD file (or none) the ODE curves share a blue ramp (e.g. truncation
 * orders, each with its key label; labels NULL: "limit ODE"); with as
 * many SGD files as ODE files (n_sgd == n_ode > 1) file i of each kind
 * is one case (e.g. one activation), drawn in its own colour and named
 * by labels[i]. samples_d > 0 puts n / d^2 with d = samples_d on a log x
 * axis instead of tau (every file must then be for that d). */
typedef struct {
    const char *const *ode;
    const char *const *labels; /* NULL: "limit ODE" */
    int n_ode;
    const char *const *sgd;
    int n_sgd;
    double samples_d;
    int flags;
} aim_plot_spec;

/* Draws stem.png and stem.svg into set. Returns 0, or -1 with a message
 * on stderr (e.g. gnuplot missing or failed, a figure incomplete). */
int aim_plot_figure(const aim_plot_spec *spec, const char *stem, aim_atomic_set *set);

/* Checks, as aim_plot_figure does first, that every file of spec is a
 * result file with the columns the figure draws (aim_table_read: a
 * device or a FIFO would hang gnuplot). Returns 0, or -1 with a message
 * on stderr. */
int aim_plot_check_inputs(const aim_plot_spec *spec);

/* A categorical heatmap, e.g. a sweep's phase diagram: on each panel an
 * nx x ny grid of cells, column i labelled x[i] and row j labelled y[j]
 * (in the given order), coloured by value (one colour scale for all
 * panels, logarithmic when the finite values span more than a factor
 * 10); a NaN cell is grey. Every cell is annotated with its text. With
 * npanels > 1 one panel per panel[k], titled "panel_key = panel[k]".
 * Cell (k, j, i) is element (k * ny + j) * nx + i of value and text.
 * Draws stem.png and stem.svg into set. Returns 0, or -1 with a message
 * on stderr (e.g. gnuplot missing or failed). */
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

/* Draws stem.png and stem.svg into set. Returns 0, or -1 with a message
 * on stderr (e.g. gnuplot missing or failed). */
int aim_plot_scaling(const aim_plot_scaling_spec *spec, const char *stem, aim_atomic_set *set);

/* Adds the removal of stem.png and stem.svg to set: a figure that could
 * not be drawn must not stay beside the new files it would show (compare,
 * sweep, scaling). Returns 0 or -1 (said). */
int aim_plot_stale(aim_atomic_set *set, const char *stem);

#endif
