/* aim_cores: the cores this process may use (see cores.h). A container
 * or a batch job limits them two ways: a CPU affinity mask (which CPUs)
 * and a cgroup CPU quota (how much time of them per period); the online
 * CPU count knows neither, and the engine's threads beyond what the
 * process may use only wait for one another. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_ALLOC */
#include "cores.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { PATH_LEN = 4096, LINE_LEN = 4096, MAX_FIELDS = 16 };

/* The CPUs of the affinity mask, in a mask as large as the kernel's
 * (glibc's fixed cpu_set_t holds 1024); the online CPUs when it cannot
 * be read. */
static int affinity_cpus(void)
{
    for (int n = 1024; n <= (1 << 22); n *= 2) {
        cpu_set_t *set = CPU_ALLOC(n);
        if (!set)
            break;
        const size_t size = CPU_ALLOC_SIZE(n);
        const int rc = sched_getaffinity(0, size, set);
        const int err = errno;
        const int count = rc == 0 ? CPU_COUNT_S(size, set) : 0;
        CPU_FREE(set);
        if (rc == 0)
            return count;
        if (err != EINVAL) /* EINVAL: the kernel's mask is larger */
            break;
    }
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    return online > 0 && online < INT_MAX ? (int)online : 1;
}

/* Whether item is one of the comma-separated list's items. */
static int listed(const char *list, const char *item)
{
    const size_t n = strlen(item);
    for (const char *p = list; p;) {
        if (!strncmp(p, item, n) && (p[n] == ',' || p[n] == '\0'))
            return 1;
        p = strchr(p, ',');
        p = p ? p + 1 : NULL;
    }
    return 0;
}

/* The first line of the file at path into buf (its newline cut): 0, or
 * -1 when it cannot be read. */
static int first_line(const char *path, char *buf, size_t n)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    const int ok = fgets(buf, (int)n, f) != NULL;
    fclose(f);
    if (!ok)
        return -1;
    buf[strcspn(buf, "\n")] = '\0';
    return 0;
}

/* quota / period rounded up, 0 for no quota (negative: v1's -1) or a
 * period that is not positive */
static int quota_cores(long long quota, long long period)
{
    if (quota <= 0 || period <= 0)
        return 0;
    const long long cores = quota / period + (quota % period != 0);
    return cores > INT_MAX ? INT_MAX : (int)cores;
}

/* The quota of the cgroup directory dir: v2's cpu.max ("max PERIOD" or
 * "QUOTA PERIOD"), v1's cpu.cfs_quota_us (-1: none) and cpu.cfs_period_us.
 * 0 when none is set or the files cannot be read. */
static int dir_quota(const char *dir, int v2)
{
    char path[PATH_LEN], line[LINE_LEN];
    long long quota = 0, period = 0;
    if (v2) {
        char word[32];
        if (snprintf(path, sizeof path, "%s/cpu.max", dir) >= (int)sizeof path ||
            first_line(path, line, sizeof line) ||
            sscanf(line, "%31s %lld", word, &period) != 2 || !strcmp(word, "max"))
            return 0;
        quota = strtoll(word, NULL, 10);
        return quota_cores(quota, period);
    }
    if (snprintf(path, sizeof path, "%s/cpu.cfs_quota_us", dir) >= (int)sizeof path ||
        first_line(path, line, sizeof line) || sscanf(line, "%lld", &quota) != 1)
        return 0;
    if (snprintf(path, sizeof path, "%s/cpu.cfs_period_us", dir) >= (int)sizeof path ||
        first_line(path, line, sizeof line) || sscanf(line, "%lld", &period) != 1)
        return 0;
    return quota_cores(quota, period);
}

/* The smallest quota from root + mount + suffix (the process's cgroup)
 * up to root + mount (the hierarchy's root as mounted), 0 when none. */
static int walk_up(const char *root, const char *mount, const char *suffix, int v2)
{
    char dir[PATH_LEN];
    const int top = snprintf(dir, sizeof dir, "%s%s", root, mount);
    if (top < 0 || top >= (int)sizeof dir ||
        snprintf(dir + top, sizeof dir - (size_t)top, "%s", suffix) >= (int)sizeof dir - top)
        return 0;
    int least = 0;
    for (;;) {
        const int q = dir_quota(dir, v2);
        if (q > 0 && (least == 0 || q < least))
            least = q;
        char *slash = strrchr(dir, '/');
        if ((int)strlen(dir) <= top || !slash || slash - dir < top)
            return least;
        *slash = '\0';
    }
}

/* The mount of a cgroup hierarchy in mountinfo (root + /proc/self/
 * mountinfo): cgroup2 (v2), or cgroup with the cpu controller among its
 * options (v1). Its root within the hierarchy into mroot and its mount
 * point into mpoint (size PATH_LEN each): 0, or -1 when there is none. */
static int find_mount(const char *root, int v2, char *mroot, char *mpoint)
{
    char path[PATH_LEN], line[LINE_LEN];
    if (snprintf(path, sizeof path, "%s/proc/self/mountinfo", root) >= (int)sizeof path)
        return -1;
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int found = -1;
    while (found && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        /* ID PARENT MAJ:MIN ROOT MOUNT_POINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPER */
        char *field[MAX_FIELDS], *save = NULL;
        int n = 0, dash = -1;
        for (char *w = strtok_r(line, " ", &save); w && n < MAX_FIELDS;
             w = strtok_r(NULL, " ", &save)) {
            if (dash < 0 && n >= 6 && !strcmp(w, "-"))
                dash = n;
            field[n++] = w;
        }
        if (dash < 0 || n < dash + 4)
            continue;
        const char *type = field[dash + 1], *super = field[dash + 3];
        if (v2 ? strcmp(type, "cgroup2") : strcmp(type, "cgroup") || !listed(super, "cpu"))
            continue;
        snprintf(mroot, PATH_LEN, "%s", field[3]);
        snprintf(mpoint, PATH_LEN, "%s", field[4]);
        found = 0;
    }
    fclose(f);
    return found;
}

int aim_cores_quota(const char *root)
{
    char path[PATH_LEN], line[LINE_LEN];
    if (snprintf(path, sizeof path, "%s/proc/self/cgroup", root) >= (int)sizeof path)
        return 0;
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    int least = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        /* HIERARCHY_ID:CONTROLLERS:PATH; v2's is 0 with no controllers */
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2 || c2[1] != '/')
            continue;
        *c1 = *c2 = '\0';
        const char *controllers = c1 + 1, *cgroup = c2 + 1;
        const int v2 = !strcmp(line, "0") && !*controllers;
        if (!v2 && !listed(controllers, "cpu"))
            continue;
        char mroot[PATH_LEN], mpoint[PATH_LEN];
        if (find_mount(root, v2, mroot, mpoint))
            continue;
        /* the cgroup's path below the mount's root (a container sees its
         * own cgroup mounted as the root) */
        const size_t r = strcmp(mroot, "/") ? strlen(mroot) : 0;
        if (strncmp(cgroup, mroot, r) || (cgroup[r] != '/' && cgroup[r] != '\0'))
            continue;
        const int q = walk_up(root, mpoint, strcmp(cgroup + r, "/") ? cgroup + r : "", v2);
        if (q > 0 && (least == 0 || q < least))
            least = q;
    }
    fclose(f);
    return least;
}

int aim_cores_available(void)
{
    int n = affinity_cpus();
    const int quota = aim_cores_quota("");
    if (quota > 0 && quota < n)
        n = quota;
    return n > 0 ? n : 1;
}
