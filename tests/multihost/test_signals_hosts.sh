#!/bin/bash
# Signals on simulated hosts with smtd as every host's PID 1 (smtd(8) SIGNALS,
# smtd(8) SIGNALS), and /metrics of a job whose output is known (smtd(8) The control API):
#  a. 3 hosts x 2 ranks (tests/helpers/sigrank.c, each prints one line and
#     records every signal it gets).  /metrics on every host: the peers
#     ready on the leader, the lines and bytes forwarded on each host; sshd
#     killed on algo-2 and restarted by its smtd (its sshd restarts 1).
#     Then SIGUSR1 to the leader and `smtctl kill -s USR2` on the leader:
#     every rank on every host gets each once and the job goes on (the
#     lines they print counted again in /metrics); then SIGINT to the
#     leader stops it: every rank gets SIGINT once, the leader exits 130,
#     the workers 1 (stopped on algo-1).
#  b. 2 hosts: SIGHUP to every host at once: every rank gets it once,
#     every host exits 129 (a worker may say the leader stopped it, 1).
#  c. 2 hosts: `smtctl kill -s QUIT` on the leader: every rank gets
#     SIGQUIT once; the leader exits 131.
#  d. 3 hosts x 2 ranks: SIGTERM to algo-2 alone and `smtctl kill -s TERM`
#     on algo-3 alone: each one's ranks get SIGTERM once and have the
#     grace (a checkpoint of 1 s), each exits 143 and says it was stopped;
#     the job does not go on without them: the leader ends too, within
#     seconds, Stopped (143) naming a worker stopped on its own host and
#     the signal (not mpirun's view of it: the orted it lost).
# After each: nothing of the job left on any host.
. "$top_srcdir/tests/multihost/prelude.sh"
command -v mpirun >/dev/null 2>&1 || skip_tool "mpirun (openmpi-bin)"
# Every host's smtd and smtctl on the default socket, in the host's own
# /run (curl needs the path).
unset SMTD_SOCKET
SOCK=/run/smtd/smtd.sock
SIGRANK="$top_builddir/tests/helpers/sigrank"
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"

# job NAME HOSTS PER_HOST [SIGRANK OPTIONS...]: fresh hosts, every rank
# started with its handlers in place; D is the job's directory, NR the
# number of ranks.
job() {
	local name=$1 n=$2 per=$3 k r
	shift 3
	echo "---- $name"
	D=$T/$name
	NR=$((n * per))
	mkdir -p "$D"
	mh_setup "$n" "$D"
	for ((k = 1; k <= n; k++)); do
		smtd_hyper $k '{"sagemaker_mpi_enabled": "true", "sagemaker_mpi_num_of_processes_per_host": "'"$per"'"}'
	done
	smtd_start_to 1 "$D/stdout" --grace 20 -- "$SIGRANK" --record "$D/signals" --ready "$D" "$@"
	for ((k = 2; k <= n; k++)); do
		smtd_start $k --grace 20 -- "$SIGRANK" --record "$D/signals" --ready "$D" "$@"
	done
	for ((r = 0; r < NR; r++)); do
		wait_for_file "$D/ready.$r" 60 || { smtd_show_all; fail "$name: rank $r did not start"; }
	done
}

# got_once SIG: every rank recorded SIG exactly once (waits up to 10 s for
# the records).
got_once() {
	local r n bad end=$((EPOCHSECONDS + 10))
	while :; do
		bad=
		for ((r = 0; r < NR; r++)); do
			n=$(grep -c "^$r $1\$" "$D/signals" 2>/dev/null)
			[ "$n" = 1 ] || bad="$bad rank $r: ${n:-0}"
		done
		[ -z "$bad" ] && { echo "every rank (of $NR) got SIG$1 once"; return 0; }
		[ $EPOCHSECONDS -lt $end ] || break
		sleep 0.05
	done
	smtd_show_all
	fail "SIG$1 did not reach every rank once:$bad"
}

# metrics K: host K's /metrics.
metrics() {
	mh_exec "$1" curl -s --unix-socket $SOCK http://localhost/metrics
}

# metric K NAME: host K's value of the metric NAME (no labels).
metric() {
	metrics "$1" 2>/dev/null | awk -v n="$2" '$1 == n { print $2 }'
}

# metric_is K NAME VALUE: waits up to 10 s for host K's NAME to be VALUE.
metric_is() {
	local v end=$((EPOCHSECONDS + 10))
	while :; do
		v=$(metric "$1" "$2")
		[ "$v" = "$3" ] && { echo "algo-$1: $2 $v"; return 0; }
		[ $EPOCHSECONDS -lt $end ] || break
		sleep 0.05
	done
	metrics "$1" >&2
	fail "algo-$1's $2 is '$v', expected $3"
}

# lines_of RANKS...: "LINES BYTES" the ranks printed, from the leader's
# stdout (their lines, untagged; smtd counts a line's bytes without its
# newline).
lines_of() {
	untag "$D/stdout" | awk -v list=" $* " '
		{ if (index(list, " " $2 " ")) { n++; b += length($0) } }
		END { print n + 0, b + 0 }'
}

