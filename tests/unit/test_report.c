/*
 * test_report.c - the failure file's words (report.h) from what smtd knows
 * at the end: the rank table (each rank's end and its stderr, as its
 * launcher handed them to smtd) and mpirun's own messages, from real Open
 * MPI 4.1.4 jobs (tests/data/mpirun/CASE, see mpirun-captures.txt); which
 * line says what went wrong (errline.h); what mpirun's messages say
 * (mpimsg.h); the kinds and their exit codes.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "errline.h"
#include "mpimsg.h"
#include "output.h"
#include "ranks.h"
#include "report.h"
#include "testdata.h"
#include "textesc.h"
#include "testutil.h"

static char workdir[] = "/tmp/test_report.XXXXXX";
static const int64_t T0 = INT64_C(1714564800000);

/* ---- what smtd knows at the end of a captured job ---- */

struct known {
	struct smt_ring msgs;
	struct smt_ranks *ranks;
	int mpirun_exit;
};

static char *case_file(const char *name, const char *file, size_t *len)
{
	char path[256];

	snprintf(path, sizeof(path), "mpirun/%s/%s", name, file);
	return smt_test_data(path, len, 0);
}

/* The launched command's lines, kept as output.c keeps them: without a
 * trailing \r, blank ones left out. */
static void keep_msgs(struct smt_ring *r, const char *p, size_t n)
{
	while (n) {
		const char *nl = memchr(p, '\n', n);
		size_t ll = nl ? (size_t)(nl - p) : n, k = ll, i;

		while (k && p[k - 1] == '\r')
			k--;
		for (i = 0; i < k && (p[i] == ' ' || p[i] == '\t'); i++)
			;
		if (i < k)
			smt_ring_push(r, p, k, 0, -1, 0, T0);
		p += ll + (nl ? 1 : 0);
		n -= ll + (nl ? 1 : 0);
	}
}

/* A rank's lines into the table, as the output hub accounts them. */
static void account(struct smt_ranks *t, int rank, int stream, const char *p, size_t n)
{
	while (n) {
		const char *nl = memchr(p, '\n', n);
		size_t ll = nl ? (size_t)(nl - p) : n;
		struct smt_record r = { .rank = rank, .stream = (enum smt_stream)stream,
					.flags = SMT_REC_WHOLE, .ms = T0, .p = p, .n = ll };
		const char *kept;
		size_t kl;
		int tr;

		smt_ranks_account(t, &r, &kept, &kl, &tr);
		p += ll + (nl ? 1 : 0);
		n -= ll + (nl ? 1 : 0);
	}
}

/*
 * Load CASE on host "vm" with NRANKS ranks: a rank with a status file ended
 * as it says (failing ranks in rank order, from T0 + 1 s); one without was
 * still running when smtd stopped the job and was killed after it
 * signalled it (a victim).
 */
static void load(struct known *k, const char *name, int nranks)
{
	size_t len;
	char *p, file[64];

	memset(k, 0, sizeof(*k));
	smt_ring_init(&k->msgs, SMT_OUTPUT_MSG_LINES, SMT_OUTPUT_MSG_BYTES);
	assert_int_equal(smt_ranks_new("vm", &k->ranks), 0);
	if ((p = case_file(name, "mpirun.out", &len)))
		keep_msgs(&k->msgs, p, len);
	free(p);
	if ((p = case_file(name, "mpirun.err", &len)))
		keep_msgs(&k->msgs, p, len);
	free(p);
	p = case_file(name, "status", &len);
	assert_non_null(p);
	assert_int_equal(sscanf(p, "mpirun exit %d", &k->mpirun_exit), 1);
	free(p);
	for (int r = 0; r < nranks; r++) {
		struct smt_rank *rk = smt_ranks_get(k->ranks, r, NULL, 1);
		char what[16];
		int v;

		rk->pid = 2000 + r;
		rk->state = SMT_RANK_RUNNING;
		snprintf(file, sizeof(file), "rank-%d.out", r);
		if ((p = case_file(name, file, &len)))
			account(k->ranks, r, 0, p, len);
		free(p);
		snprintf(file, sizeof(file), "rank-%d.err", r);
		if ((p = case_file(name, file, &len)))
			account(k->ranks, r, 1, p, len);
		free(p);
		snprintf(file, sizeof(file), "rank-%d.status", r);
		p = case_file(name, file, &len);
		if (!p) {
			rk->signaled_ms = T0 + 1500;
			smt_ranks_ended(k->ranks, rk, SIGKILL, (double)(T0 + 1600 + r) / 1000.0);
			continue;
		}
		if (sscanf(p, "exit %d", &v) == 1) {
			smt_ranks_ended(k->ranks, rk, W_EXITCODE(v, 0), (double)(T0 + 1000 + r) / 1000.0);
		} else if (sscanf(p, "signal %d", &v) == 1) {
			smt_ranks_ended(k->ranks, rk, v, (double)(T0 + 1000 + r) / 1000.0);
		} else {
			assert_int_equal(sscanf(p, "exec %15s", what), 1);
			rk->exec_errno = !strcmp(what, "ENOENT") ? ENOENT : EACCES;
			smt_ranks_ended(k->ranks, rk, W_EXITCODE(rk->exec_errno == ENOENT ? 127 : 126, 0),
					(double)(T0 + 1000 + r) / 1000.0);
		}
		free(p);
	}
}

static void unload(struct known *k)
{
	smt_ring_free(&k->msgs);
	smt_ranks_free(k->ranks);
}

/* The failure text: one summary line within its limit, then whole lines,
 * all within what SageMaker shows, valid UTF-8, no mpirun command line. */
static void check_text(const char *text, size_t len, const char *summary)
{
	const char *nl = memchr(text, '\n', len);

	assert_non_null(nl);
	assert_true(nl - text <= SMT_REPORT_SUMMARY_MAX);
	assert_true(len <= SMT_REPORT_SHOWN);
	assert_int_equal(strlen(text), len);
	assert_int_equal(text[len - 1], '\n');
	assert_true(smt_test_valid_utf8(text, len, 1));
	assert_null(strstr(text, "--allow-run-as-root"));
	for (size_t i = 0; i < len; i++)
		assert_true((unsigned char)text[i] >= 0x20 || text[i] == '\n' || text[i] == '\t');
	if (strncmp(text, summary, strlen(summary)) || text[strlen(summary)] != '\n')
		fail_msg("the text begins with \"%.*s\"", (int)(nl - text), text);
}

