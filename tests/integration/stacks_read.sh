#!/bin/sh
# Live stacks (daemon/stacks.h) of real processes, read on a libuv
# loop by tests/helpers/stacks_read: a sleeping C program (eu-stack, and gdb
# alone), a sleeping Python program (gdb with CPython's extension when
# python3.11-dbg is installed), and the exact reasons for a missing tool, a process gone
# before and during the read, and a time limit; no target is left stopped
# and no tool is left running.
#
# Needs gdb or eu-stack (Debian: gdb, elfutils); the Python frames need
# python3.11-dbg.  Skips (77) saying why when a tool is missing or ptrace
# is not permitted here.
. "$top_srcdir/tests/lib.sh"
smt_tmpdir

READ="$top_builddir/tests/helpers/stacks_read"
SLEEPER="$top_builddir/tests/helpers/sleeper"
PYSLEEPER="$top_srcdir/tests/helpers/sleeper.py"
PY=/usr/bin/python3
pids=
trap 'for p in $pids; do kill -9 $p 2>/dev/null; done; rm -rf "$T"' EXIT

have gdb || have eu-stack || skip_tool "gdb and eu-stack (elfutils)"

state_of() { sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$1/status"; }

# A tool must never survive its read.
assert_no_tool_for() {
	for d in /proc/[0-9]*; do
		cmd=$(tr '\0' ' ' 2>/dev/null < "$d/cmdline") || continue
		case $cmd in
		*"attach $1 "*|*"eu-stack -p $1 "*) fail "a tool is still running for $1: $cmd" ;;
		esac
	done
}

start_ready native "$SLEEPER" --thread
cpid=$pid

# --- a native process, with the preferred tool -------------------------
"$READ" "$cpid" > "$T/native.txt" || fail "stacks_read failed: $(cat "$T/native.txt")"
if grep -q "reason: ptrace not permitted" "$T/native.txt"; then
	skip "$(sed -n 's/^=== [0-9]* reason: //p' "$T/native.txt")"
fi
assert_contains "$T/native.txt" "=== $cpid tool=" "native read"
assert_contains "$T/native.txt" "smt_sleeper_wait" "the frame that called nanosleep"
assert_contains "$T/native.txt" "smt_sleeper_thread" "the second thread"
grep -Eq 'clock_nanosleep|__nanosleep' "$T/native.txt" || fail "no nanosleep frame"
assert_not_contains "$T/native.txt" "[New LWP" "gdb noise"
assert_not_contains "$T/native.txt" "libthread_db" "gdb noise"
assert_contains "$T/native.txt" "all 1 reads done" "the driver ended"

# --- gdb alone: source lines of the native frames ----------------------
if have gdb; then
	mkdir "$T/gdbonly"
	ln -s "$(command -v gdb)" "$T/gdbonly/gdb"
	"$READ" --path "$T/gdbonly" "$cpid" > "$T/gdb.txt" || fail "gdb read failed"
	assert_contains "$T/gdb.txt" "=== $cpid tool=gdb python=0" "gdb read"
	assert_contains "$T/gdb.txt" "in smt_sleeper_wait () at " "gdb names the frame"
	grep -Eq 'sleeper\.c:[0-9]+' "$T/gdb.txt" || fail "gdb gives no source line"
	grep -Eq '^Thread 1 \(Thread 0x[0-9a-f]+ \(LWP '"$cpid"'\)' "$T/gdb.txt" ||
		fail "no main thread header"
	assert_not_contains "$T/gdb.txt" "[Inferior 1" "gdb noise"
fi
[ "$(state_of "$cpid")" = S ] || fail "the C program was left in state $(state_of "$cpid")"

