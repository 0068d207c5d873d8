/* aim_progress: a campaign's progress on stderr, and --quiet (see
 * progress.h). The live block is drawn with two ANSI sequences that every
 * terminal emulator in use knows (cursor up, clear to the end of the
 * screen): a curses library would own the whole screen, which a command
 * that also prints messages and results must not give up. */
#define _DEFAULT_SOURCE /* TIOCGWINSZ */
#include "progress.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

enum { LINE_LEN = 256, RELAY_LEN = 4096 };

/* at most four redraws a second: a faster block only flickers */
static const double redraw_seconds = 0.25;

typedef struct {
    int busy;       /* has a task */
    int task, done, total;
    double work;    /* units of its task done, at the last report */
    double seconds; /* the task's time at the last report */
    double at;      /* when that report arrived */
    double took;    /* a stage's: when it took the task */
} worker_state;

struct aim_progress {
    char cmd[32], label[96], unit[24], work_unit[24];
    int of, ntasks, workers, finished;
    int tty, drawn; /* a terminal; the lines of the block now on it */
    double work_per_task;
    double work_finished; /* the finished tasks' units done (less than
                             work_per_task each when a seed blew up) */
    double start, last_draw, last_plain;
    /* a stage of one run (aim_progress_stage_begin): shown once it is
     * long (announced), its threads' lines named so, no rate */
    int stage, announced;
    worker_state *w;
    char relay[RELAY_LEN]; /* a worker's message until its line is whole */
    size_t nrelay;
};

static int quiet;
static aim_progress *live; /* the campaign whose block is on the terminal */
/* AIMDYN_TEST_PROGRESS=every: every stage is long, a line per report;
 * never: every stage is short (nothing shown), whatever the clock says */
static int every, never;

void aim_progress_set_quiet(int q) { quiet = q; }

int aim_progress_quiet(void) { return quiet; }

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void format_duration(char *buf, size_t n, double s)
{
    if (!isfinite(s) || s < 0)
        snprintf(buf, n, "--");
    else if (s < 10)
        snprintf(buf, n, "%.1fs", s);
    else if (s < 60)
        snprintf(buf, n, "%.0fs", s);
    else if (s < 3600)
        snprintf(buf, n, "%dm%02ds", (int)(s / 60), (int)fmod(s, 60));
    else
        snprintf(buf, n, "%dh%02dm", (int)(s / 3600), (int)fmod(s / 60, 60));
}

/* 31234.5 -> "3.1e4": two digits are all a rate that varies says */
static void format_rate(char *buf, size_t n, double r)
{
    if (!isfinite(r) || r <= 0)
        snprintf(buf, n, "--");
    else if (r < 1000)
        snprintf(buf, n, "%.0f", r);
    else {
        int e = (int)floor(log10(r));
        double m = r / pow(10, e);
        if (m >= 9.95) { /* rounds up to the next power */
            m /= 10;
            e++;
        }
        snprintf(buf, n, "%.1fe%d", m, e);
    }
}

/* The units the running tasks have done. */
static double work_running(const aim_progress *p)
{
    double done = 0;
    for (int k = 0; k < p->workers; k++)
        if (p->w[k].busy)
            done += p->w[k].work;
    return done;
}

/* "aimdyn sgd: d = 400: 3/8 seeds, 41 % of steps, 6.2e4 steps/s, ETA 12m05s";
 * at the end the wall time instead of the ETA. A stage's: "aimdyn ode:
 * matrix limit process (D = 400): 3/8 replicas, 41 % of tau, ETA 12s"
 * (its task count left out when it has one), at the end the share of the
 * work its tasks did and "done in 49s" */
