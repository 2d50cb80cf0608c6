#!/bin/bash
# The README's quick start on a fresh Debian 12, as a new user would meet it.
#
#   scripts/fresh-check.sh [--keep] [--demo] [PATH]          (as root)
#
# Builds a fresh Debian 12 (bookworm) root with `debootstrap
# --variant=minbase --include=git`, clones this repository's HEAD
# (committed work only) into it at PATH (default /root/smtd), and runs the
# two commands of the README's "Quick start", parsed from README.md and run
# exactly as written (`cd PATH && COMMAND`), as root, the way a privileged
# container runs them: own mount, PID, UTS and IPC namespaces; pivot_root
# into the fresh root; a fresh /proc; a fresh /sys with the machine's
# cgroup hierarchies; the machine's /dev with a private /dev/shm; tmpfs on
# /run and /tmp; the machine's resolv.conf.  The network namespace is the
# machine's (apt must reach the archive; the tests make their own).  The
# root keeps what debootstrap made: no /etc/hosts, no /etc/ssh.
#
# --demo runs only the first command (build and the demo job): CI runs
# the second, the test command, on its own fresh machine right after, and
# both in a row would not fit its 45 minutes.
#
# Prints each step with its time and the end of each command's output;
# exits 0 when both commands pass, 1 when one fails, 2 when the check
# itself cannot run.  Everything it makes lives in one directory under
# SMT_FRESH_DIR (default /var/tmp), removed on exit, also on failure or
# Ctrl-C (--keep keeps it, unmounted, to look at); every mount lives only
# in the namespaces, which end with their processes.
#
# Environment: SMT_FRESH_MIRROR (default: the machine's Debian mirror from
# /etc/apt/sources.list{,.d/*}, else http://deb.debian.org/debian),
# SMT_FRESH_TIMEOUT (seconds for each command, default 1200).
set -u
umask 022

# The part that runs inside the new namespaces: --enter ROOT DIR COMMAND.
if [ "${1:-}" = --enter ]; then
	root=$2 dir=$3 cmd=$4
	set -e
	mount --bind "$root" "$root" # pivot_root wants a mount point
	mount -t proc -o nosuid,nodev,noexec proc "$root/proc"
	mount -t sysfs -o nosuid,nodev,noexec sysfs "$root/sys"
	mount --rbind /sys/fs/cgroup "$root/sys/fs/cgroup"
	mount --rbind /dev "$root/dev"
	mount -t tmpfs -o nosuid,nodev,mode=1777 shm "$root/dev/shm"
	mount -t tmpfs -o nosuid,nodev,mode=755 run "$root/run"
	mount -t tmpfs -o nosuid,nodev,mode=1777 tmp "$root/tmp"
	cd "$root"
	mkdir .old-root
	pivot_root . .old-root ||
		{ echo "fresh-check: pivot_root into $root failed (is / an initramfs?); see pivot_root(2)" >&2; exit 2; }
	cd /
	umount -l /.old-root
	rmdir /.old-root
	set +e
	exec /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		HOME=/root TERM="${TERM:-dumb}" /bin/bash -c "cd $(printf %q "$dir") && $cmd"
fi

say() {
	echo "fresh-check: $*"
}

die() {
	echo "fresh-check: $*" >&2
	exit 2
}

now() {
	echo "${EPOCHREALTIME/,/.}"
}

since() {
	awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'
}

