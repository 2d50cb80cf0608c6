#!/bin/bash
# smtd(8) Stalls, The control API: what is progress, and stacks on demand, on 3
# simulated hosts x 2 ranks (mpi4py under mpirun).
#  1. Only rank 0 writes, a line every 0.5 s, for 2.5 x --stall-timeout 3,
#     while the others wait without a word: not stalled, success everywhere.
#  2. tests/helpers/heartbeat.py: a heartbeat every second, "progress"
#     lines only for the first 2 s.  With --progress-pattern progress it is
#     stalled 3 s after the last progress line although heartbeats go on;
#     every rank is in the same place, so none is named as the culprit
#     (unless one started 1 s late: then the first to stop progressing):
#     the first line says where all 6 are.
#  3. The same job without the pattern, ended by SMT_HEARTBEAT_LIMIT after
#     2 x --stall-timeout: not stalled, success everywhere.
#  4. smtctl stacks and smtctl stacks --json on the leader while every rank
#     waits in time.sleep for SIGUSR1: every rank's live stack, read on its
#     own host (gdb with CPython's extension: Python frames with source
#     lines), grouped; no rank is odd; nothing is written to
#     ROOT/output/data/stacks; then the same processes go on and succeed.
. "$top_srcdir/tests/multihost/prelude.sh"
HELPERS=$top_srcdir/tests/helpers
STAMP=$top_srcdir/tests/multihost/stamp.py
hyper='{"sagemaker_mpi_enabled": "true", "sagemaker_mpi_num_of_processes_per_host": "2"}'

# job NAME: a fresh set of 3 hosts in $T/NAME (D), MPI with 2 ranks each.
job() {
	echo "---- $1"
	D=$T/$1
	mkdir -p "$D"
	mh_setup 3 "$D"
	for k in 1 2 3; do smtd_hyper $k "$hyper"; done
}

# not_stalled: success on every host, and no sign of a stall anywhere.
not_stalled() {
	local k
	for ((k = 1; k <= MH_N; k++)); do
		smtd_check $k 0
		assert_not_contains "$(smtd_console $k)" "stalled" "algo-$k's log"
		[ ! -e "$(mh_host_dir $k)/ml/output/data/stacks" ] || fail "stacks written on algo-$k"
	done
}

# ---- 1. only rank 0 writes ----
job rank0
cat >"$D/rank0.py" <<'PY'
import sys, time
from mpi4py import MPI
c = MPI.COMM_WORLD
seconds = float(sys.argv[1])
if c.Get_rank() == 0:
    start, n = time.monotonic(), 0
    while time.monotonic() - start < seconds:
        print("step %d" % n, flush=True)
        n += 1
        time.sleep(0.5)
else:
    time.sleep(seconds)
c.Barrier()
PY
t0=$EPOCHREALTIME
for k in 1 2 3; do smtd_start $k --stall-timeout 3 -- /usr/bin/python3 -m mpi4py "$D/rank0.py" 7.5; done
smtd_wait_all 60
took=$(mh__elapsed "$t0")
echo "rank-0-only job: $took s"
not_stalled
awk -v t="$took" 'BEGIN { exit !(t >= 7.5) }' || fail "the job ended after $took s, before its 7.5 s of work"
assert_contains "$(smtd_console 1)" "[1,mpirank:0,algo-1]<stdout>: step 14" "rank 0's last step"
smtd_nothing_left
mh_teardown

# ---- 2. heartbeats go on, progress stops: stalled with the pattern ----
# JSON output gives each line the time smtd read it on its rank's host: the
# test works out which rank, if any, stopped progressing 1 s before all
# others (ranks that start late), to know the exact first line.
job heartbeat
beat_at=$(grep -nF "time.sleep(1)" "$HELPERS/heartbeat.py" | tail -1 | cut -d: -f1)
for k in 1 2 3; do
	smtd_start $k --stall-timeout 3 --progress-pattern progress --log-format json -- \
		env SMT_PROGRESS_STEPS=2 /usr/bin/python3 "$HELPERS/heartbeat.py"
