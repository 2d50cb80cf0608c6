# bench/b3.sh - B3: leader readiness with 1, 16, 64, 256 workers on one
# machine (sourced by bench/run.sh; the work is bench/b3-inner.sh in a
# network and mount namespace of its own).

bench_b3() {
	local mode n v vals cpus out
	for mode in ssh fake; do
		for n in 1 16 64 256; do
			bench_log "B3 $mode: $n workers, $RUNS runs"
			mkdir -p "$W/b3"
			out=$(SMTCTL=$SMTCTL SMTD=$SMTD SMTD_PRELOAD=$SMTD_PRELOAD BIN=$BIN \
				unshare --net --mount --fork -- /bin/bash "$BENCH_DIR/b3-inner.sh" "$W/b3" $mode $n $RUNS 2>>"$W/b3.log")
			vals=$(echo "$out" | awk '{ print $2 }' | tr '\n' ' ')
			cpus=$(echo "$out" | awk '{ print $3 }' | tr '\n' ' ')
			cp "$W"/b3/leader-*.log "$W/logs/" 2>/dev/null
			if [ $mode = ssh ]; then
				bench_record "B3-$n" "leader readiness, $n workers over ssh (one sshd, loopback): leader exec to mpirun exec" s "256 in ≤ 2 s" "$vals" ""
				bench_record "B3c-$n" "the same, CPU of the leader and its ssh clients (the workers' sshd side excluded)" "CPU s" "—" "$cpus" ""
			else
				bench_record "B3f-$n" "the same, $n workers, the leader's ssh replaced by a direct smtctl dial-stdio (smtd's own cost)" s "—" "$vals" ""
			fi
		done
	done
}
