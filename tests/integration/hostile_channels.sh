#!/bin/sh
# The leader's channel socket (daemon/peers.c, smtd(8) SECURITY): a
# connection there becomes the stdin of root's `ssh WORKER smtctl
# dial-stdio`, which the worker trusts as the leader.
#  1. A --socket of 100 bytes makes SOCKET.channels too long for a socket
#     address: the listener is still a path (mode 0600), never an abstract
#     socket anyone may connect to (it was one before).
#  2. A process other than smtd that connects there, even root's and from
#     a name like the leader's own connections, gets no ssh: it is closed,
#     and logged (the ssh stand-in, which records each run, ran for it
#     before).
#  3. Each channel's process starts clean (spawn.h; posix_spawn since the
#     leader forks no more for them): its own session, no signal blocked
#     or ignored, no descriptor of smtd's beyond 0, 1 and 2.
# The leader of a two-host job waits for algo-2, which never answers (the
# ssh stand-in exits 255 at once); nothing else of the job is needed.
. "$top_srcdir/tests/lib.sh"
smt_tmpdir
PY=/usr/bin/python3
[ -x "$PY" ] || skip "needs $PY"

# A socket path of exactly 100 bytes.
D="$T/$(printf 'd%.0s' $(seq 1 60))"
mkdir -p "$D"
S="$D/s.sock"
while [ ${#S} -lt 100 ]; do S="$D/x${S#"$D"/}"; done
[ ${#S} = 100 ] || fail "socket path of ${#S} bytes"

# The ssh stand-in records each run and what came on its stdin, holding
# the connection for 2 s (so that the leader's own connections, named
# after it, can be seen in /proc/net/unix).  Its records go to
# $STANDIN_DIR, $T unless set (only the run by hand below sets it).
cat > "$T/ssh" <<EOF
#!/bin/sh
d=\${STANDIN_DIR:-$T}
# Its session and signals before it runs any command: dash unblocks every
# signal after each fork (not restoring the mask it started with), so read
# after one command they were always clean, whatever smtd gave (a spawn.c
# blocking all of them passed).  Read by the shell itself: while it forks,
# dash blocks every signal, and a child reading this status saw that.
# No command substitution: its pipe would be one more descriptor.
read -r pid comm state ppid pgrp sid rest < /proc/\$\$/stat
echo "\$pid \$sid" > "\$d/ssh.part.\$\$"
while read -r l; do case \$l in SigBlk:*|SigIgn:*) echo "\$l" ;; esac; done \
	< /proc/\$\$/status >> "\$d/ssh.part.\$\$"
ls -l /proc/\$\$/fd/ >> "\$d/ssh.part.\$\$"
# Whole records only, under the name the test reads.
mv "\$d/ssh.part.\$\$" "\$d/ssh.state.\$\$"
echo "\$*" >> "\$d/ssh.runs"
exec timeout 2 cat > "\$d/ssh.in.\$\$"
EOF
chmod 755 "$T/ssh"

# sigmask RECORD NAME: the hex mask of NAME (SigBlk, SigIgn) in RECORD; a
# record without it fails, never passes unchecked.
sigmask() {
	_m=$(sed -n "s/^$2:	\([0-9a-f]\{16\}\)\$/\1/p" "$1")
	[ -n "$_m" ] || { cat "$1" >&2; fail "no $2 in $1"; }
	echo "$_m"
}

# The stand-in sees the signals it starts with: run by hand with every
# signal blocked and SIGUSR1 ignored, it records them.  Otherwise part 3
# would pass whatever smtd gave its channels, as it did.
mkdir "$T/control"
STANDIN_DIR="$T/control" "$PY" -c '
import os, signal, sys
signal.pthread_sigmask(signal.SIG_SETMASK, signal.valid_signals())
signal.signal(signal.SIGUSR1, signal.SIG_IGN)
os.execv(sys.argv[1], sys.argv[1:])' "$T/ssh" control </dev/null ||
	fail "the ssh stand-in failed when run by hand"
c=$(echo "$T"/control/ssh.state.*)
[ -f "$c" ] || fail "the ssh stand-in run by hand recorded nothing"
blk=$(sigmask "$c" SigBlk) || exit 1
ign=$(sigmask "$c" SigIgn) || exit 1
# The low 32 bits: SIGTERM is bit 14, SIGUSR1 bit 9.
[ $(( 0x${blk#????????} & 0x4000 )) != 0 ] ||
	fail "the ssh stand-in does not see its blocked signals (SigBlk $blk, all blocked)"
[ $(( 0x${ign#????????} & 0x200 )) != 0 ] ||
	fail "the ssh stand-in does not see its ignored signals (SigIgn $ign, SIGUSR1 ignored)"

mkdir -p "$T/l/input/config"
echo '{"current_host": "algo-1", "hosts": ["algo-1", "algo-2"]}' >"$T/l/input/config/resourceconfig.json"
echo '{"sagemaker_mpi_enabled": "true"}' >"$T/l/input/config/hyperparameters.json"
"$SMTD" --root "$T/l" --socket "$S" --sshd never --ssh-path "$T/ssh" --debug \
	--wait-timeout 30 -- /bin/true >"$T/leader.out" 2>&1 &
LPID=$!
trap 'kill -TERM $LPID 2>/dev/null; wait $LPID 2>/dev/null; rm -rf "$T"' EXIT
wait_for_file "$T/ssh.runs" 20 || fail "the leader never tried its worker: $(cat "$T/leader.out")"

# --- 1. no abstract listener; the path is there, 0600 -------------------
listeners=$(awk '$4 == "00010000" && $8 ~ /^@smtd-/ {print $8}' /proc/net/unix)
[ -z "$listeners" ] || fail "an abstract listener anyone may connect to: $listeners"
[ -S "$S.channels" ] || fail "no channel socket at $S.channels: $(cat "$T/leader.out")"
assert_eq "$(stat -c %a "$S.channels")" 600 "the channel socket's mode"

# --- 2. root's process, not smtd, named as the leader's connections -----
i=0
while :; do
	prefix=$(awk '$8 ~ /^@smtd-[0-9]+-[0-9a-f]+-p0-/ {print $8; exit}' /proc/net/unix)
	[ -z "$prefix" ] || break
	i=$((i + 1))
	[ $i -le 200 ] || fail "no connection of the leader's in /proc/net/unix"
	sleep 0.05
done
prefix=${prefix%%-p0-*}
prefix=${prefix#@}
"$PY" - "$S.channels" "$prefix" <<'EOF' || fail "could not connect to the channel socket as root"
import os, socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind("\0%s-p0-999" % sys.argv[2])
# the long path, through its directory as smtd does
d, name = os.path.split(sys.argv[1])
fd = os.open(d, os.O_PATH)
s.connect("/proc/self/fd/%d/%s" % (fd, name))
s.settimeout(5)
try:
    s.sendall(b"GET /v1/status HTTP/1.1\r\nHost: x\r\n\r\n")
    assert s.recv(100) == b"", "the connection was answered"
except (BrokenPipeError, ConnectionResetError):
    pass  # closed by smtd at once
EOF
wait_until 5 'grep -q "a connection to the workers'"'"' channel socket from pid [0-9]* (uid 0), not smtd: closed" "$T/leader.out"' \
	'the refused connection was not logged: $(tail -5 "$T/leader.out")'
sleep 2.5
kill -TERM $LPID
wait $LPID 2>/dev/null || true
# The leader's own connections reached ssh (its requests name worker-1);
# the intruder's never did.
cat "$T"/ssh.in.* > "$T/ssh.in" 2>/dev/null
assert_contains "$T/ssh.in" "Host: worker-1" "the leader's own request through ssh"
assert_not_contains "$T/ssh.in" "Host: x" "the intruder's request through ssh"
assert_not_contains "$T/leader.out" "path too long for a socket" "the old fallback's warning"

# --- 3. the channels' processes start clean ------------------------------
# Every channel the leader started has its record: the leader kills none
# of them, and each records before it reads its stdin.
pids=$(sed -n 's/.*: ssh pid \([0-9]*\)$/\1/p' "$T/leader.out")
for p in $pids; do
	wait_until 10 '[ -f "$T/ssh.state.$p" ]' \
		'channel process $p (leader.out) left no record: $(ls "$T")'
done
n=0
for f in "$T"/ssh.state.*; do
	[ -f "$f" ] || break
	n=$((n + 1))
	read -r pid sid < "$f"
	assert_eq "$sid" "$pid" "a channel's session ($f)"
	blk=$(sigmask "$f" SigBlk) || exit 1
	[ "$blk" = 0000000000000000 ] || { cat "$f" >&2; fail \
		"channel process $pid started with signals blocked (SigBlk $blk, none expected)"; }
	# Signals 32 and 33 are glibc's own (never the program's to use),
	# ignored as smtd's environment had them; no other is.
	ign=$(sigmask "$f" SigIgn) || exit 1
	assert_eq "$(( 0x$ign & ~0x180000000 ))" 0 "a channel's ignored signals (SigIgn $ign)"
	# Past 2: only the shell's own (its script, its saved copies of 0-2).
	std=$(awk '$(NF-2) ~ /^[012]$/ { print $NF }' "$f" | sort -u | tr '\n' ' ')
	extra=$(awk -v std=" $std" -v me="$T/ssh" '$(NF-1) == "->" && $(NF-2) > 2 &&
		$NF != me && index(std, " " $NF " ") == 0 { print $(NF-2) " -> " $NF }' "$f")
	[ -z "$extra" ] || { cat "$f" >&2; fail "a channel got smtd's descriptors: $extra"; }
done
[ $n -ge 2 ] || fail "only $n channel processes recorded"
echo "$n channels started clean ($(echo $pids | wc -w) in leader.out)"
echo "ok"
