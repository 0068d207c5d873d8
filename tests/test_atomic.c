/* aim_atomic: files replaced whole, sets renamed together (and completed
 * from their journal after a kill), stale temporary files removed, output
 * locks, and the cleanup of a process ended by a signal. */
#define _DEFAULT_SOURCE /* symlink, link, mkfifo */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "atomic.h"
#include "guard.h"

/* ---------- helpers ---------- */

static char *make_tmpdir(void)
{
    const char *base = getenv("TMPDIR");
    if (!base || base[0] != '/')
        base = "/tmp";
    char *t = malloc(strlen(base) + 32);
    assert_non_null(t);
    sprintf(t, "%s/aimdyn-atomic-XXXXXX", base);
    assert_non_null(mkdtemp(t));
    return t;
}

static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        assert_int_equal(unlink(p), 0);
    }
    closedir(d);
    assert_int_equal(rmdir(dir), 0);
}

/* The entries of dir (hidden ones included), sorted, one per line. */
static void listing(const char *dir, char *buf, size_t n)
{
    char names[64][256];
    int count = 0;
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d)) && count < 64)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            snprintf(names[count++], sizeof names[0], "%s", e->d_name);
    closedir(d);
    for (int i = 1; i < count; i++)
        for (int j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            char t[256];
            memcpy(t, names[j], sizeof t);
            memcpy(names[j], names[j - 1], sizeof t);
            memcpy(names[j - 1], t, sizeof t);
        }
    buf[0] = '\0';
    for (int i = 0; i < count; i++) {
        strncat(buf, names[i], n - strlen(buf) - 1);
        strncat(buf, "\n", n - strlen(buf) - 1);
    }
}

#define assert_listing(dir, want)                 \
    do {                                          \
        char got_[4096];                          \
        listing(dir, got_, sizeof got_);          \
        assert_string_equal(got_, want);          \
    } while (0)

