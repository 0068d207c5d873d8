/* aim_plot: risk and teacher-overlap figures, rendered by gnuplot run as
 * a separate program (no shell), the generated script on its standard
 * input; every figure keeps that script beside it (STEM.gp), to be
 * restyled and rerun. */
#define _POSIX_C_SOURCE 200809L

#include "plot.h"
#include "tsv.h"

#include "guard.h"
#include "hook.h"

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

/* The gnuplot executable on PATH (malloc'd), or NULL: not found, or out
 * of memory (said, *no_memory set). */
static char *find_gnuplot(int *no_memory)
{
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin";
    size_t n = strlen(path) + sizeof "/gnuplot";
    char *buf = malloc(n);
    *no_memory = !buf;
    if (!buf) {
        fprintf(stderr, "aimdyn: out of memory (looking for gnuplot on PATH)\n");
        return NULL;
    }
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
    int no_memory;
    char *exe = find_gnuplot(&no_memory);
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

/* The figure formats: the flag, the file extension. */
static const struct {
    int bit;
    const char *ext;
} format_list[] = {{AIM_PLOT_PNG, "png"}, {AIM_PLOT_SVG, "svg"}, {AIM_PLOT_PDF, "pdf"}};
enum { NFORMATS = (int)(sizeof format_list / sizeof format_list[0]) };

/* Writes the body of a figure's gnuplot script into f, drawing each of
 * formats into the output named by the variable out_png, out_svg or
 * out_pdf (draw() defines them). */
typedef void script_fn(FILE *f, const void *ctx, int formats);

/* Runs gnuplot (exe) on the script text[0 .. len-1] (its standard
 * input). Returns 0, or -1 with a message on stderr. */
static int run_gnuplot(const char *exe, const char *text, size_t len)
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
    aim_hook_event("figure-draw", NULL, 0, NULL, 0); /* gnuplot started, its script not sent */
    /* a gnuplot that stops early (an error) closes the pipe: its exit
     * status says why, not a SIGPIPE here nor the failed write */
    struct sigaction ignore, old;
    memset(&ignore, 0, sizeof ignore);
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    sigaction(SIGPIPE, &ignore, &old);
    fwrite(text, 1, len, f);
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

/* The last non-blank bytes of the file (at most n - 1 of them) into buf,
 * NUL-terminated: their number, or -1. */
static ssize_t file_tail(int fd, off_t size, char *buf, size_t n)
{
    size_t got = size < (off_t)(n - 1) ? (size_t)size : n - 1;
    if (got == 0 || pread(fd, buf, got, size - (off_t)got) != (ssize_t)got)
        return -1;
    while (got > 0 && strchr("\n\r\t ", buf[got - 1]))
        got--;
    buf[got] = '\0';
    return (ssize_t)got;
}

/* gnuplot exits with status 0 when it could not write its output (e.g.
 * on a full disk): a figure counts when it is complete, the file that
 * gnuplot wrote being the temporary one (same inode): a PNG from its
 * signature to its IEND chunk, an SVG up to its closing tag, a PDF from
 * its header to its end-of-file marker. */
static int figure_complete(const aim_atomic_file *file, int format)
{
    static const unsigned char signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    static const unsigned char iend[12] = {0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xae, 0x42, 0x60, 0x82};
    const int fd = aim_atomic_fd(file);
    struct stat st, named;
    unsigned char head[8];
    char tail[64];
    int ok = fstat(fd, &st) == 0 && stat(aim_atomic_temp(file), &named) == 0 &&
             st.st_dev == named.st_dev && st.st_ino == named.st_ino;
    const off_t size = ok ? st.st_size : 0;
    if (ok && format == AIM_PLOT_PNG)
        ok = size >= 20 && pread(fd, head, 8, 0) == 8 && !memcmp(head, signature, 8) &&
             pread(fd, head, 8, size - 8) == 8 && !memcmp(head, iend + 4, 8) &&
             pread(fd, head, 4, size - 12) == 4 && !memcmp(head, iend, 4);
    else if (ok && format == AIM_PLOT_SVG) {
        const ssize_t n = file_tail(fd, size, tail, sizeof tail);
        ok = n >= 6 && !strcmp(tail + n - 6, "</svg>");
    } else if (ok) {
        const ssize_t n = file_tail(fd, size, tail, sizeof tail);
        ok = n >= 5 && !strcmp(tail + n - 5, "%%EOF") && pread(fd, head, 5, 0) == 5 &&
             !memcmp(head, "%PDF-", 5);
    }
    if (!ok)
        fprintf(stderr, "aimdyn: gnuplot left an incomplete figure for '%s' (%lld bytes; a full "
                        "disk?)\n", aim_atomic_final(file), (long long)size);
    return ok;
}

/* "stem.ext", malloc'd (NULL: out of memory, said). */
static char *stem_file(const char *stem, const char *ext)
{
    const size_t n = strlen(stem) + strlen(ext) + 2;
    char *path = malloc(n);
    if (path)
        snprintf(path, n, "%s.%s", stem, ext);
    else
        fprintf(stderr, "aimdyn: out of memory\n");
    return path;
}

/* The script of a figure into memory: a header that names the outputs
 * (final names, as the kept script needs them), then the body. NULL when
 * out of memory (said). */
static char *script_text(const char *stem, script_fn *put_script, const void *ctx, int formats,
                         size_t *len)
{
    char *text = NULL;
    FILE *f = open_memstream(&text, len);
    if (!f) {
        fprintf(stderr, "aimdyn: out of memory\n");
        return NULL;
    }
    fputs("# generated by aimdyn: the figure", f);
    for (int k = 0; k < NFORMATS; k++)
        if (formats & format_list[k].bit)
            fprintf(f, " %s.%s", stem, format_list[k].ext);
    fprintf(f, "\n# Restyle it and redraw with `gnuplot %s.gp`, run in the directory aimdyn\n"
               "# ran in (the file names are relative to it); out_png, out_svg and out_pdf\n"
               "# may be set before (gnuplot -e \"out_png='other.png'\" %s.gp).\n",
            stem, stem);
    for (int k = 0; k < NFORMATS; k++)
        if (formats & format_list[k].bit) {
            fprintf(f, "if (!exists(\"out_%s\")) out_%s = ", format_list[k].ext,
                    format_list[k].ext);
            char *out = stem_file(stem, format_list[k].ext);
            put_path(f, out ? out : "");
            free(out);
            fputc('\n', f);
        }
    put_script(f, ctx, formats);
    if (fclose(f) != 0) {
        free(text);
        fprintf(stderr, "aimdyn: out of memory\n");
        return NULL;
    }
    return text;
}

/* Draws the figure in each of formats with gnuplot into temporary files
 * beside stem.png, stem.svg, stem.pdf, checks that each is complete and
 * adds them and the script, stem.gp, to set, to be
 * renamed into place together with it. Returns 0, or -1 with a message
 * on stderr (e.g. gnuplot missing): nothing added, or (out of memory)
 * some files alone, which aim_plot_stale or freeing the set undoes. */
static int draw(const char *stem, script_fn *put_script, const void *ctx, int formats,
                const char *run_vars, aim_atomic_set *set)
{
    int no_memory;
    char *exe = find_gnuplot(&no_memory);
    if (!exe) {
        if (!no_memory)
            fputs(not_found_msg, stderr);
        return -1;
    }
    int rc = -1;
    size_t len = 0, run_len = 0;
    char *text = script_text(stem, put_script, ctx, formats, &len), *run = NULL;
    aim_atomic_file *files[NFORMATS + 1] = {NULL};
    FILE *f = text ? open_memstream(&run, &run_len) : NULL;
    if (!f) {
        if (text)
            fprintf(stderr, "aimdyn: out of memory\n");
        goto out;
    }
    /* gnuplot draws into the temporary files: the outputs (and run_vars,
     * the data files as this run has them) named first, then the script
     * as kept */
    if (run_vars)
        fputs(run_vars, f);
    for (int k = 0; k < NFORMATS; k++) {
        if (!(formats & format_list[k].bit))
            continue;
        char *final = stem_file(stem, format_list[k].ext);
        files[k] = final ? aim_atomic_create(final) : NULL;
        free(final);
        if (!files[k])
            break;
        fprintf(f, "out_%s = ", format_list[k].ext);
        put_path(f, aim_atomic_temp(files[k]));
        fputc('\n', f);
    }
    fwrite(text, 1, len, f);
    if (fclose(f) != 0) {
        fprintf(stderr, "aimdyn: out of memory\n");
        goto out;
    }
    for (int k = 0; k < NFORMATS; k++)
        if (formats & format_list[k].bit && !files[k])
            goto out;
    char *script = stem_file(stem, "gp");
    files[NFORMATS] = script ? aim_atomic_create(script) : NULL;
    free(script);
    if (!files[NFORMATS] || aim_atomic_write(files[NFORMATS], text, len)) {
        if (files[NFORMATS])
            fprintf(stderr, "aimdyn: cannot write '%s': %s\n",
                    aim_atomic_final(files[NFORMATS]), strerror(errno));
        goto out;
    }
    if (run_gnuplot(exe, run, run_len))
        goto out;
    for (int k = 0; k < NFORMATS; k++)
        if (files[k] && !figure_complete(files[k], format_list[k].bit))
            goto out;
    /* each add takes its file, also when it fails */
    rc = 0;
    for (int k = 0; k <= NFORMATS; k++)
        if (files[k]) {
            if (rc == 0)
                rc = aim_atomic_set_add(set, files[k]);
            else
                aim_atomic_discard(files[k]);
            files[k] = NULL;
        }
out:
    for (int k = 0; k <= NFORMATS; k++)
        aim_atomic_discard(files[k]);
    free(exe);
    free(text);
    free(run);
    return rc;
}

/* Adds the removal of stem's files in the formats not in keep (and of
 * its script stem.gp unless keep_script) to set. */
static int remove_others(aim_atomic_set *set, const char *stem, int keep, int keep_script)
{
    int rc = 0;
    for (int k = 0; rc == 0 && k <= NFORMATS; k++) {
        if (k < NFORMATS ? keep & format_list[k].bit : keep_script)
            continue;
        char *path = stem_file(stem, k < NFORMATS ? format_list[k].ext : "gp");
        rc = path ? aim_atomic_set_remove(set, path) : -1;
        free(path);
    }
    return rc;
}

int aim_plot_stale(aim_atomic_set *set, const char *stem)
{
    return remove_others(set, stem, 0, 0);
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

/* The colour of SGD file i (its means and its seeds). */
static const char *sgd_colour(const aim_plot_spec *sp, int i)
{
    return sp->n_sgd > 1 ? curve_colour(sp, i) : "#c0392b";
}

/* The x column: tau, or n / d^2. */
static void put_x(FILE *f, const aim_plot_spec *sp)
{
    if (sp->samples_d > 0)
        fprintf(f, "(column(\"n\")/%.17g)", sp->samples_d * sp->samples_d);
    else
        fputs("\"tau\"", f);
}

/* Column col + suffix of table t as a gnuplot string, named as the file
 * names it (gnuplot reads the file's header: a file of an earlier version
 * has m(SST) where the reader gives m_SST; a column name may hold any
 * character but a tab or a line break). */
static void put_column(FILE *f, const aim_table *t, const char *col, const char *suffix)
{
    char name[320];
    snprintf(name, sizeof name, "%s%s", col, suffix);
    const int c = aim_table_column(t, name);
    put_quoted(f, c >= 0 ? t->header[c] : name);
}

/* One panel of the figure: a column of the files against the x axis. */
typedef struct {
    char *col;        /* X: the ODE's X, the SGD's X_mean and X_se */
    const char *label; /* its y label (gnuplot enhanced text); NULL: col, verbatim */
    const char *key;   /* where its key goes */
    const char *option; /* what asked for it, for messages */
} panel;

/* The rows of one seed in a per-seed file (0-based data rows, the column
 * line not counted, as gnuplot's `every` counts them). */
typedef struct {
    int first, last;
} seed_rows;

/* What the figure draws, worked out from its files before the script is
 * written: every file read once and checked (figure_plan_make). */
typedef struct {
    const aim_plot_spec *sp;
    aim_table *ode, *sgd, *seeds; /* per file; seeds: per SGD file, with AIM_PLOT_SEEDS */
    char **seeds_path;
    char **seeds_final; /* per SGD file, with sgd_final: the seeds' file as the kept
                           script names it */
    seed_rows **rows;
    int *nseeds;
    panel *panels;
    int npanels;
    char *title;
} figure_plan;

static void figure_plan_free(figure_plan *p)
{
    const aim_plot_spec *sp = p->sp;
    for (int i = 0; p->ode && i < sp->n_ode; i++)
        aim_table_free(&p->ode[i]);
    for (int i = 0; i < sp->n_sgd; i++) {
        if (p->sgd)
            aim_table_free(&p->sgd[i]);
        if (p->seeds)
            aim_table_free(&p->seeds[i]);
        if (p->seeds_path)
            free(p->seeds_path[i]);
        if (p->seeds_final)
            free(p->seeds_final[i]);
        if (p->rows)
            free(p->rows[i]);
    }
    for (int k = 0; k < p->npanels; k++)
        free(p->panels[k].col);
    free(p->ode);
    free(p->sgd);
    free(p->seeds);
    free(p->seeds_path);
    free(p->seeds_final);
    free(p->rows);
    free(p->nseeds);
    free(p->panels);
    free(p->title);
    memset(p, 0, sizeof *p);
}

/* The half-width of the band of file i around col: the truncation error
 * estimate (col_trunc; relative for the risk) where it is a number, else
 * the replicas' standard error (col_se) - a hierarchy handed over to the
 * matrix process has the one before the hand-over and the other after. */
static void put_half_width(FILE *f, const figure_plan *p, int i, const char *col, int has_trunc,
                           int has_se)
{
    const int relative = strcmp(col, "risk") == 0;
    if (has_trunc && has_se) {
        fputs("(column(", f);
        put_column(f, &p->ode[i], col, "_trunc");
        fputs(") == column(", f);
        put_column(f, &p->ode[i], col, "_trunc");
        fputs(") ? ", f);
    }
    if (has_trunc) {
        fputs("column(", f);
        put_column(f, &p->ode[i], col, "_trunc");
        fputs(")", f);
        if (relative) {
            fputs("*column(", f);
            put_column(f, &p->ode[i], col, "");
            fputs(")", f);
        }
    }
    if (has_trunc && has_se)
        fputs(" : ", f);
    if (has_se) {
        fputs("column(", f);
        put_column(f, &p->ode[i], col, "_se");
        fputs(")", f);
    }
    if (has_trunc && has_se)
        fputs(")", f);
}

/* The band of ODE file i around column col, when the file has one: the
 * truncation error estimate of a hierarchy or the replicas' standard
 * error of the matrix method (put_half_width). */
static void put_band(FILE *f, const figure_plan *p, int i, const char *col, int *first)
{
    const aim_plot_spec *sp = p->sp;
    char trunc[320], se[320];
    snprintf(trunc, sizeof trunc, "%s_trunc", col);
    snprintf(se, sizeof se, "%s_se", col);
    const int has_trunc = aim_table_column(&p->ode[i], trunc) >= 0;
    const int has_se = aim_table_column(&p->ode[i], se) >= 0;
    if (!has_trunc && !has_se)
        return;
    if (!*first)
        fputs(", \\\n     ", f);
    *first = 0;
    fprintf(f, "ode_%d using ", i + 1);
    put_x(f, sp);
    for (int side = -1; side <= 1; side += 2) {
        fputs(":(column(", f);
        put_column(f, &p->ode[i], col, "");
        fputs(side < 0 ? ")-" : ")+", f);
        put_half_width(f, p, i, col, has_trunc, has_se);
        fputs(")", f);
    }
    fprintf(f, " with filledcurves fs transparent solid 0.25 noborder lc rgb \"%s\" notitle",
            curve_colour(sp, i));
}

/* A thin, half-transparent line per seed of SGD file i, under the mean. */
static void put_seeds(FILE *f, const figure_plan *p, int i, const char *col, int *first)
{
    const aim_plot_spec *sp = p->sp;
    for (int s = 0; s < p->nseeds[i]; s++) {
        if (!*first)
            fputs(", \\\n     ", f);
        *first = 0;
        fprintf(f, "seeds_%d every ::%d::%d using ", i + 1, p->rows[i][s].first,
                p->rows[i][s].last);
        put_x(f, sp);
        /* #AARRGGBB: AA is the transparency */
        fputc(':', f);
        put_column(f, &p->seeds[i], col, "");
        fprintf(f, " with lines lw 0.8 lc rgb \"#a0%s\" ", sgd_colour(sp, i) + 1);
        if (i == 0 && s == 0 && sp->n_sgd == 1)
            fputs("title \"SGD seeds\"", f);
        else
            fputs("notitle", f);
    }
}

static void put_panel(FILE *f, const figure_plan *p, const panel *pn)
{
    const aim_plot_spec *sp = p->sp;
    fprintf(f, "set key %s opaque\nset ylabel ", pn->key);
    put_quoted(f, pn->label ? pn->label : pn->col);
    fprintf(f, "%s\nplot ", pn->label ? "" : " noenhanced");
    int first = 1;
    for (int i = 0; i < sp->n_ode; i++)
        put_band(f, p, i, pn->col, &first);
    for (int i = 0; p->seeds && i < sp->n_sgd; i++)
        put_seeds(f, p, i, pn->col, &first);
    for (int i = 0; i < sp->n_ode; i++, first = 0) {
        if (!first)
            fputs(", \\\n     ", f);
        fprintf(f, "ode_%d using ", i + 1);
        put_x(f, sp);
        fputc(':', f);
        put_column(f, &p->ode[i], pn->col, "");
        fprintf(f, " with lines lw 2 lc rgb \"%s\" title ", curve_colour(sp, i));
        put_quoted(f, sp->labels ? sp->labels[i] : "limit ODE");
    }
    for (int i = 0; i < sp->n_sgd; i++, first = 0) {
        if (!first)
            fputs(", \\\n     ", f);
        fprintf(f, "sgd_%d using ", i + 1);
        put_x(f, sp);
        fputc(':', f);
        put_column(f, &p->sgd[i], pn->col, "_mean");
        fputc(':', f);
        put_column(f, &p->sgd[i], pn->col, "_se");
        fprintf(f, " with yerrorbars pt 7 ps 0.5 lc rgb \"%s\" ", sgd_colour(sp, i));
        if (sp->n_sgd > 1)
            fputs("notitle", f);
        else
            fputs("title \"SGD mean +- s.e.\"", f);
    }
    fputc('\n', f);
}

/* Columns and rows of the multiplot, and the canvas in pixels (a PDF's
 * in points: pixels / 72 inches, so that its text has the PNG's
 * proportions). */
static void figure_layout(const figure_plan *p, int *rows, int *cols, int *width, int *height)
{
    *cols = p->npanels > 3 ? 2 : 1;
    *rows = (p->npanels + *cols - 1) / *cols;
    *width = *cols == 1 ? 900 : 1500;
    *height = *rows * 340 < 1000 ? 1000 : *rows * 340 > 6000 ? 6000 : *rows * 340;
}

static void put_figure(FILE *f, const figure_plan *p)
{
    const aim_plot_spec *sp = p->sp;
    int rows, cols, width, height;
    figure_layout(p, &rows, &cols, &width, &height);
    fprintf(f, "set multiplot layout %d,%d title ", rows, cols);
    put_quoted(f, p->title);
    fputs(" noenhanced\nset grid\n", f);
    if (sp->samples_d > 0)
        fprintf(f, "set xlabel \"samples n / d^2 (d = %g%s)\"\n", sp->samples_d,
                sp->n_sgd > 1 ? "; lines: ODE, points: SGD mean +- s.e." : "");
    else
        fputs("set xlabel \"tau\"\n", f);
    if (sp->flags & AIM_PLOT_LOG_TAU || sp->samples_d > 0) /* 0 has no place on it */
        fputs("set logscale x\nset format x \"10^{%L}\"\n", f);
    for (int k = 0; k < p->npanels; k++)
        put_panel(f, p, &p->panels[k]);
    fputs("unset multiplot\nunset output\n", f);
}

/* The terminal of one format with its output (out_png, out_svg or
 * out_pdf: draw() defines them), for a canvas of width x height pixels
 * (a PDF's: width / 72 x height / 72 inches, so that its text has the
 * PNG's proportions); text "enhanced" or "noenhanced". */
static void put_terminal(FILE *f, int format, int width, int height, const char *text)
{
    if (format == AIM_PLOT_PNG)
        fprintf(f,
                "if (strstrt(GPVAL_TERMINALS, \"pngcairo\") > 0) {\n"
                "    set terminal pngcairo size %d,%d %s font \"sans,11\"\n"
                "} else {\n"
                "    set terminal png size %d,%d\n"
                "}\n"
                "set output out_png\n",
                width, height, text, width, height);
    else if (format == AIM_PLOT_SVG)
        fprintf(f,
                "set terminal svg size %d,%d dynamic %s font \"sans,11\" "
                "background rgb \"white\"\nset output out_svg\n",
                width, height, text);
    else
        fprintf(f,
                "if (strstrt(GPVAL_TERMINALS, \"pdfcairo\") == 0) {\n"
                "    print \"aimdyn: this gnuplot has no pdfcairo terminal (Debian's "
                "gnuplot-nox has it)\"\n"
                "    exit status 3\n"
                "}\n"
                "set terminal pdfcairo size %.4gin,%.4gin %s font \"sans,11\"\n"
                "set output out_pdf\n",
                width / 72.0, height / 72.0, text);
}

/* The data files as the variables ode_I, sgd_I and seeds_I (I from 1):
 * for the kept script (run = 0) their final names, each a default that
 * gnuplot -e may override; for this run (run = 1) the files it reads,
 * which may still be temporary (compare draws before its commit). */
static void put_data_files(FILE *f, const figure_plan *p, int run)
{
    const aim_plot_spec *sp = p->sp;
    for (int kind = 0; kind < 3; kind++) {
        static const char *const var[] = {"ode", "sgd", "seeds"};
        const int n = kind == 0 ? sp->n_ode : kind == 1 ? sp->n_sgd : p->seeds ? sp->n_sgd : 0;
        for (int i = 0; i < n; i++) {
            const char *file = kind == 0   ? (!run && sp->ode_final ? sp->ode_final : sp->ode)[i]
                               : kind == 1 ? (!run && sp->sgd_final ? sp->sgd_final : sp->sgd)[i]
                                           : (!run && sp->sgd_final ? p->seeds_final
                                                                     : p->seeds_path)[i];
            if (run)
                fprintf(f, "%s_%d = ", var[kind], i + 1);
            else
                fprintf(f, "if (!exists(\"%s_%d\")) %s_%d = ", var[kind], i + 1, var[kind],
                        i + 1);
            put_path(f, file);
            fputc('\n', f);
        }
    }
}

/* The figure once, drawn in a loop over the formats, so that a restyled
 * kept script changes every format alike. */
static void figure_script(FILE *f, const void *ctx, int formats)
{
    const figure_plan *p = ctx;
    int rows, cols, width, height;
    figure_layout(p, &rows, &cols, &width, &height);
    fputs("set encoding utf8\n"
          "set datafile commentschars \"#\"\n"
          "set datafile separator \"\\t\"\n",
          f);
    put_data_files(f, p, 0);
    fputs("do for [format in \"", f);
    for (int k = 0, n = 0; k < NFORMATS; k++)
        if (formats & format_list[k].bit)
            fprintf(f, "%s%s", n++ ? " " : "", format_list[k].ext);
    fputs("\"] {\n", f);
    for (int k = 0; k < NFORMATS; k++)
        if (formats & format_list[k].bit) {
            fprintf(f, "if (format eq \"%s\") {\n", format_list[k].ext);
            put_terminal(f, format_list[k].bit, width, height, "enhanced");
            fputs("}\n", f);
        }
    put_figure(f, p);
    fputs("}\n", f);
}

/* Reads the file of option (e.g. "--sgd") as a result file of the kind
 * wanted (0 ODE, 1 SGD summary, 2 per-seed SGD file) with data rows:
 * 0, or -1 with a message naming the option, the file and what it
 * should be (a file of another kind named as such). */
static int read_kind(const char *path, const char *option, int wanted, aim_table *t)
{
    static const char *const what[] = {
        "an ODE result file NAME-ode.tsv", "an SGD summary file NAME-sgd-dD.tsv",
        "the per-seed file NAME-sgd-dD-seeds.tsv of an SGD summary"};
    char expected[160];
    snprintf(expected, sizeof expected, "%s (plot %s)", what[wanted], option);
    const aim_table_kind any = {expected, NULL, NULL};
    memset(t, 0, sizeof *t);
    if (bad_name(path)) {
        fprintf(stderr, "aimdyn plot: %s: unusable file name (line break)\n", option);
        return -1;
    }
    if (aim_table_read(path, &any, t))
        return -1;
    const int seed = aim_table_column(t, "seed") >= 0;
    const int kind = aim_table_column(t, "risk_mean") >= 0 ? 1
                     : aim_table_column(t, "risk") >= 0  ? (seed ? 2 : 0)
                                                         : -1;
    const char *problem = NULL;
    if (kind != wanted)
        problem = kind < 0 ? "not a result file of ode, sgd or compare (no column 'risk' or "
                             "'risk_mean')"
                  : kind == 0 ? "an ODE result file"
                  : kind == 1 ? "an SGD summary file"
                              : "the per-seed file of an SGD run";
    else if (t->nrows == 0)
        problem = "no data rows";
    if (!problem)
        return 0;
    const char *hint = kind == wanted          ? ""
                       : kind == 0 && wanted ? " (an ODE result file goes to --ode)"
                       : kind == 1 && !wanted ? " (an SGD summary goes to --sgd)"
                       : kind == 2 ? " (the per-seed curves: --sgd NAME-sgd-dD.tsv --seeds)"
                                   : "";
    fprintf(stderr, "aimdyn plot: %s %s: %s; allowed: %s%s\n", option, path, problem,
            what[wanted], hint);
    aim_table_free(t);
    memset(t, 0, sizeof *t);
    return -1;
}

/* The column that file path (option) must have, with a finite value
 * where finite says so (a series of NaN draws nothing): 0, or -1 with a
 * message naming what asked for it. */
static int need_column(const aim_table *t, const char *path, const char *option,
                       const char *col, int finite_needed, const char *asked_by)
{
    const int c = aim_table_column(t, col);
    int finite = c >= 0 && !finite_needed;
    for (int r = 0; c >= 0 && r < t->nrows && !finite; r++)
        finite = isfinite(t->data[(size_t)r * (size_t)t->ncols + (size_t)c]) != 0;
    if (finite)
        return 0;
    fprintf(stderr, "aimdyn plot: %s: %s %s has %s column '%s'; allowed: a column it has (",
            asked_by, option, path, c < 0 ? "no" : "no finite value in its", col);
    for (int k = 0; k < t->ncols; k++)
        fprintf(stderr, "%s%s", k ? " " : "", t->names[k]);
    fputs(")\n", stderr);
    return -1;
}

/* Every file has the x column and the panel's columns (ODE: X; SGD: X_mean,
 * X_se; per-seed: X), each with a finite value. */
static int panel_drawable(const figure_plan *p, const panel *pn)
{
    const aim_plot_spec *sp = p->sp;
    const char *x = sp->samples_d > 0 ? "n" : "tau";
    char mean[320], se[320];
    snprintf(mean, sizeof mean, "%s_mean", pn->col);
    snprintf(se, sizeof se, "%s_se", pn->col);
    for (int i = 0; i < sp->n_ode; i++)
        if (need_column(&p->ode[i], sp->ode[i], "--ode", x, 1, "the x axis") ||
            need_column(&p->ode[i], sp->ode[i], "--ode", pn->col, 1, pn->option))
            return 0;
    for (int i = 0; i < sp->n_sgd; i++)
        if (need_column(&p->sgd[i], sp->sgd[i], "--sgd", x, 1, "the x axis") ||
            need_column(&p->sgd[i], sp->sgd[i], "--sgd", mean, 1, pn->option) ||
            need_column(&p->sgd[i], sp->sgd[i], "--sgd", se, 0, pn->option) ||
            (p->seeds &&
             (need_column(&p->seeds[i], p->seeds_path[i], "--seeds", x, 1, "the x axis") ||
              need_column(&p->seeds[i], p->seeds_path[i], "--seeds", pn->col, 1, pn->option))))
            return 0;
    return 1;
}

static int add_panel(figure_plan *p, const char *col, const char *label, const char *key,
                     const char *option)
{
    panel *grown = realloc(p->panels, (size_t)(p->npanels + 1) * sizeof *grown);
    if (!grown) {
        fprintf(stderr, "aimdyn plot: out of memory (the panel of %s)\n", option);
        return -1;
    }
    p->panels = grown;
    panel *pn = &p->panels[p->npanels];
    if (strlen(col) > AIM_PLOT_MAX_COLUMN || bad_name(col)) {
        fprintf(stderr, "aimdyn plot: %s: unusable column name '%s'%s%d characters\n", option,
                col, bad_name(col) ? " (line break); allowed: one line of at most "
                                   : "; allowed: at most ",
                AIM_PLOT_MAX_COLUMN);
        return -1;
    }
    if (!(pn->col = strdup(col))) {
        fprintf(stderr, "aimdyn plot: out of memory (the panel of %s %s)\n", option, col);
        return -1;
    }
    pn->label = label;
    pn->key = key;
    pn->option = option;
    p->npanels++;
    return panel_drawable(p, pn) ? 0 : -1;
}

/* A tracked moment m(w): its column m_w (the reader gives every file's
 * names, old ones too, in that form; put_column writes the file's own). */
static int is_moment(const char *name)
{
    return !strncmp(name, "m_", 2);
}

/* A panel per moment of the first file (every file must have them). */
static int add_moments(figure_plan *p)
{
    const aim_plot_spec *sp = p->sp;
    const aim_table *t = sp->n_ode ? &p->ode[0] : &p->sgd[0];
    const char *path = sp->n_ode ? sp->ode[0] : sp->sgd[0];
    int found = 0;
    for (int c = 0; c < t->ncols; c++) {
        char col[256];
        const size_t n = strlen(t->names[c]);
        if (!is_moment(t->names[c]) || n >= sizeof col)
            continue;
        if (!sp->n_ode) { /* an SGD summary: X_mean */
            if (n < 5 || strcmp(t->names[c] + n - 5, "_mean"))
                continue;
            snprintf(col, sizeof col, "%.*s", (int)(n - 5), t->names[c]);
        } else
            snprintf(col, sizeof col, "%s", t->names[c]);
        if (add_panel(p, col, NULL, "top left", "--panels moments"))
            return -1;
        found++;
    }
    if (!found)
        fprintf(stderr, "aimdyn plot: --panels moments: %s %s has no moment column m_w; "
                        "allowed: the files of a tied or untied student (its tracked words)\n",
                sp->n_ode ? "--ode" : "--sgd", path);
    return found ? 0 : -1;
}

/* The per-seed file of SGD file i, NAME-seeds.tsv beside NAME.tsv, of the
 * same run (the same configuration lines), and each seed's rows. */
/* NAME-seeds.tsv of sgd = NAME.tsv, malloc'd; NULL when sgd does not end
 * in .tsv or out of memory (said). */
static char *seeds_name(const char *sgd)
{
    const size_t n = strlen(sgd);
    char *name = NULL;
    if (n < 4 || strcmp(sgd + n - 4, ".tsv"))
        fprintf(stderr, "aimdyn plot: --seeds: --sgd %s does not end in .tsv; allowed: an SGD "
                        "summary NAME-sgd-dD.tsv beside its NAME-sgd-dD-seeds.tsv\n", sgd);
    else if (!(name = malloc(n + 8)))
        fprintf(stderr, "aimdyn plot: out of memory (the name of the per-seed file of %s)\n",
                sgd);
    else
        snprintf(name, n + 8, "%.*s-seeds.tsv", (int)(n - 4), sgd);
    return name;
}

static int read_seeds(figure_plan *p, int i)
{
    const char *sgd = p->sp->sgd[i];
    if (!(p->seeds_path[i] = seeds_name(sgd)) ||
        (p->sp->sgd_final && !(p->seeds_final[i] = seeds_name(p->sp->sgd_final[i]))))
        return -1;
    aim_table *t = &p->seeds[i];
    if (read_kind(p->seeds_path[i], "--seeds", 2, t))
        return -1;
    int same = 1, a = 0, b = 0;
    const aim_table *s = &p->sgd[i];
    for (;; a++, b++) {
        while (a < s->nmeta && strncmp(s->meta[a], "# config ", 9))
            a++;
        while (b < t->nmeta && strncmp(t->meta[b], "# config ", 9))
            b++;
        if (a == s->nmeta || b == t->nmeta) {
            same = a == s->nmeta && b == t->nmeta;
            break;
        }
        if (strcmp(s->meta[a], t->meta[b])) {
            same = 0;
            break;
        }
    }
    if (!same) {
        fprintf(stderr, "aimdyn plot: --seeds: %s and --sgd %s record different "
                        "configurations; allowed: the per-seed file of the same run\n",
                p->seeds_path[i], sgd);
        return -1;
    }
    /* the reader checked tau increasing within each seed: a seed's rows
     * are contiguous as sgd writes them */
    if (!(p->rows[i] = malloc((size_t)t->nrows * sizeof *p->rows[i]))) {
        fprintf(stderr, "aimdyn plot: out of memory (the seeds of %s)\n", p->seeds_path[i]);
        return -1;
    }
    for (int r = 0; r < t->nrows; r++)
        if (r == 0 || t->seed[r] != t->seed[r - 1])
            p->rows[i][p->nseeds[i]++] = (seed_rows){r, r};
        else
            p->rows[i][p->nseeds[i] - 1].last = r;
    return 0;
}

/* "direct model: SGD at d = 40 (3 seeds) against the limit ODE", from the
 * files' metadata (each distinct d and seed count once). */
static int make_title(figure_plan *p)
{
    const aim_plot_spec *sp = p->sp;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return -1;
    const aim_table *first = sp->n_ode ? &p->ode[0] : &p->sgd[0];
    const char *model = aim_table_meta(first, "# config model.decomposition = ");
    if (model)
        fprintf(f, "%s model: ", model);
    for (int i = 0; i < sp->n_sgd; i++) {
        const char *d = aim_table_meta(&p->sgd[i], "# config sgd.d = ");
        const char *seeds = aim_table_meta(&p->sgd[i], "# config sgd.seeds = ");
        int repeated = 0;
        for (int j = 0; j < i && !repeated; j++) {
            const char *dj = aim_table_meta(&p->sgd[j], "# config sgd.d = ");
            const char *sj = aim_table_meta(&p->sgd[j], "# config sgd.seeds = ");
            repeated = (d && dj ? !strcmp(d, dj) : d == dj) &&
                       (seeds && sj ? !strcmp(seeds, sj) : seeds == sj);
        }
        if (repeated)
            continue;
        fputs(i ? ", " : "SGD at ", f);
        fprintf(f, "d = %s (%s seed%s)", d ? d : "?", seeds ? seeds : "?",
                seeds && !strcmp(seeds, "1") ? "" : "s");
    }
    if (sp->n_ode)
        fputs(sp->n_sgd ? " against the limit ODE" : "the limit ODE (d → ∞)", f);
    if (fclose(f)) {
        free(text);
        return -1;
    }
    p->title = text;
    return bad_name(text) ? -1 : 0;
}

/* Reads and checks every file, then the panels: risk and overlap, the
 * mean, the order parameters, the moments, the --column ones. */
static int figure_plan_make(figure_plan *p, const aim_plot_spec *sp)
{
    /* the key where the curves are not: Omega rises, Psi rises and falls */
    static const struct {
        const char *col, *label, *key;
    } order[] = {{"omega_ss", "Ω_{SS} = Tr(S S^T) / d", "bottom right"},
                 {"psi_ss", "Ψ_{SS} = Tr(S^2) / d", "top right"},
                 {"omega_st", "Ω_{ST} = Tr(S S^{*T}) / d", "bottom right"},
                 {"psi_st", "Ψ_{ST} = Tr(S S^*) / d", "top right"}};
    memset(p, 0, sizeof *p);
    p->sp = sp;
    if (sp->n_ode == 0 && sp->n_sgd == 0) {
        fprintf(stderr, "aimdyn plot: no ODE or SGD file to plot\n");
        return -1;
    }
    const int seeds = (sp->flags & AIM_PLOT_SEEDS) != 0;
    p->ode = calloc((size_t)sp->n_ode + 1, sizeof *p->ode);
    p->sgd = calloc((size_t)sp->n_sgd + 1, sizeof *p->sgd);
    if (seeds) {
        p->seeds = calloc((size_t)sp->n_sgd + 1, sizeof *p->seeds);
        p->seeds_path = calloc((size_t)sp->n_sgd + 1, sizeof *p->seeds_path);
        p->seeds_final = calloc((size_t)sp->n_sgd + 1, sizeof *p->seeds_final);
        p->rows = calloc((size_t)sp->n_sgd + 1, sizeof *p->rows);
        p->nseeds = calloc((size_t)sp->n_sgd + 1, sizeof *p->nseeds);
    }
    if (!p->ode || !p->sgd || (seeds && (!p->seeds || !p->seeds_path || !p->seeds_final || !p->rows ||
                                       !p->nseeds))) {
        fprintf(stderr, "aimdyn plot: out of memory\n");
        return -1;
    }
    if (seeds && sp->n_sgd == 0) {
        fprintf(stderr, "aimdyn plot: --seeds draws the seeds of an SGD run; allowed: with "
                        "--sgd NAME-sgd-dD.tsv (its NAME-sgd-dD-seeds.tsv beside it)\n");
        return -1;
    }
    for (int i = 0; i < sp->n_ode; i++) {
        if (read_kind(sp->ode[i], "--ode", 0, &p->ode[i]))
            return -1;
        if (sp->labels && bad_name(sp->labels[i])) {
            fprintf(stderr, "aimdyn plot: --label %d contains a line break\n", i + 1);
            return -1;
        }
    }
    for (int i = 0; i < sp->n_sgd; i++)
        if (read_kind(sp->sgd[i], "--sgd", 1, &p->sgd[i]) || (seeds && read_seeds(p, i)))
            return -1;
    if (add_panel(p, "risk", "risk R", sp->n_sgd > 1 ? "center right" : "top right",
                  "the risk panel") ||
        add_panel(p, "overlap", "teacher overlap", sp->n_sgd > 1 ? "top left" : "bottom right",
                  "the overlap panel") ||
        (sp->flags & AIM_PLOT_MEAN &&
         add_panel(p, "mean", "student mean m = Tr S / sqrt d", "bottom right", "--mean")))
        return -1;
    for (int k = 0; sp->flags & AIM_PLOT_ORDER && k < 4; k++)
        if (add_panel(p, order[k].col, order[k].label, order[k].key, "--panels order"))
            return -1;
    if (sp->flags & AIM_PLOT_MOMENTS && add_moments(p))
        return -1;
    for (int k = 0; k < sp->n_columns; k++)
        if (add_panel(p, sp->columns[k], NULL, "top left", "--column"))
            return -1;
    if (make_title(p)) {
        fprintf(stderr, "aimdyn plot: out of memory (or a line break in the metadata)\n");
        return -1;
    }
    return 0;
}

int aim_plot_check_inputs(const aim_plot_spec *sp)
{
    figure_plan p;
    const int rc = figure_plan_make(&p, sp);
    figure_plan_free(&p);
    return rc;
}

int aim_plot_figure(const aim_plot_spec *sp, const char *stem, aim_atomic_set *set)
{
    if (bad_name(stem)) {
        fprintf(stderr, "aimdyn plot: unusable file name (line break)\n");
        return -1;
    }
    figure_plan p;
    const int formats = sp->formats ? sp->formats : AIM_PLOT_PNG | AIM_PLOT_SVG;
    int rc = figure_plan_make(&p, sp);
    char *run_vars = NULL;
    size_t len = 0;
    FILE *f = rc == 0 ? open_memstream(&run_vars, &len) : NULL;
    if (f)
        put_data_files(f, &p, 1);
    if (rc == 0 && (!f || fclose(f) != 0)) {
        fprintf(stderr, "aimdyn: out of memory (the gnuplot script of %s)\n", stem);
        rc = -1;
    }
    if (rc == 0)
        rc = draw(stem, figure_script, &p, formats, run_vars, set);
    free(run_vars);
    /* files of the stem that this figure does not replace would show other data */
    if (rc == 0)
        rc = remove_others(set, stem, formats, 1);
    figure_plan_free(&p);
    return rc;
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

/* The data once at the top (every format uses it), then the figure in
 * each format. */
static void scaling_script(FILE *f, const void *ctx, int formats)
{
    const aim_plot_scaling_spec *sp = ctx;
    scaling_rows rows;
    scaling_data(f, sp, &rows);
    for (int k = 0; k < NFORMATS; k++)
        if (formats & format_list[k].bit) {
            put_terminal(f, format_list[k].bit, 800, 600, "enhanced");
            scaling_figure(f, sp, &rows);
        }
}

int aim_plot_scaling(const aim_plot_scaling_spec *sp, const char *stem, aim_atomic_set *set)
{
    if (bad_name(stem) || (sp->title && bad_name(sp->title)) ||
        (sp->fit_key && bad_name(sp->fit_key))) {
        fprintf(stderr, "aimdyn plot: unusable figure name or text (line break)\n");
        return -1;
    }
    if (sp->n_dims + sp->n_pred == 0) {
        fprintf(stderr, "aimdyn plot: no dimension to plot\n");
        return -1;
    }
    return draw(stem, scaling_script, sp, AIM_PLOT_PNG | AIM_PLOT_SVG, NULL, set);
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
    for (int k = 0; k < NFORMATS; k++)
        if (formats & format_list[k].bit) {
            put_terminal(f, format_list[k].bit, width, height, "noenhanced");
            heatmap_figure(f, sp, cols);
        }
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
        fprintf(stderr, "aimdyn plot: empty heatmap\n");
        return -1;
    }
    if (bad_name(stem) || heatmap_bad_text(sp)) {
        fprintf(stderr, "aimdyn plot: unusable figure name or text (line break or '\"')\n");
        return -1;
    }
    return draw(stem, heatmap_script, sp, AIM_PLOT_PNG | AIM_PLOT_SVG, NULL, set);
}
