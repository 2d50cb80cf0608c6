# bench/single.sh - one-host benchmarks B6, B7 and I5 (the control API
# under 200 clients), and
# what every one-host benchmark uses (sourced by bench/run.sh).  smtd runs
# on the machine itself (no resourceconfig: one host named after
# gethostname()), without sshd.  The ranks oversubscribe the 2 cores; the
# baselines run the same mpirun argv.

LOCAL_MPI_OPTS="--oversubscribe"

# smtd_args NP: a fresh job directory, and the options of every one-host
# job in SMTD_ARGS.
smtd_args() {
	rm -rf "$W/ml" "$W/smtd.sock"
	mkdir -p "$W/ml/output" "$W/ml/input/config" "$W/ml/code"
	SMTD_ARGS=(--root "$W/ml" --socket "$W/smtd.sock" --sshd never --mpi --processes-per-host "$1"
		--preload "$SMTD_PRELOAD" --smtctl "$SMTCTL" --mpi-options "$LOCAL_MPI_OPTS" --grace 2)
}

# smtd_local NP [SMTD OPTIONS...] -- CMD...: smtd for one host, in the
# foreground; its stdout is the caller's.  smtd_local_bg: the same in the
# background, SPID its PID (smtd itself, not a subshell: B5 reads its
# /proc entry).
smtd_local() {
	smtd_args "$1"
	shift
	"$SMTD" "${SMTD_ARGS[@]}" "$@"
}

smtd_local_bg() {
	smtd_args "$1"
	shift
	"$SMTD" "${SMTD_ARGS[@]}" "$@" &
	SPID=$!
}

# plain_argv: reads `smtd --dry-run --json` on stdin and prints, NUL
# separated, the mpirun argv smtd would run without smtd in it: less the
# rank launcher (`smtctl rank --`) in front of the rank's program, and
# less the launch agent on the workers (`smtctl exec-orted`).  What is
# left is the toolkit's command line (`--tag-output` included).
plain_argv() {
	/usr/bin/python3 -c '
import json, sys
plan = json.load(sys.stdin)
a, l = plan["argv"], plan["launcher"]
for i in range(len(a) - len(l) + 1):
    if l and a[i:i + len(l)] == l:
        del a[i:i + len(l)]
        break
if "orte_launch_agent" in a:
    i = a.index("orte_launch_agent")
    del a[i - 1:i + 2]
sys.stdout.write("\0".join(a) + "\0")'
}

# mpirun_argv NP CMD...: sets ARGV to the plain mpirun argv of a one-host
# job of NP ranks of CMD (plain_argv).
mpirun_argv() {
	local np=$1
	shift
	mapfile -d '' ARGV < <(smtd_local "$np" --dry-run --json -- "$@" 2>/dev/null | plain_argv)
}

# wait_state STATE TIMEOUT: until the local smtd reports STATE.
wait_state() {
	local i
	for ((i = 0; i < $2 * 50; i++)); do
		"$SMTCTL" --socket "$W/smtd.sock" status --json 2>/dev/null | grep -q "\"state\": *\"$1\"" && return 0
		sleep 0.02
	done
	bench_log "smtd never reached $1"
	return 1
}

# proc_ticks PID: utime + stime of PID in clock ticks.
proc_ticks() {
	awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0
}

ctxt() {
	awk '/^voluntary_ctxt_switches|^nonvoluntary_ctxt_switches/ { n += $2 } END { print n }' "/proc/$1/status"
}

# ---- B6: start-up ----
# b6_start [SMTD OPTIONS...]: ms from the exec of smtd to the exec of its
# stand-in mpirun (bench/stamp), or nothing when it did not run.
b6_start() {
	rm -f "$W/t0" "$W/t1"
	STAMP_FILE=$W/t1 "$BIN/stamp" -o "$W/t0" "$SMTD" --root "$W/ml" --socket "$W/smtd.sock" --sshd never --mpi \
		--processes-per-host 1 --preload "$SMTD_PRELOAD" --smtctl "$SMTCTL" --mpirun "$BIN/stamp" "$@" -- /bin/true \
		>/dev/null 2>"$W/b6.log"
	if [ -s "$W/t1" ]; then
		awk -v a="$(cat "$W/t0")" -v b="$(cat "$W/t1")" 'BEGIN { printf "%.2f", (b - a) * 1000 }'
	else
		bench_log "B6: the stand-in mpirun did not run: $(tail -3 "$W/b6.log")"
	fi
}

bench_b6() {
	local i n=20 d= dn= dr= tr= t0 t1
	[ $QUICK = 1 ] && n=6
	smtd_args 1
	for ((i = 1; i <= n; i++)); do
		d="$d $(b6_start)"
		dn="$dn $(b6_start --job-cgroup never)"
		t0=$(bench_now)
		"$SMTD" --root "$W/ml" --socket "$W/smtd.sock" --mpi --processes-per-host 2 --dry-run -- /bin/true >/dev/null 2>&1
		t1=$(bench_now)
		dr="$dr $(awk -v a=$t0 -v b=$t1 'BEGIN { printf "%.2f", (b - a) * 1000 }')"
		t0=$(bench_now)
		/bin/true
		t1=$(bench_now)
		tr="$tr $(awk -v a=$t0 -v b=$t1 'BEGIN { printf "%.2f", (b - a) * 1000 }')"
	done
	bench_record B6 "exec of smtd to exec of mpirun, one host (stand-in mpirun records its exec)" ms "≤ 5 ms" "$d" "$dn" "baseline: the same with --job-cgroup never"
	bench_record B6d "smtd --dry-run, fork+exec to exit" ms "≤ 3 ms (baseline: /bin/true the same way)" "$dr" "$tr"
}

