#!/bin/sh
# A job killed by the kernel's OOM killer is reported as OutOfMemory.  The
# job runs in a memory cgroup with a small limit: cgroup v2 (memory.max)
# where the unified hierarchy has the memory controller, else cgroup v1
# (memory.limit_in_bytes).
. "$top_srcdir/tests/lib.sh"
smt_tmpdir
[ "$(id -u)" = 0 ] || skip "needs root to create a memory cgroup"
mkdir -p "$T/root"
name="smt-oom-$$"
if grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
	cg=/sys/fs/cgroup/$name
	mkdir "$cg" 2>/dev/null || skip "cgroup v2 is not writable here"
	echo 64M > "$cg/memory.max"
	echo 0 > "$cg/memory.swap.max" 2>/dev/null || :
	echo "cgroup v2: $cg"
elif [ -d /sys/fs/cgroup/memory ]; then
	cg=/sys/fs/cgroup/memory/$name
	mkdir "$cg" 2>/dev/null || skip "the cgroup v1 memory controller is not writable here"
	echo 64M > "$cg/memory.limit_in_bytes"
	echo 64M > "$cg/memory.memsw.limit_in_bytes" 2>/dev/null || :
	echo "cgroup v2 has no memory controller here; using cgroup v1: $cg"
else
	skip "no memory cgroup (neither v2 memory.max nor v1 memory controller)"
fi
trap 'rm -rf "$T"; rmdir "$cg" 2>/dev/null' EXIT

# The shell moves itself into the cgroup, then becomes smtd.
rc=0
timeout 60 sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' sh "$cg" \
	"$SMTD" --root "$T/root" --sshd never -- \
	/usr/bin/python3 -c 'x = bytearray(512 << 20); print(len(x))' >"$T/out" 2>&1 || rc=$?
assert_eq "$rc" 1 "exit code after an OOM kill"
assert_contains "$T/root/output/failure" "OutOfMemory" "failure kind"
# Its peak memory (smtd's own wait for it: there is no rank launcher) and
# the limit that applied, the rank being the standalone program.
head -1 "$T/root/output/failure" | grep -qE "^OutOfMemory: .* was killed by SIGKILL \(the kernel's OOM killer\) with [0-9]+ MiB in use of the limit 64 MiB \(the memory cgroup's\)$" ||
	fail "first line: $(head -1 "$T/root/output/failure")"
echo "first line: $(head -1 "$T/root/output/failure")"
echo ok
