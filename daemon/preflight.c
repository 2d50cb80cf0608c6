/*
 * preflight.c - the built-in checks of a host before the launch
 * (preflight.h).
 */
#include "config.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "mpiargv.h"
#include "options.h"
#include "preflight.h"
#include "smt_proto.h"

struct type_count {
	const char *type;
	long gpus;
	long efa;
};

/* NVIDIA GPUs and EFA devices per instance type (AWS's instance type
 * pages).  A type not listed has no GPU to check; an EFA type of the
 * toolkit's list (mpiargv.c) not listed here must have at least one. */
static const struct type_count types[] = {
	{ "ml.p3.2xlarge", 1, 0 }, { "ml.p3.8xlarge", 4, 0 }, { "ml.p3.16xlarge", 8, 0 },
	{ "ml.p3dn.24xlarge", 8, 1 }, { "ml.p4d.24xlarge", 8, 4 }, { "ml.p4de.24xlarge", 8, 4 },
	{ "ml.p5.48xlarge", 8, 32 }, { "ml.p5e.48xlarge", 8, 32 }, { "ml.p5en.48xlarge", 8, 16 },
	{ "ml.g4dn.xlarge", 1, 0 }, { "ml.g4dn.2xlarge", 1, 0 }, { "ml.g4dn.4xlarge", 1, 0 },
	{ "ml.g4dn.8xlarge", 1, 1 }, { "ml.g4dn.16xlarge", 1, 1 }, { "ml.g4dn.12xlarge", 4, 1 },
	{ "ml.g5.xlarge", 1, 0 }, { "ml.g5.2xlarge", 1, 0 }, { "ml.g5.4xlarge", 1, 0 },
	{ "ml.g5.8xlarge", 1, 1 }, { "ml.g5.16xlarge", 1, 1 }, { "ml.g5.12xlarge", 4, 1 },
	{ "ml.g5.24xlarge", 4, 1 }, { "ml.g5.48xlarge", 8, 1 },
	{ "ml.g6.xlarge", 1, 0 }, { "ml.g6.2xlarge", 1, 0 }, { "ml.g6.4xlarge", 1, 0 },
	{ "ml.g6.8xlarge", 1, 1 }, { "ml.g6.16xlarge", 1, 1 }, { "ml.g6.12xlarge", 4, 1 },
	{ "ml.g6.24xlarge", 4, 1 }, { "ml.g6.48xlarge", 8, 1 },
	{ "ml.trn1.32xlarge", 0, 8 }, { "ml.trn1n.32xlarge", 0, 16 },
};

static const struct type_count *find_type(const char *type)
{
	for (size_t i = 0; type && i < sizeof(types) / sizeof(types[0]); i++)
		if (strcmp(types[i].type, type) == 0)
			return &types[i];
	return NULL;
}

long smt_preflight_type_gpus(const char *type)
{
	const struct type_count *t = find_type(type);

	return t ? t->gpus : 0;
}

long smt_preflight_type_efa(const char *type)
{
	const struct type_count *t = find_type(type);

	if (t && t->efa)
		return t->efa;
	return type && smt_mpiargv_efa_type(type) ? 1 : 0;
}

void smt_preflight_size_words(uint64_t bytes, char *out, size_t len)
{
	static const char *const units[] = { "bytes", "KiB", "MiB", "GiB", "TiB" };
	size_t u = 0;
	double v = (double)bytes;

	while (v >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
		v /= 1024;
		u++;
	}
	if (u == 0 || v == (double)(uint64_t)v)
		snprintf(out, len, "%.0f %s", v, units[u]);
	else
		snprintf(out, len, "%.1f %s", v, units[u]);
}

