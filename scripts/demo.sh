#!/bin/bash
# The demo: build smtd and run the example job of examples/ for real.
#
# As root with namespaces: 3 simulated hosts (examples/three-hosts), each
# with its own network, host name, /opt/ml and sshd, smtd as every host's
# PID 1; a 3 x 2-rank python3 + mpi4py job; `smtctl status` on the leader
# while it runs; every host's result.  Otherwise: the one-host example
# (examples/single) on this machine.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
scripts/setup.sh
scripts/build.sh build
export top_srcdir=$top top_builddir=$top/build
export SMTD=$top/build/smtd SMTCTL=$top/build/smtctl
export SMTD_PRELOAD=$top/build/preload/.libs/libsmthostname.so
# Debian's python3 is the one with mpi4py.
export PATH="/usr/bin:$PATH"

one_host() {
	root=$(mktemp -d /tmp/smtd-demo.XXXXXX)
	cp -r examples/single/input "$root/input"
	cp -r examples/code "$root/code"
	h=$(hostname)
	sed "s/algo-1/$h/g" examples/single/input/config/resourceconfig.json > "$root/input/config/resourceconfig.json"
	echo "demo: one host ($h), job root $root"
	"$SMTD" --root "$root" --socket "$root/smtd.sock" --preload "$SMTD_PRELOAD" --smtctl "$SMTCTL" --dry-run
	rc=0
	"$SMTD" --root "$root" --socket "$root/smtd.sock" --preload "$SMTD_PRELOAD" --smtctl "$SMTCTL" || rc=$?
	echo "demo: smtd exited with $rc; $root/output holds: $(ls "$root/output")"
	exit $rc
}

if [ "$(id -u)" != 0 ] || ! unshare --uts --mount --net true 2>/dev/null; then
	echo "demo: not root or no namespaces here: running the one-host example"
	one_host
fi

. tests/lib.sh
. tests/multihost/hosts.sh
. tests/multihost/smtd.sh
T=$(mktemp -d /tmp/smtd-demo.XXXXXX)
mh_setup 3 "$T"
for k in 1 2 3; do
	cp examples/three-hosts/algo-$k/input/config/*.json "$(mh_host_dir $k)/ml/input/config/"
	cp examples/code/* "$(mh_host_dir $k)/ml/code/"
done
echo "demo: the leader's plan (smtd --dry-run with algo-1's /opt/ml):"
"$SMTD" --root "$(mh_host_dir 1)/ml" --dry-run --preload "$SMTD_PRELOAD" --smtctl "$SMTCTL"
echo
echo "demo: starting smtd as PID 1 of algo-1, algo-2, algo-3"
for k in 1 2 3; do smtd_start $k; done
smtd_wait_line 1 "rank 5/6"
echo
echo "demo: smtctl status on the leader while the job runs:"
mh_exec 1 "$SMTCTL" status || true
smtd_wait_all 120
echo
echo "demo: the leader's console:"
grep -v '^Accepted publickey\|^Received disconnect\|^Disconnected from\|^Server listening' "$(smtd_console 1)"
echo
rc=0
for k in 1 2 3; do
	code=EXIT_$k
	echo "demo: algo-$k: smtd exited with ${!code}; /opt/ml/output holds: $(ls "$(mh_host_dir $k)/ml/output" | tr '\n' ' ')"
	[ "${!code}" = 0 ] || rc=1
done
exit $rc
