#!/bin/sh
# A standalone host (MPI off) runs its command once: exit codes, result
# files, program missing or not executable, arguments byte for byte.
. "$top_srcdir/tests/lib.sh"
smt_tmpdir

run() { # run ROOT CMD... -> $rc, $T/out, $T/err
	rm -rf "$1/output"
	r=$1; shift
	rc=0
	timeout 30 "$SMTD" --root "$r" --sshd never -- "$@" >"$T/out" 2>"$T/err" || rc=$?
}
mkdir -p "$T/root"

run "$T/root" /bin/true
assert_eq "$rc" 0 "exit code of a successful job"
[ -f "$T/root/output/success" ] || fail "no success file"
[ ! -s "$T/root/output/success" ] || fail "success file not empty"
[ ! -e "$T/root/output/failure" ] || fail "failure file on success"

run "$T/root" /bin/sh -c 'echo to-stdout; echo to-stderr >&2; exit 3'
assert_eq "$rc" 1 "exit code of a failed job"
[ ! -e "$T/root/output/success" ] || fail "success file on failure"
assert_contains "$T/root/output/failure" "exit" "failure names the exit"
assert_contains "$T/root/output/failure" "3" "failure names code 3"
assert_contains "$T/out" "to-stdout" "stdout forwarded"
grep -q "to-stderr" "$T/out" "$T/err" || fail "stderr not forwarded"

run "$T/root" /nonexistent/program
assert_eq "$rc" 1 "exit code when the program is missing"
assert_contains "$T/root/output/failure" "ProgramNotFound" "missing program kind"
assert_contains "$T/root/output/failure" "/nonexistent/program" "missing program named"
assert_contains "$T/root/output/failure" "127" "missing program: 127 meaning"

printf 'echo hi\n' > "$T/notexec.sh"
chmod 644 "$T/notexec.sh"
run "$T/root" "$T/notexec.sh"
assert_eq "$rc" 1 "exit code when the program is not executable"
assert_contains "$T/root/output/failure" "ProgramNotExecutable" "non-executable kind"
assert_contains "$T/root/output/failure" "126" "non-executable: 126 meaning"

# A failure file that exists is never overwritten.
rm -rf "$T/root/output"; mkdir -p "$T/root/output"
echo "first reason" > "$T/root/output/failure"
rc=0; timeout 30 "$SMTD" --root "$T/root" --sshd never -- /bin/false >/dev/null 2>&1 || rc=$?
assert_eq "$rc" 1 "exit code of the second failure"
assert_eq "$(cat "$T/root/output/failure")" "first reason" "failure file overwritten"

# Arguments with spaces, quotes and $ arrive byte for byte: no shell.
run "$T/root" /usr/bin/printf '<%s>\n' 'a b' "it's" '$(echo no)' '"q"' '*'
assert_eq "$rc" 0 "printf job"
grep -qF '<a b>' "$T/out" || fail "space argument changed: $(cat "$T/out")"
grep -qF "<it's>" "$T/out" || fail "quote argument changed"
grep -qF '<$(echo no)>' "$T/out" || fail "dollar argument evaluated"
grep -qF '<"q">' "$T/out" || fail "double quote argument changed"
grep -qF '<*>' "$T/out" || fail "glob expanded"

# The child has its own session and no descriptor of the daemon.
run "$T/root" /bin/sh -c 'ls /proc/self/fd | tr "\n" " "; echo; echo "sid=$(ps -o sid= -p $$ | tr -d " ") pid=$$"'
assert_eq "$rc" 0 "fd job"
fds=$(untag "$T/out" | grep -v 'pid=' | head -1)
ids=$(untag "$T/out" | grep 'pid=')
sid=${ids#sid=}; sid=${sid%% *}; pid=${ids##*pid=}
assert_eq "$sid" "$pid" "the child leads its own session"
for fd in $fds; do
	case $fd in 0|1|2|3) ;; *) fail "descriptor $fd leaked into the child (fds: $fds)";; esac
done
# sshd needed but missing: a clear failure naming the package, nothing run.
rm -rf "$T/root/output"
rc=0
timeout 30 "$SMTD" --root "$T/root" --sshd always --sshd-path /nonexistent/sshd -- /bin/sh -c "touch $T/ran" >"$T/out" 2>"$T/err" || rc=$?
assert_eq "$rc" 2 "exit code when sshd is missing"
assert_contains "$T/root/output/failure" "SshdFailed" "sshd failure kind"
assert_contains "$T/root/output/failure" "openssh-server" "the package to install"
[ ! -e "$T/ran" ] || fail "the job ran without the sshd it needs"
echo "ok"
