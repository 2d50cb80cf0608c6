#!/bin/bash
# smtd(8) Stalls: a stuck job on 3 simulated hosts x 2 ranks is
# noticed, every rank's stack is read on its own host, the odd rank is
# named, and the job ends on every host.
#  1. Real PyTorch under torchrun (Debian's python3-torch 1.13, gloo, CPU):
#     tests/helpers/ddp_stall.py trains a small model, a line per step on
#     every rank; rank 3 (algo-2) sleeps forever before the all-reduce of
#     step 3 while the other 5 wait in dist.all_reduce.  A stall timeout
#     of 5 s from the hyperparameter sagemaker_stall_timeout, as a SageMaker
#     job gives it.
#  2. mpi4py under mpirun: tests/helpers/mpi_stall.py, rank 4 (algo-3) in
#     time.sleep while the other 5 wait in comm.Barrier.  --stall-timeout 3.
#  3. Native ranks (tests/helpers/mpi_job.c, every rank in sleep()), read
#     live with eu-stack before the job ends; all in one place, so no rank
#     is named as the culprit.  --stall-timeout 2.
# After each: every host exits 1 between the stall timeout and 5 s after it
# (counted from the last rank line the leader printed, as this test saw it),
# the failure file's first line on every host is the exact summary naming
# the rank, its host and its frame (file:line) and the others' frame, the
# file lists both stacks once with the ranks that share them, every rank's
# stack is in ROOT/output/data/stacks/rank-N.txt on its own host (and only
# there) and in the leader's log, and nothing is left running on any host.
. "$top_srcdir/tests/multihost/prelude.sh"
HELPERS=$top_srcdir/tests/helpers
STAMP=$top_srcdir/tests/multihost/stamp.py

# line_of FILE TEXT: the number of the last line of FILE holding TEXT.
line_of() {
	grep -nF -- "$2" "$1" | tail -1 | cut -d: -f1
}

# stamp_leader: record when each line of the leader's console appears
# (tests/multihost/stamp.py), into $D/stamped, until the leader ends.
stamp_leader() {
	/usr/bin/python3 "$STAMP" "$(smtd_console 1)" "$D/stamped" "$(mh_host_dir 1)/exit" &
	STAMPER=$!
}

# check_timing STALL LAST_LINE_REGEX: the leader said the job was stalled
# STALL s after the last rank line matching the regex, within 0.5 s (the
# line reaches the leader's output a little after the rank wrote it; the
# watchdog's timer is exact), and every host ended within STALL + 2.5 s of
# it: 2 s, and the 0.5 s for which every host's Python ranks are stopped
# before their SIGABRT (smtd(8) Stalls).  Measured: +0.85 to +1.9 s, ASan.
check_timing() {
	local stall=$1 last said k t
	wait "$STAMPER"
	last=$(grep -E -- "$2" "$D/stamped" | tail -1 | cut -d' ' -f1)
	[ -n "$last" ] || fail "no rank line matching '$2' on the leader's output"
	said=$(grep -F -- "the job is stalled: " "$D/stamped" | head -1 | cut -d' ' -f1)
	[ -n "$said" ] || fail "the leader never said the job was stalled"
	awk -v e="$said" -v l="$last" -v s="$stall" 'BEGIN {
		d = e - l
		printf "the leader said it %.2f s after the last progress line\n", d
		exit !(d >= s - 0.5 && d <= s + 0.5) }' ||
		{ smtd_show_all; fail "the leader did not say the job was stalled $stall s (+-0.5 s) after the last progress line"; }
	for ((k = 1; k <= MH_N; k++)); do
		t=T_END_$k
		awk -v e="${!t}" -v l="$last" -v s="$stall" 'BEGIN {
			d = e - l
			printf "algo-'$k' ended %.2f s after the last progress line\n", d
			exit !(d >= s && d <= s + 2.5) }' ||
			{ smtd_show_all; fail "algo-$k did not end within $stall..$stall+2.5 s of the last progress line"; }
	done
}

# check_stacks FILE_TEXT...: rank N's stack file is on its own host only
# (ranks 2K-2 and 2K-1 on algo-K) and holds the text given for rank N.
check_stacks() {
	local k r dir want
	local -a texts=("$@")
	for ((k = 1; k <= MH_N; k++)); do
		dir=$(mh_host_dir $k)/ml/output/data/stacks
		want="rank-$((2 * k - 2)).txt rank-$((2 * k - 1)).txt"
		assert_eq "$(cd "$dir" 2>/dev/null && echo rank-*.txt)" "$want" "stack files on algo-$k"
		for r in $((2 * k - 2)) $((2 * k - 1)); do
			assert_contains "$dir/rank-$r.txt" "${texts[$r]}" "rank $r's stack on algo-$k"
		done
	done
}

