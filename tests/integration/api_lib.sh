# api_lib.sh - start and stop tests/helpers/api_server (sourced by api_*.sh).
API_SERVER="$top_builddir/tests/helpers/api_server"

# api_start NAME ARGS...: run the server in the background with its stdout in
# $T/NAME.out and stderr in $T/NAME.err; wait until it listens.
api_start() {
	name=$1
	shift
	"$API_SERVER" "$@" >"$T/$name.out" 2>"$T/$name.err" &
	eval "${name}_pid=$!"
	# A test that fails half-way must not leave its servers running.
	API_PIDS="${API_PIDS:-} $!"
	trap 'kill $API_PIDS 2>/dev/null; rm -rf "$T"' EXIT
	i=0
	while ! grep -q '^listening$' "$T/$name.out" 2>/dev/null; do
		i=$((i + 1))
		[ $i -lt 500 ] || { cat "$T/$name.err" >&2; fail "api_server $name did not start"; }
		kill -0 "$(eval echo "\$${name}_pid")" 2>/dev/null ||
			{ cat "$T/$name.err" >&2; fail "api_server $name exited"; }
		sleep 0.01
	done
}

# api_stop NAME: SIGTERM; the server must exit 0 (no handle left open).
api_stop() {
	pid=$(eval echo "\$${1}_pid")
	kill -TERM "$pid"
	rc=0
	wait "$pid" || rc=$?
	[ "$rc" = 0 ] || { cat "$T/$1.err" >&2; fail "api_server $1 exited $rc after SIGTERM"; }
}
