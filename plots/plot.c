/* aim_plot: risk and teacher-overlap figures, rendered by gnuplot run as
 * a separate program, the generated script on its standard input (so no
 * script file is ever left behind). */
#define _POSIX_C_SOURCE 200809L

#include "plot.h"
#include "tsv.h"

#include "guard.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char not_found_msg[] =
    "aimdyn: gnuplot not found: install it (apt-get install gnuplot-nox) "
    "or use the TSV files directly\n";

/* The gnuplot executable on PATH (malloc'd), or NULL. */
static char *find_gnuplot(void)
{
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin";
    size_t n = strlen(path) + sizeof "/gnuplot";
    char *buf = malloc(n);
    if (!buf)
        return NULL;
    const char *p = path;
    for (;;) {
        const char *end = strchr(p, ':');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == 0)
            snprintf(buf, n, "./gnuplot");
        else
            snprintf(buf, n, "%.*s/gnuplot", (int)len, p);
        struct stat st;
        if (stat(buf, &st) == 0 && S_ISREG(st.st_mode) && access(buf, X_OK) == 0)
            return buf;
        if (!end)
            break;
        p = end + 1;
    }
    free(buf);
    return NULL;
}

int aim_plot_available(void)
{
    char *exe = find_gnuplot();
    free(exe);
    return exe != NULL;
}

/* A gnuplot single-quoted string: no escapes, '' stands for '; prefix
 * goes in front of s. */
static void put_quoted_after(FILE *f, const char *prefix, const char *s)
{
    fputc('\'', f);
    fputs(prefix, f);
    for (; *s; s++) {
        if (*s == '\'')
            fputc('\'', f);
        fputc(*s, f);
    }
    fputc('\'', f);
}

static void put_quoted(FILE *f, const char *s)
{
    put_quoted_after(f, "", s);
}

/* A file name as a gnuplot string that gnuplot cannot take for anything
 * but a file: it runs a name that starts with '<' (data) or '|' (output)
 * as a shell command, and reads '-', '+', '++' and '' as special files,
 * so a relative name gets "./" in front (an absolute one starts with
 * '/'). */
static void put_path(FILE *f, const char *path)
{
    put_quoted_after(f, path[0] == '/' ? "" : "./", path);
}

static int bad_name(const char *s)
{
    return strchr(s, '\n') != NULL || strchr(s, '\r') != NULL;
}

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

/* The x column: tau, or n / d^2. */
static void put_x(FILE *f, const aim_plot_spec *sp)
{
    if (sp->samples_d > 0)
        fprintf(f, "(column(\"n\")/%.17g)", sp->samples_d * sp->samples_d);
    else
        fputs("\"tau\"", f);
}

/* 1 when the header of the result file at path (its first line that is
 * not a # comment) has the column name; 0 otherwise or unreadable (the
 * figure then simply has no band). */
static int has_column(const char *path, const char *name)
{
    FILE *in = fopen(path, "r");
    if (!in)
        return 0;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int found = 0;
    /* 1 MiB: a header of 5041 words of order <= 7 is about 60 KiB */
    while ((len = getline(&line, &cap, in)) > 0 && len < (1 << 20)) {
        if (line[0] == '#')
            continue;
        const size_t n = strlen(name);
        for (char *t = strtok(line, "\t\n"); t && !found; t = strtok(NULL, "\t\n"))
            found = strlen(t) == n && memcmp(t, name, n) == 0;
        break;
    }
    free(line);
    fclose(in);
    return found;
}

/* The band of ODE file i around column col, when the file has one: the
 * truncation error estimate of a hierarchy (col_trunc; relative for the
 * risk) or the replicas' standard error of the matrix method (col_se). */