# ---- 1. PyTorch DDP under torchrun ----
if ! /usr/bin/python3 -c 'import torch.distributed' 2>/dev/null; then
	skip_part "part 1" "Debian's python3-torch (/usr/bin/python3 -c 'import torch.distributed' fails)"
elif [ ! -x /usr/bin/torchrun ]; then
	skip_part "part 1" "/usr/bin/torchrun (python3-torch)"
else
	echo "---- torchrun"
	D=$T/ddp
	mkdir -p "$D/bin"
	# Debian's torchrun under Python 3.11 needs --redirects/--tee.
	ln -s "$HELPERS/torchrun_wrapper.sh" "$D/bin/torchrun"
	mh_setup 3 "$D"
	for k in 1 2 3; do
		smtd_hyper $k '{"sagemaker_program": "\"ddp_stall.py\"", "sagemaker_torch_distributed_enabled": "true", "sagemaker_stall_timeout": "5"}'
		cp "$HELPERS/ddp_stall.py" "$(mh_host_dir $k)/ml/code/"
	done
	sleep_at=$(line_of "$HELPERS/ddp_stall.py" "time.sleep(3600)")
	reduce_at=$(line_of "$HELPERS/ddp_stall.py" "dist.all_reduce(total)")
	stall_at=$(line_of "$HELPERS/ddp_stall.py" "stall_forever(rank, step)")
	t0=$EPOCHREALTIME
	for k in 1 2 3; do
		SMTD_MH_ENV="PATH=$D/bin:/usr/bin:/bin:/usr/sbin:/sbin SMT_STALL_RANK=3 SMT_STALL_STEP=3 SMT_STEPS=100000" \
			smtd_start $k --processes-per-host 2
	done
	stamp_leader
	smtd_wait_all 120
	echo "torchrun job: $(mh__elapsed "$t0") s from start to the last exit"
	check_timing 5 '<stdout>: rank [0-9]+ (step|: stopping)'
	summary="Stalled: no progress for 5 s; rank 3 on algo-2 is in time.sleep (ddp_stall.py:$sleep_at) while 5 ranks wait in dist.all_reduce (ddp_stall.py:$reduce_at)"
	for k in 1 2 3; do
		smtd_check $k 1 "--- rank 3 on algo-2: time.sleep (ddp_stall.py:$sleep_at) [odd]" \
			"--- 5 ranks (algo-1: 0, 1; algo-2: 2; algo-3: 4, 5): dist.all_reduce (ddp_stall.py:$reduce_at) [majority]"
		first=$(head -1 "$(smtd_failure $k)")
		if [ $k = 1 ]; then
			assert_eq "$first" "$summary" "the leader's failure summary"
		else
			assert_eq "$first" "$summary (reported by the leader algo-1)" "algo-$k's failure summary"
		fi
		[ "$(grep -c '^--- ' "$(smtd_failure $k)")" = 2 ] || fail "algo-$k's failure file does not list exactly 2 stacks"
	done
	all_reduce="File \"/opt/ml/code/ddp_stall.py\", line $reduce_at in main"
	check_stacks "$all_reduce" "$all_reduce" "$all_reduce" \
		"File \"/opt/ml/code/ddp_stall.py\", line $sleep_at in stall_forever" "$all_reduce" "$all_reduce"
	assert_contains "$D/algo-2/ml/output/data/stacks/rank-3.txt" \
		"File \"/opt/ml/code/ddp_stall.py\", line $stall_at in main" "the frame that called stall_forever"
	# Every stack in the leader's log, with the ranks that share it.
	log=$(smtd_console 1)
	assert_contains "$log" "warn: stacks: --- rank 3 on algo-2: time.sleep (ddp_stall.py:$sleep_at) [odd]" "rank 3's stack in the leader's log"
	assert_contains "$log" "warn: stacks:   File \"/opt/ml/code/ddp_stall.py\", line $sleep_at in stall_forever" "rank 3's frames in the leader's log"
	assert_contains "$log" "warn: stacks: --- 5 ranks (algo-1: 0, 1; algo-2: 2; algo-3: 4, 5): dist.all_reduce (ddp_stall.py:$reduce_at) [majority]" "the other ranks' stack in the leader's log"
	assert_contains "$log" "warn: stacks:   $all_reduce" "the other ranks' frames in the leader's log"
	smtd_nothing_left
	mh_teardown
