/* aim_config: reading INI files and --set overrides through the key
 * table of config_keys.c (the metadata writer is config_write.c; the
 * check of the result as a whole, which needs the students' starts, is
 * src/students/config_check.c). */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_matrix.h>
#include <ini.h>

#include "config_keys.h"
#include "config_text.h"
#include "lines.h"

/* ------------------------------------------------------------------ */
/* Assignment (shared by files and --set)                              */
/* ------------------------------------------------------------------ */

/* Applies section.key = value. where: message prefix (without ": ").
 * On error fills msg (size n) and returns -1; on success returns the key
 * index. */
static int assign(aim_config *cfg, const char *section, const char *key,
                  const char *value, const char *where, char *msg, size_t n)
{
    msg[0] = '\0';
    if (!aim_config_known_section(section, strlen(section))) {
        aim_config_append(msg, n, "%s: [%s] %s = ", where, section, key);
        aim_config_append_value(msg, n, value);
        aim_config_append(msg, n, ": unknown section \"%s\"; allowed sections:", section);
        aim_config_append_sections(msg, n);
        return -1;
    }
    int i = aim_config_find_key(section, key);
    if (i < 0) {
        aim_config_append(msg, n, "%s: %s.%s = ", where, section, key);
        aim_config_append_value(msg, n, value);
        aim_config_append(msg, n, ": unknown key \"%s\" in [%s]; allowed keys:", key, section);
        int first = 1;
        for (int j = 0; j < aim_config_nkeys; j++) {
            if (strcmp(aim_config_keys[j].section, section) == 0) {
                aim_config_append(msg, n, "%s %s", first ? "" : ",", aim_config_keys[j].key);
                first = 0;
            }
        }
        return -1;
    }
    char why[AIM_CONFIG_WHY];
    why[0] = '\0';
    if (aim_config_keys[i].set(&aim_config_keys[i], cfg, value, why, sizeof why) != 0) {
        aim_config_append(msg, n, "%s: %s.%s = ", where, section, key);
        aim_config_append_value(msg, n, value);
        aim_config_append(msg, n, ": %s; allowed: %s", why, aim_config_keys[i].allowed);
        return -1;
    }
    return i;
}

static void set_error(aim_config_error *err, const char *msg)
{
    if (err)
        snprintf(err->message, sizeof err->message, "%s", msg);
}

__attribute__((format(printf, 2, 3))) static void
errorf(aim_config_error *err, const char *fmt, ...)
{
    if (!err)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
}

/* ------------------------------------------------------------------ */
/* Defaults                                                            */
/* ------------------------------------------------------------------ */

void aim_config_defaults(aim_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    for (int i = 0; i < aim_config_nkeys; i++) {
        char why[AIM_CONFIG_WHY];
        if (aim_config_keys[i].set(&aim_config_keys[i], cfg, aim_config_keys[i].def, why,
                                   sizeof why) != 0) {
            fprintf(stderr, "aimdyn: bad built-in default %s.%s = \"%s\": %s\n",
                    aim_config_keys[i].section, aim_config_keys[i].key, aim_config_keys[i].def,
                    why);
            abort();
        }
        cfg->key_line[i] = 0;
    }
    char why[AIM_CONFIG_WHY];
    if (aim_config_covariance_parse(cfg->covariance, cfg->tokens, cfg->cov, NULL, 0, why,
                         sizeof why) != 0)
        abort();
    snprintf(cfg->source, sizeof cfg->source, "built-in default");
}

aim_config *aim_config_new(void)
{
    aim_config *cfg = malloc(sizeof *cfg);
    if (cfg)
        aim_config_defaults(cfg);
    return cfg;
}

void aim_config_free(aim_config *cfg)
{
    free(cfg);
}

/* ------------------------------------------------------------------ */
/* Files                                                               */
/* ------------------------------------------------------------------ */

typedef struct {
    aim_config *cfg;
    const char *path;
    aim_lines *in;
    const char *text; /* the current line, for messages */
    size_t len, left; /* its length, and how much inih has not had yet */
    bool newline;     /* its line break is still to be handed over */
    int line;         /* its number */
    int cov_line;     /* line of the last model.covariance, 0 if none */
    bool failed;
    char message[sizeof(((aim_config_error *)0)->message)];
} parse_ctx;

/* Debian's libinih is built without INI_CALL_HANDLER_ON_NEW_SECTION: a
 * section header reaches the handler only through the keys under it, so
 * an unknown section without keys would pass unseen. The reader sees
 * every line and checks the headers itself, finding the name as inih
 * does: after '[' up to ']', unless an inline comment (" ;") comes
 * first (then inih reports the line as a syntax error). */