static struct smt_report_input input(struct known *k, const char *program)
{
	struct smt_report_input in = {
		.current_host = "vm", .command = "mpirun", .exit_code = k->mpirun_exit,
		.program = program, .workdir = workdir, .msgs = &k->msgs, .ranks = k->ranks,
	};
	return in;
}

/* Analyse and build: the summary and kind expected, the text checked;
 * returns the text. */
static char *expect(const struct smt_report_input *in, enum smt_failure_kind kind,
		    const char *summary, struct smt_report *out)
{
	struct smt_report r;
	char *text;
	size_t len;

	smt_report_analyse(in, &r);
	if (strcmp(r.summary, summary))
		fail_msg("summary:\n  got  %s\n  want %s", r.summary, summary);
	assert_int_equal(r.kind, kind);
	assert_true(smt_test_valid_utf8(r.summary, strlen(r.summary), 1));
	assert_int_equal(smt_report_build(in, &r, &text, &len), 0);
	check_text(text, len, summary);
	if (out)
		*out = r;
	return text;
}

static void expect_case(const char *name, int nranks, const char *program, int oom,
			enum smt_failure_kind kind, const char *summary)
{
	struct known k;
	struct smt_report_input in;

	load(&k, name, nranks);
	in = input(&k, program);
	in.oom_kill = oom;
	free(expect(&in, kind, summary, NULL));
	unload(&k);
}

static void test_exit_code(void **state)
{
	struct known k;
	struct smt_report_input in;
	struct smt_report r;

	(void)state;
	expect_case("exit3", 2, "./mpi_job", 0, SMT_FAIL_RANK_FAILED,
		    "RankFailed: rank 1 on vm exited with code 3: rank 1 giving up with code 3");
	/* The report as smtd would have it. */
	load(&k, "exit3", 2);
	in = input(&k, "./mpi_job");
	free(expect(&in, SMT_FAIL_RANK_FAILED,
		    "RankFailed: rank 1 on vm exited with code 3: rank 1 giving up with code 3", &r));
	assert_int_equal(r.rank, 1);
	assert_int_equal(r.exit_code, 3);
	assert_string_equal(r.host, "vm");
	assert_string_equal(r.error_line, "rank 1 giving up with code 3");
	/* Without the rank table, mpirun's message says as much. */
	in.ranks = NULL;
	free(expect(&in, SMT_FAIL_RANK_FAILED, "RankFailed: rank 1 exited with code 3", NULL));
	unload(&k);
}

static void test_signals(void **state)
{
	(void)state;
	expect_case("segv", 2, "./mpi_job", 0, SMT_FAIL_RANK_KILLED,
		    "RankKilled: rank 1 on vm was killed by SIGSEGV: Signal: Segmentation fault (11)");
	expect_case("sigkill", 2, "./mpi_job", 0, SMT_FAIL_RANK_KILLED,
		    "RankKilled: rank 1 on vm was killed by SIGKILL from another process (not smtd, "
		    "no OOM kill recorded)");
	expect_case("sigkill", 2, "./mpi_job", 1, SMT_FAIL_OOM,
		    "OutOfMemory: rank 1 on vm was killed by SIGKILL (the kernel's OOM killer)");
	/* The OOM killer took something else of the job: no rank failed. */
	{
		struct known k;
		struct smt_report_input in;

		load(&k, "ok", 2);
		in = input(&k, "./mpi_job");
		in.oom_kill = 1;
		in.current_host = "algo-3";
		free(expect(&in, SMT_FAIL_OOM,
			    "OutOfMemory: the kernel's OOM killer killed a process of the job on algo-3", NULL));
		unload(&k);
	}
	/* From mpirun's word alone. */
	{
		struct known k;
		struct smt_report_input in;

		load(&k, "segv", 0);
		in = input(&k, "./mpi_job");
		free(expect(&in, SMT_FAIL_RANK_KILLED, "RankKilled: rank 1 on vm was killed by SIGSEGV", NULL));
		unload(&k);
	}
}

static void test_mpi_abort(void **state)
{
	(void)state;
	expect_case("abort", 2, "./mpi_job", 0, SMT_FAIL_RANK_FAILED,
		    "RankFailed: rank 1 on vm exited with code 7 (MPI_Abort): rank 1 aborting");
	/* Rank 1 exited 0 without MPI_Finalize: only mpirun knows. */
	expect_case("improper", 2, "./mpi_job", 0, SMT_FAIL_RANK_FAILED,
		    "RankFailed: rank 1 on vm exited without calling MPI_Finalize");
}

static void test_python_valueerror(void **state)
{
	struct known k;
	struct smt_report_input in;
	char *text;
	size_t len;
	static const char summary[] =
		"RankFailed: rank 1 on vm exited with code 1 (MPI_Abort): ValueError: shapes do not match";

	(void)state;
	load(&k, "python-valueerror", 2);
	in = input(&k, "/usr/bin/python3");
	text = expect(&in, SMT_FAIL_RANK_FAILED, summary, NULL);
	free(text);
	/* Built without a prior analysis: the same. */
	assert_int_equal(smt_report_build(&in, NULL, &text, &len), 0);
	check_text(text, len, summary);
	/* Then the traceback's end, whole lines, the error last. */
	assert_non_null(strstr(text, "\n    raise ValueError(\"shapes do not match\")\n"
				     "ValueError: shapes do not match\n"));
	assert_non_null(strstr(text, "\n  File \"val.py\", line 7, in f\n"));
	assert_string_equal(text + len - 32, "ValueError: shapes do not match\n");
	free(text);
	unload(&k);
}

