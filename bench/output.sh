# bench/output.sh - the ranks' output: its throughput on one
# host (B4) and on 3 simulated hosts (B4m), smtd's memory while it flows
# at full speed (B5, B5m) and its cost otherwise (B5i, B5w, B5c).  Sourced
# by bench/run.sh after single.sh and faults.sh.
#
# Every rank is `mpi_job lines N`: N numbered 48-byte lines on stdout
# ("rank R line NNNNNNNN abc...z"), block-buffered by stdio (4 KiB writes).
# The baselines run the toolkit's own mpirun command line (smtd's, less
# smtd's rank launcher and launch agent: plain_argv), whose `--tag-output`
# has mpirun forward and tag the ranks' output itself.

OUT_HYPER2='{"sagemaker_mpi_enabled": "true", "sagemaker_mpi_num_of_processes_per_host": "2"}'
OUT_HYPER8='{"sagemaker_mpi_enabled": "true", "sagemaker_mpi_num_of_processes_per_host": "8"}'

# lines_for MIB NP: lines per rank for MIB MiB of 48-byte lines in all.
lines_for() {
	echo $(($1 * 1048576 / 48 / $2))
}

# rate BYTES SECONDS: MB/s (10^6 bytes).
rate() {
	awk -v b="$1" -v s="$2" 'BEGIN { printf "%.1f", b / s / 1e6 }'
}

