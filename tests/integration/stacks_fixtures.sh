#!/bin/sh
# The stall fixtures behave as the integration tests expect,
# and their stacks name the odd rank, read live (smt_stacks) and from the
# faulthandler dumps they print on SIGABRT with PYTHONFAULTHANDLER=1:
#   heartbeat.py   heartbeats go on, progress lines stop
#   mpi_stall.py   3 ranks under mpirun: rank 2 in time.sleep, the others in
#                  MPI_Barrier (needs openmpi-bin, python3-mpi4py)
#   ddp_stall.py   3 torch DDP ranks (gloo) under torchrun: rank 1 sleeps
#                  before an all-reduce, the others wait in it (needs
#                  python3-torch; torchrun through torchrun_wrapper.sh)
# The live reads need gdb (Python frames: python3.11-dbg) or eu-stack.
# Parts whose packages are missing are skipped with a note; the whole test
# skips (77) when none can run.
. "$top_srcdir/tests/lib.sh"
smt_tmpdir

H="$top_srcdir/tests/helpers"
READ="$top_builddir/tests/helpers/stacks_read"
PY=/usr/bin/python3
jobs=
trap 'for p in $jobs; do kill -9 -- -$p $p 2>/dev/null; done; rm -rf "$T"' EXIT
ran=0

# Python frames from a live read: gdb with CPython's extension for Debian's python.
pybt=0
if have gdb && [ -f /usr/share/gdb/auto-load/usr/bin/python3.11-gdb.py ]; then
	pybt=1
fi
# 3 reads of gdb (1-2 s of CPU each, more for torch's many threads) on 2
# CPUs shared with other tests: more than stacks_read's default 10 s.
READ_MS=30000
reader=0
if have gdb || have eu-stack; then
	reader=1
fi

# wait_lines FILE PATTERN COUNT [SECONDS]
wait_lines() {
	i=0
	while [ "$(grep -c -- "$2" "$1" 2>/dev/null)" -lt "$3" ]; do
		i=$((i + 1))
		[ $i -le $(( ${4:-60} * 10 )) ] || { cat "$1" "${1%.out}.err" >&2 2>/dev/null; fail "waited for $3 x '$2' in $1"; }
		sleep 0.1
	done
}

# wait_count FILE STRING COUNT: mpirun interleaves the ranks' stderr
# within lines, so occurrences are counted, not lines.
wait_count() {
	i=0
	while [ "$(grep -oF -- "$2" "$1" 2>/dev/null | wc -l)" -lt "$3" ]; do
		i=$((i + 1))
		[ $i -le 300 ] || { cat "$1" >&2; fail "waited for $3 x '$2' in $1"; }
		sleep 0.1
	done
}

# abort_each LAUNCHER PIDS...: SIGABRT to each rank in turn, the next once
# the last is dead, with the launcher stopped meanwhile - as smtd does - so
# that it neither kills the others mid-dump at the first death nor mixes
# their dumps.  The ranks wait stopped for their turn: a rank that ran on
# would see its peer's death first (gloo's "Connection closed by peer")
# and be past the collective, or unwinding, when its own SIGABRT came.
abort_each() {
	launcher=$1
	shift
	kill -STOP "$launcher" "$@"
	for p in "$@"; do
		kill -ABRT "$p"
		kill -CONT "$p"
		i=0
		while [ -e "/proc/$p" ] && [ "$(cut -d' ' -f3 "/proc/$p/stat" 2>/dev/null)" != Z ]; do
			i=$((i + 1))
			[ $i -le 200 ] || { kill -CONT "$launcher"; fail "rank $p did not die of SIGABRT"; }
			sleep 0.05
		done
	done
	kill -CONT "$launcher"
}

# pids_of SCRIPT SID: the PIDs of the Python processes running SCRIPT in
# session SID (the launcher's: another test may run the same script), by
# rank.
pids_of() {
	script=$1 sid=$2
	for d in /proc/[0-9]*; do
		# Without a fork per process: a busy machine has thousands.
		read -r stat 2>/dev/null < "$d/stat" || continue
		# shellcheck disable=SC2086 # the fields after "(comm) "
		set -- ${stat##*) }
		[ "$4" = "$sid" ] || continue
		cmd=$(tr '\0' ' ' 2>/dev/null < "$d/cmdline") || continue
		case $cmd in
		*torchrun*) continue ;;
		"$PY "*"$script"*|"/usr/bin/python3.11 "*"$script"*) ;;
		*) continue ;;
		esac
		r=$(tr '\0' '\n' 2>/dev/null < "$d/environ" |
			sed -n 's/^\(OMPI_COMM_WORLD_RANK\|RANK\)=//p' | head -1)
		echo "${r:-0} ${d#/proc/}"
	done | sort -n | awk '{print $2}'
}

# --- heartbeat.py -----------------------------------------------------------
if have python3 || [ -x "$PY" ]; then
	py=$(command -v python3 || echo "$PY")
	SMT_PROGRESS_STEPS=2 SMT_HEARTBEAT_LIMIT=3.5 "$py" "$H/heartbeat.py" > "$T/hb.out" ||
		fail "heartbeat.py failed"
	assert_eq "$(grep -c '^progress step' "$T/hb.out")" 2 "progress lines"
	assert_eq "$(grep -c '^heartbeat' "$T/hb.out")" 4 "heartbeats"
	assert_eq "$(tail -1 "$T/hb.out")" "heartbeat 3" "heartbeats go on after the progress stops"
	ran=1
