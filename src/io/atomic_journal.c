/* aim_atomic, the journal of a set: the list of a set's renames, made
 * durable before them (aim_atomic_write_journal) and applied
 * (aim_atomic_apply); a journal that a killed run left, read, checked and
 * completed (aim_atomic_roll_forward); and the stale temporary files that
 * no journal keeps, removed (aim_atomic_clean). Calls atomic.c only. */
#define _GNU_SOURCE /* flock, O_NOFOLLOW, dirfd */

#include "atomic.h"
#include "atomic_internal.h"

#include "input.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- a set's journal ---- */

/* The journal: "aimdyn journal", then per file "R" temp final or
 * "U" final, then "E"; every field ends with a NUL. Names are those of
 * files in the journal's own folder: no '/' (a journal that names
 * anything else is refused, each_record). */
static const char journal_tag[] = "aimdyn journal";

int aim_atomic_write_journal(const aim_atomic_set *set)
{
    aim_atomic_file *j = aim_atomic_create(set->journal);
    if (!j)
        return -1;
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    int rc = -1;
    if (m) {
        fwrite(journal_tag, 1, sizeof journal_tag, m);
        for (int i = 0; i < set->n; i++) {
            const aim_atomic_entry *e = &set->e[i];
            if (e->file) {
                fwrite("R", 1, 2, m);
                fwrite(e->temp_name, 1, strlen(e->temp_name) + 1, m);
            } else {
                fwrite("U", 1, 2, m);
            }
            fwrite(e->final_name, 1, strlen(e->final_name) + 1, m);
        }
        fwrite("E", 1, 2, m);
        if (fclose(m) == 0 && aim_atomic_write_all(j->fd, text, len) == 0)
            rc = 0;
    }
    free(text);
    if (rc) {
        fprintf(stderr, "aimdyn: cannot write the journal '%s': %s\n", set->journal,
                strerror(errno));
        aim_atomic_discard(j);
        return -1;
    }
    return aim_atomic_replace(j);
}

/* A rename (temp to final) or a removal (temp NULL) of names in the
 * folder dir (open on dir_fd); done_ok: a temporary file that is gone was
 * renamed before (a journal's). Returns 0 or -1 (said). */
int aim_atomic_apply(int dir_fd, const char *dir, const char *temp, const char *final, int done_ok)
{
    if (temp ? renameat(dir_fd, temp, dir_fd, final) == 0 || (done_ok && errno == ENOENT)
             : unlinkat(dir_fd, final, 0) == 0 || errno == ENOENT)
        return 0;
    if (temp)
        fprintf(stderr, "aimdyn: cannot rename '%s/%s' to '%s/%s': %s\n", dir, temp, dir, final,
                strerror(errno));
    else
        fprintf(stderr, "aimdyn: cannot remove the stale '%s/%s': %s\n", dir, final,
                strerror(errno));
    return -1;
}

/* ---- journals left by killed runs ---- */

/* A journal lists the files of one set: a few dozen names of at most
 * NAME_MAX (255) bytes. 64 MiB is far more than a set ever needs, and
 * memory that any machine running aimdyn has. */
#define JOURNAL_MAX_BYTES ((size_t)64 << 20)

/* Reads the journal name in the folder open on dir_fd (shown: its path,
 * for messages) into a malloc'd buffer (*text, *len bytes). Returns 0,
 * 1 when there is none, -1 when it is refused (said, the journal left in
 * place): not a regular file (a FIFO would block every run into the
 * folder), a symbolic link, over JOURNAL_MAX_BYTES, or not a complete
 * journal. */