static void put(const char *dir, const char *name, const char *text)
{
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static void assert_content(const char *dir, const char *name, const char *want)
{
    char p[4096], buf[256] = "";
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "r");
    assert_non_null(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    assert_string_equal(buf, want);
}

/* A new file for dir/name holding text, not yet in place. */
static aim_atomic_file *fresh(const char *dir, const char *name, const char *text)
{
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    aim_atomic_file *f = aim_atomic_create(p);
    assert_non_null(f);
    assert_int_equal(write(aim_atomic_fd(f), text, strlen(text)), (ssize_t)strlen(text));
    return f;
}

/* ---------- single files ---------- */

static void test_replace(void **state)
{
    (void)state;
    char *dir = make_tmpdir();
    put(dir, "r.tsv", "old\n");
    aim_atomic_file *f = fresh(dir, "r.tsv", "new\n");
    /* the new text waits in a hidden temporary beside the old file */
    const char *temp = strrchr(aim_atomic_temp(f), '/') + 1;
    assert_true(!strncmp(temp, ".r.tsv.", 7) && strlen(temp) == 13);
    assert_content(dir, "r.tsv", "old\n");
    assert_int_equal(aim_atomic_replace(f), 0);
    assert_content(dir, "r.tsv", "new\n");
    assert_listing(dir, "r.tsv\n");
    /* a result gets 0666 & ~umask, not mkstemp's 0600 */
    char p[4096];
    snprintf(p, sizeof p, "%s/r.tsv", dir);
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    const mode_t mask = umask(0);
    umask(mask);
    assert_int_equal(st.st_mode & 0777, 0666 & ~mask);

    f = fresh(dir, "r.tsv", "discarded\n");
    aim_atomic_discard(f);
    assert_content(dir, "r.tsv", "new\n");
    assert_listing(dir, "r.tsv\n");

    /* a directory in the way: refused before anything is written */
    snprintf(p, sizeof p, "%s/d.tsv", dir);
    assert_int_equal(mkdir(p, 0777), 0);
    assert_null(aim_atomic_create(p));
    assert_int_equal(rmdir(p), 0);
    remove_dir(dir);
    free(dir);
}

/* ---------- sets ---------- */

static void test_set_commit(void **state)
{
    (void)state;
    char *dir = make_tmpdir();
    put(dir, "run-a.tsv", "old a\n");
    put(dir, "run-b.tsv", "old b\n");
    put(dir, "run-c.png", "old figure\n");
    aim_atomic_set *set = aim_atomic_set_create(dir, "run");
    assert_non_null(set);
    assert_int_equal(aim_atomic_set_add(set, fresh(dir, "run-a.tsv", "new a\n")), 0);
    assert_int_equal(aim_atomic_set_add(set, fresh(dir, "run-b.tsv", "new b\n")), 0);
    char c[4096];
    snprintf(c, sizeof c, "%s/run-c.png", dir);
    assert_int_equal(aim_atomic_set_remove(set, c), 0);
    /* the temporary file of a member, e.g. to draw it before the commit */
    char a[4096];
    snprintf(a, sizeof a, "%s/run-a.tsv", dir);
    const char *ta = aim_atomic_set_temp(set, a);
    assert_non_null(ta);
    assert_int_equal(access(ta, R_OK), 0);
    assert_null(aim_atomic_set_temp(set, c));
    /* nothing changes before the commit */
    assert_content(dir, "run-a.tsv", "old a\n");
    assert_content(dir, "run-c.png", "old figure\n");
    assert_int_equal(aim_atomic_set_commit(set), 0);
    assert_content(dir, "run-a.tsv", "new a\n");
    assert_content(dir, "run-b.tsv", "new b\n");
    /* no journal, no temporary file, the stale figure gone */
    assert_listing(dir, "run-a.tsv\nrun-b.tsv\n");
    remove_dir(dir);
    free(dir);
}

static void test_set_free(void **state)
{
    (void)state;
    char *dir = make_tmpdir();
    put(dir, "run-a.tsv", "old a\n");
    aim_atomic_set *set = aim_atomic_set_create(dir, "run");
    assert_non_null(set);
    assert_int_equal(aim_atomic_set_add(set, fresh(dir, "run-a.tsv", "new a\n")), 0);
    assert_int_equal(aim_atomic_set_add(set, fresh(dir, "run-b.tsv", "new b\n")), 0);
    aim_atomic_set_free(set); /* a failed run: the old files stay */
    assert_content(dir, "run-a.tsv", "old a\n");
    assert_listing(dir, "run-a.tsv\n");
    remove_dir(dir);
    free(dir);
}

/* ---------- journals of killed runs ---------- */

/* The journal of aim_atomic_set_commit (atomic_journal.c): the tag, then "R"
 * temp final or "U" final, then "E", every field NUL-terminated; names
 * as given (plain names of files in dir, as aimdyn writes them). */
static void put_journal(const char *dir, const char *name, const char *const *fields, int n,
                        int complete)
{
    char p[4096];
    snprintf(p, sizeof p, "%s/.%s.journal", dir, name);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    fwrite("aimdyn journal", 1, 15, f);
    for (int i = 0; i < n; i++) {
        if (strlen(fields[i]) > 1) {
            fputs(fields[i], f);
            fputc('\0', f);
        } else {
            fwrite(fields[i], 1, 2, f);
        }
    }
    if (complete)
        fwrite("E", 1, 2, f);
    assert_int_equal(fclose(f), 0);
}

static void test_roll_forward(void **state)
{
    (void)state;
    char *dir = make_tmpdir();
    /* a run killed after its journal and its first rename: run-a.tsv is
     * new, run-b.tsv still old, its new text in a temporary file, and the
     * stale figure not yet removed */
    put(dir, "run-a.tsv", "new a\n");
    put(dir, "run-b.tsv", "old b\n");
    put(dir, ".run-b.tsv.Qx81Zk", "new b\n");
    put(dir, "run-c.png", "old figure\n");
    const char *fields[] = {"R", ".run-a.tsv.Ab12Cd", "run-a.tsv", "R", ".run-b.tsv.Qx81Zk",
                            "run-b.tsv", "U", "run-c.png"};
    put_journal(dir, "run", fields, 8, 1);
    /* a temporary of a killed run that never got to its journal */
    put(dir, ".run-d.tsv.Zz99Yy", "half written");
    /* the next run with the same output name completes it first */
    assert_int_equal(aim_atomic_lock(dir, "run", "choose another name"), 0);
    assert_content(dir, "run-a.tsv", "new a\n");
    assert_content(dir, "run-b.tsv", "new b\n");
    assert_listing(dir, ".run.lock\nrun-a.tsv\nrun-b.tsv\n");
    remove_dir(dir);
    free(dir);
}

/* A run that takes one lock completes the interrupted sets of other
 * names in its folder too (e.g. a compare killed during its renames, then
 * an sgd at one of its d), unless their lock is held by a live run. */
static void test_roll_forward_others(void **state)
{
    (void)state;
    char *dir = make_tmpdir();
    int held[2], go[2];
    assert_int_equal(pipe(held), 0);
    assert_int_equal(pipe(go), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) { /* holds the lock of "live" until told (or the test ends) */
        close(held[0]);
        close(go[1]);
        char c;
        const int ok = aim_atomic_lock(dir, "live", "x") == 0 && write(held[1], "l", 1) == 1 &&
                       read(go[0], &c, 1) == 1;
        _exit(ok ? 0 : 1);
    }
    close(held[1]);
    close(go[0]);
    char c;
    assert_int_equal(read(held[0], &c, 1), 1);
    /* "live" is in the middle of its renames; "all" was killed in them */
    put(dir, "live-ode.tsv", "old\n");
    put(dir, ".live-ode.tsv.Cc22Dd", "new\n");
    const char *live[] = {"R", ".live-ode.tsv.Cc22Dd", "live-ode.tsv"};
    put_journal(dir, "live", live, 3, 1);
    put(dir, "all-sgd-d20.tsv", "old\n");
    put(dir, ".all-sgd-d20.tsv.Aa11Bb", "new\n");
    const char *gone[] = {"R", ".all-sgd-d20.tsv.Aa11Bb", "all-sgd-d20.tsv"};
    put_journal(dir, "all", gone, 3, 1);
    assert_int_equal(aim_atomic_lock(dir, "all-sgd-d20", "x"), 0);
    assert_content(dir, "all-sgd-d20.tsv", "new\n");
    assert_content(dir, "live-ode.tsv", "old\n"); /* left to its live run */
    assert_listing(dir, ".all-sgd-d20.lock\n.live-ode.tsv.Cc22Dd\n.live.journal\n.live.lock\n"
                        "all-sgd-d20.tsv\nlive-ode.tsv\n");
    assert_int_equal(write(go[1], "x", 1), 1);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    close(held[0]);
    close(go[1]);
    remove_dir(dir);
    free(dir);
}

static void test_journal_incomplete(void **state)
{
    (void)state;
    char *dir = make_tmpdir();
    put(dir, "run-b.tsv", "old b\n");
    put(dir, ".run-b.tsv.Qx81Zk", "new b\n");
    const char *fields[] = {"R", ".run-b.tsv.Qx81Zk", "run-b.tsv"};
    put_journal(dir, "run", fields, 3, 0); /* no "E": not a journal that was made durable */
    assert_int_equal(aim_atomic_lock(dir, "run", "choose another name"), -1);
    assert_content(dir, "run-b.tsv", "old b\n");
    remove_dir(dir);
    free(dir);
}

/* A journal that names a file outside its folder (an absolute path, as
 * an older aimdyn wrote them, or "../"): refused with its path, left in
 * place, and nothing it names touched, not even its sound records. */
static void journal_outside(const char *top, const char *const *fields, int n)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/out", top);
    assert_int_equal(mkdir(dir, 0777), 0);
    put(top, "victim", "precious\n");
    put(top, ".moved.Ab12Cd", "outside temporary\n");
    put(dir, "run-a.tsv", "old a\n");
    put(dir, ".run-a.tsv.Ab12Cd", "new a\n");
    put_journal(dir, "run", fields, n, 1);
    assert_int_equal(aim_atomic_lock(dir, "run", "x"), -1);
    assert_content(top, "victim", "precious\n");
    assert_content(top, ".moved.Ab12Cd", "outside temporary\n");
    assert_content(dir, "run-a.tsv", "old a\n"); /* its sound record not applied */
    /* left as it was, the lock released */
    assert_listing(dir, ".run-a.tsv.Ab12Cd\n.run.journal\nrun-a.tsv\n");
    /* aim_atomic_clean refuses it too */
    assert_int_equal(aim_atomic_clean(dir, "run"), -1);
    remove_dir(dir);
}

