/* aim_atomic: result files replaced whole, alone or as sets under a
 * journal, and output locks; what a signal must remove is registered
 * with aim_guard.
 *
 * Written here rather than taken from a library: no Debian C library
 * offers atomic sets of files with a journal. */
#define _DEFAULT_SOURCE /* flock */

#include "atomic.h"

#include "guard.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- paths ---- */

/* "dir/.base" + tail for path "dir/base" (malloc'd). */
static char *hidden_name(const char *path, const char *tail)
{
    const char *slash = strrchr(path, '/');
    const size_t dirlen = slash ? (size_t)(slash - path) + 1 : 0;
    const size_t n = strlen(path) + strlen(tail) + 2;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%.*s.%s%s", (int)dirlen, path, path + dirlen, tail);
    return s;
}

/* dir + "/." + name + tail (malloc'd) */
static char *name_file(const char *dir, const char *name, const char *tail)
{
    const size_t n = strlen(dir) + strlen(name) + strlen(tail) + 3;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%s/.%s%s", dir, name, tail);
    return s;
}

/* The directory part of path (malloc'd): "." when there is none. */
static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return strdup(".");
    if (slash == path)
        return strdup("/");
    return strndup(path, (size_t)(slash - path));
}

/* path made absolute (malloc'd), for a journal that a run in another
 * working directory may read. */
static char *absolute(const char *path)
{
    if (path[0] == '/')
        return strdup(path);
    char cwd[4096];
    if (!getcwd(cwd, sizeof cwd))
        return NULL;
    const size_t n = strlen(cwd) + strlen(path) + 2;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%s/%s", cwd, path);
    return s;
}

int aim_atomic_sync_dir(const char *path)
{
    char *dir = dir_of(path);
    if (!dir) {
        errno = ENOMEM;
        return -1;
    }
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    free(dir);
    if (fd < 0)
        return -1;
    /* some file systems cannot sync a directory: nothing to wait for */
    int rc = fsync(fd) != 0 && errno != EINVAL ? -1 : 0;
    const int err = errno;
    close(fd);
    errno = err;
    return rc;
}

/* fd is open on the file that path names now (a cleaner may have removed
 * a temporary between its creation and its lock). */
static int same_file(int fd, const char *path)
{
    struct stat a, b;
    return fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev &&
           a.st_ino == b.st_ino;
}

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

static int write_all(int fd, const char *buf, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, buf, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        buf += w;
        n -= (size_t)w;
    }
    return 0;
}

/* ---- single files ---- */

struct aim_atomic_file {
    int fd;
    int guard; /* its aim_guard entry */
    char *temp, *final;
};

static void file_free(aim_atomic_file *f, int remove_temp)
{
    aim_guard_enter();
    if (remove_temp)
        unlink(f->temp);
    if (f->fd >= 0)
        close(f->fd);
    aim_guard_drop(f->guard);
    aim_guard_leave();
    free(f->temp);
    free(f->final);
    free(f);
}

int aim_atomic_write(aim_atomic_file *f, const void *buf, size_t n)
{
    return write_all(f->fd, buf, n);
}

