#!/bin/sh
# Install the Debian packages that smtd's build, tests and demo need.
# Idempotent: installs only what is missing, runs `apt-get update` at most
# once, and does nothing at all when everything is there.
set -eu

PACKAGES="gcc make autoconf automake libtool pkg-config
libuv1-dev libjansson-dev libcurl4-openssl-dev libhttp-parser-dev libcmocka-dev
libsystemd-dev openmpi-bin libopenmpi-dev openssh-server openssh-client
python3-mpi4py clang libclang-rt-14-dev mandoc iproute2 util-linux procps
psmisc curl prometheus systemd"

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
apt-get update -qq
# prometheus would start a server on install where an init system runs;
# policy-rc.d keeps package scripts from starting services.
if [ ! -e /usr/sbin/policy-rc.d ]; then
	printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
	chmod 755 /usr/sbin/policy-rc.d
	trap 'rm -f /usr/sbin/policy-rc.d' EXIT
fi
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
