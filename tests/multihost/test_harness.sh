#!/bin/bash
# The multi-host harness itself, proven with plain Open MPI across 3
# simulated hosts: names, files, ssh, a C MPI_Allreduce, mpi4py, the
# orte_launch_agent hook, signals, a vanished host, a cut link, a custom
# PID 1, and a tear-down that leaves nothing behind.
. "$top_srcdir/tests/multihost/prelude.sh"
MPICC=${MPICC:-mpicc}
command -v mpirun >/dev/null 2>&1 || skip_tool "mpirun (openmpi-bin)"
command -v "$MPICC" >/dev/null 2>&1 || skip_tool "$MPICC (libopenmpi-dev)"

machine_links=$(ip -o link show | awk -F': ' '{ print $2 }')
machine_rootssh=$(ls -la /root/.ssh 2>&1)
machine_etchosts=$(md5sum /etc/hosts 2>&1)
machine_etcssh=$(ls -la /etc/ssh 2>&1)

t0=$EPOCHREALTIME
mh_setup 3 "$T"
mh_boot --sshd
echo "set-up with sshd: $(mh__elapsed "$t0") s"

for k in 1 2 3; do
	assert_eq "$(mh_exec $k hostname)" "algo-$k" "host name of algo-$k"
	assert_eq "$(mh_exec $k ip -o -4 addr show dev eth0 | awk '{ print $4 }')" "10.213.0.$k/24" "eth0 of algo-$k"
	mh_exec $k cat /etc/hosts >"$T/hosts.$k"
	assert_contains "$T/hosts.$k" "10.213.0.3 algo-3" "/etc/hosts of algo-$k"
	mh_exec $k cat /etc/ssh/ssh_config >"$T/ssh_config.$k"
	assert_contains "$T/ssh_config.$k" "StrictHostKeyChecking no" "ssh_config of algo-$k"
	mh_exec $k cat /opt/ml/input/config/resourceconfig.json >"$T/rc.$k"
	assert_contains "$T/rc.$k" "\"current_host\": \"algo-$k\"" "resourceconfig of algo-$k"
	assert_contains "$T/rc.$k" '"hosts": ["algo-1","algo-2","algo-3"]' "resourceconfig of algo-$k"
	assert_contains "$T/rc.$k" '"network_interface_name": "eth0"' "resourceconfig of algo-$k"
	# The run directory stays visible at its own path inside the host.
	assert_eq "$(mh_exec $k cat "$T/algo-$k/ml/input/config/resourceconfig.json")" "$(cat "$T/rc.$k")" "run dir inside algo-$k"
done
assert_eq "$(mh_exec 2 /usr/bin/python3 -c 'import json; print(json.load(open("/opt/ml/input/config/resourceconfig.json"))["current_host"])')" \
	algo-2 "resourceconfig.json parses"

# Private /tmp, /dev/shm, /run and /opt/ml: what one host writes, no other
# host and not the machine sees.
mark=mh-mark-$$
mh_exec 1 sh -c "echo one >/tmp/$mark && echo one >/dev/shm/$mark && echo one >/run/$mark && echo one >/opt/ml/model/$mark" ||
	fail "cannot write private files on algo-1"
for f in /tmp /dev/shm /run /opt/ml/model; do
	[ ! -e "$f/$mark" ] || fail "$f/$mark of algo-1 is visible on the machine"
	mh_exec 2 test ! -e "$f/$mark" || fail "$f/$mark of algo-1 is visible on algo-2"
	assert_eq "$(cat "$(mh_path 1 "$f/$mark")")" one "mh_path 1 $f/$mark"
done
assert_eq "$(cat "$T/algo-1/ml/model/$mark")" one "algo-1's /opt/ml in the run directory"

# ssh between hosts with the production client options.
assert_eq "$(mh_exec 1 ssh algo-2 hostname)" algo-2 "ssh algo-1 -> algo-2"
assert_eq "$(mh_exec 3 ssh algo-1 cat /opt/ml/input/config/resourceconfig.json)" "$(cat "$T/rc.1")" "ssh algo-3 -> algo-1"

# A real C MPI_Allreduce over 3 hosts x 2 ranks, launched from algo-1.
cat >"$T/allreduce.c" <<'EOF'
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int rank, size, one, sum = 0;
	char host[256];
	const char *probe = getenv("MH_PROBE");

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	gethostname(host, sizeof(host));
	one = rank + 1;
	MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	printf("rank=%d size=%d host=%s sum=%d probe=%s ppid=%d\n", rank, size,
	       host, sum, probe ? probe : "-", (int)getppid());
	fflush(stdout);
	MPI_Finalize();
	return 0;
}
EOF
"$MPICC" -O2 -o "$T/allreduce" "$T/allreduce.c" || fail "cannot build allreduce.c with $MPICC"
MPIRUN=(mpirun --allow-run-as-root -np 6 --host algo-1:2,algo-2:2,algo-3:2
	-mca btl_tcp_if_include eth0 -mca oob_tcp_if_include eth0
	-mca plm_rsh_no_tree_spawn 1 -mca odls_base_sigkill_timeout 0)

