/*
 * test_report.c - failure summaries from real mpirun captures (Open MPI
 * 4.1.4, tests/data/mpirun-*) and from synthetic standalone runs.
 */
#define _GNU_SOURCE
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
#include <unistd.h>

#include "output.h"
#include "report.h"
#include "testdata.h"

static char workdir[] = "/tmp/test_report.XXXXXX";

static struct smt_output *new_output(const char *host)
{
	struct smt_output_config cfg = {
		.out_fd = open("/dev/null", O_WRONLY | O_CLOEXEC), .msg_fd = -1,
		.format = SMT_OUTPUT_TEXT, .current_host = host,
	};
	struct smt_output *o;

	assert_true(cfg.out_fd >= 0);
	assert_int_equal(smt_output_new(&cfg, &o), 0);
	/* The descriptor stays open until exit: the output only writes to it. */
	return o;
}

/* Feed the capture CASE (its .stderr first when STDERR_FIRST, as ssh's
 * message comes before mpirun's help text). */
static struct smt_output *feed_capture(const char *name, int stderr_first)
{
	struct smt_output *o = new_output("vm");
	char file[256];
	size_t n;
	char *xml, *err;

	snprintf(file, sizeof(file), "mpirun-%s.xml", name);
	xml = smt_test_data(file, &n, 0);
	snprintf(file, sizeof(file), "mpirun-%s.stderr", name);
	err = smt_test_data(file, &n, 0);
	if (err && stderr_first)
		assert_int_equal(smt_output_feed(o, SMT_SRC_MPIRUN_STDERR, err, strlen(err)), 0);
	if (xml)
		assert_int_equal(smt_output_feed(o, SMT_SRC_MPIRUN_STDOUT, xml, strlen(xml)), 0);
	if (err && !stderr_first)
		assert_int_equal(smt_output_feed(o, SMT_SRC_MPIRUN_STDERR, err, strlen(err)), 0);
	assert_int_equal(smt_output_eof(o, SMT_SRC_MPIRUN_STDOUT), 0);
	assert_int_equal(smt_output_eof(o, SMT_SRC_MPIRUN_STDERR), 0);
	free(xml);
	free(err);
	return o;
}

static void check_utf8_and_size(const char *text, size_t len)
{
	const char *nl = memchr(text, '\n', len);

	assert_non_null(nl);
	assert_true(nl - text <= SMT_REPORT_SUMMARY_MAX);
	assert_true(len <= SMT_REPORT_SHOWN);
	assert_int_equal(strlen(text), len);
	assert_null(strstr(text, "--allow-run-as-root"));
}

/* The summary line of CASE with the supervisor's view IN. */
static void expect_capture(const char *name, struct smt_report_input in, int stderr_first,
			   enum smt_failure_kind kind, const char *summary)
{
	struct smt_output *o = feed_capture(name, stderr_first);
	struct smt_report r;
	char *text;
	size_t len;

	if (!in.current_host)
		in.current_host = "vm";
	in.mpi = 1;
	in.workdir = workdir;
	smt_report_analyse(o, &in, &r);
	assert_string_equal(r.summary, summary);
	assert_int_equal(r.kind, kind);
	assert_int_equal(smt_report_build(o, &in, &r, &text, &len), 0);
	check_utf8_and_size(text, len);
	assert_true(!strncmp(text, summary, strlen(summary)) && text[strlen(summary)] == '\n');
	free(text);
	smt_output_free(o);
}

static void test_exit_code(void **state)
{
	(void)state;
	expect_capture("exit3", (struct smt_report_input){ .exit_code = 3 }, 0,
		       SMT_FAIL_RANK_FAILED, "RankFailed: rank 1 on vm exited with code 3: rank 1 giving up");
}

static void test_segv(void **state)
{
	(void)state;
	expect_capture("segv", (struct smt_report_input){ .exit_code = 139 }, 0,
		       SMT_FAIL_RANK_KILLED,
		       "RankKilled: rank 1 on vm was killed by SIGSEGV: Signal: Segmentation fault (11)");
}

static void test_sigkill(void **state)
{
	(void)state;
	expect_capture("sigkill", (struct smt_report_input){ .exit_code = 137 }, 0,
		       SMT_FAIL_RANK_KILLED, "RankKilled: rank 1 on vm was killed by SIGKILL");
}

