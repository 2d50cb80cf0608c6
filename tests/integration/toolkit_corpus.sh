#!/bin/sh
# The corpus of real configurations (tests/data/toolkit/): for each
# job, `smtd --dry-run --json` must give the rank command, the mpirun or
# torchrun options and every variable with the value that the toolkit 4.5.0
# run as the PyTorch container runs it gives (expected.json, written by
# tests/data/toolkit/generate.py from their source), but for the deliberate
# differences that differences.json marks.  Each case's GPUs and Neuron
# devices are a probe directory; its torch is a virtual environment (a
# python3 link and pyvenv.cfg, as `python3 -m venv` makes one) whose
# site-packages holds torch/version.py with the case's version, so that
# smtd finds the version as it finds an installed torch's.
. "$top_srcdir/tests/lib.sh"
smt_tmpdir
command -v python3 >/dev/null || skip "python3 is needed to compare the plans"
[ -x /usr/bin/python3 ] || skip "/usr/bin/python3 is needed for the job's virtual environments"
corpus="$top_srcdir/tests/data/toolkit"
pyver=$(basename "$(readlink -f /usr/bin/python3)")

# venv DIR [TORCH_VERSION]: a virtual environment without the system's packages.
venv() {
	mkdir -p "$1/bin" "$1/lib/$pyver/site-packages"
	ln -s /usr/bin/python3 "$1/bin/python3"
	printf 'home = /usr/bin\ninclude-system-site-packages = false\n' >"$1/pyvenv.cfg"
	if [ -n "${2:-}" ]; then
		mkdir "$1/lib/$pyver/site-packages/torch"
		printf "__version__ = '%s'\ndebug = False\n" "$2" >"$1/lib/$pyver/site-packages/torch/version.py"
	fi
}

n=0 failed=""
for case in "$corpus"/*/; do
	name=$(basename "$case")
	[ -f "$case/expected.json" ] || continue
	n=$((n + 1))
	d="$T/$name"
	mkdir -p "$d/probe/proc/driver/nvidia/gpus" "$d/probe/dev" "$d/bin"
	eval "$(python3 - "$case/case.json" <<'PY'
import json, shlex, sys
c = json.load(open(sys.argv[1]))
print("gpus=%d neurons=%d torch=%s installed=%s caseenv=%s" % (
    c.get("gpus", 0), c.get("neurons", 0), shlex.quote(c.get("torch") or ""),
    shlex.quote(" ".join(c.get("installed", []))),
    shlex.quote(" ".join("%s=%s" % kv for kv in c.get("env", {}).items()))))
PY
)"
	i=0
	while [ "$i" -lt "$gpus" ]; do mkdir "$d/probe/proc/driver/nvidia/gpus/$i"; i=$((i + 1)); done
	[ "$gpus" -gt 0 ] || rmdir "$d/probe/proc/driver/nvidia/gpus"
	i=0
	while [ "$i" -lt $((neurons / 2)) ]; do : >"$d/probe/dev/neuron$i"; i=$((i + 1)); done
	for prog in $installed; do
		printf '#!/bin/sh\nexit 99\n' >"$d/bin/$prog"
		chmod +x "$d/bin/$prog"
	done
	venv "$d/venv" "$torch"
	root=$(cd "$case" && pwd -P)
	# shellcheck disable=SC2086
	env -i PATH="$d/bin:$d/venv/bin:/usr/bin:/bin" SMTD_GPU_PROBE_ROOT="$d/probe" $caseenv \
		OMPI_MCA_mca_base_param_files="$top_srcdir/tests/golden/openmpi-mca-params.conf" \
		"$SMTD" --root "$root" --dry-run --json --preload /usr/lib/smtd/libsmthostname.so \
		--smtctl /usr/bin/smtctl --socket /run/smtd/smtd.sock >"$d/plan.raw" 2>"$d/err" ||
		fail "$name: smtd failed: $(cat "$d/err")"
	sed "s|$root|ROOT|g" "$d/plan.raw" >"$d/plan.json"
	if ! python3 "$top_srcdir/tests/helpers/corpus_compare.py" "$case/expected.json" \
		"$d/plan.json" "$corpus/differences.json" >"$d/diff"; then
		echo "$name differs from the toolkit:" >&2
		cat "$d/diff" >&2
		failed="$failed $name"
	fi
done
[ "$n" -ge 16 ] || fail "the corpus has $n cases, not 16 or more"
[ -z "$failed" ] || fail "smtd differs from the toolkit 4.5.0 in:$failed"
echo "ok: $n configurations as the toolkit 4.5.0 runs them"