static void test_program(void **state)
{
	(void)state;
	/* Each launcher said the program could not be executed. */
	expect_case("missing", 2, "./missing-prog", 0, SMT_FAIL_NOT_FOUND,
		    "ProgramNotFound: ./missing-prog on vm: No such file or directory (exit 127)");
	expect_case("noexec", 2, "./noexec.sh", 0, SMT_FAIL_NOT_EXECUTABLE,
		    "ProgramNotExecutable: ./noexec.sh on vm: Permission denied (exit 126)");
	/* The launcher itself is missing where orted runs: mpirun says so,
	 * and only this host's files can say which it is. */
	expect_case("nolauncher", 0, "./mpi_job", 0, SMT_FAIL_NOT_FOUND,
		    "ProgramNotFound: /opt/smtd/bin/smtctl on vm: No such file or directory (exit 127)");
	{
		struct known k;
		struct smt_report_input in;

		load(&k, "nolauncher", 0);
		in = input(&k, "./mpi_job");
		in.current_host = "algo-1";
		free(expect(&in, SMT_FAIL_LAUNCH,
			    "LaunchFailed: mpirun could not access or execute /opt/smtd/bin/smtctl on vm",
			    NULL));
		unload(&k);
	}
}

static void test_launch_failures(void **state)
{
	struct known k;
	struct smt_report_input in;
	char *text;

	(void)state;
	expect_case("noslots", 0, "./mpi_job", 0, SMT_FAIL_LAUNCH,
		    "LaunchFailed: mpirun could not start the job: There are not enough slots "
		    "available in the system to satisfy the 5 slots that were requested by the application");
	expect_case("badhost", 0, "./mpi_job", 0, SMT_FAIL_LAUNCH,
		    "LaunchFailed: mpirun could not start the job: ssh: Could not resolve hostname "
		    "nosuchhost: Name or service not known");
	expect_case("badoption", 0, "./mpi_job", 0, SMT_FAIL_LAUNCH,
		    "LaunchFailed: mpirun could not start the job: mpirun: Error: unknown option \"--bogus-opt\"");
	/* mpirun's message follows the summary, without its rules of dashes. */
	load(&k, "badhost", 0);
	in = input(&k, "./mpi_job");
	text = expect(&in, SMT_FAIL_LAUNCH,
		      "LaunchFailed: mpirun could not start the job: ssh: Could not resolve hostname "
		      "nosuchhost: Name or service not known", NULL);
	assert_null(strstr(text, "-----"));
	assert_non_null(strstr(text, "\n  them. Please check network connectivity (including firewalls\n"));
	free(text);
	unload(&k);
}

static void test_daemon_lost(void **state)
{
	(void)state;
	expect_case("daemonlost", 0, "./mpi_job", 0, SMT_FAIL_DAEMON_LOST,
		    "DaemonLost: mpirun lost the Open MPI daemon (orted) on algo-2: its host, its "
		    "network link or orted itself failed");
}

static void test_mpirun_killed_and_stopped(void **state)
{
	struct known k;
	struct smt_report_input in;
	char *text;

	(void)state;
	load(&k, "ok", 2);
	in = input(&k, "./mpi_job");
	in.exit_code = -1;
	in.term_signal = SIGKILL;
	free(expect(&in, SMT_FAIL_MPIRUN_KILLED, "MpirunKilled: mpirun was killed by SIGKILL", NULL));
	in.command = "torchrun";
	free(expect(&in, SMT_FAIL_MPIRUN_KILLED, "MpirunKilled: torchrun was killed by SIGKILL", NULL));
	unload(&k);

	/* smtd was stopped: that is the answer, whatever failed since. */
	load(&k, "sigkill", 2);
	in = input(&k, "./mpi_job");
	in.stop_signal = SIGTERM;
	text = expect(&in, SMT_FAIL_STOPPED, "Stopped: smtd on vm received SIGTERM and stopped the job",
		      NULL);
	assert_string_equal(text, "Stopped: smtd on vm received SIGTERM and stopped the job\n");
	free(text);
	unload(&k);
}

/* mpirun failed and no rank says why: its code, and a rank's error line
 * when one is known. */
static void test_job_failed(void **state)
{
	struct known k;
	struct smt_report_input in;
	struct smt_report r;

	(void)state;
	load(&k, "ok", 2);
	in = input(&k, "./mpi_job");
	in.exit_code = 5;
	free(expect(&in, SMT_FAIL_JOB_FAILED, "JobFailed: mpirun exited with code 5", NULL));
	account(k.ranks, 1, 1, "some error happened\n", 20);
	free(expect(&in, SMT_FAIL_JOB_FAILED,
		    "JobFailed: mpirun exited with code 5; rank 1 on vm: some error happened", &r));
	assert_int_equal(r.rank, 1);
	unload(&k);
}

/* A rank on a worker failed first: the leader names it and its host from
 * the worker's report; a worker names only its own. */
static void test_remote_rank(void **state)
{
	struct known k;
	struct smt_report_input in;
	struct smt_rank *w;
	char *text;
	char *tail[] = { "Traceback (most recent call last):", "  File \"t.py\", line 1, in <module>",
			 "KeyError: 'lr'", NULL };

	(void)state;
	load(&k, "ok", 2);
	w = smt_ranks_get(k.ranks, 5, "algo-2", 1);
	w->tail = calloc(4, sizeof(char *));
	for (int i = 0; i < 3; i++)
		w->tail[i] = strdup(tail[i]);
	w->error_line = strdup("KeyError: 'lr'");
	smt_ranks_ended(k.ranks, w, W_EXITCODE(2, 0), (double)(T0 + 10) / 1000.0);
	in = input(&k, "./mpi_job");
	in.exit_code = 1;
	text = expect(&in, SMT_FAIL_RANK_FAILED,
		      "RankFailed: rank 5 on algo-2 exited with code 2: KeyError: 'lr'", NULL);
	/* Then the worker's tail of that rank. */
	assert_non_null(strstr(text, "\n  File \"t.py\", line 1, in <module>\nKeyError: 'lr'\n"));
	free(text);
	in.local_only = 1;
	free(expect(&in, SMT_FAIL_JOB_FAILED, "JobFailed: mpirun exited with code 1", NULL));
	unload(&k);
}

/* ---- how a rank died, as its host saw it (crash.h) ---- */

