#!/bin/sh
# Socket set-up: directory created, mode 0660, a second server refused on a
# live socket, a stale socket replaced, the file removed at exit, a file
# that is not a socket never removed; the same policy for the rank
# launchers' SOCKET.ranks of a real smtd.
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

# The rank launchers' socket (SOCKET.ranks, a real smtd of one host under
# MPI) follows the same policy (daemon/unixlisten.c): a socket another
# process answers on is left alone and nothing starts; a stale one is
# replaced.
R="$T/r"
mkdir -p "$R/root"
RS="$R/smtd.sock"
/usr/bin/python3 - "$RS.ranks" "$R/up" <<'PY' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.bind(sys.argv[1])
s.listen(8)
open(sys.argv[2], "w").close()
time.sleep(60)
PY
LIVE=$!
wait_until 10 '[ -e "$R/up" ]' 'the live listener did not start'
ino=$(stat -c %i "$RS.ranks")
rc=0
timeout 30 "$SMTD" --root "$R/root" --socket "$RS" --sshd never --mpi --processes-per-host 1 \
	--mpi-options --oversubscribe -- /bin/touch "$R/ran" >"$R/live.out" 2>&1 || rc=$?
assert_eq "$rc" 2 "smtd beside a live SOCKET.ranks"
assert_contains "$R/live.out" "rank launcher socket $RS.ranks: another daemon is already answering there (is smtd already running?)" "a live SOCKET.ranks: the line"
assert_eq "$(stat -c %i "$RS.ranks")" "$ino" "the live SOCKET.ranks is the other process's still"
kill -0 $LIVE 2>/dev/null || fail "the process listening on SOCKET.ranks is gone"
[ ! -e "$R/ran" ] || fail "a rank ran beside a live SOCKET.ranks"
kill $LIVE
wait $LIVE 2>/dev/null || true
# Its process gone, the file is a stale socket.
[ -S "$RS.ranks" ] || fail "the stale SOCKET.ranks is missing"
rm -rf "$R/root/output"
rc=0
timeout 60 "$SMTD" --root "$R/root" --socket "$RS" --sshd never --mpi --processes-per-host 1 \
	--mpi-options --oversubscribe -- /bin/touch "$R/ran" >"$R/stale.out" 2>&1 || rc=$?
assert_eq "$rc" 0 "smtd beside a stale SOCKET.ranks: $(tail -3 "$R/stale.out")"
assert_contains "$R/stale.out" "rank launcher socket $RS.ranks: removing a stale socket file" "a stale SOCKET.ranks: the line"
[ -e "$R/ran" ] || fail "the rank did not run after the stale SOCKET.ranks was replaced"
[ ! -e "$RS.ranks" ] || fail "SOCKET.ranks left at exit"
echo "ok: every listener probes a socket in its way, replaces a stale one and leaves the rest alone"
