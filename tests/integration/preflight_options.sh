#!/bin/sh
# The pre-launch options' bad input, each with its exact error
# (exit 2, nothing started), and the checks on one host: free disk, a
# preflight command that is missing, fails or hangs, --no-install.
. "$top_srcdir/tests/lib.sh"
smt_tmpdir
R=$T/root
mkdir -p "$R/model" "$R/output"

# expect_option_error MESSAGE ARGS...: smtd exits 2, its first line "smtd: MESSAGE".
expect_option_error() {
	msg=$1
	shift
	rc=0
	"$SMTD" --root "$R" --sshd never "$@" -- /bin/true >"$T/out" 2>"$T/err" || rc=$?
	assert_eq "$rc" 2 "exit code for $*"
	assert_eq "$(head -1 "$T/err")" "smtd: $msg" "the error for $*"
	[ ! -e "$R/output/success" ] || fail "a success file for $*"
}
SIZE="is not a size (a number of bytes with an optional K, M or G suffix, 1024-based, like 512M or 2G; 0 turns the check off)"
expect_option_error "--min-shm: '1X' $SIZE" --min-shm 1X
expect_option_error "--min-shm: '-1G' $SIZE" --min-shm -1G
expect_option_error "--min-shm: '1GB' $SIZE" --min-shm 1GB
expect_option_error "--min-free-disk: '2T' $SIZE" --min-free-disk 2T
expect_option_error "--min-free-disk: '' $SIZE" --min-free-disk ''
expect_option_error "--min-free-disk: '9999999999999999' $SIZE" --min-free-disk 9999999999999999
SMTD_MIN_SHM=lots expect_option_error "SMTD_MIN_SHM: 'lots' $SIZE"
expect_option_error "--preflight-timeout: '-5' is not a number of seconds from 1 to 1000000000 (digits and at most one decimal point, like 30 or 2.5)" \
	--preflight-timeout -5
expect_option_error "--preflight-timeout: '0' is not a number of seconds from 1 to 1000000000 (digits and at most one decimal point, like 30 or 2.5)" \
	--preflight-timeout 0
expect_option_error "--preflight-command: unbalanced single quote at byte 7; fix the quoting" \
	--preflight-command "sh -c 'exit 1"
expect_option_error "--preflight-command: the value is empty" --preflight-command ''
expect_option_error "--preflight-command: the value has no word to run" --preflight-command '  '
expect_option_error "option '--no-install' takes no value" --no-install=yes
SMTD_NO_INSTALL=maybe expect_option_error "SMTD_NO_INSTALL: 'maybe' is not one of true, false, 1, 0 (or yes, no, on, off)"
mkdir -p "$R/input/config"
printf '{"sagemaker_preflight_command": "\\"nccl-test '"'"'-b\\""}\n' >"$R/input/config/hyperparameters.json"
expect_option_error "$R/input/config/hyperparameters.json: sagemaker_preflight_command: unbalanced single quote at byte 11; fix the value"
rm "$R/input/config/hyperparameters.json"

# run ARGS...: one standalone host; $rc, $T/err (smtd's log), the failure.
run() {
	rm -rf "$R/output/success" "$R/output/failure" "$R/output/data"
	rc=0
	timeout 60 "$SMTD" --root "$R" --sshd never "$@" >"$T/out" 2>"$T/err" || rc=$?
}
HOST=$(hostname)

# Free disk: more than any disk has.
run --min-free-disk 1000000G -- /bin/sh -c 'touch "$0"' "$T/ran"
assert_eq "$rc" 1 "exit code of a host short of disk"
first=$(head -1 "$R/output/failure")
case $first in
"PreflightFailed: $HOST: $R/model has "*" free, less than --min-free-disk 976.6 TiB") ;;
*) fail "the disk failure: $first" ;;
esac
[ ! -e "$T/ran" ] || fail "the job ran on a host short of disk"
grep -q '"check": "disk"' "$R/output/data/preflight.json" || fail "no disk check in preflight.json"

# A preflight command that is not there.
run --preflight-command "/nonexistent/check --all" -- /bin/true
assert_eq "$rc" 1 "exit code of a missing preflight command"
assert_eq "$(head -1 "$R/output/failure")" \
	"PreflightFailed: $HOST: cannot run /nonexistent/check: No such file or directory (exit status 127)" \
	"a missing preflight command"

# Killed by a signal: no line, the signal.
run --preflight-command "/bin/sh -c 'kill -9 \$\$'" -- /bin/true
assert_eq "$(head -1 "$R/output/failure")" \
	"PreflightFailed: $HOST: --preflight-command /bin/sh was killed by signal 9" "a killed preflight command"

# A hanging command is killed at the timeout, with what it started.
run --preflight-timeout 1 --preflight-command "/bin/sh -c 'echo started; echo \$\$ >$T/hang.pid; exec sleep 1000'" -- /bin/true
assert_eq "$(head -1 "$R/output/failure")" \
	"PreflightFailed: $HOST: --preflight-command did not end within 1 s (--preflight-timeout): started" \
	"a hanging preflight command"
assert_contains "$T/err" "--preflight-command on $HOST: started" "the command's output in the log"
kill -0 "$(cat "$T/hang.pid")" 2>/dev/null && fail "the hanging command was left behind"

# Every check passes, --no-install with a requirements.txt that would fail:
# the job runs as before.
mkdir -p "$R/code"
printf 'print("ran")\n' >"$R/code/train.py"
echo "smt-no-such-package-xyz" >"$R/code/requirements.txt"
run --no-install --program train.py
assert_eq "$rc" 0 "exit code with every check passing"
assert_contains "$T/out" "ran" "the job's output"
assert_not_contains "$T/err" "pip on" "pip ran with --no-install"
echo ok
