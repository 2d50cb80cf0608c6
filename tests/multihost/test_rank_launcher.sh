#!/bin/bash
# The rank launcher (`smtctl rank -- PROGRAM`, smtd(8) OUTPUT, The control API):
#   1. A rank known from its start: 3 hosts x 2 ranks that sleep 5 s
#      before MPI_Init (sigrank_mpi --pre-init-sleep).  Meanwhile
#      `smtctl status --json` on each worker shows its own two ranks
#      running with their real PIDs, and the leader's shows all six ranks,
#      each with its host and PID - before any rank called MPI_Init.
#   2. No smtd to reach: the launcher runs the program unchanged, in its
#      own place (exec: the same PID), after one line on stderr that says
#      so - with a rank number in the environment, without one, and under
#      a plain mpirun run by hand.
. "$top_srcdir/tests/multihost/prelude.sh"
MPIDIR=$("$top_srcdir/tests/helpers/build-mpi.sh") || exit $?
hyper='{"sagemaker_mpi_enabled": "true", "sagemaker_mpi_num_of_processes_per_host": "2"}'

# ---- 1. PIDs before MPI_Init ----
echo "---- status before MPI_Init"
D=$T/preinit
mkdir -p "$D"
mh_setup 3 "$D"
for k in 1 2 3; do
	smtd_hyper $k "$hyper"
	smtd_start $k -- "$MPIDIR/sigrank_mpi" --pid-dir "$D" --pre-init-sleep 5 --ready "$D" --exit-after 0.5
done
for r in 0 1 2 3 4 5; do
	wait_for_file "$D/pid.$r" 30 || { smtd_show_all; fail "rank $r never started"; }
done
t_started=$EPOCHREALTIME
# status_ranks K: host K's ranks from smtctl status --json, one
# "RANK HOST PID STATE" a line, sorted.
status_ranks() {
	mh_exec "$1" "$SMTCTL" status --json >"$D/status.$1.json" || return 1
	/usr/bin/python3 -c '
import json, sys
for r in sorted(json.load(open(sys.argv[1]))["job"]["ranks"], key=lambda r: r["rank"]):
    print(r["rank"], r["host"], r["pid"], r["state"])' "$D/status.$1.json"
}
expect_ranks() { # expect_ranks K RANK...: host K shows these ranks with their PIDs
	local k=$1 want= r i
	shift
	for r in "$@"; do want="$want$r algo-$((r / 2 + 1)) $(cat "$D/pid.$r") running"$'\n'; done
	for ((i = 0; i < 100; i++)); do
		got=$(status_ranks "$k")$'\n'
		[ "$got" = "$want" ] && break
		sleep 0.05
	done
	[ "$got" = "$want" ] || fail "algo-$k's status: expected
$want, got
$got($(cat "$D/status.$k.json"))"
	printf 'algo-%d shows:\n%s' "$k" "$got"
}
expect_ranks 2 2 3
expect_ranks 3 4 5
expect_ranks 1 0 1 2 3 4 5
since=$(mh__elapsed "$t_started")
for r in 0 1 2 3 4 5; do
	[ ! -e "$D/ready.$r" ] || fail "rank $r had called MPI_Init already: the status was not taken before it"
done
echo "every status taken $since s after the ranks started, before MPI_Init (5 s)"
smtd_wait_all 60
for k in 1 2 3; do smtd_check $k 0; done
for r in 0 1 2 3 4 5; do [ -e "$D/ready.$r" ] || fail "rank $r never reached MPI_Init"; done
mh_teardown

# ---- 2. no smtd ----
echo "---- no smtd to reach"
# run_alone NAME [VAR=VALUE...]: smtctl rank -- sh -c '...' with no smtd at
# the socket; the program reports its PID, which must be the launcher's.
run_alone() {
	local name=$1 pid
	shift
	env -u OMPI_COMM_WORLD_RANK -u PMIX_RANK -u RANK "$@" SMTD_SOCKET="$T/none/smtd.sock" \
		"$SMTCTL" rank -- /bin/sh -c 'echo "pid=$$ args=$0 $1" >"$1"' "x y" "$T/$name.out" 2>"$T/$name.err" &
	pid=$!
	wait $pid || fail "$name: the launcher exited $?"
	assert_eq "$(cat "$T/$name.out")" "pid=$pid args=x y $T/$name.out" "$name: the program's PID and arguments"
	assert_eq "$(wc -l <"$T/$name.err")" 1 "$name: lines on stderr ($(cat "$T/$name.err"))"
	echo "$name: $(cat "$T/$name.err")"
}
mkdir -p "$T/none"
run_alone rank3 OMPI_COMM_WORLD_RANK=3
assert_contains "$T/rank3.err" "cannot reach smtd at $T/none/smtd.sock" "the launcher says why"
assert_contains "$T/rank3.err" "unchanged" "the launcher says it runs the program as it is"
run_alone norank
assert_contains "$T/norank.err" "no rank number" "the launcher says why"
# Its exit code is the program's own.
OMPI_COMM_WORLD_RANK=0 SMTD_SOCKET="$T/none/smtd.sock" "$SMTCTL" rank -- /bin/sh -c 'exit 7' 2>/dev/null
assert_eq "$?" 7 "the exit code of a program run without smtd"

# Under mpirun run by hand: every rank runs, each launcher says so once.
if command -v mpirun >/dev/null 2>&1; then
	SMTD_SOCKET="$T/none/smtd.sock" mpirun --allow-run-as-root -np 2 -mca btl self,vader \
		-x SMTD_SOCKET "$SMTCTL" rank -- /bin/sh -c 'echo "rank $OMPI_COMM_WORLD_RANK pid $$ parent $PPID"' \
		>"$T/mpirun.out" 2>"$T/mpirun.err" || { cat "$T/mpirun.err" >&2; fail "mpirun with the launcher and no smtd failed"; }
	cat "$T/mpirun.out"
	for r in 0 1; do assert_contains "$T/mpirun.out" "rank $r pid" "rank $r under a plain mpirun"; done
	assert_eq "$(grep -c "smtctl rank: cannot reach smtd" "$T/mpirun.err")" 2 "one line from each launcher ($(cat "$T/mpirun.err"))"
fi
echo ok
