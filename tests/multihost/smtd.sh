# tests/multihost/smtd.sh - run smtd as PID 1 of simulated hosts (sourced
# after hosts.sh).
#
#   smtd_hyper K JSON          write host K's hyperparameters.json
#   smtd_start K [ARGS...] [-- CMD...]
#                              start host K with smtd as its PID 1, with
#                              sshd managed by smtd, the build's smtctl,
#                              preload library and Debian's python3 first
#                              in PATH
#   smtd_start_to K FILE [ARGS...] [-- CMD...]
#                              the same, with smtd's stdout (the ranks'
#                              lines on the leader) in FILE, apart from its
#                              messages (stderr, in the console)
#   smtd_start_entry K SIDECAR [ARGS...] [-- CMD...]
#                              host K as an image's entry point starts it:
#                              a script (entry-init.sh) starts sshd and
#                              SIDECAR, then execs smtd as PID 1 with
#                              --sshd auto (the sshd found running is used)
#   smtd_watch K               start nswatch on host K (who outlived smtd);
#                              its report is $(smtd_watch_report K) once
#                              the host has ended (smtd_watch_wait K);
#                              every smtd_start* does it (again: a no-op)
#   smtd_nothing_left          after smtd_wait_all: no process of the job
#                              outlived smtd on any host (fails the test)
#   smtd_hwm_watch K           sample VmHWM of host K's smtd until it ends,
#                              the last value (kB) in algo-K/vmhwm
#   smtd_wait_all [TIMEOUT]    wait for every host; sets EXIT_K=code and
#                              T_END_K=seconds since the epoch
#   smtd_console K             host K's console log
#   smtd_failure K             host K's failure file (path)

SMTD_MH_ENV="PATH=/usr/bin:/bin:/usr/sbin:/sbin"

smtd_hyper() {
	printf '%s\n' "$2" >"$(mh_host_dir "$1")/ml/input/config/hyperparameters.json"
}

smtd_start() {
	local k=$1 h
	shift
	h=$(mh_host_dir "$k")
	mh_start_host "$k" env $SMTD_MH_ENV OMPI_MCA_odls_base_sigkill_timeout="${SMTD_MH_SIGKILL_TIMEOUT:-0}" \
		"$SMTD" --sshd always --sshd-config "$h/sshd_config" \
		--preload "$SMTD_PRELOAD" --smtctl "$SMTCTL" "$@"
	smtd_watch "$k"
}

smtd_start_to() {
	local k=$1 file=$2 h
	shift 2
	h=$(mh_host_dir "$k")
	# sh execs smtd with stdout on FILE: smtd is still the host's PID 1.
	mh_start_host "$k" env $SMTD_MH_ENV OMPI_MCA_odls_base_sigkill_timeout="${SMTD_MH_SIGKILL_TIMEOUT:-0}" \
		/bin/sh -c 'exec "$@" >"$0"' "$file" \
		"$SMTD" --sshd always --sshd-config "$h/sshd_config" \
		--preload "$SMTD_PRELOAD" --smtctl "$SMTCTL" "$@"
	smtd_watch "$k"
}

smtd_start_entry() {
	local k=$1 sidecar=$2 h
	shift 2
	h=$(mh_host_dir "$k")
	mh_start_host "$k" env $SMTD_MH_ENV OMPI_MCA_odls_base_sigkill_timeout="${SMTD_MH_SIGKILL_TIMEOUT:-0}" \
		/bin/bash "$MH_LIB_DIR/entry-init.sh" "$h" "$sidecar" \
		"$SMTD" --sshd auto --preload "$SMTD_PRELOAD" --smtctl "$SMTCTL" "$@"
	smtd_watch "$k"
}