static void put_band(FILE *f, const aim_plot_spec *sp, int i, const char *col, int *first)
{
    char trunc[64], se[64];
    snprintf(trunc, sizeof trunc, "%s_trunc", col);
    snprintf(se, sizeof se, "%s_se", col);
    const int has_trunc = has_column(sp->ode[i], trunc);
    if (!has_trunc && !has_column(sp->ode[i], se))
        return;
    if (!*first)
        fputs(", \\\n     ", f);
    *first = 0;
    put_path(f, sp->ode[i]);
    fputs(" using ", f);
    put_x(f, sp);
    if (has_trunc && strcmp(col, "risk") == 0)
        fprintf(f, ":(column(\"%s\")*(1-column(\"%s\"))):(column(\"%s\")*(1+column(\"%s\")))",
                col, trunc, col, trunc);
    else
        fprintf(f, ":(column(\"%s\")-column(\"%s\")):(column(\"%s\")+column(\"%s\"))", col,
                has_trunc ? trunc : se, col, has_trunc ? trunc : se);
    fprintf(f, " with filledcurves fs transparent solid 0.25 noborder lc rgb \"%s\" notitle",
            curve_colour(sp, i));
}

static void put_panel(FILE *f, const aim_plot_spec *sp, const char *col,
                      const char *ylabel, const char *key)
{
    fprintf(f, "set key %s opaque\nset ylabel \"%s\"\nplot ", key, ylabel);
    int first = 1;
    for (int i = 0; i < sp->n_ode; i++)
        put_band(f, sp, i, col, &first);
    for (int i = 0; i < sp->n_ode; i++, first = 0) {
        if (!first)
            fputs(", \\\n     ", f);
        put_path(f, sp->ode[i]);
        fputs(" using ", f);
        put_x(f, sp);
        fprintf(f, ":\"%s\" with lines lw 2 lc rgb \"%s\" title ", col, curve_colour(sp, i));
        put_quoted(f, sp->labels ? sp->labels[i] : "limit ODE");
    }
    for (int i = 0; i < sp->n_sgd; i++, first = 0) {
        if (!first)
            fputs(", \\\n     ", f);
        put_path(f, sp->sgd[i]);
        fputs(" using ", f);
        put_x(f, sp);
        fprintf(f, ":\"%s_mean\":\"%s_se\" with yerrorbars pt 7 ps 0.5 lc rgb \"%s\" ", col,
                col, sp->n_sgd > 1 ? curve_colour(sp, i) : "#c0392b");
        if (sp->n_sgd > 1)
            fputs("notitle", f);
        else
            fputs("title \"SGD mean +- s.e.\"", f);
    }
    fputc('\n', f);
}

static void put_figure(FILE *f, const aim_plot_spec *sp)
{
    fprintf(f, "set multiplot layout %d,1\nset grid\n", sp->flags & AIM_PLOT_MEAN ? 3 : 2);
    if (sp->samples_d > 0)
        fprintf(f, "set xlabel \"samples n / d^2 (d = %g%s)\"\n", sp->samples_d,
                sp->n_sgd > 1 ? "; lines: ODE, points: SGD mean +- s.e." : "");
    else
        fputs("set xlabel \"tau\"\n", f);
    if (sp->flags & AIM_PLOT_LOG_TAU || sp->samples_d > 0) /* 0 has no place on it */
        fputs("set logscale x\nset format x \"10^{%L}\"\n", f);
    /* cases of very different risk (e.g. one per activation) leave the
     * middle of the panel free; an opaque key at the top would hide one */
    put_panel(f, sp, "risk", "risk R", sp->n_sgd > 1 ? "center right" : "top right");
    put_panel(f, sp, "overlap", "teacher overlap", sp->n_sgd > 1 ? "top left" : "bottom right");
    if (sp->flags & AIM_PLOT_MEAN)
        put_panel(f, sp, "mean", "student mean m = Tr S / sqrt d", "bottom right");
    fputs("unset multiplot\nunset output\n", f);
}

/* Writes the whole gnuplot script of a figure into f: the PNG terminal
 * with output png, the figure, the SVG terminal with output svg, the
 * figure again (png and svg are the temporary files to draw into). */