# --- a Python process ---------------------------------------------------
if [ -x "$PY" ]; then
	start_ready python "$PY" "$PYSLEEPER"
	ppid=$pid
	"$READ" "$ppid" > "$T/python.txt" || fail "python read failed"
	if have gdb && [ -f /usr/share/gdb/auto-load/usr/bin/python3.11-gdb.py ] &&
	   [ "$(readlink -f "$PY")" = /usr/bin/python3.11 ]; then
		assert_contains "$T/python.txt" "=== $ppid tool=gdb python python=1" "Python read"
		assert_contains "$T/python.txt" "sleeper.py\", line 17, in step" "the Python frame"
		assert_contains "$T/python.txt" "    time.sleep(3600)" "its source line"
		assert_contains "$T/python.txt" "sleeper.py\", line 13, in worker" "the second thread"
		grep -Eq "^Thread 1 \\(Thread 0x[0-9a-f]+ \\(LWP $ppid\\)" "$T/python.txt" ||
			fail "the main thread is not thread 1"
	else
		echo "note: no Python frames here (install gdb and python3.11-dbg): native frames only"
		assert_contains "$T/python.txt" "python=1" "detected as Python"
		assert_contains "$T/python.txt" "note: no Python frames" "the note says why"
		grep -Eq 'time_sleep|clock_nanosleep' "$T/python.txt" || fail "no native sleep frame"
	fi
	[ "$(state_of "$ppid")" = S ] || fail "the Python program was left stopped"

	# gdb slowed down by 3 s in its own Python before it reads the
	# target, so that the limits below fall inside its read whatever
	# the machine (a fresh root's gdb read the sleeper in 0.29 s).
	if have gdb; then
		mkdir "$T/slowgdb"
		printf '#!/bin/sh\nexec %s -iex "python import time; time.sleep(3)" "$@"\n' \
			"$(command -v gdb)" > "$T/slowgdb/gdb"
		chmod 755 "$T/slowgdb/gdb"
	fi

	# The tools come from the PATH of the environment they are given
	# (--path), not from the reader's own: the slowed gdb, 3 s in its
	# Python, still runs at 2 s (execvpe() would have taken /usr/bin/gdb,
	# done in well under a second).
	if have gdb; then
		"$READ" --timeout 2000 --path "$T/slowgdb" "$ppid" > "$T/envpath.txt"
		grep -Eq "^=== $ppid reason: timed out after 2000 ms \\(gdb( python)?\\)\$" "$T/envpath.txt" ||
			fail "the gdb of --path's PATH was not the one run: $(head -1 "$T/envpath.txt")"
	fi

	# A time limit shorter than gdb needs: the exact reason, the target
	# running on, no tool left.
	if have gdb; then
		"$READ" --timeout 300 --path "$T/slowgdb" "$ppid" > "$T/timeout.txt"
		grep -Eq "^=== $ppid reason: timed out after 300 ms \\(gdb( python)?\\)\$" "$T/timeout.txt" ||
			fail "timeout reason: $(cat "$T/timeout.txt")"
		sleep 0.2
		[ "$(state_of "$ppid")" = S ] || fail "the target was left in state $(state_of "$ppid")"
		assert_no_tool_for "$ppid"
	fi

	# A process that exits while its stack is being read (before the
	# slowed gdb attaches).
	if have gdb; then
		start_ready dying "$PY" "$PYSLEEPER"
		dpid=$pid
		"$READ" --kill-after 100 --path "$T/slowgdb" "$dpid" > "$T/dying.txt"
		assert_eq "$(head -1 "$T/dying.txt")" "=== $dpid reason: process $dpid is gone" "exit mid-read"
		assert_no_tool_for "$dpid"
	fi
fi

# --- no tool at all -------------------------------------------------------
mkdir "$T/empty"
"$READ" --path "$T/empty" "$cpid" > "$T/none.txt"
assert_eq "$(head -1 "$T/none.txt")" \
	"=== $cpid reason: no stack reader installed (neither gdb nor eu-stack is in PATH)" "no tool"

# --- a process gone before the read ---------------------------------------
sh -c 'echo $$ > "$1"' sh "$T/gone.pid"
gone=$(cat "$T/gone.pid")
"$READ" "$gone" > "$T/gone.txt"
assert_eq "$(head -1 "$T/gone.txt")" "=== $gone reason: process $gone is gone" "gone before"
# The reader closed from that result's callback, which runs as the read
# begins (smtd's collections close it from their last read's callback).
"$READ" --close-last "$gone" > "$T/gone-close.txt" || fail "closing from the callback: $(cat "$T/gone-close.txt")"
assert_eq "$(head -1 "$T/gone-close.txt")" "=== $gone reason: process $gone is gone" "gone before, closed from the callback"

# --- six at once, two at a time -------------------------------------------
six=
for n in 1 2 3 4 5 6; do
	start_ready "s$n" "$SLEEPER"
	six="$six $pid"
done
# shellcheck disable=SC2086
"$READ" --parallel 2 $six > "$T/six.txt" || fail "six reads failed"
assert_eq "$(grep -c '^=== [0-9]* tool=' "$T/six.txt")" 6 "six stacks"
assert_eq "$(grep -c 'smt_sleeper_wait' "$T/six.txt")" 6 "six frames"
echo "ok: $(tail -1 "$T/six.txt")"
exit 0