static int check_section_header(parse_ctx *ctx, const char *line)
{
    const char *s = line;
    if (ctx->line == 1 && !strncmp(s, "\xEF\xBB\xBF", 3)) /* a UTF-8 BOM, as inih */
        s += 3;
    while (aim_config_is_space(*s))
        s++;
    if (*s != '[')
        return 0;
    const char *name = s + 1, *end = name;
    for (bool was_space = false; *end && *end != ']' && !(was_space && *end == ';'); end++)
        was_space = aim_config_is_space(*end);
    if (*end != ']')
        return 0;
    const size_t len = (size_t)(end - name);
    if (aim_config_known_section(name, len))
        return 0;
    ctx->message[0] = '\0';
    aim_config_append(ctx->message, sizeof ctx->message,
                      "%s:%d: [%.*s]: unknown section; allowed "
                      "sections:",
                      ctx->path, ctx->line,
                      (int)(len > AIM_CONFIG_VALUE_SHOWN ? AIM_CONFIG_VALUE_SHOWN : len), name);
    aim_config_append_sections(ctx->message, sizeof ctx->message);
    ctx->failed = true;
    return -1;
}

/* inih's reader: the lines of ctx->in (aim_lines: bounded, NUL bytes
 * refused), each with its line break, in pieces of at most num - 1
 * bytes. The lines are at most ini_max_line - 3 bytes (aim_config_load),
 * so inih never cuts one. */
static char *reader(char *str, int num, void *stream)
{
    parse_ctx *ctx = stream;
    if (ctx->failed || num < 2)
        return NULL;
    if (ctx->left == 0 && !ctx->newline) {
        char *line;
        size_t len;
        int r = aim_lines_next(ctx->in, &line, &len);
        if (r < 0) {
            snprintf(ctx->message, sizeof ctx->message, "%s", aim_lines_error(ctx->in));
            ctx->failed = true;
        }
        if (r <= 0)
            return NULL;
        ctx->line = (int)aim_lines_number(ctx->in);
        ctx->text = line;
        ctx->len = ctx->left = len;
        ctx->newline = true;
        if (check_section_header(ctx, line))
            return NULL;
    }
    size_t n = ctx->left < (size_t)num - 1 ? ctx->left : (size_t)num - 1;
    memcpy(str, ctx->text + (ctx->len - ctx->left), n);
    ctx->left -= n;
    if (ctx->left == 0 && n < (size_t)num - 1) {
        str[n++] = '\n';
        ctx->newline = false;
    }
    str[n] = '\0';
    return str;
}

static int handler(void *user, const char *section, const char *name,
                   const char *value)
{
    parse_ctx *ctx = user;
    if (ctx->failed)
        return 0;
    char where[600];
    snprintf(where, sizeof where, "%s:%d", ctx->path, ctx->line);

    char sec[64], key[64], val[sizeof(((aim_config *)0)->covariance) + 64];
    const char *dot = strchr(name, '.');
    if (section[0] == '\0') {
        /* top-level "section.key = value" (written metadata) */
        if (!dot || dot == name || dot[1] == '\0' ||
            (size_t)(dot - name) >= sizeof sec) {
            snprintf(ctx->message, sizeof ctx->message,
                     "%s: %s = \"%.100s\": key outside any section; allowed: "
                     "[section] then key = value, or section.key = value",
                     where, name, value);
            ctx->failed = true;
            return 0;
        }
        memcpy(sec, name, (size_t)(dot - name));
        sec[dot - name] = '\0';
        snprintf(key, sizeof key, "%s", dot + 1);
    } else {
        snprintf(sec, sizeof sec, "%s", section);
        snprintf(key, sizeof key, "%s", name);
    }
    if (aim_config_clean_value(val, sizeof val, value, strlen(value)) != 0) {
        snprintf(ctx->message, sizeof ctx->message,
                 "%s: %s.%s: value too long (%zu characters)", where, sec, key,
                 strlen(value));
        ctx->failed = true;
        return 0;
    }
    int i = assign(ctx->cfg, sec, key, val, where, ctx->message,
                   sizeof ctx->message);
    if (i < 0) {
        ctx->failed = true;
        return 0;
    }
    ctx->cfg->key_line[i] = ctx->line;
    if (strcmp(aim_config_keys[i].key, "covariance") == 0 &&
        strcmp(aim_config_keys[i].section, "model") == 0)
        ctx->cov_line = ctx->line;
    return 1;
}

