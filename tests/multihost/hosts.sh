# tests/multihost/hosts.sh - simulated hosts for multi-host tests (sourced).
#
# N hosts algo-1..algo-N on this machine, each with its own network, UTS,
# PID, IPC and mount namespaces, an eth0 on a bridge that lives in a
# namespace of its own (the machine's network namespace is never touched),
# private /run, /tmp, /dev/shm and /opt/ml, its own /etc/hosts,
# /etc/ssh/ssh_config and /root/.ssh (also where the machine has no such
# file: see host-init.sh), and optionally sshd.  Needs root.
# See docs/MULTIHOST-TESTING.md for the API and the facts behind it.
#
#   . "$top_srcdir/tests/multihost/hosts.sh"
#   mh_require                 # skips (exit 77) unless root with namespaces
#   mh_setup 3 "$T"            # network and files; traps mh_teardown on EXIT
#   mh_boot --sshd             # every host: PID 1 mh-init, then sshd
#   mh_exec 1 ssh algo-2 hostname
#
# Names are unique per run (smt-<id>-algo-K, smt-<id>-br) so tests may run
# in parallel.  Everything is kept under the run directory MH_DIR.

MH_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
MH_NET=${MH_NET:-10.213.0}

mh__log() {
	echo "mh: $*" >&2
}

mh__die() {
	echo "FAIL: mh: $*" >&2
	exit 1
}

mh__now() {
	echo "${EPOCHREALTIME/,/.}"
}

# mh__elapsed T0: seconds since T0, with milliseconds.
mh__elapsed() {
	awk -v a="$1" -v b="$(mh__now)" 'BEGIN { printf "%.3f", b - a }'
}

# mh_require: skip the test (exit 77, reason on stderr) unless it can build
# simulated hosts: root, bash 5, the tools, and namespaces that can be made.
mh_require() {
	local t
	if [ "${SMT_TEST_QUICK:-0}" = 1 ]; then
		echo "SKIP: multi-host test skipped in quick mode (SMT_TEST_QUICK=1)" >&2
		exit 77
	fi
	if [ "$(id -u)" != 0 ]; then
		echo "SKIP: multi-host tests need root (network, PID and mount namespaces)" >&2
		exit 77
	fi
	[ -n "${EPOCHREALTIME:-}" ] || { echo "SKIP: multi-host tests need bash 5" >&2; exit 77; }
	for t in ip unshare nsenter mount ssh ssh-keygen; do
		command -v "$t" >/dev/null 2>&1 || { echo "SKIP: multi-host tests need $t" >&2; exit 77; }
	done
	[ -x /usr/sbin/sshd ] || { echo "SKIP: multi-host tests need /usr/sbin/sshd (openssh-server)" >&2; exit 77; }
	if ! unshare --net --uts --pid --mount --ipc --fork --mount-proc true 2>/dev/null; then
		echo "SKIP: cannot create network, UTS, PID and mount namespaces here" >&2
		exit 77
	fi
}

