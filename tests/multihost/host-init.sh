#!/bin/bash
# host-init.sh run DIR K CMD [ARGS...] - start simulated host algo-K.
#
# Started by mh_start_host (hosts.sh) through `ip netns exec NS unshare
# --uts --pid --mount --ipc`, so it runs in the host's network, UTS, IPC
# and mount namespaces but not yet in its new PID namespace: its first
# child is the host's PID 1.  That child (stage "init") gives the host its
# name and private files, then execs CMD, which so becomes the host's PID 1
# (smtd later, mh-init until then).  This stage waits for it and records
# its PID as the machine sees it (DIR/algo-K/pid1) and its exit status,
# 128+N when killed by signal N (DIR/algo-K/exit).  Every mount lives only
# in the host's mount namespace and vanishes with its last process.
set -eu
stage=$1
dir=$2
k=$3
shift 3
h=$dir/algo-$k

if [ "$stage" = run ]; then
	# A background command of a script starts with SIGINT and SIGQUIT
	# ignored, and a PID 1 should start as the platform starts it: with
	# every signal at its default.
	env --default-signal /bin/bash "$0" init "$dir" "$k" "$@" &
	echo $! >"$h/pid1.tmp"
	mv "$h/pid1.tmp" "$h/pid1"
	set +e
	wait $!
	# Builtins only from here: once its PID 1 is gone the namespace takes
	# no new process, and fork fails with ENOMEM.
	echo $? >"$h/exit"
	exit 0
fi

# MH_KEEP: colon-separated paths that must stay visible at the same path
# inside the host even when they lie under a directory made private here.
. "$dir/mh.env"

# The new PID namespace needs its own /proc (ps, /proc/self, pidof).
mount -n -t proc proc /proc
hostname "algo-$k"
# The cgroup v2 hierarchy, as a container sees it (mh__cgroup_setup in
# hosts.sh moved this host into a cgroup of its own).
if [ "${MH_CGROUP_IN:-}" = 1 ]; then
	mount -n -t cgroup2 cgroup2 /sys/fs/cgroup ||
		echo "host-init: cannot mount cgroup2 on /sys/fs/cgroup: algo-$k has no cgroups" >&2
fi

# private_tmpfs DIR MODE [ENTRY...]: an empty tmpfs over DIR, with every
# MH_KEEP path under DIR and every ENTRY (a path under DIR) bound back at
# its place; a symbolic link is copied, not bound.  The tmpfs is prepared
# on a staging mount point and moved over DIR so the paths to keep are
# still reachable while it is filled.
private_tmpfs() {
	local d=$1 mode=$2 st=$h/.stage p rel
	shift 2
	mount -n -t tmpfs -o "mode=$mode" "smt-$k${d//\//-}" "$st"
	local IFS=:
	for p in $MH_KEEP "$@"; do
		case $p in
		"$d"/*)
			rel=${p#"$d"/}
			case $rel in */*) mkdir -p "$st/${rel%/*}" ;; esac
			if [ -L "$p" ]; then
				cp -P "$p" "$st/$rel"
			elif [ -d "$p" ]; then
				mkdir -p "$st/$rel"
				mount -n --rbind "$p" "$st/$rel"
			elif [ -e "$p" ]; then
				: >"$st/$rel"
				mount -n --bind "$p" "$st/$rel"
			fi
			;;
		esac
	done
	mount -n --move "$st" "$d"
	PRIVATE="$PRIVATE:$d"
}
PRIVATE=

# own_dir DIR: DIR becomes a tmpfs of this host holding the machine's
# entries (once).
own_dir() {
	case ":$PRIVATE:" in *":$1:"*) return 0 ;; esac
	private_tmpfs "$1" "$(stat -L -c %a "$1")" "$1"/* "$1"/.[!.]* "$1"/..?*
}

# mount_point FILE: a regular file at FILE to bind over.  Where the machine
# has none (a minimal root has no /etc/hosts, one without openssh-client
# no /etc/ssh), FILE's directory (or its parent, where the directory is
# missing too) becomes this host's own (own_dir) and FILE is made there:
# the machine's own file system is never written.
mount_point() {
	local f=$1 d=${1%/*}
	[ -f "$f" ] && return 0
	if [ -d "$d" ]; then
		own_dir "$d"
	else
		own_dir "${d%/*}"
		rm -f "$d" # a copied link that leads nowhere
		mkdir -m 755 "$d"
	fi
	rm -f "$f"
	: >"$f"
}

mount_point /etc/hosts
mount -n --bind "$dir/etc/hosts" /etc/hosts
mount_point /etc/ssh/ssh_config
mount -n --bind "$dir/ssh/ssh_config" /etc/ssh/ssh_config

# root's home is the host's own, as in a fresh container: the machine's
# /root is never written, and its dotfiles (here a .bashrc running pyenv,
# whose lock under /root/.pyenv a killed host leaves behind, stalling
# every later ssh command for 60 s) do not run in the hosts' ssh sessions.
private_tmpfs /root 700
mkdir -m 700 /root/.ssh
mount -n --bind "$dir/ssh/root" /root/.ssh

# /opt/ml is the host's own, and a directory of the run so that a test can
# read what the host wrote there even after the host has gone.
if [ -d /opt/ml ]; then
	mount -n --bind "$h/ml" /opt/ml
else
	private_tmpfs /opt 755
	mkdir /opt/ml
	mount -n --bind "$h/ml" /opt/ml
fi
# Open MPI's session directories (/tmp) and shared-memory segments
# (/dev/shm) collide between hosts unless these are private.
private_tmpfs /run 755
mkdir -m 755 /run/sshd
private_tmpfs /tmp 1777
private_tmpfs /dev/shm 1777

: >"$h/ready"
exec "$@"