static void campaign_line(const aim_progress *p, char *buf, size_t n, int final)
{
    const double t = now() - p->start, total = p->work_per_task * p->ntasks;
    const double running = p->work_unit[0] ? work_running(p) : 0;
    /* a finished task leaves no work, done or not (a seed that blew up),
     * but only the work done gives the rate */
    const double done = p->finished * p->work_per_task + running;
    const double worked = p->work_unit[0] ? p->work_finished + running : done;
    const double rate = t > 0 ? worked / t : 0;
    const double shown = p->stage && final ? worked : done;
    char time[32], rs[32];
    format_duration(time, sizeof time, final ? t : rate > 0 ? (total - done) / rate : NAN);
    int len = snprintf(buf, n, "aimdyn %s: %s%s", p->cmd, p->label, p->label[0] ? ": " : "");
    if (len > 0 && (size_t)len < n && !(p->stage && p->ntasks == 1))
        len += snprintf(buf + len, n - (size_t)len, "%d/%d %ss%s", p->finished, p->ntasks,
                        p->unit, p->work_unit[0] ? ", " : "");
    if (p->work_unit[0] && len > 0 && (size_t)len < n)
        len += snprintf(buf + len, n - (size_t)len, "%.0f %% of %s",
                        total > 0 ? 100 * fmin(shown / total, 1) : 100.0, p->work_unit);
    if (p->work_unit[0] && !p->stage && len > 0 && (size_t)len < n) {
        format_rate(rs, sizeof rs, rate);
        len += snprintf(buf + len, n - (size_t)len, ", %s %s/s", rs, p->work_unit);
    }
    if (len > 0 && (size_t)len < n)
        snprintf(buf + len, n - (size_t)len,
                 !final ? ", ETA %s" : p->stage ? ", done in %s" : ", %s", time);
}

/* "  worker 2: seed 5/8, grid 17/61, 3.1e4 steps/s, 2m10s"; a stage's
 * "  thread 2: replica 3/8, grid 17/61, 2.1s" */
static void worker_line(const aim_progress *p, int k, double t, char *buf, size_t n)
{
    const worker_state *s = &p->w[k];
    const char *who = p->stage ? "thread" : "worker";
    if (!s->busy) {
        snprintf(buf, n, "  %s %d: %s", who, k + 1, p->finished == p->ntasks ? "done" : "idle");
        return;
    }
    char time[32], rs[32];
    format_duration(time, sizeof time, s->seconds + (t - s->at));
    int len = snprintf(buf, n, "  %s %d: %s %d/%d", who, k + 1, p->unit, s->task + 1, p->of);
    if (p->stage && s->total > 0 && len > 0 && (size_t)len < n) {
        len += snprintf(buf + len, n - (size_t)len, ", grid %d/%d", s->done, s->total);
    } else if (p->work_unit[0] && s->total > 0 && len > 0 && (size_t)len < n) {
        format_rate(rs, sizeof rs, s->seconds > 0 ? s->work / s->seconds : 0);
        len += snprintf(buf + len, n - (size_t)len, ", grid %d/%d, %s %s/s", s->done, s->total,
                        rs, p->work_unit);
    }
    if (len > 0 && (size_t)len < n)
        snprintf(buf + len, n - (size_t)len, ", %s", time);
}

/* The terminal's size (80 x 24 when it does not say): a line wider than
 * the terminal wraps, and a block taller than it scrolls; the cursor-up
 * of the next redraw would then miss lines. */
static void terminal_size(int *columns, int *rows)
{
    struct winsize ws;
    const int known = ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0;
    *columns = known && ws.ws_col > 1 ? ws.ws_col : 80;
    *rows = known && ws.ws_row > 3 ? ws.ws_row : 24;
}

static void clear_block(aim_progress *p)
{
    if (p->drawn)
        fprintf(stderr, "\033[%dA\033[J", p->drawn);
    p->drawn = 0;
}

static void draw_block(aim_progress *p)
{
    const double t = now();
    int width, rows;
    terminal_size(&width, &rows);
    width--;
    /* the campaign line, then as many workers as fit under it with a line
     * for the rest and one for the cursor (a stage on one thread: its
     * line says it all) */
    const int workers = p->stage && p->workers == 1 ? 0 : p->workers;
    const int shown = workers <= rows - 2 ? workers : rows - 3;
    char line[LINE_LEN];
    if (p->drawn)
        fprintf(stderr, "\033[%dA", p->drawn);
    campaign_line(p, line, sizeof line, 0);
    fprintf(stderr, "\r\033[K%.*s\n", width, line);
    for (int k = 0; k < shown; k++) {
        worker_line(p, k, t, line, sizeof line);
        fprintf(stderr, "\r\033[K%.*s\n", width, line);
    }
    if (shown < workers)
        fprintf(stderr, "\r\033[K  (and %d more %s)\n", workers - shown,
                p->stage ? "threads" : "workers");
    fflush(stderr);
    p->drawn = 1 + shown + (shown < workers);
    p->last_draw = t;
    live = p;
}

