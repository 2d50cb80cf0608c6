# api tests
# test_httpconn drives one connection object (httpconn.c, routes.c) with
# bytes (every endpoint and bad request); test_api_server runs the server
# on a real loop and sockets (socket set-up, timeouts, limits); the shell
# tests drive the real curl and smtctl against tests/helpers/api_server,
# a server on canned answers.
check_PROGRAMS += tests/helpers/api_server tests/unit/test_httpconn tests/unit/test_api_server
tests_helpers_api_server_SOURCES = tests/helpers/api_server.c
tests_helpers_api_server_LDADD = $(SMTD_LIBS)
tests_unit_test_httpconn_SOURCES = tests/unit/test_httpconn.c
tests_unit_test_httpconn_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_httpconn_LDADD = $(TEST_LIBS)
tests_unit_test_api_server_SOURCES = tests/unit/test_api_server.c
tests_unit_test_api_server_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_api_server_LDADD = $(TEST_LIBS)
API_TESTS = tests/integration/api_curl.sh tests/integration/api_smtctl.sh \
	tests/integration/api_socket.sh tests/integration/api_load.sh \
	tests/integration/api_pipelining.sh tests/integration/api_leader.sh \
	tests/integration/api_edges.sh
TESTS += tests/unit/test_httpconn tests/unit/test_api_server $(API_TESTS)
EXTRA_DIST += tests/integration/api_lib.sh tests/fuzz/fuzz_http.seeds $(API_TESTS) \
	tests/fuzz/fuzz_http.c tests/fuzz/fuzz_http.sources
