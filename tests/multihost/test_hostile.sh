#!/bin/bash
# Hostile ranks on every host of a real MPI job (smtd(8), SECURITY): 3
# simulated hosts x 2 ranks, every rank run as uid 65534 (setpriv), smtd's
# socket in the group nogroup so that the ranks may talk to its API as a
# read-only member would.  Each rank does its part
# (tests/multihost/hostile_rank.py):
#   rank 0 (algo-1, the leader): connects to the workers' channel socket and
#     the rank launchers' socket (EACCES both), asks for the status (200),
#     POSTs /v1/kill, also with X-Smtd-Leader (403 both).
#   rank 2 (algo-2, a worker whose output/ it may write): puts a link to a
#     file of root's where its smtd will write the host's failure, then
#     speaks for the leader on its worker's API: takes the output
#     (GET /v1/lines), ends the job (/v1/end), sends the result
#     (/v1/result), announces a forged orted PID (/v1/orted) - 403 each -
#     and connects to the rank launchers' socket (EACCES).
#   rank 3 (algo-2): leaves the job, in its own session, twice forked.
#   rank 5 (algo-3): floods: 40000 lines and one of 1 MiB.
#   rank 4 (algo-3): once the test has seen all that, fails the job with an
#     error line full of control bytes (exit 3).
# Then: every host exits 1 with the failure line of rank 4, its control
# bytes made spaces; algo-2 writes nothing through the link (logged) and the
# file of root's is untouched; every flooded line reached the leader and
# algo-3's smtd did not grow with them; the escaped process was ended by
# smtd (nothing of the job left to the kernel on any host).
. "$top_srcdir/tests/multihost/prelude.sh"
command -v mpirun >/dev/null 2>&1 || skip_tool "mpirun (openmpi-bin)"
command -v setpriv >/dev/null 2>&1 || skip_tool "setpriv (util-linux)"
PY=/usr/bin/python3
[ -x "$PY" ] || skip "needs $PY"
getent group nogroup >/dev/null || skip "no group nogroup"
# Every host's smtd at its default socket, in its own /run, where the
# ranks look for it.
unset SMTD_SOCKET
t0=$EPOCHREALTIME
if ldd "$SMTD" 2>/dev/null | grep -q libasan; then
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=1:thread_local_quarantine_size_kb=64"
	WORKER_MAX_KB=$((28 * 1024))
else
	WORKER_MAX_KB=$((12 * 1024))
fi

mkdir -p "$T/mh"
mh_setup 3 "$T/mh"
# What uid 65534 must reach, where every host sees it (the run directory):
# the script, a directory to report in.  The file of root's that the link
# names.
X="$T/mh/x"
mkdir -p "$X"
chmod 755 "$T" "$T/mh" "$X"
install -m 644 "$top_srcdir/tests/multihost/hostile_rank.py" "$X/hostile_rank.py"
mkdir -m 1777 "$X/sync"
printf 'precious\n' >"$X/victim"
chmod 644 "$X/victim"
hyper='{"sagemaker_mpi_enabled": "true", "sagemaker_mpi_num_of_processes_per_host": "2"}'
for k in 1 2 3; do smtd_hyper $k "$hyper"; done
# On algo-2 the ranks' user may write output/ (an image that drops
# privileges and hands it the output).
chown 65534:65534 "$T/mh/algo-2/ml/output"
for k in 1 2 3; do
	smtd_start_to $k "$T/mh/stdout.$k" --socket-group nogroup -- \
		setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$PY" "$X/hostile_rank.py" "$X/sync" "$X/victim"
done
smtd_hwm_watch 2
smtd_hwm_watch 3

for r in 0 1 2 3 5; do
	wait_for_file "$X/sync/done-$r" 60 || { smtd_show_all; fail "rank $r did not do its part"; }
	[ $r != 3 ] || echo "ranks 0-3 did their parts: $(mh__elapsed "$t0") s"
done
i=0
until grep -q '^\[1,mpirank:5,algo-3\]<stdout>: flood done$' "$T/mh/stdout.1"; do
	i=$((i + 1))
	[ $i -le 1200 ] || { smtd_show_all; fail "rank 5's flood did not reach the leader"; }
	sleep 0.05
done
echo "every rank did its part, the flood reached the leader: $(mh__elapsed "$t0") s"
touch "$X/sync/go"
smtd_wait_all 60
echo "the job, from the first host's start to the last exit: $(mh__elapsed "$t0") s"

# ---- the job's result, on every host ----
line="RankFailed: rank 4 on algo-3 exited with code 3: ValueError: the hostile ranks are done"
for k in 1 3; do
	smtd_check $k 1 "$line"
	! grep -q "$(printf '[\001-\010\013-\037\177]')" "$(smtd_failure $k)" ||
		fail "algo-$k's failure file holds a control byte: $(od -c "$(smtd_failure $k)" | head -5)"
