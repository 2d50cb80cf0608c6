# bench/faults.sh - B1, B2 and the faults of docs/MULTIHOST-TESTING.md
# ("The faults, by name") on 3 simulated hosts (sourced by bench/run.sh
# after lib.sh, hosts.sh and smtd.sh).
#
# Every run builds 3 fresh hosts (tests/multihost/hosts.sh; set-up and
# tear-down are not timed).  smtd runs as every host's PID 1 with sshd
# managed by smtd; the baseline boots the same hosts with mh-init + sshd
# (mh_boot --sshd) and runs the same mpirun from algo-1, as
# tests/multihost/test_harness.sh does.

FAULT_OPTS=(--peer-timeout 2 --grace 5)
FAULT_HYPER='{"sagemaker_mpi_enabled": "true", "sagemaker_mpi_num_of_processes_per_host": "2"}'

# The production-style line of docs/MULTIHOST-TESTING.md.
baseline_mpirun() {
	mh_exec 1 env PATH=/usr/bin:/bin:/usr/sbin:/sbin mpirun --allow-run-as-root -np 6 \
		--host algo-1:2,algo-2:2,algo-3:2 -mca btl_tcp_if_include eth0 -mca oob_tcp_if_include eth0 \
		-mca plm_rsh_no_tree_spawn 1 -mca odls_base_sigkill_timeout 0 -mca orte_abort_on_non_zero_status 1 "$@"
}

# fault_setup NAME: 3 fresh hosts under $W/NAME (sets RUN).
fault_setup() {
	RUN=$W/$1
	rm -rf "$RUN"
	mkdir -p "$RUN"
	mh_setup 3 "$RUN" 2>>"$W/mh.log"
	for k in 1 2 3; do smtd_hyper $k "$FAULT_HYPER"; done
}

fault_teardown() {
	local k
	mkdir -p "$W/logs"
	for k in 1 2 3; do
		[ -f "$RUN/algo-$k/console.log" ] && cp "$RUN/algo-$k/console.log" "$W/logs/${RUN##*/}-$RUN_NO-algo-$k.log"
	done
	mh_teardown 2>>"$W/mh.log"
	rm -rf "$RUN"
}

# wait_ready N TIMEOUT: until N ranks created $RUN/ready.*.
wait_ready() {
	local i n
	for ((i = 0; i < $2 * 100; i++)); do
		n=$(find "$RUN" -maxdepth 1 -name 'ready.*' | wc -l)
		[ "$n" -ge "$1" ] && return 0
		sleep 0.01
	done
	bench_log "only $n of $1 ranks came up in $RUN"
	return 1
}

# host_pid K COMM: a process COMM of host K (machine's PID).
host_pid() {
	mh_pids "$1" | awk -v c="$2" '$3 == c { print $1; exit }'
}

# last_exit HOSTS...: waits for the hosts; sets LAST (the latest exit
# time) and EXITS ("algo-K=CODE ...").
last_exit() {
	local k t code
	LAST=0 EXITS=
	for k in "$@"; do
		code=$(mh_wait "$k" 60) || { bench_log "algo-$k did not exit"; tail -5 "$(smtd_console "$k")" >&2; LAST=-1; return; }
		EXITS="$EXITS algo-$k=$code"
		t=$(stat -c %.6Y "$(mh_host_dir "$k")/exit")
		LAST=$(awk -v a="$LAST" -v b="$t" 'BEGIN { print (b > a ? b : a) }')
	done
}

fault_check() {
	local expect=$1 got
	FAULT_OK=1
	got=$(echo $EXITS)
	# A run whose job did not end as it should is not timed: the caller
	# records it as failed (bench_failed).
	[ "$got" = "$expect" ] || { bench_log "$2 run ${RUN_NO:-?}: unexpected exit codes: $got (expected $expect): counted as failed"; FAULT_OK=0; }
	if [ -s "$(smtd_failure 1)" ]; then
		echo "$2: $(head -c 300 "$(smtd_failure 1)" | head -1)" >>"$W/failure-lines.txt"
	elif [ -s "$(smtd_failure 2)" ]; then
		echo "$2 (algo-2): $(head -c 300 "$(smtd_failure 2)" | head -1)" >>"$W/failure-lines.txt"
	fi
	[ $FAULT_OK = 1 ]
}

