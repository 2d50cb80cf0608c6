#!/bin/bash
# Item 1: "nothing of the job is left" (smtd(8) SIGNALS) is observed
# while smtd is alive, not after its namespace is gone.  smtd_nothing_left
# (tests/multihost/smtd.sh) reads each host's nswatch report: a process of
# the job that ended only when smtd (PID 1) exited was left behind.
#   a. every rank double-forks a daemon (setsid, sleeps until killed) and
#      exits 0: the job succeeds, every daemon ended before its smtd did
#      (seen by the watch), smtd_nothing_left passes;
#   b. the same daemons, the job stopped by SIGTERM to the leader (--grace
#      2): the daemons keep the grace, then the final SIGKILL; again
#      nothing left;
# A build whose final kill is skipped fails a and b (checked, see the
# commit that added this test).
. "$top_srcdir/tests/multihost/prelude.sh"
command -v mpirun >/dev/null 2>&1 || skip_tool "mpirun (openmpi-bin)"
SIGRANK="$top_builddir/tests/helpers/sigrank"
hyper='{"sagemaker_mpi_enabled": "true", "sagemaker_mpi_num_of_processes_per_host": "2"}'

# scenario NAME [SMTD ARGS...] -- RANK COMMAND: 2 hosts (watched by
# smtd_start); D is the scenario's directory.
scenario() {
	local name=$1
	shift
	echo "---- $name"
	D=$T/$name
	mkdir -p "$D"
	mh_setup 2 "$D"
	for k in 1 2; do
		smtd_hyper $k "$hyper"
		smtd_start $k "$@"
	done
}

# daemons_seen_ending: every rank's daemon was seen by its host's watch
# and ended while smtd was alive (a watch that missed them would make
# smtd_nothing_left pass for nothing).
daemons_seen_ending() {
	local r k pid w
	for r in 0 1 2 3; do
		k=$((r / 2 + 1))
		[ -s "$1/daemon.$r" ] || fail "rank $r started no daemon"
		pid=$(cat "$1/daemon.$r")
		smtd_watch_wait $k
		w=$(awk -v p="$pid" '$1 == p { print $4 }' "$(smtd_watch_report $k)")
		[ "$w" = before ] || { cat "$(smtd_watch_report $k)" >&2; fail "algo-$k: rank $r's daemon (pid $pid) ended '$w' (not before smtd exited)"; }
	done
	echo "every rank's daemon ended before its host's smtd"
}

# ---- a. ranks that leave daemons behind, a job that succeeds ----
scenario daemons -- "$SIGRANK" --daemon "$T/daemons" --exit-after 1
smtd_wait_all 60
for k in 1 2; do smtd_check $k 0; done
smtd_nothing_left
daemons_seen_ending "$T/daemons"
mh_teardown

# ---- b. the same, stopped by SIGTERM to the leader ----
scenario stopped --grace 2 -- "$SIGRANK" --daemon "$T/stopped" --ready "$T/stopped"
for r in 0 1 2 3; do
	wait_for_file "$T/stopped/ready.$r" 30 || { smtd_show_all; fail "rank $r did not start"; }
	wait_for_file "$T/stopped/daemon.$r" 10 || fail "rank $r started no daemon"
done
mh_kill 1 TERM
smtd_wait_all 60
smtd_check 1 143 "Stopped" "SIGTERM"
smtd_check 2 1 "Stopped"
smtd_nothing_left
daemons_seen_ending "$T/stopped"
mh_teardown

echo ok
