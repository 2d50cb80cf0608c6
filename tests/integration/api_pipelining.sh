#!/bin/sh
# Pipelined requests against the real daemon: 64
# connections each send 400 "GET /v1/logs?tail=100000" in one go and read
# the answers as fast as they can, while a standalone job prints numbered
# lines (the log ring full: 10,000 lines in every answer).  smtd's peak RSS
# must stay under the bound smtd(8) states (64 MiB), no step of the API may
# hold /healthz for 100 ms of smtd's CPU (the probes, every 50 ms, within
# 500 ms of curl's time_total), and the job's output must be complete.
#
# Under AddressSanitizer the quarantine of freed memory, the allocation
# stacks and the fill of new memory are turned off for smtd here: they are
# ASan's memory and time, not smtd's.  Errors are still detected.  The
# sanitizers still make smtd's code 3 to 5 times slower: the largest step
# the loop cannot divide, the daemon building a 10,000-line answer, takes
# 6 to 11 ms without them and 25 to 105 ms with them on a busy machine.
# What the issue bounds, a /healthz waiting for one such step at most, is
# checked on smtd's own clock: every new longest step of the API is in its
# debug log with its CPU time (its wall time also holds the job's and the
# clients' turns on 2 CPUs: 54-100 ms on a machine where the same build
# had passed, old and new code alike), and none may take 100 ms (250 ms with the
# sanitizers, whose every allocation costs several times more).  The
# probes' own times also hold the machine's scheduling (make -j2 check
# runs another test beside this one): they are bounded at 500 ms.
. "$top_srcdir/tests/lib.sh"
smt_tmpdir
S="$T/smtd.sock"
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:quarantine_size_mb=0:malloc_context_size=0:max_malloc_fill_size=0"
RSS_BOUND_KB=$((64 * 1024))
# 100 ms: on 2026-11-27 this machine measured 54-100 ms (65 ms of CPU) for
# the one step that builds a 10,000-line answer, with today's code and with
# the code that had measured 6-11 ms here two days before; perf puts 37 %
# of smtd's CPU in malloc and free (jansson's tree of 10,000 strings).  The
# bound still fails a step that renders whole answers at once (hundreds of
# ms); building the answer from the ring without the tree is the fix.
STEP_MS=100
grep -q __asan_init "$SMTD" && STEP_MS=250
# make distcheck (SMT_TEST_QUICK=1) runs the plain build's tests two at a
# time, and a step's wall time then holds the other test's CPU (96 ms
# once); scripts/test.sh holds the plain build to 100 ms with this test
# running alone.
[ "${SMT_TEST_QUICK:-0}" = 1 ] && STEP_MS=250
LATENCY_MS=500

# The job: numbered lines, 20,000 a second, until told to stop.
cat >"$T/job.py" <<'PY'
import os, sys, time
i = 0
while not os.path.exists(sys.argv[1]):
    for _ in range(200):
        print("line %d" % i)
        i += 1
    sys.stdout.flush()
    time.sleep(0.01)
print("end %d" % i)
PY

# The clients: connect all, send every request, then read whatever comes
# for SECONDS and count the bytes.
cat >"$T/pipeline.py" <<'PY'
import select, socket, sys, time
path, nconn, nreq, secs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
req = b"GET /v1/logs?tail=100000 HTTP/1.1\r\nHost: x\r\n\r\n" * nreq
conns = []
for _ in range(nconn):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    s.setblocking(False)
    conns.append([s, req])
got = 0
end = time.time() + secs
while time.time() < end:
    r, w, _ = select.select([c[0] for c in conns], [c[0] for c in conns if c[1]], [], 0.05)
    for c in conns:
        if c[1] and c[0] in w:
            try:
                c[1] = c[1][c[0].send(c[1]):]
            except BlockingIOError:
                pass
        if c[0] in r:
            try:
                got += len(c[0].recv(1 << 20))
            except BlockingIOError:
                pass
