#!/bin/sh
# A hostile rank and a worker's search for orted (daemon/worker.c, smtd(8)
# SECURITY): a process of uid 65534 named orted, under a process of its own
# named sshd, with SSH_CONNECTION in its environment, started before the
# leader's launch reached the worker.  The worker used to adopt the first
# orted in /proc and end the job when it was killed; now it is passed over
# (logged, with why) and the worker keeps waiting for the real one.
#
# In a PID namespace with its own /proc, so that no real sshd or orted of
# the machine is seen.
. "$top_srcdir/tests/lib.sh"
if [ "${SMT_ORTED_NS:-}" != 1 ]; then
	[ "$(id -u)" = 0 ] || skip "needs root for a PID namespace"
	unshare --pid --fork --mount-proc true 2>/dev/null || skip "no PID namespaces here"
	SMT_ORTED_NS=1 exec unshare --pid --fork --mount-proc sh "$0"
fi
smt_tmpdir
S="$T/smtd.sock"
PY=/usr/bin/python3
[ -x $PY ] || skip "/usr/bin/python3 is missing"

# named COMM CMD...: exec CMD under the process name COMM.
cat >"$T/named.py" <<'PY'
import ctypes, os, sys
ctypes.CDLL(None).prctl(15, sys.argv[1].encode(), 0, 0, 0)  # PR_SET_NAME
os.execv(sys.executable, [sys.executable, "-c", sys.argv[2]])
PY
chmod 755 "$T"
chmod 644 "$T/named.py"
mkdir "$T/nb" && chown 65534 "$T/nb"

mkdir -p "$T/w/input/config"
echo '{"current_host": "algo-2", "hosts": ["algo-1", "algo-2"]}' \
	>"$T/w/input/config/resourceconfig.json"
echo '{"sagemaker_mpi_enabled": "true"}' >"$T/w/input/config/hyperparameters.json"
"$SMTD" --root "$T/w" --socket "$S" --sshd never --wait-timeout 60 --launch-timeout 9 \
	-- /bin/true >"$T/smtd.out" 2>&1 &
SPID=$!
trap 'kill -TERM $SPID 2>/dev/null; wait $SPID 2>/dev/null; rm -rf "$T"' EXIT
wait_until 20 'curl -s --unix-socket "$S" -o "$T/status" http://x/v1/status 2>/dev/null &&
	grep -q "\"state\":\"waiting-for-leader\"" "$T/status"' 'the worker never waited: $(cat "$T/smtd.out")'

# The fake: "sshd" (uid 65534) whose child "orted" (uid 65534, the
# session's environment) sleeps; prctl's name survives the exec only as
# comm, which is all /proc shows.
SSH_CONNECTION="10.0.0.1 22 10.0.0.2 22" as_nobody $PY "$T/named.py" sshd "
import ctypes, os, sys, time
pid = os.fork()
if pid == 0:
    ctypes.CDLL(None).prctl(15, b'orted', 0, 0, 0)
    time.sleep(300)
    sys.exit(0)
# Whole or not at all: the test reads it as soon as the name exists.
open('$T/nb/fake.pid.new', 'w').write(str(pid))
os.rename('$T/nb/fake.pid.new', '$T/nb/fake.pid')
os.waitpid(pid, 0)
" &
FAKE_PARENT=$!
wait_for_file "$T/nb/fake.pid" 10 || fail "the fake orted did not start"
FAKE=$(cat "$T/nb/fake.pid")
[ "$(cat /proc/$FAKE/comm)" = orted ] || fail "the fake is named $(cat /proc/$FAKE/comm)"

# The leader's launch: the worker looks for orted in /proc.
code=$(curl -s --unix-socket "$S" -H 'X-Smtd-Leader: 1' -X POST -o /dev/null -w '%{http_code}' \
	http://localhost/v1/launch)
assert_eq "$code" 200 "the launch"
wait_until 10 'grep -q "not taking process $FAKE for orted: process $FAKE runs as neither root nor smtd'"'"'s user" "$T/smtd.out"' \
	'the fake orted was not passed over, with why: $(cat "$T/smtd.out")'
assert_not_contains "$T/smtd.out" "found it in /proc (pid $FAKE)" "the fake adopted"
curl -s --unix-socket "$S" -o "$T/status" http://x/v1/status ||
	fail "smtd stopped answering: $(cat "$T/smtd.out")"
assert_contains "$T/status" '"state":"launching"' "the worker still waits for its orted"
# Killing the fake ends nothing.
kill -9 "$FAKE"
sleep 0.5
curl -s --unix-socket "$S" -o "$T/status" http://x/v1/status || fail "smtd stopped answering"
assert_contains "$T/status" '"state":"launching"' "the worker, after the fake's end"
# And the worker fails as it would without any orted, at --launch-timeout.
rc=0
wait $SPID || rc=$?
[ "$rc" != 0 ] || fail "the worker succeeded without orted"
assert_contains "$T/w/output/failure" "no orted started on algo-2 within 9.0 s (--launch-timeout)" \
	"the worker's failure without orted"
wait $FAKE_PARENT 2>/dev/null || true
echo "ok"
