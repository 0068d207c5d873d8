/* aim_hook: the test hook AIMDYN_TEST_HOOK (see hook.h, docs/testing.md).
 * One rule per process, parsed once: EVENT[:KEY=INTEGER]...[#N]=ACTION.
 * The events are listed here, with the keys each carries, so that a rule
 * naming an event or a key no code fires is refused at startup rather
 * than silently never matching. */
#define _POSIX_C_SOURCE 200809L

#include "hook.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define HOOK_VARIABLE "AIMDYN_TEST_HOOK"
#define HOOK_GRAMMAR                                                                          \
    "EVENT[:KEY=INTEGER]...[#N]=ACTION, ACTION one of SIGNAL@self, SIGNAL@main, "             \
    "SIGNAL@group (SIGNAL: INT, TERM, KILL, HUP or QUIT) or PAUSE@FIFO_PATH; the events and " \
    "their keys are listed in docs/testing.md"

/* Every event some code fires, and its keys (NULL: none). */
static const struct {
    const char *name, *key1, *key2;
} events[] = {
    {"sgd-point", "seed", "k"},          /* validate/compare.c: grid point k of a seed done */
    {"checkpoint-write", NULL, NULL},    /* src/cli/checkpoint.c: written, not yet renamed */
    {"seed-kept", "seed", NULL},         /* src/cli/seeds.c: its file kept, checkpoint not removed */
    {"seed-done", "seed", NULL},         /* src/cli/seeds.c: a seed's file kept */
    {"worker-start", "worker", NULL},    /* src/cli/pool.c: a pool worker started */
    {"worker-forked", "worker", NULL},   /* src/cli/pool.c: the parent started a worker */
    {"pool-reports-ended", NULL, NULL},  /* src/cli/pool.c: the workers' pipe at its end */
    {"sweep-point-done", "point", NULL}, /* src/cli/sweep_points.c: a point's file kept */
    {"figure-draw", NULL, NULL},         /* plots/plot.c: gnuplot started, drawing */
};
#define NEVENTS ((int)(sizeof events / sizeof events[0]))

enum { MAX_KEYS = 2 };
enum target { SELF, MAIN, GROUP, PAUSE };
enum state { UNREAD, OFF, ARMED, MALFORMED };

static struct {
    enum state state;
    int event; /* index in events[] */
    int nkeys;
    char keys[MAX_KEYS][32];
    long values[MAX_KEYS];
    long nth, seen; /* the matching occurrence acted on, those seen */
    enum target target;
    int sig;
    pid_t main_pid; /* the process that read the rule (a worker's parent) */
    char fifo[4096];
} rule;

static const struct {
    const char *name;
    int sig;
} signals[] = {{"INT", SIGINT}, {"TERM", SIGTERM}, {"KILL", SIGKILL},
               {"HUP", SIGHUP}, {"QUIT", SIGQUIT}};

/* A decimal integer at *p (advanced past it), negative only when
 * allowed; 0 when there is none. */
static int read_integer(const char **p, long *out, int allow_negative)
{
    char *end;
    errno = 0;
    if (!(**p >= '0' && **p <= '9') && !(allow_negative && **p == '-'))
        return 0;
    *out = strtol(*p, &end, 10);
    if (errno || end == *p)
        return 0;
    *p = end;
    return 1;
}

/* A name of [a-z_-] at *p, copied into buf. */
static int read_name(const char **p, char *buf, size_t n)
{
    size_t len = strspn(*p, "abcdefghijklmnopqrstuvwxyz_-");
    if (len == 0 || len >= n)
        return 0;
    memcpy(buf, *p, len);
    buf[len] = '\0';
    *p += len;
    return 1;
}

static int event_has_key(int e, const char *key)
{
    return (events[e].key1 && !strcmp(events[e].key1, key)) ||
           (events[e].key2 && !strcmp(events[e].key2, key));
}

static int parse_action(const char *p)
{
    const char *at = strchr(p, '@');
    if (!at)
        return 0;
    const size_t len = (size_t)(at - p);
    const char *where = at + 1;
    if (len == 5 && !strncmp(p, "PAUSE", 5)) {
        rule.target = PAUSE;
        if (!*where || strlen(where) >= sizeof rule.fifo)
            return 0;
        strcpy(rule.fifo, where);
        return 1;
    }
    rule.sig = 0;
    for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++)
        if (strlen(signals[i].name) == len && !strncmp(p, signals[i].name, len))
            rule.sig = signals[i].sig;
    if (!strcmp(where, "self"))
        rule.target = SELF;
    else if (!strcmp(where, "main"))
        rule.target = MAIN;
    else if (!strcmp(where, "group"))
        rule.target = GROUP;
    else
        return 0;
    return rule.sig != 0;
}

