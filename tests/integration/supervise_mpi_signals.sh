#!/bin/sh
# smtd(8) SIGNALS with the real mpirun on one host: SIGTERM to smtd reaches every
# rank; a rank that ignores it is SIGKILLed after --grace; SIGUSR1 reaches
# every rank and the job goes on; mpirun SIGKILLed from outside leaves
# ranks that smtd kills; nothing of the job is left afterwards.
. "$top_srcdir/tests/lib.sh"
smt_tmpdir
SIGRANK="$top_builddir/tests/helpers/sigrank"
HOST=$(hostname)
mkdir -p "$T/root"
export PATH="/usr/bin:$PATH"
tag="smt-mpisig-$$"

start() { # start NAME SMTD-ARGS... : smtd in the background
	name=$1; shift
	rm -rf "$T/root/output" "$T/$name"; mkdir -p "$T/$name"
	"$SMTD" --root "$T/root" --sshd never --mpi --processes-per-host 2 --mpi-options "--oversubscribe" \
		"$@" >"$T/$name/out" 2>"$T/$name/err" &
	SPID=$!
}
ready() { wait_for_file "$T/$1/ready.0" 30 && wait_for_file "$T/$1/ready.1" 30 || { cat "$T/$1/err"; fail "ranks of $1 did not start"; }; }

# Ranks that call MPI_Init before they say they are ready: mpirun passes a
# signal on only to ranks it has registered.
MPIDIR=$("$top_srcdir/tests/helpers/build-mpi.sh") || exit $?
SIGRANK_MPI="$MPIDIR/sigrank_mpi"

# 1. SIGTERM: both ranks get it through mpirun; exit 143; nothing left.
# (--peers 2: a rank that exits at once makes mpirun SIGKILL the other,
# which on a loaded machine may not have run since its SIGTERM arrived.)
start term --grace 10 -- "$SIGRANK_MPI" --record "$T/term/rec" --ready "$T/term" --peers 2 "$tag-term"
ready term
kill -TERM $SPID
rc=0; wait $SPID || rc=$?
assert_eq "$rc" 143 "exit code after SIGTERM"
grep -q "0 TERM" "$T/term/rec" && grep -q "1 TERM" "$T/term/rec" || {
	echo "---- smtd's log:" >&2
	grep -v mpirank "$T/term/err" >&2
}
assert_contains "$T/term/rec" "0 TERM" "rank 0 got SIGTERM"
assert_contains "$T/term/rec" "1 TERM" "rank 1 got SIGTERM"
assert_contains "$T/root/output/failure" "SIGTERM" "failure names the signal"
assert_no_process "$tag-term"

# 2. A rank that ignores SIGTERM is SIGKILLed after --grace.  mpirun
# itself SIGKILLs its ranks odls_base_sigkill_timeout (1 s by default, kept
# here) after its SIGTERM; a shorter --grace shows smtd's own kill.  (How
# soon mpirun passes SIGTERM on is its own affair: case 1 shows it does.)
start grace --grace 0.5 -- "$SIGRANK" --ignore-term --record "$T/grace/rec" --ready "$T/grace" "$tag-grace"
ready grace
t0=$(date +%s%N)
kill -TERM $SPID
rc=0; wait $SPID || rc=$?
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
assert_eq "$rc" 143 "exit code after the grace kill"
assert_contains "$T/grace/err" "grace period of 0.5 s is over" "smtd's own kill after the grace"
[ $ms -ge 450 ] || fail "killed after $ms ms, before the 0.5 s grace"
[ $ms -lt 5000 ] || fail "the grace kill took $ms ms"
assert_no_process "$tag-grace"
echo "grace 0.5 s: smtd exited after $ms ms"

# 3. SIGUSR1 reaches every rank; the job goes on and succeeds.
start usr -- "$SIGRANK_MPI" --record "$T/usr/rec" --ready "$T/usr" --exit-after 3 "$tag-usr"
ready usr
kill -USR1 $SPID
rc=0; wait $SPID || rc=$?
assert_eq "$rc" 0 "exit code after SIGUSR1"
assert_contains "$T/usr/rec" "0 USR1" "rank 0 got SIGUSR1"
assert_contains "$T/usr/rec" "1 USR1" "rank 1 got SIGUSR1"
[ -f "$T/root/output/success" ] || fail "no success file after SIGUSR1"

# 4. mpirun SIGKILLed from outside: its orphaned ranks are killed by smtd.
start mpikill -- "$SIGRANK" --ready "$T/mpikill" "$tag-mpikill"
ready mpikill
mpirun_pid=$(pgrep -P $SPID -x mpirun) || fail "no mpirun child of smtd"
kill -KILL "$mpirun_pid"
rc=0; wait $SPID || rc=$?
assert_eq "$rc" 1 "exit code after mpirun was killed"
assert_contains "$T/root/output/failure" "SIGKILL" "the report says how mpirun ended"
assert_contains "$T/root/output/failure" "mpirun" "the report names mpirun"
assert_no_process "$tag-mpikill"
head -1 "$T/root/output/failure"

# 5. While an MPI job runs, the status lists every rank with its host and
# PID, from mpirun's proctable (printed once the ranks called MPI_Init; a
# program without MPI never gets one).
start ranks -- "$MPIDIR/mpi_job" sleep 3
i=0
until "$SMTCTL" status --json >"$T/ranks/status.json" 2>/dev/null &&
	[ "$(grep -o '"rank":[0-9]*,"host":"[^"]*","pid":[0-9][0-9]*' "$T/ranks/status.json" | wc -l)" = 2 ]; do
	i=$((i + 1)); [ $i -lt 200 ] || break
	sleep 0.05
done
/usr/bin/python3 - "$T/ranks/status.json" "$HOST" <<'PY' || fail "job.ranks: $(cat "$T/ranks/status.json")"
import json, sys
st = json.load(open(sys.argv[1]))
ranks = st["job"]["ranks"]
assert [r["rank"] for r in ranks] == [0, 1], ranks
assert all(r["host"] == sys.argv[2] and r["pid"] > 0 for r in ranks), ranks
assert st["state"] == "running" and st["role"] == "leader", st
print("job.ranks:", ranks)
PY
rc=0; wait $SPID || rc=$?
assert_eq "$rc" 0 "exit code of the sleeping MPI job"
echo ok
