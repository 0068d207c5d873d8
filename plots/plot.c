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

static void put_panel(FILE *f, const aim_plot_spec *sp, const char *col,
                      const char *ylabel, const char *key)
{
    fprintf(f, "set key %s opaque\nset ylabel \"%s\"\nplot ", key, ylabel);
    int first = 1;
    for (int i = 0; i < sp->n_ode; i++, first = 0) {
        if (!first)
            fputs(", \\\n     ", f);
        put_quoted(f, sp->ode[i]);
        fputs(" using ", f);
        put_x(f, sp);
        fprintf(f, ":\"%s\" with lines lw 2 lc rgb \"%s\" title ", col, curve_colour(sp, i));
        put_quoted(f, sp->labels ? sp->labels[i] : "limit ODE");
    }
    for (int i = 0; i < sp->n_sgd; i++, first = 0) {
        if (!first)
            fputs(", \\\n     ", f);
        put_quoted(f, sp->sgd[i]);
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

int aim_plot_orders(const char *const *ode_tsv, const char *const *labels,
                    int n_ode, const char *sgd_tsv, const char *stem, int flags)
{
    const aim_plot_spec sp = {ode_tsv, labels, n_ode, sgd_tsv ? &sgd_tsv : NULL,
                              sgd_tsv ? 1 : 0, 0.0, flags};
    return aim_plot_figure(&sp, stem);
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

int aim_plot_figure(const aim_plot_spec *sp, const char *stem)
{
    const int n_ode = sp->n_ode;
    if (n_ode == 0 && sp->n_sgd == 0) {
        fprintf(stderr, "aimdyn: plot: no ODE or SGD file to plot\n");
        return -1;
    }
    if (bad_name(stem)) {
        fprintf(stderr, "aimdyn: plot: unusable file name (line break)\n");
        return -1;
    }
    for (int i = 0; i < n_ode; i++) {
        if (!readable(sp->ode[i]))
            return -1;
        if (sp->labels && bad_name(sp->labels[i])) {
            fprintf(stderr, "aimdyn: plot: --label %d contains a line break\n", i + 1);
            return -1;
        }
    }
    for (int i = 0; i < sp->n_sgd; i++)
        if (!readable(sp->sgd[i]))
            return -1;
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
    put_figure(f, sp);
    fputs("set terminal svg size 900,1000 dynamic enhanced font \"sans,11\" "
          "background rgb \"white\"\nset output ",
          f);
    put_quoted(f, svg_tmp);
    fputc('\n', f);
    put_figure(f, sp);
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