aim_atomic_file *aim_atomic_create(const char *final)
{
    aim_atomic_file *f = calloc(1, sizeof *f);
    if (f) {
        f->fd = f->guard = -1;
        f->final = strdup(final);
        f->temp = hidden_name(final, ".XXXXXX");
    }
    if (!f || !f->final || !f->temp) {
        fprintf(stderr, "aimdyn: out of memory\n");
        if (f) {
            free(f->final);
            free(f->temp);
            free(f);
        }
        return NULL;
    }
    struct stat st;
    if (lstat(final, &st) == 0 && S_ISDIR(st.st_mode)) {
        fprintf(stderr, "aimdyn: cannot write '%s': a directory of that name is in the way\n",
                final);
        file_free(f, 0);
        return NULL;
    }
    const size_t n = strlen(f->temp);
    int err = 0;
    aim_guard_enter();
    /* the lock on the temporary file tells a cleaner (aim_atomic_clean)
     * that its writer is alive */
    for (int tries = 0; tries < 8; tries++) {
        memcpy(f->temp + n - 6, "XXXXXX", 6);
        f->fd = mkstemp(f->temp);
        if (f->fd < 0) {
            err = errno;
            break;
        }
        if (fcntl(f->fd, F_SETFD, FD_CLOEXEC) != 0 || flock(f->fd, LOCK_EX) != 0) {
            err = errno;
            unlink(f->temp);
            close(f->fd);
            f->fd = -1;
            break;
        }
        if (same_file(f->fd, f->temp))
            break;
        err = ENOENT; /* a cleaner removed it between its creation and its lock */
        close(f->fd);
        f->fd = -1;
    }
    if (f->fd >= 0 && (f->guard = aim_guard_add(f->temp)) < 0) {
        err = ENOMEM;
        unlink(f->temp);
        close(f->fd);
        f->fd = -1;
    }
    aim_guard_leave();
    if (f->fd < 0) {
        fprintf(stderr, "aimdyn: cannot create a temporary file for '%s': %s\n", final,
                strerror(err));
        file_free(f, 0);
        return NULL;
    }
    /* mkstemp creates mode 0600; a result gets the usual 0666 & ~umask */
    const mode_t mask = umask(0);
    umask(mask);
    if (fchmod(f->fd, 0666 & ~mask) != 0) {
        fprintf(stderr, "aimdyn: cannot set the mode of '%s': %s\n", f->temp, strerror(errno));
        file_free(f, 1);
        return NULL;
    }
    return f;
}

int aim_atomic_fd(const aim_atomic_file *f)
{
    return f->fd;
}

const char *aim_atomic_temp(const aim_atomic_file *f)
{
    return f->temp;
}

const char *aim_atomic_final(const aim_atomic_file *f)
{
    return f->final;
}

void aim_atomic_discard(aim_atomic_file *f)
{
    if (f)
        file_free(f, 1);
}

static int sync_file(const aim_atomic_file *f)
{
    if (fsync(f->fd) != 0 && errno != EINVAL) {
        fprintf(stderr, "aimdyn: cannot write '%s': %s\n", f->final, strerror(errno));
        return -1;
    }
    return 0;
}

int aim_atomic_replace(aim_atomic_file *f)
{
    if (sync_file(f)) {
        file_free(f, 1);
        return -1;
    }
    if (rename(f->temp, f->final) != 0) {
        fprintf(stderr, "aimdyn: cannot rename '%s' to '%s': %s\n", f->temp, f->final,
                strerror(errno));
        file_free(f, 1);
        return -1;
    }
    int rc = 0;
    if (aim_atomic_sync_dir(f->final) != 0) {
        fprintf(stderr, "aimdyn: cannot sync the directory of '%s': %s\n", f->final,
                strerror(errno));
        rc = -1;
    }
    file_free(f, 0);
    return rc;
}

/* ---- sets ---- */

typedef struct {
    aim_atomic_file *file; /* NULL: final is to be removed */
    char *temp_abs, *final_abs;
} entry;

struct aim_atomic_set {
    char *journal;
    entry *e;
    int n, cap;
    /* a set of its own (aim_atomic_set_own): its lock, held until the set
     * is committed or freed */
    char *lock;
    int lock_fd, lock_guard;
    struct {
        int (*fn)(aim_atomic_set *set, void *ctx);
        void (*done)(void *ctx);
        void *ctx;
    } *hooks;
    int nhooks;
};

static int take_lock(const char *path, long *holder);

aim_atomic_set *aim_atomic_set_create(const char *dir, const char *name)
{
    aim_atomic_set *set = calloc(1, sizeof *set);
    if (set)
        set->lock_fd = set->lock_guard = -1;
    if (set && !(set->journal = name_file(dir, name, ".journal"))) {
        free(set);
        set = NULL;
    }
    if (!set)
        fprintf(stderr, "aimdyn: out of memory\n");
    return set;
}