done
/usr/bin/python3 "$STAMP" "$(smtd_console 1)" "$D/stamped" "$(mh_host_dir 1)/exit" &
stamper=$!
smtd_wait_all 60
wait $stamper
last=$(grep -E '"line":"progress step' "$D/stamped" | tail -1 | cut -d' ' -f1)
beats=$(grep -cE '"line":"heartbeat [3-9]"' "$D/stamped")
[ "$beats" -ge 1 ] || fail "no heartbeat after the progress lines stopped"
# Said 3 s (+-0.5 s) after the last progress line, every host ended within
# 3 + 2.5 s of it (as in test_stall.sh's check_timing).
said=$(grep -F -- "the job is stalled: " "$D/stamped" | head -1 | cut -d' ' -f1)
[ -n "$said" ] || fail "the leader never said the job was stalled"
awk -v e="$said" -v l="$last" 'BEGIN { d = e - l
	printf "the leader said it %.2f s after the last progress line\n", d
	exit !(d >= 2.5 && d <= 3.5) }' || { smtd_show_all; fail "the leader did not say the job was stalled 3 s (+-0.5 s) after the last progress line"; }
for k in 1 2 3; do
	t=T_END_$k
	awk -v e="${!t}" -v l="$last" 'BEGIN { d = e - l
		printf "algo-'$k' ended %.2f s after the last progress line\n", d
		exit !(d >= 3 && d <= 5.5) }' || { smtd_show_all; fail "algo-$k did not end 3..5.5 s after the last progress line"; }
done
# "all": no rank stopped 1 s before every other; else "RANK HOST".
quiet=$(/usr/bin/python3 - "$(smtd_console 1)" <<'PY'
import datetime, json, sys
last = {}
for raw in open(sys.argv[1], errors="replace"):
    try:
        o = json.loads(raw)
    except ValueError:
        continue
    if "the job is stalled" in o.get("message", ""):
        break
    if o.get("stream") == "stdout" and "progress" in o.get("line", ""):
        t = datetime.datetime.strptime(o["time"], "%Y-%m-%dT%H:%M:%S.%fZ").timestamp()
        last[o["rank"]] = (t, o["host"])
order = sorted(last.items(), key=lambda kv: kv[1][0])
assert len(order) == 6, last
(r, (t, h)), (_, (t2, _)) = order[0], order[1]
print("all" if t2 - t < 1.0 else "%d %s" % (r, h))
PY
) || fail "the ranks' progress lines in the leader's JSON output"
summary="Stalled: no progress for 3 s; all 6 ranks are in time.sleep (heartbeat.py:$beat_at)"
echo "rank that stopped progressing first, 1 s before the others: $quiet"
for k in 1 2 3; do
	smtd_check $k 1
	grep -qxF -- "--- 6 ranks (algo-1: 0, 1; algo-2: 2, 3; algo-3: 4, 5): time.sleep (heartbeat.py:$beat_at)" "$(smtd_failure $k)" ||
		fail "algo-$k's failure file: no line for the group of every rank"
	first=$(head -1 "$(smtd_failure $k)")
	[ $k = 1 ] || first=${first% (reported by the leader algo-1)}
	if [ "$quiet" = all ]; then
		assert_eq "$first" "$summary" "algo-$k's failure summary"
		assert_not_contains "$(smtd_failure $k)" "[odd]" "algo-$k's failure file"
	else
		case $first in
		"Stalled: no progress for 3 s; rank ${quiet% *} on ${quiet#* } went quiet first (no progress for "*" s); all 6 ranks are in time.sleep (heartbeat.py:$beat_at)") ;;
		*) fail "algo-$k's failure summary does not name rank $quiet as the first to stop: $first" ;;
		esac
	fi
	for r in $((2 * k - 2)) $((2 * k - 1)); do
		assert_contains "$(mh_host_dir $k)/ml/output/data/stacks/rank-$r.txt" \
			"File \"$HELPERS/heartbeat.py\", line $beat_at in main" "rank $r's stack on algo-$k"
	done
