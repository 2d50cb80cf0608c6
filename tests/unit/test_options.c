/* test_options.c - command line, SMTD_* variables and their precedence. */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "options.h"

static int parse(struct smt_options *o, char **argv, char **envp, char *err)
{
	int argc = 0;

	while (argv[argc])
		argc++;
	return smt_options_parse(o, argc, argv, envp, err, 256);
}

static void test_defaults_unset(void **state)
{
	struct smt_options o;
	char err[256] = "";
	char *argv[] = { "smtd", NULL }, *envp[] = { NULL };

	(void)state;
	assert_int_equal(parse(&o, argv, envp, err), 0);
	assert_null(o.root);
	assert_int_equal(o.mpi_enabled, -1);
	assert_int_equal(o.processes_per_host, -1);
	assert_true(o.grace < 0);
	assert_null(o.command);
	smt_options_free(&o);
}

static void test_precedence(void **state)
{
	struct smt_options o;
	char err[256] = "";
	char *argv[] = { "smtd", "--root", "/cli", "--grace", "2.5", "--no-mpi", "--", "cmd",
			 "--not-an-option", NULL };
	char *envp[] = { "SMTD_ROOT=/env", "SMTD_GRACE=9", "SMTD_MPI_ENABLED=true",
			 "SMTD_PROCESSES_PER_HOST=3", "SAGEMAKER_PROGRAM=t.py",
			 "SMTD_SSHD=never", "SMTD_LOG_FORMAT=json", NULL };

	(void)state;
	assert_int_equal(parse(&o, argv, envp, err), 0);
	assert_string_equal(o.root, "/cli");
	assert_true(o.grace == 2.5);
	assert_int_equal(o.mpi_enabled, 0);
	assert_int_equal(o.processes_per_host, 3);
	assert_string_equal(o.program, "t.py");
	assert_int_equal(o.sshd_mode, SMT_SSHD_NEVER);
	assert_int_equal(o.log_json, 1);
	assert_int_equal(o.command_argc, 2);
	assert_string_equal(o.command[0], "cmd");
	assert_string_equal(o.command[1], "--not-an-option");
	assert_null(o.command[2]);
	smt_options_free(&o);
}

static void bad(char **argv, char **envp, const char *msg)
{
	struct smt_options o;
	char err[256] = "";

	assert_int_equal(parse(&o, argv, envp, err), -EINVAL);
	assert_string_equal(err, msg);
	/* One line, always. */
	assert_null(strchr(err, '\n'));
	assert_null(strchr(err, '\r'));
}

static void good(char **argv, char **envp)
{
	struct smt_options o;
	char err[256] = "";

	if (parse(&o, argv, envp, err) != 0)
		fail_msg("refused: %s", err);
	smt_options_free(&o);
}

static void test_errors(void **state)
{
	char *none[] = { NULL };

	(void)state;
	bad((char *[]){ "smtd", "--bogus", NULL }, none, "unknown option '--bogus'");
	bad((char *[]){ "smtd", "-z", NULL }, none, "unknown option '-z'");
	bad((char *[]){ "smtd", "--root", NULL }, none, "option '--root' needs a value");
	bad((char *[]){ "smtd", "--json=1", NULL }, none, "option '--json' takes no value");
	bad((char *[]){ "smtd", "--grace", "0", NULL }, none,
	    "--grace: '0' is not a number of seconds from 0.1 to 1000000000 "
	    "(digits and at most one decimal point, like 30 or 2.5)");
	bad((char *[]){ "smtd", "--wait-timeout", "inf", NULL }, none,
	    "--wait-timeout: 'inf' is not a number of seconds from 1 to 1000000000 "
	    "(digits and at most one decimal point, like 30 or 2.5)");
	bad((char *[]){ "smtd", "--processes-per-host", "1e9", NULL }, none,
	    "--processes-per-host: '1e9' is not a positive integer (1 to 1000000)");
	bad((char *[]){ "smtd", "--sshd", "sometimes", NULL }, none,
	    "--sshd: 'sometimes' is not one of auto, always, never");
	bad((char *[]){ "smtd", "--log-format", "xml", NULL }, none,
	    "--log-format: 'xml' is not one of text, json");
	bad((char *[]){ "smtd", "--channels", "udp", NULL }, none,
	    "--channels: 'udp' is not one of tcp, ssh");
	bad((char *[]){ "smtd", NULL }, (char *[]){ "SMTD_CHANNELS=TCP", NULL },
	    "SMTD_CHANNELS: 'TCP' is not one of tcp, ssh");
	bad((char *[]){ "smtd", "--channel-requests", "0", NULL }, none,
	    "--channel-requests: '0' is not a positive integer (1 to 1000000)");
	bad((char *[]){ "smtd", NULL }, (char *[]){ "SMTD_CHANNEL_REQUESTS=64k", NULL },
	    "SMTD_CHANNEL_REQUESTS: '64k' is not a positive integer (1 to 1000000)");
	bad((char *[]){ "smtd", "cmd", NULL }, none,
	    "unexpected argument 'cmd'; put the command after '--'");
	bad((char *[]){ "smtd", "--json", NULL }, none, "--json only goes with --dry-run");
	bad((char *[]){ "smtd", NULL }, (char *[]){ "SMTD_NUM_PROCESSES=-1", NULL },
	    "SMTD_NUM_PROCESSES: '-1' is not a positive integer (1 to 1000000)");
}

