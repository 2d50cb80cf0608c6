# bench/b10_restart.sh - B10, restarts in place (sourced by
# bench/run.sh after lib.sh, hosts.sh, smtd.sh and faults.sh; add B10 to
# ALL and "B10) bench_b10 ;;" to its case).
#
# B10: 3 fresh simulated hosts x 2 ranks, torch DDP (gloo) under smtd's
# torchrun launch with sagemaker_max_restarts 1 (bench/b10job.py): rank 4
# exits 1 once every rank is up; measured from that exit (the time the
# rank wrote just before it) to the start of the last process of attempt 1
# (each rank writes when the kernel started it, before importing torch).
# The ranks end on SIGTERM at once, so no grace is in it.
# B10t: torchrun's own restart of the same job on the same hosts in the
# same run: torchrun --max-restarts 1 on every host, c10d rendezvous on
# algo-1, no smtd; from the same exit to the last worker of restart 1.
# B10m: B10 with mpi4py ranks under mpirun (a new mpirun for attempt 1).
# B10s: mpi4py, --stall-timeout 2: rank 4 goes silent in attempt 0; from the
# stall deadline (the leader's last rank line before it + 2 s) to the last
# rank of attempt 1 started.
# B10o (B10mo): smtd's own share of B10 (B10m), the exit to the next
# launch on every host (the e and l rows added); what is left of B10 is
# the launched command's start (a new torchrun imports torch, seconds,
# where torchrun's own restart keeps its agent).
# Targets: B10o at most 1.0 s and at most half of B10t; B10mo at most 1.0 s.

B10_TARGET=1.0

# b10_wait: every host exited (torch's import alone takes tens of seconds
# on a loaded machine, twice); sets EXITS as last_exit does.
b10_wait() {
	local k code
	EXITS=
	for k in 1 2 3; do
		code=$(mh_wait "$k" 300) || { bench_log "algo-$k did not exit"; tail -5 "$(smtd_console "$k")" >&2; return; }
		EXITS="$EXITS algo-$k=$code"
	done
}

# b10_measure FROM_FILE: the last start.1.* on any host minus FROM_FILE's
# time; in B10 ("-" when something is missing).
b10_measure() {
	B10=$(/usr/bin/python3 - "$RUN" "$1" <<'PY'
import glob, sys
run, frm = sys.argv[1], sys.argv[2]
starts = [float(open(p).read()) for p in glob.glob(run + "/algo-*/ml/b10/start.1.*")]
try:
    t0 = float(open(frm).read())
except (OSError, ValueError):
    t0 = None
print("-" if t0 is None or len(starts) != 6 else "%.3f" % (max(starts) - t0))
PY
)
}

# b10_share FROM_FILE: smtd's own share, from the logs: FROM_FILE's time
# to the leader's "attempt 1 ended" (every host ended its part and
# confirmed), and from there to the last host's mark of attempt 2 (the
# next launch on every host); in B10SHARE ("- -" when missing).
b10_share() {
	B10SHARE=$(/usr/bin/python3 - "$RUN" "$1" <<'PY'
import datetime, glob, json, sys
run, frm = sys.argv[1], sys.argv[2]
def t(s):
    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()
def stamp(raw):
    if raw.startswith("{"):
        try:
            o = json.loads(raw)
            return t(o["time"]), o.get("message", "")
        except (ValueError, KeyError):
            return None, ""
    try:
        return t(raw[:24]), raw
    except ValueError:
        return None, ""
ended = None
marks = []
for log in sorted(glob.glob(run + "/algo-*/console.log")):
    for raw in open(log, errors="replace"):
        when, msg = stamp(raw)
        if when is None:
            continue
        if "attempt 1 ended" in msg and ended is None:
            ended = when
        if "==== smtd: attempt 2 of" in msg:
            marks.append(when)
try:
    t0 = float(open(frm).read())
except (OSError, ValueError):
    t0 = None
if t0 is None or ended is None or len(marks) < 3:
    print("- -")
else:
    print("%.3f %.3f" % (ended - t0, max(marks) - ended))
PY
)
}