typedef void script_fn(FILE *f, const void *ctx, const char *png, const char *svg);

/* Runs gnuplot (exe) on the script that put_script writes into its
 * standard input. Returns 0, or -1 with a message on stderr. */
static int run_gnuplot(const char *exe, script_fn *put_script, const void *ctx,
                       const char *png, const char *svg)
{
    int fds[2];
    if (pipe(fds) != 0) {
        fprintf(stderr, "aimdyn: cannot run gnuplot: %s\n", strerror(errno));
        return -1;
    }
    fcntl(fds[0], F_SETFD, FD_CLOEXEC);
    fcntl(fds[1], F_SETFD, FD_CLOEXEC);
    char *argv[] = {"gnuplot", NULL};
    const pid_t pid = aim_guard_spawn(exe, argv, fds[0]);
    const int spawn_err = errno;
    close(fds[0]);
    FILE *f = pid > 0 ? fdopen(fds[1], "w") : NULL;
    if (!f) {
        fprintf(stderr, "aimdyn: cannot run gnuplot: %s\n", strerror(pid > 0 ? errno : spawn_err));
        close(fds[1]);
        if (pid > 0) {
            int status;
            aim_guard_wait(pid, &status);
        }
        return -1;
    }
    /* a gnuplot that stops early (an error) closes the pipe: its exit
     * status says why, not a SIGPIPE here */
    struct sigaction ignore, old;
    memset(&ignore, 0, sizeof ignore);
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    sigaction(SIGPIPE, &ignore, &old);
    put_script(f, ctx, png, svg);
    fclose(f);
    sigaction(SIGPIPE, &old, NULL);
    int status;
    if (aim_guard_wait(pid, &status) != 0) {
        fprintf(stderr, "aimdyn: waiting for gnuplot: %s\n", strerror(errno));
        return -1;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
        fputs(not_found_msg, stderr);
        return -1;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        if (WIFEXITED(status))
            fprintf(stderr, "aimdyn: gnuplot failed (exit status %d)\n",
                    WEXITSTATUS(status));
        else
            fprintf(stderr, "aimdyn: gnuplot killed by signal %d\n",
                    WIFSIGNALED(status) ? WTERMSIG(status) : 0);
        return -1;
    }
    return 0;
}

/* gnuplot exits with status 0 when it could not write its output (e.g.
 * on a full disk): a figure counts when it is complete, the file that
 * gnuplot wrote being the temporary one (same inode): a PNG from its
 * signature to its IEND chunk, an SVG up to its closing tag. */
static int figure_complete(const aim_atomic_file *file, int png)
{
    static const unsigned char signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    static const unsigned char iend[12] = {0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xae, 0x42, 0x60, 0x82};
    const int fd = aim_atomic_fd(file);
    struct stat st, named;
    unsigned char head[8], tail[64];
    int ok = fstat(fd, &st) == 0 && stat(aim_atomic_temp(file), &named) == 0 &&
             st.st_dev == named.st_dev && st.st_ino == named.st_ino;
    const off_t size = ok ? st.st_size : 0;
    if (ok && png)
        ok = size >= 20 && pread(fd, head, 8, 0) == 8 && !memcmp(head, signature, 8) &&
             pread(fd, tail, 12, size - 12) == 12 && !memcmp(tail, iend, 12);
    else if (ok) {
        size_t n = size < (off_t)sizeof tail ? (size_t)size : sizeof tail;
        ok = n > 0 && pread(fd, tail, n, size - (off_t)n) == (ssize_t)n;
        while (ok && n > 0 && (tail[n - 1] == '\n' || tail[n - 1] == ' ' ||
                               tail[n - 1] == '\r' || tail[n - 1] == '\t'))
            n--;
        ok = ok && n >= 6 && !memcmp(tail + n - 6, "</svg>", 6);
    }
    if (!ok)
        fprintf(stderr, "aimdyn: gnuplot left an incomplete figure for '%s' (%lld bytes; a full "
                        "disk?)\n", aim_atomic_final(file), (long long)size);
    return ok;
}

