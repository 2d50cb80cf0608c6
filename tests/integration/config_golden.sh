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

# Stand-ins for the wrappers and launchers smtd looks for on PATH: each
# records its argv and runs the rest (only their presence matters here).
mkdir "$T/bin"
for prog in smddprun smddpmprun torchrun neuron_parallel_compile; do
	printf '#!/bin/sh\necho "$0 $*" >>"%s/ran"\nexec "$@"\n' "$T" >"$T/bin/$prog"
	chmod +x "$T/bin/$prog"
done

# The job's python3: a virtual environment without the system's packages, so
# that the machine's torch (and the variables it brings) stay out of the plans.
mkdir -p "$T/venv/bin"
ln -s /usr/bin/python3 "$T/venv/bin/python3"
printf 'home = /usr/bin\ninclude-system-site-packages = false\n' >"$T/venv/pyvenv.cfg"

# run_case NAME ROOT [SMTD OPTION...]; CASE_PATH and CASE_ENV (VAR=VALUE
# words) change the environment of one case.
run_case() {
	name=$1 root=$2
	shift 2
	root=$(cd "$root" && pwd -P)
	# shellcheck disable=SC2086
	env -i PATH="$T/venv/bin:${CASE_PATH:-/usr/bin:/bin}" SMTD_GPU_PROBE_ROOT="$T/nogpu" ${CASE_ENV:-} \
		OMPI_MCA_mca_base_param_files="$top_srcdir/tests/golden/openmpi-mca-params.conf" \
		"$SMTD" --root "$root" --dry-run --json --preload /usr/lib/smtd/libsmthostname.so \
		--smtctl /usr/bin/smtctl --socket /run/smtd/smtd.sock "$@" >"$T/$name.raw" 2>"$T/$name.err" ||
		fail "$name: smtd failed: $(cat "$T/$name.err")"
	[ "$(wc -l <"$T/$name.raw")" -eq 1 ] || fail "$name: the plan is not one line"
	# Reading the job directory's real path back as ROOT keeps the files portable.
	# ... and the machine's CPU count as NCPUS.
	sed -e "s|$root|ROOT|g" -e 's/"SM_NUM_CPUS":"[0-9]*"/"SM_NUM_CPUS":"NCPUS"/' \
		-e 's/\\"num_cpus\\":[0-9]*/\\"num_cpus\\":NCPUS/g' "$T/$name.raw" |
		python3 -m json.tool --indent 1 >"$T/$name.json" ||
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

# SMDataParallel (smdataparallel.py's options): one host without EFA, four
# EFA hosts whose custom options repeat defaults, smddprun present and
# absent, a heterogeneous cluster's leader, worker and standalone host.
CASE_PATH="$T/bin:/usr/bin:/bin" run_case smddp-1host "$g/smddp-1host"
CASE_PATH="$T/bin:/usr/bin:/bin" run_case smddp-4hosts "$g/smddp-4hosts"
# Without smddprun the ranks would not be data parallel: refused.
env -i PATH="$T/venv/bin:/usr/bin:/bin" SMTD_GPU_PROBE_ROOT="$T/nogpu" \
	"$SMTD" --root "$g/smddp-4hosts" --dry-run --json >"$T/nosmddprun.out" 2>"$T/nosmddprun.err" &&
	fail "SMDataParallel without smddprun was planned"
assert_eq "$(cat "$T/nosmddprun.err")" "smtd: smddprun is not on PATH ($T/venv/bin:/usr/bin:/bin): SMDataParallel (sagemaker_distributed_dataparallel_enabled is true in hyperparameters.json) needs it on every host; install the smdistributed dataparallel library in the image, or choose another launch with --launch" \
	"SMDataParallel without smddprun"
CASE_PATH="$T/bin:/usr/bin:/bin" run_case pytorchddp-hetero-leader "$g/pytorchddp-hetero" --current-host algo-1
CASE_PATH="$T/bin:/usr/bin:/bin" run_case pytorchddp-hetero-worker "$g/pytorchddp-hetero" --current-host algo-2
CASE_PATH="$T/bin:/usr/bin:/bin" run_case pytorchddp-hetero-standalone "$g/pytorchddp-hetero"
# Model parallel (toolkit 4.5.0): torch 2 with smddpmprun; custom options
# that set the NCCL variables, without smddpmprun.
CASE_PATH="$T/bin:/usr/bin:/bin" CASE_ENV=SM_DLC_TORCH_VERSION=2.0.1 run_case mp-2hosts "$g/mp-2hosts"
CASE_ENV=SM_DLC_TORCH_VERSION=2.1.0 run_case mp-custom-no-smddpmprun "$g/mp-custom"
# torchrun on every host: the leader, a worker (node_rank 2) with a socket of
# its own, neuron_parallel_compile, one host.
CASE_PATH="$T/bin:/usr/bin:/bin" run_case torchrun-leader "$g/torchrun-4hosts"
CASE_PATH="$T/bin:/usr/bin:/bin" run_case torchrun-worker "$g/torchrun-4hosts" --current-host algo-3 \
	--socket /run/job/smtd.sock
CASE_PATH="$T/bin:/usr/bin:/bin" CASE_ENV=RUN_NEURON_PARALLEL_COMPILE=1 \
	run_case torchrun-neuron "$g/torchrun-4hosts" --current-host algo-4
CASE_PATH="$T/bin:/usr/bin:/bin" run_case torchrun-1host "$g/torchrun-1host"
# MPI: a worker (nothing to execute), and a leader whose smtctl and socket
# paths need quoting for the workers' shell.
run_case mpi-4hosts-worker "$g/mpi-4hosts-paths"
run_case mpi-4hosts-quoted "$g/mpi-4hosts-paths" --current-host algo-1 \
	--smtctl "/opt/smt tools/smtctl" --socket "/run/it's;here/smtd.sock"
[ ! -e "$T/ran" ] || fail "a stand-in ran during --dry-run: $(cat "$T/ran")"
# AWS credentials are forwarded by name only when they are set.
env -i PATH=/usr/bin:/bin AWS_ACCESS_KEY_ID=x AWS_REGION=y SMTD_GPU_PROBE_ROOT="$T/nogpu" \
	"$SMTD" --root "$g/p4d-2x8" --dry-run --json >"$T/aws.json" || fail "aws: smtd failed"
assert_contains "$T/aws.json" '"-x","AWS_ACCESS_KEY_ID","-x","AWS_REGION","-x","SM_' "AWS variables"
assert_not_contains "$T/aws.json" 'AWS_SESSION_TOKEN' "unset AWS variable"
# The site's btl exclusions are kept next to the ^openib of smtd(8) The mpirun command line, from the
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