int smt_preflight_parse_size(const char *what, const char *text, uint64_t *out, char *err,
			     size_t errlen)
{
	char shown[SMT_OPTIONS_QUOTE_SIZE];
	size_t digits = strspn(text, "0123456789");
	uint64_t mult = 1;

	if (digits > 0 && digits <= 15) {
		switch (text[digits]) {
		case '\0': break;
		case 'K': case 'k': mult = 1024; break;
		case 'M': case 'm': mult = 1024 * 1024; break;
		case 'G': case 'g': mult = 1024 * 1024 * 1024; break;
		default: mult = 0; break;
		}
		if (mult && (text[digits] == '\0' || text[digits + 1] == '\0')) {
			uint64_t v = strtoull(text, NULL, 10);

			/* At most 15 digits times 2^30 fits in 64 bits only
			 * below 2^34 of the unit: bounded here. */
			if (v <= (UINT64_MAX >> 31)) {
				*out = v * mult;
				return 0;
			}
		}
	}
	smt_options_quote(text, shown, sizeof(shown));
	snprintf(err, errlen, "%s: %s is not a size (a number of bytes with an optional K, M or G "
		 "suffix, 1024-based, like 512M or 2G; 0 turns the check off)", what, shown);
	return -EINVAL;
}

static void add(json_t *checks, const char *name, int ok, const char *detail)
{
	json_array_append_new(checks, json_pack("{s:s, s:b, s:s}", SMT_F_CHECK, name, SMT_F_OK, ok,
						SMT_F_DETAIL, detail));
}

/* Entries of DIR that are not dot files; -1 when DIR cannot be read. */
static long count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	long n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

/* /dev/nvidiaN nodes: N digits only (not nvidiactl, nvidia-uvm). */
static long count_dev_nvidia(const char *root)
{
	char path[4096];
	struct dirent *e;
	DIR *d;
	long n = 0;

	snprintf(path, sizeof(path), "%s/dev", root);
	if (!(d = opendir(path)))
		return 0;
	while ((e = readdir(d))) {
		const char *s = e->d_name;

		if (strncmp(s, "nvidia", 6) != 0 || !s[6])
			continue;
		for (s += 6; isdigit((unsigned char)*s); s++)
			;
		if (!*s)
			n++;
	}
	closedir(d);
	return n;
}

/* The GPUs the type has: every /dev/nvidiaN below the count, and as many
 * in the driver's /proc list.  A type smtd does not know is compared with
 * the other hosts of its group by the leader (prelaunch). */
static int check_gpus(const struct smt_preflight_config *c, const char *root, json_t *checks,
		      long *gpus, char *fail, size_t len)
{
	long want = smt_preflight_type_gpus(c->instance_type), have = 0, missing = -1, proc;
	char path[4096], detail[256];
	struct stat st;

	snprintf(path, sizeof(path), "%s/proc/driver/nvidia/gpus", root);
	proc = count_entries(path);
	if (want == 0) {
		*gpus = proc >= 0 ? proc : count_dev_nvidia(root);
		return 0;
	}
	for (long i = 0; i < want; i++) {
		snprintf(path, sizeof(path), "%s/dev/nvidia%ld", root, i);
		if (lstat(path, &st) == 0 && S_ISCHR(st.st_mode))
			have++;
		else if (missing < 0)
			missing = i;
	}
	*gpus = proc >= 0 && proc < have ? proc : have;
	if (missing >= 0)
		snprintf(detail, sizeof(detail), "%ld of %ld GPUs visible (no /dev/nvidia%ld)",
			 have, want, missing);
	else if (proc < want)
		snprintf(detail, sizeof(detail),
			 "%ld of %ld GPUs visible (/proc/driver/nvidia/gpus "
			 "lists %ld)",
			 proc < 0 ? 0 : proc, want, proc < 0 ? 0 : proc);
	else
		snprintf(detail, sizeof(detail), "%ld of %ld GPUs visible", have, want);
	add(checks, "gpus", missing < 0 && proc >= want, detail);
	if (missing < 0 && proc >= want)
		return 0;
	snprintf(fail, len, "%s", detail);
	return -1;
}

/* EFA devices: entries of /sys/class/infiniband whose device's driver
 * link ends in "/efa" (read, never followed). */