static void test_oom(void **state)
{
	(void)state;
	expect_capture("sigkill", (struct smt_report_input){ .exit_code = 137, .oom_kill = 1 }, 0,
		       SMT_FAIL_OOM,
		       "OutOfMemory: rank 1 on vm was killed by SIGKILL (the kernel's OOM killer)");
	expect_capture("ok", (struct smt_report_input){ .exit_code = 0, .oom_kill = 1,
						       .current_host = "algo-3" }, 0,
		       SMT_FAIL_OOM,
		       "OutOfMemory: the kernel's OOM killer killed a process of the job on algo-3");
}

static void test_mpi_abort(void **state)
{
	(void)state;
	expect_capture("abort", (struct smt_report_input){ .exit_code = 7 }, 0,
		       SMT_FAIL_RANK_FAILED,
		       "RankFailed: rank 1 on vm exited with code 7 (MPI_Abort): calling abort");
}

static void test_improper(void **state)
{
	(void)state;
	expect_capture("improper", (struct smt_report_input){ .exit_code = 1 }, 0,
		       SMT_FAIL_RANK_FAILED, "RankFailed: rank 1 on vm exited without calling MPI_Finalize");
}

static void test_python_valueerror(void **state)
{
	struct smt_output *o = feed_capture("python-valueerror", 0);
	struct smt_report_input in = { .current_host = "vm", .mpi = 1, .exit_code = 1 };
	char *text;
	size_t len;
	static const char summary[] =
		"RankFailed: rank 1 on vm exited with code 1 (MPI_Abort): ValueError: shapes do not match\n";

	(void)state;
	assert_int_equal(smt_report_build(o, &in, NULL, &text, &len), 0);
	check_utf8_and_size(text, len);
	assert_true(!strncmp(text, summary, strlen(summary)));
	/* Then the traceback's end, whole lines, the error last. */
	assert_non_null(strstr(text, "\n    raise ValueError(\"shapes do not match\")\nValueError: shapes do not match\n"));
	assert_non_null(strstr(text, "\n  File \"val.py\", line 8, in <module>\n"));
	assert_string_equal(text + len - 32, "ValueError: shapes do not match\n");
	free(text);
	smt_output_free(o);
}

static void test_missing_program(void **state)
{
	(void)state;
	expect_capture("missing", (struct smt_report_input){ .exit_code = 132 }, 0,
		       SMT_FAIL_NOT_FOUND,
		       "ProgramNotFound: ./missing-prog on vm: No such file or directory (exit 127)");
	/* On another node we cannot tell which it is. */
	expect_capture("missing", (struct smt_report_input){ .exit_code = 132, .current_host = "algo-1" },
		       0, SMT_FAIL_LAUNCH,
		       "LaunchFailed: mpirun could not access or execute ./missing-prog on vm");
}

static void test_noexec_program(void **state)
{
	(void)state;
	expect_capture("noexec", (struct smt_report_input){ .exit_code = 132 }, 0,
		       SMT_FAIL_NOT_EXECUTABLE,
		       "ProgramNotExecutable: ./noexec.sh on vm: Permission denied (exit 126)");
}

static void test_launch_failures(void **state)
{
	(void)state;
	expect_capture("noslots", (struct smt_report_input){ .exit_code = 1 }, 0, SMT_FAIL_LAUNCH,
		       "LaunchFailed: mpirun could not start the job: There are not enough slots "
		       "available in the system to satisfy the 5 slots that were requested by the application");
	expect_capture("badhost", (struct smt_report_input){ .exit_code = 255 }, 1, SMT_FAIL_LAUNCH,
		       "LaunchFailed: mpirun could not start the job: ssh: Could not resolve hostname "
		       "nosuchhost: Name or service not known");
	expect_capture("badhost", (struct smt_report_input){ .exit_code = 255 }, 0, SMT_FAIL_LAUNCH,
		       "LaunchFailed: mpirun could not start the job: ORTE was unable to reliably start "
		       "one or more daemons.");
	expect_capture("badoption", (struct smt_report_input){ .exit_code = 1 }, 0, SMT_FAIL_LAUNCH,
		       "LaunchFailed: mpirun could not start the job: mpirun: Error: unknown option \"--bogus-opt\"");
}

static void test_launch_failure_text(void **state)
{
	struct smt_output *o = feed_capture("badhost", 1);
	struct smt_report_input in = { .current_host = "vm", .mpi = 1, .exit_code = 255 };
	char *text;
	size_t len;

	(void)state;
	assert_int_equal(smt_report_build(o, &in, NULL, &text, &len), 0);
	check_utf8_and_size(text, len);
	/* mpirun's message follows, without its rules of dashes. */
	assert_null(strstr(text, "-----"));
	assert_non_null(strstr(text, "\n  them. Please check network connectivity (including firewalls\n"));
	free(text);
	smt_output_free(o);
}

