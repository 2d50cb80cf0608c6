#!/bin/sh
# 200 clients at once get an answer or a clean close; a client leaving in
# the middle of a large answer disturbs nobody; a stalled client is dropped.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/integration/api_lib.sh"
smt_tmpdir
S="$T/smtd.sock"
api_start srv --socket "$S" --log-lines 100000 --idle-ms 2000

# 200 concurrent connections: each is answered 200 or refused 503, nothing
# hangs; a refused client tries again (at most 100 times, 50 ms apart)
# and every one of the 200 is answered in the end.
i=0
while [ $i -lt 200 ]; do
	(
		n=0
		while :; do
			code=$(curl -sS --max-time 20 --unix-socket "$S" -o /dev/null -w '%{http_code}' \
				http://localhost/v1/status 2>&1)
			echo "$code" >>"$T/c.$i"
			[ "$code" = 503 ] && [ $n -lt 100 ] || break
			n=$((n + 1))
			sleep 0.05
		done
	) &
	i=$((i + 1))
done
wait_rc=0
for p in $(jobs -p); do
	[ "$p" = "$srv_pid" ] && continue
	wait "$p" || wait_rc=1
done
cat "$T"/c.* | sort | uniq -c >"$T/codes"
other=$(cat "$T"/c.* | grep -vc '^\(200\|503\)$' || true)
[ "$other" -eq 0 ] || { cat "$T/codes" >&2; fail "200 clients: $other answers neither 200 nor 503"; }
ok=$(tail -qn1 "$T"/c.* | grep -c '^200$' || true)
busy=$(cat "$T"/c.* | grep -c '^503$' || true)
echo "200 clients: $ok answered, after $busy refusals (503) in all"
[ "$ok" -eq 200 ] || { cat "$T/codes" >&2; fail "only $ok of 200 clients answered (retries allowed)"; }

# Clients that leave in the middle of a 5 MB answer.
i=0
while [ $i -lt 5 ]; do
	curl -sS -N --unix-socket "$S" 'http://localhost/v1/logs?tail=100000' 2>/dev/null | head -c 1000 >/dev/null
	i=$((i + 1))
done
code=$(curl -sS --unix-socket "$S" -o "$T/body" -w '%{http_code}' 'http://localhost/v1/logs?tail=100000')
assert_eq "$code" 200 "full answer after clients left"
assert_contains "$T/body" '"line 99999 of rank 1"' "answer complete"

# A stalled client is dropped after the idle timeout; others go on.
t0=$(date +%s%N)
/usr/bin/python3 - "$S" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
s.sendall(b"GET /v1/status HTTP/1.1\r\n")
s.settimeout(10)
assert s.recv(100) == b"", "expected EOF"
PY
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
[ $ms -ge 1800 ] && [ $ms -lt 5000 ] || fail "stalled client dropped after $ms ms"
assert_contains "$T/srv.err" "control API: dropping a client that completed no request in 2000 ms" "timeout logged"
code=$(curl -sS --unix-socket "$S" -o /dev/null -w '%{http_code}' http://localhost/healthz)
assert_eq "$code" 200 "server still answers"
api_stop srv