/* Whether stage p is long, said once when it first is: after
 * AIM_PROGRESS_JUDGE_SECONDS the work done so far says that the whole
 * takes AIM_PROGRESS_LONG_SECONDS or more (the first second of a run
 * says little: a hierarchy's first grid point also builds its engine),
 * or AIM_PROGRESS_LONG_SECONDS have passed. Not a stage: 1. */
static int long_enough(aim_progress *p)
{
    if (!p->stage || p->announced)
        return 1;
    if (never)
        return 0;
    const double t = now() - p->start, total = p->work_per_task * p->ntasks;
    const double done = p->finished * p->work_per_task + work_running(p);
    if (!every && t < AIM_PROGRESS_LONG_SECONDS &&
        (t < AIM_PROGRESS_JUDGE_SECONDS || !(done > 0) ||
         t * total / done < AIM_PROGRESS_LONG_SECONDS))
        return 0;
    p->announced = 1;
    char time[32], took[32];
    format_duration(time, sizeof time, done > 0 ? t * (total - done) / done : NAN);
    format_duration(took, sizeof took, t);
    fprintf(stderr, "aimdyn %s: %s%sa long run: ETA %s (%.0f %% of %s in %s)", p->cmd, p->label,
            p->label[0] ? ": " : "", time, total > 0 ? 100 * fmin(done / total, 1) : 0,
            p->work_unit, took);
    if (!p->tty)
        fprintf(stderr, "; a line at most every %d s until it ends", AIM_PROGRESS_PLAIN_SECONDS);
    fputc('\n', stderr);
    p->last_plain = now();
    return 1;
}

/* A redraw, or off a terminal a plain line, when one is due (a stage's
 * once it is long). */
static void show(aim_progress *p)
{
    if (!long_enough(p))
        return;
    const double t = now();
    if (p->tty && t - p->last_draw >= redraw_seconds)
        draw_block(p);
    if (!p->tty && (t - p->last_plain >= AIM_PROGRESS_PLAIN_SECONDS || (p->stage && every))) {
        char line[LINE_LEN];
        campaign_line(p, line, sizeof line, 0);
        fprintf(stderr, "%s\n", line);
        p->last_plain = t;
    }
}

static void message(const char *fmt, va_list ap)
{
    aim_progress *p = live && live->drawn ? live : NULL;
    if (p)
        clear_block(p);
    vfprintf(stderr, fmt, ap);
    if (p)
        draw_block(p);
}

void aim_progress_note(const char *fmt, ...)
{
    if (quiet)
        return;
    va_list ap;
    va_start(ap, fmt);
    message(fmt, ap);
    va_end(ap);
}

void aim_progress_library_note(void *ctx, const char *text)
{
    (void)ctx;
    aim_progress_note("aimdyn: %s\n", text);
}

void aim_progress_warning(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    message(fmt, ap);
    va_end(ap);
}

aim_progress *aim_progress_begin(const char *cmd, const char *label, const char *unit, int of,
                                 int ntasks, int workers, double work_per_task,
                                 const char *work_unit)
{
    if (quiet || ntasks <= 0 || workers <= 0)
        return NULL;
    aim_progress *p = calloc(1, sizeof *p);
    if (!p || !(p->w = calloc((size_t)workers, sizeof *p->w))) {
        free(p);
        return NULL; /* shown nothing; the campaign itself does not depend on it */
    }
    snprintf(p->cmd, sizeof p->cmd, "%s", cmd);
    snprintf(p->label, sizeof p->label, "%s", label ? label : "");
    snprintf(p->unit, sizeof p->unit, "%s", unit);
    snprintf(p->work_unit, sizeof p->work_unit, "%s", work_unit ? work_unit : "");
    p->of = of;
    p->ntasks = ntasks;
    p->workers = workers;
    p->work_per_task = work_unit ? work_per_task : 1;
    p->tty = isatty(STDERR_FILENO);
    p->start = p->last_plain = now();
    p->last_draw = -1e300;
    return p;
}

int aim_progress_live(const aim_progress *p) { return p && p->tty; }

void aim_progress_update(aim_progress *p, int w, int task, int done, int total, double work,
                         double seconds)
{
    if (!p || w < 0 || w >= p->workers)
        return;
    p->w[w] = (worker_state){1, task, done, total, work, seconds, now(), 0};
    show(p);
}

