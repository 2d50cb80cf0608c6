#!/bin/sh
# The result files as an attacker sees them: a rank that
# runs as nobody and may write ROOT/output plants symbolic links at every
# name smtd uses there - the temporary names of old (.failure.<pid>.tmp,
# .failure.1.tmp as PID 1), "failure", "success", "output" itself - and
# points them at a root-only file.  The file must stay untouched, the link
# in the way must be logged with what to do, the result must still be on
# stderr and the exit code must be the job's.
. "$top_srcdir/tests/lib.sh"
smt_tmpdir
[ "$(id -u)" = 0 ] || skip "needs root to run the job as nobody"
command -v setpriv >/dev/null || skip_tool "setpriv (util-linux)"
chmod 755 "$T"
NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups"

# The root-only file every link points at.
printf 'precious\n' >"$T/secret"
chmod 600 "$T/secret"
secret_untouched() { # WHAT
	assert_eq "$(cat "$T/secret")" precious "$1: the link's target was written"
	assert_eq "$(stat -c '%u %a %s' "$T/secret")" "0 600 9" "$1: the link's target changed"
}

n=0
# new_job: $R, a job directory whose output/ belongs to nobody.
new_job() {
	n=$((n + 1))
	R="$T/job$n"
	mkdir -p "$R/output"
	chown 65534:65534 "$R/output"
}

# The job, run as nobody: plant links at the names given as "$@" (relative
# to output/; PPID in a name is smtd's pid), then exit with $CODE.
cat >"$T/plant.sh" <<'EOS'
#!/bin/sh
out=$1; code=$2; shift 2
for name in "$@"; do
	name=$(printf '%s' "$name" | sed "s/PPID/$PPID/")
	[ -L "$out/$name" ] || ln -s "$SECRET" "$out/$name" || exit 99
done
echo "ValueError: planted"
exit "$code"
EOS
chmod 755 "$T/plant.sh"
export SECRET="$T/secret"

# run_job CODE NAMES...: smtd runs the planting job; $rc is smtd's code.
run_job() {
	code=$1
	shift
	rc=0
	timeout 30 $PREFIX "$SMTD" --root "$R" --sshd never -- \
		$NOBODY "$T/plant.sh" "$R/output" "$code" "$@" >"$T/out" 2>"$T/err" || rc=$?
}

tmp_names='.failure.PPID.tmp .success.PPID.tmp .failure.1.tmp .success.1.tmp'
PREFIX=
for pid1 in no yes; do
	if [ $pid1 = yes ]; then
		unshare --pid --fork --mount-proc true 2>/dev/null || { echo "note: no PID namespace; PID 1 cases skipped" >&2; break; }
		PREFIX="unshare --pid --fork --mount-proc"
	fi

	# The temporary names of old, planted: a failure is still written, as
	# a regular file, and nothing through the links.
	new_job
	# shellcheck disable=SC2086
	run_job 3 $tmp_names
	assert_eq "$rc" 1 "exit code of a failed job with planted temporary names (PID 1: $pid1)"
	secret_untouched "failure, planted temporary names"
	[ -f "$R/output/failure" ] && [ ! -L "$R/output/failure" ] || fail "no regular failure file (PID 1: $pid1)"
	assert_contains "$R/output/failure" "RankFailed: rank 0 on" "the failure file"
	assert_contains "$R/output/failure" "exited with code 3" "the failure file"
	assert_eq "$(stat -c '%u %a' "$R/output/failure")" "0 644" "owner and mode of the failure file"
	# Only the planted links and the result are left (output/data holds the
	# pre-launch phase's preflight.json, written before the launch).
	assert_eq "$(find "$R/output" -mindepth 1 ! -type l ! -path "$R/output/data" ! -path "$R/output/data/*" | wc -l)" 1 \
		"files left in output/ (but data/)"

	new_job
	# shellcheck disable=SC2086
	run_job 0 $tmp_names
	assert_eq "$rc" 0 "exit code of a job that succeeded with planted temporary names (PID 1: $pid1)"
	secret_untouched "success, planted temporary names"
	[ -f "$R/output/success" ] && [ ! -L "$R/output/success" ] || fail "no regular success file (PID 1: $pid1)"
	[ ! -s "$R/output/success" ] || fail "the success file is not empty"
done
PREFIX=

# "failure" itself is a link: not written through, logged once, the
# result on stderr, the exit code the job's.
new_job
run_job 3 failure
assert_eq "$rc" 1 "exit code with a link at failure"
secret_untouched "a link at failure"
[ -L "$R/output/failure" ] || fail "the link at failure was replaced"
msg="$R/output/failure is a symbolic link: the result is not written through it; remove the link (the result is in this log)"
assert_eq "$(grep -cF "error: $msg" "$T/err")" 1 "the link at failure, logged once"
assert_contains "$T/err" "error: RankFailed: rank 0 on" "the result on stderr"

# "success" is a link.
new_job
run_job 0 success
assert_eq "$rc" 0 "exit code with a link at success"
secret_untouched "a link at success"
[ -L "$R/output/success" ] || fail "the link at success was replaced"
msg="$R/output/success is a symbolic link: the result is not written through it; remove the link (the result is in this log)"
assert_eq "$(grep -cF "error: $msg" "$T/err")" 1 "the link at success, logged once"
assert_contains "$T/err" "state running -> succeeded" "the result on stderr"

# "output" is a link to another directory: nothing is written there.
new_job
rmdir "$R/output"
mkdir "$T/elsewhere"
ln -s "$T/elsewhere" "$R/output"
rc=0
timeout 30 "$SMTD" --root "$R" --sshd never -- /bin/sh -c 'exit 3' >"$T/out" 2>"$T/err" || rc=$?
assert_eq "$rc" 1 "exit code with a link at output"
assert_eq "$(ls -A "$T/elsewhere")" "" "files written through the link at output"
assert_eq "$(grep -cF "error: $R/output is a symbolic link: no result file is written through it; make $R/output a directory" "$T/err")" 1 \
	"the link at output, logged once"
assert_contains "$T/err" "error: RankFailed: rank 0 on" "the result on stderr"

# A configuration error as PID 1, with .failure.1.tmp planted beforehand.
if unshare --pid --fork --mount-proc true 2>/dev/null; then
	new_job
	mkdir -p "$R/input/config"
	printf '[]' >"$R/input/config/resourceconfig.json"
	$NOBODY ln -s "$T/secret" "$R/output/.failure.1.tmp"
	rc=0
	timeout 30 unshare --pid --fork --mount-proc "$SMTD" --root "$R" --sshd never -- /bin/true \
		>"$T/out" 2>"$T/err" || rc=$?
	assert_eq "$rc" 2 "exit code of a configuration error as PID 1"
	secret_untouched "a configuration error as PID 1"
	assert_eq "$(cat "$R/output/failure")" \
		"ConfigurationError: $R/input/config/resourceconfig.json: the top level is an array, not a JSON object; write {...}" \
		"the failure file of a configuration error"
fi
echo ok
