#!/bin/sh
# Open files: smtd raises its soft limit to the hard one, for itself and
# what it starts (a leader holds some 4 descriptors per worker, mpirun as
# many), and says when the hard limit is too low for the job's hosts.
. "$top_srcdir/tests/lib.sh"
smt_tmpdir
command -v prlimit >/dev/null || skip_tool prlimit
mkdir -p "$T/root"

# The program reads its own limit: it inherits smtd's.
rc=0
prlimit --nofile=1024:8192 -- "$SMTD" --root "$T/root" --sshd never -- \
	/bin/sh -c 'ulimit -Sn; ulimit -Hn' >"$T/out" 2>"$T/err" || rc=$?
assert_eq "$rc" 0 "exit code"
assert_eq "$(sed -n 's/^.*<stdout>: //p' "$T/out" | tr '\n' ' ')" "8192 8192 " \
	"the program's soft and hard limits"
! grep -q "open files" "$T/err" || fail "a warning with room enough: $(grep 'open files' "$T/err")"

# A hard limit below what one host needs (256 + 4): one line that says
# what to do; the job still runs.
rm -rf "$T/root/output"
rc=0
prlimit --nofile=64:200 -- "$SMTD" --root "$T/root" --sshd never -- /bin/true >"$T/out" 2>"$T/err" || rc=$?
assert_eq "$rc" 0 "exit code with a low hard limit"
grep -qF "warn: open files: the limit is 200, and a job of 1 hosts needs about 260 on the leader; raise the hard limit (docker run --ulimit nofile=260:260, LimitNOFILE= in a systemd unit)" "$T/err" ||
	fail "no warning of the low limit: $(cat "$T/err")"
echo ok
