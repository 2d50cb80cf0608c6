#!/bin/sh
# The test command: install what is missing, build with AddressSanitizer and
# UndefinedBehaviorSanitizer, run every test (`make check`), the fuzz
# targets for a bounded time, `make distcheck`, and the tests that hold
# smtd to the memory bounds smtd(8) states on the plain (-O2) build, whose
# bounds they are.  Every pass prints its summary.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
scripts/setup.sh
scripts/build.sh build-san --enable-sanitizers

# The tests whose bounds (memory, the end of a stopped job) are the plain
# build's; sanitized, they hold looser ones.
MEMORY_TESTS="tests/multihost/test_rank_backpressure.sh tests/integration/supervise_volume.sh tests/integration/api_pipelining.sh tests/multihost/test_grace_end.sh"

# summary NAME FILE: the automake summary of a pass (from its test-suite.log
# or its output), one line.
summary() {
	pass=$(grep -h '^# PASS:' "$2" 2>/dev/null | tail -1 | awk '{print $3}')
	fail=$(grep -h '^# FAIL:' "$2" 2>/dev/null | tail -1 | awk '{print $3}')
	err=$(grep -h '^# ERROR:' "$2" 2>/dev/null | tail -1 | awk '{print $3}')
	skip=$(grep -h '^# SKIP:' "$2" 2>/dev/null | tail -1 | awk '{print $3}')
	echo "$1: ${pass:-0} passed, $(( ${fail:-0} + ${err:-0} )) failed, ${skip:-0} skipped"
}

status=0
(cd build-san && make -j2 check) || status=1
for f in build-san/test-suite.log build-san/tests/*.log build-san/tests/*/*.log; do :; done
if [ $status -ne 0 ]; then
	# Show why, in CI logs too.
	find build-san -name '*.log' -newer build-san/Makefile -exec grep -l -E '^(FAIL|ERROR)' {} + 2>/dev/null |
		while read -r log; do echo "==== $log"; tail -60 "$log"; done
fi

if [ $status -eq 0 ]; then
	tests/fuzz/run.sh build-fuzz || status=1
fi
if [ $status -eq 0 ] && [ "${SMT_SKIP_DISTCHECK:-0}" != 1 ]; then
	scripts/build.sh build
	(cd build && make -j2 distcheck DISTCHECK_CONFIGURE_FLAGS= SMT_TEST_QUICK=1 >distcheck.out 2>&1) ||
		{ tail -40 build/distcheck.out; status=1; }
fi
if [ $status -eq 0 ]; then
	scripts/build.sh build
	rm -f build/test-suite.log build/memory.out
	# One at a time: their bounds are time and memory, and two of them
	# side by side on 2 cores (12 ranks printing at full speed beside the
	# API's 50 ms) measure each other (a 138 ms API step, -j2).
	(cd build && make -j1 check TESTS="$MEMORY_TESTS" >memory.out 2>&1) || {
		for t in $MEMORY_TESTS; do
			log=build/${t%.sh}.log
			! grep -q -E '^(FAIL|ERROR)' "$log" 2>/dev/null || { echo "==== $log"; tail -60 "$log"; }
		done
		status=1
	}
fi

summary "make check" build-san/test-suite.log
[ ! -f build/distcheck.out ] || summary "make distcheck (SMT_TEST_QUICK=1: multi-host tests skipped)" build/distcheck.out
[ ! -f build/memory.out ] || summary "memory and time bounds on the plain build" build/test-suite.log
exit $status