static void test_mpirun_killed(void **state)
{
	(void)state;
	expect_capture("ok", (struct smt_report_input){ .exit_code = -1, .term_signal = SIGKILL }, 0,
		       SMT_FAIL_MPIRUN_KILLED, "MpirunKilled: mpirun was killed by SIGKILL");
}

static void test_stopped(void **state)
{
	(void)state;
	expect_capture("sigkill", (struct smt_report_input){ .exit_code = -1, .term_signal = SIGTERM,
							    .stop_signal = SIGTERM }, 0,
		       SMT_FAIL_STOPPED, "Stopped: received SIGTERM");
}

static void test_generic(void **state)
{
	struct smt_output *o = new_output("h");
	struct smt_report_input in = { .current_host = "h", .mpi = 1, .exit_code = 5 };
	struct smt_report r;
	static const char xml[] =
		"<stderr rank=\"2\">some error happened&#010;</stderr>"
		"<stderr>something mpirun said&#010;</stderr>";

	(void)state;
	smt_report_analyse(o, &in, &r);
	assert_string_equal(r.summary, "JobFailed: mpirun exited with code 5");
	assert_int_equal(smt_output_feed(o, SMT_SRC_MPIRUN_STDOUT, xml, sizeof(xml) - 1), 0);
	smt_report_analyse(o, &in, &r);
	assert_string_equal(r.summary, "JobFailed: mpirun exited with code 5; rank 2: some error happened");
	assert_int_equal(r.rank, 2);
	smt_output_free(o);
}

/* A standalone program: rank 0 on the current host. */
static void test_standalone(void **state)
{
	struct smt_output *o = new_output("algo-1");
	struct smt_report_input in = { .current_host = "algo-1", .exit_code = 2, .program = "./train" };
	struct smt_report r;
	static const char err[] =
		"Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n"
		"    d['x']\nKeyError: 'x'\n";
	char *text;
	size_t len;

	(void)state;
	assert_int_equal(smt_output_feed(o, SMT_SRC_CHILD_STDERR, err, sizeof(err) - 1), 0);
	smt_report_analyse(o, &in, &r);
	assert_string_equal(r.summary, "RankFailed: rank 0 on algo-1 exited with code 2: KeyError: 'x'");
	assert_int_equal(smt_report_build(o, &in, &r, &text, &len), 0);
	assert_int_equal(len, strlen(r.summary) + 1 + sizeof(err) - 1);
	assert_string_equal(text + strlen(r.summary) + 1, err);
	free(text);

	in.exit_code = -1;
	in.term_signal = SIGSEGV;
	smt_report_analyse(o, &in, &r);
	assert_string_equal(r.summary, "RankKilled: rank 0 on algo-1 was killed by SIGSEGV: KeyError: 'x'");

	in.term_signal = 0;
	in.exit_code = 127;
	in.exec_errno = ENOENT;
	smt_report_analyse(o, &in, &r);
	assert_string_equal(r.summary, "ProgramNotFound: ./train: No such file or directory (exit 127)");
	assert_int_equal(smt_report_build(o, &in, &r, &text, &len), 0);
	assert_string_equal(text, "ProgramNotFound: ./train: No such file or directory (exit 127)\n");
	free(text);
	in.exec_errno = EACCES;
	smt_report_analyse(o, &in, &r);
	assert_string_equal(r.summary, "ProgramNotExecutable: ./train: Permission denied (exit 126)");
	assert_int_equal(r.kind, SMT_FAIL_NOT_EXECUTABLE);
	smt_output_free(o);
}

static void test_cxx_terminate(void **state)
{
	struct smt_output *o = new_output("h");
	struct smt_report_input in = { .current_host = "h", .exit_code = -1, .term_signal = SIGABRT };
	struct smt_report r;
	static const char err[] =
		"loading data\nterminate called after throwing an instance of 'std::runtime_error'\n"
		"  what():  boom\n";

	(void)state;
	assert_int_equal(smt_output_feed(o, SMT_SRC_CHILD_STDERR, err, sizeof(err) - 1), 0);
	smt_report_analyse(o, &in, &r);
	assert_string_equal(r.summary, "RankKilled: rank 0 on h was killed by SIGABRT: terminate called "
			    "after throwing an instance of 'std::runtime_error'");
	smt_output_free(o);
}

