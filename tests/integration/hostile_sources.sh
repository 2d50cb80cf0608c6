#!/bin/sh
# A hostile rank's traceback (daemon/pystack.c, daemon/collect.c, smtd(8)
# SECURITY), end to end: a Python rank running as uid 65534 answers the
# stall's SIGABRT with a faulthandler dump of its own making whose frames
# name a root-only file, a FIFO it holds, /dev/zero, and its own script.
# smtd read the first as root into the failure file and the stacks file,
# and blocked on the FIFO for good (PID 1 hung, no failure file).  Now the
# job ends as any stalled job (exit 1, Stalled), the rank's own frame gets
# its source line, the others none, and the secret is nowhere.
. "$top_srcdir/tests/lib.sh"
smt_tmpdir
PY=/usr/bin/python3
[ "$(id -u)" = 0 ] || skip "needs root to run the rank as nobody"
[ -x $PY ] || skip "/usr/bin/python3 is missing"
chmod 755 "$T"
mkdir -p "$T/r" "$T/nb" && chown 65534 "$T/nb"
echo "TOPSECRET root only" > "$T/secret" && chmod 600 "$T/secret"
as_nobody mkfifo "$T/nb/fifo" || fail "cannot make the FIFO"
cat > "$T/nb/rank.py" <<PYEOF
import faulthandler, os, signal, sys, time
faulthandler.disable()
def dump(sig, frame):
    sys.stderr.write('Fatal Python error: Aborted\n\nCurrent thread 0x00007f0000000000 (most recent call first):\n'
                     '  File "$T/secret", line 1 in a\n  File "$T/nb/fifo", line 1 in b\n'
                     '  File "/dev/zero", line 1 in c\n  File "$T/nb/rank.py", line 3 in d\n\n')
    sys.stderr.flush()
    os._exit(134)
signal.signal(signal.SIGABRT, dump)
print("step 1", flush=True)
time.sleep(3600)
PYEOF
chmod 644 "$T/nb/rank.py"
rc=0
timeout -k 5 60 "$SMTD" --root "$T/r" --socket "$T/s.sock" --sshd never --stall-timeout 2 -- \
	setpriv --reuid=65534 --regid=65534 --clear-groups $PY "$T/nb/rank.py" >"$T/out" 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "smtd ended with $rc (124 or 137: it hung), not 1: $(tail -5 "$T/out")"
F="$T/r/output/failure"
[ -s "$F" ] || fail "no failure file"
case $(head -1 "$F") in
"Stalled: no progress for 2 s; rank 0 on "*" went quiet (no progress for 2 s); it is in a (secret:1)") ;;
*) fail "the failure's first line: $(head -1 "$F")" ;;
esac
S="$T/r/output/data/stacks/rank-0.txt"
[ -s "$S" ] || fail "no stacks file"
for f in "$F" "$S" "$T/out"; do
	assert_not_contains "$f" "TOPSECRET" "the root-only file's line"
done
# The frame after each refused one is the next frame, not a source line.
grep -A1 -F "File \"$T/secret\", line 1 in a" "$S" | tail -1 | grep -qF "  File \"$T/nb/fifo\"" ||
	fail "the secret's frame got a line: $(cat "$S")"
grep -A1 -F "File \"$T/nb/fifo\", line 1 in b" "$S" | tail -1 | grep -q '^  File "/dev/zero"' ||
	fail "the FIFO's frame got a line: $(cat "$S")"
grep -A1 -F 'File "/dev/zero", line 1 in c' "$S" | tail -1 | grep -qF "  File \"$T/nb/rank.py\"" ||
	fail "/dev/zero's frame got a line: $(cat "$S")"
assert_contains "$S" "    def dump(sig, frame):" "the rank's own source line, read as the rank"
assert_contains "$F" "    def dump(sig, frame):" "the rank's own source line in the failure file"
echo "ok"
