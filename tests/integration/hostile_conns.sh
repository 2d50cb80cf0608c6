#!/bin/sh
# Connection places (daemon/api.c, smtd(8) SECURITY):
#  1. uid 65534, a member of the socket's group (read-only), holds 256 long
#     polls on the control socket: it gets 64 (a quarter), the rest a 503,
#     and root's smtctl still answers (it was refused before: 256 places,
#     all the group member's).
#  2. 16 long polls over TCP from 127.0.0.1 hold 12 places (three quarters):
#     a liveness probe from 127.0.0.2 still gets /healthz (it was refused).
#  3. Over TCP only the probes' requests are served (an allowlist): GET
#     /v1/stacks (source lines) and /v1/lines get 403 saying so (stacks
#     were served before).
# The job (sleep) runs on untouched and ends as it would have.
. "$top_srcdir/tests/lib.sh"
smt_tmpdir
PY=/usr/bin/python3
[ "$(id -u)" = 0 ] || skip "needs root"
[ -x $PY ] || skip "/usr/bin/python3 is missing"
chmod 755 "$T"
S="$T/smtd.sock"
PORT=$((20000 + $$ % 20000))
mkdir -p "$T/r"

"$SMTD" --root "$T/r" --socket "$S" --socket-group "$(getent group 65534 | cut -d: -f1)" \
	--health-listen "127.0.0.1:$PORT" --sshd never -- sleep 60 >"$T/smtd.out" 2>&1 &
SPID=$!
H1= H2=
trap 'kill $H1 $H2 2>/dev/null; kill -TERM $SPID 2>/dev/null; wait $SPID 2>/dev/null; rm -rf "$T"' EXIT
wait_until 20 '"$SMTCTL" --socket "$S" status >/dev/null 2>&1' 'smtd did not answer: $(cat "$T/smtd.out")'

# hold.py KIND ADDR N READY GO: N long polls on the socket (KIND unix) or
# over TCP (KIND tcp, ADDR host:port, from 127.0.0.1); prints how many were
# refused with a 503 into READY, then holds them until GO exists.
cat >"$T/hold.py" <<'PY'
import json, os, socket, sys, time
kind, addr, n, ready, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
def conn():
    if kind == "unix":
        s = socket.socket(socket.AF_UNIX)
        s.connect(addr)
    else:
        h, p = addr.rsplit(":", 1)
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        s.connect((h, int(p)))
    return s
s = conn()
s.sendall(b"GET /v1/status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
data = b""
while True:
    d = s.recv(65536)
    if not d:
        break
    data += d
gen = json.loads(data.partition(b"\r\n\r\n")[2])["generation"]
s.close()
time.sleep(0.5)  # its place is free again before the count starts
held = []
for i in range(n):
    s = conn()
    s.sendall(b"GET /v1/status?wait=%d&timeout=60000 HTTP/1.1\r\nHost: x\r\n\r\n" % gen)
    held.append(s)
time.sleep(1.5)
refused = 0
for s in held:
    s.setblocking(False)
    try:
        if b" 503 " in s.recv(200):
            refused += 1
    except BlockingIOError:
        pass
with open(ready + ".tmp", "w") as f:
    f.write(str(refused))
os.rename(ready + ".tmp", ready)
# Until told, or until the test's directory is gone (it failed).
while not os.path.exists(go) and os.path.isdir(os.path.dirname(go)):
    time.sleep(0.05)
PY
chmod 644 "$T/hold.py"
mkdir "$T/nb" && chown 65534 "$T/nb"

# --- 1. the socket: uid 65534 of the socket's group ----------------------
as_nobody $PY "$T/hold.py" unix "$S" 256 "$T/nb/unix.ready" "$T/nb/go" &
H1=$!
wait_for_file "$T/nb/unix.ready" 60 || fail "the group member's connections never settled"
assert_eq "$(cat "$T/nb/unix.ready")" 192 "the group member's connections refused"
"$SMTCTL" --socket "$S" status >"$T/status" 2>&1 || fail "root's smtctl refused: $(cat "$T/status")"
assert_contains "$T/smtd.out" "control API: refusing connections on the socket from uid 65534: 256 places, some kept for root and for other users" \
	"the refusal, logged"

# --- 2. TCP: one address, then another ------------------------------------
$PY "$T/hold.py" tcp "127.0.0.1:$PORT" 16 "$T/nb/tcp.ready" "$T/nb/go" &
H2=$!
wait_for_file "$T/nb/tcp.ready" 60 || fail "the TCP connections never settled"
assert_eq "$(cat "$T/nb/tcp.ready")" 4 "TCP connections from one address refused"
curl -s --max-time 5 --interface 127.0.0.2 "http://127.0.0.1:$PORT/healthz" >"$T/probe" ||
	fail "a probe from 127.0.0.2 got nothing"
assert_contains "$T/probe" '"ok"' "a probe from another address"

# --- 3. TCP serves the probes' requests only: no stacks, no lines --------
for path in /v1/stacks "/v1/lines?from=0"; do
	code=$(curl -s --max-time 5 --interface 127.0.0.3 -o "$T/tcp.body" -w '%{http_code}' \
		"http://127.0.0.1:$PORT$path")
	assert_eq "$code" 403 "GET $path over TCP"
	assert_contains "$T/tcp.body" "${path%%\?*} is not served over TCP (only /healthz, /readyz, /v1/status, /v1/logs and /metrics)" \
		"why GET $path is refused over TCP"
done

touch "$T/nb/go"
wait $H1 $H2
"$SMTCTL" --socket "$S" status >"$T/status" 2>&1 || fail "smtctl after: $(cat "$T/status")"
echo "ok"
