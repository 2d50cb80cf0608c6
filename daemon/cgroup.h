/*
 * cgroup.h - what the kernel's memory cgroup knows about the job.
 *
 * When the kernel's OOM killer ends a rank, the rank simply dies of
 * SIGKILL; only the memory cgroup counts it.  smtd reads the oom_kill
 * counter of the cgroup it runs in - memory.events on cgroup v2 (which
 * counts the whole subtree), memory.oom_control on cgroup v1 - when it
 * launches the job and again when the job ends: a larger count means the
 * job was killed for memory, and the failure says OutOfMemory, with the
 * limit that applied.
 */
#ifndef SMT_CGROUP_H
#define SMT_CGROUP_H

/*
 * Read the oom_kill count of the memory cgroup that the process described
 * by CGROUP_FILE (normally "/proc/self/cgroup") belongs to, under the
 * cgroup file system mounted at SYSFS (normally "/sys/fs/cgroup").
 * Returns 0 and *COUNT, or -ENOENT when there is no memory cgroup to read
 * (no controller, no counter), or another -errno.
 */
int smt_cgroup_oom_kills(const char *sysfs, const char *cgroup_file, long *count);

/*
 * The memory limit that applies to that cgroup: the smallest of its and
 * its ancestors' memory.max (v2) or memory.limit_in_bytes (v1), as far as
 * the mount shows them.  Returns 0 and *BYTES (0: no limit), or -ENOENT
 * when there is no memory cgroup to read, or another -errno.
 */
int smt_cgroup_memory_limit(const char *sysfs, const char *cgroup_file, long long *bytes);

#endif
