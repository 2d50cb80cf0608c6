/* test_stackparse.c - frames out of real py-bt, gdb, eu-stack and
 * faulthandler texts (tests/data/stacks, captured from the fixtures of
 * tests/helpers), and the cleaning of a tool's raw output. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "stackparse.h"
#include "stacks.h"
#include "testdata.h"

static struct smt_stack *parse_file(const char *name, int clean)
{
	size_t len;
	char *text = smt_test_data(name, &len, 1), *c = NULL;
	struct smt_stack *st = NULL;

	if (clean) {
		assert_int_equal(smt_stacks_clean(text, len, &c), 0);
		free(text);
		text = c;
		len = strlen(c);
	}
	assert_int_equal(smt_stack_parse(text, len, &st), 0);
	free(text);
	return st;
}

static void test_pybt_allreduce(void **state)
{
	(void)state;
	struct smt_stack *st = parse_file("stacks/ddp-allreduce.pybt", 0);
	const struct smt_thread *m = smt_stack_main_thread(st);

	assert_int_equal(st->format, SMT_STACK_PYBT);
	assert_int_equal(st->nthreads, 6);
	assert_non_null(m);
	assert_int_equal(m->gdb_num, 1);
	assert_int_equal(m->id, 470);
	assert_int_equal(m->nframes, 4);
	assert_true(m->frames[0].builtin);
	assert_string_equal(m->frames[0].func, "wait");
	assert_true(m->frames[1].python);
	assert_string_equal(m->frames[1].func, "all_reduce");
	assert_int_equal(m->frames[1].line, 1541);
	assert_string_equal(m->frames[1].code, "work.wait()");
	assert_string_equal(m->frames[2].file, "/tmp/st/ddp_stall.py");
	assert_int_equal(m->frames[2].line, 66);
	assert_string_equal(m->frames[2].code, "dist.all_reduce(total)");
	/* the C++ worker threads have no Python frame */
	assert_int_equal(st->threads[0].nframes, 0);
	smt_stack_free(st);
}

static void test_gdb_native(void **state)
{
	(void)state;
	struct smt_stack *st = parse_file("stacks/ddp-allreduce.gdb", 0);
	const struct smt_thread *m = smt_stack_main_thread(st);

	assert_int_equal(st->format, SMT_STACK_GDB);
	assert_int_equal(st->pid, 470);
	assert_int_equal(m->id, 470);
	assert_true(m->nframes > 10);
	/* "#0  __futex_abstimed_wait_common64 (private=0, ...) at ./nptl/futex-internal.c:57" */
	assert_string_equal(m->frames[0].func, "__futex_abstimed_wait_common64");
	assert_string_equal(m->frames[0].file, "./nptl/futex-internal.c");
	assert_int_equal(m->frames[0].line, 57);
	/* A C++ name with its own parentheses and spaces, from a library. */
	const struct smt_thread *t = &st->threads[0];
	int found = 0;
	for (size_t i = 0; i < t->nframes; i++)
		if (strcmp(t->frames[i].func, "gloo::transport::tcp::UnboundBuffer::waitRecv(int*, "
			   "std::chrono::duration<long, std::ratio<1l, 1000l> >)") == 0) {
			assert_string_equal(t->frames[i].object, "/lib/libgloo.so.0");
			found = 1;
		}
	assert_true(found);
	smt_stack_free(st);
}

static void test_eustack(void **state)
{
	(void)state;
	struct smt_stack *st = parse_file("stacks/mpi-barrier.eustack", 0);
	const struct smt_thread *m = smt_stack_main_thread(st);
	char sym[64];

	assert_int_equal(st->format, SMT_STACK_EUSTACK);
	assert_int_equal(st->pid, 6623);
	assert_int_equal(m->id, 6623);
	assert_string_equal(m->frames[0].func, "__sched_yield");
	assert_string_equal(m->frames[4].func, "PMPI_Barrier");
	assert_string_equal(m->frames[5].func, "??");
	assert_string_equal(smt_frame_symbol(m->frames[6].func, sym, sizeof(sym)),
			    "method_vectorcall_VARARGS_KEYWORDS");
	smt_stack_free(st);
}

static void test_faulthandler_threads(void **state)
{
	(void)state;
	struct smt_stack *st = parse_file("stacks/threads-stderr.txt", 0);
	const struct smt_thread *m = smt_stack_main_thread(st);

	assert_int_equal(st->format, SMT_STACK_FAULTHANDLER);
	assert_int_equal(st->nthreads, 2);
	/* CPython lists the newest thread first: the main thread is last */
	assert_ptr_equal(m, &st->threads[1]);
	assert_true(m->current);
	assert_int_equal(m->nframes, 2);
	assert_string_equal(m->frames[0].func, "step");
	assert_string_equal(m->frames[0].file, "/tmp/st/sl.py");
	assert_int_equal(m->frames[0].line, 5);
	assert_null(m->frames[0].code);
	assert_string_equal(st->threads[0].frames[0].func, "worker");
	smt_stack_free(st);
}