smtd_watch() {
	local h pid1 v=SMTD_WATCHED_$1
	h=$(mh_host_dir "$1")
	pid1=$(mh_pid1 "$1")
	# The smtd_start functions watch every host; a second call is a no-op.
	[ "${!v:-}" != "$h:$pid1" ] || return 0
	rm -f "$h/unwatched"
	"$top_builddir/tests/helpers/nswatch" "$pid1" >"$h/nswatch.txt" 2>"$h/nswatch.err" &
	eval "SMTD_WATCH_$1=\$!; SMTD_WATCHED_$1=\$h:\$pid1; SMTD_WATCH_DONE_$1="
}

# smtd_watch_wait K: wait for host K's nswatch (it ends with the host).
# A host that ended before its watch began (exit 3: a configuration
# refused at once) is marked unwatched: asking what it left behind fails.
smtd_watch_wait() {
	local v=SMTD_WATCH_$1 d=SMTD_WATCH_DONE_$1 rc=0
	[ -z "${!d:-}" ] || return 0
	wait "${!v}" || rc=$?
	if [ $rc = 3 ]; then
		touch "$(mh_host_dir "$1")/unwatched"
	elif [ $rc != 0 ]; then
		fail "nswatch on algo-$1 failed: $(cat "$(mh_host_dir "$1")/nswatch.err")"
	fi
	eval "SMTD_WATCH_DONE_$1=1"
}

smtd_watch_report() {
	echo "$(mh_host_dir "$1")/nswatch.txt"
}

# smtd_left_behind K: the processes of host K that smtd left to the
# kernel (they ended only when PID 1 exited), except those whose COMM is
# in the extra arguments; one "NSPID COMM MARK" a line.
smtd_left_behind() {
	local k=$1
	shift
	[ ! -e "$(mh_host_dir "$k")/unwatched" ] ||
		fail "algo-$k ended before nswatch could watch it: what outlived smtd there is unknown"
	awk -v keep=" $* " '!/^#/ && $4 != "before" && index(keep, " " $2 " ") == 0 { print $1, $2, $3 }' \
		"$(smtd_watch_report "$k")"
}

smtd_hwm_watch() {
	local k=$1 pid h
	pid=$(mh_pid1 "$k")
	h=$(mh_host_dir "$k")
	(
		while [ -e "/proc/$pid/status" ]; do
			while IFS= read -r line; do
				case $line in VmHWM:*) set -- $line; [ -n "${2:-}" ] && echo "$2" >"$h/vmhwm" ;; esac
			done <"/proc/$pid/status" 2>/dev/null
			sleep 0.1
		done
	) &
	eval "SMTD_HWM_$k=\$!"
}

# smtd_hwm K: host K's smtd's last VmHWM in kB, once it has ended.
smtd_hwm() {
	local v=SMTD_HWM_$1
	wait "${!v}" 2>/dev/null
	cat "$(mh_host_dir "$1")/vmhwm"
}

smtd_wait_all() {
	local k code
	for ((k = 1; k <= MH_N; k++)); do
		code=$(mh_wait "$k" "${1:-60}") || { echo "host algo-$k did not end:" >&2; tail -30 "$(mh_host_dir "$k")/console.log" >&2; fail "algo-$k timed out"; }
		eval "EXIT_$k=$code"
		eval "T_END_$k=$(stat -c %.3Y "$(mh_host_dir "$k")/exit")"
	done
}

smtd_console() {
	echo "$(mh_host_dir "$1")/console.log"
}

smtd_failure() {
	echo "$(mh_host_dir "$1")/ml/output/failure"
}

# smtd_show_all: every host's console, for a failing test's log.
smtd_show_all() {
	local k
	for ((k = 1; k <= MH_N; k++)); do
		echo "==== algo-$k console" >&2
		grep -v '^Accepted publickey\|^Received disconnect\|^Disconnected from' "$(smtd_console "$k")" | tail -40 >&2
	done
}