# hwm_watch TIMEOUT PID...: reads VmHWM and smaps_rollup of every PID
# every 0.1 s until they have all exited, for at most TIMEOUT seconds; sets
# HWM to the last VmHWM read of each (MiB, in order; VmHWM only grows, so
# the last read is the peak to within 0.1 s of the process's end), PD and
# PSS to the largest Private_Dirty and Pss read (MiB, in order).
# Private_Dirty is smtd's own anonymous memory; RSS adds the clean pages of
# its libraries, shared with every other process that maps them.
hwm_watch() {
	local -a last pd pss
	local i n alive key val rest
	for ((n = 0; n < $1 * 10; n++)); do
		alive=0
		for ((i = 2; i <= $#; i++)); do
			[ -r "/proc/${!i}/status" ] || continue
			while read -r key val rest; do
				[ "$key" = VmHWM: ] && { last[i]=$val; alive=1; break; }
			done <"/proc/${!i}/status" 2>/dev/null
			while read -r key val rest; do
				case $key in
				Pss:) [ "$val" -gt "${pss[i]:-0}" ] && pss[i]=$val ;;
				Private_Dirty:) [ "$val" -gt "${pd[i]:-0}" ] && pd[i]=$val ;;
				esac
			done <"/proc/${!i}/smaps_rollup" 2>/dev/null
		done
		[ $alive = 1 ] || break
		sleep 0.1
	done
	HWM= PD= PSS=
	for ((i = 2; i <= $#; i++)); do
		HWM="$HWM $(awk -v k="${last[i]:-0}" 'BEGIN { printf "%.2f", k / 1024 }')"
		PD="$PD $(awk -v k="${pd[i]:-0}" 'BEGIN { printf "%.2f", k / 1024 }')"
		PSS="$PSS $(awk -v k="${pss[i]:-0}" 'BEGIN { printf "%.2f", k / 1024 }')"
	done
}

# ---- B4: one host, 2 ranks, 1 GiB to /dev/null ----
# The ranks write 4 KiB at a time (`mpi_job blocklines`): the forwarding
# path's own speed.  B4d: the same ranks with stdio's defaults, which to a
# terminal (smtd's and orted's alike) write a line at a time: there the
# ranks' own writes bound both.
bench_b4() {
	local i mib=1024 lines bytes t0 secs s_mb= b_mb= s_l= b_l= t_mb= got ok
	[ $QUICK = 1 ] && mib=256
	lines=$(lines_for $mib 2)
	bytes=$((lines * 2 * 48))
	mpirun_argv 2 "$MPIDIR/mpi_job" blocklines $lines
	for ((i = 1; i <= RUNS; i++)); do
		bench_log "B4 run $i of $RUNS ($mib MiB), load $(bench_load)"
		t0=$(bench_now)
		# A job that failed is not timed: its run is recorded as failed.
		ok=1
		smtd_local 2 -- "$MPIDIR/mpi_job" blocklines $lines >/dev/null 2>"$W/b4.log" || { bench_log "B4 run $i: smtd failed, counted as failed: $(tail -3 "$W/b4.log")"; ok=0; }
		secs=$(bench_sub "$(bench_now)" "$t0")
		if [ $ok = 1 ]; then
			s_mb="$s_mb $(rate $bytes "$secs")"
			s_l="$s_l $(awk -v n=$((lines * 2)) -v s="$secs" 'BEGIN { printf "%.0f", n / s }')"
		else
			s_mb="$s_mb failed" s_l="$s_l failed"
		fi
		# B4t: the same through a terminal (--rank-stdout tty), in the same rounds.
		t0=$(bench_now)
		if smtd_local 2 --rank-stdout tty -- "$MPIDIR/mpi_job" blocklines $lines >/dev/null 2>"$W/b4t.log"; then
			t_mb="$t_mb $(rate $bytes "$(bench_sub "$(bench_now)" "$t0")")"
		else
			bench_log "B4t run $i: smtd failed, counted as failed: $(tail -3 "$W/b4t.log")"
			t_mb="$t_mb failed"
		fi
		ok=1
		t0=$(bench_now)
		"${ARGV[@]}" >/dev/null 2>"$W/b4b.log" || { bench_log "B4 run $i: mpirun failed, counted as failed: $(tail -3 "$W/b4b.log")"; ok=0; }
		secs=$(bench_sub "$(bench_now)" "$t0")
		if [ $ok = 1 ]; then
			b_mb="$b_mb $(rate $bytes "$secs")"
			b_l="$b_l $(awk -v n=$((lines * 2)) -v s="$secs" 'BEGIN { printf "%.0f", n / s }')"
		else
			b_mb="$b_mb failed" b_l="$b_l failed"
		fi
	done
	# Not timed: every line arrives, whole and tagged (an eighth of the size).
	got=$(smtd_local 2 -- "$MPIDIR/mpi_job" blocklines $((lines / 8)) 2>/dev/null |
		grep -c '^\[1,mpirank:[01],[^]]*\]<stdout>: rank [01] line [0-9]\{8\} abcdefghijklmnopqrstuvwxyz$')
	if [ "$got" = $((lines / 8 * 2)) ]; then
		bench_note "B4 check (not timed): $got of $((lines / 8 * 2)) lines arrived whole and tagged on smtd's stdout."
	else
		bench_log "B4: $got of $((lines / 8 * 2)) lines arrived whole"
		bench_note "B4 check (not timed) FAILED: $got of $((lines / 8 * 2)) lines arrived whole and tagged on smtd's stdout."
	fi
	bench_record B4 "$mib MiB of rank output (2 ranks, 48-byte lines) to /dev/null, job start to end" MB/s "ratio ≥ 2.0" "$s_mb" "$b_mb" "baseline: plain mpirun --tag-output >/dev/null"
	bench_record B4l "the same in lines" lines/s "ratio ≥ 2.0" "$s_l" "$b_l"
	bench_record B4t "B4 with --rank-stdout tty (a terminal, as under orted; the default is a pipe)" MB/s "—" "$t_mb" "$b_mb"
	bench_b4d "$((mib / 4))"
}

# B4d MIB: stdio's defaults (a line at a time to the terminal), MIB MiB.
bench_b4d() {
	local i mib=$1 lines bytes t0 s_mb= b_mb=
	lines=$(lines_for "$mib" 2)
	bytes=$((lines * 2 * 48))
	mpirun_argv 2 "$MPIDIR/mpi_job" lines $lines
	for ((i = 1; i <= RUNS; i++)); do
		bench_log "B4d run $i of $RUNS ($mib MiB), load $(bench_load)"
		t0=$(bench_now)
		if smtd_local 2 -- "$MPIDIR/mpi_job" lines $lines >/dev/null 2>"$W/b4d.log"; then
			s_mb="$s_mb $(rate $bytes "$(bench_sub "$(bench_now)" "$t0")")"
		else
			bench_log "B4d run $i: smtd failed, counted as failed: $(tail -3 "$W/b4d.log")"
			s_mb="$s_mb failed"
		fi
		t0=$(bench_now)
		if "${ARGV[@]}" >/dev/null 2>"$W/b4db.log"; then
			b_mb="$b_mb $(rate $bytes "$(bench_sub "$(bench_now)" "$t0")")"
		else
			bench_log "B4d run $i: mpirun failed, counted as failed: $(tail -3 "$W/b4db.log")"
			b_mb="$b_mb failed"
		fi
	done
	bench_record B4d "$mib MiB as B4, stdio's defaults (a line a write: to smtd's line-buffered pipe, to orted's terminal)" MB/s "—" "$s_mb" "$b_mb" "baseline: plain mpirun --tag-output >/dev/null"
}

# ---- B4m: 3 hosts x 2 ranks, every rank printing, the leader's stdout ----

# out_start_leader ARGS...: smtd_start 1 with smtd's stdout to /dev/null
# (its stderr, the log, stays in the console) through a wrapper in the
# run directory, which the hosts see.
out_start_leader() {
	printf '#!/bin/sh\nexec "%s" "$@" >/dev/null\n' "$SMTD" >"$RUN/smtd-stdout-null"
	chmod +x "$RUN/smtd-stdout-null"
	SMTD=$RUN/smtd-stdout-null smtd_start 1 "$@"
}

# out_stuck: what the leader's status says of every rank's lines, for a
# job that did not end.
out_stuck() {
	mh_exec 1 "$SMTCTL" status --json 2>/dev/null | /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)
print("lines taken by the leader: " + ", ".join("rank %d %d" % (r["rank"], r["lines"]) for r in d["job"]["ranks"]))' 2>/dev/null ||
		echo "the leader did not answer"
}

# b4m_smtd MIB: R = "MB/S TOTAL_SECONDS"; from the leader's launch of
# mpirun to the leader's exit, and from the start of the hosts.
b4m_smtd() {
	local lines t0 tl t1 bytes
	lines=$(lines_for "$1" 6)
	bytes=$((lines * 6 * 48))
	fault_setup b4m
	for k in 1 2 3; do smtd_hyper $k "$OUT_HYPER2"; done
	t0=$(bench_now)
	out_start_leader -- "$MPIDIR/mpi_job" lines $lines
	for k in 2 3; do smtd_start $k -- "$MPIDIR/mpi_job" lines $lines; done
	last_exit 1 2 3
	if [ "$LAST" = -1 ]; then
		bench_note "B4m run $RUN_NO: the job did not end within 60 s; $(out_stuck)"
		R=$(bench_failed 2)
		fault_teardown
		return
	fi
	t1=$(stat -c %.6Y "$(mh_host_dir 1)/exit")
	tl=$(bench_log_time "$(smtd_console 1)" 'launched mpirun') || tl=$t0
	R="$(rate $bytes "$(bench_sub "$t1" "$tl")") $(bench_sub "$t1" "$t0")"
	fault_check "algo-1=0 algo-2=0 algo-3=0" B4m || R=$(bench_failed 2)
	fault_teardown
}

# b4m_check MIB: not timed, as B4's check: 3 hosts x 2 ranks print an
# eighth of MIB, the leader's stdout through a FIFO to a counter; every
# line arrives whole and tagged (a note says how many).
b4m_check() {
	local lines want got counter
	lines=$(lines_for "$1" 6)
	lines=$((lines / 8))
	want=$((lines * 6))
	fault_setup b4mc
	for k in 1 2 3; do smtd_hyper $k "$OUT_HYPER2"; done
	mkfifo "$RUN/stdout.fifo"
	grep -c '^\[1,mpirank:[0-5],algo-[1-3]\]<stdout>: rank [0-5] line [0-9]\{8\} abcdefghijklmnopqrstuvwxyz$' \
		<"$RUN/stdout.fifo" >"$RUN/count" &
	counter=$!
	printf '#!/bin/sh\nexec "%s" "$@" >"%s"\n' "$SMTD" "$RUN/stdout.fifo" >"$RUN/smtd-stdout-fifo"
	chmod +x "$RUN/smtd-stdout-fifo"
	SMTD=$RUN/smtd-stdout-fifo smtd_start 1 -- "$MPIDIR/mpi_job" lines $lines
	for k in 2 3; do smtd_start $k -- "$MPIDIR/mpi_job" lines $lines; done
	last_exit 1 2 3
	if [ "$LAST" = -1 ]; then
		bench_note "B4m check (not timed) FAILED: the job did not end within 60 s; $(out_stuck)"
		kill $counter 2>/dev/null
		wait $counter
		fault_teardown
		return
	fi
	wait $counter
	got=$(cat "$RUN/count")
	if fault_check "algo-1=0 algo-2=0 algo-3=0" B4m-check && [ "$got" = "$want" ]; then
		bench_note "B4m check (not timed): $got of $want lines arrived whole and tagged on the leader's stdout."
	else
		bench_log "B4m: $got of $want lines arrived whole, exits$EXITS"
		bench_note "B4m check (not timed) FAILED: $got of $want lines arrived whole and tagged on the leader's stdout (exits$EXITS)."
	fi
	fault_teardown
}

# b4m_base MIB: R = MB/s of the plain mpirun from algo-1, hosts booted
# with sshd first (not timed).
b4m_base() {
	local lines t0 t1 bytes argv ok=1
	lines=$(lines_for "$1" 6)
	bytes=$((lines * 6 * 48))
	fault_setup b4mb
	for k in 1 2 3; do smtd_hyper $k "$OUT_HYPER2"; done
	mh_boot --sshd 2>>"$W/mh.log"
	mh_exec 1 env PATH=/usr/bin:/bin:/usr/sbin:/sbin "$SMTD" --preload "$SMTD_PRELOAD" --smtctl "$SMTCTL" \
		--dry-run --json -- "$MPIDIR/mpi_job" lines $lines >"$RUN/plan.json" 2>"$RUN/plan.err"
	mapfile -d '' argv < <(plain_argv <"$RUN/plan.json")
	t0=$(bench_now)
	mh_exec 1 env PATH=/usr/bin:/bin:/usr/sbin:/sbin OMPI_MCA_odls_base_sigkill_timeout=0 "${argv[@]}" \
		>/dev/null 2>"$RUN/err" || { bench_log "B4m: plain mpirun failed, counted as failed: $(tail -3 "$RUN/err")"; ok=0; }
	t1=$(bench_now)
	R=$(rate $bytes "$(bench_sub "$t1" "$t0")")
	[ $ok = 1 ] || R=failed
	fault_teardown
}

bench_b4m() {
	local i mib=1024 s= b= tot=
	[ $QUICK = 1 ] && mib=256
	for ((i = 1; i <= RUNS; i++)); do
		bench_log "B4m run $i of $RUNS ($mib MiB), load $(bench_load)"
		RUN_NO=$i
		b4m_smtd $mib
		s="$s ${R% *}"
		tot="$tot ${R#* }"
		b4m_base $mib
		b="$b $R"
	done
	b4m_check $mib
	bench_record B4m "$mib MiB of rank output, 3 hosts x 2 ranks (48-byte lines), the leader's stdout to /dev/null: the leader's launch of mpirun to its exit" MB/s "ratio ≥ 1.0" "$s" "$b" "baseline: plain mpirun --tag-output from algo-1, exec to exit"
	bench_record B4mt "the same, smtd: from the start of the hosts (sshd, readiness) to the leader's exit" s "—" "$tot" ""
}

# ---- B5: smtd's memory while 8 ranks print at full speed ----

# b5_one MIB: one host, 8 ranks; R = smtd's peak Private_Dirty, VmHWM and
# Pss (MiB).
b5_one() {
	smtd_local_bg 8 -- "$MPIDIR/mpi_job" lines "$(lines_for "$1" 8)" >/dev/null 2>"$W/b5.log"
	hwm_watch 600 $SPID
	local rc=0
	wait $SPID || rc=$?
	R="${PD# } ${HWM# } ${PSS# }"
	[ $rc = 0 ] || { bench_log "B5: smtd exited $rc, counted as failed: $(tail -3 "$W/b5.log")"; R=$(bench_failed 3); }
	if [ "${HWM# }" = 0.00 ]; then
		bench_note "B5 run $RUN_NO: smtd's VmHWM could not be read; its log ends: $(tail -2 "$W/b5.log" | tr '\n' ' ')"
		R="- - -"
	fi
}

# b5_hosts MIB: 3 hosts x 8 ranks; R = every host's smtd's peak
# Private_Dirty (MiB, algo-1 first), then RH their VmHWM and RP their Pss.
b5_hosts() {
	fault_setup b5m
	for k in 1 2 3; do smtd_hyper $k "$OUT_HYPER8"; done
	out_start_leader -- "$MPIDIR/mpi_job" lines "$(lines_for "$1" 24)"
	for k in 2 3; do smtd_start $k -- "$MPIDIR/mpi_job" lines "$(lines_for "$1" 24)"; done
	hwm_watch 60 "$(mh_pid1 1)" "$(mh_pid1 2)" "$(mh_pid1 3)"
	R=${PD# } RH=${HWM# } RP=${PSS# }
	if mh_running 1; then
		bench_note "B5m run $RUN_NO: the job did not end within 60 s; $(out_stuck)"
		R=$(bench_failed 3) RH=$R RP=$R
	else
		last_exit 1 2 3
		fault_check "algo-1=0 algo-2=0 algo-3=0" B5m || { R=$(bench_failed 3) RH=$R RP=$R; }
	fi
	fault_teardown
}

bench_b5() {
	local i n pid mp one= hl= hw= hall= rss= wk= cpu= mcpu= c0 c1 k0 k1 m0 m1 secs=10 tck mib=512
	local oner= onep= hallr= hallp=
	[ $QUICK = 1 ] && { secs=3; mib=128; }
	tck=$(getconf CLK_TCK)
	mpirun_argv 1 "$BIN/ratewriter" 100 500
	RATE_ARGV=("${ARGV[@]}")
	for ((i = 1; i <= RUNS; i++)); do
		bench_log "B5 run $i of $RUNS, load $(bench_load)"
		RUN_NO=$i
		b5_one $mib
		set -- $R
		one="$one $1" oner="$oner $2" onep="$onep $3"
		b5_hosts $mib
		hallr="$hallr $(max_of $RH)" hallp="$hallp $(max_of $RP)"
		set -- $R
		hl="$hl $1" hw="$hw $(max_of "$2" "$3")" hall="$hall $(max_of "$@")"
		# 8 silent ranks: memory and wakeups.
		rm -f "$W"/ready.*
		smtd_local_bg 8 -- "$MPIDIR/mpi_job" sleep 600 "$W" >/dev/null 2>"$W/b5s.log"
		pid=$SPID
		RUN=$W wait_ready 8 60 || true
		wait_state running 10 || true
		rss="$rss $(awk '/^VmRSS/ { printf "%.2f", $2 / 1024 }' /proc/$pid/status)"
		c0=$(ctxt $pid)
		sleep $secs
		c1=$(ctxt $pid)
		wk="$wk $(awk -v a=$c0 -v b=$c1 -v s=$secs 'BEGIN { printf "%.2f", (b - a) / s }')"
		kill -TERM $pid
		wait $pid
		# CPU while one rank writes 100 MB/s: smtd's, and plain mpirun's
		# forwarding the same.
		smtd_local_bg 1 -- "$BIN/ratewriter" 100 500 >/dev/null 2>"$W/b5c.log"
		pid=$SPID
		wait_state running 10 || true
		sleep 0.5
		k0=$(proc_ticks $pid)
		sleep 3
		k1=$(proc_ticks $pid)
		cpu="$cpu $(awk -v a=$k0 -v b=$k1 -v t=$tck 'BEGIN { printf "%.1f", (b - a) / t / 3 * 100 }')"
		kill -TERM $pid
		wait $pid
		"${RATE_ARGV[@]}" >/dev/null 2>"$W/b5cb.log" &
		mp=$!
		for ((n = 0; n < 1000; n++)); do pgrep -x ratewriter >/dev/null && break; sleep 0.01; done
		sleep 0.5
		m0=$(proc_ticks $mp)
		sleep 3
		m1=$(proc_ticks $mp)
		mcpu="$mcpu $(awk -v a=$m0 -v b=$m1 -v t=$tck 'BEGIN { printf "%.1f", (b - a) / t / 3 * 100 }')"
		kill -TERM $mp
		wait $mp
	done
	bench_record B5 "smtd's peak anonymous memory (Private_Dirty of smaps_rollup), one host, 8 ranks printing $mib MiB in all at full speed, stdout to /dev/null" MiB "≤ 8 MiB" "$one" ""
	bench_record B5r "the same, its peak RSS (VmHWM: with the clean pages of its libraries, shared)" MiB "—" "$oner" ""
	bench_record B5p "the same, its peak PSS" MiB "—" "$onep" ""
	bench_record B5m "the same on 3 hosts x 8 ranks ($mib MiB in all): the largest Private_Dirty of the 3 smtd" MiB "≤ 8 MiB on every host" "$hall" ""
	bench_record B5ml "B5m: the leader's (algo-1)" MiB "≤ 8 MiB" "$hl" ""
	bench_record B5mw "B5m: the larger of the workers' (algo-2, algo-3)" MiB "≤ 8 MiB" "$hw" ""
	bench_record B5mr "B5m: the largest peak RSS (VmHWM) of the 3" MiB "—" "$hallr" ""
	bench_record B5mp "B5m: the largest peak PSS of the 3" MiB "—" "$hallp" ""
	bench_record B5i "smtd RSS with 8 silent ranks running (one host, --oversubscribe)" MiB "—" "$rss" ""
	bench_record B5w "smtd wakeups (context switches) per second, 8 silent ranks, over $secs s" 1/s "≤ 1/s" "$wk" ""
	bench_record B5c "CPU while one rank writes 100 MB/s (100-byte lines), over 3 s" "% of a core" "—" "$cpu" "$mcpu" "baseline: plain mpirun --tag-output's own CPU forwarding the same"
}
