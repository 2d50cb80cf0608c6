# tests/lib.sh - shared helpers for the shell tests (sourced).
set -u
: "${top_srcdir:?run through make check}"
: "${top_builddir:?run through make check}"

# A fresh directory for this test, removed on exit.
# Its control socket is private too, so tests can run in parallel.
smt_tmpdir() {
	T=$(mktemp -d "${TMPDIR:-/tmp}/smt-test.XXXXXX")
	trap 'rm -rf "$T"' EXIT
	export SMTD_SOCKET="$T/smtd.sock"
}

# as_nobody CMD [ARG...]: run CMD as uid and gid 65534 (nobody), without
# supplementary groups.
as_nobody() {
	setpriv --reuid=65534 --regid=65534 --clear-groups "$@"
}

# nobody_copy FILE: print the path of a copy of FILE (a program or a
# library) in $T/nobody, which nobody can read and run wherever the
# checkout lies (a clone under /root, mode 700, is not reachable by other
# users).  Makes $T enterable by every user.  Use as
# `X=$(nobody_copy "$PROG") || exit 1`.
nobody_copy() {
	mkdir -p "$T/nobody" && chmod 755 "$T" "$T/nobody" &&
		install -m 755 "$1" "$T/nobody/" || fail "cannot copy $1 to $T/nobody"
	as_nobody test -x "$T/nobody/${1##*/}" ||
		fail "uid 65534 cannot reach $T/nobody: make TMPDIR (${TMPDIR:-/tmp}) a directory every user may enter"
	echo "$T/nobody/${1##*/}"
}

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

skip() {
	echo "SKIP: $*" >&2
	exit 77
}

# missing_tool WHAT: WHAT, which scripts/setup.sh installs, is missing.
# In CI (CI=true, where setup.sh ran) that is a failure; elsewhere the
# caller skips (the whole test with skip_tool, a part with skip_part).
missing_tool() {
	[ "${CI:-}" != true ] ||
		fail "$1 is missing, and scripts/setup.sh installs it (CI=true: a failure, not a skip)"
}

# skip_tool WHAT: skip the test for a missing WHAT (fails in CI).
skip_tool() {
	missing_tool "$1"
	skip "$1 is missing (scripts/setup.sh installs it)"
}

# skip_part PART WHAT: say that PART of the test is skipped for a missing
# WHAT (fails in CI); the caller goes on without it.
skip_part() {
	missing_tool "$2"
	echo "SKIP ($1): $2 is missing (scripts/setup.sh installs it)"
}

# assert_eq ACTUAL EXPECTED WHAT
assert_eq() {
	[ "$1" = "$2" ] || fail "$3: expected '$2', got '$1'"
}

# assert_contains FILE PATTERN WHAT (fixed string)
assert_contains() {
	grep -qF -- "$2" "$1" || { echo "---- $1:" >&2; head -c 4000 "$1" >&2; fail "$3: '$2' not found in $1"; }
}

assert_not_contains() {
	! grep -qF -- "$2" "$1" || fail "$3: '$2' unexpectedly found in $1"
}

# untag FILE: the ranks' lines without their "[1,mpirank:R,HOST]<stream>: " tag.
untag() {
	sed 's/^\[1,mpirank:[0-9]*,[^]]*\]<std[a-z]*>: //' "$1"
}

# wait_for_file PATH [SECONDS]: tests may poll; the daemon never does.
wait_for_file() {
	i=0
	while [ ! -e "$1" ]; do
		i=$((i + 1))
		[ $i -le $(( ${2:-20} * 20 )) ] || return 1
		sleep 0.05
	done
}

# wait_until SECONDS COND WHY: evaluate the shell condition COND every
# 50 ms until it holds; after SECONDS, fail with WHY, evaluated then (so
# that it may show a log: 'smtd did not start: $(cat "$T/out")').  Tests
# poll; the daemon never does.
wait_until() {
	_wu_end=$(( $(date +%s) + $1 ))
	while ! eval "$2"; do
		[ "$(date +%s)" -lt "$_wu_end" ] || eval "fail \"$3\""
		sleep 0.05
	done
}

