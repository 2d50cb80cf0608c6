# bench/grace.sh - B8: a platform stop that the ranks survive
# long enough to write their checkpoints (sourced by bench/run.sh after
# faults.sh).
#
# 3 fresh simulated hosts x 2 ranks of bench/ckptrank: rank R needs
# B8_NEED[R] seconds after SIGTERM to write DIR/ckpt.R, then exits 0.
# smtd (--grace longer than every need, Open MPI's own
# odls_base_sigkill_timeout of 1 s as in production): SIGTERM to every
# host's PID 1 at once (sigterm-all, docs/MULTIHOST-TESTING.md), measured
# to the last host's exit.  Baseline: the toolkit's way, plain mpirun from
# algo-1 (hosts booted with sshd), SIGTERM to mpirun, measured to its exit;
# both count the checkpoints written.

B8_NEED="1.0 1.4 1.8 2.2 2.6 3.0"
B8_GRACE=10
B8_HYPER='{"sagemaker_mpi_enabled": "true", "sagemaker_mpi_num_of_processes_per_host": "2"}'

# b8_ckpts: sets CK (checkpoints in $RUN) and, from them, SIGMAX (the
# latest signal's arrival after TF, s), DONE (the latest checkpoint's end,
# epoch s) and SIGS (stopping signals received by the ranks in all).
b8_ckpts() {
	local f files=()
	CK=0 SIGMAX=- DONE=0 SIGS=0
	for f in "$RUN"/ckpt.*; do
		case ${f##*/ckpt.} in *[!0-9]* | "") continue ;; esac
		files+=("$f")
	done
	CK=${#files[@]}
	[ $CK -gt 0 ] || return 0
	set -- $(cat "${files[@]}" | awk -v tf="$TF" '/^rank / {
		d = $6 - tf; if (d > s) s = d
		if ($8 > done) done = $8
		n += $10
	} END { printf "%.3f %.6f %d", s, done, n }')
	SIGMAX=$1 DONE=$2 SIGS=$3
}

b8_smtd() {
	local k slow pids
	fault_setup b8
	for k in 1 2 3; do
		smtd_hyper $k "$B8_HYPER"
		SMTD_MH_SIGKILL_TIMEOUT=1 smtd_start $k --grace $B8_GRACE -- "$BIN/ckptrank" "$RUN" $B8_NEED
	done
	wait_ready 6 60 || { fault_teardown; R="- - - - -"; return; }
	pids="$(mh_pid1 1) $(mh_pid1 2) $(mh_pid1 3)"
	TF=$(bench_now)
	kill -TERM $pids
	last_exit 1 2 3
	fault_check "algo-1=143 algo-2=143 algo-3=143" B8
	b8_ckpts
	slow=$(max_of $B8_NEED)
	# total, overshoot over the slowest need, checkpoints, the latest
	# signal's arrival, the last checkpoint's end to the last exit.
	R="$(bench_sub "$LAST" "$TF") $(awk -v a="$LAST" -v t="$TF" -v s="$slow" 'BEGIN { printf "%.3f", a - t - s }') $CK $SIGMAX $(bench_sub "$LAST" "$DONE")"
	[ $FAULT_OK = 1 ] || R=$(bench_failed 5)
	[ $SIGS = "$CK" ] || bench_note "B8 run $RUN_NO: the ranks received $SIGS stopping signals for $CK checkpoints (one each expected)"
	echo "B8 run $RUN_NO: $R (total overshoot checkpoints signal-arrival last-ckpt-to-exit), exits$EXITS" >>"$W/logs/summary.txt"
	fault_teardown
}

# The toolkit's way: SIGTERM to mpirun; Open MPI SIGKILLs the ranks 1 s
# (odls_base_sigkill_timeout) after it forwarded the signal.
b8_base() {
	local mp pid i
	fault_setup b8b
	for k in 1 2 3; do smtd_hyper $k "$B8_HYPER"; done
	mh_boot --sshd 2>>"$W/mh.log"
	mh_exec 1 env PATH=/usr/bin:/bin:/usr/sbin:/sbin mpirun --allow-run-as-root --tag-output -np 6 \
		--host algo-1:2,algo-2:2,algo-3:2 -mca btl_tcp_if_include eth0 -mca oob_tcp_if_include eth0 \
		-mca plm_rsh_no_tree_spawn 1 -mca btl '^openib,uct,ofi' "$BIN/ckptrank" "$RUN" $B8_NEED \
		>"$RUN/out" 2>&1 &
	mp=$!
	wait_ready 6 60 || { kill $mp; fault_teardown; R="- -"; return; }
	pid=$(host_pid 1 mpirun)
	TF=$(bench_now)
	kill -TERM "$pid"
	wait $mp
	R=$(bench_sub "$(bench_now)" "$TF")
	# What Open MPI left running may still write its checkpoint.
	for ((i = 0; i < 500; i++)); do
		[ -z "$(for k in 1 2 3; do host_pid $k ckptrank; done)" ] && break
		sleep 0.01
	done
	b8_ckpts
	R="$R $CK"
	fault_teardown
}

bench_b8() {
	local i t= o= c= s= e= bt= bc= slow
	slow=$(max_of $B8_NEED)
	for ((i = 1; i <= RUNS; i++)); do
		bench_log "B8 run $i of $RUNS, load $(bench_load)"
		RUN_NO=$i
		b8_smtd
		set -- $R
		t="$t $1" o="$o $2" c="$c $3" s="$s $4" e="$e $5"
		b8_base
		set -- $R
		bt="$bt $1" bc="$bc $2"
	done
	bench_record B8 "SIGTERM to every host, ranks needing $B8_NEED s to checkpoint, --grace $B8_GRACE: signal to every host exited" s "≤ slowest rank ($slow s) + 0.5 s" "$t" "$bt" "baseline: SIGTERM to plain mpirun, to its exit"
	bench_record B8o "B8: overshoot, signal to every host exited less the slowest rank's $slow s" s "≤ 0.5 s" "$o" ""
	bench_record B8c "B8: checkpoints written, of 6" count "6" "$c" "$bc"
	bench_record B8s "B8: signal to the last rank's SIGTERM (as the rank saw it)" s "—" "$s" ""
	bench_record B8e "B8: the last checkpoint written to every host exited" s "—" "$e" ""
}
