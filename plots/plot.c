/* aim_plot: risk and teacher-overlap figures, rendered by gnuplot run as
 * a separate program on a generated script. */
#define _POSIX_C_SOURCE 200809L

#include "plot.h"

#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static const char not_found_msg[] =
    "aimdyn: gnuplot not found: install it (apt-get install gnuplot-nox) "
    "or use the TSV files directly\n";

int aim_plot_available(void)
{
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin";
    size_t n = strlen(path) + sizeof "/gnuplot";
    char *buf = malloc(n);
    if (!buf)
        return 0;
    int found = 0;
    const char *p = path;
    while (!found) {
        const char *end = strchr(p, ':');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == 0)
            snprintf(buf, n, "./gnuplot");
        else
            snprintf(buf, n, "%.*s/gnuplot", (int)len, p);
        struct stat st;
        if (stat(buf, &st) == 0 && S_ISREG(st.st_mode) &&
            access(buf, X_OK) == 0)
            found = 1;
        if (!end)
            break;
        p = end + 1;
    }
    free(buf);
    return found;
}

/* A gnuplot single-quoted string: no escapes, '' stands for '. */
static void put_quoted(FILE *f, const char *s)
{
    fputc('\'', f);
    for (; *s; s++) {
        if (*s == '\'')
            fputc('\'', f);
        fputc(*s, f);
    }
    fputc('\'', f);
}

static int bad_name(const char *s)
{
    return strchr(s, '\n') != NULL || strchr(s, '\r') != NULL;
}

/* The ODE curves (one per file: e.g. one per truncation order) share a
 * blue-to-green ramp so that convergence reads as a colour sequence. */
typedef struct {
    const char *const *ode;
    const char *const *labels;
    int n_ode;
    const char *sgd;
} figure_files;

static void put_panel(FILE *f, const figure_files *ff, const char *col,
                      const char *ylabel, const char *key)
{
    static const char *const ramp[] = {"#9ecae1", "#6baed6", "#4292c6",
                                       "#2171b5", "#08519c", "#08306b",
                                       "#2ca25f", "#006d2c"};
    const int nramp = (int)(sizeof ramp / sizeof ramp[0]);
    fprintf(f, "set key %s opaque\nset ylabel \"%s\"\nplot ", key, ylabel);
    for (int i = 0; i < ff->n_ode; i++) {
        const char *colour = ff->n_ode == 1
                                 ? "#1f4e9c"
                                 : ramp[(i * (nramp - 1)) / (ff->n_ode > 1 ? ff->n_ode - 1 : 1)];
        if (i)
            fputs(", \\\n     ", f);
        put_quoted(f, ff->ode[i]);
        fprintf(f, " using \"tau\":\"%s\" with lines lw 2 lc rgb \"%s\" title ",
                col, colour);
        put_quoted(f, ff->labels ? ff->labels[i] : "limit ODE");
    }
    if (ff->sgd) {
        if (ff->n_ode)
            fputs(", \\\n     ", f);
        put_quoted(f, ff->sgd);
        fprintf(f, " using \"tau\":\"%s_mean\":\"%s_se\" with yerrorbars "
                   "pt 7 ps 0.5 lc rgb \"#c0392b\" title \"SGD mean +- s.e.\"",
                col, col);
    }
    fputc('\n', f);
}

static void put_figure(FILE *f, const figure_files *ff, int flags)
{
    fprintf(f, "set multiplot layout %d,1\n"
               "set grid\nset xlabel \"tau\"\n",
            flags & AIM_PLOT_MEAN ? 3 : 2);
    if (flags & AIM_PLOT_LOG_TAU) /* tau = 0 has no place on it: left out */
        fputs("set logscale x\nset format x \"10^{%L}\"\n", f);
    put_panel(f, ff, "risk", "risk R", "top right");
    put_panel(f, ff, "overlap", "teacher overlap", "bottom right");
    if (flags & AIM_PLOT_MEAN)
        put_panel(f, ff, "mean", "student mean m = Tr S / sqrt d", "bottom right");
    fputs("unset multiplot\nunset output\n", f);
}

/* mkstemp-reserved name "base.XXXXXX"; gnuplot overwrites the file. */
static char *reserve_temp(const char *base)
{
    size_t n = strlen(base) + 8;
    char *t = malloc(n);
    if (!t)
        return NULL;
    snprintf(t, n, "%s.XXXXXX", base);
    int fd = mkstemp(t);
    if (fd < 0) {
        fprintf(stderr, "aimdyn: cannot create a temporary file beside '%s': "
                        "%s\n", base, strerror(errno));
        free(t);
        return NULL;
    }
    mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, 0666 & ~mask);
    close(fd);
    return t;
}

