/* The cores a process may use (src/cli/cores.c), the default of
 * --threads: the cgroup CPU quota read from trees of fake /proc and
 * cgroup files as the kernel lays them out (cgroup v2 alone, in a
 * container's namespace and nested; v1's cpu controller as Docker mounts
 * it; both at once), the quota of a parent counting, no quota, and files
 * missing or malformed; and the count itself within the online CPUs. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cores.h"

static char tree[64];

/* A fresh fake tree with proc/self/ made. */
static int make_tree(void **state)
{
    (void)state;
    snprintf(tree, sizeof tree, "/tmp/aimdyn-cores-XXXXXX");
    if (!mkdtemp(tree))
        return -1;
    char path[256];
    snprintf(path, sizeof path, "%s/proc", tree);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/proc/self", tree);
    return mkdir(path, 0700);
}

static int remove_tree(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tree);
    return system(cmd) == 0 ? 0 : -1;
}

/* The file tree/rel with text, its directories made. */
static void put(const char *rel, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", tree, rel);
    for (char *p = path + strlen(tree) + 1; (p = strchr(p, '/')); p++) {
        *p = '\0';
        mkdir(path, 0700);
        *p = '/';
    }
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

#define V2_MOUNT "30 25 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw\n"

/* A container with its own cgroup namespace: its cgroup is "/", the v2
 * hierarchy mounted from there; 1.5 cores round up to 2. */
static void test_v2_namespace(void **state)
{
    (void)state;
    put("proc/self/cgroup", "0::/\n");
    put("proc/self/mountinfo", "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n" V2_MOUNT);
    put("sys/fs/cgroup/cpu.max", "150000 100000\n");
    assert_int_equal(aim_cores_quota(tree), 2);
}

/* A job nested in a slice: its own cpu.max says max, its parent's 3
 * cores; the root cgroup has no cpu.max. */
static void test_v2_parent(void **state)
{
    (void)state;
    put("proc/self/cgroup", "0::/batch.slice/job-7\n");
    put("proc/self/mountinfo", V2_MOUNT);
    put("sys/fs/cgroup/batch.slice/job-7/cpu.max", "max 100000\n");
    put("sys/fs/cgroup/batch.slice/cpu.max", "300000 100000\n");
    assert_int_equal(aim_cores_quota(tree), 3);
    /* the job's own, smaller: that one */
    put("sys/fs/cgroup/batch.slice/job-7/cpu.max", "50000 100000\n");
    assert_int_equal(aim_cores_quota(tree), 1);
}

#define V1_MOUNT                                                                            \
    "40 30 0:35 /docker/abc /sys/fs/cgroup/cpu,cpuacct ro,nosuid - cgroup cgroup "       \
    "rw,cpu,cpuacct\n"

/* Docker on cgroup v1: the cpu controller mounted from the container's
 * cgroup; 2.5 cores round up to 3, -1 is none. */
static void test_v1(void **state)
{
    (void)state;
    put("proc/self/cgroup", "5:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n0::/\n");
    put("proc/self/mountinfo", "38 30 0:33 /docker/abc /sys/fs/cgroup/memory ro - cgroup "
                               "cgroup rw,memory\n" V1_MOUNT);
    put("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "250000\n");
    put("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n");
    assert_int_equal(aim_cores_quota(tree), 3);
    put("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
    assert_int_equal(aim_cores_quota(tree), 0);
}

/* Both hierarchies (systemd's hybrid layout): the smaller quota. */
static void test_hybrid(void **state)
{
    (void)state;
    put("proc/self/cgroup", "4:cpu,cpuacct:/docker/abc\n0::/docker/abc\n");
    put("proc/self/mountinfo",
        V1_MOUNT "31 25 0:27 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n");
    put("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "400000\n");
    put("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n");
    put("sys/fs/cgroup/unified/docker/abc/cpu.max", "200000 100000\n");
    assert_int_equal(aim_cores_quota(tree), 2);
}

/* No quota anywhere, nothing readable, or nonsense: 0, no limit. */
static void test_none(void **state)
{
    (void)state;
    assert_int_equal(aim_cores_quota(tree), 0); /* no /proc/self/cgroup */
    put("proc/self/cgroup", "0::/\n");
    assert_int_equal(aim_cores_quota(tree), 0); /* no mountinfo */
    put("proc/self/mountinfo", V2_MOUNT);
    assert_int_equal(aim_cores_quota(tree), 0); /* no cpu.max */
    put("sys/fs/cgroup/cpu.max", "max 100000\n");
    assert_int_equal(aim_cores_quota(tree), 0);
    put("sys/fs/cgroup/cpu.max", "lots\n");
    assert_int_equal(aim_cores_quota(tree), 0);
    put("sys/fs/cgroup/cpu.max", "100000 0\n");
    assert_int_equal(aim_cores_quota(tree), 0);
    /* a cgroup outside the hierarchy's mounted root is not this mount's */
    put("proc/self/cgroup", "0::/elsewhere\n");
    put("proc/self/mountinfo",
        "30 25 0:26 /docker/abc /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n");
    put("sys/fs/cgroup/cpu.max", "100000 100000\n");
    assert_int_equal(aim_cores_quota(tree), 0);
}

/* The count: at least 1, at most the online CPUs. */
static void test_available(void **state)
{
    (void)state;
    const int n = aim_cores_available();
    assert_true(n >= 1);
    assert_true(n <= sysconf(_SC_NPROCESSORS_ONLN));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_v2_namespace, make_tree, remove_tree),
        cmocka_unit_test_setup_teardown(test_v2_parent, make_tree, remove_tree),
        cmocka_unit_test_setup_teardown(test_v1, make_tree, remove_tree),
        cmocka_unit_test_setup_teardown(test_hybrid, make_tree, remove_tree),
        cmocka_unit_test_setup_teardown(test_none, make_tree, remove_tree),
        cmocka_unit_test(test_available),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
