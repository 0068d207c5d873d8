/* aim_atomic, sets: the files that belong together, renamed into place
 * as one step under a journal (aim_atomic_set_create ...
 * aim_atomic_set_commit). The top part of aim_atomic: it calls
 * atomic_lock.c, atomic_journal.c and atomic.c, none of which calls it. */

#include "atomic.h"
#include "atomic_internal.h"

#include "guard.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- sets ---- */

static void set_release(aim_atomic_set *set, int remove_temps);

/* The last component of path. */
static const char *base_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

aim_atomic_set *aim_atomic_set_create(const char *dir, const char *name)
{
    aim_atomic_set *set = calloc(1, sizeof *set);
    if (set) {
        set->lock_fd = set->lock_guard = set->dir_fd = -1;
        set->dir = strdup(dir);
        set->journal = aim_atomic_name_file(dir, name, ".journal");
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
    char *dir = aim_atomic_dir_of(final);
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
        set->lock_fd = aim_atomic_take_lock(set->lock, &holder, &why);
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
        aim_atomic_lock_refused(set->lock, why);
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
    char *dir = aim_atomic_dir_of(path);
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
        aim_atomic_entry *e = realloc(set->e, sizeof *e * (size_t)cap);
        if (!e) {
            fprintf(stderr, "aimdyn: out of memory\n");
            return -1;
        }
        set->e = e;
        set->cap = cap;
    }
    aim_atomic_entry *e = &set->e[set->n];
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
    if (aim_atomic_sync_file(f) || set_append(set, f, f->final)) {
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

/* Syncs the directory of each path once. */
static void sync_dirs(char *const *paths, int n)
{
    for (int i = 0; i < n; i++) {
        char *di = aim_atomic_dir_of(paths[i]);
        int seen = 0;
        for (int k = 0; di && !seen && k < i; k++) {
            char *dk = aim_atomic_dir_of(paths[k]);
            seen = dk && !strcmp(di, dk);
            free(dk);
        }
        if (di && !seen && aim_atomic_sync_dir(paths[i]) != 0)
            fprintf(stderr, "aimdyn: cannot sync the directory '%s': %s\n", di, strerror(errno));
        free(di);
    }
}

static void set_release(aim_atomic_set *set, int remove_temps)
{
    for (int i = 0; i < set->nhooks; i++)
        set->hooks[i].done(set->hooks[i].ctx);
    free(set->hooks);
    for (int i = 0; i < set->n; i++) {
        if (set->e[i].file)
            aim_atomic_file_free(set->e[i].file, remove_temps);
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
    if (set->n > 1 && aim_atomic_write_journal(set) != 0) {
        set_release(set, 1);
        aim_guard_leave();
        return -1;
    }
    int failed = 0;
    const int n = set->n;
    for (int i = 0; i < n; i++)
        failed |= aim_atomic_apply(set->dir_fd, set->dir, set->e[i].temp_name,
                                   set->e[i].final_name, 0);
    if (n > 0 && aim_atomic_sync_fd(set->dir_fd) != 0)
        fprintf(stderr, "aimdyn: cannot sync the directory '%s': %s\n", set->dir,
                strerror(errno));
    if (failed && n > 1)
        fprintf(stderr, "aimdyn: the files of this run are not all in place; the next run "
                        "into this folder completes them ('%s')\n", set->journal);
    else if (!failed && n > 1 &&
             (unlinkat(set->dir_fd, base_of(set->journal), 0) != 0 ||
              aim_atomic_sync_fd(set->dir_fd)))
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
