/* aim_plot: the machinery every figure is drawn with: gnuplot found on
 * PATH and run as a separate program (no shell), the generated script on
 * its standard input; the script kept beside the figure (STEM.gp), to be
 * restyled and rerun; the figure's files (PNG, SVG, PDF) checked complete
 * and added to an atomic set; gnuplot strings, file names and terminals.
 * The kinds of figure: plot_figure.c (plot, compare), plot_scaling.c,
 * plot_heatmap.c (sweep). */
#define _POSIX_C_SOURCE 200809L

#include "plot_internal.h"

#include "guard.h"
#include "hook.h"

#include <errno.h>
#include <fcntl.h>
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

void aim_plot_put_quoted(FILE *f, const char *s)
{
    put_quoted_after(f, "", s);
}

void aim_plot_put_path(FILE *f, const char *path)
{
    put_quoted_after(f, path[0] == '/' ? "" : "./", path);
}

int aim_plot_bad_name(const char *s)
{
    return strchr(s, '\n') != NULL || strchr(s, '\r') != NULL;
}

/* The figure formats: the flag, the file extension. */
const aim_plot_format aim_plot_formats[] = {
    {AIM_PLOT_PNG, "png"}, {AIM_PLOT_SVG, "svg"}, {AIM_PLOT_PDF, "pdf"}};

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
static char *script_text(const char *stem, aim_plot_script_fn *put_script, const void *ctx,
                         int formats, size_t *len)
{
    char *text = NULL;
    FILE *f = open_memstream(&text, len);
    if (!f) {
        fprintf(stderr, "aimdyn: out of memory\n");
        return NULL;
    }
    fputs("# generated by aimdyn: the figure", f);
    for (int k = 0; k < AIM_PLOT_NFORMATS; k++)
        if (formats & aim_plot_formats[k].bit)
            fprintf(f, " %s.%s", stem, aim_plot_formats[k].ext);
    fprintf(f, "\n# Restyle it and redraw with `gnuplot %s.gp`, run in the directory aimdyn\n"
               "# ran in (the file names are relative to it); out_png, out_svg and out_pdf\n"
               "# may be set before (gnuplot -e \"out_png='other.png'\" %s.gp).\n",
            stem, stem);
    for (int k = 0; k < AIM_PLOT_NFORMATS; k++)
        if (formats & aim_plot_formats[k].bit) {
            fprintf(f, "if (!exists(\"out_%s\")) out_%s = ", aim_plot_formats[k].ext,
                    aim_plot_formats[k].ext);
            char *out = stem_file(stem, aim_plot_formats[k].ext);
            aim_plot_put_path(f, out ? out : "");
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

int aim_plot_draw(const char *stem, aim_plot_script_fn *put_script, const void *ctx,
                  int formats, const char *run_vars, aim_atomic_set *set)
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
    aim_atomic_file *files[AIM_PLOT_NFORMATS + 1] = {NULL};
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
    for (int k = 0; k < AIM_PLOT_NFORMATS; k++) {
        if (!(formats & aim_plot_formats[k].bit))
            continue;
        char *final = stem_file(stem, aim_plot_formats[k].ext);
        files[k] = final ? aim_atomic_create(final) : NULL;
        free(final);
        if (!files[k])
            break;
        fprintf(f, "out_%s = ", aim_plot_formats[k].ext);
        aim_plot_put_path(f, aim_atomic_temp(files[k]));
        fputc('\n', f);
    }
    fwrite(text, 1, len, f);
    if (fclose(f) != 0) {
        fprintf(stderr, "aimdyn: out of memory\n");
        goto out;
    }
    for (int k = 0; k < AIM_PLOT_NFORMATS; k++)
        if (formats & aim_plot_formats[k].bit && !files[k])
            goto out;
    char *script = stem_file(stem, "gp");
    files[AIM_PLOT_NFORMATS] = script ? aim_atomic_create(script) : NULL;
    free(script);
    if (!files[AIM_PLOT_NFORMATS] || aim_atomic_write(files[AIM_PLOT_NFORMATS], text, len)) {
        if (files[AIM_PLOT_NFORMATS])
            fprintf(stderr, "aimdyn: cannot write '%s': %s\n",
                    aim_atomic_final(files[AIM_PLOT_NFORMATS]), strerror(errno));
        goto out;
    }
    if (run_gnuplot(exe, run, run_len))
        goto out;
    for (int k = 0; k < AIM_PLOT_NFORMATS; k++)
        if (files[k] && !figure_complete(files[k], aim_plot_formats[k].bit))
            goto out;
    /* each add takes its file, also when it fails */
    rc = 0;
    for (int k = 0; k <= AIM_PLOT_NFORMATS; k++)
        if (files[k]) {
            if (rc == 0)
                rc = aim_atomic_set_add(set, files[k]);
            else
                aim_atomic_discard(files[k]);
            files[k] = NULL;
        }
out:
    for (int k = 0; k <= AIM_PLOT_NFORMATS; k++)
        aim_atomic_discard(files[k]);
    free(exe);
    free(text);
    free(run);
    return rc;
}

int aim_plot_remove_others(aim_atomic_set *set, const char *stem, int keep, int keep_script)
{
    int rc = 0;
    for (int k = 0; rc == 0 && k <= AIM_PLOT_NFORMATS; k++) {
        if (k < AIM_PLOT_NFORMATS ? keep & aim_plot_formats[k].bit : keep_script)
            continue;
        char *path = stem_file(stem, k < AIM_PLOT_NFORMATS ? aim_plot_formats[k].ext : "gp");
        rc = path ? aim_atomic_set_remove(set, path) : -1;
        free(path);
    }
    return rc;
}

int aim_plot_stale(aim_atomic_set *set, const char *stem)
{
    return aim_plot_remove_others(set, stem, 0, 0);
}

void aim_plot_put_terminal(FILE *f, int format, int width, int height, const char *text)
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