fi

# --- mpi_stall.py -----------------------------------------------------------
if have mpirun && [ -x "$PY" ] && "$PY" -c 'import mpi4py' 2>/dev/null; then
	# Each rank's output in a file of its own too: mpirun's own stderr mixes
	# the ranks' bytes within lines.
	PYTHONFAULTHANDLER=1 setsid mpirun --allow-run-as-root --oversubscribe -np 3 \
		--output-filename "$T/mpiout" \
		-x PYTHONFAULTHANDLER "$PY" -m mpi4py "$H/mpi_stall.py" \
		> "$T/mpi.out" 2> "$T/mpi.err" &
	launcher=$!
	jobs="$jobs $!"
	wait_count "$T/mpi.out" " ready" 3
	sleep 0.5
	pids=$(pids_of mpi_stall.py "$launcher")
	assert_eq "$(echo $pids | wc -w)" 3 "three ranks"
	if [ $reader = 1 ]; then
		# shellcheck disable=SC2086
		"$READ" --timeout $READ_MS --group $pids > "$T/mpi.stacks" ||
			{ cat "$T/mpi.stacks" >&2; fail "reading the ranks failed"; }
		if [ $pybt = 1 ]; then
			assert_contains "$T/mpi.stacks" \
				"summary: rank 2 on local is in time.sleep (mpi_stall.py:18) while 2 ranks wait in comm.Barrier (mpi_stall.py:28)" \
				"live stacks name the sleeping rank"
		else
			echo "note: no Python frames (python3.11-dbg): native stacks only"
			assert_contains "$T/mpi.stacks" "summary: rank 2 on local is in" "live stacks name rank 2"
		fi
	fi
	# shellcheck disable=SC2086
	abort_each "$launcher" $pids
	for r in 0 1 2; do
		wait_count "$T/mpiout/1/rank.$r/stderr" "Extension modules: mpi4py.MPI" 1
	done
	assert_contains "$T/mpiout/1/rank.2/stderr" "mpi_stall.py\", line 18 in stuck" \
		"the sleeping rank's dump"
	for r in 0 1; do
		assert_contains "$T/mpiout/1/rank.$r/stderr" 'mpi_stall.py", line 28 in main' \
			"rank $r's dump, waiting in the barrier"
	done
	ran=1
else
	skip_part "mpi_stall.py" "mpirun or python3-mpi4py"
fi

# --- ddp_stall.py under torchrun ---------------------------------------------
if [ -x "$PY" ] && "$PY" -c 'import torch.distributed' 2>/dev/null && have torchrun; then
	mkdir "$T/bin"
	ln -s "$H/torchrun_wrapper.sh" "$T/bin/torchrun"
	# torchrun's --tee copies the ranks' lines to its own stdout, a file
	# here: without PYTHONUNBUFFERED they sit in its buffer until it exits.
	PATH="$T/bin:$PATH" PYTHONFAULTHANDLER=1 PYTHONUNBUFFERED=1 SMT_STALL_RANK=1 SMT_STEPS=4 \
		MASTER_PORT=$((29600 + $$ % 300)) setsid torchrun --nnodes 1 --nproc_per_node 3 \
		--master_port $((29600 + $$ % 300)) "$H/ddp_stall.py" > "$T/ddp.out" 2> "$T/ddp.err" &
	launcher=$!
	jobs="$jobs $!"
	wait_lines "$T/ddp.out" "stopping before the all-reduce of step 2" 1 120
	wait_lines "$T/ddp.out" "rank 0 step 1 loss" 1
	sleep 1
	pids=$(pids_of ddp_stall.py "$launcher")
	assert_eq "$(echo $pids | wc -w)" 3 "three ranks"
	assert_not_contains "$T/ddp.out" "step 2 loss" "no rank passed the stalled all-reduce"
	if [ $reader = 1 ]; then
		# shellcheck disable=SC2086
		"$READ" --timeout $READ_MS --group $pids > "$T/ddp.stacks" ||
			{ cat "$T/ddp.stacks" >&2; fail "reading the ranks failed"; }
		if [ $pybt = 1 ]; then
			assert_contains "$T/ddp.stacks" \
				"summary: rank 1 on local is in time.sleep (ddp_stall.py:44) while 2 ranks wait in dist.all_reduce (ddp_stall.py:66)" \
				"live stacks name the sleeping rank"
		else
			assert_contains "$T/ddp.stacks" "summary: rank 1 on local is in" "live stacks name rank 1"
		fi
	fi
	# shellcheck disable=SC2086
	abort_each "$launcher" $pids
	wait_count "$T/ddp.err" "Extension modules: torch._C" 3
	assert_contains "$T/ddp.err" "ddp_stall.py\", line 44 in stall_forever" "the sleeping rank's dump"
	assert_eq "$(grep -o 'distributed_c10d.py", line [0-9]* in all_reduce' "$T/ddp.err" | wc -l)" 2 \
		"the waiting ranks' dumps"
	ran=1
else
	skip_part "ddp_stall.py" "python3-torch"
fi

[ $ran = 1 ] || skip "no fixture could run (python3, mpi4py, torch missing)"
exit 0
