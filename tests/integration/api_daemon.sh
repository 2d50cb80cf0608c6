#!/bin/sh
# The control API of the real daemon, with the real curl and smtctl, in
# every state a test can reach: waiting, running, succeeded, failed,
# stopped (the final states seen through a held long poll, answered as the
# daemon ends); kill from root and refused to another user; the read-only
# TCP listener for probes; /metrics checked by promtool.
. "$top_srcdir/tests/lib.sh"
smt_tmpdir
chmod 755 "$T"
SIGRANK="$top_builddir/tests/helpers/sigrank"
S="$T/smtd.sock"
wait_state() { # wait_state STATE
	state=$1
	wait_until 20 'api_get /v1/status >/dev/null 2>&1 && grep -q "\"state\":\"$state\"" "$T/body"' \
		'state $state never reached: $(cat "$T/body" 2>/dev/null)'
}
# hold NAME: long polls in the background, each on the generation the last
# one answered, as a client that follows the job does (a rank's end is a
# change too); the last answer before a final state or the daemon's exit
# is kept in NAME.held.
hold() {
	gen=$(api_get /v1/status >/dev/null; sed -n 's/.*"generation":\([0-9]*\).*/\1/p' "$T/body")
	(
		while curl -s --unix-socket "$S" -o "$T/$1.next" \
			"http://localhost/v1/status?wait=$gen&timeout=30000" && [ -s "$T/$1.next" ]; do
			mv "$T/$1.next" "$T/$1.held"
			grep -qE '"state":"(succeeded|failed|stopped)"' "$T/$1.held" && break
			gen=$(sed -n 's/.*"generation":\([0-9]*\).*/\1/p' "$T/$1.held")
		done
	) &
	HELD=$!
	# Held once the daemon counts two connections: the poll and ours.
	wait_until 4 "api_get /metrics >/dev/null && grep -q '^smtd_api_connections 2$' \"\$T/body\"" \
		'the long poll was not held'
}

# ---- waiting: a worker whose leader never comes ----
mkdir -p "$T/w/input/config"
cat >"$T/w/input/config/resourceconfig.json" <<'JSON'
{"current_host": "algo-2", "hosts": ["algo-1", "algo-2"]}
JSON
echo '{"sagemaker_mpi_enabled": "true"}' >"$T/w/input/config/hyperparameters.json"
port=$((20000 + $$ % 20000))
"$SMTD" --root "$T/w" --socket "$S" --sshd never --wait-timeout 60 \
	--health-listen "127.0.0.1:$port" -- /bin/true >"$T/w.out" 2>&1 &
