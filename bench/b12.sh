# bench/b12.sh - B12: the leader's cost per worker with 256, 512 and 1000
# real smtd workers on this machine, through B3's fakessh shim
# so that OpenSSH's CPU does not hide smtd's own.  Sourced by bench/run.sh;
# the work is bench/b12-inner.sh in a network and mount namespace of its
# own.  B12_SIZES overrides the sizes, B12_RUNS the runs per size (1: a
# 1000-worker run takes minutes of this machine's 2 cores).  smtd's column
# is the default, TCP channels after readiness; the baseline is the same
# leader with --channels ssh (an ssh per channel, smtctl dial-stdio here),
# at the sizes up to B12_SSH_MAX (512: at 1000 its channels' forks stalled
# this machine past the peer timeout).
#
# Rows: totals at each size (Bxx-N), and for the sizes after the first the
# per-worker cost with the first size's as the baseline, so that the ratio
# column is the growth per worker (1.00: linear).  report.py adds the rows
# at 4000 workers, a + b*N fitted through the smallest and largest size.

# b12_get KEY LINES: the values of KEY=... of every line, space-separated.
b12_get() {
	echo "$2" | tr ' ' '\n' | awk -F= -v k="$1" '$1 == k && $2 != "-" { printf "%s ", $2 }'
}

# b12_run CHANNELS N RUNS: b12-inner.sh's lines, every smtd with --channels
# CHANNELS.
b12_run() {
	mkdir -p "$W/b12"
	CHANNELS=$1 SMTCTL=$SMTCTL SMTD=$SMTD SMTD_PRELOAD=$SMTD_PRELOAD BIN=$BIN \
		unshare --net --mount --fork -- /bin/bash "$BENCH_DIR/b12-inner.sh" "$W/b12" "$2" "$3" 2>>"$W/b12.log"
	for f in "$W"/b12/leader-*.log; do
		[ -e "$f" ] && mv "$f" "$W/logs/$1-$(basename "$f")"
	done
	rm -rf "$W"/b12/w*
}

# b12_end_floor N: B12ef's seconds, every worker ending on its own signal
# with the leader gone (b12-inner.sh END_FLOOR).
b12_end_floor() {
	b12_get end "$(END_FLOOR=1 b12_run tcp "$1" "$2")"
}

# b12_stall N RUNS: B12x's run (b12-inner.sh STALL=3: the ranks silent
# after their one line, the leader's --stall-timeout 3).
b12_stall() {
	STALL=3 b12_run tcp "$1" "$2"
}

# b12_per VALUES N [SCALE]: every value divided by N (times SCALE).
b12_per() {
	echo "$1" | awk -v n="$2" -v s="${3:-1}" '{ for (i = 1; i <= NF; i++) printf "%.4f ", $i / n * s }'
}

# b12_floor N: what readiness cannot go under here, one channel process
# per worker as the leader starts them (B12g against B12c: their CPU, not
# the leader's, is most of it): N `fakessh HOST smtctl dial-stdio` asking
# one worker's status, two at a time (this machine's cores), in seconds.
b12_floor() {
	B3_DIR=$W/b12 FLOOR_N=$1 SMTCTL=$SMTCTL SMTD=$SMTD SMTD_PRELOAD=$SMTD_PRELOAD BIN=$BIN \
		unshare --net --mount --fork -- /bin/bash "$BENCH_DIR/b12-inner.sh" "$W/b12" "$1" 1 2>>"$W/b12.log"
}