/* Draws stem.png and stem.svg with gnuplot into temporary files beside
 * them, checks that both are complete and adds them to set, to be
 * renamed into place together with it. Returns 0, or -1 with a message
 * on stderr (e.g. gnuplot missing): nothing added, or (out of memory)
 * the PNG alone, which aim_plot_stale or freeing the set undoes. */
static int draw(const char *stem, script_fn *put_script, const void *ctx, aim_atomic_set *set)
{
    char *exe = find_gnuplot();
    if (!exe) {
        fputs(not_found_msg, stderr);
        return -1;
    }
    int rc = -1;
    size_t n = strlen(stem) + 8;
    char *png = malloc(n), *svg = malloc(n);
    aim_atomic_file *png_file = NULL, *svg_file = NULL;
    if (!png || !svg) {
        fprintf(stderr, "aimdyn: out of memory\n");
        goto out;
    }
    snprintf(png, n, "%s.png", stem);
    snprintf(svg, n, "%s.svg", stem);
    if (!(png_file = aim_atomic_create(png)) || !(svg_file = aim_atomic_create(svg)) ||
        run_gnuplot(exe, put_script, ctx, aim_atomic_temp(png_file), aim_atomic_temp(svg_file)) ||
        !figure_complete(png_file, 1) || !figure_complete(svg_file, 0))
        goto out;
    /* each add takes its file, also when it fails */
    rc = aim_atomic_set_add(set, png_file);
    png_file = NULL;
    if (rc == 0) {
        rc = aim_atomic_set_add(set, svg_file);
        svg_file = NULL;
    }
out:
    aim_atomic_discard(png_file);
    aim_atomic_discard(svg_file);
    free(exe);
    free(png);
    free(svg);
    return rc;
}

int aim_plot_stale(aim_atomic_set *set, const char *stem)
{
    const char *const ext[] = {".png", ".svg"};
    size_t n = strlen(stem) + 8;
    char *path = malloc(n);
    int rc = path ? 0 : -1;
    for (int i = 0; rc == 0 && i < 2; i++) {
        snprintf(path, n, "%s%s", stem, ext[i]);
        rc = aim_atomic_set_remove(set, path);
    }
    free(path);
    return rc;
}

/* The file is a result file with the columns the figure draws, checked
 * by the shared reader before gnuplot reads it (a device, a FIFO or a
 * damaged file would hang gnuplot or draw nonsense). */
static int readable(const char *name, int sgd, const aim_plot_spec *sp)
{
    if (bad_name(name)) {
        fprintf(stderr, "aimdyn: plot: unusable file name (line break)\n");
        return 0;
    }
    static const char *const panels[] = {"risk", "overlap", "mean"};
    char names[6][16];
    const char *columns[8];
    int n = 0;
    columns[n++] = sp->samples_d > 0 ? "n" : "tau";
    for (int p = 0; p < (sp->flags & AIM_PLOT_MEAN ? 3 : 2); p++)
        for (int j = 0; j < (sgd ? 2 : 1); j++) {
            snprintf(names[2 * p + j], sizeof names[0], sgd ? (j ? "%s_se" : "%s_mean") : "%s",
                     panels[p]);
            columns[n++] = names[2 * p + j];
        }
    columns[n] = NULL;
    const aim_table_kind kind = {sgd ? "an SGD summary file NAME-sgd-dD.tsv with the columns "
                                       "the figure draws"
                                     : "an ODE result file NAME-ode.tsv with the columns the "
                                       "figure draws",
                                 columns, NULL};
    aim_table t;
    if (aim_table_read(name, &kind, &t))
        return 0;
    aim_table_free(&t);
    return 1;
}

