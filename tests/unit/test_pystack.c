/* test_pystack.c - faulthandler dumps picked out of real ranks' stderr
 * (tests/data/stacks/: the stderr of torch DDP under torchrun, mpi4py under
 * mpirun, a two-thread program), fed line by line as the framer does. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pystack.h"
#include "stackgroup.h"
#include "stackparse.h"
#include "testdata.h"

static char *data(const char *name)
{
	size_t len;

	return smt_test_data(name, &len, 1);
}

/* Feed TEXT a line at a time; returns how many lines were part of a dump. */
static int feed_all(struct smt_pystack *p, const char *text)
{
	int in = 0;

	for (const char *s = text; *s;) {
		const char *nl = strchr(s, '\n');
		size_t n = nl ? (size_t)(nl - s) : strlen(s);
		in += smt_pystack_feed(p, s, n);
		s += n + (nl != NULL);
	}
	return in;
}

static void test_threads(void **state)
{
	(void)state;
	char *text = data("stacks/threads-stderr.txt");
	struct smt_pystack *p;
	size_t len;

	assert_int_equal(smt_pystack_new(0, &p), 0);
	assert_null(smt_pystack_text(p, NULL));
	assert_int_equal(smt_pystack_feed(p, "ready", 5), 0);
	feed_all(p, text);
	assert_false(smt_pystack_complete(p));
	smt_pystack_end(p);
	assert_true(smt_pystack_complete(p));
	const char *d = smt_pystack_text(p, &len);
	assert_string_equal(d, "Fatal Python error: Aborted\n"
			    "\n"
			    "Thread 0x00007fd383b626c0 (most recent call first):\n"
			    "  File \"/tmp/st/sl.py\", line 3 in worker\n"
			    "  File \"/usr/lib/python3.11/threading.py\", line 975 in run\n"
			    "  File \"/usr/lib/python3.11/threading.py\", line 1038 in _bootstrap_inner\n"
			    "  File \"/usr/lib/python3.11/threading.py\", line 995 in _bootstrap\n"
			    "\n"
			    "Current thread 0x00007fd383e1d040 (most recent call first):\n"
			    "  File \"/tmp/st/sl.py\", line 5 in step\n"
			    "  File \"/tmp/st/sl.py\", line 9 in <module>\n");
	assert_int_equal(len, strlen(d));
	smt_pystack_free(p);
	free(text);
}

/* torchrun's stderr holds its own warning, then one dump per rank, each
 * ended by "Extension modules". */
static void test_ddp_two_dumps(void **state)
{
	(void)state;
	char *text = data("stacks/ddp-stderr.txt");
	struct smt_pystack *p;
	const char *second = strstr(strstr(text, "Fatal Python") + 1, "Fatal Python");
	char *first = strndup(text, (size_t)(second - text));

	assert_int_equal(smt_pystack_new(0, &p), 0);
	feed_all(p, first);
	assert_true(smt_pystack_complete(p));
	assert_non_null(strstr(smt_pystack_text(p, NULL), "line 44 in stall_forever"));
	assert_null(strstr(smt_pystack_text(p, NULL), "Extension modules"));
	assert_null(strstr(smt_pystack_text(p, NULL), "WARNING"));
	feed_all(p, second);
	assert_true(smt_pystack_complete(p));
	const char *d = smt_pystack_text(p, NULL);
	assert_non_null(strstr(d, "distributed_c10d.py\", line 1541 in all_reduce\n"));
	assert_null(strstr(d, "stall_forever"));
	assert_int_equal(d[strlen(d) - 1], '\n');
	assert_int_not_equal(d[strlen(d) - 2], '\n');
	smt_pystack_free(p);
	free(first);
	free(text);
}

