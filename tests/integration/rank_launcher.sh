#!/bin/sh
# The rank launcher (`smtctl rank -- PROGRAM`, client/rank.c) against a
# stand-in smtd that speaks SOCKET.ranks' protocol (rankd.h) and misbehaves
# on purpose: whatever smtd answers, the launcher never hangs, never runs
# the program when smtd said no, and says why in one line.
#   1. no rank number in the environment: the program runs unchanged;
#   2. no smtd: the program runs unchanged, one line says so (a program
#      without "#!" fails with ENOEXEC, never goes to /bin/sh);
#   3. hello refused: exit 1, the program does not run;
#   4. start refused (the connection closed after the fork): exit 1 at
#      once, the program does not run, no child left waiting;
#   5. all accepted: the program runs with the environment smtd gave, its
#      bytes on the descriptors handed over (stdout and stderr pipes; for
#      stdout PYTHONUNBUFFERED=1, smtd's line-buffering library first in
#      LD_PRELOAD and SMTD_STDOUT_PIPE naming that very pipe), and the
#      launcher exits like it;
#   6. the same with `rank --tty`: stdout a raw pty's master, the
#      program's stdout a terminal, none of the variables of 5.
. "$top_srcdir/tests/lib.sh"
smt_tmpdir
PY=/usr/bin/python3
[ -x $PY ] || PY=python3
S="$T/smtd.sock"
PROG="$T/prog.sh"
LINEBUF="$top_builddir/preload/.libs/libsmtlinebuf.so"
[ -f "$LINEBUF" ] || fail "no $LINEBUF (make builds it)"
cat >"$PROG" <<'EOF'
#!/bin/sh
echo "ran with GIVEN=$GIVEN"
echo "buffering PYTHONUNBUFFERED=${PYTHONUNBUFFERED-unset} LD_PRELOAD=${LD_PRELOAD-unset} pipe=${SMTD_STDOUT_PIPE-unset}"
[ -n "${SMTD_STDOUT_PIPE-}" ] && [ "$SMTD_STDOUT_PIPE" = "$(stat -L -c '%d:%i' /proc/$$/fd/1)" ] && echo "the pipe is stdout"
[ -t 1 ] && echo "stdout is a terminal"
[ -t 2 ] && echo "stderr is a terminal"
touch "$MARK"
exit 7
EOF
chmod +x "$PROG"

# fake MODE: serve one launcher on $S.ranks, MODE refuse-hello,
# close-at-start or accept; prints what it received and the rank's output.
cat >"$T/fake.py" <<'PY'
import array, json, os, socket, stat, sys, termios
path, mode, lib = sys.argv[1], sys.argv[2], sys.argv[3]
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.bind(path)
s.listen(1)
print("listening", flush=True)
c, _ = s.accept()
fds = array.array("i")
msg, anc, _, _ = c.recvmsg(65536, socket.CMSG_SPACE(2 * fds.itemsize))
for level, kind, data in anc:
    if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
        fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
hello = json.loads(msg)
print("hello", hello["op"], hello["rank"], len(fds), flush=True)
def kind(fd):
    return "tty" if os.isatty(fd) else "fifo" if stat.S_ISFIFO(os.fstat(fd).st_mode) else "other"
print("kinds", kind(fds[0]), kind(fds[1]), flush=True)
if mode == "refuse-hello":
    c.send(json.dumps({"ok": False, "error": "not today"}).encode())
    sys.exit(0)
c.send(json.dumps({"ok": True, "env": {"GIVEN": "by-smtd"}, "env_default": {},
                   "stdout_preload": lib}).encode())
start = json.loads(c.recv(65536))
print("start", start["op"], start["pid"] > 0, flush=True)
if mode == "close-at-start":
    c.close()
    sys.exit(0)
c.send(json.dumps({"ok": True}).encode())
# A pty's master reads EIO, not EOF, once the program's side is closed.
out = b""
while True:
    try:
        b = os.read(fds[0], 65536)
    except OSError:
        break
    if not b:
        break
    out += b
print("stdout", out.decode().strip(), flush=True)
end = json.loads(c.recv(65536))
print("end", end["op"], flush=True)
PY

fake() { # fake MODE: start the stand-in, wait until it listens
	rm -f "$S.ranks"
	$PY "$T/fake.py" "$S.ranks" "$1" "$LINEBUF" >"$T/fake.out" 2>&1 &
	FAKE=$!
	wait_until 5 'grep -q listening "$T/fake.out" 2>/dev/null' 'the stand-in smtd did not start: $(cat "$T/fake.out")'
}
launch() { # launch NAME [VAR=VALUE...]: the launcher, at most 10 s (RANK_OPTS: its options)
	n=$1
	shift
	rc=0
	env -u PYTHONUNBUFFERED -u LD_PRELOAD -u SMTD_STDOUT_PIPE "$@" MARK="$T/$n.ran" \
		timeout -s KILL 10 "$SMTCTL" --socket "$S" rank ${RANK_OPTS:-} -- "$PROG" \
		>"$T/$n.out" 2>"$T/$n.err" || rc=$?
}

