/*
 * smtd.c - entry point: read the options, build the plan, then either
 * print it (--dry-run) or run the daemon.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "daemon.h"
#include "log.h"
#include "options.h"
#include "plan.h"
#include "resultfile.h"

extern char **environ;

#ifndef SMT_SMTCTL_DEFAULT
#define SMT_SMTCTL_DEFAULT "/usr/local/bin/smtctl"
#endif

/*
 * Without --smtctl, the smtctl installed with smtd; when it is not where
 * the build put it (a package that moved both, a build tree), the one next
 * to this smtd, as installed side by side.
 */
static void find_smtctl(struct smt_options *opts)
{
	static char beside[4096];
	char self[4000];
	ssize_t n;
	char *slash;

	if (opts->smtctl_path || access(SMT_SMTCTL_DEFAULT, X_OK) == 0)
		return;
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return;
	self[n] = '\0';
	slash = strrchr(self, '/');
	if (!slash)
		return;
	*slash = '\0';
	snprintf(beside, sizeof(beside), "%s/smtctl", self);
	if (access(beside, X_OK) == 0)
		opts->smtctl_path = beside;
}

/* A configuration error is reported on stderr and, outside --dry-run, in
 * the failure file too, because that is the only place SageMaker shows. */
static int config_error(const struct smt_options *opts, const char *msg)
{
	const char *root = opts->root ? opts->root : "/opt/ml";
	char line[4096];
	int n;

	fprintf(stderr, "smtd: %s\n", msg);
	if (opts->dry_run)
		return SMT_EXIT_CONFIG;
	n = snprintf(line, sizeof(line), "ConfigurationError: %s\n", msg);
	if (n > 0) {
		int rc = smt_resultfile_failure(root, line, strlen(line));
		if (rc < 0 && rc != -EEXIST)
			fprintf(stderr, "smtd: cannot write %s/output/failure: %s\n", root,
				strerror(-rc));
	}
	return SMT_EXIT_CONFIG;
}

/*
 * Open files: the leader holds up to 3 descriptors per worker (its
 * channels' sockets, and pipes over ssh) and mpirun about as many (its ssh to every
 * host), so a 1000-host job needs some 3,000 where a container's soft
 * limit may be 1024.  The soft limit goes up to the hard one, for smtd and
 * what it starts (mpirun inherits it); a hard limit too low for the job's
 * hosts is said, with what to do, before it fails halfway.
 */
#define NOFILE_BASE 256
#define NOFILE_PER_HOST 4
#define NOFILE_MAX (1 << 20)

static void raise_nofile(const struct smt_plan *plan)
{
	struct rlimit rl;
	rlim_t want = NOFILE_MAX,
	       need = NOFILE_BASE + NOFILE_PER_HOST * (rlim_t)smt_plan_host_count(plan);

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return;
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < want)
		want = rl.rlim_max;
	if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= want)
		goto check;
	{
		rlim_t was = rl.rlim_cur;
		rl.rlim_cur = want;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0) {
			smt_warn("cannot raise the open files limit from %llu to %llu: %s",
				 (unsigned long long)was, (unsigned long long)want,
				 strerror(errno));
			rl.rlim_cur = was;
		} else {
			smt_debug("open files: soft limit %llu, was %llu", (unsigned long long)want,
				  (unsigned long long)was);
		}
	}
check:
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need)
		smt_warn(
			"open files: the limit is %llu, and a job of %zu hosts needs about %llu on "
			"the leader; raise the hard limit (docker run --ulimit nofile=%llu:%llu, "
			"LimitNOFILE= in a systemd unit)",
			(unsigned long long)rl.rlim_cur, smt_plan_host_count(plan),
			(unsigned long long)need, (unsigned long long)need,
			(unsigned long long)need);
}

int main(int argc, char **argv)
{
	struct smt_options opts;
	struct smt_plan *plan = NULL;
	char err[2048] = "";
	int rc;

	rc = smt_options_parse(&opts, argc, argv, environ, err, sizeof(err));
	if (rc == SMT_OPTIONS_EXIT)
		return SMT_EXIT_OK;
	if (rc < 0) {
		fprintf(stderr, "smtd: %s\n", err);
		fprintf(stderr, "Try 'smtd --help' for more information.\n");
		return SMT_EXIT_CONFIG;
	}
	smt_log_setup(opts.log_json ? SMT_LOG_JSON : SMT_LOG_TEXT, NULL, opts.debug);
	find_smtctl(&opts);

	rc = smt_plan_build(&opts, environ, &plan, err, sizeof(err));
	if (rc < 0) {
		rc = config_error(&opts, err);
		goto out;
	}
	smt_log_setup(opts.log_json ? SMT_LOG_JSON : SMT_LOG_TEXT,
		      smt_plan_current_host(plan), opts.debug);

	if (opts.dry_run) {
		rc = smt_plan_print(plan, stdout, opts.json) < 0 ? SMT_EXIT_CONFIG : SMT_EXIT_OK;
		goto out;
	}
	/* What the plan noticed but runs anyway goes to the log, where the
	 * operator looks when the job does not do what was asked. */
	for (char *const *w = smt_plan_warnings(plan); w && *w; w++)
		smt_warn("%s", *w);
	raise_nofile(plan);
	rc = smt_daemon_run(plan);
out:
	smt_plan_free(plan);
	smt_options_free(&opts);
	return rc;
}
