#!/bin/bash
# entry-init.sh HOSTDIR SIDECAR SMTD [ARGS...] - a container entry point, as
# many training images have one: start sshd and a sidecar (a log shipper,
# a metrics agent), then exec the supervisor, which so becomes PID 1 with
# both already running.  Run as the host's PID 1 by smtd_start_entry
# (smtd.sh).
#
# sshd daemonizes with the host's config (algo-K/sshd_config, PidFile
# /run/sshd.pid); the sidecar (sigrank --forever) records every signal it
# gets in HOSTDIR/sidecar.signals and its PID goes to HOSTDIR/sidecar.pid.
set -eu
h=$1
sidecar=$2
shift 2

/usr/sbin/sshd -f "$h/sshd_config" -E "$h/sshd.log"
for ((i = 0; i < 1000; i++)); do
	[ -s /run/sshd.pid ] && break
	sleep 0.005
done
[ -s /run/sshd.pid ] || { echo "entry-init: sshd wrote no PidFile" >&2; exit 1; }
cp /run/sshd.pid "$h/sshd.pid"

: >"$h/sidecar.signals"
"$sidecar" --forever --record "$h/sidecar.signals" </dev/null &
echo $! >"$h/sidecar.pid"

exec "$@"