static const char segv_dump[] =
	"step 1\n"
	"Fatal Python error: Segmentation fault\n"
	"\n"
	"Thread 0x00007f86b4aa16c0 (most recent call first):\n"
	"  File \"/usr/lib/python3.11/threading.py\", line 320 in wait\n"
	"  File \"/opt/ml/code/prefetch.py\", line 5 in other\n"
	"\n"
	"Current thread 0x00007f86b4d9a040 (most recent call first):\n"
	"  File \"/usr/lib/python3.11/ctypes/__init__.py\", line 519 in string_at\n"
	"  File \"/opt/ml/code/train.py\", line 8 in load_batch\n"
	"  File \"/opt/ml/code/train.py\", line 12 in <module>\n";

/* Rank RANK of a table for HOST, killed by SIGNO after writing ERR. */
static struct smt_ranks *crashed(const char *host, int rank, int signo, const char *err)
{
	struct smt_ranks *t;
	struct smt_rank *k;

	assert_int_equal(smt_ranks_new(host, &t), 0);
	for (int r = 0; r <= rank; r++) {
		k = smt_ranks_get(t, r, NULL, 1);
		k->state = SMT_RANK_RUNNING;
	}
	account(t, rank, 1, err, strlen(err));
	smt_ranks_ended(t, k, signo, (double)(T0 + 1000) / 1000.0);
	return t;
}

static char *expect_ranks(struct smt_ranks *t, const char *host, enum smt_failure_kind kind,
			  const char *summary)
{
	struct smt_report_input in = { .current_host = host, .command = "mpirun", .exit_code = 1,
				       .program = "python3", .ranks = t };

	return expect(&in, kind, summary, NULL);
}

/* The leader's table after HOST's worker reported the ranks of T. */
static struct smt_ranks *as_leader(struct smt_ranks *t, const char *host)
{
	struct smt_ranks *l;
	json_t *a = smt_ranks_json(t, 1, 0);

	assert_int_equal(smt_ranks_new("algo-1", &l), 0);
	assert_int_equal(smt_ranks_merge_remote(l, host, a), smt_ranks_local(t));
	json_decref(a);
	return l;
}

static void test_crash_frame(void **state)
{
	static const char want[] =
		"RankKilled: rank 3 on algo-2 was killed by SIGSEGV in load_batch (train.py:8)";
	struct smt_ranks *t = crashed("algo-2", 3, SIGSEGV, segv_dump), *l;
	char *text;

	(void)state;
	text = expect_ranks(t, "algo-2", SMT_FAIL_RANK_KILLED, want);
	/* The rest is the dump, the crashing thread first. */
	assert_non_null(strstr(text, "\nFatal Python error: Segmentation fault\n\nCurrent thread "
				     "0x00007f86b4d9a040 (most recent call first):\n  File "
				     "\"/usr/lib/python3.11/ctypes/__init__.py\", line 519 in string_at\n"));
	assert_non_null(strstr(text, "line 12 in <module>\n\nThread 0x00007f86b4aa16c0"));
	assert_null(strstr(text, "step 1"));
	free(text);
	/* The leader (and every worker) words it the same from the report. */
	l = as_leader(t, "algo-2");
	text = expect_ranks(l, "algo-1", SMT_FAIL_RANK_KILLED, want);
	assert_non_null(strstr(text, "\nFatal Python error: Segmentation fault\n\nCurrent thread "));
	free(text);
	smt_ranks_free(l);
	smt_ranks_free(t);
	/* No dump (not Python, or it did not come): today's line. */
	t = crashed("algo-2", 1, SIGSEGV, "loading\n");
	free(expect_ranks(t, "algo-2", SMT_FAIL_RANK_KILLED,
			  "RankKilled: rank 1 on algo-2 was killed by SIGSEGV"));
	smt_ranks_free(t);
	/* Only library frames: the innermost of them. */
	t = crashed("algo-2", 0, SIGABRT,
		    "Fatal Python error: Aborted\n\nCurrent thread 0x00007f (most recent call first):\n"
		    "  File \"/usr/lib/python3/dist-packages/numpy/core/x.py\", line 3 in dot\n");
	free(expect_ranks(t, "algo-2", SMT_FAIL_RANK_KILLED,
			  "RankKilled: rank 0 on algo-2 was killed by SIGABRT in dot (x.py:3)"));
	smt_ranks_free(t);
}