/* The rule in text; 0 when it does not follow the grammar. */
static int parse(const char *text)
{
    const char *p = text;
    char name[64];
    if (!read_name(&p, name, sizeof name))
        return 0;
    rule.event = -1;
    for (int e = 0; e < NEVENTS; e++)
        if (!strcmp(events[e].name, name))
            rule.event = e;
    if (rule.event < 0)
        return 0;
    rule.nkeys = 0;
    while (*p == ':') {
        p++;
        if (rule.nkeys == MAX_KEYS ||
            !read_name(&p, rule.keys[rule.nkeys], sizeof rule.keys[0]) ||
            !event_has_key(rule.event, rule.keys[rule.nkeys]) || *p++ != '=' ||
            !read_integer(&p, &rule.values[rule.nkeys], 1))
            return 0;
        /* a key named twice could never match both values */
        if (rule.nkeys == 1 && !strcmp(rule.keys[0], rule.keys[1]))
            return 0;
        rule.nkeys++;
    }
    rule.nth = 1;
    if (*p == '#') {
        p++;
        if (!read_integer(&p, &rule.nth, 0) || rule.nth < 1)
            return 0;
    }
    return *p++ == '=' && parse_action(p);
}

/* The rule of the environment, said when it is malformed. */
static enum state read_rule(void)
{
    const char *text = getenv(HOOK_VARIABLE);
    if (!text || !*text)
        return OFF;
    if (!parse(text)) {
        fprintf(stderr, "aimdyn: %s = '%s': not a test hook rule; allowed: %s\n", HOOK_VARIABLE,
                text, HOOK_GRAMMAR);
        return MALFORMED;
    }
    rule.main_pid = getpid();
    rule.seen = 0;
    return ARMED;
}

int aim_hook_init(void)
{
    if (rule.state == UNREAD)
        rule.state = read_rule();
    return rule.state == MALFORMED ? -1 : 0;
}

/* Blocks until the test writes a byte into the FIFO, having said so by
 * creating FIFO.PID. The FIFO is opened for reading and for writing
 * before that file appears, so a byte written once it exists stays in
 * the FIFO until read, whichever paused process opened it first. */
static void pause_on_fifo(void)
{
    char told[4200];
    snprintf(told, sizeof told, "%s.%ld", rule.fifo, (long)getpid());
    struct stat st;
    /* non-blocking: the reading end of a FIFO opens at once, writer or not */
    const int in = open(rule.fifo, O_RDONLY | O_NONBLOCK);
    const int fifo = in >= 0 && fstat(in, &st) == 0 && S_ISFIFO(st.st_mode);
    const int keep = fifo ? open(rule.fifo, O_WRONLY) : -1;
    const int flags = keep >= 0 ? fcntl(in, F_GETFL) : -1;
    const int said = flags >= 0 && fcntl(in, F_SETFL, flags & ~O_NONBLOCK) == 0
                         ? open(told, O_WRONLY | O_CREAT | O_EXCL, 0644)
                         : -1;
    if (said < 0) {
        fprintf(stderr, "aimdyn: %s: cannot pause on '%s' (announced by creating '%s'): %s\n",
                HOOK_VARIABLE, rule.fifo, told,
                in >= 0 && !fifo ? "not a FIFO" : strerror(errno));
        _exit(2); /* the test cannot reach its moment: a run-time failure, said */
    }
    close(said);
    char byte;
    while (read(in, &byte, 1) < 0 && errno == EINTR)
        ;
    close(keep);
    close(in);
}

void aim_hook_event(const char *name, const char *key1, long value1, const char *key2,
                    long value2)
{
    if (rule.state == UNREAD)
        aim_hook_init();
    if (rule.state != ARMED)
        return;
    if (strcmp(name, events[rule.event].name))
        return;
    for (int k = 0; k < rule.nkeys; k++) {
        const int first = key1 && !strcmp(rule.keys[k], key1);
        const int second = key2 && !strcmp(rule.keys[k], key2);
        if (!(first && value1 == rule.values[k]) && !(second && value2 == rule.values[k]))
            return;
    }
    if (++rule.seen != rule.nth)
        return;
    switch (rule.target) {
    case PAUSE:
        pause_on_fifo();
        break;
    case SELF:
        kill(getpid(), rule.sig);
        break;
    case MAIN:
        kill(rule.main_pid, rule.sig);
        break;
    case GROUP:
        kill(0, rule.sig);
        break;
    }
}
