#!/bin/bash
# bench/b12-inner.sh DIR N RUNS - B12's leader with N workers, run by
# b12.sh inside `unshare --net --mount` (a private loopback and /run).
# N worker smtd processes w1..wN on this machine, each in a PID namespace of
# its own, as in a container (a worker that was never announced its orted
# reads its /proc once, five seconds after the launch: 1000 of them
# reading one /proc of 2000 processes stalled this machine for 20 s); the
# leader's --ssh-path
# is bench/b3shim.c as fakessh, which runs `smtctl dial-stdio` to the
# worker's socket directly, so that no OpenSSH CPU hides smtd's own (B3f's
# set-up).  Every worker is up before the leader starts.  Prints one line
# per run of "key=value" pairs:
#   ready    s      the leader's exec to its (stand-in) mpirun's exec
#   cpu      s      the leader's own CPU (utime + stime) meanwhile
#   cgcpu    s      the leader and its channel processes (a cpuacct cgroup)
#   rss pss pd anon MiB  the leader's Rss, Pss, Private_Dirty and Anonymous
#                   (smaps_rollup) with every channel open and idle, the job
#                   running (Anonymous too: while a channel's process is
#                   between fork and exec, the leader's dirty pages count
#                   as shared)
#   fds      count  the leader's open descriptors
#   chan     count  the leader's channel processes (smtctl dial-stdio)
#   chanpriv MiB    their private memory (Private_Clean + Private_Dirty), summed
#   chanpd   MiB    their Private_Dirty, summed
#   wk       1/s    the leader's wakeups (context switches) per second
#                   over WK_SECS seconds of the idle running job
#   chwk     1/s    the same summed over its channel processes
#   lines    s      B12l: one line from a rank on every worker (b12_ranks)
#                   to the last of them on the leader's stdout
#   stacks   s      B12k: `smtctl stacks` on the leader (every worker reads
#                   its rank's stack, the leader groups the N), "-" unless
#                   all N were read
#   end      s      the stand-in mpirun killed (the leader's decision: the
#                   job failed) to the last worker's exit, every worker
#                   told by the leader; with END_FLOOR=1 (B12ef), the leader
#                   killed and every worker's smtd sent a SIGTERM of its
#                   own instead, from that signal (no wakeup count, no
#                   stacks then)
#   stall    s      B12x, with STALL=S (the leader's --stall-timeout S, and
#                   nothing after the ranks' lines: the job stalls): the
#                   leader's "the job is stalled" to its failure line, logged
#                   once the failure file is written and every worker has
#                   the result (from its log's timestamps)
#   stallc   s      ... to "stacks of N ranks collected" (B12xc)
# CHANNELS (tcp or ssh) is every smtd's --channels.
set -u
dir=$1 n=$2 runs=$3
secs=${WK_SECS:-5}
# The peer timeout: long enough that a loaded machine loses no worker
# (it also sets the watch period: a third of it, at most 5 s).
PT=${B12_PEER_TIMEOUT:-60}
CH=${CHANNELS:-tcp}
ip link set lo up
mount -t tmpfs b12-run /run

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

# rollup PID: "RSS PSS PRIVATE_CLEAN PRIVATE_DIRTY ANONYMOUS" in kB.
rollup() {
	awk '/^Rss:/ { r = $2 } /^Pss:/ { p = $2 } /^Private_Clean:/ { c = $2 }
	     /^Private_Dirty:/ { d = $2 } /^Anonymous:/ { a = $2 }
	     END { print r + 0, p + 0, c + 0, d + 0, a + 0 }' "/proc/$1/smaps_rollup" 2>/dev/null
}
ctxt() {
	awk '/^voluntary_ctxt_switches|^nonvoluntary_ctxt_switches/ { s += $2 } END { print s + 0 }' \
		"/proc/$1/status" 2>/dev/null || echo 0
}
# The leader's channel processes: its children that are smtctl (from every
# process's stat: /proc/PID/task/PID/children missed most of them at 128
# workers and more).
channels() {
	pgrep -P "$1" -x smtctl
}