# ---- a. 3 hosts: metrics, sshd restarted, USR1, USR2, INT ----
job a 3 2 --peers 6
metric_is 1 smtd_peers 2
metric_is 1 smtd_peers_ready 2
metric_is 1 smtd_ranks 6
# One line of each rank; the leader forwards all 6, a worker its own 2.
read -r n b < <(lines_of 0 1 2 3 4 5)
[ "$n" = 6 ] || fail "the leader's stdout holds $n of the 6 ranks' first lines"
metric_is 1 smtd_lines_forwarded_total 6
metric_is 1 smtd_bytes_forwarded_total "$b"
read -r n b < <(lines_of 2 3)
metric_is 2 smtd_lines_forwarded_total 2
metric_is 2 smtd_bytes_forwarded_total "$b"
metric_is 2 smtd_sshd_restarts_total 0
# sshd on algo-2 dies; its smtd starts it again and counts it.
sshd_pid=$(cat "$(mh_path 2 /run/sshd.pid)") || fail "no sshd pid on algo-2"
mh_exec 2 kill -KILL "$sshd_pid" || fail "cannot kill sshd on algo-2"
metric_is 2 smtd_sshd_restarts_total 1
# SIGUSR1 to the leader, SIGUSR2 through smtctl kill: every rank, once;
# the job goes on.
mh_kill 1 USR1
got_once USR1
mh_exec 1 "$SMTCTL" kill -s USR2 || fail "smtctl kill -s USR2 on the leader failed"
got_once USR2
mh_running 1 && mh_running 2 && mh_running 3 || fail "a host ended after SIGUSR1 or SIGUSR2"
# Each rank printed "rank R got SIGUSR1" and "... SIGUSR2": 18 lines.
for ((i = 0; i < 200; i++)); do
	[ "$(grep -c 'got SIGUSR2' "$D/stdout")" = 6 ] && break
	sleep 0.05
done
read -r n b < <(lines_of 0 1 2 3 4 5)
[ "$n" = 18 ] || fail "the leader's stdout holds $n lines, expected 18"
metric_is 1 smtd_lines_forwarded_total 18
metric_is 1 smtd_bytes_forwarded_total "$b"
read -r n b < <(lines_of 4 5)
metric_is 3 smtd_lines_forwarded_total 6
metric_is 3 smtd_bytes_forwarded_total "$b"
# SIGINT to the leader stops the job on every host.
mh_kill 1 INT
got_once INT
smtd_wait_all 60
smtd_check 1 130 "Stopped" "SIGINT"
for k in 2 3; do smtd_check $k 1 "Stopped" "algo-1"; done
smtd_nothing_left
mh_teardown

# ---- b. SIGHUP to every host at once ----
job b 2 1 --peers 2
kill -HUP "$(mh_pid1 1)" "$(mh_pid1 2)"
got_once HUP
smtd_wait_all 60
smtd_check 1 129 "Stopped" "SIGHUP"
[ "$EXIT_2" = 1 ] || smtd_check 2 129 "Stopped" "SIGHUP"
[ "$EXIT_2" != 1 ] || smtd_check 2 1 "Stopped" "SIGHUP"
smtd_nothing_left
mh_teardown

# ---- c. smtctl kill -s QUIT on the leader ----
job c 2 1 --peers 2
mh_exec 1 "$SMTCTL" kill -s QUIT || fail "smtctl kill -s QUIT on the leader failed"
got_once QUIT
smtd_wait_all 60
smtd_check 1 131 "Stopped" "SIGQUIT"
smtd_check 2 1 "Stopped" "algo-1"
smtd_nothing_left
mh_teardown

# ---- d. the workers alone: SIGTERM to algo-2, smtctl kill on algo-3 ----
# Each worker stopped on its own (not through the leader): its ranks get
# SIGTERM once and have the grace (a 1 s checkpoint); it exits 143 and
# says it was stopped; the job does not go on without them: the leader
# ends too, within seconds (its mpirun loses their orted at once),
# naming a worker.
job d 3 2 --checkpoint "$T/d" --term-sleep 1
t0=$EPOCHREALTIME
mh_kill 2 TERM
mh_exec 3 "$SMTCTL" kill -s TERM || fail "smtctl kill on algo-3 failed"
smtd_wait_all 60
smtd_time_since "$t0"
for r in 2 3 4 5; do
	[ "$(grep -c "^$r TERM\$" "$D/signals")" = 1 ] || { smtd_show_all; fail "rank $r did not get SIGTERM once: $(grep "^$r " "$D/signals" | tr '\n' ' ')"; }
	[ -s "$D/ckpt.$r" ] || { smtd_show_all; fail "rank $r wrote no checkpoint (grace 20 s)"; }
done
smtd_check 2 143 "Stopped: smtd on algo-2 received SIGTERM"
smtd_check 3 143 "Stopped: smtd on algo-3 received SIGTERM"
smtd_check 1 143 "Stopped: smtd on algo-"
head -1 "$(smtd_failure 1)" | grep -qE "^Stopped: smtd on algo-[23] received SIGTERM and stopped the job's ranks there; the job cannot go on without them\$" ||
	fail "the leader's failure does not name the worker stopped on its own host: $(head -1 "$(smtd_failure 1)")"
echo "algo-1 ($EXIT_1): $(head -1 "$(smtd_failure 1)")"
# The ranks need 1 s; not the grace (20 s).
awk -v s="$SINCE" 'BEGIN { exit !(s <= 8) }' || { smtd_show_all; fail "the last host ended $SINCE s after the workers' SIGTERM (> 8 s)"; }
smtd_nothing_left
mh_teardown
echo ok
