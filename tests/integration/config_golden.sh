#!/bin/sh
# Golden plans: `smtd --dry-run --json` on the configurations under
# tests/golden/CASE/ (and on examples/single) must print exactly
# tests/golden/CASE.json, job directory replaced by ROOT.  The environment
# is cleared so the output cannot depend on the machine; SMT_UPDATE_GOLDEN=1
# rewrites the expected files.
. "$top_srcdir/tests/lib.sh"
smt_tmpdir
mkdir "$T/nogpu"
command -v python3 >/dev/null || skip "python3 is needed to pretty-print the plans"

run_case() {
	name=$1 root=$2
	shift 2
	root=$(cd "$root" && pwd -P)
	env -i PATH=/usr/bin:/bin SMTD_GPU_PROBE_ROOT="$T/nogpu" \
		"$SMTD" --root "$root" --dry-run --json --preload /usr/lib/smtd/libsmthostname.so \
		--smtctl /usr/bin/smtctl --socket /run/smtd/smtd.sock "$@" >"$T/$name.raw" 2>"$T/$name.err" ||
		fail "$name: smtd failed: $(cat "$T/$name.err")"
	[ "$(wc -l <"$T/$name.raw")" -eq 1 ] || fail "$name: the plan is not one line"
	# Reading the job directory's real path back as ROOT keeps the files portable.
	sed "s|$root|ROOT|g" "$T/$name.raw" | python3 -m json.tool --indent 1 >"$T/$name.json" ||
		fail "$name: not JSON"
	expected="$top_srcdir/tests/golden/$name.json"
	if [ "${SMT_UPDATE_GOLDEN:-0}" = 1 ]; then
		cp "$T/$name.json" "$expected"
	fi
	diff -u "$expected" "$T/$name.json" >&2 || fail "$name: the plan differs from $expected"
}

g="$top_srcdir/tests/golden"
run_case one-host "$g/one-host"
run_case p4d-2x8 "$g/p4d-2x8"
run_case custom-options "$g/custom-options"
run_case hetero-standalone "$g/hetero-standalone"
run_case thousand-hosts "$g/thousand-hosts"
run_case example-single "$top_srcdir/examples/single"
# AWS credentials are forwarded by name only when they are set.
env -i PATH=/usr/bin:/bin AWS_ACCESS_KEY_ID=x AWS_REGION=y SMTD_GPU_PROBE_ROOT="$T/nogpu" \
	"$SMTD" --root "$g/p4d-2x8" --dry-run --json >"$T/aws.json" || fail "aws: smtd failed"
assert_contains "$T/aws.json" '"-x","AWS_ACCESS_KEY_ID","-x","AWS_REGION","-x","SM_' "AWS variables"
assert_not_contains "$T/aws.json" 'AWS_SESSION_TOKEN' "unset AWS variable"
echo "PASS: golden plans"
