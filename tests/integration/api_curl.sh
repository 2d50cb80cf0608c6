#!/bin/sh
# The control API through the real curl binary: every endpoint, every bad
# request, keep-alive, the TCP listener and promtool on /metrics.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/integration/api_lib.sh"
smt_tmpdir
S="$T/run/smtd/smtd.sock"
api_start srv --socket "$S" --tcp 127.0.0.1:0 --state running

# req METHOD PATH [curl args...]: status code in $code, body in $T/body, headers in $T/hdr
req() {
	m=$1 p=$2
	shift 2
	code=$(curl -sS --unix-socket "$S" -X "$m" -o "$T/body" -D "$T/hdr" -w '%{http_code}' "$@" "http://localhost$p")
}

req GET /v1/status
assert_eq "$code" 200 "GET /v1/status"
assert_contains "$T/hdr" "Content-Type: application/json" "status content type"
assert_contains "$T/body" '"role":"leader","state":"running","current_host":"algo-1"' "status body"
len=$(wc -c <"$T/body")
assert_contains "$T/hdr" "Content-Length: $len" "status length"

req GET /healthz
assert_eq "$code" 200 "healthz"
assert_eq "$(cat "$T/body")" '{"status":"ok"}' "healthz body"
req GET /readyz
assert_eq "$code" 200 "readyz"

req POST /v1/kill -d '{"signal":"USR1"}'
assert_eq "$code" 202 "kill USR1"
assert_eq "$(cat "$T/body")" '{"signal":"USR1"}' "kill answer"
req POST /v1/kill -d ''
assert_eq "$code" 202 "kill default"
req POST /v1/kill -d '{"signal":"NOPE"}'
assert_eq "$code" 400 "bad signal"
assert_contains "$T/body" 'a signal name or a number from 1 to 64' "bad signal message"
assert_eq "$(grep -c '^kill' "$T/srv.out")" 2 "kills reaching the daemon"
assert_contains "$T/srv.out" "kill USR1" "USR1 forwarded"
assert_contains "$T/srv.out" "kill TERM" "default TERM"

req POST /v1/result -H 'Content-Type: application/json' -d '{"exit_code":0}'
assert_eq "$code" 200 "POST /v1/result"
# With the client's own PID (SO_PEERCRED), which the daemon checks announcements against.
grep -qE '^post /v1/result \{"exit_code":0\} pid [1-9][0-9]*$' "$T/srv.out" ||
	fail "the result did not reach the daemon with the client's PID: $(cat "$T/srv.out")"

req GET '/v1/logs?tail=3&rank=1'
assert_eq "$code" 200 "logs"
assert_contains "$T/body" '"text":"line 9 of rank 1"' "last line of rank 1"
assert_not_contains "$T/body" 'line 3 of rank 1' "tail=3"
req GET '/v1/logs?tail=x'
assert_eq "$code" 400 "logs bad tail"

req GET /nope
assert_eq "$code" 404 "unknown path"
req DELETE /v1/status
assert_eq "$code" 405 "wrong method"
assert_contains "$T/hdr" "Allow: GET, HEAD" "Allow header"

big=$(head -c 9000 /dev/zero | tr '\0' a)
req GET /v1/status -H "X-Big: $big"
assert_eq "$code" 431 "headers over 8 KiB"
head -c 70000 /dev/zero | tr '\0' ' ' >"$T/bigbody"
req POST /v1/kill --data-binary @"$T/bigbody"
assert_eq "$code" 413 "body over 64 KiB"

# Malformed: 400 and the connection closed.
code=$(curl -sS --unix-socket "$S" -o "$T/body" -w '%{http_code}' -X 'BAD METHOD' http://localhost/v1/status 2>/dev/null || true)
assert_eq "$code" 400 "malformed request"
assert_contains "$T/body" '"error":"malformed request' "malformed message"

# Keep-alive: two requests, one connection.
curl -sS -v --unix-socket "$S" http://localhost/healthz http://localhost/readyz >"$T/ka" 2>&1
assert_contains "$T/ka" "Re-using existing connection" "keep-alive"
assert_contains "$T/ka" '{"status":"ready"}' "second answer"

# /metrics is valid Prometheus text.
req GET /metrics
assert_eq "$code" 200 "metrics"
assert_contains "$T/hdr" "Content-Type: text/plain; version=0.0.4" "metrics content type"
assert_contains "$T/body" 'smtd_api_requests_total ' "api metrics"
if command -v promtool >/dev/null; then
	promtool check metrics <"$T/body" >"$T/promtool" 2>&1 || { cat "$T/promtool" >&2; fail "promtool check metrics"; }
else
	skip_part "the metrics format" "promtool (prometheus)"
fi

# The TCP listener serves reads only.
port=$(sed -n 's/^tcp-port //p' "$T/srv.out")
code=$(curl -sS -o "$T/body" -w '%{http_code}' "http://127.0.0.1:$port/v1/status")
assert_eq "$code" 200 "TCP status"
code=$(curl -sS -o "$T/body" -w '%{http_code}' "http://127.0.0.1:$port/readyz")
assert_eq "$code" 200 "TCP readyz"
code=$(curl -sS -o "$T/body" -w '%{http_code}' -d '{}' "http://127.0.0.1:$port/v1/kill")
assert_eq "$code" 403 "TCP kill"
assert_contains "$T/body" 'read-only' "TCP kill message"
assert_eq "$(grep -c '^kill' "$T/srv.out")" 2 "no kill through TCP"

api_stop srv
[ ! -e "$S" ] || fail "socket file left after SIGTERM"