aim_atomic_set *aim_atomic_set_own(const char *final)
{
    char *dir = dir_of(final);
    const char *slash = strrchr(final, '/');
    aim_atomic_set *set = dir ? aim_atomic_set_create(dir, slash ? slash + 1 : final) : NULL;
    free(dir);
    if (!set || !(set->lock = strdup(set->journal))) {
        aim_atomic_set_free(set);
        fprintf(stderr, "aimdyn: out of memory\n");
        return NULL;
    }
    strcpy(set->lock + strlen(set->lock) - strlen(".journal"), ".lock");
    /* another run holds it only while it completes a journal of this name
     * that a killed run left: a moment */
    long holder = 0;
    for (int tries = 0; tries < 50 && set->lock_fd < 0; tries++) {
        aim_guard_enter();
        set->lock_fd = take_lock(set->lock, &holder);
        if (set->lock_fd >= 0 && (set->lock_guard = aim_guard_add(set->lock)) < 0) {
            unlink(set->lock);
            close(set->lock_fd);
            set->lock_fd = -2;
            errno = ENOMEM;
        }
        aim_guard_leave();
        if (set->lock_fd == -1)
            nanosleep(&(struct timespec){0, 100000000}, NULL);
        else if (set->lock_fd < -1)
            break;
    }
    if (set->lock_fd < 0) {
        fprintf(stderr, "aimdyn: cannot lock '%s': %s\n", set->lock,
                set->lock_fd == -1 ? "another process holds it" : strerror(errno));
        aim_atomic_set_free(set);
        return NULL;
    }
    return set;
}

static int set_append(aim_atomic_set *set, aim_atomic_file *f, const char *final)
{
    if (set->n == set->cap) {
        const int cap = set->cap ? 2 * set->cap : 16;
        entry *e = realloc(set->e, sizeof *e * (size_t)cap);
        if (!e)
            return -1;
        set->e = e;
        set->cap = cap;
    }
    entry *e = &set->e[set->n];
    e->file = f;
    e->final_abs = absolute(final);
    e->temp_abs = f ? absolute(f->temp) : NULL;
    if (!e->final_abs || (f && !e->temp_abs)) {
        free(e->final_abs);
        free(e->temp_abs);
        return -1;
    }
    set->n++;
    return 0;
}

int aim_atomic_set_add(aim_atomic_set *set, aim_atomic_file *f)
{
    if (sync_file(f)) {
        aim_atomic_discard(f);
        return -1;
    }
    if (set_append(set, f, f->final)) {
        fprintf(stderr, "aimdyn: out of memory (or no working directory) for '%s'\n", f->final);
        aim_atomic_discard(f);
        return -1;
    }
    return 0;
}

int aim_atomic_set_remove(aim_atomic_set *set, const char *final)
{
    struct stat st;
    if (lstat(final, &st) == 0 && S_ISDIR(st.st_mode))
        return 0; /* not a file that the set could make stale */
    if (set_append(set, NULL, final)) {
        fprintf(stderr, "aimdyn: out of memory (or no working directory) for '%s'\n", final);
        return -1;
    }
    return 0;
}

const char *aim_atomic_set_temp(const aim_atomic_set *set, const char *final)
{
    for (int i = 0; i < set->n; i++)
        if (set->e[i].file && !strcmp(set->e[i].file->final, final))
            return set->e[i].file->temp;
    return NULL;
}

/* The journal: "aimdyn journal", then per file "R" temp final or
 * "U" final, then "E"; every field ends with a NUL (paths may hold any
 * other byte). */
static const char journal_tag[] = "aimdyn journal";

