# libcurl loaded at run time (proto/smt_curl.c): the loader itself, and
# that the processes which do not speak HTTP never map it.
check_PROGRAMS += tests/unit/test_smt_curl
tests_unit_test_smt_curl_SOURCES = tests/unit/test_smt_curl.c
tests_unit_test_smt_curl_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_smt_curl_LDADD = $(TEST_LIBS)
TESTS += tests/unit/test_smt_curl tests/integration/curl_lazy.sh
EXTRA_DIST += tests/integration/curl_lazy.sh
