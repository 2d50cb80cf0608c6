# The house: the documents that describe the code, checked against it, and
# the shape of the code itself.
check_PROGRAMS += tests/helpers/kinds
tests_helpers_kinds_SOURCES = tests/helpers/kinds.c
tests_helpers_kinds_LDADD = $(SMTD_LIBS)
TESTS += tests/integration/house_docs.sh tests/integration/house_lines.sh
EXTRA_DIST += tests/integration/house_docs.sh tests/integration/house_lines.sh .clang-format
# docs/BENCHMARKS.md is bench/run.sh's output: its head is
# bench/BENCHMARKS.head.md and its prose's numbers are its table's.
TESTS += tests/integration/bench_doc.sh
EXTRA_DIST += tests/integration/bench_doc.sh
