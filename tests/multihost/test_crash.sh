#!/bin/bash
# A crashed rank's first line says where and why (smtd(8), FAILURE FILE),
# on 3 simulated hosts with smtd as PID 1: crash-segv (a Python rank's
# function calls ctypes.string_at(0)), crash-shm (a rank fills a 1 MiB
# /dev/shm through mmap and touches past its end), crash-oom (a rank goes
# over its host's 128 MiB memory cgroup), crash-sigkill (a rank SIGKILLed
# from outside).  Each: every host's first line names the culprit's rank
# and host and why, the same on every host (a worker adds "reported by the
# leader"), exit 1 everywhere, no process left.
. "$top_srcdir/tests/multihost/prelude.sh"
/usr/bin/python3 -c 'import mpi4py' 2>/dev/null || skip "no mpi4py for /usr/bin/python3"

row() { # row NAME PER_HOST: a fresh set of 3 hosts for the case NAME
	echo "---- $1"
	mkdir -p "$T/$1"
	mh_setup 3 "$T/$1"
	# The run's directory is what every host sees.
	PY="$T/$1/crash.py"
	cp "$T/crash.py" "$PY"
	# Open MPI's shared memory lives in /tmp, so that a small /dev/shm
	# is the rank's problem only.
	for k in 1 2 3; do
		smtd_hyper $k "{\"sagemaker_mpi_enabled\": \"true\",
			\"sagemaker_mpi_num_of_processes_per_host\": \"$2\",
			\"sagemaker_mpi_custom_mpi_options\": \"--mca btl_vader_backing_directory /tmp\"}"
	done
}

# check_line K WANT: host K's first line is WANT (a worker that did not
# run the culprit adds who reported it).
check_line() {
	local first
	first=$(head -1 "$(smtd_failure "$1")")
	case $first in
	"$2" | "$2 (reported by the leader algo-1)") echo "algo-$1: $first" ;;
	*) smtd_show_all; fail "algo-$1's first line: '$first', expected '$2'" ;;
	esac
}

check_all() { # check_all WANT: every host exited 1 with WANT first
	smtd_wait_all 90
	for k in 1 2 3; do
		[ "$(eval echo \$EXIT_$k)" = 1 ] || { smtd_show_all; fail "algo-$k exited $(eval echo \$EXIT_$k)"; }
		check_line $k "$1"
	done
	smtd_nothing_left
}

cat >"$T/crash.py" <<'PY'
import ctypes, mmap, os, sys, time
from mpi4py import MPI

def load_batch():
    return ctypes.string_at(0)

def fill_shm():
    size = 4 << 20
    fd = os.open("/dev/shm/batch", os.O_RDWR | os.O_CREAT, 0o600)
    os.ftruncate(fd, size)
    m = mmap.mmap(fd, size)
    for i in range(0, size, 4096):
        m[i] = 1

def grow(cgroup):
    # Into the memory cgroup of its host's smtd (ranks come through sshd,
    # which smtd may have started before the test moved it there); at
    # most 2 GiB, should the limit not hold.
    with open(cgroup + "/cgroup.procs", "w") as f:
        f.write(str(os.getpid()))
    held = []
    for _ in range(128):
        held.append(bytearray(16 << 20))
    sys.exit(3)

c = MPI.COMM_WORLD
mode, culprit = sys.argv[1], int(sys.argv[2])
print(f"rank {c.Get_rank()} ready", flush=True)
if c.Get_rank() == culprit:
    if mode == "segv":
        load_batch()
    elif mode == "shm":
        fill_shm()
    elif mode == "oom":
        grow(sys.argv[3])
    else:
        time.sleep(120)
c.Barrier()
PY

# crash-segv: rank 3 (algo-2) dereferences NULL in load_batch.
row crash-segv 2
for k in 1 2 3; do smtd_start $k -- /usr/bin/python3 "$PY" segv 3; done
check_all "RankKilled: rank 3 on algo-2 was killed by SIGSEGV in load_batch (crash.py:5)"
f=$(smtd_failure 2)
sed -n 2,4p "$f" | tr '\n' '|' | grep -q "^Fatal Python error: Segmentation fault||Current thread 0x[0-9a-f]* (most recent call first):|" ||
	fail "algo-2's failure does not go on with the dump, crashing thread first: $(sed -n 2,6p "$f")"
grep -q 'File ".*crash.py", line 5 in load_batch' "$(smtd_failure 1)" || fail "the leader's file lacks the dump: $(cat "$(smtd_failure 1)")"
[ "$(wc -c <"$f")" -le 1024 ] || fail "algo-2's failure is longer than 1024 bytes"
mh_teardown