done
assert_eq "$EXIT_2" 1 "algo-2's exit code"

# ---- algo-2: the link, left alone; root's file untouched ----
[ -L "$T/mh/algo-2/ml/output/failure" ] || fail "the link at algo-2's failure was replaced"
assert_eq "$(readlink "$T/mh/algo-2/ml/output/failure")" "$X/victim" "the link at algo-2's failure"
assert_eq "$(cat "$X/victim")" precious "the file of root's the link names"
assert_eq "$(stat -c '%u %a %s' "$X/victim")" "0 644 9" "the file of root's the link names"
assert_contains "$(smtd_console 2)" \
	"/opt/ml/output/failure is a symbolic link: the result is not written through it; remove the link (the result is in this log)" \
	"algo-2's smtd on the link"
assert_contains "$(smtd_console 2)" "$line" "algo-2's result, in its log"
assert_eq "$(cd "$T/mh/algo-2/ml/output" && ls -A | tr '\n' ' ')" "data failure " "algo-2's output/"

# ---- what each rank got ----
"$PY" - "$X/sync" <<'PY' || fail "a rank got something"
import json, sys
got = {r: json.load(open("%s/rank-%d.json" % (sys.argv[1], r))) for r in (0, 1, 2, 3, 5)}
deny = [403, "permission denied: uid 65534 may not change the job (only root or uid 0)"]
want = {
    0: {"channels": "EACCES", "ranks": "EACCES", "status": 200, "kill": deny, "kill_as_leader": deny},
    2: {"link": sys.argv[1].rsplit("/", 1)[0] + "/victim",
        "lines_as_leader": [403, "only the leader takes a worker's output"],
        "end_as_leader": deny, "result_as_leader": deny, "orted_forged": deny, "ranks": "EACCES"},
}
bad = 0
for r, res in got.items():
    host = "algo-%d" % (r // 2 + 1)
    for k, v in dict(want.get(r, {}), uid=65534, gid=65534, host=host).items():
        if res.get(k) != v:
            print("rank %d, %s: expected %r, got %r" % (r, k, v, res.get(k)))
            bad = 1
sys.exit(bad)
PY
for r in 0 1 2 3 4 5; do
	assert_eq "$(grep -c "^\[1,mpirank:$r,algo-[1-3]\]<stdout>: rank $r did its part\$" "$T/mh/stdout.1")" 1 \
		"rank $r's line on the leader"
done

# ---- the flood: every line at the leader, in order; algo-3's smtd bounded ----
"$PY" - "$T/mh/stdout.1" <<'PY' || fail "rank 5's flood, at the leader"
import re, sys
tag = b"[1,mpirank:5,algo-3]<stdout>: "
lines = [l[len(tag):] for l in open(sys.argv[1], "rb").read().split(b"\n") if l.startswith(tag)]
flood = [l for l in lines if l.startswith(b"flood ") and l != b"flood done"]
want = [b"flood %06d " % i + b"x" * 88 for i in range(40000)]
assert flood == want, "%d flood lines, the first wrong: %r" % (
    len(flood), next((a for a, b in zip(flood, want) if a != b), None))
ys = b"".join(l for l in lines if l and l.strip(b"y") == b"")
assert ys == b"y" * (1 << 20), "%d bytes of the long line" % len(ys)
print("rank 5: %d lines and the one of 1 MiB, at the leader in order" % len(flood))
PY
# The bound of tests/multihost/test_rank_backpressure.sh (algo-2's smtd,
# without a flood, for comparison: under the sanitizers 23-26 MiB).
hwm2=$(smtd_hwm 2)
hwm=$(smtd_hwm 3)
# Under the sanitizers the two are within a few MiB of the bound without
# any flood: algo-3 may then hold what algo-2 holds and 4 MiB more (the
# flood held whole would be 5 MiB more).
[ "$WORKER_MAX_KB" -ge $((hwm2 + 4096)) ] || [ "$WORKER_MAX_KB" = $((12 * 1024)) ] ||
	WORKER_MAX_KB=$((hwm2 + 4096))
echo "algo-3's smtd: VmHWM $hwm kB (bound $WORKER_MAX_KB kB; algo-2's $hwm2 kB)"
[ "$hwm" -le "$WORKER_MAX_KB" ] || fail "algo-3's smtd grew with the flood: $hwm kB"

# ---- nothing left: the escaped process ended by smtd, not the kernel ----
[ -s "$X/sync/escaped.pid" ] || fail "rank 3's process did not escape"
grep -q "^$(cat "$X/sync/escaped.pid") sleep .* before" "$(smtd_watch_report 2)" ||
	{ cat "$(smtd_watch_report 2)" >&2; fail "rank 3's escaped process was not ended by smtd"; }
smtd_nothing_left
mh_teardown
echo "ok: $(mh__elapsed "$t0") s in all"
