#!/bin/sh
# Files planted where smtd writes (daemon/safefile.c, smtd(8) SECURITY): a
# --rank-log-dir that uid 65534 may write holds, before the job, a FIFO at
# rank-0.log (smtd's open blocked on it forever: the job never ended) and
# uid 65534's own file at rank-1.log (which received rank 1's lines).  Both
# are left alone, each is logged with what to do, the job ends as it would
# have (exit 0, success), and rank 2's file of an earlier run, smtd's own,
# is appended to as before.
. "$top_srcdir/tests/lib.sh"
smt_tmpdir
D="$T/logs"
mkdir -p "$D" "$T/r" && chmod 755 "$T" && chmod 1777 "$D"
as_nobody mkfifo "$D/rank-0.log" || fail "cannot plant the FIFO"
as_nobody sh -c "echo mine > '$D/rank-1.log'" || fail "cannot plant the file"
echo "earlier run" > "$D/rank-2.log"
rc=0
timeout -k 5 60 "$SMTD" --root "$T/r" --socket "$T/s.sock" --sshd never --mpi --processes-per-host 3 \
	--rank-log-dir "$D" -- /bin/echo hi >"$T/out" 2>&1 || rc=$?
[ "$rc" = 0 ] || fail "the job ended with $rc (124 or 137: smtd hung): $(tail -5 "$T/out")"
[ -e "$T/r/output/success" ] || fail "no success file"
assert_contains "$T/out" \
	"--rank-log-dir $D/rank-0.log: not a regular file (left alone: remove it); rank 0's lines are not written there" \
	"the FIFO, logged"
assert_contains "$T/out" \
	"--rank-log-dir $D/rank-1.log: another user's file, or one with other links (left alone: remove it); rank 1's lines are not written there" \
	"uid 65534's file, logged"
[ -p "$D/rank-0.log" ] || fail "the FIFO was replaced"
assert_eq "$(cat "$D/rank-1.log")" mine "uid 65534's file"
assert_eq "$(stat -c %U "$D/rank-1.log")" nobody "the owner of uid 65534's file"
assert_eq "$(head -1 "$D/rank-2.log")" "earlier run" "rank 2's file of an earlier run"
assert_contains "$D/rank-2.log" "hi" "rank 2's line, appended"
assert_eq "$(grep -c 'hi$' "$T/out")" 3 "every rank's line on smtd's stdout"
echo "ok"