unsent = sum(len(c[1]) for c in conns)
for c in conns:
    c[0].close()
print("received %d bytes, %d bytes of requests unsent" % (got, unsent))
PY

mkdir -p "$T/r"
"$SMTD" --debug --root "$T/r" --socket "$S" --sshd never -- python3 "$T/job.py" "$T/stop" \
	>"$T/out" 2>"$T/err" &
SPID=$!
# A failing check must not leave the daemon behind.
trap 'kill -KILL $SPID 2>/dev/null; rm -rf "$T"' EXIT
i=0
until curl -s --unix-socket "$S" -o /dev/null http://localhost/healthz && [ "$(wc -l <"$T/out")" -gt 10000 ]; do
	i=$((i + 1)); [ $i -lt 600 ] || fail "the job did not print its first 10,000 lines"
	kill -0 $SPID 2>/dev/null || { cat "$T/err" >&2; fail "smtd exited"; }
	sleep 0.05
done

python3 "$T/pipeline.py" "$S" 64 400 6 >"$T/clients" 2>&1 &
CLIENTS=$!
# Probe /healthz every 50 ms while the clients are at it.
: >"$T/probes"
while kill -0 $CLIENTS 2>/dev/null; do
	curl -s --max-time 5 --unix-socket "$S" -o /dev/null -w '%{http_code} %{time_total}\n' \
		http://localhost/healthz >>"$T/probes" 2>&1
	sleep 0.05
done
wait $CLIENTS || fail "the clients failed: $(cat "$T/clients")"
hwm=$(sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\) kB/\1/p' /proc/$SPID/status)

# smtd logs every new longest step (the first one too): no line means it
# stopped saying, never that the steps were fast.
step_ms=$(sed -n 's/.*control API: the longest step so far took \([0-9]*\) ms of CPU.*/\1/p' "$T/err" | sort -n | tail -1)
[ -n "$step_ms" ] || fail "smtd --debug logged no step time of its control API"
echo "the longest step of the control API: $step_ms ms (bound $STEP_MS ms)"
[ "$step_ms" -lt "$STEP_MS" ] || fail "a step of the control API took $step_ms ms: a /healthz waited that long"
probes=$(wc -l <"$T/probes")
bad=$(grep -vc '^200 ' "$T/probes" || true)
max_ms=$(awk '{ if ($2 > m) m = $2 } END { printf "%d", m * 1000 }' "$T/probes")
echo "clients: $(cat "$T/clients"); $probes /healthz probes, slowest $max_ms ms; smtd's peak RSS $((hwm / 1024)) MiB"
[ "$probes" -ge 40 ] || fail "only $probes probes in 6 s"
assert_eq "$bad" 0 "/healthz probes that did not get 200"
[ "$max_ms" -lt "$LATENCY_MS" ] || { sort -k2 -n "$T/probes" | tail -5 >&2; fail "/healthz took $max_ms ms"; }
[ "$hwm" -lt "$RSS_BOUND_KB" ] || fail "smtd's peak RSS is $hwm kB, over the bound of $RSS_BOUND_KB kB"
grep -q 'received [1-9][0-9]* bytes' "$T/clients" || fail "the clients got nothing: $(cat "$T/clients")"

touch "$T/stop"
wait_until 20 '! kill -0 $SPID 2>/dev/null' 'smtd did not end within 20 s of its job'
rc=0; wait $SPID || rc=$?
assert_eq "$rc" 0 "smtd's exit code"

# Every line of the job, in order, none missing.
untag "$T/out" >"$T/lines"
n=$(sed -n 's/^end //p' "$T/lines")
[ -n "$n" ] || fail "the job's last line is missing"
seq 0 $((n - 1)) | sed 's/^/line /' >"$T/want"
echo "end $n" >>"$T/want"
cmp -s "$T/lines" "$T/want" || { diff "$T/want" "$T/lines" | head >&2; fail "the job's output is not complete"; }
echo "ok: $n lines"
