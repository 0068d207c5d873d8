/* Internal to `aimdyn sweep`: the grid, its points' results and the
 * state of a sweep, shared by its parts (cmd_sweep.c: the options and
 * the run; sweep_points.c: the points' configurations and files;
 * sweep_pool.c: computing the points on the workers; sweep_report.c: the
 * table, the heatmap and the summary). Not installed. */
#ifndef AIM_SWEEP_INTERNAL_H
#define AIM_SWEEP_INTERNAL_H

#include <stddef.h>
#include <stdio.h>

#include "atomic.h"
#include "cli.h"
#include "config.h"
#include "ode.h"
#include "pool.h"

enum {
    MAX_VARY = 3,      /* x axis, y axis, panels */
    MAX_VALUES = 64,   /* per --vary */
    MAX_POINTS = AIM_POOL_MAX_TASKS,
    MAX_JOBS = AIM_POOL_MAX_JOBS,
    TEXT_LEN = 4096    /* an assignment or a point's label */
};

/* A point's file: not there yet, there from an earlier run, or written
 * by this one. */
enum { NOT_DONE = 0, KEPT, COMPUTED };

typedef struct {
    char key[96];     /* section.key */
    const char *arg;  /* the option's text, for messages */
    char *list;       /* a copy of the values, split in place */
    const char *values[MAX_VALUES];
    int count;
    int stride; /* points between successive values */
} vary_list;

/* One point's outcome, as its file records it. */
typedef struct {
    char status[16]; /* recovered | not-by-horizon | blow-up | failed */
    double tau_wr, n_wr, tau_end, overlap, risk;
    double seconds; /* the integration's wall time: this run's points only,
                       never in a file */
    int kernel_points;   /* the engine's (aim_ode_report), for the */
    double kernel_error; /* file's "# kernels:" line */
    char message[800]; /* "-" when none */
    int integrations;  /* CVODE's, as the point's file carries them to the table's sidecar */
    aim_ode_stats stats[AIM_ODE_MAX_INTEGRATIONS];
} point_result;

typedef struct {
    const char *path; /* CONFIG; NULL: the built-in default */
    aim_cli_args args; /* --set, --out and --name as assignments */
    /* args' assignments in order, then room for a point's */
    const char *sets[AIM_CLI_MAX_SETS + MAX_VARY];
    char assign[MAX_VARY][TEXT_LEN]; /* a point's assignments, while checked */
    int nsets;
    vary_list vary[MAX_VARY];
    int nvary, jobs, npoints;
    int finished;       /* points done (kept or computed), for progress */
    aim_config base;    /* CONFIG + --set, for the table's metadata */
    aim_config *cfg;    /* per point */
    point_result *res;  /* per point */
    char *done;         /* per point: NOT_DONE, KEPT or COMPUTED */
    char dir[1024];     /* DIR/NAME-sweep.d */
} sweep;

/* the columns of a point's result (sweep_points.c) */
extern const char aim_sweep_result_header[];

/* sweep_points.c: the grid and the points' files */
int aim_sweep_value_index(const sweep *sw, int p, int v);
const char *aim_sweep_point_value(const sweep *sw, int p, int v);
void aim_sweep_point_label(const sweep *sw, int p, char *buf, size_t n);
int aim_sweep_load_base(sweep *sw);
int aim_sweep_check_values(const sweep *sw);
int aim_sweep_check_points(sweep *sw);
int aim_sweep_point_path(const sweep *sw, int p, char *buf, size_t n);
int aim_sweep_read_point(const char *path, point_result *r, char **config, char *version,
                         size_t n);
void aim_sweep_put_result(FILE *f, const point_result *r);
int aim_sweep_write_point(const sweep *sw, int p, const point_result *r);
int aim_sweep_keep_finished(sweep *sw);
int aim_sweep_point_dir(sweep *sw);
int aim_sweep_prepare_dirs(const sweep *sw);

/* sweep_pool.c: computing the points */
double aim_sweep_now(void);
int aim_sweep_run_workers(sweep *sw, int status);

/* sweep_report.c: the table, the heatmap, the summary */
int aim_sweep_write_table(const sweep *sw, char *path, size_t n, aim_atomic_set *set);
int aim_sweep_draw_heatmap(const sweep *sw, const char *stem, aim_atomic_set *set);
void aim_sweep_print_summary(const sweep *sw, int computed, double wall);
int aim_sweep_result_status(const sweep *sw, int heatmap_failed);

#endif
