#!/bin/sh
# PIDs reused inside a PID namespace whose pid_max is
# small.  An orphan's status is never handed to a later child with the same
# PID, and a process read from /proc and then replaced is never signalled
# (tests/helpers/pidreuse.c).
. "$top_srcdir/tests/lib.sh"
[ "$(id -u)" = 0 ] || skip "needs root for a PID namespace"
unshare --pid --fork --mount-proc sh -c 'echo 400 > /proc/sys/kernel/pid_max' 2>/dev/null ||
	skip "pid_max cannot be set in a PID namespace here (kernel before 6.14, or no namespaces)"
out=$(unshare --pid --fork --mount-proc sh -c \
	'echo 400 > /proc/sys/kernel/pid_max && exec "$1"' sh "$top_builddir/tests/helpers/pidreuse" 2>&1) ||
	fail "pidreuse: $out"
echo "$out"