static void test_crash_shm(void **state)
{
	static const char dump[] =
		"Fatal Python error: Bus error\n\nCurrent thread 0x00007f (most recent call first):\n"
		"  File \"/opt/ml/code/fill.py\", line 9 in fill\n";
	struct smt_ranks *t, *l;
	struct smt_rank *k;

	(void)state;
	t = crashed("algo-3", 4, SIGBUS, dump);
	k = smt_ranks_get(t, 4, NULL, 0);
	k->crash.shm_size = 1 << 20;
	k->crash.shm_used = 1 << 20;
	l = as_leader(t, "algo-3");
	free(expect_ranks(l, "algo-1", SMT_FAIL_RANK_KILLED,
			  "RankKilled: rank 4 on algo-3 was killed by SIGBUS in fill (fill.py:9); /dev/shm "
			  "is 1 MiB, 100 % used (PyTorch DataLoader workers need more: --shm-size)"));
	smt_ranks_free(l);
	/* 64 GiB, 91 % used: full. */
	k->crash.shm_size = 64LL << 30;
	k->crash.shm_used = (64LL << 30) / 100 * 91;
	free(expect_ranks(t, "algo-3", SMT_FAIL_RANK_KILLED,
			  "RankKilled: rank 4 on algo-3 was killed by SIGBUS in fill (fill.py:9); /dev/shm "
			  "is 64 GiB, 91 % used (PyTorch DataLoader workers need more: --shm-size)"));
	/* 64 MiB, half used: below its host's --min-shm (1 GiB), also as the
	 * leader hears of it. */
	k->crash.shm_size = 64 << 20;
	k->crash.shm_used = 32 << 20;
	k->crash.shm_min = 1LL << 30;
	free(expect_ranks(t, "algo-3", SMT_FAIL_RANK_KILLED,
			  "RankKilled: rank 4 on algo-3 was killed by SIGBUS in fill (fill.py:9); /dev/shm "
			  "is 64 MiB, 50 % used (PyTorch DataLoader workers need more: --shm-size)"));
	l = as_leader(t, "algo-3");
	free(expect_ranks(l, "algo-1", SMT_FAIL_RANK_KILLED,
			  "RankKilled: rank 4 on algo-3 was killed by SIGBUS in fill (fill.py:9); /dev/shm "
			  "is 64 MiB, 50 % used (PyTorch DataLoader workers need more: --shm-size)"));
	smt_ranks_free(l);
	/* --min-shm 32M: 64 MiB is enough, and half used is not full. */
	k->crash.shm_min = 32 << 20;
	free(expect_ranks(t, "algo-3", SMT_FAIL_RANK_KILLED,
			  "RankKilled: rank 4 on algo-3 was killed by SIGBUS in fill (fill.py:9)"));
	l = as_leader(t, "algo-3");
	free(expect_ranks(l, "algo-1", SMT_FAIL_RANK_KILLED,
			  "RankKilled: rank 4 on algo-3 was killed by SIGBUS in fill (fill.py:9)"));
	smt_ranks_free(l);
	/* --min-shm 0: no size is too small, only the use counts. */
	k->crash.shm_min = 0;
	free(expect_ranks(t, "algo-3", SMT_FAIL_RANK_KILLED,
			  "RankKilled: rank 4 on algo-3 was killed by SIGBUS in fill (fill.py:9)"));
	k->crash.shm_used = 64 << 20;
	free(expect_ranks(t, "algo-3", SMT_FAIL_RANK_KILLED,
			  "RankKilled: rank 4 on algo-3 was killed by SIGBUS in fill (fill.py:9); /dev/shm "
			  "is 64 MiB, 100 % used (PyTorch DataLoader workers need more: --shm-size)"));
	/* A DataLoader worker (a child of the rank) died of SIGBUS, and the
	 * rank raised. */
	{
		struct smt_ranks *d = crashed("algo-3", 2, W_EXITCODE(1, 0),
			"ERROR: Unexpected bus error encountered in worker. This might be caused by "
			"insufficient shared memory (shm).\nTraceback (most recent call last):\n"
			"RuntimeError: DataLoader worker (pid(s) 29445) exited unexpectedly\n");
		struct smt_rank *dk = smt_ranks_get(d, 2, NULL, 0);

		dk->crash.shm_size = 64 << 20;
		dk->crash.shm_used = 64 << 20;
		l = as_leader(d, "algo-3");
		free(expect_ranks(l, "algo-1", SMT_FAIL_RANK_FAILED,
				  "RankFailed: rank 2 on algo-3 exited with code 1: RuntimeError: DataLoader "
				  "worker (pid(s) 29445) exited unexpectedly; /dev/shm is 64 MiB, 100 % used "
				  "(PyTorch DataLoader workers need more: --shm-size)"));
		smt_ranks_free(l);
		/* Without a bus error, a full /dev/shm is not the story. */
		dk->crash.bus_error = 0;
		free(expect_ranks(d, "algo-3", SMT_FAIL_RANK_FAILED,
				  "RankFailed: rank 2 on algo-3 exited with code 1: RuntimeError: DataLoader "
				  "worker (pid(s) 29445) exited unexpectedly"));
		smt_ranks_free(d);
	}
	/* 64 GiB, 90 % used: not what killed it. */
	k->crash.shm_used = (64LL << 30) / 100 * 90;
	k->crash.shm_size = 64LL << 30;
	free(expect_ranks(t, "algo-3", SMT_FAIL_RANK_KILLED,
			  "RankKilled: rank 4 on algo-3 was killed by SIGBUS in fill (fill.py:9)"));
	smt_ranks_free(t);
}

static void test_crash_memory(void **state)
{
	struct smt_ranks *t, *l;
	struct smt_rank *k;

	(void)state;
	t = crashed("algo-3", 2, SIGKILL, "epoch 1\n");
	k = smt_ranks_get(t, 2, NULL, 0);
	k->crash.oom = 1;
	k->crash.mem_kb = 250 * 1024 + 100;
	k->crash.limit_bytes = 256LL << 20;
	k->crash.limit_cgroup = 1;
	l = as_leader(t, "algo-3");
	free(expect_ranks(l, "algo-1", SMT_FAIL_OOM,
			  "OutOfMemory: rank 2 on algo-3 was killed by SIGKILL (the kernel's OOM killer) "
			  "with 250 MiB in use of the limit 256 MiB (the memory cgroup's)"));
	smt_ranks_free(l);
	/* The host's memory; the rank's own unknown. */
	k->crash.mem_kb = 0;
	k->crash.limit_bytes = 15LL << 29;
	k->crash.limit_cgroup = 0;
	free(expect_ranks(t, "algo-3", SMT_FAIL_OOM,
			  "OutOfMemory: rank 2 on algo-3 was killed by SIGKILL (the kernel's OOM killer): "
			  "the limit 7.5 GiB (the host's memory)"));
	/* No OOM record: someone else sent it. */
	k->crash.oom = 0;
	l = as_leader(t, "algo-3");
	free(expect_ranks(l, "algo-1", SMT_FAIL_RANK_KILLED,
			  "RankKilled: rank 2 on algo-3 was killed by SIGKILL from another process (not "
			  "smtd, no OOM kill recorded)"));
	smt_ranks_free(l);
	/* smtd's own SIGKILL never names the rank. */
	k->signaled_ms = T0 + 500;
	free(expect_ranks(t, "algo-3", SMT_FAIL_JOB_FAILED, "JobFailed: mpirun exited with code 1"));
	smt_ranks_free(t);
}