static int read_journal(int dir_fd, const char *name, const char *shown, char **text,
                        size_t *len)
{
    static const aim_input_kind kind = {JOURNAL_MAX_BYTES, "a journal that aimdyn wrote", 1};
    char err[1600];
    if (aim_input_read(dir_fd, name, shown, &kind, text, len, err, sizeof err) != 0) {
        if (errno == ENOENT)
            return 1;
        fprintf(stderr, "aimdyn: %s; nothing was changed: look at it and remove it\n", err);
        return -1;
    }
    /* complete: the tag first, "E" last */
    if (*len >= sizeof journal_tag + 2 && !memcmp(*text, journal_tag, sizeof journal_tag) &&
        !memcmp(*text + *len - 2, "E", 2))
        return 0;
    fprintf(stderr, "aimdyn: '%s' is not a complete journal of aimdyn: remove it (the files "
                    "it names may mix two runs)\n", shown);
    free(*text);
    *text = NULL;
    return -1;
}

/* The next field of a journal at *pos, or NULL at its end. */
static const char *next_field(const char *text, size_t len, size_t *pos)
{
    if (*pos >= len)
        return NULL;
    const char *s = text + *pos;
    const char *end = memchr(s, '\0', len - *pos);
    if (!end)
        return NULL;
    *pos += (size_t)(end - s) + 1;
    return s;
}

/* A name a journal may hold: a file of the journal's own folder. */
static int plain_name(const char *s)
{
    return s[0] && !strchr(s, '/') && strcmp(s, ".") && strcmp(s, "..");
}

typedef void record_fn(const char *temp, const char *final, void *ctx);

/* Calls fn for each record of a journal read by read_journal (temp NULL:
 * a removal), once every record is known to be well formed and to name
 * files of the journal's folder only. Returns 0, or -1 when one is not
 * (said; fn not called). */
static int each_record(const char *shown, const char *text, size_t len, record_fn *fn,
                       void *ctx)
{
    for (int pass = 0; pass < 2; pass++) {
        size_t pos = sizeof journal_tag;
        const char *kind;
        while ((kind = next_field(text, len, &pos)) && strcmp(kind, "E")) {
            const int renamed = !strcmp(kind, "R");
            const char *temp = renamed ? next_field(text, len, &pos) : NULL;
            const char *final = next_field(text, len, &pos);
            if (!final || (renamed && !temp) || (!renamed && strcmp(kind, "U")))
                break;
            const char *outside = temp && !plain_name(temp) ? temp
                                  : !plain_name(final)     ? final
                                                           : NULL;
            if (outside) {
                fprintf(stderr, "aimdyn: the journal '%s' names '%s', not a file of its own "
                                "folder; allowed: a journal of this aimdyn, which names files "
                                "of its folder only (an older aimdyn's named absolute paths): "
                                "nothing was changed; look at the files it names and remove "
                                "it\n", shown, outside);
                return -1;
            }
            if (pass)
                fn(temp, final, ctx);
        }
        if (!kind || strcmp(kind, "E")) {
            fprintf(stderr, "aimdyn: '%s' is not a journal of aimdyn: remove it (the files it "
                            "names may mix two runs)\n", shown);
            return -1;
        }
    }
    return 0;
}

typedef struct {
    int dir_fd;
    const char *dir;
    int n, failed;
} rolled;

static void roll_record(const char *temp, const char *final, void *ctx)
{
    rolled *r = ctx;
    r->failed |= aim_atomic_apply(r->dir_fd, r->dir, temp, final, 1);
    r->n++;
}

/* Completes the renames of the journal name in the folder dir (open on
 * dir_fd) that a run killed during its commit left. Returns 0 or -1
 * (said). */
int aim_atomic_roll_forward(int dir_fd, const char *dir, const char *name)
{
    const size_t pn = strlen(dir) + strlen(name) + 2;
    char *shown = malloc(pn), *text = NULL;
    if (!shown) {
        fprintf(stderr, "aimdyn: out of memory\n");
        return -1;
    }
    snprintf(shown, pn, "%s/%s", dir, name);
    size_t len;
    const int found = read_journal(dir_fd, name, shown, &text, &len);
    int rc = found > 0 ? 0 : -1;
    rolled r = {dir_fd, dir, 0, 0};
    if (found == 0 && each_record(shown, text, len, roll_record, &r) == 0) {
        if (r.failed || aim_atomic_sync_fd(dir_fd) != 0 || unlinkat(dir_fd, name, 0) != 0 ||
            aim_atomic_sync_fd(dir_fd) != 0)
            fprintf(stderr, "aimdyn: cannot complete the files of an interrupted run listed "
                            "in '%s'\n", shown);
        else {
            fprintf(stderr, "aimdyn: completed the replacement of %d files that an "
                            "interrupted run left half done (journal '%s')\n", r.n, shown);
            rc = 0;
        }
    }
    free(text);
    free(shown);
    return rc;
}

