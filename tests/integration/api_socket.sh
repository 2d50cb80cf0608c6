#!/bin/sh
# Socket set-up: directory created, mode 0660, a second server refused on a
# live socket, a stale socket replaced, the file removed at exit.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/integration/api_lib.sh"
smt_tmpdir
S="$T/a/b/smtd.sock"

api_start one --socket "$S"
assert_eq "$(stat -c %a "$S")" 660 "socket mode"
assert_eq "$(stat -c %F "$S")" socket "socket type"
assert_eq "$(stat -c %a "$T/a/b")" 755 "created directory mode"

# A second server on a live socket refuses to start and leaves it alone.
rc=0
"$API_SERVER" --socket "$S" >"$T/two.out" 2>"$T/two.err" || rc=$?
assert_eq "$rc" 1 "second server"
assert_contains "$T/two.err" "control socket $S: another daemon is already answering there (is smtd already running?)" "second server message"
code=$(curl -sS --unix-socket "$S" -o /dev/null -w '%{http_code}' http://localhost/healthz)
assert_eq "$code" 200 "first server still answers"

# Killed without cleaning up: the next one removes the stale file.
kill -KILL "$one_pid"
wait "$one_pid" 2>/dev/null || true
[ -S "$S" ] || fail "stale socket missing"
api_start three --socket "$S"
assert_contains "$T/three.err" "control socket $S: removing a stale socket file" "stale socket message"
code=$(curl -sS --unix-socket "$S" -o /dev/null -w '%{http_code}' http://localhost/readyz)
assert_eq "$code" 200 "new server answers"

# The server's sockets and loop descriptors are close-on-exec (others were
# inherited from the test's environment).
for fd in /proc/"$three_pid"/fdinfo/*; do
	n=${fd##*/}
	case $(readlink /proc/"$three_pid"/fd/"$n") in
	socket:*|anon_inode:*) ;;
	*) continue ;;
	esac
	checked=$((${checked:-0} + 1))
	flags=$(sed -n 's/^flags:[[:space:]]*//p' "$fd")
	[ $(( 0$flags & 02000000 )) -ne 0 ] || fail "fd $n of the server is not close-on-exec ($(readlink /proc/"$three_pid"/fd/"$n"))"
done
[ "${checked:-0}" -ge 2 ] || fail "no socket of the server found in /proc"
api_stop three
[ ! -e "$S" ] || fail "socket file left at exit"

# Not a socket: never removed.
echo precious >"$S"
rc=0
"$API_SERVER" --socket "$S" >"$T/four.out" 2>"$T/four.err" || rc=$?
assert_eq "$rc" 1 "regular file in the way"
assert_contains "$T/four.err" "the path exists and is not a socket; not removing it" "regular file message"
assert_eq "$(cat "$S")" precious "regular file untouched"
