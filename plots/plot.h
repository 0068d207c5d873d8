/* aim_plot: publication figures with gnuplot (run as a program). */
#ifndef AIM_PLOT_H
#define AIM_PLOT_H

enum {
    AIM_PLOT_LOG_TAU = 1, /* tau on a log axis (log grids, fast phases) */
    AIM_PLOT_MEAN = 2     /* a third panel: the student mean (raw centring) */
};

/* Risk and teacher overlap against tau: ODE curve(s) over SGD means with
 * error bars; flags from the enum above. Either file may be NULL. Writes stem.png and
 * stem.svg (through temporary files). Returns 0, or -1 with a message
 * on stderr (e.g. gnuplot missing). */
int aim_plot_trajectories(const char *ode_tsv, const char *sgd_tsv,
                          const char *stem, int flags);

/* The same with several ODE files (e.g. truncation orders M = 1..5),
 * each with its key label (labels NULL: "limit ODE"). */
int aim_plot_orders(const char *const *ode_tsv, const char *const *labels,
                    int n_ode, const char *sgd_tsv, const char *stem, int flags);

/* 1 when a gnuplot executable is on PATH, else 0. */
int aim_plot_available(void);

#endif