/* A standalone program is rank 0 on this host. */
static void test_standalone(void **state)
{
	struct smt_ranks *t;
	struct smt_rank *k;
	struct smt_report_input in = { .current_host = "algo-1", .exit_code = 2, .program = "./train" };
	static const char err[] =
		"Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n"
		"    d['x']\nKeyError: 'x'\n";
	char *text;
	size_t len;

	(void)state;
	assert_int_equal(smt_ranks_new("algo-1", &t), 0);
	k = smt_ranks_get(t, 0, NULL, 1);
	account(t, 0, 1, err, sizeof(err) - 1);
	in.ranks = t;
	/* Before its end is known: from the program's own status. */
	free(expect(&in, SMT_FAIL_RANK_FAILED, "RankFailed: rank 0 on algo-1 exited with code 2: KeyError: 'x'", NULL));
	in.exit_code = -1;
	in.term_signal = SIGSEGV;
	free(expect(&in, SMT_FAIL_RANK_KILLED,
		    "RankKilled: rank 0 on algo-1 was killed by SIGSEGV: KeyError: 'x'", NULL));
	/* Its end in the table. */
	in.exit_code = 2;
	in.term_signal = 0;
	smt_ranks_ended(t, k, W_EXITCODE(2, 0), (double)T0 / 1000.0);
	text = expect(&in, SMT_FAIL_RANK_FAILED,
		      "RankFailed: rank 0 on algo-1 exited with code 2: KeyError: 'x'", NULL);
	len = strlen(text);
	assert_int_equal(len, strlen("RankFailed: rank 0 on algo-1 exited with code 2: KeyError: 'x'") + 1 +
			 sizeof(err) - 1);
	assert_string_equal(text + len - (sizeof(err) - 1), err);
	free(text);
	/* It could not be executed at all. */
	in.exit_code = 127;
	in.exec_errno = ENOENT;
	text = expect(&in, SMT_FAIL_NOT_FOUND, "ProgramNotFound: ./train: No such file or directory (exit 127)", NULL);
	assert_string_equal(text, "ProgramNotFound: ./train: No such file or directory (exit 127)\n");
	free(text);
	in.exec_errno = EACCES;
	free(expect(&in, SMT_FAIL_NOT_EXECUTABLE, "ProgramNotExecutable: ./train: Permission denied (exit 126)",
		    NULL));
	smt_ranks_free(t);
}

static void test_cxx_terminate(void **state)
{
	struct smt_ranks *t;
	struct smt_report_input in = { .current_host = "h", .exit_code = -1, .term_signal = SIGABRT };
	static const char err[] = "loading data\nterminate called after throwing an instance of "
				  "'std::runtime_error'\n  what():  boom\n";

	(void)state;
	assert_int_equal(smt_ranks_new("h", &t), 0);
	smt_ranks_get(t, 0, NULL, 1);
	account(t, 0, 1, err, sizeof(err) - 1);
	in.ranks = t;
	free(expect(&in, SMT_FAIL_RANK_KILLED,
		    "RankKilled: rank 0 on h was killed by SIGABRT: terminate called after throwing an "
		    "instance of 'std::runtime_error'", NULL));
	smt_ranks_free(t);
}

/* Over-long, multi-byte, binary error lines: the summary stays one line,
 * within its limit, cut between characters; so does the text. */
static void test_truncation(void **state)
{
	struct smt_ranks *t;
	struct smt_rank *k;
	struct smt_report_input in = { .current_host = "h", .command = "mpirun", .exit_code = 1 };
	struct smt_report r;
	char *line = malloc(5000), *text;
	size_t len, n;

	(void)state;
	assert_non_null(line);
	memcpy(line, "RuntimeError: ", 14);
	n = 14;
	while (n + 3 < 4990) {
		memcpy(line + n, "\xc3\xa9\x01", 3);  /* é then a control byte */
		n += 3;
	}
	line[n++] = '\xff';
	line[n++] = '\n';
	assert_int_equal(smt_ranks_new("h", &t), 0);
	k = smt_ranks_get(t, 0, NULL, 1);
	for (int i = 0; i < 3; i++)
		account(t, 0, 1, line, n);
	smt_ranks_ended(t, k, W_EXITCODE(1, 0), 1);
	in.ranks = t;
	smt_report_analyse(&in, &r);
	assert_true(strlen(r.summary) <= SMT_REPORT_SUMMARY_MAX);
	assert_null(strchr(r.summary, '\n'));
	assert_null(strchr(r.summary, '\x01'));
	assert_true(smt_test_valid_utf8(r.summary, strlen(r.summary), 1));
	assert_true(!strncmp(r.summary, "RankFailed: rank 0 on h exited with code 1: RuntimeError: \xc3\xa9 \xc3\xa9 ", 64));
	assert_int_equal(smt_report_build(&in, &r, &text, &len), 0);
	assert_true(len <= SMT_REPORT_SHOWN);
	assert_true(smt_test_valid_utf8(text, len, 1));
	assert_int_equal(text[len - 1], '\n');
	free(text);
	free(line);
	smt_ranks_free(t);
}

/* ---- smt_failure_text ---- */

static void test_failure_text(void **state)
{
	char *s, big[3000];

	(void)state;
	s = smt_failure_text(SMT_FAIL_LOST_HOST, "worker %s was lost: %s", "algo-2", "read\nerror\x01");
	assert_string_equal(s, "LostHost: worker algo-2 was lost: read error \n");
	free(s);
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	s = smt_failure_text(SMT_FAIL_INTERNAL, "%s", big);
	assert_int_equal(strlen(s), SMT_REPORT_SUMMARY_MAX + 1);
	assert_int_equal(s[SMT_REPORT_SUMMARY_MAX], '\n');
	free(s);
}

/* ---- the kinds ---- */

static void test_kinds(void **state)
{
	(void)state;
	assert_null(smt_failure_kind_name(SMT_FAIL_NONE));
	assert_null(smt_failure_kind_name((enum smt_failure_kind)100));
	assert_string_equal(smt_failure_kind_name(SMT_FAIL_OOM), "OutOfMemory");
	assert_string_equal(smt_failure_kind_name(SMT_FAIL_JOB_FAILED), "JobFailed");
	assert_int_equal(smt_failure_exit_code(SMT_FAIL_STOPPED, SIGTERM), 143);
	assert_int_equal(smt_failure_exit_code(SMT_FAIL_RANK_FAILED, 0), 1);
	assert_int_equal(smt_failure_exit_code(SMT_FAIL_CONFIG, 0), 2);
	assert_int_equal(smt_failure_exit_code(SMT_FAIL_LOST_HOST, 0), 3);
	assert_int_equal(smt_failure_exit_code(SMT_FAIL_LOST_LEADER, 0), 3);
	assert_int_equal(smt_failure_exit_code(SMT_FAIL_NONE, 0), 0);
	/* Every kind has a name, a code and a meaning; that smtd(8) lists each
	 * with its exit status is tests/integration/house_docs.sh's check. */
	for (int i = 1; i < SMT_FAIL_COUNT; i++) {
		assert_non_null(smt_failure_kinds[i].name);
		assert_non_null(smt_failure_kinds[i].meaning);
		assert_true(smt_failure_kinds[i].exit_code == -1 ||
			    (smt_failure_kinds[i].exit_code >= 1 && smt_failure_kinds[i].exit_code <= 3));
	}
}

