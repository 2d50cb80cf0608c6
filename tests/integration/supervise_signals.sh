#!/bin/sh
# smtd(8) SIGNALS on a standalone host: signals reach the job's process group;
# SIGTERM stops it (exit 143); a process that ignores SIGTERM is killed after
# --grace, one that outlives the program keeps the grace; SIGUSR1 is
# forwarded and the job goes on; nothing is left behind.
. "$top_srcdir/tests/lib.sh"
smt_tmpdir
SIGRANK="$top_builddir/tests/helpers/sigrank"
mkdir -p "$T/root"
tag="smt-sig-$$"

start() { # start NAME ARGS... : smtd in the background
	name=$1; shift
	rm -rf "$T/root/output" "$T/$name"; mkdir -p "$T/$name"
	"$SMTD" --root "$T/root" --sshd never "$@" >"$T/$name/out" 2>"$T/$name/err" &
	SPID=$!
}

# 1. SIGTERM: the program and its child get it; smtd exits 143.
start term --grace 10 -- "$SIGRANK" --record "$T/term/rec" --ready "$T/term" --child "$tag-term"
wait_for_file "$T/term/ready.0" || fail "job did not start"
t0=$(date +%s%N)
kill -TERM $SPID
rc=0; wait $SPID || rc=$?
t1=$(date +%s%N)
assert_eq "$rc" 143 "exit code after SIGTERM"
assert_contains "$T/term/rec" "0 TERM" "SIGTERM reached the rank"
assert_contains "$T/root/output/failure" "SIGTERM" "failure names the signal"
assert_no_process "$tag-term"
echo "SIGTERM to exit: $(( (t1 - t0) / 1000000 )) ms"

# 2. A rank that ignores SIGTERM is SIGKILLed after --grace.
start grace --grace 1 -- "$SIGRANK" --ignore-term --record "$T/grace/rec" --ready "$T/grace" "$tag-grace"
wait_for_file "$T/grace/ready.0" || fail "job did not start"
t0=$(date +%s%N)
kill -TERM $SPID
rc=0; wait $SPID || rc=$?
t1=$(date +%s%N)
ms=$(( (t1 - t0) / 1000000 ))
assert_eq "$rc" 143 "exit code after the grace kill"
assert_contains "$T/grace/rec" "0 TERM" "SIGTERM recorded before the kill"
[ $ms -ge 900 ] || fail "killed after $ms ms, before the 1 s grace"
[ $ms -lt 5000 ] || fail "grace kill took $ms ms"
assert_contains "$T/grace/err" "grace" "the grace kill is logged"
assert_no_process "$tag-grace"
echo "grace 1 s: exit after $ms ms"

# 3. SIGUSR1 and SIGUSR2 are forwarded and the job goes on to succeed.
start usr -- "$SIGRANK" --record "$T/usr/rec" --ready "$T/usr" --exit-after 2 "$tag-usr"
wait_for_file "$T/usr/ready.0" || fail "job did not start"
kill -USR1 $SPID
kill -USR2 $SPID
rc=0; wait $SPID || rc=$?
assert_eq "$rc" 0 "exit code after SIGUSR1"
assert_contains "$T/usr/rec" "0 USR1" "SIGUSR1 reached the rank"
assert_contains "$T/usr/rec" "0 USR2" "SIGUSR2 reached the rank"
[ -f "$T/root/output/success" ] || fail "no success file after SIGUSR1"

# 4. SIGINT, SIGHUP and SIGQUIT stop the job with 128+N.
for s in INT:130 HUP:129 QUIT:131; do
	name=${s%%:*}; code=${s##*:}
	start "$name" --grace 5 -- "$SIGRANK" --record "$T/$name/rec" --ready "$T/$name" "$tag-$name"
	wait_for_file "$T/$name/ready.0" || fail "job did not start"
	kill -"$name" $SPID
	rc=0; wait $SPID || rc=$?
	assert_eq "$rc" "$code" "exit code after SIG$name"
	assert_contains "$T/$name/rec" "0 $name" "SIG$name reached the rank"
	assert_no_process "$tag-$name"
done

# 5. On SIGTERM the program exits at once, but a child of it saves its
# work first (1 s, with its output elsewhere): it keeps the grace, smtd
# waits for it and then exits 143 - well before the 10 s grace.
saver="trap 'sleep 1; echo saved >$T/keep/saved; exit 0' TERM; while :; do sleep 0.05; done"
start keep --grace 10 -- /bin/sh -c "/bin/sh -c \"$saver\" </dev/null >/dev/null 2>&1 & touch $T/keep/ready; exec sleep 60"
wait_for_file "$T/keep/ready" || fail "job did not start"
sleep 0.2
t0=$(date +%s%N)
kill -TERM $SPID
rc=0; wait $SPID || rc=$?
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
assert_eq "$rc" 143 "exit code after SIGTERM with a child saving its work"
[ -f "$T/keep/saved" ] || fail "the child was killed before it saved its work (smtd exited after $ms ms): $(cat "$T/keep/err")"
[ $ms -lt 8000 ] || fail "smtd waited $ms ms: the grace, not the child's end"
echo "child saved its work; smtd exited $ms ms after SIGTERM"

# 6. The program exits but leaves a child behind: smtd kills it.
start left -- /bin/sh -c "$SIGRANK --ready $T/left $tag-left & while [ ! -e $T/left/ready.0 ]; do sleep 0.05; done; exit 0"
rc=0; wait $SPID || rc=$?
assert_eq "$rc" 0 "exit code with a leftover child"
assert_no_process "$tag-left"
echo ok