static int write_journal(const aim_atomic_set *set)
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
            const entry *e = &set->e[i];
            if (e->file) {
                fwrite("R", 1, 2, m);
                fwrite(e->temp_abs, 1, strlen(e->temp_abs) + 1, m);
            } else {
                fwrite("U", 1, 2, m);
            }
            fwrite(e->final_abs, 1, strlen(e->final_abs) + 1, m);
        }
        fwrite("E", 1, 2, m);
        if (fclose(m) == 0 && write_all(j->fd, text, len) == 0)
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

/* Syncs the directory of each path once. */
static void sync_dirs(char *const *paths, int n)
{
    for (int i = 0; i < n; i++) {
        char *di = dir_of(paths[i]);
        int seen = 0;
        for (int k = 0; di && !seen && k < i; k++) {
            char *dk = dir_of(paths[k]);
            seen = dk && !strcmp(di, dk);
            free(dk);
        }
        if (di && !seen && aim_atomic_sync_dir(paths[i]) != 0)
            fprintf(stderr, "aimdyn: cannot sync the directory '%s': %s\n", di, strerror(errno));
        free(di);
    }
}

/* A rename (temp to final) or a removal (temp NULL) of a set; done_ok:
 * a temporary file that is gone was renamed before (a journal's). Returns
 * 0 or -1 (said). */
static int apply(const char *temp, const char *final, int done_ok)
{
    if (temp ? rename(temp, final) == 0 || (done_ok && errno == ENOENT)
             : unlink(final) == 0 || errno == ENOENT)
        return 0;
    if (temp)
        fprintf(stderr, "aimdyn: cannot rename '%s' to '%s': %s\n", temp, final,
                strerror(errno));
    else
        fprintf(stderr, "aimdyn: cannot remove the stale '%s': %s\n", final, strerror(errno));
    return -1;
}

static void set_release(aim_atomic_set *set, int remove_temps)
{
    for (int i = 0; i < set->nhooks; i++)
        set->hooks[i].done(set->hooks[i].ctx);
    free(set->hooks);
    for (int i = 0; i < set->n; i++) {
        if (set->e[i].file)
            file_free(set->e[i].file, remove_temps);
        free(set->e[i].temp_abs);
        free(set->e[i].final_abs);
    }
    free(set->e);
    free(set->journal);
    if (set->lock_fd >= 0) {
        aim_guard_enter();
        unlink(set->lock);
        close(set->lock_fd);
        aim_guard_drop(set->lock_guard);
        aim_guard_leave();
    }
    free(set->lock);
    free(set);
}

int aim_atomic_set_on_commit(aim_atomic_set *set, int (*fn)(aim_atomic_set *set, void *ctx),
                             void (*done)(void *ctx), void *ctx)
{
    void *grown = realloc(set->hooks, sizeof *set->hooks * ((size_t)set->nhooks + 1));
    if (!grown) {
        fprintf(stderr, "aimdyn: out of memory\n");
        done(ctx);
        return -1;
    }
    set->hooks = grown;
    set->hooks[set->nhooks].fn = fn;
    set->hooks[set->nhooks].done = done;
    set->hooks[set->nhooks++].ctx = ctx;
    return 0;
}

int aim_atomic_set_count(const aim_atomic_set *set)
{
    return set->n;
}

const char *aim_atomic_set_final(const aim_atomic_set *set, int i)
{
    return set->e[i].file ? set->e[i].file->final : NULL;
}