# have PROGRAM: whether PROGRAM is on PATH.
have() {
	command -v "$1" >/dev/null 2>&1
}

# start_ready NAME CMD...: run CMD in the background (its output in
# $T/NAME.out) until it prints "ready PID"; set $pid to that PID and add
# it to $pids, which the caller's EXIT trap kills.  Fails after 10 s.
start_ready() {
	name=$1
	shift
	"$@" >"$T/$name.out" 2>&1 &
	wait_until 10 'grep -q "^ready " "$T/$name.out" 2>/dev/null' '$name did not start: $(cat "$T/$name.out")'
	pid=$(sed -n 's/^ready //p' "$T/$name.out")
	pids="${pids:-} $pid"
}

# api_get PATH [CURL-ARGS...]: GET http://localhost PATH from the API on
# the Unix socket $S; the body in $T/body, the HTTP status printed (000
# when nothing answered), curl's exit status returned.  CURL-ARGS go
# before the URL (headers, a method, --max-time).
api_get() {
	_ag_path=$1
	shift
	curl -s --unix-socket "$S" -o "$T/body" -w '%{http_code}' "$@" "http://localhost$_ag_path"
}

# expect_config_error MESSAGE [SMTD-ARGS...]: smtd on the job directory $R,
# once for real and once under --dry-run, refuses its configuration with
# MESSAGE: exit 2 and exactly "smtd: MESSAGE" on stderr both times; for
# real "ConfigurationError: MESSAGE" in $R/output/failure; under --dry-run
# no failure file and no plan on stdout.  Nothing is launched: every
# command smtd could start is the caller's stand-in that creates $T/ran.
# SMTD-ARGS follow --root $R; $CONFIG_CMD, when set, is the command given
# after them (after --).  smtd's output is left in $T/out and $T/err.
expect_config_error() {
	_ec_msg=$1
	shift
	set -- "$@" ${CONFIG_CMD:+-- "$CONFIG_CMD"}
	rm -f "$T/ran" "$R/output/failure"
	_ec_rc=0
	timeout 10 "$SMTD" --root "$R" "$@" >"$T/out" 2>"$T/err" || _ec_rc=$?
	assert_eq "$_ec_rc" 2 "exit code ($_ec_msg)"
	assert_eq "$(cat "$T/err")" "smtd: $_ec_msg" "stderr"
	[ -f "$R/output/failure" ] || fail "no failure file for: $_ec_msg"
	assert_eq "$(cat "$R/output/failure")" "ConfigurationError: $_ec_msg" "failure file"
	[ ! -e "$T/ran" ] || fail "launched despite: $_ec_msg: $(cat "$T/ran")"
	rm -f "$R/output/failure"
	_ec_rc=0
	timeout 10 "$SMTD" --root "$R" --dry-run "$@" >"$T/out" 2>"$T/err" || _ec_rc=$?
	assert_eq "$_ec_rc" 2 "exit code under --dry-run ($_ec_msg)"
	assert_eq "$(cat "$T/err")" "smtd: $_ec_msg" "stderr under --dry-run"
	[ ! -s "$T/out" ] || fail "--dry-run printed a plan despite: $_ec_msg"
	[ ! -e "$R/output/failure" ] || fail "--dry-run wrote a failure file"
	[ ! -e "$T/ran" ] || fail "--dry-run launched: $(cat "$T/ran")"
}

# no_process_matching PATTERN: fail when a process whose command line
# matches PATTERN (fixed string) is alive (zombies do not count).
assert_no_process() {
	for d in /proc/[0-9]*; do
		[ -r "$d/cmdline" ] || continue
		st=$(awk '{print $3}' "$d/stat" 2>/dev/null) || continue
		[ "$st" = Z ] && continue
		if tr '\0' ' ' < "$d/cmdline" 2>/dev/null | grep -qF -- "$1"; then
			fail "process left behind: ${d#/proc/} $(tr '\0' ' ' < "$d/cmdline")"
		fi
	done
}
