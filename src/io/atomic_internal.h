/* aim_atomic's internals, shared by its parts (not installed): the
 * structures of a file and a set, and what a lower part offers the upper
 * ones. The parts, lowest first; each calls only those before it:
 *   atomic.c          single files, paths, syncs
 *   atomic_journal.c  a set's journal: written, applied, completed;
 *                     stale temporary files
 *   atomic_lock.c     output locks, folder checks
 *   atomic_set.c      sets */
#ifndef AIM_ATOMIC_INTERNAL_H
#define AIM_ATOMIC_INTERNAL_H

#include <stddef.h>

#include "atomic.h"

struct aim_atomic_file {
    int fd;
    int guard; /* its aim_guard entry */
    char *temp, *final;
};

/* A file of a set, by its names in the set's folder (the journal's). */
typedef struct {
    aim_atomic_file *file; /* NULL: final is to be removed */
    char *temp_name, *final_name;
} aim_atomic_entry;

struct aim_atomic_set {
    char *dir;     /* the set's folder, as the caller named it (messages) */
    int dir_fd;    /* open on it: the renames and removals are relative to it */
    char *journal; /* dir/.name.journal */
    aim_atomic_entry *e;
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

/* aim_atomic_take_lock's results besides a descriptor */
enum { LOCK_HELD = -1, LOCK_FAILED = -2, LOCK_REFUSED = -3 };

/* ---- atomic.c ---- */

/* dir + "/." + name + tail (malloc'd) */
char *aim_atomic_name_file(const char *dir, const char *name, const char *tail);

/* The directory part of path (malloc'd): "." when there is none. */
char *aim_atomic_dir_of(const char *path);

/* fd is open on the file that path names now (a cleaner may have removed
 * a temporary between its creation and its lock). */
int aim_atomic_same_file(int fd, const char *path);

/* Syncs the directory open on fd. Returns 0, or -1 (errno set). */
int aim_atomic_sync_fd(int fd);

/* write(2) of all n bytes of buf (retrying short writes). Returns 0, or
 * -1 (errno set). */
int aim_atomic_write_all(int fd, const char *buf, size_t n);

/* Closes f and frees it, its temporary file removed when remove_temp. */
void aim_atomic_file_free(aim_atomic_file *f, int remove_temp);

/* Syncs f. Returns 0, or -1 (said). */
int aim_atomic_sync_file(const aim_atomic_file *f);

/* ---- atomic_journal.c ---- */

/* Writes set's journal (set->journal) and renames it into place. Returns
 * 0, or -1 (said). */
int aim_atomic_write_journal(const aim_atomic_set *set);

/* A rename (temp to final) or a removal (temp NULL) of names in the
 * folder dir (open on dir_fd); done_ok: a temporary file that is gone was
 * renamed before (a journal's). Returns 0 or -1 (said). */
int aim_atomic_apply(int dir_fd, const char *dir, const char *temp, const char *final, int done_ok);

/* Completes the renames of the journal name in the folder dir (open on
 * dir_fd) that a run killed during its commit left. Returns 0 or -1
 * (said). */
int aim_atomic_roll_forward(int dir_fd, const char *dir, const char *name);

/* A journal's file name: ".NAME.journal" (NAME not empty). */
int aim_atomic_journal_name(const char *s);

/* ---- atomic_lock.c ---- */

/* Takes the lock file at path: its descriptor, or LOCK_HELD (the
 * holder's pid in *holder), LOCK_REFUSED (*why says what path is) or
 * LOCK_FAILED (errno set). */
int aim_atomic_take_lock(const char *path, long *holder, const char **why);

/* Says on stderr that the lock path is refused, and why. */
void aim_atomic_lock_refused(const char *path, const char *why);

#endif