SPID=$!
wait_state waiting-for-leader
assert_contains "$T/body" '"role":"worker"' "a worker"
assert_contains "$T/body" '"leader":"algo-1"' "its leader"
assert_eq "$(api_get /readyz)" 503 "readyz while waiting"
# ?brief=1, as the leader asks: the host list as its digest, the one the
# leader computes (FNV-1a, 64 bits, over each name and its NUL), not the list.
assert_eq "$(api_get '/v1/status?brief=1')" 200 "the brief status"
want=$(/usr/bin/python3 -c '
h = 0xcbf29ce484222325
for name in ("algo-1", "algo-2"):
    for b in name.encode() + b"\0":
        h = ((h ^ b) * 0x100000001b3) % (1 << 64)
print("%016x" % h)')
assert_contains "$T/body" "\"hosts_digest\":\"$want\"" "the brief status's digest"
assert_not_contains "$T/body" '"hosts":' "the brief status"
rc=0; "$SMTCTL" --socket "$S" stacks >"$T/stacks.out" 2>&1 || rc=$?
assert_eq "$rc" 1 "smtctl stacks with no job"
assert_eq "$(cat "$T/stacks.out")" "smtctl: smtd answered 409: no job runs here" "smtctl stacks with no job: smtd's answer"
assert_eq "$(api_get /healthz)" 200 "healthz while waiting"
assert_eq "$(api_get '/v1/logs?tail=5')" 200 "logs while waiting"
assert_contains "$T/body" '"lines":[]' "no lines yet"
assert_eq "$(api_get /metrics)" 200 "metrics while waiting"
assert_contains "$T/body" 'smtd_state{state="waiting-for-leader"} 1' "the state in the metrics"
if command -v promtool >/dev/null; then
	promtool check metrics <"$T/body" || fail "promtool rejects the daemon's /metrics"
else
	skip_part "the metrics format" "promtool (prometheus)"
fi
# Read-only over TCP.
assert_eq "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/healthz")" 200 "healthz over TCP"
assert_eq "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/v1/status")" 200 "status over TCP"
assert_eq "$(curl -s -o /dev/null -w '%{http_code}' -X POST -d '{}' "http://127.0.0.1:$port/v1/kill")" 403 "kill over TCP"
kill -0 $SPID || fail "the daemon died of a TCP kill request"
# Another user: status yes, kill no.
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	kill -TERM $SPID; wait $SPID || true
	"$SMTD" --root "$T/w" --socket "$S" --socket-group nogroup --sshd never --wait-timeout 60 -- /bin/true >"$T/w2.out" 2>&1 &
	SPID=$!
	wait_state waiting-for-leader
	NB_SMTCTL=$(nobody_copy "$SMTCTL") || exit 1
	rc=0; as_nobody "$NB_SMTCTL" --socket "$S" status >"$T/nobody.status" 2>&1 || rc=$?
	assert_eq "$rc" 0 "smtctl status as nobody"
	assert_contains "$T/nobody.status" "waiting-for-leader" "status served to nobody"
	rc=0; as_nobody "$NB_SMTCTL" --socket "$S" kill >"$T/nobody.kill" 2>&1 || rc=$?
	assert_eq "$rc" 4 "smtctl kill as nobody"
	kill -0 $SPID || fail "nobody's kill reached the job"
fi
# Stopped, through the API's own kill.
hold stopped
assert_eq "$(curl -s --unix-socket "$S" -o /dev/null -w '%{http_code}' -X POST -d '{"signal":"TERM"}' http://localhost/v1/kill)" 202 "kill while waiting"
rc=0; wait $SPID || rc=$?
assert_eq "$rc" 143 "exit code after an API kill"
wait $HELD || true
assert_contains "$T/stopped.held" '"state":"stopped"' "the held long poll saw the stop"

# ---- running, then succeeded ----
mkdir -p "$T/r"
"$SMTD" --root "$T/r" --socket "$S" --sshd never -- "$SIGRANK" --ready "$T/r" --exit-after 3 >"$T/r.out" 2>&1 &
SPID=$!
wait_for_file "$T/r/ready.0" || fail "the job did not start"
wait_state running
assert_contains "$T/body" '"role":"standalone"' "a standalone host"
grep -q '"pid":[0-9]' "$T/body" || fail "no job pid in the status: $(cat "$T/body")"
assert_eq "$(api_get /readyz)" 200 "readyz while running"
assert_eq "$(api_get /healthz)" 200 "healthz while running"
assert_eq "$(api_get '/v1/logs?tail=10&rank=0')" 200 "logs while running"
assert_contains "$T/body" "waiting" "the rank's line in the logs"
rc=0; "$SMTCTL" --socket "$S" logs -n 5 >"$T/logs.txt" || rc=$?
assert_eq "$rc" 0 "smtctl logs"
assert_contains "$T/logs.txt" "[1,mpirank:0," "smtctl logs shows tagged lines"
"$SMTCTL" --socket "$S" ready || fail "smtctl ready while running"
"$SMTCTL" --socket "$S" health || fail "smtctl health while running"
assert_eq "$(api_get /metrics)" 200 "metrics while running"
assert_contains "$T/body" 'smtd_state{state="running"} 1' "running in the metrics"
# Per rank, seconds since its last line and CPU seconds; job-wide,
# seconds since the last progress line.
grep -q '^smtd_rank_seconds_since_last_line{rank="0",host="[^"]*"} [0-9.]*$' "$T/body" ||
	fail "no seconds since rank 0's last line in the metrics"
grep -q '^smtd_rank_cpu_seconds{rank="0",host="[^"]*"} [0-9.]*$' "$T/body" ||
	fail "no CPU seconds of rank 0 in the metrics"
