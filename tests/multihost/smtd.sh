# tests/multihost/smtd.sh - run smtd as PID 1 of simulated hosts (sourced
# after hosts.sh).
#
#   smtd_hyper K JSON          write host K's hyperparameters.json
#   smtd_start K [ARGS...] [-- CMD...]
#                              start host K with smtd as its PID 1, with
#                              sshd managed by smtd, the build's smtctl,
#                              preload library and Debian's python3 first
#                              in PATH
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
