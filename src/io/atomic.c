/* aim_atomic: result files replaced whole, alone or as sets under a
 * journal, and output locks; what a signal must remove is registered
 * with aim_guard.
 *
 * Written here rather than taken from a library: no Debian C library
 * offers atomic sets of files with a journal. */
#define _GNU_SOURCE /* flock, O_NOFOLLOW, dirfd, strndup */

#include "atomic.h"

#include "guard.h"
#include "input.h"

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

/* A file of a set, by its names in the set's folder (the journal's). */
typedef struct {
    aim_atomic_file *file; /* NULL: final is to be removed */
    char *temp_name, *final_name;
} entry;

struct aim_atomic_set {
    char *dir;     /* the set's folder, as the caller named it (messages) */
    int dir_fd;    /* open on it: the renames and removals are relative to it */
    char *journal; /* dir/.name.journal */
    entry *e;
    int n, cap;
    /* files of another folder to remove once the set is in place (kept
     * seed files): outside the journal (aim_atomic_set_remove) */
    char **later;
    int nlater;
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

/* take_lock's results besides a descriptor */
enum { LOCK_HELD = -1, LOCK_FAILED = -2, LOCK_REFUSED = -3 };

static int take_lock(const char *path, long *holder, const char **why);
static void lock_refused(const char *path, const char *why);
static void set_release(aim_atomic_set *set, int remove_temps);

/* The last component of path. */
static const char *base_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* Syncs the directory open on fd. Returns 0, or -1 (errno set). */
static int sync_fd(int fd)
{
    /* some file systems cannot sync a directory: nothing to wait for */
    return fsync(fd) != 0 && errno != EINVAL ? -1 : 0;
}

aim_atomic_set *aim_atomic_set_create(const char *dir, const char *name)
{
    aim_atomic_set *set = calloc(1, sizeof *set);
    if (set) {
        set->lock_fd = set->lock_guard = set->dir_fd = -1;
        set->dir = strdup(dir);
        set->journal = name_file(dir, name, ".journal");
    }
    if (!set || !set->dir || !set->journal) {
        fprintf(stderr, "aimdyn: out of memory\n");
        if (set)
            set_release(set, 1);
        return NULL;
    }
    if ((set->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
        fprintf(stderr, "aimdyn: cannot open the folder '%s': %s\n", dir, strerror(errno));
        set_release(set, 1);
        return NULL;
    }
    return set;
}

aim_atomic_set *aim_atomic_set_own(const char *final)
{
    char *dir = dir_of(final);
    aim_atomic_set *set = dir ? aim_atomic_set_create(dir, base_of(final)) : NULL;
    free(dir);
    if (!set)
        return NULL;
    if (!(set->lock = strdup(set->journal))) {
        aim_atomic_set_free(set);
        fprintf(stderr, "aimdyn: out of memory\n");
        return NULL;
    }
    strcpy(set->lock + strlen(set->lock) - strlen(".journal"), ".lock");
    /* another run holds it only while it completes a journal of this name
     * that a killed run left: a moment */
    long holder = 0;
    const char *why = NULL;
    for (int tries = 0; tries < 50 && set->lock_fd < 0; tries++) {
        aim_guard_enter();
        set->lock_fd = take_lock(set->lock, &holder, &why);
        if (set->lock_fd >= 0 && (set->lock_guard = aim_guard_add(set->lock)) < 0) {
            unlink(set->lock);
            close(set->lock_fd);
            set->lock_fd = LOCK_FAILED;
            errno = ENOMEM;
        }
        aim_guard_leave();
        if (set->lock_fd == LOCK_HELD)
            nanosleep(&(struct timespec){0, 100000000}, NULL);
        else if (set->lock_fd < LOCK_HELD)
            break;
    }
    if (set->lock_fd == LOCK_REFUSED)
        lock_refused(set->lock, why);
    else if (set->lock_fd < 0)
        fprintf(stderr, "aimdyn: cannot lock '%s': %s\n", set->lock,
                set->lock_fd == LOCK_HELD ? "another process holds it" : strerror(errno));
    if (set->lock_fd < 0) {
        aim_atomic_set_free(set);
        return NULL;
    }
    return set;
}

/* 1 when path's folder is set's, 0 when it is another, -1 when it
 * cannot be looked at (errno set). */
static int in_folder(const aim_atomic_set *set, const char *path)
{
    char *dir = dir_of(path);
    struct stat a, b;
    int rc = -1;
    if (!dir)
        errno = ENOMEM;
    else if (stat(dir, &a) == 0 && fstat(set->dir_fd, &b) == 0)
        rc = a.st_dev == b.st_dev && a.st_ino == b.st_ino;
    free(dir);
    return rc;
}

/* Appends f (NULL: the removal of final) to set. Returns 0, or -1
 * (said). */
static int set_append(aim_atomic_set *set, aim_atomic_file *f, const char *final)
{
    const int here = in_folder(set, final);
    if (here < 0 && !f && errno == ENOENT)
        return 0; /* no folder: no file to remove */
    if (here < 0) {
        fprintf(stderr, "aimdyn: cannot look at the folder of '%s': %s\n", final,
                strerror(errno));
        return -1;
    }
    if (!here && f) {
        fprintf(stderr, "aimdyn: '%s' is not in the folder '%s' of the files it is written "
                        "with: a journal names the files of its own folder only\n", final,
                set->dir);
        return -1;
    }
    if (!here) {
        char **later = realloc(set->later, sizeof *later * ((size_t)set->nlater + 1));
        if (later)
            set->later = later;
        if (!later || !(set->later[set->nlater] = strdup(final))) {
            fprintf(stderr, "aimdyn: out of memory\n");
            return -1;
        }
        set->nlater++;
        return 0;
    }
    if (set->n == set->cap) {
        const int cap = set->cap ? 2 * set->cap : 16;
        entry *e = realloc(set->e, sizeof *e * (size_t)cap);
        if (!e) {
            fprintf(stderr, "aimdyn: out of memory\n");
            return -1;
        }
        set->e = e;
        set->cap = cap;
    }
    entry *e = &set->e[set->n];
    e->file = f;
    e->final_name = strdup(base_of(final));
    e->temp_name = f ? strdup(base_of(f->temp)) : NULL;
    if (!e->final_name || (f && !e->temp_name)) {
        free(e->final_name);
        free(e->temp_name);
        fprintf(stderr, "aimdyn: out of memory\n");
        return -1;
    }
    set->n++;
    return 0;
}

int aim_atomic_set_add(aim_atomic_set *set, aim_atomic_file *f)
{
    if (sync_file(f) || set_append(set, f, f->final)) {
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
    return set_append(set, NULL, final);
}

int aim_atomic_set_in_folder(const aim_atomic_set *set, const char *path)
{
    return in_folder(set, path) == 1;
}

const char *aim_atomic_set_temp(const aim_atomic_set *set, const char *final)
{
    for (int i = 0; i < set->n; i++)
        if (set->e[i].file && !strcmp(set->e[i].file->final, final))
            return set->e[i].file->temp;
    return NULL;
}

/* The journal: "aimdyn journal", then per file "R" temp final or
 * "U" final, then "E"; every field ends with a NUL. Names are those of
 * files in the journal's own folder: no '/' (a journal that names
 * anything else is refused, each_record). */
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
                fwrite(e->temp_name, 1, strlen(e->temp_name) + 1, m);
            } else {
                fwrite("U", 1, 2, m);
            }
            fwrite(e->final_name, 1, strlen(e->final_name) + 1, m);
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

/* A rename (temp to final) or a removal (temp NULL) of names in the
 * folder dir (open on dir_fd); done_ok: a temporary file that is gone was
 * renamed before (a journal's). Returns 0 or -1 (said). */
static int apply(int dir_fd, const char *dir, const char *temp, const char *final, int done_ok)
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

static void set_release(aim_atomic_set *set, int remove_temps)
{
    for (int i = 0; i < set->nhooks; i++)
        set->hooks[i].done(set->hooks[i].ctx);
    free(set->hooks);
    for (int i = 0; i < set->n; i++) {
        if (set->e[i].file)
            file_free(set->e[i].file, remove_temps);
        free(set->e[i].temp_name);
        free(set->e[i].final_name);
    }
    free(set->e);
    for (int i = 0; i < set->nlater; i++)
        free(set->later[i]);
    free(set->later);
    free(set->journal);
    free(set->dir);
    if (set->dir_fd >= 0)
        close(set->dir_fd);
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

/* The files of other folders that set removes once it is in place.
 * Returns 0, or -1 (said). */
static int remove_later(const aim_atomic_set *set)
{
    int failed = 0;
    for (int i = 0; i < set->nlater; i++)
        if (unlink(set->later[i]) != 0 && errno != ENOENT) {
            fprintf(stderr, "aimdyn: cannot remove '%s': %s\n", set->later[i], strerror(errno));
            failed = 1;
        }
    sync_dirs(set->later, set->nlater);
    return failed ? -1 : 0;
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
    aim_guard_enter();
    /* one file needs no journal: its rename is atomic */
    if (set->n > 1 && write_journal(set) != 0) {
        set_release(set, 1);
        aim_guard_leave();
        return -1;
    }
    int failed = 0;
    const int n = set->n;
    for (int i = 0; i < n; i++)
        failed |= apply(set->dir_fd, set->dir, set->e[i].temp_name, set->e[i].final_name, 0);
    if (n > 0 && sync_fd(set->dir_fd) != 0)
        fprintf(stderr, "aimdyn: cannot sync the directory '%s': %s\n", set->dir,
                strerror(errno));
    if (failed && n > 1)
        fprintf(stderr, "aimdyn: the files of this run are not all in place; the next run "
                        "into this folder completes them ('%s')\n", set->journal);
    else if (!failed && n > 1 &&
             (unlinkat(set->dir_fd, base_of(set->journal), 0) != 0 || sync_fd(set->dir_fd)))
        fprintf(stderr, "aimdyn: cannot remove the journal '%s': %s\n", set->journal,
                strerror(errno));
    if (!failed)
        failed = remove_later(set);
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
    r->failed |= apply(r->dir_fd, r->dir, temp, final, 1);
    r->n++;
}

/* Completes the renames of the journal name in the folder dir (open on
 * dir_fd) that a run killed during its commit left. Returns 0 or -1
 * (said). */
static int roll_forward(int dir_fd, const char *dir, const char *name)
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
        if (r.failed || sync_fd(dir_fd) != 0 || unlinkat(dir_fd, name, 0) != 0 ||
            sync_fd(dir_fd) != 0)
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

static void list_temp(const char *temp, const char *final, void *ctx)
{
    (void)final;
    if (temp) {
        fputs(temp, ctx);
        fputc('\0', ctx);
    }
}

/* A journal's file name: ".NAME.journal" (NAME not empty). */
static int journal_name(const char *s)
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
        if (!journal_name(de->d_name))
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

int aim_atomic_inner_folder(const char *dir)
{
    struct stat st;
    if (lstat(dir, &st) != 0) {
        if (errno == ENOENT)
            return 0;
        fprintf(stderr, "aimdyn: cannot look at the folder '%s': %s\n", dir, strerror(errno));
        return -1;
    }
    if (S_ISDIR(st.st_mode))
        return 0;
    fprintf(stderr, "aimdyn: '%s' is %s; allowed: the folder that aimdyn makes there, or "
                    "none: nothing was written through it; look at it and remove it\n", dir,
            S_ISLNK(st.st_mode) ? "a symbolic link" : "not a directory");
    return -1;
}

/* ---- output locks ---- */

/* A lock file holds the process id of its holder, which writes it once
 * it holds the lock: nothing, or decimal digits and a line break. */
enum { LOCK_TEXT_MAX = 32 };

/* Why the file open on fd is not a lock file of aimdyn (NULL: it is one):
 * a lock taken through it would truncate and overwrite what it holds. */
static const char *not_a_lock(int fd)
{
    struct stat st;
    char text[LOCK_TEXT_MAX + 1];
    if (fstat(fd, &st) != 0)
        return "a file that cannot be looked at";
    if (!S_ISREG(st.st_mode))
        return "not a regular file (a device, a pipe or a socket)";
    if (st.st_nlink > 1)
        return "a file with other names too (a hard link)";
    if (st.st_size > LOCK_TEXT_MAX)
        return "a file of other data (longer than a process id)";
    const ssize_t n = pread(fd, text, sizeof text - 1, 0);
    if (n < 0)
        return "a file that cannot be read";
    for (ssize_t i = 0; i < n; i++)
        if (!(text[i] >= '0' && text[i] <= '9') && !(text[i] == '\n' && i == n - 1))
            return "a file of other data (not a process id)";
    return NULL;
}

/* Takes the lock file at path (created if needed, never through a
 * symbolic link): its descriptor; LOCK_HELD when another process holds it
 * (its pid, if it wrote one, in *holder); LOCK_REFUSED when path is not a
 * lock file of aimdyn (*why says what it is; nothing written to it);
 * LOCK_FAILED on failure (errno set). The lock file is removed when
 * released, so a lock taken on a file that its holder removed meanwhile
 * is taken again on the new file. */
static int take_lock(const char *path, long *holder, const char **why)
{
    for (int tries = 0; tries < 8; tries++) {
        int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd < 0 && errno == EEXIST) {
            fd = open(path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
            if (fd < 0 && errno == ENOENT)
                continue; /* removed by its holder between the two opens */
        }
        if (fd < 0) {
            *why = errno == ELOOP    ? "a symbolic link"
                   : errno == EISDIR ? "a directory"
                   : errno == ENXIO  ? "a socket"
                                     : NULL;
            return *why ? LOCK_REFUSED : LOCK_FAILED;
        }
        if ((*why = not_a_lock(fd))) {
            close(fd);
            return LOCK_REFUSED;
        }
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            const int err = errno;
            char buf[LOCK_TEXT_MAX] = "";
            if (err == EWOULDBLOCK && pread(fd, buf, sizeof buf - 1, 0) > 0)
                *holder = strtol(buf, NULL, 10);
            close(fd);
            errno = err;
            return err == EWOULDBLOCK ? LOCK_HELD : LOCK_FAILED;
        }
        if (same_file(fd, path))
            return fd;
        close(fd);
    }
    errno = EAGAIN;
    return LOCK_FAILED;
}

static void lock_refused(const char *path, const char *why)
{
    fprintf(stderr, "aimdyn: the lock '%s' is %s; allowed: a lock file that aimdyn made (a "
                    "regular file that holds a process id), or none: nothing was written "
                    "through it; look at it and remove it\n", path, why);
}

/* Completes every journal in dir whose run is gone: own's (its lock is
 * held), and another name's when its lock is free (taken for the
 * moment). So no run writes beside a set that an earlier run left
 * half-renamed, whatever its lock (e.g. a compare killed during its
 * renames, then an sgd at one of its d). Returns 0 or -1 (said). */
static int roll_forward_dir(const char *dir, const char *own)
{
    DIR *d = opendir(dir);
    if (!d) {
        if (errno == ENOENT)
            return 0;
        fprintf(stderr, "aimdyn: cannot read the directory '%s': %s\n", dir, strerror(errno));
        return -1;
    }
    char *names = NULL; /* the journals' file names, NUL-separated */
    size_t len = 0;
    FILE *m = open_memstream(&names, &len);
    struct dirent *de;
    while (m && (de = readdir(d)))
        if (journal_name(de->d_name))
            fwrite(de->d_name, 1, strlen(de->d_name) + 1, m);
    if (!m || fclose(m)) {
        fprintf(stderr, "aimdyn: out of memory\n");
        closedir(d);
        return -1;
    }
    int rc = 0;
    for (size_t pos = 0; pos < len; pos += strlen(names + pos) + 1) {
        const char *journal = names + pos;
        /* ".NAME.journal": NAME */
        char *name = strndup(journal + 1, strlen(journal) - 9);
        char *lock = name ? name_file(dir, name, ".lock") : NULL;
        long holder = 0;
        const char *why = NULL;
        const int mine = name && !strcmp(name, own);
        const int fd = !lock || mine ? LOCK_FAILED : take_lock(lock, &holder, &why);
        if (!lock) {
            fprintf(stderr, "aimdyn: out of memory\n");
            rc = -1;
        } else if (fd == LOCK_REFUSED) {
            lock_refused(lock, why);
            rc = -1;
        } else if ((mine || fd >= 0) && roll_forward(dirfd(d), dir, journal) != 0) {
            rc = -1;
        }
        if (fd >= 0) {
            unlink(lock);
            close(fd);
        }
        free(name);
        free(lock);
    }
    closedir(d);
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
    const char *why = NULL;
    aim_guard_enter();
    int fd = take_lock(path, &holder, &why), guard = -1;
    int err = errno;
    if (fd >= 0 && (nlocks == (int)(sizeof lock_fds / sizeof lock_fds[0]) ||
                    (guard = aim_guard_add(path)) < 0)) {
        err = guard < 0 && nlocks < (int)(sizeof lock_fds / sizeof lock_fds[0]) ? ENOMEM
                                                                                 : EMFILE;
        unlink(path);
        close(fd);
        fd = LOCK_FAILED;
    }
    aim_guard_leave();
    int rc = 0;
    if (fd >= 0) {
        /* a lock file of aimdyn (take_lock): its old process id, if any,
         * is replaced */
        char buf[LOCK_TEXT_MAX];
        const int n = snprintf(buf, sizeof buf, "%ld\n", (long)getpid());
        lock_fds[nlocks++] = fd;
        if (ftruncate(fd, 0) != 0 || pwrite(fd, buf, (size_t)n, 0) != n)
            fprintf(stderr, "aimdyn: warning: cannot write the process id into '%s'\n", path);
        /* a folder whose journals or temporaries are refused is left as
         * it is, its lock too */
        if (roll_forward_dir(dir, name) != 0 || aim_atomic_clean(dir, name) < 0) {
            aim_guard_enter();
            unlink(path);
            close(lock_fds[--nlocks]);
            aim_guard_drop(guard);
            aim_guard_leave();
            rc = -1;
        }
    } else if (fd == LOCK_HELD) {
        char who[64] = "";
        if (holder > 0)
            snprintf(who, sizeof who, " (process %ld)", holder);
        fprintf(stderr, "aimdyn: another aimdyn run%s is writing these files (it holds the lock "
                        "'%s'); wait until it ends, or %s\n", who, path, hint);
        rc = 1;
    } else if (fd == LOCK_REFUSED) {
        lock_refused(path, why);
        rc = -1;
    } else {
        fprintf(stderr, "aimdyn: cannot lock '%s': %s\n", path, strerror(err ? err : ENOMEM));
        rc = -1;
    }
    free(path);
    return rc;
}