keep=0
demo_only=0
dir=/root/smtd
while [ $# -gt 0 ]; do
	case $1 in
	--keep) keep=1 ;;
	--demo) demo_only=1 ;;
	-h | --help)
		sed -n '2,/^set -u/{/^#/s/^# \{0,1\}//p}' "$0"
		exit 0
		;;
	/*) dir=${1%/} ;;
	*) die "usage: scripts/fresh-check.sh [--keep] [--demo] [PATH]; PATH must be absolute, got '$1'" ;;
	esac
	shift
done
[ -n "$dir" ] || die "PATH must not be /"
[ "$(id -u)" = 0 ] || die "needs root (debootstrap, namespaces, pivot_root); run it as root"
self=$(readlink -f "$0")
top=$(cd "$(dirname "$self")/.." && pwd)
timeout_s=${SMT_FRESH_TIMEOUT:-1200}

# The README's quick-start commands: the indented lines of its section.
mapfile -t cmds < <(awk '/^## /{ on = ($0 ~ /^## Quick start/) } on && /^    [^ ]/ { sub(/^    /, ""); print }' "$top/README.md")
[ ${#cmds[@]} = 2 ] ||
	die "README.md's \"## Quick start\" has ${#cmds[@]} indented commands, not the 2 expected; fix README.md or this script"
[ $demo_only = 0 ] || cmds=("${cmds[0]}")

for t in unshare pivot_root git apt-get; do
	command -v "$t" >/dev/null || die "$t is missing; install util-linux, git and apt"
done
commit=$(git -C "$top" rev-parse HEAD) || die "$top is not a git checkout"
branch=$(git -C "$top" symbolic-ref -q --short HEAD) || branch=main

# The archive: the machine's Debian mirror for bookworm (or any Debian
# suite), its security mirror, else deb.debian.org.
apt_sources() {
	local f
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -f "$f" ] || continue
		awk '$1 == "deb" { i = 2; if ($2 ~ /^\[/) { while ($i !~ /\]$/) i++; i++ } print $(i + 1), $i }' "$f"
	done
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		awk 'function flush(  n, s, u, i) {
			if (types ~ /(^| )deb( |$)/ && enabled != "no") {
				split(uris, u, " "); n = split(suites, s, " ")
				for (i = 1; i <= n; i++) print s[i], u[1]
			}
			types = uris = suites = enabled = ""
		}
		/^[ \t]*$/ { flush(); next }
		tolower($1) == "types:" { sub(/^[^:]*:[ \t]*/, ""); types = $0 }
		tolower($1) == "uris:" { sub(/^[^:]*:[ \t]*/, ""); uris = $0 }
		tolower($1) == "suites:" { sub(/^[^:]*:[ \t]*/, ""); suites = $0 }
		tolower($1) == "enabled:" { sub(/^[^:]*:[ \t]*/, ""); enabled = tolower($0) }
		END { flush() }' "$f"
	done
}
sources=$(apt_sources)
mirror=${SMT_FRESH_MIRROR:-$(awk '$1 == "bookworm" { print $2; exit }' <<<"$sources")}
[ -n "$mirror" ] || mirror=$(awk '$1 !~ /-/ && $2 ~ /\/debian\/?$/ { print $2; exit }' <<<"$sources")
[ -n "$mirror" ] || mirror=http://deb.debian.org/debian
security=$(awk '$1 ~ /-security$/ && $2 ~ /\/debian-security\/?$/ { print $2; exit }' <<<"$sources")
[ -n "$security" ] || security=http://deb.debian.org/debian-security

work=
cpid=
pidns=
cgroups_before=
# smt-* cgroups that a test killed with the container could not remove.
test_cgroups() {
	find /sys/fs/cgroup -mindepth 1 -maxdepth 2 -type d -name 'smt-*' 2>/dev/null | sort
}

# ns_alive: a process of the container's PID namespace is still there.
ns_alive() {
	local p
	[ -n "$pidns" ] || return 1
	for p in /proc/[0-9]*/ns/pid; do
		[ "$(readlink "$p" 2>/dev/null)" = "$pidns" ] && return 0
	done
	return 1
}

cleanup() {
	local rc=$? i cg
	trap - EXIT INT TERM
	if [ -n "$cpid" ]; then
		kill -KILL -- "-$cpid" 2>/dev/null
		wait "$cpid" 2>/dev/null
	fi
	for ((i = 0; i < 100; i++)); do
		ns_alive || break
		sleep 0.1
	done
	ns_alive && echo "fresh-check: processes of the container are still alive (PID namespace $pidns); kill them" >&2
	for cg in $(comm -13 <(echo "$cgroups_before") <(test_cgroups)); do
		rmdir "$cg" 2>/dev/null && say "removed the cgroup $cg a test left"
	done
	if [ -n "$work" ] && [ -d "$work" ]; then
		if grep -qF " $work" /proc/self/mountinfo; then
			echo "fresh-check: mounts are left under $work (see findmnt); unmount them and remove $work" >&2
			rc=2
		elif [ $keep = 1 ]; then
			say "kept $work (root: $work/root, logs: $work/*.log)"
		else
			rm -rf --one-file-system "$work"
		fi
	fi
	exit $rc
}
trap cleanup EXIT
trap 'echo "fresh-check: interrupted" >&2; exit 130' INT
trap 'echo "fresh-check: terminated" >&2; exit 143' TERM