/* ---- errline.h ---- */

static void test_error_score(void **state)
{
	(void)state;
	assert_int_equal(smt_errline_score("ValueError: shapes do not match", 31), 2);
	assert_int_equal(smt_errline_score("torch.cuda.OutOfMemoryError: CUDA out of memory.", 48), 2);
	assert_int_equal(smt_errline_score("KeyboardInterrupt", 17), 2);
	assert_int_equal(smt_errline_score("SystemExit: 3", 13), 2);
	assert_int_equal(smt_errline_score("Segmentation fault (core dumped)", 32), 2);
	assert_int_equal(smt_errline_score("NCCL error in: x.cpp:1, unhandled", 33), 2);
	assert_int_equal(smt_errline_score("Traceback (most recent call last):", 34), 0);
	assert_int_equal(smt_errline_score("    raise ValueError(x)", 23), 1);
	assert_int_equal(smt_errline_score("Epoch 1: loss 0.5", 17), 0);
	assert_int_equal(smt_errline_score("Some words: ValueError", 22), 1);
	assert_int_equal(smt_errline_score("error: bad", 10), 1);
	assert_int_equal(smt_errline_score("ValueErrors are bad", 19), 1);
	assert_int_equal(smt_errline_score("", 0), 0);
	/* smdistributed's exception classes, also inside a line. */
	assert_int_equal(smt_errline_score("[1,0]: smdistributed raised SMDDPTimeoutError: x", 48), 2);
	assert_int_equal(smt_errline_score("rank 3: SMPValidationError: bad partitions", 42), 2);
	assert_int_equal(smt_errline_score("SMPSegFault", 11), 2);
	/* Only LEN bytes count. */
	assert_int_equal(smt_errline_score("fine. ValueError: x", 5), 0);
}

static void test_errline_pick(void **state)
{
	struct smt_ring r;
	char out[SMT_ERRLINE_MAX + 1];
	char *v[] = { "ok", "an error here", "Traceback (most recent call last):",
		      "  File \"a.py\", line 1", "ValueError: last", NULL };
	char long_line[1000];

	(void)state;
	smt_ring_init(&r, 16, 4096);
	/* Nothing: nothing, or the last line when allowed. */
	smt_errline_pick(NULL, NULL, NULL, 1, out);
	assert_string_equal(out, "");
	smt_ring_push(&r, "step 1", 6, 0, 0, 1, 0);
	smt_ring_push(&r, "   ", 3, 0, 0, 1, 0);
	smt_errline_pick(&r, NULL, NULL, 0, out);
	assert_string_equal(out, "");
	smt_errline_pick(&r, NULL, NULL, 1, out);
	assert_string_equal(out, "step 1");
	/* A weak line, then a strong one, then Python's exception after its
	 * traceback, which wins. */
	smt_ring_push(&r, "it failed", 9, 0, 0, 1, 0);
	smt_errline_pick(&r, NULL, NULL, 1, out);
	assert_string_equal(out, "it failed");
	smt_ring_push(&r, "[algo-1:00042] Bus error", 24, 0, 0, 1, 0);
	smt_errline_pick(&r, NULL, NULL, 1, out);
	assert_string_equal(out, "Bus error");
	/* The first strong line seen (before the tail) beats the tail's. */
	smt_errline_pick(&r, NULL, "CUDA error: an illegal memory access", 1, out);
	assert_string_equal(out, "CUDA error: an illegal memory access");
	smt_errline_pick(NULL, v, NULL, 1, out);
	assert_string_equal(out, "ValueError: last");
	smt_errline_pick(NULL, v, "CUDA error: x", 1, out);
	assert_string_equal(out, "ValueError: last");
	/* Clean, one line, within its limit. */
	memset(long_line, 'e', sizeof(long_line));
	memcpy(long_line, "RuntimeError:\t", 14);
	smt_ring_free(&r);
	smt_ring_init(&r, 16, 4096);
	smt_ring_push(&r, long_line, sizeof(long_line), 0, 0, 1, 0);
	smt_errline_pick(&r, NULL, NULL, 1, out);
	assert_int_equal(strlen(out), SMT_ERRLINE_MAX);
	assert_null(strchr(out, '\t'));
	smt_ring_free(&r);
	/* A blank line that ends where the ring's bytes end: nothing past it
	 * is read (ASan watches). */
	smt_ring_init(&r, 4, 16);
	smt_ring_push(&r, "0123456789", 10, 0, 0, 1, 0);
	smt_ring_push(&r, "      ", 6, 0, 0, 1, 0);
	smt_errline_pick(&r, NULL, NULL, 1, out);
	assert_string_equal(out, "0123456789");
	smt_ring_free(&r);
}

/* ---- mpimsg.h ---- */

static void parse_case(const char *name, struct smt_mpimsg_facts *f)
{
	struct known k;

	load(&k, name, 0);
	smt_mpimsg_parse(&k.msgs, f);
	unload(&k);
}