/* A line of other output ends the dump and is not part of it. */
static void test_ends_at_other_output(void **state)
{
	(void)state;
	struct smt_pystack *p;

	assert_int_equal(smt_pystack_new(0, &p), 0);
	assert_int_equal(feed_all(p, "Current thread 0x00007f00 (most recent call first):\n"
				  "  File \"a.py\", line 1 in f\n"), 2);
	assert_int_equal(smt_pystack_feed(p, "", 0), 1);
	assert_int_equal(smt_pystack_feed(p, "step 5", 6), 0);
	assert_true(smt_pystack_complete(p));
	assert_string_equal(smt_pystack_text(p, NULL),
			    "Current thread 0x00007f00 (most recent call first):\n"
			    "  File \"a.py\", line 1 in f\n");
	/* Py_FatalError's own lines before the threads are kept, a few. */
	assert_int_equal(feed_all(p, "Fatal Python error: PyGILState_Release: bad\n"
				  "Python runtime state: initialized\n\n"
				  "Thread 0x00007f01 (most recent call first):\n"
				  "  <no Python frame>\n"), 5);
	smt_pystack_end(p);
	assert_non_null(strstr(smt_pystack_text(p, NULL), "runtime state"));
	/* ... but not many. */
	assert_int_equal(feed_all(p, "Fatal Python error: x\na\nb\nc\nd\ne\n"), 5);
	assert_true(smt_pystack_complete(p));
	smt_pystack_free(p);
}

static void test_bounded(void **state)
{
	(void)state;
	struct smt_pystack *p;
	char line[64];

	assert_int_equal(smt_pystack_new(200, &p), 0);
	smt_pystack_feed(p, "Stack (most recent call first):", 31);
	for (int i = 0; i < 1000; i++) {
		int n = snprintf(line, sizeof(line), "  File \"deep.py\", line %d in f", i);
		assert_int_equal(smt_pystack_feed(p, line, (size_t)n), 1);
	}
	smt_pystack_end(p);
	const char *d = smt_pystack_text(p, NULL);
	assert_true(strlen(d) < 260);
	assert_non_null(strstr(d, "  [... 995 more lines]\n"));
	smt_pystack_free(p);
}

static void test_add_source(void **state)
{
	(void)state;
	char dir[] = "/tmp/smt-pystack-XXXXXX", path[64], *out;
	FILE *f;
	const char *dump = "Current thread 0x00007f00 (most recent call first):\n"
			   "  File \"train.py\", line 3 in step\n"
			   "  File \"<frozen runpy>\", line 88 in _run_code\n"
			   "  File \"/nonexistent/x.py\", line 1 in g\n"
			   "  File \"train.py\", line 2 in main\n"
			   "    already()\n";

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/train.py", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("import time\n  main()  \n\t\ttime.sleep(3600)\n", f);
	fclose(f);
	assert_int_equal(smt_pystack_add_source(dump, strlen(dump), dir, NULL, &out), 0);
	assert_string_equal(out, "Current thread 0x00007f00 (most recent call first):\n"
			    "  File \"train.py\", line 3 in step\n"
			    "    time.sleep(3600)\n"
			    "  File \"<frozen runpy>\", line 88 in _run_code\n"
			    "  File \"/nonexistent/x.py\", line 1 in g\n"
			    "  File \"train.py\", line 2 in main\n"
			    "    already()\n");
	/* and the position now names the called function */
	char pos[128];
	smt_stack_position(out, strlen(out), pos, sizeof(pos));
	assert_string_equal(pos, "time.sleep (train.py:3)");
	free(out);
	unlink(path);
	rmdir(dir);
}

/* mpirun's stderr: three dumps (one rank in time.sleep, two in Barrier),
 * relative file names; the source makes "comm.Barrier" visible. */
static void test_mpi_dump_with_source(void **state)
{
	(void)state;
	char *text = data("stacks/mpi-stderr.txt");
	const char *top = getenv("top_srcdir");
	char helpers[512], pos[128], *out;
	struct smt_pystack *p;
	size_t len;

	snprintf(helpers, sizeof(helpers), "%s/tests/helpers", top ? top : "..");
	assert_int_equal(smt_pystack_new(0, &p), 0);
	feed_all(p, text);
	smt_pystack_end(p);
	const char *d = smt_pystack_text(p, &len);
	assert_non_null(strstr(d, "\"mpi_stall.py\", line 28 in main"));
	assert_null(strstr(d, "mpirun noticed"));
	assert_int_equal(smt_pystack_add_source(d, len, helpers, NULL, &out), 0);
	assert_non_null(strstr(out, "  File \"mpi_stall.py\", line 28 in main\n    comm.Barrier()\n"));
	assert_string_equal(smt_stack_position(out, strlen(out), pos, sizeof(pos)),
			    "comm.Barrier (mpi_stall.py:28)");
	free(out);
	smt_pystack_free(p);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_ddp_two_dumps),
		cmocka_unit_test(test_ends_at_other_output),
		cmocka_unit_test(test_bounded),
		cmocka_unit_test(test_add_source),
		cmocka_unit_test(test_mpi_dump_with_source),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