# status_load CLIENTS TOTAL: statusload against the local smtd; sets LOAD.
status_load() {
	LOAD=$("$BIN/statusload" "$W/smtd.sock" "$1" "$2") || bench_log "statusload: not every request answered: $LOAD"
	echo "status load $1 clients $2 requests: $LOAD" >>"$W/logs/summary.txt"
}

field() {
	echo "$1" | tr ' ' '\n' | awk -F= -v k="$2" '$1 == k { print $2 }'
}

# ---- B7: status under load; issue 5: 200 clients while 100 MB flows ----
bench_b7() {
	# Lines enough to outlast the load (about 4 minutes at full speed).
	local i pid n=20000 rl= pl= rs= ps= lines=1000000000
	[ $QUICK = 1 ] && n=5000
	for ((i = 1; i <= RUNS; i++)); do
		bench_log "B7 run $i of $RUNS"
		smtd_local_bg 2 -- "$MPIDIR/mpi_job" lines $lines >/dev/null 2>"$W/b7.log"
		pid=$SPID
		wait_state running 20 || true
		status_load 32 $n
		rl="$rl $(field "$LOAD" rps)"; pl="$pl $(field "$LOAD" p99_ms)"
		kill -TERM $pid; wait $pid
		rm -f "$W"/ready.*
		smtd_local_bg 2 -- "$MPIDIR/mpi_job" sleep 600 "$W" >/dev/null 2>"$W/b7s.log"
		pid=$SPID
		wait_state running 20 || true
		status_load 32 $n
		rs="$rs $(field "$LOAD" rps)"; ps="$ps $(field "$LOAD" p99_ms)"
		kill -TERM $pid; wait $pid
	done
	bench_record B7 "GET /v1/status, 32 keep-alive clients, $n requests, while 2 ranks log at full speed" req/s "report (baseline: the same with silent ranks)" "$rl" "$rs"
	bench_record B7p "the same, p99 latency" ms "report" "$pl" "$ps"
	bench_issue5
}

bench_issue5() {
	local i pid n=50000 mb=100 ok= rps= p50= p99= ref= sum want got mbs= t0 t1
	[ $QUICK = 1 ] && n=10000
	"$BIN/ratewriter" 0 $mb | md5sum | cut -d' ' -f1 >"$W/i5.want"
	want=$(cat "$W/i5.want")
	for ((i = 1; i <= RUNS; i++)); do
		bench_log "issue 5 load run $i of $RUNS"
		# 100 MB at 40 MB/s (2.5 s); then the rank waits for a line on
		# a FIFO, so that the job outlasts a load that takes longer on a
		# busy machine.  The bench holds the FIFO open read-write: the
		# rank's open never blocks, nor does the bench's write.
		rm -f "$W/i5.go"
		mkfifo "$W/i5.go"
		exec 9<>"$W/i5.go"
		t0=$(bench_now)
		smtd_local_bg 1 -- /bin/sh -c '"$0" 40 "$1" && read -r go <"$2"' "$BIN/ratewriter" $mb "$W/i5.go" \
			>"$W/i5.out" 2>"$W/i5.log"
		pid=$SPID
		wait_state running 20 || true
		status_load 200 $n
		echo go >&9
		wait $pid || bench_log "issue 5: smtd exited $?"
		exec 9>&-
		t1=$(bench_now)
		got=$(grep -a '^\[1,mpirank:0,[^]]*\]<stdout>: ' "$W/i5.out" | sed 's/^\[1,mpirank:0,[^]]*\]<stdout>: //' | md5sum | cut -d' ' -f1)
		if [ "$got" = "$want" ]; then sum=1; else sum=0; bench_log "issue 5: output checksum differs ($got, want $want)"; fi
		ok="$ok $(field "$LOAD" ok)"; rps="$rps $(field "$LOAD" rps)"; p50="$p50 $(field "$LOAD" p50_ms)"
		p99="$p99 $(field "$LOAD" p99_ms)"; ref="$ref $(field "$LOAD" refused)"
		echo "issue 5 run $i: output checksum ok=$sum; $LOAD" >>"$W/logs/summary.txt"
		[ $sum = 1 ] || bench_note "issue 5 run $i: the job's output checksum differed"
	done
	bench_record I5 "issue 5: 200 clients, $n GET /v1/status in all, while a rank prints $mb MB at 40 MB/s: answered" requests "every request; output checksum equal" "$ok" ""
	bench_record I5r "issue 5: the same, requests per second" req/s "report" "$rps" ""
	bench_record I5m "issue 5: the same, p50 latency" ms "report" "$p50" ""
	bench_record I5p "issue 5: the same, p99 latency" ms "report" "$p99" ""
	bench_record I5x "issue 5: connections refused (503, over the 256-connection limit) and retried" count "—" "$ref" ""
}
