# bench/single.sh - one-host benchmarks B4-B7 and issue 5's load (sourced
# by bench/run.sh).  smtd runs on the machine itself (no resourceconfig:
# one host named after gethostname()), without sshd.  The ranks
# oversubscribe the 2 cores; the baselines run the same mpirun argv.

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

# mpirun_argv NP CMD...: sets ARGV to the mpirun argv smtd would run, with
# --xml replaced by the toolkit's --tag-output (no smtd to decode XML).
mpirun_argv() {
	local np=$1 a
	shift
	mapfile -d '' a < <(smtd_local "$np" --dry-run --json -- "$@" 2>/dev/null |
		/usr/bin/python3 -c 'import json,sys; sys.stdout.write("\0".join(json.load(sys.stdin)["argv"]) + "\0")')
	ARGV=()
	for x in "${a[@]}"; do
		case $x in
		--xml) ARGV+=(--tag-output) ;;
		--display-map | --output-proctable) ;;
		*) ARGV+=("$x") ;;
		esac
	done
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

# ---- B4: 1 GiB of rank output to /dev/null ----
bench_b4() {
	local i mib=1024 lines t0 t1 s_mb= s_l= b_mb= b_l= bytes secs
	[ $QUICK = 1 ] && mib=256
	# 2 ranks, 48-byte lines (mpi_job lines), mib MiB in all.
	lines=$((mib * 1048576 / 48 / 2))
	bytes=$((lines * 2 * 48))
	mpirun_argv 2 "$MPIDIR/mpi_job" lines $lines
	for ((i = 1; i <= RUNS; i++)); do
		bench_log "B4 run $i of $RUNS ($mib MiB)"
		t0=$(bench_now)
		smtd_local 2 -- "$MPIDIR/mpi_job" lines $lines >/dev/null 2>"$W/b4.log" || bench_log "smtd failed: $(tail -3 "$W/b4.log")"
		t1=$(bench_now)
		secs=$(bench_sub "$t1" "$t0")
		s_mb="$s_mb $(awk -v b=$bytes -v s=$secs 'BEGIN { printf "%.1f", b / s / 1e6 }')"
		s_l="$s_l $(awk -v n=$((lines * 2)) -v s=$secs 'BEGIN { printf "%.0f", n / s }')"
		t0=$(bench_now)
		"${ARGV[@]}" >/dev/null 2>"$W/b4b.log" || bench_log "mpirun failed: $(tail -3 "$W/b4b.log")"
		t1=$(bench_now)
		secs=$(bench_sub "$t1" "$t0")
		b_mb="$b_mb $(awk -v b=$bytes -v s=$secs 'BEGIN { printf "%.1f", b / s / 1e6 }')"
		b_l="$b_l $(awk -v n=$((lines * 2)) -v s=$secs 'BEGIN { printf "%.0f", n / s }')"
	done
	bench_record B4 "$mib MiB of rank output (2 ranks, 48-byte lines) to /dev/null, job start to end" MB/s "ratio ≥ 0.9" "$s_mb" "$b_mb" "baseline: mpirun --tag-output >/dev/null"
	bench_record B4l "the same in lines" lines/s "ratio ≥ 0.9" "$s_l" "$b_l"
}

