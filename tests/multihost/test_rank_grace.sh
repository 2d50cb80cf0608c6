#!/bin/bash
# Grace: every rank gets the stop from its own host's smtd and
# has the whole --grace, whoever was signalled (smtd(8) OUTPUT, SIGNALS; smtd(8)
# SIGNALS, EXIT STATUS).  3 hosts x 2 ranks (tests/helpers/sigrank.c) that
# trap SIGTERM, take GRACE - 2 s to write a checkpoint file and exit 0:
#   a. SIGTERM to every host's PID 1 at once (a platform stop): every
#      checkpoint written, every host exits 143 ("Stopped ... SIGTERM");
#   b. SIGTERM to the leader only: every checkpoint, the leader 143, the
#      workers 1 with the leader's "Stopped" (they received no signal);
#   c. `smtctl kill` on the leader: the same as b (smtctl(1): as if smtd
#      had received the signal), timed from the leader's receipt of it;
# each time every host exits within GRACE + 1 s of the signal, every rank
# got it within 1 s, what the leader said to the workers after it needed
# no new ssh channel, and Open MPI's own kill timetable
# (odls_base_sigkill_timeout 0 here: orted and mpirun SIGKILL at once)
# reaches no rank.
#   d. ranks that ignore SIGTERM, each with a child: all SIGKILLed at
#      GRACE (+0.5 s) on every host.
# After each, no process of the job was left for the kernel to end when
# smtd exited (tests/helpers/nswatch.c watches every host).
. "$top_srcdir/tests/multihost/prelude.sh"
command -v mpirun >/dev/null 2>&1 || skip_tool "mpirun (openmpi-bin)"
SIGRANK="$top_builddir/tests/helpers/sigrank"
GRACE=5
hyper='{"sagemaker_mpi_enabled": "true", "sagemaker_mpi_num_of_processes_per_host": "2"}'

# scenario NAME [SIGRANK ARGS...]: 3 fresh hosts, every rank started and
# its handlers in place; D is the scenario's directory.
scenario() {
	local name=$1 r i
	shift
	echo "---- $name"
	D=$T/$name
	mkdir -p "$D"
	mh_setup 3 "$D"
	for k in 1 2 3; do
		smtd_hyper $k "$hyper"
		smtd_start $k --grace $GRACE -- "$SIGRANK" --record "$D/signals" --ready "$D" "$@"
		smtd_watch $k
	done
	for r in 0 1 2 3 4 5; do
		wait_until 30 '[ -e "$D/ready.$r" ]' 'rank $r did not start$(smtd_show_all >&2)'
	done
}

# finish: wait for every host and its witness; SINCE is the time from T0
# (the signal) to the last host's exit.
finish() {
	smtd_wait_all 60
	smtd_time_since "$t0"
	for k in 1 2 3; do smtd_watch_wait $k; done
}

# checkpoints: every rank wrote its own, after the signal, GRACE - 2 s
# after it got it, and got it within 1 s of T0.  Prints the slowest rank's
# time from T0.
checkpoints() {
	local r slowest=0 f
	for r in 0 1 2 3 4 5; do
		f=$D/ckpt.$r
		[ -s "$f" ] || { smtd_show_all; fail "rank $r wrote no checkpoint"; }
		read -r _ _ _ sig _ wrote <"$f"
		awk -v r=$r -v t0="$t0" -v s="$sig" 'BEGIN { printf "rank %d signalled %+.3f s after the stop\n", r, s - t0 }'
		awk -v t0="$t0" -v s="$sig" -v w="$wrote" -v g=$GRACE 'BEGIN {
			exit !(s >= t0 - 0.01 && s - t0 < 1 && w - s >= g - 2 - 0.05) }' ||
			fail "rank $r: signalled at $sig, wrote at $wrote (the stop at $t0)"
		slowest=$(awk -v a="$slowest" -v b="$wrote" -v t0="$t0" 'BEGIN { d = b - t0; print (d > a ? d : a) }')
	done
	SLOWEST=$slowest
	echo "every checkpoint written; the slowest rank's own time $(printf %.2f "$SLOWEST") s," \
		"the last host's exit $(awk -v s="$SINCE" -v w="$SLOWEST" 'BEGIN { printf "%+.2f", s - w }') s after it"
}

# nothing_left: no process of the job outlived smtd on any host (the
# kernel ends what a PID 1 leaves; nswatch saw who was still there).
nothing_left() {
	local k left
	for k in 1 2 3; do
		left=$(smtd_left_behind $k | awk '$3 == 1 || $2 ~ /^(sigrank|orted|mpirun)$/')
		[ -z "$left" ] || { cat "$(smtd_watch_report $k)" >&2; fail "algo-$k: smtd left these of the job to the kernel: $left"; }
	done
}