# FLOOR_N=N: B12s instead of the rest: one worker, and N channel processes
# to it as the leader would start them (fakessh, smtctl dial-stdio), run to
# their end two at a time; prints the seconds it took.
if [ -n "${FLOOR_N:-}" ]; then
	rm -rf "$dir/w1" "$dir/w1.sock"
	mkroot w1
	"$SMTD" --root "$dir/w1/ml" --socket "$dir/w1.sock" --sshd never --smtctl "$SMTCTL" \
		--preload "$SMTD_PRELOAD" --current-host w1 -- /bin/true >"$dir/w1.log" 2>&1 &
	w=$!
	for ((i = 0; i < 3000; i++)); do [ -S "$dir/w1.sock" ] && break; sleep 0.01; done
	t0=$EPOCHREALTIME
	seq "$FLOOR_N" | B3_DIR=$dir xargs -P 2 -I{} "$BIN/fakessh" w1 "$SMTCTL" --socket X dial-stdio
	awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f\n", b - a }'
	kill -KILL $w
	wait $w 2>/dev/null
	exit 0
fi

# B12l's stand-ins, on every worker once the job is launched: an "orted"
# (started as mpirun's ssh would start it, through `smtctl exec-orted`, in
# the worker's PID and mount namespace) whose one rank (through `smtctl
# rank`, as under orted) blocks opening the FIFO go, prints one line once
# the bench opens it for writing, and waits on it (no process to start on
# the way: 1000 of them would be the bench's time, not smtd's).  The
# launcher is the stand-in orted's child, as under orted, not the orted
# itself: a stall stops the orted (smtd(8) Stalls) and the launcher reports
# its rank's end (B12x: with the launcher stopped, every worker's end
# waited out its grace).
mkdir -p "$dir/bin"
printf '%s\n' '#!/bin/sh' '"$B12_SMTCTL" --socket "$B12_SOCK" rank -- "$B12_DIR/bin/b12rank"' \
	>"$dir/bin/orted"
printf '%s\n' '#!/bin/sh' ': >"$B12_DIR/up.$OMPI_COMM_WORLD_RANK"' 'exec 3<"$B12_DIR/go"' \
	'echo "b12 line from rank $OMPI_COMM_WORLD_RANK"' 'read -r _ <&3' >"$dir/bin/b12rank"
chmod +x "$dir/bin/orted" "$dir/bin/b12rank"

# B12k's stand-in eu-stack, first on the workers' PATH: a fixed stack of
# the process asked for, so that 1000 reads of the real one (25 ms of CPU
# each) do not hide smtd's collection, as fakessh stands in for ssh.
mkdir -p "$dir/stackbin"
printf '%s\n' '#!/bin/sh' 'printf "PID %s - process\nTID %s:\n" "$2" "$2"' \
	'printf "#0  0x00007f0000001000 __read\n#1  0x0000560000002000 b12rank_wait\n"' \
	'printf "#2  0x00007f0000003000 __libc_start_main\n"' >"$dir/stackbin/eu-stack"
chmod +x "$dir/stackbin/eu-stack"