done
smtd_nothing_left
mh_teardown

# ---- 3. the same heartbeats without the pattern: every line is progress ----
job beats
for k in 1 2 3; do
	smtd_start $k --stall-timeout 3 -- \
		env SMT_PROGRESS_STEPS=2 SMT_HEARTBEAT_LIMIT=6.5 /usr/bin/python3 "$HELPERS/heartbeat.py"
done
smtd_wait_all 60
not_stalled
assert_contains "$(smtd_console 1)" "[1,mpirank:5,algo-3]<stdout>: heartbeat 6" "rank 5's last heartbeat"
smtd_nothing_left
mh_teardown

# ---- 4. smtctl stacks on a running job ----
if ! command -v gdb >/dev/null; then
	skip_part "part 4" "gdb"
	echo ok
	exit 0
fi
py=$(readlink -f /usr/bin/python3)
if [ ! -f "/usr/share/gdb/auto-load$py-gdb.py" ]; then
	skip_part "part 4" "CPython's gdb extension for $py (python3.11-dbg), for live Python stacks"
	echo ok
	exit 0
fi
job live
# Each rank waits in one call until SIGUSR1: a rank that polled (a short
# sleep in a loop) would now and then be read between two sleeps, all the
# more on a loaded machine where it waits for a CPU after each.
cat >"$D/hold.py" <<'PY'
import signal, time
from mpi4py import MPI


class Released(Exception):
    pass


def release(signo, frame):
    raise Released()


def hold():
    try:
        time.sleep(3600)
    except Released:
        pass


signal.signal(signal.SIGUSR1, release)
c = MPI.COMM_WORLD
c.Barrier()
print("rank %d holding" % c.Get_rank(), flush=True)
hold()
c.Barrier()
print("rank %d released" % c.Get_rank(), flush=True)
PY
sleep_at=$(grep -nF "time.sleep(3600)" "$D/hold.py" | cut -d: -f1)
hold_at=$(grep -nxF "hold()" "$D/hold.py" | cut -d: -f1)
# --stall-timeout 600: the ranks are silent through three reads (up to 30 s
# each) and two scans of every process of the machine; at 60 s a busy
# machine (make -j2 beside) saw the job stall and end before its release.
for k in 1 2 3; do smtd_start $k --stall-timeout 600 -- /usr/bin/python3 -m mpi4py "$D/hold.py"; done
for r in 0 1 2 3 4 5; do smtd_wait_line 1 "<stdout>: rank $r holding"; done
pids=$(for k in 1 2 3; do mh_pids $k | awk '$3 ~ /^python/ { print $1 }'; done | sort | tr '\n' ' ')
[ "$(echo $pids | wc -w)" = 6 ] || fail "not 6 Python ranks on the hosts: $pids"
t0=$EPOCHREALTIME
# --timeout 30: 6 reads of gdb (1-2 s of CPU each) share 2 CPUs with
# whatever else runs; the default 10 s is for a host with a CPU per rank.
mh_exec 1 "$SMTCTL" stacks --timeout 30 >"$D/stacks.txt" 2>"$D/stacks.err" ||
	{ cat "$D/stacks.err"; smtd_show_all; fail "smtctl stacks failed"; }
echo "smtctl stacks: $(mh__elapsed "$t0") s"
t0=$EPOCHREALTIME
mh_exec 1 "$SMTCTL" stacks --json --timeout 30 >"$D/stacks.json" 2>"$D/stacks.err" ||
	{ cat "$D/stacks.err"; smtd_show_all; fail "smtctl stacks --json failed"; }