# b10_sum "A1 A2 .." "B1 B2 ..": A1+B1 A2+B2 ..., "failed" where either is
# not a number.
b10_sum() {
	paste -d' ' <(echo $1 | tr ' ' '\n') <(echo $2 | tr ' ' '\n') |
		awk '{ if ($1 ~ /^[0-9.]+$/ && $2 ~ /^[0-9.]+$/) printf "%s%.3f", sep, $1 + $2; else printf "%sfailed", sep; sep = " " }'
}

b10_fail_file() {
	ls "$RUN"/algo-*/ml/b10/fail.0 2>/dev/null | head -1
}

b10_torch_smtd() {
	RUN=$W/b10
	rm -rf "$RUN"
	mkdir -p "$RUN/bin"
	ln -s "$top/tests/helpers/torchrun_wrapper.sh" "$RUN/bin/torchrun"
	mh_setup 3 "$RUN" 2>>"$W/mh.log"
	for k in 1 2 3; do
		smtd_hyper $k '{"sagemaker_program": "\"b10job.py\"", "sagemaker_torch_distributed_enabled": "true", "sagemaker_max_restarts": "1"}'
		cp "$BENCH_DIR/b10job.py" "$RUN/algo-$k/ml/code/"
	done
	for k in 1 2 3; do
		SMTD_MH_ENV="PATH=$RUN/bin:/usr/bin:/bin:/usr/sbin:/sbin" \
			smtd_start $k --processes-per-host 2 -- /usr/bin/python3 /opt/ml/code/b10job.py torch /opt/ml/b10
	done
	b10_wait
	if fault_check "algo-1=0 algo-2=0 algo-3=0" B10; then
		b10_measure "$(b10_fail_file)"
		b10_share "$(b10_fail_file)"
	else
		B10=failed B10SHARE=$(bench_failed 2)
	fi
	fault_teardown
}

# torchrun's own restarts: torchrun is each host's PID 1.
b10_torch_own() {
	local k addr
	RUN=$W/b10t
	rm -rf "$RUN"
	mkdir -p "$RUN"
	mh_setup 3 "$RUN" 2>>"$W/mh.log"
	addr=$(mh_addr 1)
	for k in 1 2 3; do
		mkdir -p "$RUN/algo-$k/ml/code"
		cp "$BENCH_DIR/b10job.py" "$RUN/algo-$k/ml/code/"
		mh_start_host $k env PATH=/usr/bin:/bin OMP_NUM_THREADS=1 /usr/bin/torchrun --redirects 1 --tee 1 \
			--nnodes 3 --nproc_per_node 2 --max_restarts 1 --rdzv_backend c10d \
			--rdzv_endpoint "$addr:29400" --rdzv_id b10 \
			/opt/ml/code/b10job.py torch /opt/ml/b10
	done
	b10_wait
	b10_measure "$(b10_fail_file)"
	fault_teardown
}

