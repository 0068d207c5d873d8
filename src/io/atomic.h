/* aim_atomic: result files that are replaced whole, alone or as a set,
 * and never left half-written, mixed or behind.
 *
 * - A file is written to a temporary name beside its final one
 *   ("dir/.base.XXXXXX"), synced, renamed into place, and its directory
 *   synced (aim_atomic_replace).
 * - Files that belong together (the ODE, SGD, agreement and figure files
 *   of one compare; a figure's PNG and SVG) are renamed as a set: the
 *   list of renames (a journal, dir/.name.journal) is made durable first,
 *   so that a run killed in the middle of the renames (SIGKILL, power
 *   loss) is completed by the next run that takes the same output lock.
 * - An output lock (dir/.name.lock, flock) keeps two runs from writing the
 *   same files; taking it completes an interrupted set and removes the
 *   temporary files that killed runs left.
 * - On SIGINT, SIGTERM, SIGHUP or SIGQUIT the process removes its
 *   temporary and lock files before it ends by the same signal (aim_guard);
 *   during a set's renames the signal waits until they are done.
 *
 * A journal names the files of its own folder only, by their plain names
 * (no '/'), and a run completes it relative to that folder; a journal
 * that names anything else, or is not a regular file, is refused and left
 * in place. Locks, journals and temporaries are never opened through a
 * symbolic link, and a lock path that is not a lock file of aimdyn is
 * refused rather than truncated. Not thread-safe: call from the main
 * thread (other threads may take the signals). */
#ifndef AIM_ATOMIC_H
#define AIM_ATOMIC_H

#include <sys/types.h>

typedef struct aim_atomic_file aim_atomic_file;

/* Creates a temporary file beside final, for writing (mode 0666 &
 * ~umask, the parent directory must exist, final must not be a
 * directory). NULL with the reason on stderr. */
aim_atomic_file *aim_atomic_create(const char *final);

/* Its descriptor (kept open until the file is replaced or discarded),
 * its temporary and its final name. */
int aim_atomic_fd(const aim_atomic_file *f);
const char *aim_atomic_temp(const aim_atomic_file *f);
const char *aim_atomic_final(const aim_atomic_file *f);

/* Writes n bytes of buf to f (retrying short writes). Returns 0, or -1
 * (errno set). */
int aim_atomic_write(aim_atomic_file *f, const void *buf, size_t n);

/* Syncs f, renames it into place and syncs the directory; frees f (its
 * temporary removed on failure). Returns 0, or -1 with the reason on
 * stderr. */
int aim_atomic_replace(aim_atomic_file *f);

/* Removes the temporary file and frees f (NULL: nothing). */
void aim_atomic_discard(aim_atomic_file *f);

typedef struct aim_atomic_set aim_atomic_set;

/* An empty set whose journal is dir/.name.journal (the dir and name of
 * an output lock the process holds). NULL when out of memory (said). */
aim_atomic_set *aim_atomic_set_create(const char *dir, const char *name);

/* An empty set for files that no output lock of the process covers (a
 * table and its JSON sidecar): its journal and its lock are named after
 * final's file name (dir/.BASE.journal, dir/.BASE.lock), the lock taken
 * now and released when the set is committed or freed, so that a killed
 * commit is completed by the next run into dir (aim_atomic_lock). NULL
 * on failure (said). */
aim_atomic_set *aim_atomic_set_own(const char *final);

/* Syncs f and adds it to set, which owns it from here on (also when
 * this fails). f must be in set's folder (the journal's: a journal names
 * the files of its folder only). Returns 0, or -1 with the reason on
 * stderr. */
int aim_atomic_set_add(aim_atomic_set *set, aim_atomic_file *f);

/* final is removed when set is committed (a file that the set's new
 * files would leave stale; a directory is left alone). A file of another
 * folder (a kept seed file) is removed after the commit, outside the
 * journal: a run killed in between leaves it, and the next run reads it
 * again. Returns 0, or -1 (said: out of memory, or its folder cannot be
 * looked at). */
int aim_atomic_set_remove(aim_atomic_set *set, const char *final);

/* 1 when path is in set's folder (the same directory, however named),
 * else 0. */
int aim_atomic_set_in_folder(const aim_atomic_set *set, const char *path);

/* The temporary name under which final waits in set, or NULL (e.g. to
 * draw a figure from files of the set before it is committed). */
const char *aim_atomic_set_temp(const aim_atomic_set *set, const char *final);

/* fn(set, ctx) is called when set is committed, before its renames, in
 * the order added: to write files that list the set's other files (a
 * table's sidecar); fn may add files to set. It returns 0, or -1 (said:
 * the commit then fails, every file discarded). done(ctx) is called when
 * set is committed or freed (also when this fails). Returns 0, or -1
 * (out of memory, said). */
int aim_atomic_set_on_commit(aim_atomic_set *set, int (*fn)(aim_atomic_set *set, void *ctx),
                             void (*done)(void *ctx), void *ctx);

/* The number of entries of set, and the final name of entry i (NULL for
 * a stale file that set removes), in the order added. */
int aim_atomic_set_count(const aim_atomic_set *set);
const char *aim_atomic_set_final(const aim_atomic_set *set, int i);

/* Renames every file of set into place and removes the stale ones, as
 * one step (see above), then frees set. Returns 0, or -1 with the reason
 * on stderr (renames that failed are retried by the next run). */
int aim_atomic_set_commit(aim_atomic_set *set);

/* Discards every file of set and frees it (NULL: nothing). */
void aim_atomic_set_free(aim_atomic_set *set);

/* Takes the output lock dir/.name.lock for the rest of the process
 * (the file is removed at exit; a symbolic link, a FIFO, a directory or
 * a file of other data there is refused, -1). Then completes every set
 * in dir that a killed run left half-renamed (its journal: name's, and
 * another name's whose lock is free; a journal refused makes it -1), and
 * removes the temporary files of name (aim_atomic_clean). hint says what to change when another run holds
 * the lock (e.g. "choose another --figure"). Returns 0; 1 when another
 * process holds the lock; -1 on failure (both said on stderr). */
int aim_atomic_lock(const char *dir, const char *name, const char *hint);

/* In a forked child that does not exec (a sweep worker): closes the
 * descriptors of the locks it inherited, so that they are released when
 * the process that took them ends, whatever its children do. */
void aim_atomic_after_fork(void);

/* Removes the stale temporary files of name in dir: "dir/.name-*.XXXXXX",
 * "dir/.name.*.XXXXXX" and a journal's "dir/..name.journal.XXXXXX" that
 * no live process holds and no journal lists. Returns how many, or -1
 * (said; also when a journal in dir is refused). */
int aim_atomic_clean(const char *dir, const char *name);

/* A folder that aimdyn makes inside an output folder (a seed folder, a
 * sweep's points): 0 when it is absent or a directory; -1 (said) when it
 * is a symbolic link or another file, so that no run writes, renames or
 * removes through it outside its output folder. */
int aim_atomic_inner_folder(const char *dir);

/* Syncs the directory that holds path. Returns 0, or -1 (errno set). */
int aim_atomic_sync_dir(const char *path);

#endif