static void figure_script(FILE *f, const void *ctx, const char *png, const char *svg)
{
    const aim_plot_spec *sp = ctx;
    fputs("# generated by aimdyn\n"
          "set datafile commentschars \"#\"\n"
          "set datafile separator \"\\t\"\n"
          "if (strstrt(GPVAL_TERMINALS, \"pngcairo\") > 0) {\n"
          "    set terminal pngcairo size 900,1000 enhanced font \"sans,11\"\n"
          "} else {\n"
          "    set terminal png size 900,1000\n"
          "}\n"
          "set output ",
          f);
    put_path(f, png);
    fputc('\n', f);
    put_figure(f, sp);
    fputs("set terminal svg size 900,1000 dynamic enhanced font \"sans,11\" "
          "background rgb \"white\"\nset output ",
          f);
    put_path(f, svg);
    fputc('\n', f);
    put_figure(f, sp);
}

int aim_plot_check_inputs(const aim_plot_spec *sp)
{
    if (sp->n_ode == 0 && sp->n_sgd == 0) {
        fprintf(stderr, "aimdyn: plot: no ODE or SGD file to plot\n");
        return -1;
    }
    for (int i = 0; i < sp->n_ode; i++) {
        if (!readable(sp->ode[i], 0, sp))
            return -1;
        if (sp->labels && bad_name(sp->labels[i])) {
            fprintf(stderr, "aimdyn: plot: --label %d contains a line break\n", i + 1);
            return -1;
        }
    }
    for (int i = 0; i < sp->n_sgd; i++)
        if (!readable(sp->sgd[i], 1, sp))
            return -1;
    return 0;
}

int aim_plot_figure(const aim_plot_spec *sp, const char *stem, aim_atomic_set *set)
{
    if (bad_name(stem)) {
        fprintf(stderr, "aimdyn: plot: unusable file name (line break)\n");
        return -1;
    }
    if (aim_plot_check_inputs(sp))
        return -1;
    return draw(stem, figure_script, sp, set);
}

/* ---- the scaling figure (aimdyn scaling) ---- */

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
        put_quoted(f, sp->title);
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
        put_quoted(f, sp->fit_key ? sp->fit_key : "power law");
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

/* The data once at the top (both terminals use it), then the figure for
 * the PNG and for the SVG. */
static void scaling_script(FILE *f, const void *ctx, const char *png, const char *svg)
{
    const aim_plot_scaling_spec *sp = ctx;
    scaling_rows rows;
    fputs("# generated by aimdyn (scaling)\n", f);
    scaling_data(f, sp, &rows);
    fputs("if (strstrt(GPVAL_TERMINALS, \"pngcairo\") > 0) {\n"
          "    set terminal pngcairo size 800,600 enhanced font \"sans,11\"\n"
          "} else {\n"
          "    set terminal png size 800,600\n"
          "}\n"
          "set output ",
          f);
    put_path(f, png);
    fputc('\n', f);
    scaling_figure(f, sp, &rows);
    fputs("set terminal svg size 800,600 dynamic enhanced font \"sans,11\" "
          "background rgb \"white\"\nset output ",
          f);
    put_path(f, svg);
    fputc('\n', f);
    scaling_figure(f, sp, &rows);
}

int aim_plot_scaling(const aim_plot_scaling_spec *sp, const char *stem, aim_atomic_set *set)
{
    if (bad_name(stem) || (sp->title && bad_name(sp->title)) ||
        (sp->fit_key && bad_name(sp->fit_key))) {
        fprintf(stderr, "aimdyn: plot: unusable figure name or text (line break)\n");
        return -1;
    }
    if (sp->n_dims + sp->n_pred == 0) {
        fprintf(stderr, "aimdyn: plot: no dimension to plot\n");
        return -1;
    }
    return draw(stem, scaling_script, sp, set);
}