bench_b12() {
	local n out sizes runs first= v key id unit scale vals stall
	local -A per
	sizes=${B12_SIZES:-256 512 1000}
	[ $QUICK = 1 ] && sizes=${B12_SIZES:-64 256}
	runs=${B12_RUNS:-1}
	local ssh_max=${B12_SSH_MAX:-512} base
	for n in $sizes; do
		bench_log "B12: $n workers, $runs runs, load $(bench_load)"
		out=$(b12_run tcp $n $runs)
		bench_log "B12 $n: $out"
		base=
		if [ "$n" -le "$ssh_max" ]; then
			base=$(b12_run ssh $n $runs)
			bench_log "B12 $n, --channels ssh: $base"
		fi
		bench_record "B12r-$n" "readiness of $n workers through fakessh: leader exec to mpirun exec" s "≤ 1.5 s at 1000" "$(b12_get ready "$out")" "$(b12_get ready "$base")"
		bench_record "B12c-$n" "the same, the leader's own CPU (utime + stime)" "CPU s" "≤ 0.5 ms per worker" "$(b12_get cpu "$out")" "$(b12_get cpu "$base")"
		bench_record "B12g-$n" "the same, the leader and its channel processes (cpuacct cgroup)" "CPU s" "—" "$(b12_get cgcpu "$out")" "$(b12_get cgcpu "$base")"
		bench_record "B12m-$n" "the leader's RSS, every channel open and idle, the job running" MiB "≤ 32 MiB at 1000" "$(b12_get rss "$out")" "$(b12_get rss "$base")"
		bench_record "B12p-$n" "the same, its PSS" MiB "≤ 32 MiB at 1000" "$(b12_get pss "$out")" "$(b12_get pss "$base")"
		bench_record "B12d-$n" "the same, its Private_Dirty (smaps_rollup)" MiB "—" "$(b12_get pd "$out")" "$(b12_get pd "$base")"
		bench_record "B12a-$n" "the same, its anonymous memory (Anonymous, smaps_rollup)" MiB "—" "$(b12_get anon "$out")" "$(b12_get anon "$base")"
		bench_record "B12f-$n" "the same, its open descriptors" count "—" "$(b12_get fds "$out")" "$(b12_get fds "$base")"
		bench_record "B12h-$n" "the leader's channel processes (smtctl dial-stdio here, ssh on real hosts)" count "≤ 1 per worker" "$(b12_get chan "$out")" "$(b12_get chan "$base")"
		bench_record "B12hm-$n" "their private memory (Private_Clean + Private_Dirty), summed" MiB "—" "$(b12_get chanpriv "$out")" "$(b12_get chanpriv "$base")"
		bench_record "B12w-$n" "the leader's wakeups (context switches) per second, $n idle channels, over ${WK_SECS:-5} s" 1/s "0 at 1000" "$(b12_get wk "$out")" "$(b12_get wk "$base")"
		bench_record "B12wc-$n" "the same, summed over its channel processes" 1/s "—" "$(b12_get chwk "$out")" "$(b12_get chwk "$base")"
		bench_record "B12l-$n" "one line from a rank on every one of $n workers, printed at once, to the last of them on the leader's stdout" s "≤ 1 s at 1000" "$(b12_get lines "$out")" "$(b12_get lines "$base")"
		bench_record "B12k-$n" "smtctl stacks on the leader: every one of $n workers reads its rank's stack (a stand-in eu-stack) and the leader groups them, all $n read" s "≤ 3 s at 1000" "$(b12_get stacks "$out")" "$(b12_get stacks "$base")"
		bench_record "B12s-$n" "the readiness floor on this machine: $n channel processes (fakessh, smtctl dial-stdio to a worker's socket, one status request each) run by a shell, 2 at a time, no leader" s "—" "$(b12_floor "$n")" ""
		bench_record "B12e-$n" "the job's end: its stand-in mpirun killed (the leader's decision) to the last of $n workers' exit" s "≤ 1 s at 1000" "$(b12_get end "$out")" "$(b12_get end "$base")"
		stall=$(b12_stall "$n" "$runs")
		bench_log "B12 $n, a stall: $stall"
		bench_record "B12x-$n" "a stall, 1 rank on each of $n workers silent after its line (--stall-timeout 3): the leader's \"the job is stalled\" to its failure line (every rank's stack read with a stand-in eu-stack and grouped, the failure file written, every worker told)" s "≤ 3 s at 1000" "$(b12_get stall "$stall")" ""
		bench_record "B12xc-$n" "the same, to every stack collected on the leader" s "—" "$(b12_get stallc "$stall")" ""
		bench_record "B12ef-$n" "the end's floor on this machine: the leader killed, each of $n workers' smtd sent SIGTERM at once (its rank stopped, its failure file written, its exit, no message of the leader's) to the last worker's exit" s "—" "$(b12_end_floor "$n" "$runs")" ""
		# Per worker, against the first size's.
		for v in ready:B12r:s:1000 cpu:B12c:ms:1000 lines:B12l:s:1000 stacks:B12k:s:1000 pss:B12p:KiB:1024 anon:B12a:KiB:1024 chan:B12h:count:1 chanpriv:B12hm:MiB:1 wk:B12w:1/s:1; do
			IFS=: read -r key id unit scale <<<"$v"
			vals=$(b12_per "$(b12_get "$key" "$out")" "$n" "$scale")
			[ "$unit" = s ] && unit=ms
			if [ -z "$first" ]; then
				per[$key]=$vals
			else
				bench_record "${id}n-$n" "per worker at $n (baseline: per worker at the first size); ratio above 1: grows faster than linearly" "$unit" "$([ $key = cpu ] && echo '≤ 0.5 ms')$([ $key = chan ] && echo '≤ 1')" "$vals" "${per[$key]}" ""
			fi
		done
		first=${first:-$n}
	done
	bench_note "B12: the baseline column is the same leader with --channels ssh (sizes up to $ssh_max), an ssh process per channel (smtctl dial-stdio through fakessh here). B12 sizes $sizes: the per-worker rows (B12*n) divide by N, their baseline is the same at $first workers; the 4000 rows are a + b*N through the first and last size's medians (bench/report.py)."
}
