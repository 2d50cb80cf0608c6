#!/bin/sh
# smtd(8) A rank's standard output, on a standalone host (MPI off: smtd
# runs the program itself, no launcher): its stdout is a pipe that C's
# stdio and Python line-buffer, so each line is on smtd's output at its
# newline, with nothing set by the image.
#   1. C (tests/helpers/ttyrank: printf, no fflush, a line every 0.3 s) and
#      Python (print, no flush, PYTHONUNBUFFERED removed): every tick
#      within 0.1 s of its print (smtd's JSON lines carry the time each
#      line was read; one late tick in ten is let pass on a busy machine,
#      none past 0.5 s); the program saw PYTHONUNBUFFERED=1 and stdout not
#      a terminal;
#   2. the same with --rank-stdout tty (a standalone program has no
#      launcher, hence no terminal: still a line-buffered pipe);
#   3. without libsmtlinebuf.so beside --preload's library: one warning
#      line naming the path, the job still runs and succeeds, and C's lines
#      wait for the program's end (the library is what does 1);
#   4. a bad --rank-stdout or SMTD_RANK_STDOUT: exit 2, one line, nothing
#      run.
. "$top_srcdir/tests/lib.sh"
smt_tmpdir
TTYRANK="$top_builddir/tests/helpers/ttyrank"
[ -x "$TTYRANK" ] || fail "no $TTYRANK (make check builds it)"
unset PYTHONUNBUFFERED
mkdir -p "$T/root"
cat >"$T/ticks.py" <<'PY'
import os, sys, time
print("py: isatty %d; PYTHONUNBUFFERED %s" % (os.isatty(1), os.environ.get("PYTHONUNBUFFERED", "unset")))
for i in range(10):
    print("py tick %d %.6f" % (i, time.time()))
    time.sleep(0.3)
PY
# lags FILE: "N LATE SLOW WORST" of the ticks in smtd's JSON output FILE.
lags() {
	/usr/bin/python3 - "$1" <<'PY'
import datetime, json, re, sys
n = late = slow = 0
worst = 0.0
for raw in open(sys.argv[1], errors="replace"):
    try:
        o = json.loads(raw)
    except ValueError:
        continue
    m = re.match(r"^(?:py|c) tick \d+ (\d+\.\d+)$", o.get("line", ""))
    if not m:
        continue
    at = datetime.datetime.strptime(o["time"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()
    lag = at - float(m.group(1))
    n += 1
    late += lag > 0.1
    slow += lag > 0.5
    worst = max(worst, lag)
print(n, late, slow, "%.3f" % worst)
PY
}
# run NAME [SMTD OPTIONS...] -- CMD...: a standalone job, JSON output in $T/NAME.out.
run() {
	n=$1
	shift
	rm -rf "$T/root/output"
	rc=0
	timeout 60 "$SMTD" --root "$T/root" --socket "$T/smtd.sock" --sshd never \
		--log-format json "$@" >"$T/$n.out" 2>"$T/$n.err" || rc=$?
	assert_eq "$rc" 0 "$n: smtd's exit code"
}
check_prompt() { # check_prompt NAME KIND: every tick of KIND (c, py) within 0.1 s
	set -- $(lags "$T/$1.out") "$1"
	[ "$1" = 10 ] || fail "$5: $1 ticks of 10 on smtd's output"
	[ "$3" = 0 ] && [ "$2" -le 1 ] ||
		fail "$5: $2 of 10 ticks more than 0.1 s after their print, $3 past 0.5 s (worst $4 s)"
	echo "$5: 10 ticks, the latest $4 s after its print"
}

for mode in pipe tty; do
	run "c-$mode" --rank-stdout $mode -- "$TTYRANK" 10 300
	check_prompt "c-$mode"
	assert_contains "$T/c-$mode.out" '"line":"tty: isatty 0 0 0; size 0x0;' "$mode: C's stdout is not a terminal"
	run "py-$mode" --rank-stdout $mode -- /usr/bin/python3 "$T/ticks.py"
	check_prompt "py-$mode"
	assert_contains "$T/py-$mode.out" '"line":"py: isatty 0; PYTHONUNBUFFERED 1"' "$mode: Python's stdout"
	assert_not_contains "$T/c-$mode.err" "libsmtlinebuf" "$mode: no warning with the library there"
done

# 3. The library missing: a warning, and stdio's full buffer.
mkdir -p "$T/lib"
cp "$SMTD_PRELOAD" "$T/lib/"
run nolib --preload "$T/lib/libsmthostname.so" -- "$TTYRANK" 10 300
grep -q "\"level\":\"warn\",\"source\":\"smtd\",\"message\":\"$T/lib/libsmtlinebuf.so: No such file or directory: C programs whose stdout is a pipe to smtd will hold their lines until 4 KiB; install libsmtlinebuf.so in the directory of libsmthostname.so (--preload)" \
	"$T/nolib.out" "$T/nolib.err" || fail "no warning for the missing library: $(cat "$T/nolib.err")"
set -- $(lags "$T/nolib.out")
[ "$1" = 10 ] || fail "without the library: $1 ticks of 10"
[ "$3" -ge 5 ] || fail "without the library, $3 of 10 ticks were more than 0.5 s late: the check of 1 cannot fail"
# 4. Bad values.
bad() { # bad MESSAGE ARGS...
	msg=$1
	shift
	rm -rf "$T/root/output" "$T/ran"
	rc=0
	"$SMTD" --root "$T/root" --sshd never "$@" -- /bin/touch "$T/ran" >"$T/bad.out" 2>"$T/bad.err" || rc=$?
	assert_eq "$rc" 2 "exit code for $*"
	assert_eq "$(head -1 "$T/bad.err")" "smtd: $msg" "the error for $*"
	[ ! -e "$T/ran" ] && [ ! -e "$T/root/output/success" ] && [ ! -e "$T/root/output/failure" ] ||
		fail "something ran or was written for $*"
}
bad "--rank-stdout: 'sometimes' is not one of pipe, tty" --rank-stdout sometimes
bad "--rank-stdout: '' is not one of pipe, tty" --rank-stdout ''
bad "--rank-stdout: 'PIPE' is not one of pipe, tty" --rank-stdout PIPE
SMTD_RANK_STDOUT=pty bad "SMTD_RANK_STDOUT: 'pty' is not one of pipe, tty"

echo "ok: a standalone program's lines arrive at their newline ($3 of 10 ticks past 0.5 s without the library)"