int aim_atomic_set_commit(aim_atomic_set *set)
{
    if (!set)
        return -1;
    for (int i = 0; i < set->nhooks; i++)
        if (set->hooks[i].fn(set, set->hooks[i].ctx)) {
            aim_atomic_set_free(set);
            return -1;
        }
    char **finals = calloc((size_t)set->n + 1, sizeof *finals);
    if (!finals) {
        fprintf(stderr, "aimdyn: out of memory\n");
        aim_atomic_set_free(set);
        return -1;
    }
    aim_guard_enter();
    /* one file needs no journal: its rename is atomic */
    if (set->n > 1 && write_journal(set) != 0) {
        set_release(set, 1);
        aim_guard_leave();
        free(finals);
        return -1;
    }
    int failed = 0;
    const int n = set->n;
    for (int i = 0; i < n; i++) {
        failed |= apply(set->e[i].temp_abs, set->e[i].final_abs, 0);
        finals[i] = set->e[i].final_abs;
    }
    sync_dirs(finals, n);
    free(finals);
    if (failed && n > 1)
        fprintf(stderr, "aimdyn: the files of this run are not all in place; the next run "
                        "into this folder completes them ('%s')\n", set->journal);
    else if (!failed && n > 1 && (unlink(set->journal) != 0 || aim_atomic_sync_dir(set->journal)))
        fprintf(stderr, "aimdyn: cannot remove the journal '%s': %s\n", set->journal,
                strerror(errno));
    /* the temporary files of renames that failed stay for the journal */
    set_release(set, n == 1);
    aim_guard_leave();
    return failed ? -1 : 0;
}

void aim_atomic_set_free(aim_atomic_set *set)
{
    if (set)
        set_release(set, 1);
}

/* ---- journals left by killed runs ---- */

/* Reads a journal into a malloc'd buffer (*text, *len bytes). Returns 0,
 * 1 when there is none, -1 when it is not a complete journal (said): also
 * when it is not a regular file (a FIFO would block every run into the
 * folder, hence O_NONBLOCK). */
static int read_journal(const char *path, char **text, size_t *len)
{
    *text = NULL;
    *len = 0;
    const int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT)
        return 1;
    struct stat st;
    FILE *f = NULL;
    if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || !(f = fdopen(fd, "rb"))))
        close(fd);
    size_t cap = 0;
    int rc = f ? 0 : -1;
    while (rc == 0) {
        if (*len + 4096 > cap) {
            cap = 2 * cap + 4096;
            char *grown = cap <= (64u << 20) ? realloc(*text, cap) : NULL;
            if (!grown) {
                rc = -1;
                break;
            }
            *text = grown;
        }
        const size_t got = fread(*text + *len, 1, cap - *len, f);
        *len += got;
        if (got == 0)
            rc = ferror(f) ? -1 : 1;
    }
    if (f)
        fclose(f);
    /* complete: the tag first, "E" last */
    rc = rc == 1 && *len >= sizeof journal_tag + 2 &&
                 !memcmp(*text, journal_tag, sizeof journal_tag) &&
                 !memcmp(*text + *len - 2, "E", 2)
             ? 0
             : -1;
    if (rc) {
        fprintf(stderr, "aimdyn: '%s' is not a complete journal of aimdyn: remove it (the files "
                        "it names may mix two runs)\n", path);
        free(*text);
        *text = NULL;
    }
    return rc;
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

typedef void record_fn(const char *temp, const char *final, void *ctx);

/* Calls fn for each record of a journal read by read_journal (temp NULL:
 * a removal). Returns 0, or -1 when a record is malformed (said). */
static int each_record(const char *path, const char *text, size_t len, record_fn *fn, void *ctx)
{
    size_t pos = sizeof journal_tag;
    const char *kind;
    while ((kind = next_field(text, len, &pos)) && strcmp(kind, "E")) {
        const int renamed = !strcmp(kind, "R");
        const char *temp = renamed ? next_field(text, len, &pos) : NULL;
        const char *final = next_field(text, len, &pos);
        if (!final || (renamed && !temp) || (!renamed && strcmp(kind, "U")))
            break;
        fn(temp, final, ctx);
    }
    if (kind && !strcmp(kind, "E"))
        return 0;
    fprintf(stderr, "aimdyn: '%s' is not a journal of aimdyn: remove it (the files it names "
                    "may mix two runs)\n", path);
    return -1;
}

typedef struct {
    char **finals;
    int n, failed;
} rolled;