static void test_mpimsg(void **state)
{
	struct smt_mpimsg_facts f;

	(void)state;
	smt_mpimsg_parse(NULL, &f);
	assert_int_equal(f.kind, SMT_MPIMSG_NONE);
	assert_int_equal(f.rank, -1);
	assert_int_equal(f.code, -1);
	parse_case("ok", &f);
	assert_int_equal(f.kind, SMT_MPIMSG_NONE);
	assert_string_equal(f.launch, "");
	assert_int_equal(f.daemon_lost, 0);
	parse_case("exit3", &f);
	assert_int_equal(f.kind, SMT_MPIMSG_EXIT_CODE);
	assert_int_equal(f.rank, 1);
	assert_int_equal(f.code, 3);
	parse_case("segv", &f);
	assert_int_equal(f.kind, SMT_MPIMSG_SIGNAL);
	assert_int_equal(f.rank, 1);
	assert_int_equal(f.signo, 11);
	assert_string_equal(f.node, "vm");
	parse_case("sigkill", &f);
	assert_int_equal(f.kind, SMT_MPIMSG_SIGNAL);
	assert_int_equal(f.signo, 9);
	parse_case("abort", &f);
	assert_int_equal(f.kind, SMT_MPIMSG_ABORT);
	assert_int_equal(f.rank, 1);
	assert_int_equal(f.code, 7);
	parse_case("improper", &f);
	assert_int_equal(f.kind, SMT_MPIMSG_IMPROPER);
	assert_int_equal(f.rank, 1);
	assert_string_equal(f.node, "vm");
	parse_case("missing", &f);
	assert_int_equal(f.kind, SMT_MPIMSG_EXIT_CODE);
	assert_int_equal(f.code, 127);
	parse_case("nolauncher", &f);
	assert_int_equal(f.kind, SMT_MPIMSG_EXEC);
	assert_int_equal(f.rank, 0);
	assert_string_equal(f.exe, "/opt/smtd/bin/smtctl");
	assert_string_equal(f.node, "vm");
	parse_case("noslots", &f);
	assert_int_equal(f.kind, SMT_MPIMSG_NONE);
	assert_string_equal(f.launch, "There are not enough slots available in the system to satisfy "
			    "the 5 slots that were requested by the application");
	parse_case("daemonlost", &f);
	assert_int_equal(f.daemon_lost, 1);
	assert_string_equal(f.lost_host, "algo-2");

	assert_true(smt_mpimsg_noise("----------------------------------------", 40));
	assert_true(smt_mpimsg_noise(" Data for JOB [2434,1] offset 0 Total slots allocated 2", 55));
	assert_true(smt_mpimsg_noise("0: Host vm Exe ./a Pid 1", 24));
	assert_false(smt_mpimsg_noise("Primary job  terminated normally, but 1 process returned", 56));
	assert_false(smt_mpimsg_noise("-- a line", 9));
}

/* ---- smt_report_probe_program ---- */

static void test_probe_program(void **state)
{
	char path[4200];

	(void)state;
	assert_int_equal(smt_report_probe_program("./noexec.sh", workdir, NULL), -EACCES);
	assert_int_equal(smt_report_probe_program("./run.sh", workdir, NULL), 0);
	assert_int_equal(smt_report_probe_program("./missing", workdir, NULL), -ENOENT);
	assert_int_equal(smt_report_probe_program("sub", workdir, NULL), -ENOENT);
	assert_int_equal(smt_report_probe_program("./sub", workdir, NULL), -EACCES);
	assert_int_equal(smt_report_probe_program("run.sh", NULL, workdir), 0);
	assert_int_equal(smt_report_probe_program("noexec.sh", NULL, workdir), -EACCES);
	snprintf(path, sizeof(path), "/nonexistent:%s", workdir);
	assert_int_equal(smt_report_probe_program("run.sh", NULL, path), 0);
	assert_int_equal(smt_report_probe_program("nothing-here", NULL, path), -ENOENT);
	assert_int_equal(smt_report_probe_program("sh", NULL, "/bin:/usr/bin"), 0);
	assert_int_equal(smt_report_probe_program("", NULL, NULL), -ENOENT);
}

static int setup(void **state)
{
	char file[256];
	int fd;

	(void)state;
	if (!mkdtemp(workdir))
		return -1;
	snprintf(file, sizeof(file), "%s/noexec.sh", workdir);
	fd = open(file, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	close(fd);
	snprintf(file, sizeof(file), "%s/run.sh", workdir);
	fd = open(file, O_CREAT | O_WRONLY | O_CLOEXEC, 0755);
	close(fd);
	snprintf(file, sizeof(file), "%s/sub", workdir);
	return mkdir(file, 0755);
}

static int teardown(void **state)
{
	char file[256];

	(void)state;
	snprintf(file, sizeof(file), "%s/noexec.sh", workdir);
	unlink(file);
	snprintf(file, sizeof(file), "%s/run.sh", workdir);
	unlink(file);
	snprintf(file, sizeof(file), "%s/sub", workdir);
	rmdir(file);
	return rmdir(workdir);
}

/* A worker words the failure itself only when the leader's first line
 * names one of its ranks: whole words, the first line only. */
static void test_names(void **state)
{
	const char *f = "RankFailed: rank 4 on algo-3 exited with code 1: boom\n"
			"rank 3 on algo-2 was also there\n";

	(void)state;
	assert_true(smt_report_names(f, 4, "algo-3"));
	assert_false(smt_report_names(f, 3, "algo-2"));      /* only in line 2 */
	assert_false(smt_report_names(f, 4, "algo-"));
	assert_false(smt_report_names("RankFailed: rank 14 on algo-3 exited", 4, "algo-3"));
	assert_false(smt_report_names("RankFailed: rank 4 on algo-33 exited", 4, "algo-3"));
	assert_true(smt_report_names("RankKilled: rank 0 on algo-1: SIGKILL", 0, "algo-1"));
	assert_true(smt_report_names("Stalled: rank 3 on algo-2, in time.sleep", 3, "algo-2"));
	assert_false(smt_report_names("LostHost: worker algo-3 was lost", 4, "algo-3"));
	assert_false(smt_report_names(NULL, 4, "algo-3"));
	assert_false(smt_report_names(f, 4, ""));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exit_code),
		cmocka_unit_test(test_signals),
		cmocka_unit_test(test_mpi_abort),
		cmocka_unit_test(test_python_valueerror),
		cmocka_unit_test(test_program),
		cmocka_unit_test(test_launch_failures),
		cmocka_unit_test(test_daemon_lost),
		cmocka_unit_test(test_mpirun_killed_and_stopped),
		cmocka_unit_test(test_job_failed),
		cmocka_unit_test(test_remote_rank),
		cmocka_unit_test(test_standalone),
		cmocka_unit_test(test_cxx_terminate),
		cmocka_unit_test(test_truncation),
		cmocka_unit_test(test_failure_text),
		cmocka_unit_test(test_kinds),
		cmocka_unit_test(test_error_score),
		cmocka_unit_test(test_errline_pick),
		cmocka_unit_test(test_mpimsg),
		cmocka_unit_test(test_probe_program),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_crash_frame),
		cmocka_unit_test(test_crash_shm),
		cmocka_unit_test(test_crash_memory),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