/* ---- stale temporary files ---- */

/* "x.XXXXXX" as mkstemp makes it: a dot and six letters or digits. */
static int temp_suffix(const char *s)
{
    const size_t n = strlen(s);
    if (n < 8 || s[n - 7] != '.')
        return 0;
    for (size_t i = n - 6; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
              (s[i] >= '0' && s[i] <= '9')))
            return 0;
    return 1;
}

static void list_temp(const char *temp, const char *final, void *ctx)
{
    (void)final;
    if (temp) {
        fputs(temp, ctx);
        fputc('\0', ctx);
    }
}

/* A journal's file name: ".NAME.journal" (NAME not empty). */
int aim_atomic_journal_name(const char *s)
{
    const size_t n = strlen(s);
    return s[0] == '.' && n > 9 && !strcmp(s + n - 8, ".journal");
}

/* The names of the temporary files that the journals in the folder dir
 * (read through d) list (NUL-separated, malloc'd, *len bytes). Returns 0,
 * or -1 when a journal is refused (said). */
static int journal_temps(const char *dir, DIR *d, char **names, size_t *len)
{
    FILE *m = open_memstream(names, len);
    if (!m) {
        fprintf(stderr, "aimdyn: out of memory\n");
        return -1;
    }
    int rc = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!aim_atomic_journal_name(de->d_name))
            continue;
        const size_t pn = strlen(dir) + strlen(de->d_name) + 2;
        char *shown = malloc(pn), *text = NULL;
        size_t tlen;
        if (!shown) {
            rc = -1;
            break;
        }
        snprintf(shown, pn, "%s/%s", dir, de->d_name);
        const int got = read_journal(dirfd(d), de->d_name, shown, &text, &tlen);
        if (got < 0 || (got == 0 && each_record(shown, text, tlen, list_temp, m) != 0))
            rc = -1;
        free(text);
        free(shown);
    }
    fclose(m);
    return rc;
}

static int listed(const char *names, size_t len, const char *name)
{
    for (size_t pos = 0; names && pos < len; pos += strlen(names + pos) + 1)
        if (!strcmp(names + pos, name))
            return 1;
    return 0;
}

int aim_atomic_clean(const char *dir, const char *name)
{
    DIR *d = opendir(dir);
    if (!d) {
        if (errno == ENOENT)
            return 0;
        fprintf(stderr, "aimdyn: cannot read the directory '%s': %s\n", dir, strerror(errno));
        return -1;
    }
    char *keep = NULL;
    size_t keep_len = 0;
    if (journal_temps(dir, d, &keep, &keep_len) != 0) {
        closedir(d);
        free(keep);
        return -1;
    }
    rewinddir(d);
    const size_t nl = strlen(name);
    int removed = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *s = de->d_name;
        /* "..name.journal.XXXXXX": the temporary file of a journal */
        const char *t = s[0] == '.' && s[1] == '.' ? s + 2 : s + 1;
        if (s[0] != '.' || strncmp(t, name, nl) || (t[nl] != '-' && t[nl] != '.') ||
            !temp_suffix(s) || listed(keep, keep_len, s))
            continue;
        const int fd = openat(dirfd(d), s, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
        struct stat st;
        /* a live writer holds its temporary file locked */
        if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
            flock(fd, LOCK_EX | LOCK_NB) == 0 && unlinkat(dirfd(d), s, 0) == 0)
            removed++;
        if (fd >= 0)
            close(fd);
    }
    closedir(d);
    free(keep);
    return removed;
}