fi

# ---- 2. mpi4py under mpirun ----
echo "---- mpi4py"
D=$T/mpi
mkdir -p "$D"
mh_setup 3 "$D"
for k in 1 2 3; do smtd_hyper $k '{"sagemaker_mpi_enabled": "true", "sagemaker_mpi_num_of_processes_per_host": "2"}'; done
sleep_at=$(line_of "$HELPERS/mpi_stall.py" "time.sleep(3600)")
barrier_at=$(line_of "$HELPERS/mpi_stall.py" "comm.Barrier()")
for k in 1 2 3; do
	smtd_start $k --stall-timeout 3 -- env SMT_STALL_RANK=4 /usr/bin/python3 -m mpi4py "$HELPERS/mpi_stall.py"
done
stamp_leader
smtd_wait_all 60
check_timing 3 '<stdout>: rank [0-9]+ of 6 ready'
summary="Stalled: no progress for 3 s; rank 4 on algo-3 is in time.sleep (mpi_stall.py:$sleep_at) while 5 ranks wait in comm.Barrier (mpi_stall.py:$barrier_at)"
for k in 1 2 3; do
	smtd_check $k 1 "--- rank 4 on algo-3: time.sleep (mpi_stall.py:$sleep_at) [odd]" \
		"--- 5 ranks (algo-1: 0, 1; algo-2: 2, 3; algo-3: 5): comm.Barrier (mpi_stall.py:$barrier_at) [majority]"
	first=$(head -1 "$(smtd_failure $k)")
	if [ $k = 1 ]; then
		assert_eq "$first" "$summary" "the leader's failure summary"
	else
		assert_eq "$first" "$summary (reported by the leader algo-1)" "algo-$k's failure summary"
	fi
done
barrier="File \"$HELPERS/mpi_stall.py\", line $barrier_at in main"
check_stacks "$barrier" "$barrier" "$barrier" "$barrier" \
	"File \"$HELPERS/mpi_stall.py\", line $sleep_at in stuck" "$barrier"
log=$(smtd_console 1)
assert_contains "$log" "warn: stacks: --- rank 4 on algo-3: time.sleep (mpi_stall.py:$sleep_at) [odd]" "rank 4's stack in the leader's log"
assert_contains "$log" "warn: stacks: --- 5 ranks (algo-1: 0, 1; algo-2: 2, 3; algo-3: 5): comm.Barrier (mpi_stall.py:$barrier_at) [majority]" "the other ranks' stack in the leader's log"
assert_contains "$log" "warn: stacks:   $barrier" "the other ranks' frames in the leader's log"
smtd_nothing_left
mh_teardown

# ---- 3. native ranks: read live by eu-stack before the job ends ----
if ! command -v eu-stack >/dev/null; then
	skip_part "part 3" "eu-stack (elfutils)"
	echo ok
	exit 0
fi
echo "---- native"
MPIDIR=$("$top_srcdir/tests/helpers/build-mpi.sh") || exit $?
D=$T/native
mkdir -p "$D"
mh_setup 3 "$D"
for k in 1 2 3; do
	smtd_hyper $k '{"sagemaker_mpi_enabled": "true", "sagemaker_mpi_num_of_processes_per_host": "2"}'
	smtd_start $k --stall-timeout 2 -- "$MPIDIR/mpi_job" sleep 600
done
stamp_leader
smtd_wait_all 60
check_timing 2 '<stdout>: rank [0-9]+ ready'
summary="Stalled: no progress for 2 s; all 6 ranks are in main"
for k in 1 2 3; do
	smtd_check $k 1
	want=$summary
	[ $k = 1 ] || want="$summary (reported by the leader algo-1)"
	assert_eq "$(head -1 "$(smtd_failure $k)")" "$want" "algo-$k's failure summary"
	grep -qxF -- "--- 6 ranks (algo-1: 0, 1; algo-2: 2, 3; algo-3: 4, 5): main" "$(smtd_failure $k)" ||
		fail "algo-$k's failure file: no line for the group of every rank"
done
check_stacks " sleep" " sleep" " sleep" " sleep" " sleep" " sleep"
for k in 1 2 3; do
	for r in $((2 * k - 2)) $((2 * k - 1)); do
		assert_contains "$(mh_host_dir $k)/ml/output/data/stacks/rank-$r.txt" " main" "rank $r's native stack"
	done
done
smtd_nothing_left
mh_teardown
echo ok