static int run_gnuplot(const char *script)
{
    char *argv[] = {"gnuplot", (char *)script, NULL};
    pid_t pid;
    int err = posix_spawnp(&pid, "gnuplot", NULL, NULL, argv, environ);
    if (err == ENOENT) {
        fputs(not_found_msg, stderr);
        return -1;
    }
    if (err != 0) {
        fprintf(stderr, "aimdyn: cannot run gnuplot: %s\n", strerror(err));
        return -1;
    }
    int status;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            fprintf(stderr, "aimdyn: waiting for gnuplot: %s\n",
                    strerror(errno));
            return -1;
        }
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

int aim_plot_trajectories(const char *ode_tsv, const char *sgd_tsv,
                          const char *stem, int flags)
{
    return aim_plot_orders(ode_tsv ? &ode_tsv : NULL, NULL, ode_tsv ? 1 : 0,
                           sgd_tsv, stem, flags);
}

static int readable(const char *name)
{
    if (bad_name(name)) {
        fprintf(stderr, "aimdyn: plot: unusable file name (line break)\n");
        return 0;
    }
    FILE *f = fopen(name, "r");
    if (!f) {
        fprintf(stderr, "aimdyn: plot: cannot read '%s': %s\n", name,
                strerror(errno));
        return 0;
    }
    fclose(f);
    return 1;
}

int aim_plot_orders(const char *const *ode_tsv, const char *const *labels,
                    int n_ode, const char *sgd_tsv, const char *stem, int flags)
{
    if (n_ode == 0 && !sgd_tsv) {
        fprintf(stderr, "aimdyn: plot: no ODE or SGD file to plot\n");
        return -1;
    }
    if (bad_name(stem)) {
        fprintf(stderr, "aimdyn: plot: unusable file name (line break)\n");
        return -1;
    }
    for (int i = 0; i < n_ode; i++) {
        if (!readable(ode_tsv[i]))
            return -1;
        if (labels && bad_name(labels[i])) {
            fprintf(stderr, "aimdyn: plot: --label %d contains a line break\n", i + 1);
            return -1;
        }
    }
    if (sgd_tsv && !readable(sgd_tsv))
        return -1;
    const figure_files ff = {ode_tsv, labels, n_ode, sgd_tsv};
    if (!aim_plot_available()) {
        fputs(not_found_msg, stderr);
        return -1;
    }

    int rc = -1;
    size_t n = strlen(stem) + 8;
    char *png = malloc(n), *svg = malloc(n);
    char *png_tmp = NULL, *svg_tmp = NULL, script[64] = "";
    FILE *f = NULL;
    if (!png || !svg) {
        fprintf(stderr, "aimdyn: out of memory\n");
        goto out;
    }
    snprintf(png, n, "%s.png", stem);
    snprintf(svg, n, "%s.svg", stem);
    if (!(png_tmp = reserve_temp(png)) || !(svg_tmp = reserve_temp(svg)))
        goto out;

    const char *tmpdir = getenv("TMPDIR");
    if (!tmpdir || !*tmpdir || strlen(tmpdir) > 40)
        tmpdir = "/tmp";
    snprintf(script, sizeof script, "%s/aimdyn-plot-XXXXXX", tmpdir);
    int fd = mkstemp(script);
    if (fd < 0 || !(f = fdopen(fd, "w"))) {
        fprintf(stderr, "aimdyn: cannot create a gnuplot script in %s: %s\n",
                tmpdir, strerror(errno));
        if (fd >= 0) {
            close(fd);
            unlink(script);
        }
        script[0] = '\0';
        goto out;
    }

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
    put_quoted(f, png_tmp);
    fputc('\n', f);
    put_figure(f, &ff, flags);
    fputs("set terminal svg size 900,1000 dynamic enhanced font \"sans,11\" "
          "background rgb \"white\"\nset output ",
          f);
    put_quoted(f, svg_tmp);
    fputc('\n', f);
    put_figure(f, &ff, flags);
    int werr = ferror(f);
    if (fclose(f) != 0 || werr) {
        fprintf(stderr, "aimdyn: cannot write the gnuplot script '%s'\n",
                script);
        goto out;
    }

    if (run_gnuplot(script) != 0)
        goto out;
    if (rename(png_tmp, png) != 0) {
        fprintf(stderr, "aimdyn: cannot rename '%s' to '%s': %s\n", png_tmp,
                png, strerror(errno));
        goto out;
    }
    if (rename(svg_tmp, svg) != 0) {
        fprintf(stderr, "aimdyn: cannot rename '%s' to '%s': %s\n", svg_tmp,
                svg, strerror(errno));
        goto out;
    }
    rc = 0;

out:
    if (script[0])
        unlink(script);
    if (png_tmp)
        unlink(png_tmp); /* no-op once renamed */
    if (svg_tmp)
        unlink(svg_tmp);
    free(png_tmp);
    free(svg_tmp);
    free(png);
    free(svg);
    return rc;
}
