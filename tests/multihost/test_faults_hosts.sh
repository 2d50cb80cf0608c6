#!/bin/bash
# The faults of hosts and links, and stops, on 3 simulated hosts:
# host-down, leader-down, link-down, link-blip (a drop shorter than
# --peer-timeout, which must not end the job), host-missing,
# leader-missing, sigterm-all and sigterm-leader (named and described in
# docs/MULTIHOST-TESTING.md, "The faults, by name").
. "$top_srcdir/tests/multihost/prelude.sh"
MPIDIR=$("$top_srcdir/tests/helpers/build-mpi.sh") || exit $?
JOB="$MPIDIR/mpi_job"
hyper='{"sagemaker_mpi_enabled": "true", "sagemaker_mpi_num_of_processes_per_host": "2"}'
PT=5      # --peer-timeout for these tests
GRACE=2   # --grace
# host-down, leader-down, link-down: a grace far longer than the bound
# they are checked against, so that a leader that waits out the grace for
# mpirun (which waits forever for the lost host's daemon) fails them.
LOST_GRACE=60
SIGRANK="$top_builddir/tests/helpers/sigrank"

row() {
	echo "---- $1"
	mkdir -p "$T/$1"
	mh_setup 3 "$T/$1"
	for k in 1 2 3; do smtd_hyper $k "$hyper"; done
}
start_all() {
	for k in 1 2 3; do smtd_start $k --peer-timeout $PT --grace $GRACE "$@"; done
}
start_lost() { # start_lost DIR: ranks that record their signals in DIR/signals
	for k in 1 2 3; do
		smtd_start $k --peer-timeout $PT --grace $LOST_GRACE -- "$SIGRANK" --record "$1/signals" --ready "$1"
	done
	dir=$1
	for r in 0 1 2 3 4 5; do
		wait_until 30 '[ -e "$dir/ready.$r" ]' 'rank $r did not start'
	done
}
within() { # within SECONDS WHAT
	awk -v s="$SINCE" -v l="$1" 'BEGIN { exit !(s <= l) }' || fail "$2 took $SINCE s (> $1 s)"
}

# host-down: a worker host vanishes mid-job.  The leader's own ranks get
# SIGTERM (a chance to checkpoint) and the job ends as soon as they have
# ended, not after the grace.
row host-down
start_lost "$T/host-down"
t0=$EPOCHREALTIME
mh_vanish 3
smtd_wait_all 60
smtd_time_since "$t0"
smtd_check 1 3 "LostHost" "algo-3"
smtd_check 2 3 "algo-3"
assert_contains "$T/host-down/signals" "0 TERM" "the leader's rank 0 after a lost worker"
assert_contains "$T/host-down/signals" "1 TERM" "the leader's rank 1 after a lost worker"
assert_contains "$(smtd_console 1)" "the ranks here have ended: stopping the job's command" "the leader after a lost worker"
smtd_nothing_left
within $((PT + 3)) "a vanished worker"
mh_teardown

# leader-down: the leader host vanishes mid-job.
row leader-down
start_lost "$T/leader-down"
t0=$EPOCHREALTIME
mh_vanish 1
smtd_wait_all 60
smtd_time_since "$t0"
smtd_check 2 3 "LostLeader" "algo-1"
smtd_check 3 3 "LostLeader" "algo-1"
smtd_nothing_left
within $((PT + 3)) "a vanished leader"
mh_teardown

# link-down: the link between the leader and one worker goes down mid-job.
row link-down
start_lost "$T/link-down"
t0=$EPOCHREALTIME
mh_link_down 2
smtd_wait_all 60
smtd_time_since "$t0"
smtd_check 1 3 "LostHost" "algo-2"
smtd_check 2 3 "LostLeader" "algo-1"
smtd_check 3 3 "algo-2"
smtd_nothing_left
assert_contains "$T/link-down/signals" "0 TERM" "the leader's rank 0 after a cut link"
within $((PT + 3)) "a cut link"
mh_teardown

# link-blip: a transient drop shorter than --peer-timeout does not end
# the job.
row link-blip
for k in 1 2 3; do smtd_start $k --peer-timeout 6 -- "$JOB" sleep 6; done
smtd_wait_line 1 "rank 5 ready"
mh_link_down 2
sleep 1.5
mh_link_up 2
smtd_wait_all 60
for k in 1 2 3; do smtd_check $k 0; done
mh_teardown

# host-missing: a worker never comes up.
row host-missing
smtd_start 1 --wait-timeout 3 -- "$JOB" allreduce
smtd_start 2 --wait-timeout 3 -- "$JOB" allreduce
for k in 1 2; do code=$(mh_wait $k 30) || fail "algo-$k did not end"; eval "EXIT_$k=$code"; done
smtd_check 1 3 "PeersNotReady" "algo-3"
smtd_check 2 3 "algo-3"
mh_teardown
# leader-missing: the leader never comes up.
row leader-missing
smtd_start 2 --wait-timeout 2 -- "$JOB" allreduce
code=$(mh_wait 2 30) || fail "algo-2 did not end"; EXIT_2=$code
smtd_check 2 3 "LeaderNotReady" "algo-1"
mh_teardown

# sigterm-all: SIGTERM to every host at once, as a platform stop does.
row sigterm-all
start_all -- "$JOB" sleep 60
smtd_wait_line 1 "rank 5 ready"
# At once: one kill(1) for the three PID 1s.  Sent one by one, a worker
# whose SIGTERM comes after the leader's result (the leader reacts within
# tens of ms) reports the stop of the leader instead (sigterm-leader).
pids=$(for k in 1 2 3; do mh_pid1 $k; done)
t0=$EPOCHREALTIME
kill -TERM $pids
smtd_wait_all 60
smtd_time_since "$t0"
for k in 1 2 3; do smtd_check $k 143 "Stopped" "SIGTERM"; done
for k in 1 2 3; do grep -q "RankFailed\|RankKilled" "$(smtd_failure $k)" && fail "algo-$k blames a rank"; done
smtd_nothing_left
within $((GRACE + 1)) "a stop of every host"
mh_teardown

# sigterm-leader: SIGTERM to the leader only.
row sigterm-leader
start_all -- "$JOB" sleep 60
smtd_wait_line 1 "rank 5 ready"
t0=$EPOCHREALTIME
mh_kill 1 TERM
smtd_wait_all 60
smtd_time_since "$t0"
smtd_check 1 143 "Stopped" "SIGTERM"
smtd_check 2 1 "Stopped" "algo-1"
smtd_check 3 1 "Stopped" "algo-1"
smtd_nothing_left
mh_teardown
echo ok