int aim_config_load(aim_config *cfg, const char *path, aim_config_error *err)
{
    /* inih's line buffer (ini_max_line) holds a line, its "\r\n" and the
     * NUL; a configuration is a few dozen short lines, so 1 MiB is ample */
    enum { MAX_LINE = 1 << 16 };
    static const aim_lines_limits limits = {1 << 20, MAX_LINE - 3, 0,
                                            "an INI configuration file"};
    if (err)
        err->message[0] = '\0';
    if (!path)
        return 0;
    if (strlen(path) >= sizeof cfg->source) {
        errorf(err, "%.200s...: path too long", path);
        return -1;
    }
    char why[sizeof err->message];
    /* "-": standard input, as for most Unix tools */
    aim_lines *in = strcmp(path, "-") ? aim_lines_open(path, &limits, why, sizeof why)
                                      : aim_lines_open_stdin(&limits, why, sizeof why);
    if (!in) {
        set_error(err, why);
        return -1;
    }

    const char *shown = strcmp(path, "-") ? path : "standard input";
    aim_config work = *cfg;
    for (int i = 0; i < aim_config_nkeys; i++)
        if (work.key_line[i] > 0)
            work.key_line[i] = -2; /* lines of an earlier file */
    snprintf(work.source, sizeof work.source, "%s", shown);

    parse_ctx ctx = {.cfg = &work, .path = shown, .in = in};

    /* Debian's inih exposes its options as globals: long lines (explicit
     * covariances), no multi-line continuation, stop at the first error.
     * Saved and restored around the call. */
    bool s_stack = ini_use_stack, s_realloc = ini_allow_realloc,
         s_multi = ini_allow_multiline, s_stop = ini_stop_on_first_error,
         s_novalue = ini_allow_no_value;
    int s_max = ini_max_line, s_init = ini_initial_alloc;
    ini_use_stack = false;
    ini_allow_realloc = true;
    ini_initial_alloc = 512;
    ini_max_line = MAX_LINE;
    ini_allow_multiline = false;
    ini_stop_on_first_error = true;
    ini_allow_no_value = false;
    int rc = ini_parse_stream(reader, &ctx, handler, &ctx);
    ini_use_stack = s_stack;
    ini_allow_realloc = s_realloc;
    ini_initial_alloc = s_init;
    ini_max_line = s_max;
    ini_allow_multiline = s_multi;
    ini_stop_on_first_error = s_stop;
    ini_allow_no_value = s_novalue;

    if (ctx.failed) {
        set_error(err, ctx.message);
    } else if (rc == -2) {
        errorf(err, "%s: out of memory while reading", shown);
    } else if (rc != 0) {
        /* inih stops at the first error, so the line last read is it */
        why[0] = '\0';
        aim_config_append(why, sizeof why, "%s:%d: ", shown, ctx.line);
        aim_config_append_value(why, sizeof why, ctx.text);
        aim_config_append(why, sizeof why, ": syntax error; allowed: [section], key = value, or a "
                                "comment (; or #)");
        set_error(err, why);
    }
    aim_lines_close(in);
    if (ctx.failed || rc != 0)
        return -1;
    /* A covariance given in this file must fit the tokens after it. */
    if (ctx.cov_line > 0) {
        char why[AIM_CONFIG_WHY];
        if (aim_config_covariance_parse(work.covariance, work.tokens, work.cov, NULL, 0,
                             why, sizeof why) != 0) {
            int i = aim_config_key_index("model", "covariance");
            char msg[sizeof err->message];
            msg[0] = '\0';
            aim_config_append(msg, sizeof msg, "%s:%d: model.covariance = ", shown,
                   ctx.cov_line);
            aim_config_append_value(msg, sizeof msg, work.covariance);
            aim_config_append(msg, sizeof msg, ": %s; allowed: %s", why,
                              aim_config_keys[i].allowed);
            set_error(err, msg);
            return -1;
        }
    }
    *cfg = work;
    return 0;
}

/* ------------------------------------------------------------------ */
/* --set                                                               */
/* ------------------------------------------------------------------ */

int aim_config_set(aim_config *cfg, const char *assignment, aim_config_error *err)
{
    if (err)
        err->message[0] = '\0';
    const char *eq = strchr(assignment, '=');
    const char *dot = eq ? memchr(assignment, '.', (size_t)(eq - assignment)) : NULL;
    char lhs[160], sec[64], key[96];
    char val[sizeof(((aim_config *)0)->covariance) + 64];
    if (!eq || !dot) {
        errorf(err, "--set %.300s: expected section.key=value", assignment);
        return -1;
    }
    if (aim_config_clean_value(lhs, sizeof lhs, assignment, (size_t)(eq - assignment)) != 0 ||
        aim_config_clean_value(val, sizeof val, eq + 1, strlen(eq + 1)) != 0) {
        errorf(err, "--set %.300s: too long", assignment);
        return -1;
    }
    char *ldot = strchr(lhs, '.');
    if (!ldot || ldot == lhs || ldot[1] == '\0' ||
        (size_t)(ldot - lhs) >= sizeof sec || strlen(ldot + 1) >= sizeof key) {
        errorf(err, "--set %.300s: expected section.key=value", assignment);
        return -1;
    }
    memcpy(sec, lhs, (size_t)(ldot - lhs));
    sec[ldot - lhs] = '\0';
    snprintf(key, sizeof key, "%s", ldot + 1);

    char where[400];
    snprintf(where, sizeof where, "--set %.300s", assignment);
    aim_config work = *cfg;
    char msg[sizeof err->message];
    int i = assign(&work, sec, key, val, where, msg, sizeof msg);
    if (i < 0) {
        set_error(err, msg);
        return -1;
    }
    work.key_line[i] = -1;
    *cfg = work;
    return 0;
}