/* --channels (SMTD_CHANNELS): tcp unless told; the command line wins. */
static void test_channels(void **state)
{
	struct smt_options o;
	char err[256] = "";

	(void)state;
	assert_int_equal(parse(&o, (char *[]){ "smtd", NULL }, (char *[]){ NULL }, err), 0);
	assert_int_equal(o.channels, SMT_CHANNELS_TCP);
	assert_int_equal(parse(&o, (char *[]){ "smtd", NULL }, (char *[]){ "SMTD_CHANNELS=ssh", NULL },
			       err), 0);
	assert_int_equal(o.channels, SMT_CHANNELS_SSH);
	assert_int_equal(parse(&o, (char *[]){ "smtd", "--channels", "tcp", NULL },
			       (char *[]){ "SMTD_CHANNELS=ssh", NULL }, err), 0);
	assert_int_equal(o.channels, SMT_CHANNELS_TCP);
}

/* --launch (SMTD_LAUNCH): a kind decides the launch; "auto" is the same as none. */
static void test_launch(void **state)
{
	struct smt_options o;
	char err[256] = "";

	(void)state;
	assert_int_equal(parse(&o, (char *[]){ "smtd", NULL }, (char *[]){ NULL }, err), 0);
	assert_null(o.launch);
	assert_int_equal(parse(&o, (char *[]){ "smtd", "--launch", "torchrun", NULL },
			       (char *[]){ "SMTD_LAUNCH=mpi", NULL }, err), 0);
	assert_string_equal(o.launch, "torchrun");
	assert_int_equal(parse(&o, (char *[]){ "smtd", NULL }, (char *[]){ "SMTD_LAUNCH=smddp", NULL }, err), 0);
	assert_string_equal(o.launch, "smddp");
	assert_int_equal(parse(&o, (char *[]){ "smtd", "--launch", "auto", NULL },
			       (char *[]){ "SMTD_LAUNCH=standalone", NULL }, err), 0);
	assert_null(o.launch);
	bad((char *[]){ "smtd", "--launch", "xla", NULL }, (char *[]){ NULL },
	    "--launch: 'xla' is not one of auto, standalone, mpi, smddp, torchrun");
	bad((char *[]){ "smtd", NULL }, (char *[]){ "SMTD_LAUNCH=MPI", NULL },
	    "SMTD_LAUNCH: 'MPI' is not one of auto, standalone, mpi, smddp, torchrun");
}

/* Numbers are digits (and one decimal point for seconds)
 * from the command line and the environment alike; nothing else is
 * guessed at. */