# ---- B1: trivial 3-host job, start to every host exited ----
# b1_smtd [NAME SMTD-OPTIONS...]: R, the time; CHECKS, the slowest host's
# built-in preflight checks as its log gives them (ms).
b1_smtd() {
	local t0 t1 name=${1:-b1s} k ms
	[ $# = 0 ] || shift
	fault_setup "$name"
	t0=$(bench_now)
	for k in 1 2 3; do smtd_start $k "$@" -- "$MPIDIR/mpi_job" allreduce; done
	last_exit 1 2 3; t1=$LAST
	R=$(bench_sub "$t1" "$t0")
	fault_check "algo-1=0 algo-2=0 algo-3=0" B1 || R=failed
	CHECKS=
	for k in 1 2 3; do
		ms=$(sed -n 's/.*: built-in checks passed in \([0-9.]*\) ms.*/\1/p' "$(smtd_console $k)" | head -1)
		[ -n "$ms" ] || continue
		CHECKS=$(max_of $CHECKS $ms)
	done
	fault_teardown
}

b1_base() {
	local t0 t1 ok
	fault_setup b1b
	t0=$(bench_now)
	mh_boot --sshd 2>>"$W/mh.log"
	ok=1
	baseline_mpirun "$MPIDIR/mpi_job" allreduce >"$RUN/out" 2>&1 || { bench_log "baseline mpirun failed: $(tail -3 "$RUN/out")"; ok=0; }
	t1=$(bench_now)
	R=$(bench_sub "$t1" "$t0")
	[ $ok = 1 ] || R=failed
	fault_teardown
}

# b1_base_argv: the baseline with smtd's own mpirun argv (smtd --dry-run
# --json on algo-1, less the launch agent), to tell smtd's cost from its
# mpirun options' cost.
b1_base_argv() {
	local t0 t1 ok=1
	fault_setup b1x
	mh_boot --sshd 2>>"$W/mh.log"
	mh_exec 1 env PATH=/usr/bin:/bin:/usr/sbin:/sbin "$SMTD" --preload "$SMTD_PRELOAD" --smtctl "$SMTCTL" \
		--dry-run --json -- "$MPIDIR/mpi_job" allreduce >"$RUN/plan.json" 2>"$RUN/plan.err"
	# Without smtd's launch agent, which needs smtd on the workers.
	mapfile -d '' argv < <(/usr/bin/python3 -c '
import json, sys
a = json.load(open(sys.argv[1]))["argv"]
i = a.index("orte_launch_agent")
del a[i - 1:i + 2]
sys.stdout.write("\0".join(a) + "\0")' "$RUN/plan.json")
	t0=$(bench_now)
	mh_exec 1 env PATH=/usr/bin:/bin:/usr/sbin:/sbin OMPI_MCA_odls_base_sigkill_timeout=0 "${argv[@]}" >"$RUN/out" 2>&1 ||
		{ bench_log "baseline mpirun (smtd's argv) failed: $(tail -3 "$RUN/out")"; ok=0; }
	t1=$(bench_now)
	R=$(bench_sub "$t1" "$t0")
	[ $ok = 1 ] || R=failed
	fault_teardown
}

# ---- B2: a rank on algo-2 SIGKILLed ----
# Also gives rank-sigkill (fault to last exit, and mpirun's exit to last
# exit).
b2_smtd() {
	local tf t1 tm pid
	fault_setup b2s
	for k in 1 2 3; do smtd_start $k "${FAULT_OPTS[@]}" -- "$MPIDIR/mpi_job" sleep 600 "$RUN"; done
	wait_ready 6 60 || { fault_teardown; R="- -"; return; }
	pid=$(host_pid 2 mpi_job)
	tf=$(bench_now)
	kill -KILL "$pid"
	last_exit 1 2 3; t1=$LAST
	tm=$(bench_log_time "$(smtd_console 1)" 'state running -> finishing')
	R="$(bench_sub "$t1" "$tf") $(bench_sub "$t1" "$tm")"
	fault_check "algo-1=1 algo-2=1 algo-3=1" rank-sigkill || R=$(bench_failed 2)
	fault_teardown
}

b2_base() {
	local tf t1 pid mp
	fault_setup b2b
	mh_boot --sshd 2>>"$W/mh.log"
	baseline_mpirun "$MPIDIR/mpi_job" sleep 600 "$RUN" >"$RUN/out" 2>&1 &
	mp=$!
	wait_ready 6 60 || { kill $mp; fault_teardown; R=-; return; }
	pid=$(host_pid 2 mpi_job)
	tf=$(bench_now)
	kill -KILL "$pid"
	wait "$mp"
	t1=$(bench_now)
	R=$(bench_sub "$t1" "$tf")
	fault_teardown
}

# ---- the faults, smtd only ----
# FAULTS: the faults timed here, by their names in docs/MULTIHOST-TESTING.md.
FAULTS="rank-exit rank-exit-barrier rank-raise orted-kill host-down leader-down link-down sigterm-all"

fault_known() {
	case " $FAULTS " in *" $1 "*) return 0 ;; esac
	return 1
}

# fault_run NAME: prints "FAULT_TO_LAST MPIRUN_EXIT_TO_LAST" ("-" when the
# fault has no such time).
fault_run() {
	local name=$1 tf=- t1 tm pid hosts="1 2 3" expect cmd sleeper
	sleeper=("$MPIDIR/mpi_job" sleep 600)
	fault_setup "$name"
	case $name in
	rank-exit) cmd=("$MPIDIR/mpi_job" exit 2 3); expect="algo-1=1 algo-2=1 algo-3=1" ;;
	rank-exit-barrier) cmd=("$MPIDIR/mpi_job" exit 2 1); expect="algo-1=1 algo-2=1 algo-3=1" ;;
	rank-raise) cmd=(/usr/bin/python3 -m mpi4py "$BENCH_DIR/raise.py"); expect="algo-1=1 algo-2=1 algo-3=1" ;;
	orted-kill) cmd=("${sleeper[@]}" "$RUN"); expect="algo-1=1 algo-2=1 algo-3=1" ;;
	host-down) cmd=("${sleeper[@]}" "$RUN"); hosts="1 3"; expect="algo-1=3 algo-3=3" ;;
	leader-down) cmd=("${sleeper[@]}" "$RUN"); hosts="2 3"; expect="algo-2=3 algo-3=3" ;;
	link-down) cmd=("${sleeper[@]}" "$RUN"); expect="algo-1=3 algo-2=3 algo-3=3" ;;
	sigterm-all) cmd=("${sleeper[@]}" "$RUN"); expect="algo-1=143 algo-2=143 algo-3=143" ;;
	esac
	for k in 1 2 3; do smtd_start $k "${FAULT_OPTS[@]}" -- "${cmd[@]}"; done
	if [ "${cmd[1]}" = sleep ]; then
		wait_ready 6 60 || { fault_teardown; R="- -"; return; }
		case $name in
		orted-kill) pid=$(host_pid 2 orted); tf=$(bench_now); kill -KILL "$pid" ;;
		host-down) tf=$(bench_now); mh_vanish 2 ;;
		leader-down) tf=$(bench_now); mh_vanish 1 ;;
		link-down) tf=$(bench_now); mh_link_down 2 ;;
		sigterm-all) pid="$(mh_pid1 1) $(mh_pid1 2) $(mh_pid1 3)"; tf=$(bench_now); kill -TERM $pid ;;
		esac
	fi
	last_exit $hosts; t1=$LAST
	fault_check "$expect" "$name"
	tm=$(bench_log_time "$(smtd_console 1)" 'state running -> finishing' 2>/dev/null) || tm=
	[ "$tf" = - ] || tf=$(bench_sub "$t1" "$tf")
	case $name in rank-* | orted-kill) [ -n "$tm" ] && tm=$(bench_sub "$t1" "$tm") || tm=- ;; *) tm=- ;; esac
	R="$tf $tm"
	[ $FAULT_OK = 1 ] || R=$(bench_failed 2)
	echo "$name run $RUN_NO: fault->last exit $tf s, mpirun exit->last exit $tm s, exits$EXITS" >>"$W/logs/summary.txt"
	fault_teardown
}

