#!/bin/sh
# The demo: build smtd and run the example job of examples/ for real: a
# 2-rank python3 + mpi4py job under mpirun, supervised by smtd, ending
# with the success file.  As root the host is named algo-1 (as in the
# example's resourceconfig.json) in its own UTS and mount namespace;
# otherwise the example is rewritten for this machine's host name.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
scripts/setup.sh
scripts/build.sh build

root=$(mktemp -d /tmp/smtd-demo.XXXXXX)
cp -r examples/single/input "$root/input"
cp -r examples/code "$root/code"
mkdir -p "$root/output" "$root/model"
# Debian's python3 is the one with mpi4py.
export PATH="/usr/bin:$PATH"
smtd="$top/build/smtd"
set -- --root "$root" --socket "$root/smtd.sock" \
	--preload "$top/build/preload/.libs/libsmthostname.so" --smtctl "$top/build/smtctl"

echo "demo: job root $root"
echo "demo: the plan (smtd --dry-run):"
if [ "$(id -u)" = 0 ] && unshare --uts --mount true 2>/dev/null; then
	printf '127.0.0.1 localhost\n127.0.1.1 algo-1\n' > "$root/hosts"
	run() {
		unshare --uts --mount --fork sh -c \
			'hostname algo-1 && mount --bind "$0" /etc/hosts && exec "$@"' "$root/hosts" "$@"
	}
else
	h=$(hostname)
	echo "demo: not root: running as host $h instead of algo-1"
	sed "s/algo-1/$h/g" examples/single/input/config/resourceconfig.json > "$root/input/config/resourceconfig.json"
	run() { "$@"; }
fi
run "$smtd" "$@" --dry-run
echo
echo "demo: running the job:"
rc=0
run "$smtd" "$@" || rc=$?
echo
echo "demo: smtd exited with $rc; $root/output holds: $(ls "$root/output")"
if [ -s "$root/output/failure" ]; then
	echo "demo: failure reason:"
	head -c 1024 "$root/output/failure"
fi
exit $rc
