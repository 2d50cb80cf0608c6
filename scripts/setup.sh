#!/bin/sh
# Install the Debian packages that smtd's build, tests and demo need.
# Idempotent: installs only what is missing, runs `apt-get update` at most
# once, and does nothing at all when everything is there.
#
# The list names every package whose commands a test, scripts/*.sh or the
# demo runs (beyond Debian's essential set: coreutils, bash, dash, sed,
# grep, gawk/mawk, findutils, tar, gzip, libc-bin's ldd), so that a fresh
# minimal Debian 12 root passes (scripts/fresh-check.sh proves it).
set -eu

PACKAGES=$(sed 's/#.*//' <<'EOF'
# build: scripts/build.sh (autoreconf, configure, make), tests/fuzz/run.sh
gcc make autoconf automake libtool pkg-config clang libclang-rt-14-dev
libuv1-dev libjansson-dev libcurl4-openssl-dev libhttp-parser-dev libcmocka-dev
libsystemd-dev
# the job: mpirun/mpicc, Debian's python3 with mpi4py, sshd and ssh
openmpi-bin libopenmpi-dev python3 python3-mpi4py openssh-server openssh-client
# simulated hosts and supervision tests: ip; unshare, nsenter, setpriv
# (util-linux); mount; hostname; ps, pgrep (procps); killall (psmisc)
iproute2 util-linux mount hostname procps psmisc
# API tests: curl; promtool (prometheus)
curl prometheus
# ship tests: man pages (mandoc; man-db for man and groff, which
# `systemd-analyze verify` runs for every Documentation= line); systemd
# (systemd-analyze, systemd-tmpfiles); binutils (readelf, nm, objdump)
mandoc man-db systemd binutils
# preload tests: strace (the library's open flags)
strace
# the code directory's install (tests/multihost/test_install.sh): pip into a venv
python3-venv python3-pip python3-setuptools
# debugging and the machine-learning jobs of upcoming work
gdb elfutils python3.11-dbg python3-torch
EOF
)

missing=
for p in $PACKAGES; do
	if ! dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
		missing="$missing $p"
	fi
done

if [ -z "$missing" ]; then
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "setup.sh: missing packages:$missing; run as root: apt-get update && apt-get install -y$missing" >&2
	exit 1
fi
echo "setup.sh: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq ||
	{ echo "setup.sh: apt-get update failed (see above); check the network and /etc/apt/sources.list*" >&2; exit 1; }
# prometheus would start a server on install where an init system runs;
# policy-rc.d keeps package scripts from starting services.
if [ ! -e /usr/sbin/policy-rc.d ]; then
	printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
	chmod 755 /usr/sbin/policy-rc.d
	trap 'rm -f /usr/sbin/policy-rc.d' EXIT
fi
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null ||
	{ echo "setup.sh: apt-get install of$missing failed (see above); fix that and run scripts/setup.sh again" >&2; exit 1; }