bench_b1b2() {
	local i b1s= b1b= b1x= b2s= b2b= r2m= b1n= b1c=
	for ((i = 1; i <= RUNS; i++)); do
		bench_log "B1/B2 run $i of $RUNS"
		RUN_NO=$i
		b1_smtd; b1s="$b1s $R"
		[ -z "$CHECKS" ] || b1c="$b1c $CHECKS"
		# The same job without the built-in preflight checks (every one
		# that applies here: shared memory and free disk).
		b1_smtd b1n --no-gpu-check --no-efa-check --min-shm 0 --min-free-disk 0; b1n="$b1n $R"
		b1_base; b1b="$b1b $R"
		b1_base_argv; b1x="$b1x $R"
		b2_smtd; b2s="$b2s ${R% *}"; r2m="$r2m ${R#* }"
		b2_base; b2b="$b2b $R"
	done
	bench_record B1 "trivial 3-host job (3x2 ranks): start to every host exited" s "≤ baseline + 0.3 s" "$b1s" "$b1b"
	bench_record B1x "B1, baseline mpirun with smtd's own argv (sshd already up, mpirun only)" s "—" "$b1s" "$b1x"
	bench_record B1p "B1 with the built-in preflight checks (baseline: the same job without them, same run)" s "≤ baseline + 0.02 s" "$b1s" "$b1n"
	bench_record B1c "built-in preflight checks' own time, the slowest host of each B1 run (smtd's log)" ms "≤ 20 ms" "${b1c:-failed}" ""
	bench_record B2 "rank-sigkill (a rank on algo-2 SIGKILLed): fault to every host exited (baseline: mpirun's exit)" s "≤ baseline + 0.5 s" "$b2s" "$b2b"
	bench_record rank-sigkill "rank-sigkill: mpirun's exit to every host exited" s "≤ 1 s" "$r2m" ""
}