t_all=$(now)
steps=()
step_done() {
	steps+=("$(printf '%-34s %7s s  %s' "$1" "$(since "$2")" "$3")")
	say "$1: $3 in $(since "$2") s"
}

# 1. debootstrap, installed on this machine when missing.
t0=$(now)
if ! command -v debootstrap >/dev/null; then
	say "installing debootstrap on this machine"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null ||
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null; } ||
		die "cannot install debootstrap; run: apt-get update && apt-get install -y debootstrap"
fi
work=$(mktemp -d "${SMT_FRESH_DIR:-/var/tmp}/smtd-fresh.XXXXXX") || die "cannot make a directory under ${SMT_FRESH_DIR:-/var/tmp}"
chmod 755 "$work"
root=$work/root
cgroups_before=$(test_cgroups)
say "debootstrap --variant=minbase --include=git bookworm $root $mirror"
# Its own mount namespace: the /proc and /sys it mounts in the target die
# with it, even when it is interrupted.
unshare --mount --propagation private -- \
	debootstrap --variant=minbase --include=git bookworm "$root" "$mirror" >"$work/debootstrap.log" 2>&1 </dev/null ||
	{ tail -n 20 "$work/debootstrap.log" >&2; die "debootstrap failed (log above); check the mirror $mirror or set SMT_FRESH_MIRROR"; }
# What a Debian 12 image's apt sees; resolv.conf as a container gets it.
rm -f "$root/etc/apt/sources.list"
cat >"$root/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $mirror
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
cat /etc/resolv.conf >"$root/etc/resolv.conf" 2>/dev/null || say "note: this machine has no /etc/resolv.conf"
step_done "debootstrap (minbase + git)" "$t0" "$(du -sh "$root" | cut -f1)"

# 2. The clone: HEAD's commit, on its branch, as root would clone it.
t0=$(now)
mkdir -p "$(dirname "$root$dir")"
git clone -q --no-checkout "$top" "$root$dir" &&
	git -C "$root$dir" checkout -q -B "$branch" "$commit" ||
	die "git clone of $top into $root$dir failed"
step_done "git clone to $dir" "$t0" "$(git -C "$top" log -1 --format='%h %s' | cut -c1-60)"

# 3. The README's commands, each in a fresh container on the same root.
status=0
n=0
for cmd in "${cmds[@]}"; do
	n=$((n + 1))
	log=$work/command-$n.log
	t0=$(now)
	say "running as root in the fresh root: cd $dir && $cmd (log: $log)"
	timeout -s KILL "$timeout_s" unshare --mount --pid --uts --ipc --fork --kill-child --propagation private -- \
		/bin/bash "$self" --enter "$root" "$dir" "$cmd" >"$log" 2>&1 </dev/null &
	cpid=$!
	# The container's PID 1 (timeout -> unshare -> PID 1) and its PID namespace.
	for ((i = 0; i < 100; i++)); do
		u=$(pgrep -P "$cpid") && p1=$(pgrep -P "$u") &&
			pidns=$(readlink "/proc/$p1/ns/pid") && break
		sleep 0.05
	done
	rc=0
	wait "$cpid" || rc=$?
	cpid=
	for ((i = 0; i < 100; i++)); do
		ns_alive || break
		sleep 0.1
	done
	[ $rc = 137 ] && echo "fresh-check: '$cmd' did not end within $timeout_s s (SMT_FRESH_TIMEOUT); killed" >>"$log"
	if [ $rc = 0 ]; then
		lines=25 result=passed
	else
		lines=120 result="FAILED (exit $rc)"
		status=1
	fi
	echo "---- the end of '$cmd' ($(wc -l <"$log") lines):"
	tail -n $lines "$log"
	echo "----"
	step_done "$cmd" "$t0" "$result"
done

echo
say "summary (mirror $mirror, commit ${commit:0:7}, clone at $dir):"
printf '  %s\n' "${steps[@]}"
grep -h '^make check:' "$work"/command-*.log | sed 's/^/  /'
say "total $(since "$t_all") s: $([ $status = 0 ] && echo "the README's ${#cmds[@]} command(s) passed" || echo "a README command FAILED: see its output above")"
exit $status