static int check_efa(const struct smt_preflight_config *c, const char *root, json_t *checks,
		     char *fail, size_t len)
{
	long want = smt_preflight_type_efa(c->instance_type), have = 0;
	char path[2048], link[4096], target[4096], detail[256];
	struct dirent *e;
	DIR *d;

	if (want == 0)
		return 0;
	snprintf(path, sizeof(path), "%s/sys/class/infiniband", root);
	if ((d = opendir(path))) {
		while ((e = readdir(d))) {
			ssize_t n;

			if (e->d_name[0] == '.')
				continue;
			if ((size_t)snprintf(link, sizeof(link), "%s/%s/device/driver", path,
					     e->d_name) >= sizeof(link))
				continue;
			n = readlink(link, target, sizeof(target) - 1);
			if (n <= 0)
				continue;
			target[n] = '\0';
			const char *base = strrchr(target, '/');
			if (strcmp(base ? base + 1 : target, "efa") == 0)
				have++;
		}
		closedir(d);
	}
	snprintf(detail, sizeof(detail), "%ld of %ld EFA devices of %s (/sys/class/infiniband/* "
		 "bound to the efa driver)%s", have, want, c->instance_type,
		 have < want ? "; without them the job runs over TCP or hangs" : "");
	add(checks, "efa", have >= want, detail);
	if (have >= want)
		return 0;
	snprintf(fail, len, "%s", detail);
	return -1;
}

static int check_shm(const struct smt_preflight_config *c, const char *root, json_t *checks,
		     char *fail, size_t len)
{
	char path[4096], detail[256], has[32], need[32];
	struct statvfs sv;
	uint64_t size;

	if (c->min_shm == 0)
		return 0;
	snprintf(path, sizeof(path), "%s/dev/shm", root);
	if (statvfs(path, &sv) < 0) {
		snprintf(detail, sizeof(detail), "/dev/shm: %s", strerror(errno));
		size = 0;
	} else {
		size = (uint64_t)sv.f_blocks * sv.f_frsize;
		smt_preflight_size_words(size, has, sizeof(has));
		smt_preflight_size_words(c->min_shm, need, sizeof(need));
		snprintf(detail, sizeof(detail), "/dev/shm is %s%s%s", has,
			 size < c->min_shm ? ", less than --min-shm " : "",
			 size < c->min_shm ? need : "");
	}
	if (size >= c->min_shm) {
		add(checks, "shm", 1, detail);
		return 0;
	}
	if (!c->shm_fatal) {
		json_array_append_new(checks,
				      json_pack("{s:s, s:b, s:s, s:b}", SMT_F_CHECK, "shm",
						SMT_F_OK, 1, SMT_F_DETAIL, detail, SMT_F_WARNING,
						1));
		return 0;
	}
	add(checks, "shm", 0, detail);
	snprintf(fail, len, "%s (PyTorch's DataLoader workers die with \"bus error\")", detail);
	return -1;
}

static int check_disk(const struct smt_preflight_config *c, json_t *checks, char *fail,
		      size_t len)
{
	char detail[4200], has[32], need[32];
	int rc = 0;

	if (c->min_free_disk == 0 || !c->disk_dirs)
		return 0;
	smt_preflight_size_words(c->min_free_disk, need, sizeof(need));
	for (const char *const *dir = c->disk_dirs; *dir; dir++) {
		struct statvfs sv;
		uint64_t avail;

		if (statvfs(*dir, &sv) < 0)
			continue;
		avail = (uint64_t)sv.f_bavail * sv.f_frsize;
		smt_preflight_size_words(avail, has, sizeof(has));
		snprintf(detail, sizeof(detail), "%s has %s free%s%s", *dir, has,
			 avail < c->min_free_disk ? ", less than --min-free-disk " : "",
			 avail < c->min_free_disk ? need : "");
		add(checks, "disk", avail >= c->min_free_disk, detail);
		if (avail < c->min_free_disk && rc == 0) {
			snprintf(fail, len, "%s", detail);
			rc = -1;
		}
	}
	return rc;
}

int smt_preflight_builtin(const struct smt_preflight_config *c, json_t *checks, long *gpus,
			  char *fail, size_t len)
{
	const char *root = c->probe_root ? c->probe_root : "";
	int rc = 0;

	*gpus = 0;
	fail[0] = '\0';
	/* Every check runs, so that preflight.json shows all of them; the
	 * first failure is the one the failure line names. */
	if (c->gpu_check && check_gpus(c, root, checks, gpus, fail, len) < 0)
		rc = -1;
	if (c->efa_check && check_efa(c, root, checks, rc ? NULL : fail, rc ? 0 : len) < 0)
		rc = -1;
	if (check_shm(c, root, checks, rc ? NULL : fail, rc ? 0 : len) < 0)
		rc = -1;
	if (check_disk(c, checks, rc ? NULL : fail, rc ? 0 : len) < 0)
		rc = -1;
	return rc;
}
