/* test_smt_curl.c - libcurl loaded at run time (smt_curl.h). */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "smt_curl.h"

/* Runs first: nothing has loaded libcurl yet in this process. */
static void test_use_before_load_aborts(void **state)
{
	int status;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		/* Keep the expected BUG line out of the test's output. */
		if (freopen("/dev/null", "w", stderr) == NULL)
			_exit(2);
		curl_easy_init();
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGABRT);
}

static void test_load_and_use(void **state)
{
	char err[SMT_CURL_ERR_MAX] = "";
	CURL *h;

	assert_int_equal(smt_curl_load(err, sizeof(err)), 0);
	assert_string_equal(err, "");
	h = curl_easy_init();
	assert_non_null(h);
	assert_int_equal(curl_easy_setopt(h, CURLOPT_URL, "http://localhost/"), CURLE_OK);
	assert_int_equal(curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 10L), CURLE_OK);
	long code = -1;
	assert_int_equal(curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code), CURLE_OK);
	assert_int_equal(code, 0);
	assert_string_equal(curl_easy_strerror(CURLE_OK), "No error");
	curl_easy_cleanup(h);

	struct curl_slist *l = curl_slist_append(NULL, "X-A: 1");
	assert_non_null(l);
	assert_string_equal(l->data, "X-A: 1");
	curl_slist_free_all(l);

	CURLM *m = curl_multi_init();
	assert_non_null(m);
	assert_int_equal(curl_multi_setopt(m, CURLMOPT_MAXCONNECTS, 4L), CURLM_OK);
	assert_int_equal(curl_multi_cleanup(m), CURLM_OK);

	/* Loading again is a no-op. */
	assert_int_equal(smt_curl_load(err, sizeof(err)), 0);
}

static void test_missing_library(void **state)
{
	struct smt_curl_fns fns;
	char err[SMT_CURL_ERR_MAX] = "";

	assert_int_equal(smt_curl_open("libcurl-does-not-exist.so.4", &fns, err, sizeof(err)),
			 -ELIBACC);
	assert_string_equal(err,
		"cannot load libcurl (libcurl-does-not-exist.so.4): libcurl-does-not-exist.so.4: "
		"cannot open shared object file: No such file or directory "
		"(install the libcurl4 package)");
}

/* A library that opens but is not libcurl. */
static void test_missing_function(void **state)
{
	struct smt_curl_fns fns;
	char err[SMT_CURL_ERR_MAX] = "";
	const char *tail = ": undefined symbol: curl_global_init "
			   "(install the libcurl4 package, 7.80 or later)";

	assert_int_equal(smt_curl_open("libc.so.6", &fns, err, sizeof(err)), -ELIBBAD);
	/* dlerror() names the library by its path, which differs by system. */
	assert_true(strncmp(err, "cannot use libcurl (libc.so.6): /", 33) == 0);
	assert_true(strlen(err) > strlen(tail));
	assert_string_equal(err + strlen(err) - strlen(tail), tail);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_use_before_load_aborts),
		cmocka_unit_test(test_missing_library),
		cmocka_unit_test(test_missing_function),
		cmocka_unit_test(test_load_and_use),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
