#!/bin/sh
# POST /v1/orted names the process smtd will own and
# signal with the whole job on this host, so it takes only a PID in range,
# announced by that process itself (SO_PEERCRED), which is an Open MPI
# daemon started through sshd.  Every refusal leaves the worker waiting,
# with nothing adopted or signalled.
#
# Run in a PID namespace with its own /proc, so that the announcer's
# ancestors are known: no sshd above it, whatever session runs the tests.
. "$top_srcdir/tests/lib.sh"
if [ "${SMT_ORTED_NS:-}" != 1 ]; then
	[ "$(id -u)" = 0 ] || skip "needs root for a PID namespace"
	unshare --pid --fork --mount-proc true 2>/dev/null || skip "no PID namespaces here"
	SMT_ORTED_NS=1 exec unshare --pid --fork --mount-proc sh "$0"
fi
smt_tmpdir
S="$T/smtd.sock"
# The announcer must not look like an ssh session, whatever runs the tests.
unset SSH_CONNECTION SSH_CLIENT SSH_TTY
PY=/usr/bin/python3
[ -x $PY ] || skip "/usr/bin/python3 is missing"

# announce COMM PID: a client named COMM posts {"pid": PID} (PID "self":
# its own) and prints the HTTP status and body.
cat >"$T/announce.py" <<'PY'
import ctypes, json, os, socket, sys
sock, comm, pid = sys.argv[1], sys.argv[2], sys.argv[3]
ctypes.CDLL(None).prctl(15, comm.encode(), 0, 0, 0)  # PR_SET_NAME
body = ('{"pid": %s}' % (os.getpid() if pid == "self" else pid)).encode()
s = socket.socket(socket.AF_UNIX)
s.connect(sock)
s.sendall(b"POST /v1/orted HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
          b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
data = b""
while True:
    chunk = s.recv(65536)
    if not chunk:
        break
    data += chunk
head, _, rest = data.partition(b"\r\n\r\n")
print(head.split(b" ")[1].decode(), json.loads(rest).get("error", ""))
PY

mkdir -p "$T/w/input/config"
echo '{"current_host": "algo-2", "hosts": ["algo-1", "algo-2"]}' \
	>"$T/w/input/config/resourceconfig.json"
echo '{"sagemaker_mpi_enabled": "true"}' >"$T/w/input/config/hyperparameters.json"
"$SMTD" --root "$T/w" --socket "$S" --sshd never --wait-timeout 60 -- /bin/true \
	>"$T/smtd.out" 2>&1 &
SPID=$!
wait_until 20 'curl -s --unix-socket "$S" -o "$T/status" http://x/v1/status 2>/dev/null &&
	grep -q "\"state\":\"waiting-for-leader\"" "$T/status"' 'the worker never waited: $(cat "$T/smtd.out")'
sleep 300 &
VICTIM=$!

check() { # check COMM PID EXPECTED
	got=$($PY "$T/announce.py" "$S" "$1" "$2") || fail "announce $1 $2 failed"
	assert_eq "$got" "$3" "announcing pid $2 as $1"
}
check orted $((4294967296 + VICTIM)) "400 pid must be a process ID of this host"
check orted 4294967295 "400 pid must be a process ID of this host"
check orted -1 "400 pid must be a process ID of this host"
check orted 1 "400 pid must be a process ID of this host"
check orted '"12"' "400 pid must be a process ID of this host"
check orted 4194305 "400 pid must be a process ID of this host"
got=$($PY "$T/announce.py" "$S" orted $VICTIM)
case $got in
"403 pid $VICTIM is not the announcing process ("*"): only orted's own smtctl exec-orted may announce it") ;;
*) fail "another process's PID: $got" ;;
esac
got=$($PY "$T/announce.py" "$S" python3 self)
case $got in
"403 process "*" is python3, not an Open MPI daemon") ;;
*) fail "a process that is not orted: $got" ;;
esac
got=$($PY "$T/announce.py" "$S" orted self)
case $got in
"403 process "*" was not started through this host's sshd") ;;
*) fail "an orted not under sshd: $got" ;;
esac

# Nothing was taken: the worker still waits, the victim still runs.
kill -0 $VICTIM || fail "the announced PID was signalled"
curl -s --unix-socket "$S" -o "$T/status" http://x/v1/status || fail "smtd stopped answering"
assert_contains "$T/status" '"state":"waiting-for-leader"' "the worker still waits"
assert_eq "$(grep -c 'refusing an orted announcement' "$T/smtd.out")" 3 "three refusals logged"
kill $VICTIM
kill -TERM $SPID
wait $SPID || true

# A worker whose preflight failed takes no orted, even one that passes
# every check above (root, named orted, sshd's SSH_CONNECTION): the leader
# never launches there, so whatever announces itself is not the job's.
# The control: the same announcement on a worker whose checks passed is
# taken.
# worker NAME SMTD-OPTIONS...: a worker of its own in $T/NAME, waiting.
worker() {
	name=$1
	shift
	mkdir -p "$T/$name/input/config"
	cp "$T/w/input/config/"*.json "$T/$name/input/config/"
	"$SMTD" --root "$T/$name" --socket "$T/$name.sock" --sshd never --wait-timeout 60 "$@" \
		-- /bin/true >"$T/$name.out" 2>&1 &
	WPID=$!
	wait_until 20 'grep -q "pre-launch phase on algo-2: \(passed\|failed\)" "$T/$name.out"' \
		'$name: the pre-launch phase never ended: $(cat "$T/$name.out")'
}
worker bad --preflight-command /bin/false
got=$(SSH_CONNECTION="10.0.0.1 22 10.0.0.2 22" $PY "$T/announce.py" "$T/bad.sock" orted self)
assert_eq "$got" "409 the pre-launch phase of this host has not passed" "an orted on a host that failed its preflight"
assert_contains "$T/bad.out" "refusing an orted announcement: the pre-launch phase of this host has not passed" "the refusal logged"
assert_not_contains "$T/bad.out" "watching orted" "an orted adopted"
kill -TERM $WPID
wait $WPID || true
worker good
got=$(SSH_CONNECTION="10.0.0.1 22 10.0.0.2 22" $PY "$T/announce.py" "$T/good.sock" orted self)
assert_eq "$got" "200 " "the same orted on a host whose checks passed"
kill -TERM $WPID
wait $WPID || true
echo "ok: out-of-range, foreign, non-orted and sshd-less announcements refused, and any on a host that failed its preflight"
