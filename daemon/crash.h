/*
 * crash.h - how a rank died, as its own host saw it (smtd(8) OUTPUT, smtd(8)
 * "The failure file").
 *
 * A signal alone ("killed by SIGSEGV") leaves the user where they started;
 * the rank's host knows more at the moment of the death, and only it does:
 *
 *   where    the innermost frame of the crashing thread in the Python
 *            faulthandler dump the rank wrote to its stderr (every Python
 *            rank runs with PYTHONFAULTHANDLER=1): "load_batch (train.py:8)"
 *   shm      the size and use of /dev/shm when a rank failed, and the
 *            --min-shm of its host: a full or small one is the usual cause
 *            of a SIGBUS in the rank or in a child of it that it then
 *            reports, as PyTorch's DataLoader does ("... is killed by
 *            signal: Bus error"); BUS_ERROR says its output told of one
 *   oom      whether an OOM record (the memory cgroup's oom_kill counter,
 *            else the host's, /proc/vmstat) rose while the rank ran, the
 *            rank's peak memory (its launcher's wait gives ru_maxrss) and
 *            the limit that applied: its cgroup's, else the host's memory
 *
 * The facts travel with the rank's entry to the leader (smt_crash_json),
 * which words them (report.c); nothing here decides the wording.
 */
#ifndef SMT_CRASH_H
#define SMT_CRASH_H

#include <jansson.h>
#include <stddef.h>

/* More used than this, in percent, is full. */
#define SMT_CRASH_SHM_FULL_PCT 90

#define SMT_CRASH_WHERE_MAX 200

struct smt_crash {
	char where[SMT_CRASH_WHERE_MAX + 1]; /* "func (file:line)", or "" */
	int oom;                 /* an OOM kill happened while it ran */
	long long mem_kb;        /* its peak memory in KiB, 0 unknown */
	long long limit_bytes;   /* the memory limit that applied, 0 unknown */
	int limit_cgroup;        /* LIMIT_BYTES is its cgroup's (else the host's) */
	long long shm_size;      /* /dev/shm at its end, bytes; 0 unknown */
	long long shm_used;
	long long shm_min;       /* its host's --min-shm, bytes; 0: off (only the use counts) */
	int bus_error;           /* its stderr told of a bus error (a child's SIGBUS) */
};

/*
 * The innermost frame of the crashing thread of the faulthandler dump TEXT
 * (LEN bytes) into OUT ("" when the dump has no Python frame): the
 * innermost frame of the program's own code, skipping the frames of
 * Python's library and installed packages (ctypes' string_at is not where
 * the user's code went wrong), else the innermost frame.  The file is
 * named by its last component.  Pure.
 */
void smt_crash_where(const char *text, size_t len, char out[SMT_CRASH_WHERE_MAX + 1]);

/*
 * The dump TEXT reordered for the failure file, whose first 1024 bytes are
 * all SageMaker shows: the error line, then the crashing thread, then the
 * other threads.  Malloc'ed, NUL-terminated; NULL when out of memory.
 * Pure.
 */
char *smt_crash_dump_order(const char *text, size_t len);

/* Whether the shm facts explain a SIGBUS: more than SMT_CRASH_SHM_FULL_PCT
 * used, or smaller than SHM_MIN when that is not 0.  Pure. */
int smt_crash_shm_tight(const struct smt_crash *c);

/* The OOM kills counted so far where smtd can see them: its memory
 * cgroup's counter, else the host's (/proc/vmstat); -1 when neither can be
 * read.  PROC and SYSFS are "/proc" and "/sys/fs/cgroup" but for tests. */
long smt_crash_oom_count(const char *proc, const char *sysfs);

/*
 * Fill the host's facts at the end of a rank that failed, killed by SIGNO
 * (0: it exited with a code): /dev/shm (SHM_PATH) and MIN_SHM, the host's
 * --min-shm in bytes (0: off); for SIGKILL, whether
 * the OOM count rose above OOM_BASE (smt_crash_oom_count at the rank's
 * start, -1 unknown) and the memory limit (smtd's cgroup's, else
 * MemTotal).
 */
void smt_crash_probe(struct smt_crash *c, int signo, long oom_base, const char *proc,
		     const char *sysfs, const char *shm_path, long long min_shm);

/* Add C's known facts to the rank object O; take them back from one. */
void smt_crash_to_json(const struct smt_crash *c, json_t *o);
void smt_crash_from_json(struct smt_crash *c, json_t *o);

#endif
