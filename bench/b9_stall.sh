# bench/b9_stall.sh - B9, stalls (sourced by bench/run.sh after
# lib.sh, hosts.sh, smtd.sh, faults.sh and single.sh).
#
# B9: 3 fresh simulated hosts x 2 ranks, mpi4py (tests/helpers/mpi_stall.py:
# rank 3 on algo-2 in time.sleep, the others in comm.Barrier), --stall-timeout
# 2, --log-format json on every host.  The stall deadline is the time of the
# last rank line (the "time" smtd gave it as it read it on the rank's host,
# which is what the watchdog counts from) plus the timeout; measured from
# there to the last host's PID 1 exit, with the failure naming rank 3 on
# algo-2 and the 6 stack files on their hosts checked.  B9f: deadline to the
# leader's "the job is stalled" log line (the watchdog's own latency); B9e:
# from that line to the last exit (the stacks read and the job ended).
# B9t: the same as B9 with torch DDP under torchrun (tests/helpers/ddp_stall.py),
# --stall-timeout 3, when python3-torch is installed.
# B9w: the watchdog's wakeups: smtd's context switches (voluntary and not,
# /proc/PID/status) over 10 s on one host while 2 ranks each print a line
# every 0.1 s, with --stall-timeout 30; baseline: the same without it.
# B9s: the same with 2 silent ranks (mpi_job sleep), where any timer that
# polled would show.

B9_HYPER='{"sagemaker_mpi_enabled": "true", "sagemaker_mpi_num_of_processes_per_host": "2"}'
B9_TARGET=3

# b9_measure STALL: reads the leader's JSON log of $RUN; sets B9 to
# "deadline-to-exit watchdog-latency stalled-to-exit" or "- - -".
b9_measure() {
	B9=$(/usr/bin/python3 - "$RUN" "$1" "$LAST" <<'PY'
import datetime, json, sys
run, stall, last = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
def t(s):
    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()
line = fired = None
for raw in open(run + "/algo-1/console.log", errors="replace"):
    try:
        o = json.loads(raw)
    except ValueError:
        continue
    if "rank" in o and fired is None:
        line = t(o["time"])
    elif "the job is stalled" in o.get("message", "") and fired is None:
        fired = t(o["time"])
if line is None or fired is None:
    print("- - -")
else:
    print("%.3f %.3f %.3f" % (last - (line + stall), fired - (line + stall), last - fired))
PY
)
}

# b9_check NAME RANK HOST: every host exited 1, the failure names RANK
# on HOST, and every rank's stack file is on its host; false (the run is
# counted as failed) otherwise.
b9_check() {
	local k r ok=0
	fault_check "algo-1=1 algo-2=1 algo-3=1" "$1" || ok=1
	grep -q "^Stalled: .*rank $2 on $3 is in" "$(smtd_failure 1)" 2>/dev/null ||
		{ bench_log "$1: the failure does not name rank $2 on $3: $(head -1 "$(smtd_failure 1)" 2>/dev/null)"; ok=1; }
	for k in 1 2 3; do
		for r in $((2 * k - 2)) $((2 * k - 1)); do
			[ -s "$RUN/algo-$k/ml/output/data/stacks/rank-$r.txt" ] || { bench_log "$1: no stack of rank $r on algo-$k"; ok=1; }
		done
	done
	[ $ok = 0 ] || bench_log "$1 run ${RUN_NO:-?}: counted as failed"
	return $ok
}

b9_mpi() {
	fault_setup b9
	for k in 1 2 3; do
		smtd_start $k --stall-timeout 2 --log-format json -- \
			env SMT_STALL_RANK=3 /usr/bin/python3 -m mpi4py "$top/tests/helpers/mpi_stall.py"
	done
	last_exit 1 2 3
	if b9_check B9 3 algo-2; then b9_measure 2; else B9=$(bench_failed 3); fi
	fault_teardown
}

b9_torch() {
	RUN=$W/b9t
	rm -rf "$RUN"
	mkdir -p "$RUN/bin"
	ln -s "$top/tests/helpers/torchrun_wrapper.sh" "$RUN/bin/torchrun"
	mh_setup 3 "$RUN" 2>>"$W/mh.log"
	for k in 1 2 3; do
		smtd_hyper $k '{"sagemaker_program": "\"ddp_stall.py\"", "sagemaker_torch_distributed_enabled": "true"}'
		cp "$top/tests/helpers/ddp_stall.py" "$RUN/algo-$k/ml/code/"
		SMTD_MH_ENV="PATH=$RUN/bin:/usr/bin:/bin:/usr/sbin:/sbin SMT_STALL_RANK=3 SMT_STALL_STEP=3 SMT_STEPS=100000" \
			smtd_start $k --processes-per-host 2 --stall-timeout 3 --log-format json
	done
	last_exit 1 2 3
	if b9_check B9t 3 algo-2; then b9_measure 3; else B9=$(bench_failed 3); fi
	fault_teardown
}

