#!/bin/sh
# The test command: install what is missing, build with AddressSanitizer and
# UndefinedBehaviorSanitizer, run every test (`make check`), the fuzz
# targets for a bounded time, and `make distcheck`.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
scripts/setup.sh
scripts/build.sh build-san --enable-sanitizers

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

pass=$(grep -h '^# PASS:' build-san/test-suite.log 2>/dev/null | head -1 | awk '{print $3}')
fail=$(grep -h '^# FAIL:' build-san/test-suite.log 2>/dev/null | head -1 | awk '{print $3}')
err=$(grep -h '^# ERROR:' build-san/test-suite.log 2>/dev/null | head -1 | awk '{print $3}')
skip=$(grep -h '^# SKIP:' build-san/test-suite.log 2>/dev/null | head -1 | awk '{print $3}')
echo "make check: ${pass:-0} passed, $(( ${fail:-0} + ${err:-0} )) failed, ${skip:-0} skipped"
exit $status
