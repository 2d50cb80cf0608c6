#!/bin/bash
# The job on a host is exactly its own processes (smtd(8) SIGNALS), with
# smtd started as many images start it: each host's init
# (tests/multihost/entry-init.sh) starts sshd and a sidecar (a log shipper
# stand-in: `sigrank --forever`, which records every signal it gets), then
# execs smtd as PID 1 (--sshd auto: the running sshd is used).
#   1. A job that succeeds (C MPI_Allreduce): every host exits 0 with
#      `success`; the workers got the leader's result over the channel (no
#      failure file, no LostLeader); sshd and the sidecar got no signal
#      and outlived smtd (nothing in the sidecar's record, sshd's PID the
#      same until smtd exited, no signal in sshd's log).
#   2. A job that fails (rank 3 on algo-2 exits 3): every host exits 1,
#      algo-2 names its own rank, the others the leader's report; sshd
#      and the sidecar as in 1.
#   3. Every rank double-forks a daemon (setsid, sleeps forever) and exits
#      0: the job succeeds and every daemon is killed by smtd before it
#      exits; again with --job-cgroup never (the job's mark finds them).
# tests/helpers/nswatch.c tells what smtd ended from what the kernel ended
# when PID 1 exited.
. "$top_srcdir/tests/multihost/prelude.sh"
MPIDIR=$("$top_srcdir/tests/helpers/build-mpi.sh") || exit $?
JOB="$MPIDIR/mpi_job"
SIGRANK="$top_builddir/tests/helpers/sigrank"
hyper='{"sagemaker_mpi_enabled": "true", "sagemaker_mpi_num_of_processes_per_host": "2"}'

# scenario NAME [SMTD ARGS...] -- RANK COMMAND: 3 hosts started through
# the entry point, each watched.  D is the scenario's directory.
scenario() {
	local name=$1
	shift
	echo "---- $name"
	D=$T/$name
	mkdir -p "$D"
	mh_setup 3 "$D"
	for k in 1 2 3; do
		smtd_hyper $k "$hyper"
		smtd_start_entry $k "$SIGRANK" "$@"
		smtd_watch $k
	done
	smtd_wait_all 60
	for k in 1 2 3; do smtd_watch_wait $k; done
}

# untouched: on every host sshd and the sidecar got no signal from smtd
# and were still there when it exited; smtd used that sshd.
untouched() {
	local k h report sshd sidecar w
	for k in 1 2 3; do
		h=$(mh_host_dir $k)
		report=$(smtd_watch_report $k)
		sshd=$(cat "$h/sshd.pid")
		sidecar=$(cat "$h/sidecar.pid")
		[ ! -s "$h/sidecar.signals" ] || fail "algo-$k: the sidecar got signals: $(tr '\n' ' ' <"$h/sidecar.signals")"
		w=$(awk -v p="$sidecar" '$1 == p { print $4 }' "$report")
		[ "$w" = teardown ] || { cat "$report" >&2; fail "algo-$k: the sidecar (pid $sidecar) ended '$w' smtd exited"; }
		w=$(awk -v p="$sshd" '$1 == p && $2 == "sshd" { print $4 }' "$report")
		[ "$w" = teardown ] || { cat "$report" >&2; fail "algo-$k: sshd (pid $sshd) ended '$w' smtd exited"; }
		! grep -q "Received signal\|Received SIGHUP" "$h/sshd.log" ||
			fail "algo-$k: sshd got a signal: $(grep "Received" "$h/sshd.log")"
		assert_not_contains "$(smtd_console $k)" "sshd started" "algo-$k used the sshd it found"
		[ "$(grep -c '^[0-9]* sshd ' "$report")" -ge 1 ] || fail "algo-$k: no sshd seen"
	done
	echo "sshd and the sidecar: no signal, alive until smtd exited, on every host"
}

# results_delivered: the workers took the leader's result (a worker
# without it would end LostLeader after --result-timeout).
results_delivered() {
	local k
	assert_not_contains "$(smtd_console 1)" "not every worker confirmed the result" "the leader's result delivery"
	for k in 2 3; do
		assert_not_contains "$(smtd_console $k)" "LostLeader" "algo-$k"
		assert_not_contains "$(smtd_console $k)" "sent no result" "algo-$k"
	done
}

# ---- 1. a job that succeeds ----
scenario success -- "$JOB" allreduce
for k in 1 2 3; do
	smtd_check $k 0
	[ ! -e "$(smtd_failure $k)" ] || fail "algo-$k has a failure file: $(head -1 "$(smtd_failure $k)")"
done
assert_contains "$(smtd_console 1)" "rank 5 of 6: sum 15" "the job ran"
results_delivered
untouched
mh_teardown

# ---- 2. a job that fails ----
scenario failure -- "$JOB" exit 3 3
smtd_check 1 1 "rank 3" "algo-2" "code 3"
smtd_check 2 1 "rank 3" "algo-2" "code 3"
smtd_check 3 1 "rank 3" "algo-2" "code 3" "reported by the leader algo-1"
results_delivered
untouched
mh_teardown

# ---- 3. ranks that leave daemons behind ----
# daemons_killed: each rank's daemon ended before smtd exited.
daemons_killed() {
	local r k pid w
	for r in 0 1 2 3 4 5; do
		k=$((r / 2 + 1))
		[ -s "$D/daemon.$r" ] || fail "rank $r started no daemon"
		pid=$(cat "$D/daemon.$r")
		w=$(awk -v p="$pid" '$1 == p { print $4 }' "$(smtd_watch_report $k)")
		[ "$w" = before ] || { cat "$(smtd_watch_report $k)" >&2; fail "algo-$k: rank $r's daemon (pid $pid) was not ended by smtd ($w)"; }
	done
	for k in 1 2 3; do
		# The daemons, and on the leader whatever of mpirun's ssh clients
		# was still ending.
		grep -q "killed [0-9]* processes of the job left behind" "$(smtd_console $k)" ||
			fail "algo-$k does not say it killed what the job left behind"
	done
	echo "every rank's daemon was killed by its host's smtd"
}
scenario daemons -- "$SIGRANK" --daemon "$T/daemons" --exit-after 1
for k in 1 2 3; do
	smtd_check $k 0
	if [ -n "$MH_CG_RUN" ]; then
		assert_contains "$(smtd_console $k)" "the job's processes go into cgroup" "algo-$k's job cgroup"
	fi
done
[ -n "$MH_CG_RUN" ] || echo "no cgroup v2 for the hosts here: the job was told by its tree and its mark"
daemons_killed
results_delivered
untouched
mh_teardown

scenario daemons-nocgroup --job-cgroup never -- "$SIGRANK" --daemon "$T/daemons-nocgroup" --exit-after 1
for k in 1 2 3; do
	smtd_check $k 0
	assert_not_contains "$(smtd_console $k)" "go into cgroup" "algo-$k without a job cgroup"
done
daemons_killed
results_delivered
untouched
mh_teardown
echo ok