# bench_faults [NAMES]: the faults timed (default: all of FAULTS).
bench_faults() {
	local i f a c
	for f in ${1:-$FAULTS}; do
		a= c=
		for ((i = 1; i <= RUNS; i++)); do
			bench_log "fault $f run $i of $RUNS"
			RUN_NO=$i
			fault_run "$f"
			a="$a ${R% *}"
			c="$c ${R#* }"
		done
		case $f in
		rank-exit) bench_record $f "rank-exit (a rank on a worker exits 3): mpirun's exit to every host exited" s "≤ 1 s" "$c" "" ;;
		rank-exit-barrier) bench_record $f "rank-exit-barrier (a rank exits 1, the others in MPI_Barrier): mpirun's exit to every host exited" s "≤ 1 s" "$c" "" ;;
		rank-raise) bench_record $f "rank-raise (a Python exception on the leader): mpirun's exit to every host exited" s "≤ 1 s" "$c" "" ;;
		orted-kill)
			bench_record $f "orted-kill (orted on a worker SIGKILLed): mpirun's exit to every host exited" s "≤ 1 s" "$c" ""
			bench_record "$f (fault)" "orted-kill: fault to every host exited" s "≤ 1 s after mpirun's exit" "$a" ""
			;;
		host-down) bench_record $f "host-down (worker algo-2 vanishes): fault to every other host exited" s "≤ peer-timeout (2) + 1 = 3 s" "$a" "" ;;
		leader-down) bench_record $f "leader-down (the leader vanishes): fault to every worker exited" s "≤ peer-timeout (2) + 1 = 3 s" "$a" "" ;;
		link-down) bench_record $f "link-down (link leader-algo-2 down): fault to every host exited" s "≤ peer-timeout (2) + 1 = 3 s" "$a" "" ;;
		sigterm-all) bench_record $f "sigterm-all (SIGTERM to every host): fault to every host exited" s "≤ grace (5) + 1 = 6 s" "$a" "" ;;
		esac
	done
	bench_note "Faults (named in docs/MULTIHOST-TESTING.md) run with \`--peer-timeout 2 --grace 5\` and OMPI_MCA_odls_base_sigkill_timeout=0 (tests/multihost/smtd.sh); the first line of each failure file is in failure-lines.txt of the work directory."
}
