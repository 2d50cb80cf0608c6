#!/bin/sh
# libcurl is mapped only by the processes that speak HTTP through it:
# never by `smtd --dry-run`, a one-host job or `smtctl dial-stdio`; smtctl
# status loads it and works; a libcurl that cannot be loaded is one line
# and exit 3 from smtctl, and a failed job for a multi-host leader.
. "$top_srcdir/tests/lib.sh"
smt_tmpdir
S="$T/smtd.sock"

# libs_of NAME CMD...: run CMD with the dynamic linker's log in $T/ld.NAME.*
libs_of() {
	name=$1; shift
	LD_DEBUG=libs LD_DEBUG_OUTPUT="$T/ld.$name" "$@"
}
# The log must show the linker at work, or "no libcurl" proves nothing.
assert_loaded() { # assert_loaded NAME LIB
	cat "$T"/ld."$1".* >"$T/ld.$1" 2>/dev/null || fail "$1: no dynamic linker log"
	grep -q "calling init: .*$2" "$T/ld.$1" || fail "$1: $2 not in the linker's log"
}
assert_not_loaded() { # assert_not_loaded NAME LIB
	cat "$T"/ld."$1".* >"$T/ld.$1" 2>/dev/null || fail "$1: no dynamic linker log"
	grep -q "calling init: .*libc.so" "$T/ld.$1" || fail "$1: the linker's log is empty"
	! grep -q "$2" "$T/ld.$1" || fail "$1 loaded $2: $(grep "$2" "$T/ld.$1" | head -3)"
}

# ---- smtd --dry-run ----
mkdir -p "$T/r"
rc=0
libs_of dry "$SMTD" --root "$T/r" --socket "$S" --mpi --processes-per-host 2 --dry-run \
	-- /bin/true >"$T/dry.out" 2>"$T/dry.err" || rc=$?
assert_eq "$rc" 0 "exit code of --dry-run ($(cat "$T/dry.err"))"
assert_contains "$T/dry.out" "mpirun" "the dry run prints the mpirun command"
assert_not_loaded dry libcurl

# ---- a one-host job, running ----
"$SMTD" --root "$T/r" --socket "$S" --sshd never -- sleep 30 >"$T/job.out" 2>&1 &
SPID=$!
trap 'kill $SPID 2>/dev/null; rm -rf "$T"' EXIT
wait_until 10 '"$SMTCTL" --socket "$S" status >"$T/status" 2>&1 && grep -q running "$T/status"' \
	'the job never ran: $(cat "$T/status" "$T/job.out")'
grep -q libuv /proc/$SPID/maps || fail "cannot read the daemon's maps"
! grep -q libcurl /proc/$SPID/maps || fail "the one-host daemon mapped libcurl: $(grep libcurl /proc/$SPID/maps | head -1)"

# smtctl status loads libcurl and works.
rc=0
libs_of status "$SMTCTL" --socket "$S" status >"$T/status" 2>&1 || rc=$?
assert_eq "$rc" 0 "exit code of smtctl status ($(cat "$T/status"))"
assert_contains "$T/status" "running" "the state in smtctl status"
assert_loaded status libcurl

# dial-stdio carries HTTP without it.
printf 'GET /v1/status HTTP/1.0\r\nHost: localhost\r\n\r\n' |
	libs_of dial "$SMTCTL" --socket "$S" dial-stdio >"$T/dial.out" 2>"$T/dial.err" ||
	fail "dial-stdio failed: $(cat "$T/dial.err")"
assert_contains "$T/dial.out" "HTTP/1.1 200" "the answer through dial-stdio"
assert_contains "$T/dial.out" '"state":"running"' "the status through dial-stdio"
assert_not_loaded dial libcurl

# ---- a libcurl that cannot be loaded ----
# The loader finds this one first: not a library at all.
so=$(sed -n 's/^#define SMT_CURL_SONAME "\(.*\)"$/\1/p' "$top_builddir/config.h")
[ -n "$so" ] || fail "no SMT_CURL_SONAME in config.h"
mkdir -p "$T/badlib"
printf 'not a library\n' >"$T/badlib/$so"
rc=0
LD_LIBRARY_PATH="$T/badlib" "$SMTCTL" --socket "$S" status >"$T/bad.out" 2>"$T/bad.err" || rc=$?
assert_eq "$rc" 3 "exit code of smtctl without libcurl"
assert_eq "$(wc -l <"$T/bad.err")" 1 "smtctl's error is one line"
assert_contains "$T/bad.err" "smtctl: cannot load libcurl ($so): $T/badlib/$so: " \
	"smtctl names the library"
assert_contains "$T/bad.err" "(install the libcurl4 package)" "smtctl says what to install"
# dial-stdio does not care.
printf 'GET /healthz HTTP/1.0\r\n\r\n' |
	LD_LIBRARY_PATH="$T/badlib" "$SMTCTL" --socket "$S" dial-stdio >"$T/dial2.out" 2>&1 ||
	fail "dial-stdio without libcurl failed: $(cat "$T/dial2.out")"
assert_contains "$T/dial2.out" "HTTP/1.1 200" "dial-stdio without libcurl"

kill -TERM $SPID
wait $SPID 2>/dev/null || true

# The leader of a two-host job needs it for the workers' channels: the
# job fails at once, saying why, instead of waiting for workers.
mkdir -p "$T/l/input/config"
cat >"$T/l/input/config/resourceconfig.json" <<'JSON'
{"current_host": "algo-1", "hosts": ["algo-1", "algo-2"]}
JSON
echo '{"sagemaker_mpi_enabled": "true"}' >"$T/l/input/config/hyperparameters.json"
rc=0
LD_LIBRARY_PATH="$T/badlib" timeout 30 "$SMTD" --root "$T/l" --socket "$S" --sshd never \
	--wait-timeout 20 -- /bin/true >"$T/leader.out" 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "leader without libcurl: exit $rc (expected 1): $(cat "$T/leader.out")"
assert_contains "$T/leader.out" \
	"the workers' channels need libcurl: cannot load libcurl ($so): $T/badlib/$so: " \
	"the leader says why"
[ -s "$T/l/output/failure" ] || fail "the leader left no failure file"
assert_contains "$T/l/output/failure" "InternalError: the channels to the workers need libcurl, which cannot be loaded; install the libcurl4 package" "the leader's failure without libcurl"

# With libcurl, the leader listens for its channels next to the control
# socket: a file there that is not a socket is neither removed nor used,
# and the job fails at once, saying where.
rm -rf "$T/l/output"
echo keep >"$S.channels"
rc=0
timeout 30 "$SMTD" --root "$T/l" --socket "$S" --sshd never \
	--wait-timeout 20 -- /bin/true >"$T/leader2.out" 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "leader with a file at $S.channels: exit $rc (expected 1): $(cat "$T/leader2.out")"
assert_contains "$T/leader2.out" "channel socket $S.channels: the path exists and is not a socket; not removing it" \
	"the leader names the channels' socket"
assert_contains "$T/l/output/failure" "InternalError: cannot open the channels to the workers: File exists" \
	"the leader's failure"
assert_eq "$(cat "$S.channels")" keep "the file at $S.channels"