# expect_ranks OUT PROBE1 PROBE2 PROBE3: 6 ranks, sum 21, ranks 2k-2 and
# 2k-1 on algo-k, each seeing the MH_PROBE value given for its host.
expect_ranks() {
	local out=$1 r k
	shift
	assert_eq "$(grep -c '^rank=' "$out")" 6 "ranks reporting in $out"
	for r in 0 1 2 3 4 5; do
		k=$((r / 2 + 1))
		assert_contains "$out" "rank=$r size=6 host=algo-$k sum=21 probe=${!k} ppid=" "rank $r"
	done
}

t0=$EPOCHREALTIME
mh_exec 1 env MH_PROBE=leader "${MPIRUN[@]}" "$T/allreduce" >"$T/c.out" 2>"$T/c.err" ||
	{ cat "$T/c.err" >&2; fail "mpirun of the C program failed"; }
echo "plain mpirun, C MPI_Allreduce, 3 hosts x 2 ranks: $(mh__elapsed "$t0") s"
cat "$T/c.out"
expect_ranks "$T/c.out" leader - -

# mpi4py, with Debian's python3.
cat >"$T/gather.py" <<'EOF'
import socket
from mpi4py import MPI
comm = MPI.COMM_WORLD
got = comm.gather((comm.rank, comm.size, socket.gethostname()), root=0)
if comm.rank == 0:
    for r, s, h in got:
        print("py rank=%d size=%d host=%s" % (r, s, h))
EOF
t0=$EPOCHREALTIME
mh_exec 1 "${MPIRUN[@]}" /usr/bin/python3 -m mpi4py "$T/gather.py" >"$T/py.out" 2>"$T/py.err" ||
	{ cat "$T/py.err" >&2; fail "mpirun of mpi4py failed"; }
echo "plain mpirun, mpi4py gather, 3 hosts x 2 ranks: $(mh__elapsed "$t0") s"
for r in 0 1 2 3 4 5; do
	assert_contains "$T/py.out" "py rank=$r size=6 host=algo-$((r / 2 + 1))" "mpi4py rank $r"
done

# orte_launch_agent: a hook on each worker that records itself and exports
# a variable before it execs orted.  Its export reaches the worker's ranks;
# the leader's ranks are mpirun's children and keep the leader's value; a
# variable forwarded with -x overrides the hook's everywhere.
cat >"$T/hook" <<EOF
#!/bin/sh
h=\$(hostname)
{ echo "pid=\$\$"; echo "argv=\$*"; echo "cwd=\$(pwd)"; env | sort; } >"$T/hook-\$h.log"
MH_PROBE=hook-\$h
export MH_PROBE
exec "\$@"
EOF
chmod +x "$T/hook"
mh_exec 1 env MH_PROBE=leader "${MPIRUN[@]}" -mca orte_launch_agent "$T/hook orted" "$T/allreduce" >"$T/hook.out" 2>"$T/hook.err" ||
	{ cat "$T/hook.err" >&2; fail "mpirun with orte_launch_agent failed"; }
expect_ranks "$T/hook.out" leader hook-algo-2 hook-algo-3
[ ! -e "$T/hook-algo-1.log" ] || fail "the launch agent ran on the leader"
for k in 2 3; do
	assert_contains "$T/hook-algo-$k.log" "argv=orted --daemonize -mca ess env" "launch agent arguments on algo-$k"
	assert_contains "$T/hook-algo-$k.log" "SSH_CONNECTION=10.213.0.1 " "launch agent started over ssh on algo-$k"
done
echo "---- launch agent on algo-2:"
head -3 "$T/hook-algo-2.log"
# orted --daemonize forks: the ranks' parent is not the PID the hook had.
hookpid=$(sed -n 's/^pid=//p' "$T/hook-algo-2.log")
orted=$(sed -n 's/^rank=2 .* ppid=//p' "$T/hook.out")
[ "$orted" != "$hookpid" ] || fail "orted --daemonize kept the launch agent's PID $hookpid"
# A hook that drops --daemonize: orted keeps the hook's PID (the ranks'
# parent) and the job still runs.
cat >"$T/hook-fg" <<EOF
#!/bin/bash
echo "pid=\$\$" >"$T/hook-fg-\$(hostname).log"
prog=\$1
shift
args=()
for a in "\$@"; do [ "\$a" = --daemonize ] || args+=("\$a"); done
exec "\$prog" "\${args[@]}"
EOF
chmod +x "$T/hook-fg"
mh_exec 1 "${MPIRUN[@]}" -mca orte_launch_agent "$T/hook-fg orted" "$T/allreduce" >"$T/hookfg.out" 2>"$T/hookfg.err" ||
	{ cat "$T/hookfg.err" >&2; fail "mpirun with a launch agent dropping --daemonize failed"; }
