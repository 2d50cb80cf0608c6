#!/bin/sh
# preload_threads.sh - 16 threads making the process's first call at once
# all get the same answer; the file is opened once, close-on-exec, and no
# descriptor is left open after the first call.
. "$top_srcdir/tests/lib.sh"
smt_tmpdir
PROBE=$top_builddir/tests/helpers/hostname_probe
[ -f "$SMTD_PRELOAD" ] || fail "no preload library at $SMTD_PRELOAD"
unset SMTD_ROOT
REAL=$("$PROBE") || fail "the probe fails without the library"
printf '{"current_host": "algo-5", "hosts": ["algo-5"]}' >"$T/rc.json"
export SMTD_RESOURCE_CONFIG="$T/rc.json"

# Each run is a fresh process, so each is a new race for the first call.
i=0
while [ $i -lt 25 ]; do
	got=$(LD_PRELOAD=$SMTD_PRELOAD "$PROBE" -t 16 2>&1) || fail "threads, run $i: $got"
	assert_eq "$got" "threads=16 same=yes algo-5" "16 threads, run $i"
	i=$((i + 1))
done
got=$(SMTD_RESOURCE_CONFIG=$T/absent.json LD_PRELOAD=$SMTD_PRELOAD "$PROBE" -t 16 2>&1) ||
	fail "threads, fallback: $got"
assert_eq "$got" "threads=16 same=yes $REAL" "16 threads, fallback"

# No descriptor left behind, whatever the file is.
mkfifo "$T/fifo.json"
printf '{"current_host": 1}' >"$T/bad.json"
for f in "$T/rc.json" "$T/absent.json" "$T/fifo.json" "$T/bad.json"; do
	got=$(SMTD_RESOURCE_CONFIG=$f LD_PRELOAD=$SMTD_PRELOAD timeout 20 "$PROBE" -f 2>&1) ||
		fail "descriptors with $f: $got"
	n=${got#fds=}
	n=${n%%,*}
	assert_eq "$got" "fds=$n,$n rc=0" "descriptors before and after the first call ($f)"
done
got=$(LD_PRELOAD=$SMTD_PRELOAD /usr/bin/python3 -c '
import os, socket
before = sorted(os.listdir("/proc/self/fd"))
name = socket.gethostname()
print(name, before == sorted(os.listdir("/proc/self/fd")))' 2>&1) || fail "python3 descriptors: $got"
assert_eq "$got" "algo-5 True" "descriptors in python3"

# One open, close-on-exec, for 16 threads; none for a FIFO.
if command -v strace >/dev/null 2>&1 && strace -o /dev/null true 2>/dev/null; then
	LD_PRELOAD=$SMTD_PRELOAD strace -f -qq -e trace=openat,open -o "$T/trace" \
		"$PROBE" -t 16 >/dev/null 2>&1 || fail "probe under strace"
	grep -F "\"$T/rc.json\"" "$T/trace" >"$T/opens" || true
	assert_eq "$(wc -l <"$T/opens" | tr -d ' ')" 1 "opens of the configuration by 16 threads"
	assert_contains "$T/opens" "O_CLOEXEC" "open flags"
	assert_contains "$T/opens" "O_NONBLOCK" "open flags"
	SMTD_RESOURCE_CONFIG=$T/fifo.json LD_PRELOAD=$SMTD_PRELOAD strace -f -qq \
		-e trace=openat,open -o "$T/trace" timeout 20 "$PROBE" >/dev/null 2>&1 ||
		fail "probe under strace, FIFO"
	assert_not_contains "$T/trace" "$T/fifo.json" "FIFO opened"
else
	echo "note: strace unavailable, open flags not checked" >&2
fi

# A forked child keeps the answer and does not read again.
got=$(LD_PRELOAD=$SMTD_PRELOAD /usr/bin/python3 -c '
import os, socket, sys
print(socket.gethostname(), flush=True)
os.unlink(sys.argv[1])
pid = os.fork()
if pid == 0:
    print(socket.gethostname(), flush=True)
    os._exit(0)
os.waitpid(pid, 0)' "$T/rc.json" 2>&1) || fail "fork: $got"
assert_eq "$(echo $got)" "algo-5 algo-5" "name in a forked child"
exit 0
