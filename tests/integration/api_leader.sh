#!/bin/sh
# Who may speak for the leader, against the real daemon:
# "X-Smtd-Leader" counts only on the Unix socket from uid 0 or smtd's own,
# and the TCP listener (--health-listen) has its own, smaller connection
# limit.
#  1. 256 TCP connections sending the header, all from 127.0.0.1: refused
#     beyond three quarters of the TCP limit (one address holds 12 of 16),
#     the others dropped after the idle timeout (10 s) like any client;
#     root's `smtctl status` and `smtctl kill` still work meanwhile.
#  2. A worker whose leader is gone is not kept alive by a TCP client that
#     sends the header every 1.5 s: with --peer-timeout 3 it ends with
#     LostLeader (exit 3), as it would with no client at all.
. "$top_srcdir/tests/lib.sh"
smt_tmpdir
S="$T/smtd.sock"
port=$((20000 + $$ % 20000))

# ---- 1: a flood of TCP connections claiming to be the leader ----
mkdir -p "$T/a"
"$SMTD" --root "$T/a" --socket "$S" --sshd never --health-listen "127.0.0.1:$port" -- \
	/bin/sh -c 'while [ ! -e "$0" ]; do sleep 0.05; done' "$T/a/stop" >"$T/a.out" 2>&1 &
SPID=$!
trap 'kill -KILL $SPID 2>/dev/null; touch "$T/a/stop"; rm -rf "$T"' EXIT
wait_until 20 '"$SMTCTL" --socket "$S" ready >/dev/null 2>&1' 'the job did not start: $(cat "$T/a.out")'

cat >"$T/flood.py" <<'PY'
import socket, sys, time
port, n = int(sys.argv[1]), int(sys.argv[2])
socks = []
for _ in range(n):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET /v1/status HTTP/1.1\r\nHost: x\r\nX-Smtd-Leader: 1\r\n\r\n")
    socks.append(s)
print("connected", flush=True)
# Wait for the end of every connection, reading what comes.
start = time.time()
refused = answered = 0
ends = []
for s in socks:
    s.settimeout(max(0.1, 30 - (time.time() - start)))
    data = b""
    try:
        while True:
            d = s.recv(65536)
            if not d:
                break
            data += d
    except socket.timeout:
        print("still open after 30 s", flush=True)
        sys.exit(1)
    except ConnectionResetError:
        # Refused at once, before the request was read: a reset may
        # overtake the 503.
        data = data or b"HTTP/1.1 503 (reset)"
    ends.append(time.time() - start)
    if data.startswith(b"HTTP/1.1 503"):
        refused += 1
    elif data.startswith(b"HTTP/1.1 200"):
        answered += 1
print("refused %d answered %d last-end %.1f" % (refused, answered, max(ends)), flush=True)
PY
python3 "$T/flood.py" $port 256 >"$T/flood" 2>&1 &
FLOOD=$!
wait_until 20 'grep -q connected "$T/flood"' 'the flood did not connect: $(cat "$T/flood")'
# Root on the control socket is served while the flood holds its places.
rc=0; "$SMTCTL" --socket "$S" status >"$T/status" 2>&1 || rc=$?
assert_eq "$rc" 0 "smtctl status during the flood"
assert_contains "$T/status" "running" "the status during the flood"
wait $FLOOD || fail "TCP clients claiming to be the leader were never dropped: $(cat "$T/flood")"
echo "flood: $(cat "$T/flood")"
grep -q '^refused 244 answered 12 ' "$T/flood" || fail "TCP limit: $(cat "$T/flood")"
last=$(sed -n 's/.*last-end \([0-9]*\).*/\1/p' "$T/flood")
[ "$last" -ge 9 ] && [ "$last" -le 15 ] || fail "the accepted TCP clients were dropped after $last s, not the idle timeout"
rc=0; "$SMTCTL" --socket "$S" kill -s TERM >"$T/kill" 2>&1 || rc=$?
assert_eq "$rc" 0 "smtctl kill after the flood: $(cat "$T/kill")"
rc=0; wait $SPID || rc=$?
# As if smtd had received SIGTERM (smtd(8) SIGNALS): the job is stopped.
assert_eq "$rc" 143 "smtd's exit code after smtctl kill -s TERM"
assert_contains "$T/a/output/failure" "Stopped: " "the failure after smtctl kill"
assert_contains "$T/a/output/failure" "SIGTERM" "the failure after smtctl kill"

# ---- 2: a TCP client keeping a leaderless worker alive ----
mkdir -p "$T/w/input/config"
cat >"$T/w/input/config/resourceconfig.json" <<'JSON'
{"current_host": "algo-2", "hosts": ["algo-1", "algo-2"]}
JSON
echo '{"sagemaker_mpi_enabled": "true"}' >"$T/w/input/config/hyperparameters.json"
"$SMTD" --root "$T/w" --socket "$S" --sshd never --peer-timeout 3 \
	--health-listen "127.0.0.1:$port" -- /bin/true >"$T/w.out" 2>&1 &
SPID=$!
trap 'kill -KILL $SPID $KEEPER 2>/dev/null; rm -rf "$T"' EXIT
KEEPER=
wait_until 20 'curl -s --unix-socket "$S" http://localhost/v1/status 2>/dev/null | grep -q waiting-for-leader' \
	'the worker did not start: $(cat "$T/w.out")'
# The leader, as root on the socket: its readiness probe and the launch.
code=$(curl -s --unix-socket "$S" -H 'X-Smtd-Leader: 1' -o /dev/null -w '%{http_code}' http://localhost/v1/status)
assert_eq "$code" 200 "the leader's probe"
code=$(curl -s --unix-socket "$S" -H 'X-Smtd-Leader: 1' -X POST -o /dev/null -w '%{http_code}' http://localhost/v1/launch)
assert_eq "$code" 200 "the leader's launch"
t0=$(date +%s%N)
# Then the leader is gone; a TCP client sends the header every 1.5 s.
(
	while :; do
		curl -s -H 'X-Smtd-Leader: 1' -o /dev/null "http://127.0.0.1:$port/v1/status"
		sleep 1.5
	done
) &
KEEPER=$!
# (Well before the worker's look for an orted 5 s after the launch.)
i=0
while kill -0 $SPID 2>/dev/null; do
	i=$((i + 1))
	[ $i -lt 90 ] || fail "a TCP client sending X-Smtd-Leader kept the worker alive for 4.5 s"
	sleep 0.05
done
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
kill $KEEPER 2>/dev/null
rc=0; wait $SPID || rc=$?
assert_eq "$rc" 3 "the worker's exit code"
assert_eq "$(head -1 "$T/w/output/failure")" \
	"LostLeader: the leader algo-1 was lost: nothing was heard from it on algo-2 for 3.0 s (--peer-timeout)" \
	"the worker's failure file"
[ $ms -ge 2900 ] || fail "the worker ended $ms ms after the leader's launch"
echo "ok: the leaderless worker ended after $ms ms"