# mh__remove_stale: namespaces of runs whose shell is gone (killed -9) are
# removed, so a crashed run does not leave them forever.
mh__remove_stale() {
	local ns pid
	for ns in $(ip netns list 2>/dev/null | awk '/^smt-[0-9]+-[0-9a-f]+-/ { print $1 }'); do
		pid=${ns#smt-}
		pid=${pid%%-*}
		kill -0 "$pid" 2>/dev/null || ip netns del "$ns" 2>/dev/null || true
	done
}

mh_host_dir() {
	echo "$MH_DIR/algo-$1"
}

mh_addr() {
	echo "$MH_NET.$1"
}

mh_hosts_json() {
	local k sep=
	printf '['
	for ((k = 1; k <= MH_N; k++)); do
		printf '%s"algo-%d"' "$sep" "$k"
		sep=,
	done
	printf ']'
}

# mh_write_resourceconfig K [HOSTS_JSON]: (re)write host K's
# /opt/ml/input/config/resourceconfig.json; HOSTS_JSON (default: every host)
# lets a test give one host a different host list.
mh_write_resourceconfig() {
	local k=$1 hosts=${2:-$(mh_hosts_json)} f
	f=$(mh_host_dir "$k")/ml/input/config/resourceconfig.json
	cat >"$f.tmp" <<EOF
{"current_host": "algo-$k", "current_instance_type": "ml.m5.xlarge", "current_group_name": "homogeneousCluster", "hosts": $hosts, "instance_groups": [{"instance_group_name": "homogeneousCluster", "instance_type": "ml.m5.xlarge", "hosts": $hosts}], "network_interface_name": "eth0"}
EOF
	mv "$f.tmp" "$f"
}

# mh__init_binary: the stand-in PID 1, from the build tree or compiled here.
mh__init_binary() {
	local b=${top_builddir:-}/tests/multihost/mh-init
	if [ -n "${top_builddir:-}" ] && [ -x "$b" ]; then
		echo "$b"
		return
	fi
	b=$MH_DIR/mh-init
	[ -x "$b" ] || "${CC:-cc}" -O2 -o "$b" "$MH_LIB_DIR/mh_init.c" || mh__die "cannot compile mh_init.c"
	echo "$b"
}

# mh__cgroup_setup: where the machine has a writable cgroup v2 hierarchy
# (and MH_CGROUP is not 0), a cgroup of the run's own, MH_CG_RUN, under the
# test's cgroup, with one cgroup per host in it (mh_start_host moves the
# host there).  Each host then sees the hierarchy at /sys/fs/cgroup, as a
# container does, so smtd's job cgroup is used.  `ip netns exec` hides
# the machine's cgroup mounts (it mounts a /sys of the network namespace),
# so without this the hosts would have none.
mh__cgroup_setup() {
	local mnt own
	MH_CG_RUN=
	[ "${MH_CGROUP:-1}" != 0 ] || return 0
	mnt=$(awk '$0 ~ / - cgroup2 / { print $5; exit }' /proc/self/mountinfo)
	own=$(sed -n 's/^0:://p' /proc/self/cgroup)
	[ -n "$mnt" ] && [ -n "$own" ] || return 0
	[ "$own" = / ] && own=
	mkdir "$mnt$own/smt-$MH_ID" 2>/dev/null || return 0
	MH_CG_RUN=$mnt$own/smt-$MH_ID
}

# mh__cgroup_teardown: remove the run's cgroups, innermost first (a job
# cgroup smtd could not remove, being killed, included).
mh__cgroup_teardown() {
	local i
	[ -n "${MH_CG_RUN:-}" ] && [ -d "$MH_CG_RUN" ] || return 0
	for ((i = 0; i < 100; i++)); do
		find "$MH_CG_RUN" -depth -type d -exec rmdir {} + 2>/dev/null
		[ -d "$MH_CG_RUN" ] || return 0
		# Processes still on their way out keep a cgroup busy a moment.
		sleep 0.02
	done
	mh__log "cgroup $MH_CG_RUN left behind: $(find "$MH_CG_RUN" -name cgroup.procs -exec cat {} + 2>/dev/null | tr '\n' ' ')"
}

# mh_setup N [BASEDIR]: the network and the files of hosts algo-1..algo-N
# under BASEDIR (a new directory when omitted, removed at tear-down).  No
# host runs yet: see mh_start_host and mh_boot.  Sets MH_DIR, MH_N, MH_ID
# and traps mh_teardown on EXIT before any earlier EXIT trap.
mh_setup() {
	local n=$1 k t0 h prev
	t0=$(mh__now)
	MH_N=$n
	MH_RUNNER=()
	MH_ID=$$-$(printf '%04x' $((RANDOM % 65536)))
	MH_BR=smt-$MH_ID-br
	if [ $# -ge 2 ]; then
		MH_DIR=$(cd "$2" && pwd) || mh__die "no directory $2"
		MH_OWN_DIR=0
	else
		MH_DIR=$(mktemp -d "${TMPDIR:-/tmp}/smt-mh.XXXXXX")
		MH_OWN_DIR=1
	fi
	# Tear down first, then whatever the test had trapped (its tmpdir).
	eval "set -- $(trap -p EXIT)"
	prev=${3:-}
	# shellcheck disable=SC2064
	trap "mh_teardown; $prev" EXIT

	mh__remove_stale
	ip netns add "$MH_BR" || mh__die "ip netns add $MH_BR failed"
	ip -n "$MH_BR" link add br0 type bridge || mh__die "cannot create a bridge"
	ip -n "$MH_BR" link set br0 up
	for ((k = 1; k <= n; k++)); do
		h=smt-$MH_ID-algo-$k
		ip netns add "$h" || mh__die "ip netns add $h failed"
		ip -n "$MH_BR" link add "v$k" type veth peer name eth0 netns "$h" || mh__die "cannot create veth v$k"
		ip -n "$MH_BR" link set "v$k" master br0 up
		ip -n "$h" addr add "$(mh_addr "$k")/24" dev eth0
		ip -n "$h" link set eth0 up
		ip -n "$h" link set lo up
	done

	mkdir -p "$MH_DIR/etc" "$MH_DIR/ssh/root"
	{
		echo "127.0.0.1 localhost"
		echo "::1 localhost ip6-localhost ip6-loopback"
		for ((k = 1; k <= n; k++)); do
			echo "$(mh_addr "$k") algo-$k"
		done
	} >"$MH_DIR/etc/hosts"
	ssh-keygen -q -t ed25519 -N '' -C "smt-test-$MH_ID" -f "$MH_DIR/ssh/root/id_ed25519" || mh__die "ssh-keygen failed"
	cp "$MH_DIR/ssh/root/id_ed25519.pub" "$MH_DIR/ssh/root/authorized_keys"
	ssh-keygen -q -t ed25519 -N '' -f "$MH_DIR/ssh/host_ed25519_key" || mh__die "ssh-keygen failed"
	cat >"$MH_DIR/ssh/ssh_config" <<EOF
Host *
    StrictHostKeyChecking no
    UserKnownHostsFile /dev/null
    BatchMode yes
    LogLevel ERROR
    IdentityFile /root/.ssh/id_ed25519
EOF
	mh__cgroup_setup
	# Paths a host must still see where its private mounts would hide them.
	{
		printf 'MH_KEEP=%q\n' "$MH_DIR${top_builddir:+:$top_builddir}${top_srcdir:+:$top_srcdir}${MH_KEEP:+:$MH_KEEP}"
		printf 'MH_CGROUP_IN=%q\n' "${MH_CG_RUN:+1}"
	} >"$MH_DIR/mh.env"
	for ((k = 1; k <= n; k++)); do
		h=$(mh_host_dir "$k")
		mkdir -p "$h/.stage" "$h/ml/input/config" "$h/ml/input/data" "$h/ml/model" "$h/ml/output/data" "$h/ml/code"
		mh_write_resourceconfig "$k"
		cat >"$h/sshd_config" <<EOF
Port 22
ListenAddress $(mh_addr "$k")
HostKey $MH_DIR/ssh/host_ed25519_key
PidFile /run/sshd.pid
StrictModes no
UsePAM no
PermitRootLogin yes
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
AuthorizedKeysFile .ssh/authorized_keys
UseDNS no
PrintMotd no
EOF
	done
	MH_INIT=$(mh__init_binary)
	mh__log "set up $n hosts (run $MH_ID, dir $MH_DIR) in $(mh__elapsed "$t0") s"
}

# mh_start_host K [CMD ARGS...]: start host K with CMD (default: mh-init) as
# PID 1 of its PID namespace, every signal at its default disposition.  Its
# output goes to algo-K/console.log and its exit status (128+N when killed
# by signal N) to algo-K/exit when it ends.  Returns once CMD is being
# executed; prints nothing.
mh_start_host() {
	local k=$1 h i
	shift
	[ $# -gt 0 ] || set -- "$MH_INIT"
	h=$(mh_host_dir "$k")
	rm -f "$h/ready" "$h/exit" "$h/pid1" "$h/pidns"
	(
		# The host's cgroup, for everything that runs in it.
		if [ -n "${MH_CG_RUN:-}" ]; then
			mkdir -p "$MH_CG_RUN/algo-$k" && echo "$BASHPID" >"$MH_CG_RUN/algo-$k/cgroup.procs" ||
				echo "mh: cannot move algo-$k into cgroup $MH_CG_RUN/algo-$k" >&2
		fi
		exec ip netns exec "smt-$MH_ID-algo-$k" unshare --uts --pid --mount --ipc -- \
			/bin/bash "$MH_LIB_DIR/host-init.sh" run "$MH_DIR" "$k" "$@"
	) </dev/null >>"$h/console.log" 2>&1 &
	MH_RUNNER[k]=$!
	for ((i = 0; i < 1000; i++)); do
		[ -e "$h/ready" ] && [ -e "$h/pid1" ] && break
		if [ -s "$h/exit" ]; then
			cat "$h/console.log" >&2
			mh__die "host algo-$k ended while starting (exit $(cat "$h/exit"))"
		fi
		sleep 0.005
	done
	[ -e "$h/ready" ] || mh__die "host algo-$k did not start within 5 s"
	readlink "/proc/$(cat "$h/pid1")/ns/pid" >"$h/pidns"
}

# mh_pid1 K: host K's PID 1 as seen from the machine (the test).
mh_pid1() {
	cat "$(mh_host_dir "$1")/pid1"
}

# mh_path K PATH: where PATH of host K's private mounts (e.g. /run/sshd.pid)
# can be read from outside while the host runs.
mh_path() {
	echo "/proc/$(mh_pid1 "$1")/root$2"
}

# mh_exec K CMD ARGS...: run CMD inside running host K (its network, UTS,
# PID, IPC and mount namespaces) and return its exit status.  The working
# directory is /; signals sent to mh_exec are not passed on (signal the
# process inside by its PID, see mh_pids).
mh_exec() {
	local k=$1
	shift
	nsenter --target "$(mh_pid1 "$k")" --net --uts --pid --mount --ipc -- "$@"
}

# mh_start_sshd K: start sshd in host K with its own config; returns once
# it listens.  sshd daemonizes and is adopted by the host's PID 1.
mh_start_sshd() {
	local k=$1 i
	mh_exec "$k" /usr/sbin/sshd -f "$(mh_host_dir "$k")/sshd_config" -E "$(mh_host_dir "$k")/sshd.log" ||
		mh__die "sshd did not start on algo-$k: $(cat "$(mh_host_dir "$k")/sshd.log")"
	for ((i = 0; i < 1000; i++)); do
		[ -s "$(mh_path "$k" /run/sshd.pid)" ] && return 0
		sleep 0.005
	done
	mh__die "sshd on algo-$k wrote no PidFile within 5 s"
}

# mh_boot [--sshd] [CMD ARGS...]: start every host with CMD (default
# mh-init) as PID 1, then sshd on each when --sshd is given.  Prints the time.
mh_boot() {
	local sshd=0 k t0
	t0=$(mh__now)
	if [ "${1:-}" = --sshd ]; then
		sshd=1
		shift
	fi
	for ((k = 1; k <= MH_N; k++)); do
		mh_start_host "$k" "$@"
	done
	if [ $sshd = 1 ]; then
		for ((k = 1; k <= MH_N; k++)); do
			mh_start_sshd "$k"
		done
	fi
	mh__log "booted $MH_N hosts$([ $sshd = 1 ] && echo ' with sshd') in $(mh__elapsed "$t0") s"
}

# mh_kill K SIG: send SIG to host K's PID 1 (a PID 1 gets from outside only
# the signals it handles or blocks, and always SIGKILL).
mh_kill() {
	kill -s "$2" "$(mh_pid1 "$1")"
}

# mh_running K: true while host K's PID 1 has not exited.
mh_running() {
	[ -e "$(mh_host_dir "$1")/pid1" ] && [ ! -s "$(mh_host_dir "$1")/exit" ]
}

# mh_wait K [TIMEOUT]: wait up to TIMEOUT seconds (default 30) for host K's
# PID 1 to exit; print its exit status (128+N if killed by signal N) and
# return 0, or print "timeout" and return 1.
mh_wait() {
	local k=$1 timeout=${2:-30} h t0
	h=$(mh_host_dir "$k")
	t0=$(mh__now)
	while [ ! -s "$h/exit" ]; do
		if awk -v a="$t0" -v b="$(mh__now)" -v t="$timeout" 'BEGIN { exit !(b - a >= t) }'; then
			echo timeout
			return 1
		fi
		sleep 0.01
	done
	cat "$h/exit"
}

# mh_pids K: the processes in host K's PID namespace, one a line:
# "HOSTPID NSPID COMM" (HOSTPID as the machine sees it, for kill).  Prints
# nothing once the namespace has no process left, and nothing once PID 1
# has been reaped (its exit status recorded): the kernel does not let PID 1
# finish before every other process of its namespace is gone, and the
# namespace's identifier may then already name another test's namespace
# (the kernel reuses namespace inode numbers at once).
mh_pids() {
	local h ns p n nspid comm
	h=$(mh_host_dir "$1")
	[ -s "$h/exit" ] && return 0
	ns=$(cat "$h/pidns" 2>/dev/null) || return 0
	for p in /proc/[0-9]*; do
		n=$(readlink "$p/ns/pid" 2>/dev/null) || continue
		[ "$n" = "$ns" ] || continue
		nspid=$(awk '/^NSpid:/ { print $NF }' "$p/status" 2>/dev/null) || continue
		comm=$(cat "$p/comm" 2>/dev/null) || continue
		echo "${p#/proc/} $nspid $comm"
	done
}

# mh_vanish K: host K disappears as a machine does when it loses power:
# its link goes silent first (peers get no FIN or RST), then its whole PID
# namespace is killed.
mh_vanish() {
	mh_link_down "$1"
	kill -KILL "$(mh_pid1 "$1")" 2>/dev/null || true
}

# mh_link_down K / mh_link_up K: cut host K off the network and restore it.
# The bridge side of its veth goes down: host K's eth0 keeps its address but
# loses carrier, and packets either way are dropped without an error.
mh_link_down() {
	ip -n "$MH_BR" link set "v$1" down
}

mh_link_up() {
	ip -n "$MH_BR" link set "v$1" up
}

# mh_teardown: kill every host, remove every namespace of the run and, when
# mh_setup made it, the run directory.  Idempotent; prints the time.
mh_teardown() {
	local k h t0 pid
	[ -n "${MH_ID:-}" ] || return 0
	t0=$(mh__now)
	for ((k = 1; k <= MH_N; k++)); do
		h=$(mh_host_dir "$k")
		if [ -e "$h/pid1" ] && [ ! -s "$h/exit" ]; then
			kill -KILL "$(cat "$h/pid1")" 2>/dev/null || true
		fi
	done
	for ((k = 1; k <= MH_N; k++)); do
		h=$(mh_host_dir "$k")
		[ -n "${MH_RUNNER[$k]:-}" ] || continue
		wait "${MH_RUNNER[$k]}" 2>/dev/null || true
	done
	for ((k = 1; k <= MH_N; k++)); do
		ip netns del "smt-$MH_ID-algo-$k" 2>/dev/null || true
	done
	ip netns del "$MH_BR" 2>/dev/null || true
	mh__cgroup_teardown
	[ "$MH_OWN_DIR" = 1 ] && rm -rf "$MH_DIR"
	mh__log "tore down $MH_N hosts in $(mh__elapsed "$t0") s"
	MH_LAST_ID=$MH_ID
	MH_ID=
}

# mh_leftovers [ID]: print what run ID (default: the last one torn down)
# left behind: namespaces, mounts, processes.  Prints nothing when clean.
mh_leftovers() {
	local id=${1:-${MH_LAST_ID:-$MH_ID}} p args
	ip netns list | grep -F "smt-$id-" | sed 's/^/netns: /'
	grep -F -e "smt-$id-" -e "$MH_DIR" /proc/self/mountinfo | sed 's/^/mount: /'
	[ -z "${MH_CG_RUN:-}" ] || [ ! -d "$MH_CG_RUN" ] || echo "cgroup: $MH_CG_RUN"
	for p in /proc/[0-9]*; do
		[ "${p#/proc/}" = "$$" ] || [ "${p#/proc/}" = "$BASHPID" ] && continue
		mapfile -d '' args <"$p/cmdline" 2>/dev/null || continue
		case "${args[*]}" in
		*"$MH_DIR"* | *"smt-$id-"*) echo "process: ${p#/proc/} ${args[*]}" ;;
		esac
	done
	return 0
}
