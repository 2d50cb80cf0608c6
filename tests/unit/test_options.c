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
	    "--grace: '0' is not a number of seconds greater than 0");
	bad((char *[]){ "smtd", "--wait-timeout", "inf", NULL }, none,
	    "--wait-timeout: 'inf' is not a number of seconds greater than 0");
	bad((char *[]){ "smtd", "--processes-per-host", "1e9", NULL }, none,
	    "--processes-per-host: '1e9' is not a positive integer (1 to 1000000)");
	bad((char *[]){ "smtd", "--sshd", "sometimes", NULL }, none,
	    "--sshd: 'sometimes' is not one of auto, always, never");
	bad((char *[]){ "smtd", "--log-format", "xml", NULL }, none,
	    "--log-format: 'xml' is not one of text, json");
	bad((char *[]){ "smtd", "cmd", NULL }, none,
	    "unexpected argument 'cmd'; put the command after '--'");
	bad((char *[]){ "smtd", "--json", NULL }, none, "--json only goes with --dry-run");
	bad((char *[]){ "smtd", NULL }, (char *[]){ "SMTD_NUM_PROCESSES=-1", NULL },
	    "SMTD_NUM_PROCESSES: '-1' is not a positive integer (1 to 1000000)");
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults_unset),
		cmocka_unit_test(test_precedence),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_launch),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
