#!/bin/sh
# The timeouts that end a job that never came to anything (smtd(8) Roles, Stalls;
# smtd(8)), each on one host, each with a short value so that it fires:
#  1. --start-timeout: a job whose ranks never print a line is Stalled
#     once the start timeout has passed (the stall timeout, far longer,
#     does not count before the first line); every rank's stack is taken.
#  2. --result-timeout: a worker whose orted ended and whose leader (the
#     test, which launched it) never sends the result ends LostLeader
#     after that timeout, exit 3, not sooner and not at --peer-timeout.
# Each one's time is bounded both ways, from smtd's own log (the machine's
# load delays the start of a sanitized smtd and of Python by seconds, not
# smtd's timers): it fires no sooner than its timeout and within 1 s of it.
# --launch-timeout expiring is tests/integration/hostile_orted.sh's last
# check (a worker with no orted at all).
# In a PID namespace with its own /proc (part 2), so that no orted of the
# machine is seen.
. "$top_srcdir/tests/lib.sh"
if [ "${SMT_TIMEOUTS_NS:-}" != 1 ]; then
	[ "$(id -u)" = 0 ] || skip "needs root for a PID namespace"
	unshare --pid --fork --mount-proc true 2>/dev/null || skip "no PID namespaces here"
	SMT_TIMEOUTS_NS=1 exec unshare --pid --fork --mount-proc sh "$0"
fi
smt_tmpdir
S="$T/smtd.sock"
PY=/usr/bin/python3
[ -x $PY ] || skip_tool /usr/bin/python3
# logtime FILE TEXT: the time of smtd's first log line in FILE holding
# TEXT (fixed string), seconds since the epoch.
logtime() {
	line=$(grep -m1 -F -- "$2" "$1") || fail "no log line '$2' in $1: $(tail -5 "$1")"
	date -u -d "$(echo "$line" | cut -c1-23 | tr T ' ')" +%s.%N
}
# between FILE FROM TO: seconds between two of smtd's log lines.
between() {
	awk -v a="$(logtime "$1" "$2")" -v b="$(logtime "$1" "$3")" 'BEGIN { printf "%.3f", b - a }'
}
# within WHAT ELAPSED LOW HIGH
within() {
	awk -v e="$2" -v lo="$3" -v hi="$4" 'BEGIN { exit !(e >= lo && e <= hi) }' ||
		fail "$1 took $2 s, expected between $3 and $4 s"
	echo "$1: $2 s (between $3 and $4 s)"
}

# ---- 1. --start-timeout ----
mkdir -p "$T/st"
rc=0
"$SMTD" --root "$T/st" --socket "$S" --sshd never --stall-timeout 60 --start-timeout 2 \
	-- $PY -c 'import time; time.sleep(120)' >"$T/st.out" 2>&1 || rc=$?
assert_eq "$rc" 1 "exit code of a job that never printed (--start-timeout 2)"
f=$T/st/output/failure
[ -s "$f" ] || { cat "$T/st.out" >&2; fail "no failure file after --start-timeout"; }
head -1 "$f" | grep -q '^Stalled: ' || fail "the failure is not Stalled: $(head -1 "$f")"
assert_contains "$f" "Stalled: no rank wrote a line within 2 s (--start-timeout); it is in <module> (<string>:1)" \
	"the failure after --start-timeout"
within "--start-timeout 2 (the launch to 'the job is stalled')" \
	"$(between "$T/st.out" "launched /usr/bin/python3" "the job is stalled")" 2 3

# ---- 2. --result-timeout ----
ACK_S=$(sed -n 's/^#define ACK_TIMEOUT_MS \([0-9]*\)$/\1/p' "$top_srcdir/daemon/worker.c")
ACK_S=$(( (${ACK_S:-0} + 999) / 1000 ))
mkdir -p "$T/w/input/config"
echo '{"current_host": "algo-2", "hosts": ["algo-1", "algo-2"]}' \
	>"$T/w/input/config/resourceconfig.json"
echo '{"sagemaker_mpi_enabled": "true"}' >"$T/w/input/config/hyperparameters.json"
"$SMTD" --root "$T/w" --socket "$S" --sshd never --wait-timeout 60 --launch-timeout 60 \
	--peer-timeout 60 --result-timeout 2 -- /bin/true >"$T/w.out" 2>&1 &
SPID=$!
trap 'kill -TERM $SPID 2>/dev/null; wait $SPID 2>/dev/null; rm -rf "$T"' EXIT
wait_until 20 'curl -s --unix-socket "$S" -o "$T/status" http://x/v1/status 2>/dev/null &&
	grep -q "\"state\":\"waiting-for-leader\"" "$T/status"' 'the worker never waited: $(cat "$T/w.out")'
# The leader's orted as the worker finds it in /proc (a launch agent that
# does not announce itself): root's, started after smtd, with the
# session's SSH_CONNECTION; it ends when told to.  Then the leader's
# launch (the test is the leader).
SSH_CONNECTION="10.0.0.1 22 10.0.0.2 22" $PY -c "
import ctypes, os, time
ctypes.CDLL(None).prctl(15, b'orted', 0, 0, 0)  # PR_SET_NAME: comm
open('$T/orted.pid', 'w').write(str(os.getpid()))
while not os.path.exists('$T/orted.end'):
    time.sleep(0.02)
" &
ORTED=$!
wait_for_file "$T/orted.pid" 10 || fail "the stand-in orted did not start"
code=$(curl -s --unix-socket "$S" -H 'X-Smtd-Leader: 1' -X POST -o /dev/null -w '%{http_code}' \
	http://localhost/v1/launch)
assert_eq "$code" 200 "the launch"
wait_until 30 'grep -q "found it in /proc (pid $ORTED)" "$T/w.out"' \
	'the worker did not take the orted: $(cat "$T/w.out"; ps -eo pid,comm,args)'
touch "$T/orted.end"
wait $ORTED
rc=0
wait $SPID || rc=$?
trap 'rm -rf "$T"' EXIT
assert_eq "$rc" 3 "the worker's exit code when no result came (--result-timeout 2)"
assert_contains "$T/w/output/failure" "the leader algo-1 sent no result within 2.0 s after the job ended on algo-2 (--result-timeout)" \
	"the worker's failure"
head -1 "$T/w/output/failure" | grep -q '^LostLeader: ' || fail "not LostLeader: $(head -1 "$T/w/output/failure")"
# The job's end here, then the leader's acknowledgement of this host's
# output (which never comes either: ACK_TIMEOUT_MS), then the timeout.
# Less 0.1 s: the timers count from the loop's time, read when its turn
# began, and the log line of the end is written later in that turn (6.979 s
# in a loaded distcheck).
within "--result-timeout 2 (the job's end here to the failure)" \
	"$(between "$T/w.out" "the job on this host is over" "sent no result within")" \
	"$(awk -v a="$ACK_S" 'BEGIN { print 2 + a - 0.1 }')" $((3 + ACK_S))
echo ok