# b9_wakeups print|silent [SMTD OPTIONS...]: smtd's context switches per
# second over 10 s (3 in quick mode) of 2 ranks printing 10 lines/s each,
# or silent; in R.
b9_wakeups() {
	local what=$1 pid c0 c1 secs=10
	shift
	[ $QUICK = 1 ] && secs=3
	cat >"$W/printer.py" <<'PY'
import sys, time
for n in range(int(sys.argv[1])):
    print("line %d" % n, flush=True)
    time.sleep(0.1)
PY
	rm -f "$W"/ready.*
	if [ "$what" = print ]; then
		smtd_local_bg 2 "$@" -- /usr/bin/python3 "$W/printer.py" $(((secs + 4) * 10)) >/dev/null 2>"$W/b9w.log"
	else
		smtd_local_bg 2 "$@" -- "$MPIDIR/mpi_job" sleep 600 "$W" >/dev/null 2>"$W/b9w.log"
	fi
	pid=$SPID
	wait_state running 20 || true
	[ "$what" = print ] || RUN=$W wait_ready 2 20 || true
	sleep 1
	c0=$(ctxt $pid)
	sleep $secs
	c1=$(ctxt $pid)
	R=$(awk -v a=$c0 -v b=$c1 -v s=$secs 'BEGIN { printf "%.1f", (b - a) / s }')
	[ "$what" = print ] || kill -TERM $pid
	wait $pid
	[ $? = 0 ] || [ "$what" != print ] || { bench_log "B9w: the printing job failed: $(tail -3 "$W/b9w.log")"; R=failed; }
}

bench_b9() {
	local i s= f= e= t= w= wb= q= qb= ratios=
	for ((i = 1; i <= RUNS; i++)); do
		RUN_NO=$i
		bench_log "B9 run $i of $RUNS"
		b9_mpi
		set -- $B9
		s="$s $1" f="$f $2" e="$e $3"
		bench_log "B9 run $i: deadline to every host exited $1 s (target $B9_TARGET s, ratio $(awk -v a="$1" -v b=$B9_TARGET 'BEGIN { printf "%.2f", a / b }'))"
		ratios="$ratios $(awk -v a="$1" -v b=$B9_TARGET 'BEGIN { if (a + 0 == a) printf "%.2f", a / b; else printf "failed" }')"
	done
	if /usr/bin/python3 -c 'import torch.distributed' 2>/dev/null && [ -x /usr/bin/torchrun ]; then
		for ((i = 1; i <= RUNS; i++)); do
			RUN_NO=$i
			bench_log "B9t run $i of $RUNS"
			b9_torch
			set -- $B9
			t="$t $1"
		done
	else
		bench_note "B9t skipped: python3-torch (/usr/bin/torchrun) is not installed"
	fi
	for ((i = 1; i <= RUNS; i++)); do
		bench_log "B9w run $i of $RUNS"
		b9_wakeups print --stall-timeout 30
		w="$w $R"
		b9_wakeups print
		wb="$wb $R"
		b9_wakeups silent --stall-timeout 30
		q="$q $R"
		b9_wakeups silent
		qb="$qb $R"
	done
	bench_record B9 "stall deadline (last line + --stall-timeout 2) to every host exited, 6 stacks collected (3 hosts x 2 mpi4py ranks)" s "≤ $B9_TARGET s" "$s" ""
	bench_record B9f "the same: deadline to the leader's 'the job is stalled' (the watchdog's latency)" s "—" "$f" ""
	bench_record B9e "the same: 'the job is stalled' to every host exited (stacks read, job ended)" s "—" "$e" ""
	[ -n "$t" ] && bench_record B9t "B9 with torch DDP under torchrun (gloo, 3 hosts x 2 ranks, --stall-timeout 3)" s "≤ $B9_TARGET s" "$t" ""
	bench_record B9w "smtd context switches per second, 2 ranks printing 10 lines/s each, with --stall-timeout 30 (baseline: without)" 1/s "no more than without" "$w" "$wb"
	bench_record B9s "the same with 2 silent ranks (mpi_job sleep)" 1/s "no more than without" "$q" "$qb"
	bench_note "B9: deadline to every host exited over the target ($B9_TARGET s), per run:$ratios"
}
