#!/bin/sh
# smtd reaps every zombie, orphans included: as PID 1 of a PID namespace
# and, outside one, as a child subreaper.
. "$top_srcdir/tests/lib.sh"
smt_tmpdir
[ "$(id -u)" = 0 ] || skip "needs root for a PID namespace"
unshare --pid --fork --mount-proc true 2>/dev/null || skip "PID namespaces are not available here"
mkdir -p "$T/root"

# The job makes orphans: each (orphan-sleep &) is re-parented to the
# reaper.  A name of their own: other tests running meanwhile have sleeps
# of their own, whoever their parent is.
cp "$(command -v sleep)" "$T/orphan-sleep"
# Two exit at once (zombies to reap), three outlive the ps (and the job:
# smtd ends them).
job='for t in 0.1 0.1 5 5 5; do ("${0%/*}/orphan-sleep" $t &); done; sleep 1; ps -eo pid=,ppid=,stat=,comm= > "$0"; echo "parent=$PPID" >> "$0"'

rc=0
timeout 30 unshare --pid --fork --mount-proc "$SMTD" --root "$T/root" --sshd never -- /bin/sh -c "$job" "$T/ps1.txt" >"$T/out1" 2>&1 || rc=$?
assert_eq "$rc" 0 "exit code as PID 1"
assert_contains "$T/ps1.txt" "parent=1" "smtd is PID 1 and the job's parent"
awk '$1 == 1 {print $4}' "$T/ps1.txt" | grep -q smtd || fail "PID 1 is not smtd: $(cat "$T/ps1.txt")"
if awk '$3 ~ /^Z/' "$T/ps1.txt" | grep -q .; then fail "zombies as PID 1: $(cat "$T/ps1.txt")"; fi

rc=0
timeout 30 "$SMTD" --root "$T/root" --sshd never -- /bin/sh -c "$job" "$T/ps2.txt" >"$T/out2" 2>&1 || rc=$?
assert_eq "$rc" 0 "exit code as subreaper"
parent=$(sed -n 's/^parent=//p' "$T/ps2.txt")
if awk -v p="$parent" '$2 == p && $3 ~ /^Z/' "$T/ps2.txt" | grep -q .; then
	fail "zombie children of smtd (subreaper): $(cat "$T/ps2.txt")"
fi
# The orphans were re-parented to smtd, not to the machine's init.
assert_eq "$(awk -v p="$parent" '$2 == p && $4 == "orphan-sleep"' "$T/ps2.txt" | wc -l)" 3 \
	"the living orphans, children of smtd (subreaper)"
assert_eq "$(awk '$2 == 1 && $4 == "orphan-sleep"' "$T/ps1.txt" | wc -l)" 3 \
	"the living orphans, children of smtd (PID 1)"
pgrep -x orphan-sleep >/dev/null && fail "an orphan outlived smtd"
echo ok