static void test_wrappers(void **state)
{
	(void)state;
	char sym[128];

	assert_true(smt_frame_is_wait_wrapper("__GI___clock_nanosleep"));
	assert_true(smt_frame_is_wait_wrapper("clock_nanosleep@GLIBC_2.2.5"));
	assert_true(smt_frame_is_wait_wrapper("__futex_abstimed_wait_common64"));
	assert_true(smt_frame_is_wait_wrapper("pthread_cond_wait@@GLIBC_2.3.2"));
	assert_true(smt_frame_is_wait_wrapper("___pthread_cond_clockwait64"));
	assert_true(smt_frame_is_wait_wrapper("__poll"));
	assert_true(smt_frame_is_wait_wrapper("epoll_wait"));
	assert_true(smt_frame_is_wait_wrapper("__sched_yield"));
	assert_true(smt_frame_is_wait_wrapper("__GI___wait4"));
	assert_false(smt_frame_is_wait_wrapper("ompi_sync_wait_mt"));
	assert_false(smt_frame_is_wait_wrapper("PMPI_Barrier"));
	assert_false(smt_frame_is_wait_wrapper("main"));
	assert_false(smt_frame_is_wait_wrapper("c10d::Work::wait(std::chrono::duration<long>)"));
	assert_string_equal(smt_frame_symbol("time_sleep.lto_priv.0", sym, sizeof(sym)), "time_sleep");
	assert_string_equal(smt_frame_symbol("c10d::Work::wait(std::chrono::duration<long, "
					     "std::ratio<1l, 1000l> >)", sym, sizeof(sym)),
			    "c10d::Work::wait");
	assert_string_equal(smt_frame_symbol("std::vector<int>::push_back(int)", sym, sizeof(sym)),
			    "std::vector<int>::push_back");
}

static void test_clean_pybt(void **state)
{
	(void)state;
	size_t len;
	char *raw = smt_test_data("stacks/ddp-allreduce.pybt", &len, 1), *c;

	assert_int_equal(smt_stacks_clean(raw, len, &c), 0);
	assert_null(strstr(c, "[New LWP"));
	assert_null(strstr(c, "libthread_db"));
	assert_null(strstr(c, "[Inferior"));
	assert_null(strstr(c, "__futex_abstimed_wait_common64 (private=0"));
	assert_null(strstr(c, "Unable to locate python frame"));
	const char *head = "Thread 1 (Thread 0x7fa2b6602040 (LWP 470) \"python3.11\"):\n"
			   "Traceback (most recent call first):\n"
			   "  <built-in method wait of PyCapsule object at remote 0x7fa2954a5650>\n";
	assert_int_equal(strncmp(c, head, strlen(head)), 0);
	assert_non_null(strstr(c, "    dist.all_reduce(total)\n"));
	assert_non_null(strstr(c, "\n\n(5 more threads without Python frames)\n"));
	free(raw);
	free(c);
}

static void test_clean_gdb_keeps_frames(void **state)
{
	(void)state;
	size_t len;
	char *raw = smt_test_data("stacks/ddp-allreduce.gdb", &len, 1), *c;
	struct smt_stack *a, *b;

	assert_int_equal(smt_stacks_clean(raw, len, &c), 0);
	assert_int_equal(strncmp(c, "Thread 6 (Thread", 16), 0);
	assert_int_equal(smt_stack_parse(raw, len, &a), 0);
	assert_int_equal(smt_stack_parse(c, strlen(c), &b), 0);
	assert_int_equal(a->nframes, b->nframes);
	assert_int_equal(a->nthreads, b->nthreads);
	smt_stack_free(a);
	smt_stack_free(b);
	free(raw);
	free(c);
}

static void test_garbage(void **state)
{
	(void)state;
	struct smt_stack *st;
	const char *junk = "#\n#12\n#3  0x\nThread x ():\n  File \"a\", line\nTID :\n\n\xff\xfe";

	assert_int_equal(smt_stack_parse(junk, strlen(junk), &st), 0);
	assert_int_equal(st->nframes, 0);
	smt_stack_free(st);
	assert_int_equal(smt_stack_parse("", 0, &st), 0);
	assert_null(smt_stack_main_thread(st));
	smt_stack_free(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pybt_allreduce),
		cmocka_unit_test(test_gdb_native),
		cmocka_unit_test(test_eustack),
		cmocka_unit_test(test_faulthandler_threads),
		cmocka_unit_test(test_wrappers),
		cmocka_unit_test(test_clean_pybt),
		cmocka_unit_test(test_clean_gdb_keeps_frames),
		cmocka_unit_test(test_garbage),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