/* Worker w's task has ended: counted, its work done kept (none when it
 * ended before its first report: w's last work was its previous task's). */
static void task_ended(aim_progress *p, int w)
{
    p->finished++;
    if (w >= 0 && w < p->workers && p->w[w].busy) {
        p->work_finished += p->w[w].work;
        p->w[w].busy = 0;
    }
}

void aim_progress_finished(aim_progress *p, int w, int task, double seconds)
{
    (void)task;
    (void)seconds;
    if (!p)
        return;
    task_ended(p, w);
    show(p);
}

void aim_progress_tick(aim_progress *p)
{
    if (p && p->tty && (!p->stage || p->announced) && now() - p->last_draw >= redraw_seconds)
        draw_block(p);
}

/* Writes the whole lines of p's relay buffer (all of it when flush). */
static void relay_lines(aim_progress *p, int flush)
{
    size_t n = p->nrelay;
    while (!flush && n > 0 && p->relay[n - 1] != '\n')
        n--;
    if (n == 0)
        return;
    const int redraw = p->drawn;
    clear_block(p);
    fwrite(p->relay, 1, n, stderr);
    if (p->relay[n - 1] != '\n') /* a piece: what follows starts a line */
        fputc('\n', stderr);
    memmove(p->relay, p->relay + n, p->nrelay - n);
    p->nrelay -= n;
    if (redraw)
        draw_block(p);
}

void aim_progress_relay(aim_progress *p, const char *text, size_t n)
{
    if (!p) {
        fwrite(text, 1, n, stderr);
        return;
    }
    while (n > 0) {
        size_t take = RELAY_LEN - p->nrelay < n ? RELAY_LEN - p->nrelay : n;
        memcpy(p->relay + p->nrelay, text, take);
        p->nrelay += take;
        text += take;
        n -= take;
        /* a line longer than the buffer goes out in pieces */
        relay_lines(p, p->nrelay == RELAY_LEN);
    }
}

void aim_progress_finish(aim_progress *p)
{
    if (!p || (p->stage && !p->announced)) /* a short stage shows nothing */
        return;
    clear_block(p);
    relay_lines(p, 1);
    char line[LINE_LEN];
    campaign_line(p, line, sizeof line, 1);
    fprintf(stderr, "%s\n", line);
    fflush(stderr);
    if (live == p)
        live = NULL;
}

void aim_progress_free(aim_progress *p)
{
    if (!p)
        return;
    if (live == p)
        live = NULL;
    free(p->w);
    free(p);
}

int aim_progress_init(void)
{
    const char *v = getenv("AIMDYN_TEST_PROGRESS");
    every = v && !strcmp(v, "every");
    never = v && !strcmp(v, "never");
    if (!v || !*v || every || never)
        return 0;
    fprintf(stderr, "aimdyn: AIMDYN_TEST_PROGRESS=%s: not allowed; allowed: every (every "
                    "stage of a run shown as long, a line at each report: docs/testing.md), "
                    "never (every stage short, nothing shown), or unset\n",
            v);
    return -1;
}

void *aim_progress_stage_begin(void *ctx, const char *label, const char *unit, int tasks,
                               int threads, double work_per_task, const char *work_unit)
{
    aim_progress *p = aim_progress_begin(ctx, label, unit, tasks, tasks, threads, work_per_task,
                                         work_unit);
    if (p)
        p->stage = 1;
    return p;
}

void aim_progress_stage_update(void *stage, int thread, int task, int done, int total,
                               double work)
{
    aim_progress *p = stage;
    if (!p || thread < 0 || thread >= p->workers)
        return;
    worker_state *s = &p->w[thread];
    const double t = now();
    const double took = s->busy && s->task == task ? s->took : t;
    *s = (worker_state){1, task, done, total, work, t - took, t, took};
    show(p);
}

void aim_progress_stage_finished(void *stage, int thread, int task)
{
    aim_progress *p = stage;
    (void)task;
    if (!p)
        return;
    task_ended(p, thread);
    /* redrawn on a terminal; off one the task's last report was its line */
    if (p->tty)
        show(p);
}

void aim_progress_stage_end(void *stage)
{
    aim_progress_finish(stage);
    aim_progress_free(stage);
}
