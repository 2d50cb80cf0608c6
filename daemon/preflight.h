/*
 * preflight.h - the built-in checks of a host before the launch (smtd(8) Preflight):
 * the GPUs and EFA devices its instance type has, /dev/shm, free disk.
 *
 * Pure apart from reading the file system: readdir, readlink (never
 * followed), statvfs.  Every path of the devices is read under a probe root
 * (SMTD_GPU_PROBE_ROOT, "" on a real host) so that tests can give a host
 * seven GPUs of eight.  They cost a few system calls each: far less than
 * the 20 ms a host may spend on them.
 */
#ifndef SMT_PREFLIGHT_H
#define SMT_PREFLIGHT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

struct smt_preflight_config {
	const char *probe_root;       /* prefix of /dev, /proc and /sys; NULL: "" */
	const char *instance_type;    /* this host's, may be NULL */
	int gpu_check;                /* 0: --no-gpu-check */
	int efa_check;                /* 0: --no-efa-check */
	uint64_t min_shm;             /* bytes; 0: off */
	int shm_fatal;                /* 0: too small is a warning only */
	uint64_t min_free_disk;       /* bytes; 0: off */
	const char *const *disk_dirs; /* NULL-terminated; those that exist are checked */
};

/*
 * Run every built-in check that applies; each is appended to CHECKS (a
 * JSON array) as {"check", "ok", "detail"} (and "warning" for a small
 * /dev/shm that is not fatal).  *GPUS is the number of GPUs this host
 * sees, for the leader's comparison across a group.  Returns 0 when all
 * passed, else -1 with the first failure's words in FAIL ("7 of 8 GPUs
 * visible (no /dev/nvidia5)"), without kind or host.
 */
int smt_preflight_builtin(const struct smt_preflight_config *c, json_t *checks, long *gpus,
			  char *fail, size_t len);

/* The GPUs and the EFA devices an instance type has; 0 when it has none or
 * smtd does not know the type. */
long smt_preflight_type_gpus(const char *type);
long smt_preflight_type_efa(const char *type);

/*
 * A size: digits with an optional K, M or G suffix (1024-based), "0" for
 * off.  0, or -EINVAL with a one-line message in ERR naming WHAT.
 */
int smt_preflight_parse_size(const char *what, const char *text, uint64_t *out, char *err,
			     size_t errlen);

/* BYTES in words for a message: "64 MiB", "1 GiB", "1536 bytes". */
void smt_preflight_size_words(uint64_t bytes, char *out, size_t len);

#endif
