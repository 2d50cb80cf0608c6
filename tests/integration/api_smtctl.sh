#!/bin/sh
# smtctl against tests/helpers/api_server: every command and exit code, no
# daemon, a dead socket, a server speaking garbage, dial-stdio, and a
# non-root client.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/integration/api_lib.sh"
smt_tmpdir
S="$T/smtd.sock"
unset SMTD_SOCKET

# run NAME ARGS...: smtctl's stdout in $T/NAME.1, stderr in $T/NAME.2, exit code in $rc
run() {
	n=$1
	shift
	rc=0
	"$SMTCTL" "$@" >"$T/$n.1" 2>"$T/$n.2" || rc=$?
}

# --- no daemon: 3, one line, fast ---
t0=$(date +%s%N)
run none --socket "$T/absent.sock" status
t1=$(date +%s%N)
assert_eq "$rc" 3 "no daemon"
assert_eq "$(cat "$T/none.2")" "smtctl: cannot reach smtd at $T/absent.sock: No such file or directory (is smtd running?)" "no daemon message"
[ $(( (t1 - t0) / 1000000 )) -lt 500 ] || fail "no daemon took $(( (t1 - t0) / 1000000 )) ms"
SMTD_SOCKET="$T/absent.sock" run env health
assert_eq "$rc" 3 "SMTD_SOCKET is used"
assert_contains "$T/env.2" "$T/absent.sock" "SMTD_SOCKET in the message"
run none dial-stdio --socket /x 2>/dev/null
assert_eq "$rc" 2 "dial-stdio takes no option"
run dialnone --socket "$T/absent.sock" dial-stdio </dev/null
assert_eq "$rc" 3 "dial-stdio without daemon"

# --- a dead socket file: 3 ---
api_start dead --socket "$T/dead.sock"
kill -KILL "$dead_pid"
wait "$dead_pid" 2>/dev/null || true
[ -S "$T/dead.sock" ] || fail "no dead socket file"
run dead --socket "$T/dead.sock" status
assert_eq "$rc" 3 "dead socket"
assert_eq "$(cat "$T/dead.2")" "smtctl: cannot reach smtd at $T/dead.sock: Connection refused (is smtd running?)" "dead socket message"

# --- a socket owned by a program speaking garbage: 3, a clear line ---
/usr/bin/python3 - "$T/garbage.sock" <<'PY' &
import os, socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1]); s.listen(8)
for _ in range(2):
    c, _ = s.accept()
    c.recv(4096)
    c.sendall(b"\x00\xffgarbage, not HTTP\r\n\r\n")
    c.close()
PY
garbage_pid=$!
i=0; while [ ! -S "$T/garbage.sock" ] && [ $i -lt 300 ]; do sleep 0.01; i=$((i+1)); done
run garbage --socket "$T/garbage.sock" status
assert_eq "$rc" 3 "garbage server"
assert_contains "$T/garbage.2" "smtctl: no valid answer from $T/garbage.sock (is it smtd's socket?): " "garbage message"
assert_eq "$(wc -l <"$T/garbage.2")" 1 "garbage: one line"
run garbage --socket "$T/garbage.sock" kill
assert_eq "$rc" 3 "garbage server, kill"
wait "$garbage_pid"

# --- usage: 2 ---
run u1
assert_eq "$rc" 2 "no command"
run u2 frobnicate
assert_eq "$rc" 2 "unknown command"
assert_contains "$T/u2.2" "smtctl: unknown command 'frobnicate'" "unknown command message"
run u3 --socket "$S" exec-orted
assert_eq "$rc" 2 "exec-orted without a command"
assert_contains "$T/u3.2" "smtctl: exec-orted needs the command to run" "exec-orted message"
run u4 --socket "$S" kill -s BOGUS
assert_eq "$rc" 2 "bad signal"
assert_contains "$T/u4.2" "smtctl: unknown signal 'BOGUS'" "bad signal message"
run u5 --socket "$S" logs -n x
assert_eq "$rc" 2 "bad -n"
run u6 --socket "$S" status extra
assert_eq "$rc" 2 "extra argument"
for bad in 0 61 x 5s; do
	run u8 --socket "$S" stacks --timeout "$bad"
	assert_eq "$rc" 2 "stacks --timeout $bad"
	assert_contains "$T/u8.2" "smtctl: --timeout needs seconds from 1 to 60, not '$bad'" "stacks --timeout $bad message"
done
run u7 --help
assert_eq "$rc" 0 "--help"
assert_contains "$T/u7.1" "dial-stdio" "help lists dial-stdio"