grep -q '^smtd_job_seconds_since_progress [0-9][0-9.]*$' "$T/body" ||
	fail "no job-wide seconds since progress in the metrics: $(grep progress "$T/body")"
api_get /v1/status >/dev/null
grep -q '"since_progress_s":[0-9]' "$T/body" || fail "no since_progress_s in the status: $(cat "$T/body")"
grep -q '"last_line_s":[0-9]' "$T/body" || fail "no last_line_s of rank 0 in the status"
grep -q '"cpu_s":[0-9]' "$T/body" || fail "no cpu_s of rank 0 in the status"
hold succeeded
rc=0; wait $SPID || rc=$?
assert_eq "$rc" 0 "exit code of the job"
wait $HELD || true
assert_contains "$T/succeeded.held" '"state":"succeeded"' "the held long poll saw the success"

# ---- failed ----
mkdir -p "$T/f"
"$SMTD" --root "$T/f" --socket "$S" --sshd never -- /bin/sh -c 'while [ ! -e "$0/go" ]; do sleep 0.05; done; exit 3' "$T/f" >"$T/f.out" 2>&1 &
SPID=$!
wait_state running
hold failed
touch "$T/f/go"
rc=0; wait $SPID || rc=$?
assert_eq "$rc" 1 "exit code of a failed job"
wait $HELD || true
assert_contains "$T/failed.held" '"state":"failed"' "the held long poll saw the failure"
grep -q '"failure":"[A-Za-z]' "$T/failed.held" || fail "no failure summary in the final status: $(cat "$T/failed.held")"
grep -q '"exit_code":3' "$T/failed.held" || fail "no exit code 3 in the final status: $(cat "$T/failed.held")"

# ---- after a failure, while smtd still writes the job's output ----
# The probes of the real daemon once the job has failed (smtd(8) The control API): healthy
# (200: the daemon works, the job failed), not ready (503).  smtd stays up
# after the failure as long as its stdout holds the job's last lines: a
# reader that takes nothing until told to.  The rank writes 200 KiB (more
# than the FIFO holds, less than smtd's stdout queue) and exits 3.
mkdir -p "$T/ff"
mkfifo "$T/ff/stdout"
python3 -c 'import os, sys, time
f = open(sys.argv[1], "rb")
while not os.path.exists(sys.argv[2]):
    time.sleep(0.02)
while f.read(65536):
    pass' "$T/ff/stdout" "$T/ff/go" &
READER=$!
# A failing check must not leave smtd waiting for a reader that waits.
trap 'kill $SPID $READER 2>/dev/null; rm -rf "$T"' EXIT
"$SMTD" --root "$T/ff" --socket "$S" --sshd never \
	-- awk 'BEGIN { for (i = 0; i < 2048; i++) printf "%099d\n", i; exit 3 }' >"$T/ff/stdout" 2>"$T/ff.out" &
SPID=$!
wait_state failed
assert_eq "$(api_get /healthz)" 200 "healthz after the job failed"
assert_eq "$(api_get /readyz)" 503 "readyz after the job failed"
"$SMTCTL" --socket "$S" health || fail "smtctl health after the job failed"
rc=0; "$SMTCTL" --socket "$S" ready || rc=$?
assert_eq "$rc" 1 "smtctl ready after the job failed"
assert_eq "$(api_get /metrics)" 200 "metrics after the job failed"
assert_contains "$T/body" 'smtd_state{state="failed"} 1' "failed in the metrics"
kill -0 $SPID || fail "smtd ended before its output was read"
touch "$T/ff/go"
rc=0; wait $SPID || rc=$?
assert_eq "$rc" 1 "exit code of the failed job once its output was read"
wait $READER || fail "the reader failed"
trap 'rm -rf "$T"' EXIT

# ---- no daemon: smtctl says so, fast ----
rc=0; "$SMTCTL" --socket "$S" status 2>"$T/none.err" || rc=$?
assert_eq "$rc" 3 "smtctl without a daemon"
assert_contains "$T/none.err" "cannot reach smtd" "the message without a daemon"
echo ok