static void roll_record(const char *temp, const char *final, void *ctx)
{
    rolled *r = ctx;
    r->failed |= apply(temp, final, 1);
    r->finals[r->n++] = (char *)final;
}

/* Completes the renames of the journal at path (a run killed during its
 * commit). Returns 0 or -1 (said). */
static int roll_forward(const char *path)
{
    char *text;
    size_t len;
    const int found = read_journal(path, &text, &len);
    if (found)
        return found > 0 ? 0 : -1;
    rolled r = {calloc(len / 2 + 1, sizeof(char *)), 0, 0};
    int rc = -1;
    if (!r.finals)
        fprintf(stderr, "aimdyn: out of memory\n");
    else if (each_record(path, text, len, roll_record, &r) == 0) {
        sync_dirs(r.finals, r.n);
        if (r.failed || unlink(path) != 0 || aim_atomic_sync_dir(path) != 0)
            fprintf(stderr, "aimdyn: cannot complete the files of an interrupted run listed "
                            "in '%s'\n", path);
        else {
            fprintf(stderr, "aimdyn: completed the replacement of %d files that an "
                            "interrupted run left half done (journal '%s')\n", r.n, path);
            rc = 0;
        }
    }
    free(r.finals);
    free(text);
    return rc;
}

/* ---- stale temporary files ---- */

static void list_temp(const char *temp, const char *final, void *ctx)
{
    (void)final;
    if (temp) {
        const char *slash = strrchr(temp, '/');
        fputs(slash ? slash + 1 : temp, ctx);
        fputc('\0', ctx);
    }
}

/* The base names of the temporary files that the journals in dir list
 * (NUL-separated, malloc'd, *len bytes). */
static void journal_temps(const char *dir, DIR *d, char **names, size_t *len)
{
    FILE *m = open_memstream(names, len);
    if (!m)
        return;
    struct dirent *de;
    while ((de = readdir(d))) {
        const size_t n = strlen(de->d_name);
        if (de->d_name[0] != '.' || n < 9 || strcmp(de->d_name + n - 8, ".journal"))
            continue;
        const size_t pn = strlen(dir) + n + 2;
        char *path = malloc(pn), *text = NULL;
        size_t tlen;
        if (path) {
            snprintf(path, pn, "%s/%s", dir, de->d_name);
            if (read_journal(path, &text, &tlen) == 0)
                each_record(path, text, tlen, list_temp, m);
        }
        free(text);
        free(path);
    }
    fclose(m);
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
    journal_temps(dir, d, &keep, &keep_len);
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
        const size_t pn = strlen(dir) + strlen(s) + 2;
        char *path = malloc(pn);
        if (!path)
            break;
        snprintf(path, pn, "%s/%s", dir, s);
        const int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
        struct stat st;
        /* a live writer holds its temporary file locked */
        if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
            flock(fd, LOCK_EX | LOCK_NB) == 0 && unlink(path) == 0)
            removed++;
        if (fd >= 0)
            close(fd);
        free(path);
    }
    closedir(d);
    free(keep);
    return removed;
}

/* ---- output locks ---- */

/* Takes the lock file at path (created if needed): its descriptor; -1
 * when another process holds it (its pid, if it wrote one, in *holder);
 * -2 on failure (errno set). The lock file is removed when released, so
 * a lock taken on a file that its holder removed meanwhile is taken again
 * on the new file. */
static int take_lock(const char *path, long *holder)
{
    for (int tries = 0; tries < 8; tries++) {
        const int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
        if (fd < 0)
            return -2;
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            const int err = errno;
            char buf[32] = "";
            if (err == EWOULDBLOCK && pread(fd, buf, sizeof buf - 1, 0) > 0)
                *holder = strtol(buf, NULL, 10);
            close(fd);
            errno = err;
            return err == EWOULDBLOCK ? -1 : -2;
        }
        if (same_file(fd, path))
            return fd;
        close(fd);
    }
    errno = EAGAIN;
    return -2;
}