# b12_stacks: B12k's value into STACKS.
b12_stacks() {
	local t0 got
	t0=$EPOCHREALTIME
	if ! "$SMTCTL" --socket "$dir/leader.sock" stacks --json --timeout 30 >"$dir/stacks.json" \
		2>"$dir/stacks.err"; then
		echo "B12k: smtctl stacks failed: $(head -c 300 "$dir/stacks.err")" >&2
		STACKS=-
		return
	fi
	STACKS=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", b - a }')
	got=$(/usr/bin/python3 -c 'import json, sys
v = json.load(open(sys.argv[1]))
print(v["ranks"] - len(v["unreadable"]))' "$dir/stacks.json" 2>&1)
	echo "B12k: stacks of $got of $n ranks in $STACKS s" >&2
	[ "$got" = "$n" ] || STACKS=-
}

# b12_worker_smtds: WSMTD, each worker's smtd ("" where it is gone), the
# child of its unshare: from one reading of every process (a pgrep per
# worker read /proc N times, minutes at 1000).
b12_worker_smtds() {
	local -A child=()
	local pid ppid k
	while read -r pid ppid; do child[$ppid]=$pid; done < <(ps -e -o pid=,ppid=)
	wsmtd=()
	for ((k = 0; k < n; k++)); do wsmtd[k]=${child[${pids[k]}]:-}; done
}

# b12_wait_workers: until every worker has exited (its unshare), SIGKILL
# after 90 s.  The guard's output away from ours: b12.sh reads ours to its
# end, and the sleep would hold it 90 s.
b12_wait_workers() {
	local p killer
	(sleep 90; kill -KILL "${pids[@]}" 2>/dev/null) >/dev/null 2>&1 &
	killer=$!
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	kill $killer 2>/dev/null
	wait $killer 2>/dev/null
}

# b12_stall_times: B12x's values into STALL and STALLC from the leader's
# log ("-" for what it does not hold).
b12_stall_times() {
	read -r stall stallc < <(awk '
		function t(s) { split(substr(s, 12, 12), a, ":"); return a[1] * 3600 + a[2] * 60 + a[3] }
		/smtd\[leader\] error: the job is stalled/ && !s0 { s0 = t($1) }
		/smtd\[leader\] info: stacks of [0-9]+ ranks collected/ && s0 && !c { c = t($1) }
		/smtd\[leader\] error: Stalled: / && s0 && !f { f = t($1) }
		END { printf "%s %s\n", f ? sprintf("%.3f", f - s0) : "-", c ? sprintf("%.3f", c - s0) : "-" }' \
		"$dir/leader.log")
	echo "B12x: stalled to the failure line in $stall s, to every stack in $stallc s" >&2
}

B12L_TEXT="]<stdout>: b12 line from rank"
# The reader of the leader's stdout in real time, where the machine allows
# it: it only wakes for the leader's output, and then reads the clock at
# once.
RT=
chrt -f 10 true 2>/dev/null && RT="chrt -f 10"

# b12_ranks: B12l's value into LINES, the FIFO opened to the last of the N
# lines on the leader's stdout ("-" when they did not all come within
# 60 s).
b12_ranks() {
	local k w i
	rm -f "$dir/go" "$dir"/up.*
	mkfifo "$dir/go"
	b12_worker_smtds
	# setsid -f: the orted is forked off and nsenter returns, leaving it to
	# the worker's smtd as a daemonized orted is.  nsenter waiting for it
	# stops itself when it stops (a stall's SIGSTOP), and then never reaps
	# it: the worker's smtd, its namespace's init, waited for good.
	for ((k = 1; k <= n; k++)); do
		w=${wsmtd[k - 1]:-}
		[ -n "$w" ] || continue
		B12_DIR=$dir B12_SMTCTL=$SMTCTL B12_SOCK=$dir/w$k.sock OMPI_COMM_WORLD_RANK=$k \
			OMPI_COMM_WORLD_LOCAL_RANK=0 SSH_CONNECTION="127.0.0.1 1 127.0.0.1 22" \
			nsenter -t "$w" --pid --mount -- setsid -f "$SMTCTL" --socket "$dir/w$k.sock" exec-orted \
			"$dir/bin/orted" >/dev/null 2>&1 &
	done
	for ((i = 0; i < 12000; i++)); do
		[ "$(find "$dir" -maxdepth 1 -name 'up.*' | wc -l)" -ge "$n" ] && break
		sleep 0.01
	done
	echo "B12l: $(find "$dir" -maxdepth 1 -name 'up.*' | wc -l) of $n ranks up" >&2
	sleep 1
	# The last line's time is the leader's stdout's reader's (stamp -w,
	# below), not a poll's: among 2N processes woken at once on 2 cores a
	# polling shell read the clock late (0.4 s at 256).  The FIFO stays
	# open (descriptor 4) until the run's end, so that no rank ends before
	# the job's end is measured.
	t0=$EPOCHREALTIME
	exec 4<>"$dir/go"
	for ((i = 0; i < 6000; i++)); do [ -s "$dir/lines.t1" ] && break; sleep 0.01; done
	if [ -s "$dir/lines.t1" ]; then
		LINES=$(awk -v a="$t0" -v b="$(cat "$dir/lines.t1")" 'BEGIN { printf "%.3f", b - a }')
		return
	fi
	echo "B12l: $(grep -c "$B12L_TEXT" "$dir/leader.log") of $n lines on the leader" >&2
	LINES=-
}

for ((r = 1; r <= runs; r++)); do
	pids=()
	rm -f "$dir"/*.sock "$dir/t0" "$dir/t1" "$dir/lines.t1"
	for ((k = 1; k <= n; k++)); do
		rm -rf "$dir/w$k"
		mkroot "w$k"
		PATH=$dir/stackbin:$PATH unshare --pid --fork --mount-proc -- "$SMTD" --root "$dir/w$k/ml" --socket "$dir/w$k.sock" --sshd never --smtctl "$SMTCTL" \
			--preload "$SMTD_PRELOAD" --peer-timeout "$PT" --channels "$CH" --current-host "w$k" -- /bin/true >"$dir/w$k.log" 2>&1 &
		pids+=($!)
	done
	for ((k = 1; k <= n; k++)); do
		for ((i = 0; i < 6000; i++)); do [ -S "$dir/w$k.sock" ] && break; sleep 0.01; done
	done
	echo "B12: $n workers up in $SECONDS s" >&2
	sleep 1
	rm -rf "$dir/leader"
	mkroot leader
	# The leader's stdout and stderr through stamp -w (B12l's clock).
	rm -f "$dir/leader.out"
	mkfifo "$dir/leader.out"
	$RT "$BIN/stamp" -w "$dir/lines.t1" "$n" "$B12L_TEXT" <"$dir/leader.out" >"$dir/leader.log" &
	reader=$!
	cg=/sys/fs/cgroup/cpuacct/smt-b12-$$-$r
	mkdir "$cg" || { echo "B12: cannot make $cg" >&2; exit 1; }
	(
		echo $BASHPID >"$cg/tasks"
		# The stand-in mpirun outlives the measurement (it is killed
		# below): at 120 s the job ended while 1000 channels were still
		# settling, and the leader's memory was read as 0.
		export B3_DIR=$dir STAMP_FILE=$dir/t1 STAMP_SLEEP=600
		# In a PID namespace of its own, as the workers (and a container's
		# PID 1): the job tree of a leader that sees every worker's
		# processes reads their /proc at the job's end (B12e).
		exec unshare --pid --fork --mount-proc --kill-child -- \
			"$BIN/stamp" -o "$dir/t0" "$SMTD" --root "$dir/leader/ml" \
			--socket "$dir/leader.sock" --sshd never --smtctl "$SMTCTL" --preload "$SMTD_PRELOAD" \
			--peer-timeout "$PT" ${STALL:+--stall-timeout "$STALL"} --channels "$CH" --current-host leader --mpirun "$BIN/stamp" --ssh-path "$BIN/fakessh" -- /bin/true
	) >"$dir/leader.out" 2>&1 &
	up=$!
	# The leader's smtd, as this namespace sees it: unshare's child.
	lp=
	for ((i = 0; i < 6000; i++)); do
		lp=$(pgrep -P $up | head -1)
		[ -n "$lp" ] && break
		sleep 0.01
	done
	for ((i = 0; i < 6000; i++)); do [ -s "$dir/t1" ] && break; sleep 0.01; done
	cgcpu=$(awk '{ printf "%.3f", $1 / 1e9 }' "$cg/cpuacct.usage")
	# Fields 14 and 15 of stat, after the command's parenthesis.
	cpu=$(sed 's/.*) //' "/proc/$lp/stat" | awk -v t="$(getconf CLK_TCK)" '{ printf "%.3f", ($12 + $13) / t }')
	if [ -s "$dir/t1" ]; then
		ready=$(awk -v a="$(cat "$dir/t0")" -v b="$(head -1 "$dir/t1")" 'BEGIN { printf "%.3f", b - a }')
		# Settled: every long poll out, the first answers in - at 1000
		# workers on 2 cores the channels are still opening seconds
		# after the launch: until their count holds for 3 s (at most 120 s).
		sleep 2
		last=-1 same=0
		for ((i = 0; i < 120 && same < 3; i++)); do
			now=$(channels $lp | wc -l)
			if [ "$now" = "$last" ]; then same=$((same + 1)); else same=0; fi
			last=$now
			sleep 1
		done
		echo "B12: $n workers, channels $([ $same -ge 3 ] || echo "not ")settled at $last after $((i + 2)) s" >&2
		read -r rss pss pc pd anon < <(rollup $lp)
		fds=$(ls "/proc/$lp/fd" | wc -l)
		chs=$(channels $lp)
		nch=0 cpriv=0 cpd=0 c0=0
		for c in $chs; do
			read -r a b cc dd e < <(rollup "$c")
			[ -n "${dd:-}" ] || continue
			nch=$((nch + 1)) cpriv=$((cpriv + cc + dd)) cpd=$((cpd + dd))
			c0=$((c0 + $(ctxt "$c")))
		done
		l0=$(ctxt $lp)
		[ -n "${END_FLOOR:-}${STALL:-}" ] || sleep "$secs"
		l1=$(ctxt $lp)
		c1=0
		for c in $chs; do c1=$((c1 + $(ctxt "$c"))); done
		b12_ranks
		lines=$LINES
		STACKS=-
		[ -n "${END_FLOOR:-}${STALL:-}" ] || b12_stacks
		alive=0
		[ -d "/proc/$lp" ] && alive=1
		stall=- stallc=- end=-
		mp=$(pgrep -P $lp -x stamp | head -1)
		if [ -n "${STALL:-}" ] && [ $alive = 1 ]; then
			# The ranks are silent from here: the leader notices, reads
			# every rank's stack and ends the job everywhere.
			for ((i = 0; i < 1200; i++)); do [ -d "/proc/$lp" ] || break; sleep 0.1; done
			b12_stall_times
			b12_wait_workers
		elif [ -n "$mp" ] && [ $alive = 1 ]; then
			# The end: the stand-in mpirun killed, every worker told.
			if [ -n "${END_FLOOR:-}" ]; then
				# B12ef: the leader gone, every worker's smtd stopped by a
				# SIGTERM of its own: their end with no message of the
				# leader's (the bench's waits and PID namespaces' teardown
				# included), what B12e cannot go under here.
				kill -KILL $up
				wait $up 2>/dev/null
				b12_worker_smtds
				t_end0=$EPOCHREALTIME
				kill -TERM ${wsmtd[@]}
			else
				t_end0=$EPOCHREALTIME
				kill -TERM "$mp"
			fi
			b12_wait_workers
			end=$(awk -v a="$t_end0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", b - a }')
		fi
		if [ $alive = 0 ]; then
			# Nothing read of a leader that is gone is a measurement.
			echo "n=$n ready=$ready cpu=$cpu cgcpu=$cgcpu lines=$lines"
			echo "B12: the leader with $n workers ended before it was measured:" >&2
			grep -v debug "$dir/leader.log" | tail -5 >&2
		else
			awk -v n=$n -v end=$end -v stall=$stall -v stallc=$stallc -v stacks=$STACKS -v lines=$lines -v ready=$ready -v cpu=$cpu -v cg=$cgcpu -v rss=$rss -v pss=$pss -v pd=$pd -v anon=$anon \
				-v fds=$fds -v nch=$nch -v cpriv=$cpriv -v cpd=$cpd -v l0=$l0 -v l1=$l1 -v c0=$c0 -v c1=$c1 -v s=$secs \
				'BEGIN { printf "n=%d ready=%s cpu=%s cgcpu=%s rss=%.2f pss=%.2f pd=%.2f anon=%.2f fds=%d chan=%d chanpriv=%.2f chanpd=%.2f wk=%.2f chwk=%.2f lines=%s stacks=%s end=%s stall=%s stallc=%s\n",
					n, ready, cpu, cg, rss / 1024, pss / 1024, pd / 1024, anon / 1024, fds, nch, cpriv / 1024, cpd / 1024,
					(l1 - l0) / s, (c1 - c0) / s, lines, stacks, end, stall, stallc }'
		fi
	else
		echo "n=$n ready=-"
		echo "B12: the leader did not launch with $n workers:" >&2
		grep -v debug "$dir/leader.log" | tail -5 >&2
	fi
	exec 4>&-
	cp "$dir/leader.log" "$dir/leader-$n-$r.log"
	kill -KILL $up "${pids[@]}" 2>/dev/null
	wait $up "${pids[@]}" $reader 2>/dev/null
	while read -r p; do kill -KILL "$p"; done <"$cg/tasks" 2>/dev/null
	for ((i = 0; i < 500; i++)); do rmdir "$cg" 2>/dev/null && break; sleep 0.01; done
done
exit 0
