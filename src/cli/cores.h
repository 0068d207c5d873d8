/* aim_cores: how many cores this process may use, the default of the
 * expectation engine's threads (--threads). Reads only the system (libc,
 * /proc and the cgroup files): nothing else of aimdyn, so that a test
 * builds it alone. */
#ifndef AIM_CLI_CORES_H
#define AIM_CLI_CORES_H

/* The CPUs of this process's affinity mask (sched_getaffinity: taskset,
 * a batch system's cpuset; else the online CPUs), no more than its
 * cgroups' CPU quota allows (aim_cores_quota of the system's files), at
 * least 1. */
int aim_cores_available(void);

/* The CPU quota of the cgroups this process is in, in cores: quota /
 * period rounded up, the smallest on the path from its cgroup to the
 * hierarchy's root, of the cgroup v2 hierarchy (cpu.max) and of the v1
 * cpu controller (cpu.cfs_quota_us, cpu.cfs_period_us); 0 when none is
 * set or none can be read. Every file is read at root + its path (root
 * "": the system's; a test's tree of fake files otherwise):
 * /proc/self/cgroup names the process's cgroups, /proc/self/mountinfo
 * where their hierarchies are mounted. */
int aim_cores_quota(const char *root);

#endif
