#!/bin/bash
# run-simulated.sh - run the container example's layout on 3 simulated hosts.
#
#   examples/container/run-simulated.sh [BUILD_DIR]      (as root)
#
# Each host algo-K gets what the image and SageMaker would give it: its own
# /opt/ml (a copy of opt-ml/ with current_host algo-K), its own network,
# host name, PID and mount namespaces, and smtd as PID 1 started with no
# arguments, as ENTRYPOINT ["/usr/sbin/smtd"] is; smtd starts sshd itself.
# The binaries come from BUILD_DIR (default: build) through SMTD_SMTCTL and
# SMTD_PRELOAD instead of the image's /usr paths.
#
# The hosts come from the simulated-host harness tests/multihost/hosts.sh
# (API in docs/MULTIHOST-TESTING.md); it exits 77 with the reason when the
# harness is missing.  SMT_HOSTS_SH names another copy of it.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
build=$(cd "${1:-$top/build}" 2>/dev/null && pwd) ||
	{ echo "run-simulated: no build directory ${1:-$top/build}; run scripts/build.sh build" >&2; exit 2; }
hosts_sh=${SMT_HOSTS_SH:-$top/tests/multihost/hosts.sh}
if [ ! -f "$hosts_sh" ]; then
	echo "SKIP: run-simulated: the simulated-host harness $hosts_sh is not here yet (issue 6)" >&2
	exit 77
fi
for f in "$build/smtd" "$build/smtctl" "$build/preload/.libs/libsmthostname.so"; do
	[ -e "$f" ] || { echo "run-simulated: $f is missing; build first" >&2; exit 2; }
done

export top_srcdir=$top top_builddir=$build
. "$top/tests/lib.sh"
# shellcheck source=/dev/null
. "$hosts_sh"
mh_require
smt_tmpdir
# The image's default socket, /run/smtd/smtd.sock, in each host's own /run.
unset SMTD_SOCKET
mh_setup 3 "$T"

for k in 1 2 3; do
	ml=$(mh_host_dir "$k")/ml
	mkdir -p "$ml/input/config" "$ml/input/data" "$ml/code" "$ml/model" "$ml/output"
	cp "$here/opt-ml/input/config/hyperparameters.json" \
		"$here/opt-ml/input/config/inputdataconfig.json" "$ml/input/config/"
	sed "s/\"current_host\": \"algo-1\"/\"current_host\": \"algo-$k\"/" \
		"$here/opt-ml/input/config/resourceconfig.json" > "$ml/input/config/resourceconfig.json"
	cp -r "$here/opt-ml/input/data/training" "$ml/input/data/"
	cp "$here/opt-ml/code/train.py" "$ml/code/"
	rm -f "$ml/output/success" "$ml/output/failure"
done

# (The harness gives each host an empty /root with only the run's .ssh, as
# a container's root is: the machine's dotfiles never run in its hosts.)

# Workers first, as they may come up in any order; the leader waits for them.
# Debian's python3 is the one with mpi4py: /usr/bin first on PATH.
for k in 3 2 1; do
	mh_start_host "$k" env PATH="/usr/bin:$PATH" \
		SMTD_SMTCTL="$build/smtctl" \
		SMTD_PRELOAD="$build/preload/.libs/libsmthostname.so" \
		SMTD_SSHD=always SMTD_SSHD_CONFIG="$(mh_host_dir "$k")/sshd_config" \
		"$build/smtd"
done

rc=0
for k in 1 2 3; do
	code=$(mh_wait "$k" "${SMT_RUN_TIMEOUT:-120}")
	ml=$(mh_host_dir "$k")/ml
	printf 'algo-%d: smtd exited %s; output: %s\n' "$k" "$code" "$(ls "$ml/output" | tr '\n' ' ')"
	[ "$code" = 0 ] && [ -e "$ml/output/success" ] || rc=1
	if [ -s "$ml/output/failure" ]; then
		echo "algo-$k: failure: $(head -c 1024 "$ml/output/failure")"
	fi
	if [ "$code" != 0 ]; then
		echo "---- algo-$k: the end of its console (smtd's log):"
		tail -n 15 "$(mh_host_dir "$k")/console.log"
	fi
done
echo "---- the leader's output (algo-1):"
grep -F '<stdout>' "$(mh_host_dir 1)/console.log" | sort
echo "---- algo-1:/opt/ml/model/result.json:"
result=$(mh_host_dir 1)/ml/model/result.json
if [ -s "$result" ]; then
	cat "$result"
	# Each rank's SM_CURRENT_HOST and gethostname() must name its own host.
	/usr/bin/python3 - "$result" <<'PY' || rc=1
import json, sys
ranks = json.load(open(sys.argv[1]))
assert len(ranks) == 6, "expected 6 ranks, got %d" % len(ranks)
for r in ranks:
    assert r["SM_CURRENT_HOST"] == r["gethostname"], r
    assert r["GREETING"] == "hello from smtd", r
assert sorted({r["SM_CURRENT_HOST"] for r in ranks}) == ["algo-1", "algo-2", "algo-3"], ranks
print("every rank reports its own host")
PY
else
	echo "(none)"
	rc=1
fi
# SMT_RUN_KEEP=DIR keeps every host's files (console.log, /opt/ml) there.
if [ -n "${SMT_RUN_KEEP:-}" ]; then
	mkdir -p "$SMT_RUN_KEEP" && cp -r "$T"/algo-* "$SMT_RUN_KEEP"/ && echo "kept in $SMT_RUN_KEEP"
fi
exit $rc
