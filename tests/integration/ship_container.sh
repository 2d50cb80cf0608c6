#!/bin/sh
# The container example's layout (examples/container/opt-ml, smtd started
# with no arguments as the image's ENTRYPOINT) on 3 simulated hosts.
. "$top_srcdir/tests/lib.sh"
[ "${SMT_TEST_QUICK:-0}" = 1 ] && skip "SMT_TEST_QUICK=1: no simulated hosts"
[ "$(id -u)" = 0 ] || skip "simulated hosts need root"
rc=0
bash "$top_srcdir/examples/container/run-simulated.sh" "$top_builddir" >"${TMPDIR:-/tmp}/ship_container.$$" 2>&1 || rc=$?
cat "${TMPDIR:-/tmp}/ship_container.$$"
rm -f "${TMPDIR:-/tmp}/ship_container.$$"
[ $rc = 77 ] && skip "the simulated-host harness is not available"
assert_eq "$rc" 0 "run-simulated.sh"
echo ok
