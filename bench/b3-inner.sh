#!/bin/bash
# bench/b3-inner.sh DIR MODE N RUNS - B3's leader readiness, run by b3.sh
# inside `unshare --net --mount` (private loopback, /etc/hosts, /root,
# /run).  N worker smtd processes w1..wN on one machine, one `sshd` for
# all of them listening on every loopback address; /etc/hosts maps wK to
# 127.0.1.K (127.0.2.K above 255).  root's authorized key forces route.sh,
# (bench/b3shim.c), which picks the worker's control socket from the address
# ssh connected to.  MODE fake: the leader's --ssh-path is b3shim as
# fakessh (no ssh at all: smtd's own cost).  Prints "N SECONDS CPU" per
# run: from the leader's exec to the exec of its (stand-in) mpirun, all
# workers being up before, and the CPU the leader used meanwhile with its
# ssh clients (a cpuacct cgroup of its own; the sshd side, which real hosts
# run on their own machines, is not in it).
set -u
dir=$1 mode=$2 n=$3 runs=$4
ip link set lo up
mount -t tmpfs b3-run /run && mkdir -p /run/sshd
mount -t tmpfs -o mode=700 b3-root /root && mkdir -m 700 /root/.ssh

addr() { echo "127.0.$((1 + ($1 - 1) / 250)).$((1 + ($1 - 1) % 250))"; }
{
	echo "127.0.0.1 localhost leader"
	for ((k = 1; k <= n; k++)); do echo "$(addr $k) w$k"; done
} >"$dir/hosts"
mount --bind "$dir/hosts" /etc/hosts
cat >"$dir/ssh_config" <<EOC
Host *
    StrictHostKeyChecking no
    UserKnownHostsFile /dev/null
    BatchMode yes
    LogLevel ERROR
    IdentityFile /root/.ssh/id_ed25519
EOC
mount --bind "$dir/ssh_config" /etc/ssh/ssh_config
[ -f "$dir/id_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -f "$dir/id_ed25519"
[ -f "$dir/host_key" ] || ssh-keygen -q -t ed25519 -N '' -f "$dir/host_key"
cp "$dir/id_ed25519" "$dir/id_ed25519.pub" /root/.ssh/
# The forced command and the fake ssh are bench/b3shim.c (no bash on the
# channel's path).
echo "command=\"$BIN/b3shim route $dir $SMTCTL\",no-pty $(cat "$dir/id_ed25519.pub")" >/root/.ssh/authorized_keys
cat >"$dir/sshd_config" <<EOC
Port 22
ListenAddress 0.0.0.0
HostKey $dir/host_key
PidFile /run/sshd.pid
StrictModes no
UsePAM no
PermitRootLogin yes
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UseDNS no
PrintMotd no
MaxStartups 2000
MaxSessions 100
EOC
if [ "$mode" = ssh ]; then
	# The worker side is simulated cheaply - on real hosts it runs on the
	# workers' own CPUs, here on the 2 cores the leader needs: sshd does not
	# re-execute itself for each connection (-r), and root's shell, which
	# runs the forced command, is dash instead of bash.  The leader's side,
	# which is what B3 measures, is the real one.
	sed 's|^root:\([^:]*:[^:]*:[^:]*:[^:]*:[^:]*\):.*$|root:\1:/bin/sh|' /etc/passwd >"$dir/passwd"
	mount --bind "$dir/passwd" /etc/passwd
	/usr/sbin/sshd -r -f "$dir/sshd_config" -E "$dir/sshd.log" || { echo "sshd failed" >&2; exit 1; }
fi

hosts_json() {
	local k
	printf '["leader"'
	for ((k = 1; k <= n; k++)); do printf ',"w%d"' $k; done
	printf ']'
}
hj=$(hosts_json)
mkroot() {
	mkdir -p "$dir/$1/ml/input/config" "$dir/$1/ml/output" "$dir/$1/ml/code"
	printf '{"current_host": "%s", "hosts": %s, "network_interface_name": "lo"}\n' "$1" "$hj" \
		>"$dir/$1/ml/input/config/resourceconfig.json"
	echo '{"sagemaker_mpi_enabled": "true", "sagemaker_mpi_num_of_processes_per_host": "1"}' \
		>"$dir/$1/ml/input/config/hyperparameters.json"
}

for ((r = 1; r <= runs; r++)); do
	pids=()
	rm -f "$dir"/*.sock "$dir/t0" "$dir/t1"
	for ((k = 1; k <= n; k++)); do
		rm -rf "$dir/w$k"
		mkroot "w$k"
		"$SMTD" --root "$dir/w$k/ml" --socket "$dir/w$k.sock" --sshd never --smtctl "$SMTCTL" \
			--preload "$SMTD_PRELOAD" --current-host "w$k" -- /bin/true >"$dir/w$k.log" 2>&1 &
		pids+=($!)
	done
	for ((k = 1; k <= n; k++)); do
		for ((i = 0; i < 3000; i++)); do [ -S "$dir/w$k.sock" ] && break; sleep 0.01; done
	done
	sleep 0.2
	rm -rf "$dir/leader"
	mkroot leader
	sshopt=()
	[ "$mode" = fake ] && sshopt=(--ssh-path "$BIN/fakessh")
	cg=/sys/fs/cgroup/cpuacct/smt-b3-$$-$r
	mkdir "$cg" || { echo "B3: cannot make $cg" >&2; exit 1; }
	(
		echo $BASHPID >"$cg/tasks"
		export B3_DIR=$dir STAMP_FILE=$dir/t1 STAMP_SLEEP=30
		exec "$BIN/stamp" -o "$dir/t0" "$SMTD" --root "$dir/leader/ml" \
			--socket "$dir/leader.sock" --sshd never --smtctl "$SMTCTL" --preload "$SMTD_PRELOAD" \
			--current-host leader --mpirun "$BIN/stamp" "${sshopt[@]}" -- /bin/true
	) >"$dir/leader.log" 2>&1 &
	lp=$!
	for ((i = 0; i < 4000; i++)); do [ -s "$dir/t1" ] && break; sleep 0.01; done
	cpu=$(awk '{ printf "%.3f", $1 / 1e9 }' "$cg/cpuacct.usage")
	if [ -s "$dir/t1" ]; then
		echo "$n $(awk -v a="$(cat "$dir/t0")" -v b="$(head -1 "$dir/t1")" 'BEGIN { printf "%.3f", b - a }') $cpu"
	else
		echo "$n - -"
		echo "B3: the leader did not launch with $n workers:" >&2
		grep -v debug "$dir/leader.log" | tail -5 >&2
	fi
	cp "$dir/leader.log" "$dir/leader-$mode-$n-$r.log"
	kill -KILL $lp "${pids[@]}" 2>/dev/null
	wait $lp "${pids[@]}" 2>/dev/null
	while read -r p; do kill -KILL "$p"; done <"$cg/tasks" 2>/dev/null
	for ((i = 0; i < 500; i++)); do rmdir "$cg" 2>/dev/null && break; sleep 0.01; done
done
[ "$mode" = ssh ] && kill "$(cat /run/sshd.pid)"
exit 0