static void test_journal_outside(void **state)
{
    (void)state;
    char *top = make_tmpdir(), victim[1024], moved[1024];
    snprintf(victim, sizeof victim, "%s/victim", top);
    snprintf(moved, sizeof moved, "%s/.moved.Ab12Cd", top);
    const char *absolute_removal[] = {"R", ".run-a.tsv.Ab12Cd", "run-a.tsv", "U", victim};
    const char *parent_removal[] = {"R", ".run-a.tsv.Ab12Cd", "run-a.tsv", "U", "../victim"};
    const char *parent_rename[] = {"R", "../.moved.Ab12Cd", "run-a.tsv"};
    const char *onto_parent[] = {"R", ".run-a.tsv.Ab12Cd", "../victim"};
    const char *dot[] = {"U", "."};
    const char *absolute_rename[] = {"R", moved, "run-a.tsv"};
    const char *const *cases[] = {absolute_removal, absolute_rename, parent_removal,
                                  parent_rename,    onto_parent,     dot};
    const int fields[] = {5, 3, 5, 3, 3, 2};
    for (int k = 0; k < 6; k++)
        journal_outside(top, cases[k], fields[k]);
    remove_dir(top);
    free(top);
}

/* An old journal with absolute paths into the folder itself is refused
 * too: a journal names plain file names only. */
