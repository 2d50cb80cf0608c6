#!/bin/sh
# Golden plans: `smtd --dry-run --json` on the configurations under
# tests/golden/CASE/ (and on examples/single) must print exactly
# tests/golden/CASE.json, job directory replaced by ROOT.  The environment
# is cleared and Open MPI's parameter file is a copy of Debian's
# (tests/golden/openmpi-mca-params.conf) so the output cannot depend on the
# machine; SMT_UPDATE_GOLDEN=1 rewrites the expected files.
. "$top_srcdir/tests/lib.sh"
smt_tmpdir
mkdir "$T/nogpu"
command -v python3 >/dev/null || skip "python3 is needed to pretty-print the plans"

run_case() {
	name=$1 root=$2
	shift 2
	root=$(cd "$root" && pwd -P)
	env -i PATH=/usr/bin:/bin SMTD_GPU_PROBE_ROOT="$T/nogpu" \
		OMPI_MCA_mca_base_param_files="$top_srcdir/tests/golden/openmpi-mca-params.conf" \
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
# The site's btl exclusions are kept next to SPEC §6's ^openib, from the
# environment first, then the installation's parameter file (Debian's here).
plan_btl() {
	python3 -c 'import json,sys; a=json.load(open(sys.argv[1]))["argv"]; print(a[a.index("btl") + 1])' "$1"
}
env -i PATH=/usr/bin:/bin OMPI_MCA_btl=self,vader,tcp SMTD_GPU_PROBE_ROOT="$T/nogpu" \
	"$SMTD" --root "$g/p4d-2x8" --dry-run --json >"$T/btl-env.json" || fail "btl env: smtd failed"
assert_eq "$(plan_btl "$T/btl-env.json")" "self,vader,tcp" "btl from OMPI_MCA_btl"
env -i PATH=/usr/bin:/bin OMPI_MCA_mca_base_param_files=/dev/null SMTD_GPU_PROBE_ROOT="$T/nogpu" \
	"$SMTD" --root "$g/p4d-2x8" --dry-run --json >"$T/btl-none.json" || fail "btl none: smtd failed"
assert_eq "$(plan_btl "$T/btl-none.json")" "^openib" "btl without a site value"
site=/etc/openmpi/openmpi-mca-params.conf
if [ "$(dirname "$(readlink -f "$(PATH=/usr/bin:/bin command -v mpirun)")")" = /usr/bin ] &&
	grep -Eq '^[[:space:]]*btl[[:space:]]*=[[:space:]]*\^uct,openib,ofi[[:space:]]*$' "$site"; then
	env -i PATH=/usr/bin:/bin SMTD_GPU_PROBE_ROOT="$T/nogpu" \
		"$SMTD" --root "$g/p4d-2x8" --dry-run --json >"$T/btl-site.json" || fail "btl site: smtd failed"
	assert_eq "$(plan_btl "$T/btl-site.json")" "^openib,uct,ofi" "btl from $site"
else
	echo "note: $site is not Debian's; the installation file case is covered by test_ompiparams"
fi
echo "PASS: golden plans"