expect_ranks "$T/hookfg.out" - - -
for k in 2 3; do
	hookpid=$(sed -n 's/^pid=//p' "$T/hook-fg-algo-$k.log")
	assert_contains "$T/hookfg.out" "host=algo-$k sum=21 probe=- ppid=$hookpid" "orted in the foreground keeps the hook's PID on algo-$k"
done
rm -f "$T"/hook-algo-*.log
mh_exec 1 env MH_PROBE=leader "${MPIRUN[@]}" -x MH_PROBE -mca orte_launch_agent "$T/hook orted" "$T/allreduce" >"$T/hookx.out" 2>"$T/hookx.err" ||
	{ cat "$T/hookx.err" >&2; fail "mpirun -x with orte_launch_agent failed"; }
expect_ranks "$T/hookx.out" leader leader leader

# Nothing of the jobs is left on any host: PID 1 (mh-init) and sshd only.
for k in 1 2 3; do
	mh_pids $k >"$T/pids.$k"
	assert_eq "$(awk '{ print $3 }' "$T/pids.$k" | sort | tr '\n' ' ')" "mh-init sshd " "processes left on algo-$k"
	assert_contains "$T/pids.$k" " 1 mh-init" "PID 1 of algo-$k"
	# Started from a script's background job, PID 1 must still have every
	# signal at its default (SIGINT and SIGQUIT would be ignored otherwise).
	# (32 and 33 are glibc's own, beyond what env --default-signal resets.)
	ign=$(awk '/^SigIgn:/ { print $2 }' "/proc/$(mh_pid1 $k)/status")
	assert_eq "$((16#$ign & 16#7fffffff))" 0 "signals 1-31 ignored by PID 1 on algo-$k (SigIgn $ign)"
done

# A cut link: algo-3 cannot be reached while its link is down, and can again.
mh_link_down 3
if mh_exec 1 ssh -o ConnectTimeout=1 algo-3 true 2>/dev/null; then
	fail "algo-3 reachable with its link down"
fi
mh_link_up 3
assert_eq "$(mh_exec 1 ssh -o ConnectTimeout=5 algo-3 hostname)" algo-3 "algo-3 after its link came back"

# SIGTERM to a host's PID 1 ends the host and everything in it.
mh_kill 3 TERM
assert_eq "$(mh_wait 3 5)" 0 "exit of algo-3 after SIGTERM"
assert_eq "$(mh_pids 3)" "" "processes left on algo-3 after its PID 1 exited"

# A vanished host: its PID namespace is killed.
mh_vanish 2
assert_eq "$(mh_wait 2 5)" 137 "exit of a vanished algo-2"
assert_eq "$(mh_pids 2)" "" "processes left on a vanished algo-2"

# A program given by the test is the host's PID 1, with the host's name,
# and its exit code is the host's.
mh_start_host 3 /bin/sh -c 'echo "pid=$$ host=$(hostname) cwd=$(pwd)"; exit 7'
assert_eq "$(mh_wait 3 5)" 7 "exit code of a custom PID 1"
assert_contains "$T/algo-3/console.log" "pid=1 host=algo-3" "custom PID 1 of algo-3"

t0=$EPOCHREALTIME
mh_teardown
echo "tear-down: $(mh__elapsed "$t0") s"
left=$(mh_leftovers)
[ -z "$left" ] || fail "left behind after tear-down: $left"
if ip netns list | grep -qF "smt-$MH_LAST_ID-"; then fail "namespaces left"; fi
assert_eq "$(ip -o link show | awk -F': ' '{ print $2 }')" "$machine_links" "the machine's network interfaces"
assert_eq "$(ls -la /root/.ssh 2>&1)" "$machine_rootssh" "the machine's /root/.ssh"
assert_eq "$(md5sum /etc/hosts 2>&1)" "$machine_etchosts" "the machine's /etc/hosts (or its absence)"
assert_eq "$(ls -la /etc/ssh 2>&1)" "$machine_etcssh" "the machine's /etc/ssh (or its absence)"
[ ! -e "/tmp/$mark" ] || fail "a host's /tmp leaked to the machine"
echo "PASS"