static void test_journal_absolute(void **state)
{
    (void)state;
    char *dir = make_tmpdir(), temp[1024], final[1024];
    put(dir, "run-a.tsv", "old a\n");
    put(dir, ".run-a.tsv.Ab12Cd", "new a\n");
    snprintf(temp, sizeof temp, "%s/.run-a.tsv.Ab12Cd", dir);
    snprintf(final, sizeof final, "%s/run-a.tsv", dir);
    const char *fields[] = {"R", temp, final};
    put_journal(dir, "run", fields, 3, 1);
    assert_int_equal(aim_atomic_lock(dir, "run", "x"), -1);
    assert_content(dir, "run-a.tsv", "old a\n");
    assert_listing(dir, ".run-a.tsv.Ab12Cd\n.run.journal\nrun-a.tsv\n");
    remove_dir(dir);
    free(dir);
}

/* A journal that is a FIFO, a directory or a symbolic link: refused
 * (without waiting for a writer), left in place. */
static void test_journal_not_regular(void **state)
{
    (void)state;
    char *dir = make_tmpdir(), p[4096];
    put(dir, "target", "aimdyn journal");
    for (int k = 0; k < 3; k++) {
        snprintf(p, sizeof p, "%s/.run.journal", dir);
        if (k == 0)
            assert_int_equal(mkfifo(p, 0666), 0);
        else if (k == 1)
            assert_int_equal(mkdir(p, 0777), 0);
        else
            assert_int_equal(symlink("target", p), 0);
        assert_int_equal(aim_atomic_lock(dir, "run", "x"), -1);
        struct stat st;
        assert_int_equal(lstat(p, &st), 0);
        assert_true(k == 0 ? S_ISFIFO(st.st_mode) : k == 1 ? S_ISDIR(st.st_mode)
                                                            : S_ISLNK(st.st_mode));
        assert_int_equal(k == 1 ? rmdir(p) : unlink(p), 0);
        assert_listing(dir, "target\n"); /* its lock released */
    }
    assert_content(dir, "target", "aimdyn journal");
    remove_dir(dir);
    free(dir);
}

/* A journal that aimdyn writes names its files by their plain names, and
 * a set takes only files of its folder: a kept seed file of another
 * folder is removed after the commit, outside the journal. */