static void test_strict_numbers(void **state)
{
	static const char *const counts[] = {
		" 2", "+2", "2 ", "02", "1e9", "0x10", "1000001", "\n2", "2\n", "", "-0", "1.0",
	};
	static const char *const seconds[] = {
		"1e-9", " 2", "+2", "2 ", "inf", "nan", "0x10", "2.", ".5", "1,5", "1e3", "0.5",
		"1..5", "-1", "10000000000", "1000000001", "\t3",
	};
	char *none[] = { NULL };
	char msg[512], env[64], quoted[SMT_OPTIONS_QUOTE_SIZE];

	(void)state;
	for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
		smt_options_quote(counts[i], quoted, sizeof quoted);
		snprintf(msg, sizeof msg, "--processes-per-host: %s is not a positive integer "
			 "(1 to 1000000)", quoted);
		if (counts[i][0])
			bad((char *[]){ "smtd", "--processes-per-host", (char *)counts[i], NULL },
			    none, msg);
		snprintf(env, sizeof env, "SMTD_NUM_PROCESSES=%s", counts[i]);
		snprintf(msg, sizeof msg, "SMTD_NUM_PROCESSES: %s is not a positive integer "
			 "(1 to 1000000)", quoted);
		if (counts[i][0])
			bad((char *[]){ "smtd", NULL }, (char *[]){ env, NULL }, msg);
	}
	for (size_t i = 0; i < sizeof seconds / sizeof seconds[0]; i++) {
		smt_options_quote(seconds[i], quoted, sizeof quoted);
		snprintf(msg, sizeof msg, "--wait-timeout: %s is not a number of seconds from 1 "
			 "to 1000000000 (digits and at most one decimal point, like 30 or 2.5)",
			 quoted);
		bad((char *[]){ "smtd", "--wait-timeout", (char *)seconds[i], NULL }, none, msg);
		snprintf(env, sizeof env, "SMTD_PEER_TIMEOUT=%s", seconds[i]);
		snprintf(msg, sizeof msg, "SMTD_PEER_TIMEOUT: %s is not a number of seconds from 1 "
			 "to 1000000000 (digits and at most one decimal point, like 30 or 2.5)",
			 quoted);
		bad((char *[]){ "smtd", NULL }, (char *[]){ env, NULL }, msg);
	}
	bad((char *[]){ "smtd", "--grace", "0.05", NULL }, none,
	    "--grace: '0.05' is not a number of seconds from 0.1 to 1000000000 "
	    "(digits and at most one decimal point, like 30 or 2.5)");
	/* The minimums and ordinary values are taken. */
	good((char *[]){ "smtd", "--wait-timeout", "1", "--launch-timeout", "1.5",
			 "--result-timeout", "60", "--peer-timeout", "3", "--grace", "0.1",
			 "--processes-per-host", "8", "--num-processes", "1000000", NULL }, none);
	good((char *[]){ "smtd", NULL }, (char *[]){ "SMTD_GRACE=0.5", "SMTD_WAIT_TIMEOUT=3600",
						    "SMTD_PROCESSES_PER_HOST=2", NULL });
	struct smt_options o;
	char err[256];
	assert_int_equal(parse(&o, (char *[]){ "smtd", "--grace", "2.25", NULL }, none, err), 0);
	assert_true(o.grace == 2.25);
	smt_options_free(&o);
}

/* Control characters in a value never reach a message
 * raw, and paths and names may not hold any. */
static void test_one_line_messages(void **state)
{
	char *none[] = { NULL };

	(void)state;
	bad((char *[]){ "smtd", NULL }, (char *[]){ "SMTD_ROOT=/opt/ml\nERROR: fake", NULL },
	    "SMTD_ROOT: '/opt/ml\\nERROR: fake' contains a control character; remove it");
	bad((char *[]){ "smtd", "--socket", "/run/s\r\x1b[2K", NULL }, none,
	    "--socket: '/run/s\\r\\x1b[2K' contains a control character; remove it");
	bad((char *[]){ "smtd", NULL }, (char *[]){ "SMTD_SSHD=never\n", NULL },
	    "SMTD_SSHD: 'never\\n' is not one of auto, always, never");
	bad((char *[]){ "smtd", NULL }, (char *[]){ "SMTD_LOG_FORMAT=\ttext", NULL },
	    "SMTD_LOG_FORMAT: '\\ttext' is not one of text, json");
	bad((char *[]){ "smtd", NULL }, (char *[]){ "SMTD_DEBUG=yes\nplease", NULL },
	    "SMTD_DEBUG: 'yes\\nplease' is not one of true, false, 1, 0 (or yes, no, on, off)");
	bad((char *[]){ "smtd", NULL }, (char *[]){ "SMTD_JOB_CGROUP=au\nto", NULL },
	    "SMTD_JOB_CGROUP: 'au\\nto' is not one of auto, never");
	bad((char *[]){ "smtd", NULL }, (char *[]){ "SMTD_LAUNCH=mpi\x1b[2J", NULL },
	    "SMTD_LAUNCH: 'mpi\\x1b[2J' is not one of auto, standalone, mpi, smddp, torchrun");
	bad((char *[]){ "smtd", "--bogus\n", NULL }, none, "unknown option '--bogus\\n'");
	bad((char *[]){ "smtd", "cmd\nx", NULL }, none,
	    "unexpected argument 'cmd\\nx'; put the command after '--'");
	/* Long values are cut. */
	char long_env[200] = "SMTD_SSHD=";
	memset(long_env + 10, 'a', 150);
	long_env[160] = '\0';
	char msg[256];
	snprintf(msg, sizeof msg, "SMTD_SSHD: '%.64s...' is not one of auto, always, never",
		 long_env + 10);
	bad((char *[]){ "smtd", NULL }, (char *[]){ long_env, NULL }, msg);
}

