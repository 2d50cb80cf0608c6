#!/bin/sh
# Every rank runs with PYTHONFAULTHANDLER=1 unless the job's environment
# sets it (any value, even empty): a standalone Python program that
# dereferences NULL in a function is named by that function, and the
# failure file goes on with its dump; with the variable set empty by the
# image, Python prints no dump and the line is the signal alone.
. "$top_srcdir/tests/lib.sh"
smt_tmpdir
cat >"$T/train.py" <<'PY'
import ctypes, os, sys
print("PYTHONFAULTHANDLER=%r" % os.environ.get("PYTHONFAULTHANDLER"), flush=True)

def load_batch():
    return ctypes.string_at(0)

load_batch()
PY

mkdir -p "$T/a"
rc=0
timeout 60 "$SMTD" --root "$T/a" --sshd never -- /usr/bin/python3 "$T/train.py" >"$T/a.out" 2>&1 || rc=$?
assert_eq "$rc" 1 "exit code of a crashed rank"
assert_contains "$T/a.out" "PYTHONFAULTHANDLER='1'" "the rank's PYTHONFAULTHANDLER"
assert_eq "$(head -1 "$T/a/output/failure")" \
	"RankKilled: rank 0 on $(hostname) was killed by SIGSEGV in load_batch (train.py:5)" "first line"
assert_eq "$(sed -n 2p "$T/a/output/failure")" "Fatal Python error: Segmentation fault" "second line"
assert_contains "$T/a/output/failure" "line 5 in load_batch" "the dump"

mkdir -p "$T/b"
rc=0
PYTHONFAULTHANDLER= timeout 60 "$SMTD" --root "$T/b" --sshd never -- /usr/bin/python3 "$T/train.py" \
	>"$T/b.out" 2>&1 || rc=$?
assert_eq "$rc" 1 "exit code of a crashed rank"
assert_contains "$T/b.out" "PYTHONFAULTHANDLER=''" "the job's own (empty) PYTHONFAULTHANDLER"
assert_eq "$(head -1 "$T/b/output/failure")" "RankKilled: rank 0 on $(hostname) was killed by SIGSEGV" \
	"first line without a dump"
echo ok