# no_handshake: what the leader said to each worker after the stop (the
# end, the result) went over a channel already open: no ssh handshake was
# on the way to its ranks' signal (peers.c, smt_peers_launched).
no_handshake() {
	local k late stop
	stop=$(awk '/state running -> finishing/ { print $1; exit }' "$(smtd_console 1)")
	[ -n "$stop" ] || { smtd_show_all; fail "the leader's log has no stop"; }
	for k in 2 3; do
		# The consoles' timestamps are one clock's (ISO 8601, UTC).
		late=$(awk -v t="$stop" '/sshd: Accepted/ && $1 >= t' "$(smtd_console $k)")
		[ -z "$late" ] || { smtd_show_all; fail "algo-$k: a new ssh channel after the stop: $late"; }
	done
}

within_grace() {
	awk -v s="$SINCE" -v g=$GRACE 'BEGIN { exit !(s < g + 1) }' ||
		{ smtd_show_all; fail "$1: the last host exited $SINCE s after the signal (grace $GRACE s)"; }
}

# ---- a. SIGTERM to every host at once ----
scenario all --checkpoint "$T/all" --term-sleep $((GRACE - 2))
pids=$(for k in 1 2 3; do mh_pid1 $k; done)
t0=$EPOCHREALTIME
kill -TERM $pids
finish
for k in 1 2 3; do smtd_check $k 143 "Stopped" "SIGTERM"; done
checkpoints
no_handshake
within_grace "a stop of every host"
nothing_left
mh_teardown

# ---- b. SIGTERM to the leader only ----
scenario leader --checkpoint "$T/leader" --term-sleep $((GRACE - 2))
t0=$EPOCHREALTIME
mh_kill 1 TERM
finish
smtd_check 1 143 "Stopped" "SIGTERM"
for k in 2 3; do smtd_check $k 1 "Stopped" "algo-1"; done
checkpoints
no_handshake
within_grace "a stop of the leader"
nothing_left
mh_teardown

# ---- c. smtctl kill on the leader ----
scenario kill --checkpoint "$T/kill" --term-sleep $((GRACE - 2))
t0=$EPOCHREALTIME
mh_exec 1 "$SMTCTL" kill -s TERM || fail "smtctl kill failed"
finish
smtd_check 1 143 "Stopped" "SIGTERM"
for k in 2 3; do smtd_check $k 1 "Stopped" "algo-1"; done
# The stop is the leader's receipt of the request: smtctl's own start (a
# sanitized build on a loaded machine: 1.4 s once) is not smtd's time.
got=$(awk '/control API: kill with SIGTERM/ { print $1; exit }' "$(smtd_console 1)")
[ -n "$got" ] || { smtd_show_all; fail "the leader did not log the kill"; }
t0=$(date -d "$got" +%s.%N)
smtd_time_since "$t0"
checkpoints
no_handshake
within_grace "smtctl kill"
nothing_left
mh_teardown

# ---- d. ranks that ignore SIGTERM: SIGKILL at the grace ----
scenario ignore --ignore-term --child
pids=$(for k in 1 2 3; do mh_pid1 $k; done)
t0=$EPOCHREALTIME
kill -TERM $pids
finish
for k in 1 2 3; do smtd_check $k 143 "Stopped" "SIGTERM"; done
for r in 0 1 2 3 4 5; do assert_contains "$D/signals" "$r TERM" "rank $r got SIGTERM"; done
# Each rank, and the child it forked (which got no signal), ended GRACE s
# after the signal, within 0.5 s: smtd's SIGKILL.
for k in 1 2 3; do
	ends=$(awk '$2 == "sigrank" && $4 == "before" { print $5 }' "$(smtd_watch_report $k)")
	[ "$(echo "$ends" | wc -w)" = 4 ] || { cat "$(smtd_watch_report $k)" >&2; fail "algo-$k: not 2 ranks and their 2 children ended by smtd: $ends"; }
	for e in $ends; do
		awk -v e="$e" -v t0="$t0" -v g=$GRACE 'BEGIN { d = e - t0; printf "algo-'$k': a process of a rank ended %.2f s after the signal\n", d; exit !(d >= g - 0.05 && d <= g + 0.5) }' ||
			fail "algo-$k: a rank ignoring SIGTERM ended $(awk -v e="$e" -v t0="$t0" 'BEGIN { print e - t0 }') s after the signal, not at the grace ($GRACE s)"
	done
	assert_contains "$(smtd_console $k)" "grace period of $GRACE.0 s is over" "algo-$k's grace"
done
nothing_left
mh_teardown
echo ok