echo "smtctl stacks --json: $(mh__elapsed "$t0") s"
head -3 "$D/stacks.txt"
# Text: the summary, then the one stack with every rank by host.
assert_eq "$(head -1 "$D/stacks.txt")" "all 6 ranks are in time.sleep (hold.py:$sleep_at)" "smtctl stacks' summary"
assert_eq "$(sed -n 2p "$D/stacks.txt")" "Stacks of 6 ranks: 1 distinct" "smtctl stacks' count"
grep -qxF -- "--- 6 ranks (algo-1: 0, 1; algo-2: 2, 3; algo-3: 4, 5): time.sleep (hold.py:$sleep_at)" "$D/stacks.txt" ||
	fail "smtctl stacks: no line for the group of every rank (none odd)"
assert_contains "$D/stacks.txt" "Traceback (most recent call first):" "a Python stack read live"
assert_contains "$D/stacks.txt" "  File \"$D/hold.py\", line $sleep_at, in hold" "the innermost Python frame"
assert_contains "$D/stacks.txt" "  File \"$D/hold.py\", line $hold_at, in <module>" "its caller"
assert_contains "$D/stacks.txt" "    time.sleep(3600)" "the frame's source line"
assert_not_contains "$D/stacks.txt" "no stack for" "smtctl stacks"
# JSON: the same, every rank by number and host.
/usr/bin/python3 - "$D/stacks.json" "$sleep_at" <<'PY' || { cat "$D/stacks.json"; fail "smtctl stacks --json"; }
import json, sys
v = json.load(open(sys.argv[1]))
assert v["ranks"] == 6, v["ranks"]
assert v["odd"] == [] and v["quiet_first"] == [], (v["odd"], v["quiet_first"])
assert v["unreadable"] == [], v["unreadable"]
assert len(v["groups"]) == 1, v["groups"]
g = v["groups"][0]
assert g["ranks"] == [0, 1, 2, 3, 4, 5], g["ranks"]
assert g["hosts"] == ["algo-1", "algo-1", "algo-2", "algo-2", "algo-3", "algo-3"], g["hosts"]
assert g["position"] == "time.sleep (hold.py:%s)" % sys.argv[2], g["position"]
assert "Traceback (most recent call first):" in g["stack"], g["stack"]
assert v["summary"] == "all 6 ranks are in time.sleep (hold.py:%s)" % sys.argv[2], v["summary"]
assert v["text"].startswith("Stacks of 6 ranks: 1 distinct\n"), v["text"][:80]
PY
# --timeout 1 reaches every host: 6 reads of 1-2 s of CPU each, started
# together on 2 CPUs, each have a third of a CPU: none ends within 1 s, and
# each host says so with that limit; the ranks cut mid-read go on (below).
mh_exec 1 "$SMTCTL" stacks --json --timeout 1 >"$D/stacks1.json" 2>"$D/stacks.err" ||
	{ cat "$D/stacks.err"; smtd_show_all; fail "smtctl stacks --timeout 1 failed"; }
/usr/bin/python3 - "$D/stacks1.json" <<'PY' || { cat "$D/stacks1.json"; fail "smtctl stacks --timeout 1"; }
import json, sys
v = json.load(open(sys.argv[1]))
u = v["unreadable"]
assert sorted(set(g["host"] for g in u)) == ["algo-1", "algo-2", "algo-3"], u
for g in u:
    assert g["reason"].startswith("timed out after 1000 ms"), g
print("--timeout 1: %d of 6 ranks unreadable, on %s" % (len(u), sorted(set(g["host"] for g in u))))
PY
for k in 1 2 3; do
	[ ! -e "$(mh_host_dir $k)/ml/output/data/stacks" ] || fail "a live read wrote stacks on algo-$k"
done
# The job goes on: the same processes, released, succeed.
now=$(for k in 1 2 3; do mh_pids $k | awk '$3 ~ /^python/ { print $1 }'; done | sort | tr '\n' ' ')
assert_eq "$now" "$pids" "the ranks after their stacks were read"
kill -USR1 $pids
smtd_wait_all 60
not_stalled
for r in 0 1 2 3 4 5; do assert_contains "$(smtd_console 1)" "<stdout>: rank $r released" "rank $r after the reads"; done
smtd_nothing_left
mh_teardown
echo ok