/* ---- the heatmap (aimdyn sweep) ---- */

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
        put_quoted(f, labels[i]);
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
    put_quoted(f, sp->title);
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
    put_quoted(f, sp->cblabel);
    fputs("\nset xlabel ", f);
    put_quoted(f, sp->xlabel);
    fputc('\n', f);
    heatmap_tics(f, "x", sp->x, sp->nx);
    if (sp->ny > 1) {
        heatmap_tics(f, "y", sp->y, sp->ny);
        fputs("set ylabel ", f);
        put_quoted(f, sp->ylabel);
        fputc('\n', f);
    } else {
        fputs("unset ytics\nunset ylabel\n", f);
    }
    for (int k = 0; k < sp->npanels; k++) {
        if (sp->npanels > 1) {
            fputs("set title sprintf('%s = %s', ", f);
            put_quoted(f, sp->panel_key);
            fputs(", ", f);
            put_quoted(f, sp->panel[k]);
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

/* Writes the script of the heatmap into f: the data once at the top (both
 * terminals use it), then the figure for the PNG and for the SVG. */
static void heatmap_script(FILE *f, const void *ctx, const char *png, const char *svg)
{
    const aim_plot_heatmap_spec *sp = ctx;
    const int cols = sp->npanels < 3 ? sp->npanels : 3;
    const int rows = (sp->npanels + cols - 1) / cols;
    /* room for every cell's annotation and the tick labels */
    int width = cols * (260 + 90 * sp->nx), height = 60 + rows * (150 + 60 * sp->ny);
    width = width < 600 ? 600 : width > 6000 ? 6000 : width;
    height = height < 300 ? 300 : height > 6000 ? 6000 : height;
    fputs("# generated by aimdyn (heatmap)\n", f);
    for (int k = 0; k < sp->npanels; k++)
        heatmap_blocks(f, sp, k);
    /* keys and values are shown verbatim: no enhanced text (an '_' would
     * turn into a subscript) */
    fprintf(f,
            "if (strstrt(GPVAL_TERMINALS, \"pngcairo\") > 0) {\n"
            "    set terminal pngcairo size %d,%d noenhanced font \"sans,11\"\n"
            "} else {\n"
            "    set terminal png size %d,%d\n"
            "}\n"
            "set output ",
            width, height, width, height);
    put_path(f, png);
    fputc('\n', f);
    heatmap_figure(f, sp, cols);
    fprintf(f, "set terminal svg size %d,%d dynamic noenhanced font \"sans,11\" "
               "background rgb \"white\"\nset output ",
            width, height);
    put_path(f, svg);
    fputc('\n', f);
    heatmap_figure(f, sp, cols);
}

/* Texts go into gnuplot strings and datablocks: no line breaks, and no
 * double quote in a cell's text. */
static int heatmap_bad_text(const aim_plot_heatmap_spec *sp)
{
    const char *const *lists[] = {sp->x, sp->y, sp->panel};
    const int counts[] = {sp->nx, sp->ny > 1 ? sp->ny : 0, sp->npanels > 1 ? sp->npanels : 0};
    int bad = bad_name(sp->title) || bad_name(sp->xlabel) || bad_name(sp->cblabel) ||
              (sp->ny > 1 && bad_name(sp->ylabel)) ||
              (sp->npanels > 1 && bad_name(sp->panel_key));
    for (int l = 0; l < 3; l++)
        for (int i = 0; i < counts[l]; i++)
            bad |= bad_name(lists[l][i]);
    for (int c = 0; c < sp->npanels * sp->ny * sp->nx; c++)
        bad |= bad_name(sp->text[c]) || strchr(sp->text[c], '"') != NULL;
    return bad;
}

int aim_plot_heatmap(const aim_plot_heatmap_spec *sp, const char *stem, aim_atomic_set *set)
{
    if (sp->nx < 1 || sp->ny < 1 || sp->npanels < 1) {
        fprintf(stderr, "aimdyn: plot: empty heatmap\n");
        return -1;
    }
    if (bad_name(stem) || heatmap_bad_text(sp)) {
        fprintf(stderr, "aimdyn: plot: unusable figure name or text (line break or '\"')\n");
        return -1;
    }
    return draw(stem, heatmap_script, sp, set);
}