static void test_journal_plain_names(void **state)
{
    (void)state;
    char *dir = make_tmpdir(), sub[1024], p[2048];
    snprintf(sub, sizeof sub, "%s/.run.seeds", dir);
    assert_int_equal(mkdir(sub, 0777), 0);
    put(sub, "seed-1.tsv", "kept seed\n");
    aim_atomic_set *set = aim_atomic_set_create(dir, "run");
    assert_non_null(set);
    assert_int_equal(aim_atomic_set_add(set, fresh(dir, "run-a.tsv", "a\n")), 0);
    assert_int_equal(aim_atomic_set_add(set, fresh(sub, "other.tsv", "b\n")), -1);
    snprintf(p, sizeof p, "%s/seed-1.tsv", sub);
    assert_int_equal(aim_atomic_set_remove(set, p), 0);
    /* a directory in the way of run-b.tsv: its rename fails, and the
     * journal stays for the next run */
    assert_int_equal(aim_atomic_set_add(set, fresh(dir, "run-b.tsv", "b\n")), 0);
    snprintf(p, sizeof p, "%s/run-b.tsv", dir);
    assert_int_equal(mkdir(p, 0777), 0);
    put(p, "x", "x");
    assert_int_equal(aim_atomic_set_commit(set), -1);
    assert_content(sub, "seed-1.tsv", "kept seed\n"); /* not removed: the set is not in place */
    snprintf(p, sizeof p, "%s/.run.journal", dir);
    FILE *f = fopen(p, "rb");
    assert_non_null(f);
    char text[4096];
    const size_t n = fread(text, 1, sizeof text, f);
    fclose(f);
    assert_null(memchr(text, '/', n));
    assert_true(n > 20 && !memcmp(text + 15, "R\0.run-a.tsv.", 13));
    /* the next run, the directory gone: completed */
    snprintf(p, sizeof p, "%s/run-b.tsv", dir);
    remove_dir(p);
    assert_int_equal(aim_atomic_lock(dir, "run", "x"), 0);
    assert_content(dir, "run-a.tsv", "a\n");
    assert_content(dir, "run-b.tsv", "b\n");
    assert_listing(dir, ".run.lock\n.run.seeds\nrun-a.tsv\nrun-b.tsv\n");
    snprintf(p, sizeof p, "%s/.run.lock", dir);
    unlink(p);
    remove_dir(sub);
    remove_dir(dir);
    free(dir);

    /* a set committed whole removes the seed file of the other folder */
    dir = make_tmpdir();
    snprintf(sub, sizeof sub, "%s/.run.seeds", dir);
    assert_int_equal(mkdir(sub, 0777), 0);
    put(sub, "seed-1.tsv", "kept seed\n");
    set = aim_atomic_set_create(dir, "run");
    assert_non_null(set);
    assert_int_equal(aim_atomic_set_add(set, fresh(dir, "run-a.tsv", "a\n")), 0);
    snprintf(p, sizeof p, "%s/seed-1.tsv", sub);
    assert_int_equal(aim_atomic_set_remove(set, p), 0);
    assert_int_equal(aim_atomic_set_commit(set), 0);
    assert_listing(sub, "");
    assert_int_equal(rmdir(sub), 0);
    remove_dir(dir);
    free(dir);
}

/* ---------- stale temporary files ---------- */

static void test_clean(void **state)
{
    (void)state;
    char *dir = make_tmpdir();
    put(dir, ".run-x.tsv.ABC123", "stale");          /* removed */
    put(dir, "..run.journal.Def456", "stale");       /* a journal's: removed */
    put(dir, ".run-z.tsv.Ghi789", "listed");         /* in run-z's journal: kept */
    const char *fields[] = {"R", ".run-z.tsv.Ghi789", "run-z.tsv"};
    put_journal(dir, "run-z", fields, 3, 1);
    put(dir, ".other.tsv.Jkl012", "another name");   /* kept */
    put(dir, "run-x.tsv.ABC123", "not hidden");      /* kept */
    put(dir, ".run-y.notes", "not a temporary");     /* kept */
    aim_atomic_file *live = fresh(dir, "run-w.tsv", "being written"); /* its writer lives */
    assert_int_equal(aim_atomic_clean(dir, "run"), 2);
    char want[1024];
    snprintf(want, sizeof want,
             ".other.tsv.Jkl012\n%s\n.run-y.notes\n.run-z.journal\n.run-z.tsv.Ghi789\n"
             "run-x.tsv.ABC123\n",
             strrchr(aim_atomic_temp(live), '/') + 1);
    assert_listing(dir, want);
    aim_atomic_discard(live);
    char p[4096];
    snprintf(p, sizeof p, "%s/.run-z.journal", dir);
    unlink(p);
    remove_dir(dir);
    free(dir);
}

/* ---------- locks ---------- */

static void test_lock(void **state)
{
    (void)state;
    char *dir = make_tmpdir();
    assert_int_equal(aim_atomic_lock(dir, "held", "x"), 0);
    assert_int_equal(aim_atomic_lock(dir, "held", "x"), 0); /* held already */
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) /* another process: refused */
        _exit(aim_atomic_lock(dir, "held", "x") == 1 ? 0 : 1);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);

    /* a lock is released, its file removed, when its process ends */
    fflush(NULL);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        exit(aim_atomic_lock(dir, "once", "x") == 0 ? 0 : 1);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_listing(dir, ".held.lock\n");
    assert_int_equal(aim_atomic_lock(dir, "once", "x"), 0);
    char p[4096];
    snprintf(p, sizeof p, "%s/.once.lock", dir);
    unlink(p);
    snprintf(p, sizeof p, "%s/.held.lock", dir);
    unlink(p);
    assert_int_equal(rmdir(dir), 0);
    free(dir);
}

/* A lock path that is not a lock file of aimdyn: a symbolic link (to a
 * file or to nothing), a hard link, a file of other data, a FIFO, a
 * directory. Refused (-1) without a byte written through it, nothing
 * created, and without waiting on the FIFO. */
