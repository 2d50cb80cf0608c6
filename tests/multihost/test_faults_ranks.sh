#!/bin/bash
# The faults of a rank, orted, sshd and the configuration, on 3 simulated
# hosts: rank-exit, rank-exit-barrier, rank-sigkill, rank-raise,
# orted-kill, orted-unannounced, sshd-kill and config-mismatch (named and
# described in docs/MULTIHOST-TESTING.md, "The faults, by name").
# After each: every host's exit code, its failure file naming the culprit,
# no process left in any host, and the time from the fault to the last exit.
. "$top_srcdir/tests/multihost/prelude.sh"
MPIDIR=$("$top_srcdir/tests/helpers/build-mpi.sh") || exit $?
JOB="$MPIDIR/mpi_job"
hyper='{"sagemaker_mpi_enabled": "true", "sagemaker_mpi_num_of_processes_per_host": "2"}'

row() { # row NAME: a fresh set of 3 hosts for the fault NAME
	echo "---- $1"
	mkdir -p "$T/$1"
	mh_setup 3 "$T/$1"
	for k in 1 2 3; do smtd_hyper $k "$hyper"; done
}

# rank-exit: a rank on a worker exits 3.
row rank-exit
for k in 1 2 3; do smtd_start $k -- "$JOB" exit 3 3; done
smtd_wait_all 60
for k in 1 2 3; do smtd_check $k 1 "rank 3" "algo-2" "code 3"; done
smtd_nothing_left
mh_teardown

# rank-exit-barrier: a rank exits 1 while the others hang in MPI_Barrier.
row rank-exit-barrier
for k in 1 2 3; do smtd_start $k -- "$JOB" exit 4 1; done
smtd_wait_all 60
for k in 1 2 3; do smtd_check $k 1 "rank 4" "algo-3" "code 1"; done
smtd_nothing_left
mh_teardown

# rank-sigkill: a rank on a worker is SIGKILLed.
row rank-sigkill
for k in 1 2 3; do smtd_start $k -- "$JOB" sleep 60; done
smtd_wait_line 1 "rank 5 ready"
pid=$(smtd_pid_of 2 mpi_job) || fail "no rank found on algo-2"
t0=$EPOCHREALTIME
kill -KILL "$pid"
smtd_wait_all 60
smtd_time_since "$t0"
for k in 1 2 3; do smtd_check $k 1 "algo-2" "SIGKILL" "rank "; done
grep -qE "rank [23] " "$(smtd_failure 1)" || fail "the killed rank (2 or 3) is not named: $(head -1 "$(smtd_failure 1)")"
smtd_nothing_left
mh_teardown

# rank-raise: a Python exception on a rank of the leader.
row rank-raise
cat >"$T/rank-raise/raise.py" <<'PY'
from mpi4py import MPI
c = MPI.COMM_WORLD
if c.Get_rank() == 1:
    raise ValueError("shapes do not match")
c.Barrier()
PY
for k in 1 2 3; do smtd_start $k -- /usr/bin/python3 -m mpi4py "$T/rank-raise/raise.py"; done
smtd_wait_all 60
for k in 1 2 3; do smtd_check $k 1 "ValueError: shapes do not match" "rank 1" "algo-1"; done
smtd_nothing_left
mh_teardown

# kill_orted: SIGKILL algo-3's orted once every rank runs; every host
# fails naming algo-3, whose smtd kills the orphaned ranks.
kill_orted() {
	smtd_wait_line 1 "rank 5 ready"
	pid=$(smtd_pid_of 3 orted) || fail "no orted on algo-3"
	t0=$EPOCHREALTIME
	kill -KILL "$pid"
	smtd_wait_all 60
	smtd_time_since "$t0"
	for k in 1 2 3; do smtd_check $k 1 "DaemonLost" "algo-3"; done
	# By algo-3's smtd: when it saw its orted end ("orted ended and left
	# 2 ranks running here"), or, when the leader's end message came first
	# (mpirun saw the orted go too; under load, a few ms sooner), by that.
	for r in 4 5; do
		grep -q "rank $r (pid [0-9]*) was killed by SIGTERM" "$(smtd_console 3)" ||
			fail "algo-3's smtd did not end the orphaned rank $r: $(grep "rank $r\|orted" "$(smtd_console 3)")"
	done
	smtd_nothing_left
	mh_teardown
}

# orted-kill: orted on a worker is SIGKILLed; its orphaned ranks die with it.
row orted-kill
for k in 1 2 3; do smtd_start $k -- "$JOB" sleep 60; done
kill_orted

# orted-unannounced: orted-kill, with orted started without smtd's launch
# agent (custom MPI options replace orte_launch_agent): nothing announces
# it, so each worker finds it in /proc 5 s after the launch message and
# watches it from there.
row orted-unannounced
for k in 1 2 3; do
	smtd_hyper $k '{"sagemaker_mpi_enabled": "true", "sagemaker_mpi_num_of_processes_per_host": "2", "sagemaker_mpi_custom_mpi_options": "-mca orte_launch_agent orted"}'
	smtd_start $k -- "$JOB" sleep 60
done
for k in 2 3; do smtd_wait_line $k "orted was not announced; found it in /proc (pid"; done
kill_orted

# sshd-kill: sshd killed on a worker before the launch: restarted, the job runs.
row sshd-kill
smtd_start 2 -- "$JOB" allreduce
pid=$(smtd_pid_of 2 sshd) || fail "no sshd on algo-2"
kill -KILL "$pid"
wait_until 20 'mh_exec 2 "$SMTCTL" status --json >"$T/sshd-kill/status.json" 2>/dev/null &&
	grep -q "\"sshd_restarts\": *1" "$T/sshd-kill/status.json"' \
	'sshd restart not counted: $(cat "$T/sshd-kill/status.json")'
mh_exec 2 "$SMTCTL" status | grep -i sshd || true
smtd_start 1 -- "$JOB" allreduce
smtd_start 3 -- "$JOB" allreduce
smtd_wait_all 60
for k in 1 2 3; do smtd_check $k 0; done
smtd_nothing_left
mh_teardown

# config-mismatch: one host's resourceconfig lists other hosts: nothing is launched.
row config-mismatch
mh_write_resourceconfig 3 '["algo-1","algo-2","algo-3","algo-4"]'
for k in 1 2 3; do smtd_start $k -- "$JOB" allreduce; done
smtd_wait_all 60
for k in 1 2 3; do smtd_check $k 2 "algo-3" "ConfigurationError"; done
grep -q "launched" "$(smtd_console 1)" && fail "the leader launched mpirun"
grep -q "rank 0 of" "$(smtd_console 1)" && fail "a rank ran"
smtd_nothing_left
mh_teardown
echo ok
