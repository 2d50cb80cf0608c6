#!/bin/sh
# A hostile rank and smtd's stack reader (daemon/stacks.c, smtd(8) SECURITY):
#  1. a rank running as uid 65534 re-execs a private copy of python next to
#     its own python3.11-gdb.py: gdb still reads its Python frames, but the
#     script runs as uid 65534, never as root (it wrote "0" before);
#  2. a root process whose interpreter lies in a directory uid 65534 can
#     write: the script planted next to it is not run at all (gdb would
#     have run it as root), the stack is read without it and says why.
# Needs root, gdb and Debian's python3.11-dbg; skips (77) otherwise.
. "$top_srcdir/tests/lib.sh"
smt_tmpdir

READ="$top_builddir/tests/helpers/stacks_read"
PY=/usr/bin/python3.11
EXT=/usr/share/gdb/auto-load/usr/bin/python3.11-gdb.py
pids=
trap 'for p in $pids; do kill -9 $p 2>/dev/null; done; rm -rf "$T"' EXIT

[ "$(id -u)" = 0 ] || skip "needs root (smtd's case)"
command -v gdb >/dev/null 2>&1 || skip "gdb is not installed"
[ -x "$PY" ] && [ -f "$EXT" ] || skip "needs $PY and python3.11-dbg ($EXT)"

SLEEPER=$(nobody_copy "$top_srcdir/tests/helpers/sleeper.py") || exit 1

# evil_python DIR: a copy of python in DIR (owned by uid 65534) with a gdb
# extension next to it that records the uid it runs as in DIR/ran-as, then
# behaves as the real one (so that the frames are still read).
evil_python() {
	mkdir -p "$1" && cp "$PY" "$1/python3.11" && chown -R 65534:65534 "$1" || fail "cannot make $1"
	cat > "$1/python3.11-gdb.py" <<EOF
import os
open("$1/ran-as", "w").write(str(os.getuid()))
exec(open("$EXT").read())
EOF
	chown 65534:65534 "$1/python3.11-gdb.py"
}

# --- 1. a rank as uid 65534 with its own extension -----------------------
evil_python "$T/nobody/rank"
start_ready rank as_nobody "$T/nobody/rank/python3.11" "$SLEEPER"
"$READ" --timeout 20000 "$pid" > "$T/rank.txt" || fail "stacks_read failed: $(cat "$T/rank.txt")"
[ -f "$T/nobody/rank/ran-as" ] || fail "the rank's extension was not run at all: $(cat "$T/rank.txt")"
assert_eq "$(cat "$T/nobody/rank/ran-as")" 65534 "the uid the rank's gdb extension ran as"
assert_contains "$T/rank.txt" "=== $pid tool=gdb python python=1" "the rank's Python read"
assert_contains "$T/rank.txt" "sleeper.py\", line 17, in step" "the rank's Python frame"
assert_contains "$T/rank.txt" "    time.sleep(3600)" "its source line, read as the rank"

# --- 2. a root process, its interpreter in uid 65534's directory ---------
evil_python "$T/nobody/planted"
start_ready planted "$T/nobody/planted/python3.11" "$SLEEPER"
"$READ" --timeout 20000 "$pid" > "$T/planted.txt" || fail "stacks_read failed: $(cat "$T/planted.txt")"
[ ! -e "$T/nobody/planted/ran-as" ] ||
	fail "a script uid 65534 wrote ran as uid $(cat "$T/nobody/planted/ran-as") for a root process"
assert_contains "$T/planted.txt" "=== $pid tool=" "the root process's stack is still read"
assert_contains "$T/planted.txt" \
	"note: no Python frames: no CPython gdb extension for $T/nobody/planted/python3.11 (Debian: install python3.X-dbg; a root process's must be root's)" \
	"why there are no Python frames"
echo "ok"