b10_mpi() {
	local stall=$1 t
	fault_setup b10m
	for k in 1 2 3; do
		smtd_start $k --max-restarts 1 --log-format json $([ "$stall" = 1 ] && echo --stall-timeout 2) -- \
			env B10_STALL="$stall" /usr/bin/python3 -m mpi4py "$BENCH_DIR/b10job.py" mpi /opt/ml/b10
	done
	b10_wait
	fault_check "algo-1=0 algo-2=0 algo-3=0" B10m
	if [ "$stall" = 1 ]; then
		# The deadline: the leader's last rank line before the stall, + 2 s.
		t=$(/usr/bin/python3 - "$RUN/algo-1/console.log" <<'PY'
import datetime, json, sys
last = None
for raw in open(sys.argv[1], errors="replace"):
    try:
        o = json.loads(raw)
    except ValueError:
        continue
    if "rank" in o:
        last = datetime.datetime.strptime(o["time"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(
            tzinfo=datetime.timezone.utc).timestamp()
    elif "the job is stalled" in o.get("message", ""):
        break
print("%.6f" % (last + 2) if last else "")
PY
)
		echo "$t" >"$RUN/deadline"
		b10_measure "$RUN/deadline"
	else
		b10_measure "$(b10_fail_file)"
	fi
	if [ "$stall" = 1 ]; then b10_share "$RUN/deadline"; else b10_share "$(b10_fail_file)"; fi
	[ $FAULT_OK = 1 ] || B10=failed B10SHARE=$(bench_failed 2)
	fault_teardown
}

bench_b10() {
	local i s= t= m= st= ratios= sd= sr= md= mr= sd2= sr2=
	if ! /usr/bin/python3 -c 'import torch.distributed' 2>/dev/null || [ ! -x /usr/bin/torchrun ]; then
		bench_note "B10 and B10t skipped: python3-torch (/usr/bin/torchrun) is not installed"
	else
		for ((i = 1; i <= RUNS; i++)); do
			RUN_NO=$i
			bench_log "B10 run $i of $RUNS"
			b10_torch_smtd
			s="$s $B10"
			set -- $B10SHARE
			sd="$sd $1" sr="$sr $2"
			b10_torch_own
			t="$t $B10"
			bench_log "B10 run $i: smtd $(echo $s | awk '{print $NF}') s, torchrun's own $(echo $t | awk '{print $NF}') s"
			ratios="$ratios $(echo "$s $t" | awk '{ n = NF / 2; printf "%.2f", ($n + 0) / ($NF + 0.000001) }')"
		done
	fi
	for ((i = 1; i <= RUNS; i++)); do
		RUN_NO=$i
		bench_log "B10m/B10s run $i of $RUNS"
		b10_mpi 0
		m="$m $B10"
		set -- $B10SHARE
		md="$md $1" mr="$mr $2"
		b10_mpi 1
		st="$st $B10"
		set -- $B10SHARE
		sd2="$sd2 $1" sr2="$sr2 $2"
	done
	[ -n "$s" ] && bench_record B10 "a rank exits 1 (torch DDP, 3 hosts x 2 ranks) to every rank of attempt 1 started, smtd's restart (baseline: torchrun --max-restarts 1, c10d)" s "—" "$s" "$t"
	[ -n "$s" ] && bench_record B10o "B10's smtd share: the exit to the next torchrun launched on every host (B10e + B10l) (baseline: torchrun's own restart, B10's)" s "≤ $B10_TARGET s and ≤ half of torchrun's" "$(b10_sum "$sd" "$sr")" "$t"
	bench_record B10m "the same with mpi4py ranks under mpirun (a new mpirun)" s "—" "$m" ""
	bench_record B10mo "B10m's smtd share: the exit to the next mpirun launched (B10me + B10ml)" s "≤ $B10_TARGET s" "$(b10_sum "$md" "$mr")" ""
	bench_record B10s "stall deadline (last line + --stall-timeout 2) to every rank of attempt 1 started (mpi4py)" s "—" "$st" ""
	[ -n "$s" ] && bench_record B10e "B10: the exit to every host's part ended and confirmed (the leader's 'attempt 1 ended')" s "—" "$sd" ""
	[ -n "$s" ] && bench_record B10l "B10: from there to the next torchrun launched on every host (smtd's share ends; the rest is torchrun's start)" s "—" "$sr" ""
	bench_record B10me "B10m: the exit to every host's part ended and confirmed" s "—" "$md" ""
	bench_record B10ml "B10m: from there to the next mpirun launched (attempt 2's mark on every host)" s "—" "$mr" ""
	bench_record B10se "B10s: the stall deadline to every host's part ended (stacks read, ranks ended)" s "—" "$sd2" ""
	bench_record B10sl "B10s: from there to the next mpirun launched on every host" s "—" "$sr2" ""
	[ -n "$ratios" ] && bench_note "B10: smtd's restart over torchrun's own, per run:$ratios"
}