/* Completes every journal in dir whose run is gone: own's (its lock is
 * held), and another name's when its lock is free (taken for the
 * moment). So no run writes beside a set that an earlier run left
 * half-renamed, whatever its lock (e.g. a compare killed during its
 * renames, then an sgd at one of its d). Returns 0 or -1 (said). */
static int roll_forward_dir(const char *dir, const char *own)
{
    DIR *d = opendir(dir);
    if (!d)
        return errno == ENOENT ? 0 : -1;
    char *names = NULL; /* the journals' names, NUL-separated */
    size_t len = 0;
    FILE *m = open_memstream(&names, &len);
    struct dirent *de;
    while (m && (de = readdir(d))) {
        const size_t n = strlen(de->d_name);
        if (de->d_name[0] == '.' && n > 9 && !strcmp(de->d_name + n - 8, ".journal")) {
            fwrite(de->d_name + 1, 1, n - 9, m);
            fputc('\0', m);
        }
    }
    closedir(d);
    if (!m || fclose(m)) {
        fprintf(stderr, "aimdyn: out of memory\n");
        return -1;
    }
    int rc = 0;
    for (size_t pos = 0; pos < len; pos += strlen(names + pos) + 1) {
        const char *name = names + pos;
        char *journal = name_file(dir, name, ".journal"), *lock = name_file(dir, name, ".lock");
        long holder = 0;
        const int mine = !strcmp(name, own);
        const int fd = !journal || !lock || mine ? -2 : take_lock(lock, &holder);
        if (journal && (mine || fd >= 0) && roll_forward(journal) != 0)
            rc = -1;
        if (fd >= 0) {
            unlink(lock);
            close(fd);
        }
        free(journal);
        free(lock);
    }
    free(names);
    return rc;
}

/* The descriptors of the locks this process took (kept open: a lock is
 * released when its process ends). */
static int lock_fds[16];
static int nlocks;

void aim_atomic_after_fork(void)
{
    for (int i = 0; i < nlocks; i++)
        close(lock_fds[i]);
    nlocks = 0;
}

int aim_atomic_lock(const char *dir, const char *name, const char *hint)
{
    char *path = name_file(dir, name, ".lock");
    if (!path) {
        fprintf(stderr, "aimdyn: out of memory\n");
        return -1;
    }
    if (aim_guard_holds(path)) {
        free(path);
        return 0; /* held already */
    }
    long holder = 0;
    aim_guard_enter();
    int fd = take_lock(path, &holder);
    const int err = errno;
    if (fd >= 0 && (nlocks == (int)(sizeof lock_fds / sizeof lock_fds[0]) ||
                    aim_guard_add(path) < 0)) {
        unlink(path);
        close(fd);
        fd = -2;
    }
    aim_guard_leave();
    int rc = 0;
    if (fd >= 0) {
        char buf[32];
        const int n = snprintf(buf, sizeof buf, "%ld\n", (long)getpid());
        lock_fds[nlocks++] = fd;
        if (ftruncate(fd, 0) != 0 || pwrite(fd, buf, (size_t)n, 0) != n)
            fprintf(stderr, "aimdyn: warning: cannot write the process id into '%s'\n", path);
        if (roll_forward_dir(dir, name) != 0 || aim_atomic_clean(dir, name) < 0)
            rc = -1;
    } else if (fd == -1) {
        char who[64] = "";
        if (holder > 0)
            snprintf(who, sizeof who, " (process %ld)", holder);
        fprintf(stderr, "aimdyn: another aimdyn run%s is writing these files (it holds the lock "
                        "'%s'); wait until it ends, or %s\n", who, path, hint);
        rc = 1;
    } else {
        fprintf(stderr, "aimdyn: cannot lock '%s': %s\n", path, strerror(err ? err : ENOMEM));
        rc = -1;
    }
    free(path);
    return rc;
}