/* Over-long, multi-byte, binary error lines: the summary stays one line,
 * within its limit, cut between characters. */
static void test_truncation(void **state)
{
	struct smt_output *o = new_output("h");
	struct smt_report_input in = { .current_host = "h", .exit_code = 1 };
	struct smt_report r;
	char *line = malloc(5000), *text;
	size_t len, n = 0;

	(void)state;
	memcpy(line, "RuntimeError: ", 14);
	n = 14;
	while (n + 3 < 4990) {
		memcpy(line + n, "\xc3\xa9\x01", 3);       /* é then a control byte */
		n += 3;
	}
	line[n++] = '\xff';
	line[n++] = '\n';
	assert_int_equal(smt_output_feed(o, SMT_SRC_CHILD_STDERR, line, n), 0);
	smt_report_analyse(o, &in, &r);
	assert_true(strlen(r.summary) <= SMT_REPORT_SUMMARY_MAX);
	assert_null(strchr(r.summary, '\n'));
	assert_null(strchr(r.summary, '\x01'));
	assert_true(!strncmp(r.summary, "RankFailed: rank 0 on h exited with code 1: RuntimeError: \xc3\xa9 \xc3\xa9 ", 64));
	/* Never half a character at the end. */
	assert_true((unsigned char)r.summary[strlen(r.summary) - 1] != 0xc3);
	assert_int_equal(smt_report_build(o, &in, &r, &text, &len), 0);
	assert_true(len <= SMT_REPORT_SHOWN);
	assert_true((unsigned char)text[len - 2] != 0xc3);
	free(text);
	free(line);
	smt_output_free(o);
}

static void test_error_score(void **state)
{
	(void)state;
	assert_int_equal(smt_report_error_score("ValueError: shapes do not match", 31), 2);
	assert_int_equal(smt_report_error_score("torch.cuda.OutOfMemoryError: CUDA out of memory.", 48), 2);
	assert_int_equal(smt_report_error_score("KeyboardInterrupt", 17), 2);
	assert_int_equal(smt_report_error_score("Segmentation fault (core dumped)", 32), 2);
	assert_int_equal(smt_report_error_score("NCCL error in: x.cpp:1, unhandled", 33), 2);
	assert_int_equal(smt_report_error_score("Traceback (most recent call last):", 34), 0);
	assert_int_equal(smt_report_error_score("    raise ValueError(x)", 23), 1);
	assert_int_equal(smt_report_error_score("Epoch 1: loss 0.5", 17), 0);
	assert_int_equal(smt_report_error_score("Some words: ValueError", 22), 1);
	assert_int_equal(smt_report_error_score("error: bad", 10), 1);
	/* smdistributed's exception classes, also inside a line. */
	assert_int_equal(smt_report_error_score("[1,0]: smdistributed raised SMDDPTimeoutError: x", 48), 2);
	assert_int_equal(smt_report_error_score("rank 3: SMPValidationError: bad partitions", 42), 2);
	assert_int_equal(smt_report_error_score("SMPSegFault", 11), 2);
}

static void test_kind_names(void **state)
{
	(void)state;
	assert_null(smt_failure_kind_name(SMT_FAIL_NONE));
	assert_string_equal(smt_failure_kind_name(SMT_FAIL_OOM), "OutOfMemory");
	assert_string_equal(smt_failure_kind_name(SMT_FAIL_JOB_FAILED), "JobFailed");
	assert_null(smt_failure_kind_name((enum smt_failure_kind)100));
}

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exit_code),
		cmocka_unit_test(test_segv),
		cmocka_unit_test(test_sigkill),
		cmocka_unit_test(test_oom),
		cmocka_unit_test(test_mpi_abort),
		cmocka_unit_test(test_improper),
		cmocka_unit_test(test_python_valueerror),
		cmocka_unit_test(test_missing_program),
		cmocka_unit_test(test_noexec_program),
		cmocka_unit_test(test_launch_failures),
		cmocka_unit_test(test_launch_failure_text),
		cmocka_unit_test(test_mpirun_killed),
		cmocka_unit_test(test_stopped),
		cmocka_unit_test(test_generic),
		cmocka_unit_test(test_standalone),
		cmocka_unit_test(test_cxx_terminate),
		cmocka_unit_test(test_truncation),
		cmocka_unit_test(test_error_score),
		cmocka_unit_test(test_kind_names),
		cmocka_unit_test(test_probe_program),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
