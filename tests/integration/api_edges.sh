#!/bin/sh
# The real daemon at the edges of its control API:
#  item 5: a long poll with "Connection: close" or HTTP/1.0 gets the status
#          (at its timeout, or when the state changes), not an empty reply;
#  item 6: 2,000 headers of "X-A: b" (16 KB) get 431 - every header byte
#          counts - and the daemon goes on;
#  item 7: idle clients - keep-alive after an answer, connected and silent,
#          half-way through a request, over TCP - do not delay the daemon's
#          exit: it ends within a second of its job.
. "$top_srcdir/tests/lib.sh"
smt_tmpdir
S="$T/smtd.sock"
port=$((20000 + ($$ + 7) % 20000))

mkdir -p "$T/r"
"$SMTD" --root "$T/r" --socket "$S" --sshd never --health-listen "127.0.0.1:$port" -- \
	/bin/sh -c 'while [ ! -e "$0" ]; do sleep 0.01; done' "$T/r/stop" >"$T/out" 2>"$T/err" &
SPID=$!
trap 'kill -KILL $SPID $IDLE 2>/dev/null; rm -rf "$T"' EXIT
IDLE=
wait_until 20 'api_get /v1/status >/dev/null 2>&1 && grep -q "\"state\":\"running\"" "$T/body"' \
	'the job did not start: $(cat "$T/err")'
gen=$(sed -n 's/.*"generation":\([0-9]*\).*/\1/p' "$T/body")

# ---- item 5: long polls that close the connection ----
for how in "-H Connection:close" "-0"; do
	# shellcheck disable=SC2086
	code=$(api_get "/v1/status?wait=$gen&timeout=300" $how) || true
	assert_eq "$code" 200 "a long poll with $how"
	assert_contains "$T/body" '"state":"running"' "the status answering a long poll with $how"
done
# Over TCP too, and answered by a change rather than the timeout.
curl -s -0 -o "$T/held" "http://127.0.0.1:$port/v1/status?wait=$gen&timeout=30000" &
HELD=$!

# ---- item 6: the header limit counts every byte ----
hdrs=$(python3 -c 'print(" ".join(["-H X-A:b"] * 2000))')
# shellcheck disable=SC2086
code=$(api_get /healthz $hdrs) || true
assert_eq "$code" 431 "2,000 headers of X-A: b"
assert_eq "$(cat "$T/body")" '{"error":"headers too large"}' "the answer to 2,000 headers"
assert_eq "$(api_get /healthz)" 200 "healthz after the 431"

# ---- item 7: idle clients at the end ----
cat >"$T/idle.py" <<'PY'
import socket, sys, time
path, port = sys.argv[1], int(sys.argv[2])
def unix():
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    return s
keep = unix()
keep.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
assert keep.recv(4096).startswith(b"HTTP/1.1 200")
silent = unix()
half = unix()
half.sendall(b"GET /v1/sta")
tcp = socket.create_connection(("127.0.0.1", port))
tcp.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
assert tcp.recv(4096).startswith(b"HTTP/1.1 200")
print("idle", flush=True)
for s in (keep, silent, half, tcp):
    s.settimeout(10)
    try:
        while s.recv(4096):
            pass
    except ConnectionResetError:
        pass
print("closed by the daemon", flush=True)
PY
python3 "$T/idle.py" "$S" $port >"$T/idle" 2>&1 &
IDLE=$!
wait_until 10 'grep -q idle "$T/idle"' 'the idle clients did not connect: $(cat "$T/idle")'
t0=$(date +%s%N)
touch "$T/r/stop"
wait_until 10 '! kill -0 $SPID 2>/dev/null' 'smtd did not end within 10 s of its job'
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
rc=0; wait $SPID || rc=$?
assert_eq "$rc" 0 "smtd's exit code"
echo "smtd ended $ms ms after its job was told to end, with 4 idle clients"
[ $ms -lt 1000 ] || fail "idle clients delayed smtd's exit: $ms ms"
wait $IDLE || fail "the idle clients: $(cat "$T/idle")"
assert_contains "$T/idle" "closed by the daemon" "the idle clients"
wait $HELD || true
# Answered by a change (the rank's end or the success), not the timeout.
held_gen=$(sed -n 's/.*"generation":\([0-9]*\).*/\1/p' "$T/held")
[ -n "$held_gen" ] && [ "$held_gen" -gt "$gen" ] ||
	fail "a held HTTP/1.0 long poll over TCP was not answered by a change: $(cat "$T/held")"
echo ok