static void test_lock_refused(void **state)
{
    (void)state;
    char *top = make_tmpdir(), dir[1024], p[2048], target[1024];
    snprintf(dir, sizeof dir, "%s/out", top);
    assert_int_equal(mkdir(dir, 0777), 0);
    put(top, "target", "precious\n");
    snprintf(target, sizeof target, "%s/target", top);
    snprintf(p, sizeof p, "%s/.run.lock", dir);
    for (int k = 0; k < 6; k++) {
        if (k == 0)
            assert_int_equal(symlink(target, p), 0);
        else if (k == 1)
            assert_int_equal(symlink("../missing", p), 0);
        else if (k == 2)
            assert_int_equal(link(target, p), 0);
        else if (k == 3)
            put(dir, ".run.lock", "notes, not a process id\n");
        else if (k == 4)
            assert_int_equal(mkfifo(p, 0666), 0);
        else
            assert_int_equal(mkdir(p, 0777), 0);
        assert_int_equal(aim_atomic_lock(dir, "run", "x"), -1);
        /* a set of its own takes its lock the same way */
        char final[2048];
        snprintf(final, sizeof final, "%s/run", dir);
        assert_null(aim_atomic_set_own(final));
        assert_content(top, "target", "precious\n");
        if (k == 3)
            assert_content(dir, ".run.lock", "notes, not a process id\n");
        assert_int_equal(k == 5 ? rmdir(p) : unlink(p), 0);
        assert_listing(dir, "");
    }
    assert_listing(top, "out\ntarget\n");
    /* a lock file that a killed run left (its process id) is taken */
    put(dir, ".run.lock", "12345\n");
    assert_int_equal(aim_atomic_lock(dir, "run", "x"), 0);
    unlink(p);
    assert_int_equal(rmdir(dir), 0);
    remove_dir(top);
    free(top);
}

/* ---------- signals ---------- */

/* A process with a temporary file, a lock and a child (sleep) ends by
 * sig: its files are removed, its child killed, its status says sig. */
static void ended_by(int sig)
{
    char *dir = make_tmpdir();
    char marker[4096];
    snprintf(marker, sizeof marker, "%s/child.pid", dir);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char p[4096];
        snprintf(p, sizeof p, "%s/run-a.tsv", dir);
        aim_atomic_file *f = aim_atomic_create(p);
        if (!f || aim_atomic_lock(dir, "run", "x") != 0)
            _exit(10);
        char *argv[] = {"sleep", "30", NULL};
        const pid_t child = aim_guard_spawn("/bin/sleep", argv, STDIN_FILENO);
        FILE *m = fopen(marker, "w");
        if (child < 0 || !m)
            _exit(11);
        fprintf(m, "%ld\n", (long)child);
        fclose(m);
        raise(sig);
        _exit(12);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), sig);
    FILE *m = fopen(marker, "r");
    assert_non_null(m);
    long child = 0;
    assert_int_equal(fscanf(m, "%ld", &child), 1);
    fclose(m);
    assert_int_equal(unlink(marker), 0);
    /* killed and reaped by the handler: gone */
    assert_int_equal(kill((pid_t)child, 0), -1);
    assert_int_equal(errno, ESRCH);
    assert_listing(dir, "");
    assert_int_equal(rmdir(dir), 0);
    free(dir);
}

static void test_signals(void **state)
{
    (void)state;
    ended_by(SIGTERM);
    ended_by(SIGINT);
    ended_by(SIGHUP);
}

int main(void)
{
    /* test_signals needs the signals it raises to be caught: a run under
     * nohup (SIGHUP ignored) or from a background job of a script (SIGINT
     * ignored) inherits them ignored, which the guard rightly keeps */
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_replace),
        cmocka_unit_test(test_set_commit),
        cmocka_unit_test(test_set_free),
        cmocka_unit_test(test_roll_forward),
        cmocka_unit_test(test_roll_forward_others),
        cmocka_unit_test(test_journal_incomplete),
        cmocka_unit_test(test_journal_outside),
        cmocka_unit_test(test_journal_absolute),
        cmocka_unit_test(test_journal_not_regular),
        cmocka_unit_test(test_journal_plain_names),
        cmocka_unit_test(test_clean),
        cmocka_unit_test(test_lock),
        cmocka_unit_test(test_lock_refused),
        cmocka_unit_test(test_signals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