# 1. No rank number.
launch norank -u OMPI_COMM_WORLD_RANK -u PMIX_RANK -u RANK
assert_eq "$rc" 7 "no rank number: the program's exit code"
assert_eq "$(cat "$T/norank.err")" "smtctl rank: no rank number in the environment (OMPI_COMM_WORLD_RANK, PMIX_RANK or RANK): running $PROG without smtd" "no rank number: the line"
[ -e "$T/norank.ran" ] || fail "no rank number: the program did not run"

# 2. No smtd.
launch nosmtd RANK=3
assert_eq "$rc" 7 "no smtd: the program's exit code"
assert_eq "$(cat "$T/nosmtd.err")" "smtctl rank: cannot reach smtd at $S.ranks (No such file or directory): running $PROG unchanged; its output goes through the launching program" "no smtd: the line"
[ -e "$T/nosmtd.ran" ] || fail "no smtd: the program did not run"

# 2b. A program without "#!" is not handed to /bin/sh (execvp() would):
# it fails as under orted, exit 126 with the exec's reason, and nothing
# of it runs.
printf 'touch "$MARK"\n' >"$T/noshebang"
chmod +x "$T/noshebang"
rc=0
env RANK=3 MARK="$T/noshebang.ran" timeout -s KILL 10 "$SMTCTL" --socket "$S" rank -- "$T/noshebang" \
	>"$T/noshebang.out" 2>"$T/noshebang.err" || rc=$?
assert_eq "$rc" 126 "no #!: the launcher's exit code"
assert_contains "$T/noshebang.err" "smtctl rank: cannot execute $T/noshebang: Exec format error" "no #!: the line"
[ ! -e "$T/noshebang.ran" ] || fail "no #!: the program ran under a shell"

# 3. Hello refused.
fake refuse-hello
launch refused RANK=3
wait $FAKE
assert_eq "$rc" 1 "hello refused: the launcher's exit code"
assert_eq "$(cat "$T/refused.err")" "smtctl rank: rank 3: smtd refused: not today; not starting $PROG" "hello refused: the line"
[ ! -e "$T/refused.ran" ] || fail "hello refused: the program ran"
assert_contains "$T/fake.out" "hello hello 3 2" "the hello carried the rank and two pipes"

# 4. The connection closed at the start: no hang, nothing run.
fake close-at-start
t0=$(date +%s%N)
launch closed RANK=4
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
wait $FAKE
[ "$rc" != 137 ] || fail "start refused: the launcher hung (killed after 10 s)"
assert_eq "$rc" 1 "start refused: the launcher's exit code"
assert_eq "$(cat "$T/closed.err")" "smtctl rank: rank 4: smtd closed the connection; not starting $PROG" "start refused: the line"
[ ! -e "$T/closed.ran" ] || fail "start refused: the program ran"
[ $ms -lt 5000 ] || fail "start refused: the launcher took $ms ms"
sleep 0.2
pgrep -f "$PROG" >/dev/null && fail "start refused: a child was left behind"

# 5. Accepted: the environment, the pipes, the end.
fake accept
launch ok RANK=5
wait $FAKE
assert_eq "$rc" 7 "accepted: the launcher ends like the program"
assert_contains "$T/fake.out" "stdout ran with GIVEN=by-smtd" "the program's stdout went through the descriptor smtd was given, with smtd's environment"
assert_contains "$T/fake.out" "kinds fifo fifo" "smtd was given pipes for stdout and stderr"
assert_not_contains "$T/fake.out" "is a terminal" "the program's stdout and stderr are pipes"
assert_contains "$T/fake.out" "buffering PYTHONUNBUFFERED=1 LD_PRELOAD=$LINEBUF pipe=" "stdout line-buffered: PYTHONUNBUFFERED and smtd's library"
assert_contains "$T/fake.out" "the pipe is stdout" "SMTD_STDOUT_PIPE names the program's stdout"
assert_contains "$T/fake.out" "end exit" "the launcher reported the end"
[ -e "$T/ok.ran" ] || fail "accepted: the program did not run"
[ ! -s "$T/ok.out" ] || fail "accepted: output on the launcher's own stdout: $(cat "$T/ok.out")"
# The image's own choices stay: its PYTHONUNBUFFERED, and its LD_PRELOAD
# after smtd's library.
fake accept
launch ok2 RANK=5 PYTHONUNBUFFERED=0 LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libc.so.6
wait $FAKE
assert_contains "$T/fake.out" "buffering PYTHONUNBUFFERED=0 LD_PRELOAD=$LINEBUF:/usr/lib/x86_64-linux-gnu/libc.so.6 pipe=" "the image's PYTHONUNBUFFERED and LD_PRELOAD kept"

# 6. --tty: a terminal for stdout, nothing of 5's variables.
fake accept
RANK_OPTS=--tty launch tty RANK=5
wait $FAKE
assert_eq "$rc" 7 "--tty: the launcher ends like the program"
assert_contains "$T/fake.out" "kinds tty fifo" "--tty: smtd was given a pty's master for stdout and a pipe for stderr"
assert_contains "$T/fake.out" "stdout is a terminal" "--tty: the program's stdout is a terminal"
assert_not_contains "$T/fake.out" "stderr is a terminal" "--tty: the program's stderr is a pipe"
assert_contains "$T/fake.out" "buffering PYTHONUNBUFFERED=unset LD_PRELOAD=unset pipe=unset" "--tty: no variable for the buffering"
echo "ok: the launcher never hangs and never runs what smtd refused"