# crash-shm: algo-3's /dev/shm is a 1 MiB tmpfs; its rank 2 maps a 4 MiB
# file there and dies of SIGBUS where the tmpfs ends.
row crash-shm 1
# --min-shm 0: the preflight's /dev/shm check (on by default when torch is
# installed) would otherwise end this job before any rank runs; the row is
# about a rank that runs out of /dev/shm all the same.  With --min-shm 0
# no size is too small: the line says so because /dev/shm is full.
smtd_start 3 --min-shm 0 -- /usr/bin/python3 "$PY" shm 2
mh_exec 3 mount -n -t tmpfs -o size=1m,mode=1777 smt-shm /dev/shm || fail "cannot mount a small /dev/shm on algo-3"
for k in 1 2; do smtd_start $k --min-shm 0 -- /usr/bin/python3 "$PY" shm 2; done
check_all "RankKilled: rank 2 on algo-3 was killed by SIGBUS in fill_shm (crash.py:13); /dev/shm is 1 MiB, 100 % used (PyTorch DataLoader workers need more: --shm-size)"
mh_teardown

# crash-oom: algo-2 is a container whose memory cgroup (v1, as the
# machine has it; mounted where a container sees it) allows 128 MiB; its
# rank 1 grows until the OOM killer ends it.
cgv1=$(sed -n 's/^[0-9]*:memory://p' /proc/self/cgroup)
if [ -n "$cgv1" ] && [ -w "/sys/fs/cgroup/memory$cgv1" ]; then
	cg=/sys/fs/cgroup/memory${cgv1%/}/smt-crash-$$
	mkdir "$cg" || fail "cannot make $cg"
	# Removed after the hosts (mh_setup puts its tear-down first).
	trap 'rm -rf "$T"; rmdir "$cg" 2>/dev/null' EXIT
	MH_CGROUP=0 row crash-oom 1
	echo $((128 << 20)) >"$cg/memory.limit_in_bytes"
	echo $((128 << 20)) >"$cg/memory.memsw.limit_in_bytes" 2>/dev/null || :
	smtd_start 2 -- /usr/bin/python3 "$PY" oom 1 "$cg"
	echo "$(mh_pid1 2)" >"$cg/cgroup.procs" || fail "cannot move algo-2 into $cg"
	mh_exec 2 /bin/sh -c 'mount -n -t tmpfs -o mode=755 cgroup /sys/fs/cgroup &&
		mkdir /sys/fs/cgroup/memory && mount -n -t cgroup -o memory cgroup /sys/fs/cgroup/memory' ||
		fail "cannot mount the memory cgroup on algo-2"
	for k in 1 3; do smtd_start $k -- /usr/bin/python3 "$PY" oom 1 "$cg"; done
	smtd_wait_all 90
	for k in 1 2 3; do
		[ "$(eval echo \$EXIT_$k)" = 1 ] || { smtd_show_all; fail "algo-$k exited $(eval echo \$EXIT_$k)"; }
		head -1 "$(smtd_failure $k)" | grep -qE "^OutOfMemory: rank 1 on algo-2 was killed by SIGKILL \(the kernel's OOM killer\) with [1-9][0-9]* MiB in use of the limit 128 MiB \(the memory cgroup's\)( \(reported by the leader algo-1\))?$" ||
			{ smtd_show_all; fail "algo-$k's first line: $(head -1 "$(smtd_failure $k)")"; }
		echo "algo-$k: $(head -1 "$(smtd_failure $k)")"
	done
	smtd_nothing_left
	mh_teardown
	rmdir "$cg"
else
	echo "---- crash-oom skipped: no writable cgroup v1 memory controller here"
fi

# crash-sigkill: rank 4 (algo-3) is SIGKILLed by a process outside the job.
row crash-sigkill 2
for k in 1 2 3; do smtd_start $k -- /usr/bin/python3 "$PY" sleep 4; done
smtd_wait_line 1 "rank 5 ready"
pid=$(mh_exec 3 /bin/sh -c 'for p in /proc/[0-9]*; do
	tr "\0" " " <$p/cmdline 2>/dev/null | grep -q "^/usr/bin/python3 .*crash.py sleep 4 $" &&
	grep -qa "OMPI_COMM_WORLD_RANK=4" $p/environ 2>/dev/null && echo ${p#/proc/}; done' | head -1)
[ -n "$pid" ] || fail "rank 4 not found on algo-3"
mh_exec 3 kill -KILL "$pid"
check_all "RankKilled: rank 4 on algo-3 was killed by SIGKILL from another process (not smtd, no OOM kill recorded)"
mh_teardown
echo ok