# ---- B5: footprint ----
bench_b5() {
	local i pid mp rss= hwm= wk= cpu= mcpu= c0 c1 k0 k1 m0 m1 secs=10 tck
	[ $QUICK = 1 ] && secs=3
	tck=$(getconf CLK_TCK)
	for ((i = 1; i <= RUNS; i++)); do
		bench_log "B5 run $i of $RUNS"
		rm -f "$W"/ready.*
		smtd_local_bg 8 -- "$BIN/hang" "$W" >/dev/null 2>"$W/b5.log"
		pid=$SPID
		RUN=$W wait_ready 8 60 || true
		wait_state running 10 || true
		sleep 0.5
		rss="$rss $(awk '/^VmRSS/ { printf "%.2f", $2 / 1024 }' /proc/$pid/status)"
		c0=$(ctxt $pid)
		sleep $secs
		c1=$(ctxt $pid)
		hwm="$hwm $(awk '/^VmHWM/ { printf "%.2f", $2 / 1024 }' /proc/$pid/status)"
		wk="$wk $(awk -v a=$c0 -v b=$c1 -v s=$secs 'BEGIN { printf "%.2f", (b - a) / s }')"
		kill -TERM $pid
		wait $pid
		# CPU while one rank writes 100 MB/s.
		smtd_local_bg 1 -- "$BIN/ratewriter" 100 500 >/dev/null 2>"$W/b5c.log"
		pid=$SPID
		wait_state running 10 || true
		mp=$(pgrep -P $pid -x mpirun)
		sleep 0.5
		k0=$(proc_ticks $pid); m0=$(proc_ticks "$mp")
		sleep 3
		k1=$(proc_ticks $pid); m1=$(proc_ticks "$mp")
		cpu="$cpu $(awk -v a=$k0 -v b=$k1 -v t=$tck 'BEGIN { printf "%.1f", (b - a) / t / 3 * 100 }')"
		mcpu="$mcpu $(awk -v a=$m0 -v b=$m1 -v t=$tck 'BEGIN { printf "%.1f", (b - a) / t / 3 * 100 }')"
		kill -TERM $pid
		wait $pid
	done
	bench_record B5 "smtd RSS with an 8-rank job running (--oversubscribe)" MiB "≤ 4 MiB + documented buffers" "$rss" ""
	bench_record B5h "smtd peak RSS (VmHWM) after the silent period" MiB "—" "$hwm" ""
	bench_record B5w "smtd wakeups (context switches) per second, 8 silent ranks, over $secs s" 1/s "≤ 1/s" "$wk" ""
	bench_record B5c "CPU while forwarding 100 MB/s (1 rank, 100-byte lines), over 3 s" "% of a core" "— (baseline: mpirun's own CPU in the same run)" "$cpu" "$mcpu"
}

# ---- B6: start-up ----
bench_b6() {
	local i n=20 d= dr= tr= t0 t1
	[ $QUICK = 1 ] && n=6
	for ((i = 1; i <= n; i++)); do
		rm -f "$W/t0" "$W/t1"
		STAMP_FILE=$W/t1 "$BIN/stamp" -o "$W/t0" "$SMTD" --root "$W/ml" --socket "$W/smtd.sock" --sshd never --mpi \
			--processes-per-host 1 --preload "$SMTD_PRELOAD" --smtctl "$SMTCTL" --mpirun "$BIN/stamp" -- /bin/true \
			>/dev/null 2>"$W/b6.log"
		if [ -s "$W/t1" ]; then
			d="$d $(awk -v a="$(cat "$W/t0")" -v b="$(cat "$W/t1")" 'BEGIN { printf "%.2f", (b - a) * 1000 }')"
		else
			bench_log "B6: the stand-in mpirun did not run: $(tail -3 "$W/b6.log")"
		fi
		t0=$(bench_now)
		"$SMTD" --root "$W/ml" --socket "$W/smtd.sock" --mpi --processes-per-host 2 --dry-run -- /bin/true >/dev/null 2>&1
		t1=$(bench_now)
		dr="$dr $(awk -v a=$t0 -v b=$t1 'BEGIN { printf "%.2f", (b - a) * 1000 }')"
		t0=$(bench_now)
		/bin/true
		t1=$(bench_now)
		tr="$tr $(awk -v a=$t0 -v b=$t1 'BEGIN { printf "%.2f", (b - a) * 1000 }')"
	done
	bench_record B6 "exec of smtd to exec of mpirun, one host (stand-in mpirun records its exec)" ms "≤ 5 ms" "$d" ""
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
	local i pid n=20000 rl= pl= rs= ps= lines=50000000
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
		smtd_local_bg 2 -- "$BIN/hang" "$W" >/dev/null 2>"$W/b7s.log"
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
		# 100 MB at 40 MB/s: the job prints for the whole load.
		t0=$(bench_now)
		smtd_local_bg 1 -- "$BIN/ratewriter" 40 $mb >"$W/i5.out" 2>"$W/i5.log"
		pid=$SPID
		wait_state running 20 || true
		status_load 200 $n
		wait $pid || bench_log "issue 5: smtd exited $?"
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