# --- a running job ---
api_start srv --socket "$S" --state running
run st --socket "$S" status
assert_eq "$rc" 0 "status running"
assert_contains "$T/st.1" "role       leader" "status role"
assert_contains "$T/st.1" "state      running" "status state"
assert_contains "$T/st.1" "hosts      2 (1 ready)" "status hosts"
assert_contains "$T/st.1" "  algo-2                   not ready" "status host readiness"
assert_contains "$T/st.1" "job        pid 4242, started 2024-05-01T12:00:00Z, 2 ranks" "status job"
assert_contains "$T/st.1" "  rank 1     algo-2             pid 977" "status ranks"
SMTD_SOCKET="$S" run stj status --json
assert_eq "$rc" 0 "status --json"
/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["state"]=="running", d' "$T/stj.1" ||
	fail "status --json is not the API's JSON"
run h --socket "$S" health
assert_eq "$rc:$(cat "$T/h.1")" "0:healthy" "health"
run r --socket "$S" ready
assert_eq "$rc:$(cat "$T/r.1")" "0:ready" "ready"
run k --socket "$S" kill
assert_eq "$rc:$(cat "$T/k.1")" "0:sent SIGTERM to the job" "kill"
run k2 --socket "$S" kill -s 9
assert_eq "$rc:$(cat "$T/k2.1")" "0:sent SIGKILL to the job" "kill -s 9"
run k3 --socket "$S" kill --signal sigusr2
assert_eq "$rc" 0 "kill --signal sigusr2"
assert_eq "$(grep '^kill' "$T/srv.out" | tr '\n' ' ')" "kill TERM kill KILL kill USR2 " "signals reaching the daemon"
run l --socket "$S" logs -n 2 --rank 1
assert_eq "$rc" 0 "logs"
assert_eq "$(cat "$T/l.1")" "[1,mpirank:1,algo-2]<stdout>: line 7 of rank 1
[1,mpirank:1,algo-2]<stderr>: line 9 of rank 1" "logs lines"
run l2 --socket "$S" logs
assert_eq "$(wc -l <"$T/l2.1")" 10 "logs default"
run v --socket "$S" version
assert_eq "$rc" 0 "version"
assert_contains "$T/v.1" "smtctl 0.1.0" "client version"
assert_contains "$T/v.1" "smtd 0.1.0" "daemon version"

# dial-stdio: a request in, the answer out; EOF on stdin half-closes.
printf 'GET /v1/status HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n' |
	timeout 10 "$SMTCTL" --socket "$S" dial-stdio >"$T/dial.1" 2>"$T/dial.2" || fail "dial-stdio exited $?"
assert_contains "$T/dial.1" '"state":"running"' "dial-stdio status answer"
assert_contains "$T/dial.1" '{"status":"ok"}' "dial-stdio second answer"
assert_eq "$(grep -c '^HTTP/1.1 200 OK' "$T/dial.1")" 2 "dial-stdio answers"

# --- a non-root client: served for status, refused for kill ---
NB_SMTCTL=$(nobody_copy "$SMTCTL") || exit 1
rc=0; as_nobody "$NB_SMTCTL" --socket "$S" status >"$T/nb.1" 2>"$T/nb.2" || rc=$?
assert_eq "$rc" 4 "nobody, socket 0660 root:root"
assert_contains "$T/nb.2" "smtctl: permission denied on $S: Permission denied" "nobody EACCES message"
api_stop srv
api_start srv --socket "$S" --group nogroup --state running
rc=0; as_nobody "$NB_SMTCTL" --socket "$S" status >"$T/nb.1" 2>"$T/nb.2" || rc=$?
assert_eq "$rc" 0 "nobody in the socket group: status"
assert_contains "$T/nb.1" "state      running" "nobody's status"
rc=0; as_nobody "$NB_SMTCTL" --socket "$S" kill >"$T/nb.1" 2>"$T/nb.2" || rc=$?
assert_eq "$rc" 4 "nobody: kill refused"
assert_eq "$(cat "$T/nb.2")" "smtctl: permission denied: permission denied: uid 65534 may not change the job (only root or uid 0)" "nobody kill message"
assert_not_contains "$T/srv.out" "kill" "nobody's kill did not reach the daemon"
api_stop srv

# --- failed, unhealthy, not ready, no job: 1 ---
api_start srv --socket "$S" --state failed --unhealthy --not-ready --no-job
run f --socket "$S" status
assert_eq "$rc" 1 "status failed"
assert_contains "$T/f.1" "failure    rank 1 on algo-2 exited with code 1: ValueError: shapes do not match" "failure summary"
run f2 --socket "$S" health
assert_eq "$rc:$(cat "$T/f2.1")" "1:unhealthy" "unhealthy"
run f3 --socket "$S" ready
assert_eq "$rc:$(cat "$T/f3.1")" "1:not ready" "not ready"
run f4 --socket "$S" kill
assert_eq "$rc" 1 "kill without a job"
assert_eq "$(cat "$T/f4.2")" "smtctl: there is no job to signal" "no job message"
api_stop srv