/* --progress-pattern is checked when it is read, so --dry-run
 * and the start say the same, before anything runs. */
static void test_progress_pattern(void **state)
{
	char *none[] = { NULL };

	(void)state;
	bad((char *[]){ "smtd", "--progress-pattern", "a(", NULL }, none,
	    "--progress-pattern: 'a(' is not a POSIX extended regular expression: Unmatched ( or \\(");
	bad((char *[]){ "smtd", NULL }, (char *[]){ "SMTD_PROGRESS_PATTERN=step\n(", NULL },
	    "SMTD_PROGRESS_PATTERN: 'step\\n(' contains a control character; remove it");
	good((char *[]){ "smtd", "--progress-pattern", "^(step|epoch) [0-9]+", NULL }, none);
	/* "0" switches a watchdog off (over sagemaker_stall_timeout); other
	 * values are seconds from 1. */
	struct smt_options o;
	char err[256];
	assert_int_equal(parse(&o, (char *[]){ "smtd", "--stall-timeout", "0", NULL },
			       (char *[]){ "SMTD_START_TIMEOUT=0", NULL }, err), 0);
	assert_true(o.stall_timeout == -1 && o.start_timeout == -1);
	smt_options_free(&o);
	assert_int_equal(parse(&o, (char *[]){ "smtd", "--stall-timeout", "600", NULL }, none, err), 0);
	assert_true(o.stall_timeout == 600 && o.start_timeout == 0);
	smt_options_free(&o);
	bad((char *[]){ "smtd", "--stall-timeout", "0.5", NULL }, none,
	    "--stall-timeout: '0.5' is not a number of seconds from 1 to 1000000000 "
	    "(digits and at most one decimal point, like 30 or 2.5)");
}

/* A bad --health-listen is reported as such. */
static void test_health_listen(void **state)
{
	static const char *const badv[] = {
		"localhost:8080", "1.2.3.4", "[::1]8080", ":99999", "1.2.3.4:", "8080", "[::1]",
		"1.2.3.4:80x",
	};
	char *none[] = { NULL };
	char msg[512], quoted[SMT_OPTIONS_QUOTE_SIZE];

	(void)state;
	for (size_t i = 0; i < sizeof badv / sizeof badv[0]; i++) {
		smt_options_quote(badv[i], quoted, sizeof quoted);
		snprintf(msg, sizeof msg, "--health-listen: %s is not ADDR:PORT with a numeric "
			 "address and a port from 0 to 65535 (127.0.0.1:8080, [::1]:8080, or :8080 "
			 "for every address)", quoted);
		bad((char *[]){ "smtd", "--health-listen", (char *)badv[i], NULL }, none, msg);
	}
	bad((char *[]){ "smtd", NULL }, (char *[]){ "SMTD_HEALTH_LISTEN=nope", NULL },
	    "SMTD_HEALTH_LISTEN: 'nope' is not ADDR:PORT with a numeric address and a port "
	    "from 0 to 65535 (127.0.0.1:8080, [::1]:8080, or :8080 for every address)");
	good((char *[]){ "smtd", "--health-listen", "127.0.0.1:8080", NULL }, none);
	good((char *[]){ "smtd", "--health-listen", ":0", NULL }, none);
	good((char *[]){ "smtd", "--health-listen", "[::1]:9000", NULL }, none);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults_unset),
		cmocka_unit_test(test_precedence),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_launch),
		cmocka_unit_test(test_channels),
		cmocka_unit_test(test_strict_numbers),
		cmocka_unit_test(test_one_line_messages),
		cmocka_unit_test(test_health_listen),
		cmocka_unit_test(test_progress_pattern),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