# smtd_check K CODE [TEXT...]: host K exited CODE and its failure file
# holds every TEXT (fixed strings); with CODE 0, a success file.
smtd_check() {
	local k=$1 want=$2 code f
	shift 2
	code=EXIT_$k
	if [ "${!code}" != "$want" ]; then
		smtd_show_all
		fail "algo-$k exited ${!code}, expected $want"
	fi
	f=$(smtd_failure "$k")
	if [ "$want" = 0 ]; then
		[ -f "$(mh_host_dir "$k")/ml/output/success" ] || fail "no success file on algo-$k"
		return
	fi
	[ -s "$f" ] || fail "no failure file on algo-$k"
	for text in "$@"; do
		grep -qF -- "$text" "$f" || { smtd_show_all; fail "algo-$k's failure lacks '$text': $(head -3 "$f")"; }
	done
	echo "algo-$k ($want): $(head -1 "$f")"
}

# smtd_nothing_left: after smtd_wait_all, no process of the job outlived
# smtd on any host.  Once PID 1 has exited its namespace is empty anyway
# (the kernel ends the rest), so the hosts' nswatch (started by
# smtd_start*) tells what smtd ended while it was alive from what the
# kernel ended when it exited: a process of the job (it carries the job's
# mark SMTD_JOB=, or it is mpirun, orted or torchrun) that ended at the
# teardown was left behind.  sshd, its
# sessions and what existed before the job may outlive smtd (smtd(8) SIGNALS); a
# host whose smtd was SIGKILLed (mh_vanish: exit 137) is not asked, nor one
# that refused its configuration (exit 2) before its watch began.
SMTD_JOB_COMMS='mpirun|orted|prted|torchrun'
smtd_nothing_left() {
	local k left
	for ((k = 1; k <= MH_N; k++)); do
		left=$(mh_pids "$k")
		[ -z "$left" ] || fail "processes left on algo-$k: $left"
		# A host whose smtd was SIGKILLed (mh_vanish) had no say.
		[ "$(cat "$(mh_host_dir "$k")/exit" 2>/dev/null)" != 137 ] || continue
		smtd_watch_wait "$k"
		# Ended before it could be watched, refusing its configuration
		# (exit 2: nothing was launched).
		[ ! -e "$(mh_host_dir "$k")/unwatched" ] || [ "$(cat "$(mh_host_dir "$k")/exit")" != 2 ] ||
			continue
		left=$(smtd_left_behind "$k" | awk -v re="^($SMTD_JOB_COMMS)\$" '$3 == 1 || $2 ~ re')
		[ -z "$left" ] || { cat "$(smtd_watch_report "$k")" >&2; fail "algo-$k: smtd left these of the job to the kernel: $left"; }
	done
}

# smtd_time_since T0: the time from T0 (an $EPOCHREALTIME) to the last
# host's exit, printed and returned in SINCE.
smtd_time_since() {
	local k last=0 t
	for ((k = 1; k <= MH_N; k++)); do
		t=T_END_$k
		last=$(awk -v a="$last" -v b="${!t}" 'BEGIN { print (b > a ? b : a) }')
	done
	SINCE=$(awk -v a="$1" -v b="$last" 'BEGIN { printf "%.2f", b - a }')
	echo "fault to the last host's exit: $SINCE s"
}

# smtd_pid_of K COMM: the machine's PID of the first process named COMM in
# host K, waiting for it to appear.
smtd_pid_of() {
	local i pid
	for ((i = 0; i < 400; i++)); do
		pid=$(mh_pids "$1" | awk -v c="$2" '$3 == c { print $1; exit }')
		[ -n "$pid" ] && { echo "$pid"; return 0; }
		sleep 0.05
	done
	return 1
}

# smtd_wait_line K TEXT: wait until host K's console shows TEXT.
smtd_wait_line() {
	local i
	for ((i = 0; i < 600; i++)); do
		grep -qF -- "$2" "$(smtd_console "$1")" && return 0
		sleep 0.05
	done
	smtd_show_all
	fail "algo-$1 never printed '$2'"
}
