#!/bin/bash
# smtd(8) Restarts: restarts in place, on 3 simulated hosts x 2 ranks.
#  1. Real PyTorch DDP under torchrun (gloo, /usr/bin/python3), the
#     hyperparameter sagemaker_max_restarts 1: tests/helpers/ddp_ckpt.py
#     checkpoints every 4 steps on rank 0's host; in attempt 0 rank 4
#     raises at step 10; attempt 1 (SMTD_RESTART_COUNT=1) resumes at step
#     9 and finishes: success everywhere, attempts.json names attempt 0's
#     failure, every rank of attempt 1 started at 9.
#  2. A stalled attempt (mpi4py, --stall-timeout 3) restarts and the next
#     one succeeds; the stacks are under stacks/attempt-0/ on each host.
#  3. A failure that repeats (--max-restarts 2) uses every restart: the
#     failure file's first line ends "(attempt 3 of 3)", the next two
#     summarise attempts 1 and 2, all within 1024 bytes, on every host.
#  4. A host lost mid-job is not restarted (exit 3, no second attempt).
#  5. SIGTERM to every host while the restart waits (--restart-delay 30):
#     every host exits 143 and nothing starts.
#  6. smtctl restart on a healthy running job (--max-restarts 0) restarts
#     it; the second attempt succeeds.
#  7. Nothing of an attempt outlives it: in attempt 0 every rank
#     double-forks a daemon and one rank fails; every rank of attempt 1
#     finds no process of attempt 0 alive on its host (checked while smtd
#     runs, by the ranks themselves), and the marked lines are on the
#     leader's stdout and in the rank log files.
#  8. The preflight runs again before each attempt, on every host: a
#     --preflight-command that passes in attempt 0 and fails on algo-2
#     before attempt 1 (SMTD_RESTART_COUNT=1) ends the job on every host
#     as PreflightFailed naming algo-2, with restarts left; no rank of
#     attempt 1 runs, every host exits 1.
. "$top_srcdir/tests/multihost/prelude.sh"
HELPERS=$top_srcdir/tests/helpers
MPI_HP='{"sagemaker_mpi_enabled": "true", "sagemaker_mpi_num_of_processes_per_host": "2"}'

# attempts K: host K's attempts.json, one "ATTEMPT|FAILURE|STACKS" a line.
attempts() {
	/usr/bin/python3 -c '
import json, sys
for a in json.load(open(sys.argv[1]))["attempts"]:
    print("%d|%s|%s" % (a["attempt"], a.get("failure") or "", a.get("stacks") or ""))
' "$(mh_host_dir "$1")/ml/output/data/attempts.json" || fail "no attempts.json on algo-$1"
}

# start_mpi MODE OPTIONS...: restart_job.py in MODE on every host.
start_mpi() {
	local mode=$1 k
	shift
	for k in 1 2 3; do
		smtd_hyper $k "$MPI_HP"
		smtd_start $k "$@" -- env RJ_MODE="$mode" RJ_RANK=4 /usr/bin/python3 -m mpi4py \
			"$HELPERS/restart_job.py"
	done
}

# ---- 1. PyTorch DDP: checkpoint, fail, resume ----
if ! /usr/bin/python3 -c 'import torch.distributed' 2>/dev/null || [ ! -x /usr/bin/torchrun ]; then
	echo "SKIP (part 1): Debian's python3-torch and /usr/bin/torchrun are needed"
else
	echo "---- torchrun DDP, checkpoint and resume"
	D=$T/ddp
	mkdir -p "$D/bin"
	ln -s "$HELPERS/torchrun_wrapper.sh" "$D/bin/torchrun"
	mh_setup 3 "$D"
	for k in 1 2 3; do
		smtd_hyper $k '{"sagemaker_program": "\"ddp_ckpt.py\"", "sagemaker_torch_distributed_enabled": "true", "sagemaker_max_restarts": "1", "steps": "16", "every": "4", "raise_rank": "4", "raise_step": "10"}'
		cp "$HELPERS/ddp_ckpt.py" "$(mh_host_dir $k)/ml/code/"
	done
	for k in 1 2 3; do
		SMTD_MH_ENV="PATH=$D/bin:/usr/bin:/bin:/usr/sbin:/sbin" smtd_start $k --processes-per-host 2
	done
	smtd_wait_all 240
	for k in 1 2 3; do smtd_check $k 0; done
	out=$(smtd_console 1)
	assert_contains "$out" "ValueError: bad batch at step 10" "attempt 0's failure on the leader's stdout"
	for r in 0 1 2 3 4 5; do
		assert_contains "$out" "rank $r attempt 0 resumes at step 0" "rank $r's attempt 0"
		assert_contains "$out" "rank $r attempt 1 resumes at step 9" "rank $r resumed from the checkpoint"
		assert_contains "$out" "rank $r done: steps 9..16 of attempt 1" "rank $r finished attempt 1"
	done
	assert_contains "$out" "rank 0 checkpoint at step 8" "the checkpoint of attempt 0"
	for k in 1 2 3; do
		a=$(attempts $k)
		echo "algo-$k attempts: $a"
		[ "$(echo "$a" | wc -l)" = 2 ] || fail "algo-$k: attempts.json does not list 2 attempts"
		echo "$a" | head -1 | grep -q '^0|RankFailed: rank 4 on algo-3 .*ValueError: bad batch at step 10' ||
			fail "algo-$k: attempts.json does not name attempt 0's failure: $a"
		echo "$a" | tail -1 | grep -qx '1||' || fail "algo-$k: attempt 1 did not succeed: $a"
	done
	smtd_nothing_left
	mh_teardown
fi

# ---- 2. a stall restarts; the next attempt succeeds ----
echo "---- stall, then success"
D=$T/stall
mkdir -p "$D"
mh_setup 3 "$D"
start_mpi stall --stall-timeout 3 --max-restarts 1
smtd_wait_all 90
for k in 1 2 3; do smtd_check $k 0; done
for k in 1 2 3; do
	a=$(attempts $k)
	echo "$a" | head -1 | grep -q '^0|Stalled: no progress for 3 s; rank 4 on algo-3 is in time.sleep.*|stacks/attempt-0$' ||
		fail "algo-$k: attempt 0 is not the stall: $a"
	dir=$(mh_host_dir $k)/ml/output/data/stacks/attempt-0
	assert_eq "$(cd "$dir" 2>/dev/null && echo rank-*.txt)" "rank-$((2 * k - 2)).txt rank-$((2 * k - 1)).txt" \
		"stack files of attempt 0 on algo-$k"
done
assert_contains "$(mh_host_dir 3)/ml/output/data/stacks/attempt-0/rank-4.txt" "in main" "rank 4's stack"
assert_contains "$(smtd_console 1)" "rank 4 attempt 1 done" "attempt 1 ran to its end"
smtd_nothing_left
mh_teardown

# ---- 3. a failure that repeats uses every restart ----
echo "---- a repeated failure"
D=$T/repeat
mkdir -p "$D"
mh_setup 3 "$D"
start_mpi fail-always --max-restarts 2
smtd_wait_all 120
for k in 1 2 3; do
	smtd_check $k 1 "ValueError: bad batch in attempt 2"
	f=$(smtd_failure $k)
	l1=$(sed -n 1p "$f")
	case $l1 in
	"RankFailed: rank 4 on algo-3 "*"ValueError: bad batch in attempt 2 (attempt 3 of 3)"*) ;;
	*) fail "algo-$k's first line: $l1" ;;
	esac
	case $(sed -n 2p "$f") in
	"attempt 1 of 3: RankFailed: rank 4 on algo-3 "*"ValueError: bad batch in attempt 0") ;;
	*) fail "algo-$k's second line: $(sed -n 2p "$f")" ;;
	esac
	case $(sed -n 3p "$f") in
	"attempt 2 of 3: RankFailed: rank 4 on algo-3 "*"ValueError: bad batch in attempt 1") ;;
	*) fail "algo-$k's third line: $(sed -n 3p "$f")" ;;
	esac
	[ "$(head -3 "$f" | wc -c)" -le 1024 ] || fail "algo-$k: the summaries are not within 1024 bytes"
	[ "$(attempts $k | wc -l)" = 3 ] || fail "algo-$k: attempts.json does not list 3 attempts"
done
smtd_nothing_left
mh_teardown

# ---- 4. a lost host is not restarted ----
echo "---- a host lost mid-job"
D=$T/lost
mkdir -p "$D"
mh_setup 3 "$D"
start_mpi hold --max-restarts 2
smtd_wait_line 1 "rank 5 attempt 0 running" || { smtd_show_all; fail "attempt 0 did not run"; }
mh_vanish 3
for k in 1 2; do
	code=$(mh_wait $k 60) || fail "algo-$k did not end after losing algo-3"
	eval "EXIT_$k=$code"
done
smtd_check 1 3 "LostHost: worker algo-3 was lost"
assert_not_contains "$(smtd_console 1)" "attempt 1 starts" "a second attempt after a lost host"
mh_teardown

# ---- 5. SIGTERM while the restart waits ----
echo "---- SIGTERM during the restart's wait"
D=$T/term
mkdir -p "$D"
mh_setup 3 "$D"
start_mpi fail --max-restarts 1 --restart-delay 30
smtd_wait_line 1 "every host is ready for attempt 2" || { smtd_show_all; fail "no restart was prepared"; }
# As the platform does, to every host; the workers first, so that each
# has its own signal before the leader's stop reaches it.
for k in 3 2 1; do mh_kill $k TERM; done
smtd_wait_all 30
for k in 1 2 3; do
	code=EXIT_$k
	assert_eq "${!code}" 143 "algo-$k's exit code after SIGTERM between attempts"
done
assert_not_contains "$(smtd_console 1)" "attempt 1 starts" "an attempt after SIGTERM"
smtd_nothing_left
mh_teardown

# ---- 6. smtctl restart on a healthy job ----
echo "---- smtctl restart"
D=$T/ctl
mkdir -p "$D"
mh_setup 3 "$D"
start_mpi hold
smtd_wait_line 1 "rank 5 attempt 0 running" || { smtd_show_all; fail "attempt 0 did not run"; }
out=$(mh_exec 2 "$SMTCTL" restart 2>&1) && fail "smtctl restart on a worker succeeded: $out"
assert_eq "$out" "smtctl: cannot restart: this host is a worker: restart the job on the leader algo-1" \
	"smtctl restart on a worker"
out=$(mh_exec 1 "$SMTCTL" restart 2>&1) || fail "smtctl restart failed: $out"
assert_eq "$out" "restarting the job: attempt 1 ends, attempt 2 starts once every host has ended its part" \
	"smtctl restart's answer"
echo "smtctl restart: $out"
smtd_wait_all 60
for k in 1 2 3; do smtd_check $k 0; done
assert_contains "$(smtd_console 1)" "rank 0 attempt 1 done" "attempt 1 after smtctl restart"
a=$(attempts 1)
echo "$a" | head -1 | grep -qx '0|Restarted: on request (smtctl restart)|' ||
	fail "attempt 0's record after smtctl restart: $a"
smtd_nothing_left
mh_teardown

# ---- 7. nothing of an attempt outlives it ----
echo "---- a double-forked daemon of attempt 0"
D=$T/daemon
mkdir -p "$D"
mh_setup 3 "$D"
start_mpi daemon --max-restarts 1 --rank-log-dir /opt/ml/ranklogs
smtd_wait_all 90
for k in 1 2 3; do smtd_check $k 0; done
out=$(smtd_console 1)
for r in 0 1 2 3 4 5; do
	assert_contains "$out" "rank $r attempt 1 done" "rank $r's attempt 1"
done
assert_not_contains "$out" "is still alive" "a process of attempt 0 alive during attempt 1"
for k in 1 2 3; do
	n=$(ls "$(mh_host_dir $k)/ml/rj" | grep -c '^pid\.0\.daemon')
	assert_eq "$n" 2 "attempt 0's daemons recorded on algo-$k"
done
assert_contains "$out" "==== smtd: attempt 1 of at most 2 on algo-1 (SMTD_RESTART_COUNT=0) ====" "attempt 0's mark on stdout"
assert_contains "$out" "==== smtd: attempt 2 of at most 2 on algo-1 (SMTD_RESTART_COUNT=1) ====" "attempt 1's mark on stdout"
log=$(mh_host_dir 3)/ml/ranklogs/rank-4.log
assert_contains "$log" "==== smtd: attempt 1 of at most 2 on algo-3 (SMTD_RESTART_COUNT=0) ====" "attempt 0's mark in rank 4's log"
assert_contains "$log" "==== smtd: attempt 2 of at most 2 on algo-3 (SMTD_RESTART_COUNT=1) ====" "attempt 1's mark in rank 4's log"
[ "$(grep -n 'attempt 2 of at most' "$log" | cut -d: -f1)" -gt "$(grep -n 'rank 4 attempt 0 starts' "$log" | cut -d: -f1)" ] ||
	fail "rank 4's log: attempt 1's mark is not after attempt 0's lines"
smtd_nothing_left
mh_teardown

# ---- 8. the preflight again before each attempt ----
echo "---- a preflight that fails before attempt 2 on algo-2"
D=$T/pf
mkdir -p "$D/bin"
cat >"$D/bin/pf" <<'SH'
#!/bin/sh
echo "preflight of attempt $SMTD_RESTART_COUNT on $(hostname)"
if [ "$(hostname)" = algo-2 ] && [ "$SMTD_RESTART_COUNT" != 0 ]; then
	echo "ERROR: GPU 3 has 12 uncorrectable ECC errors" >&2
	exit 3
fi
SH
chmod +x "$D/bin/pf"
mh_setup 3 "$D"
start_mpi fail --max-restarts 2 --preflight-command "$D/bin/pf"
smtd_wait_all 90
line="PreflightFailed: algo-2: --preflight-command $D/bin/pf exited with code 3: ERROR: GPU 3 has 12 uncorrectable ECC errors (attempt 2 of 2)"
for k in 1 2 3; do
	smtd_check $k 1 "$line"
	f=$(smtd_failure $k)
	want=$line
	[ $k = 3 ] && want="$line (reported by the leader algo-1)"
	assert_eq "$(sed -n 1p "$f")" "$want" "algo-$k's first line"
	case $(sed -n 2p "$f") in
	"attempt 1 of 2: RankFailed: rank 4 on algo-3 "*"ValueError: bad batch in attempt 0") ;;
	*) fail "algo-$k's second line: $(sed -n 2p "$f")" ;;
	esac
	for a in 0 1; do
		grep -qF -- "--preflight-command on algo-$k: preflight of attempt $a on algo-$k" "$(smtd_console $k)" ||
			{ smtd_show_all; fail "algo-$k did not run its preflight for attempt $a"; }
	done
	a=$(attempts $k)
	echo "$a" | tail -1 | grep -qx "1|PreflightFailed: algo-2: .*uncorrectable ECC errors.*|" ||
		fail "algo-$k: attempts.json does not end with the preflight's failure: $a"
done
out=$(smtd_console 1)
assert_contains "$out" "rank 5 attempt 0 starts" "attempt 0's ranks"
assert_not_contains "$out" "attempt 1 starts" "a rank of attempt 1"
assert_not_contains "$out" "attempt 2 of at most 3 on algo-1" "attempt 1's launch"
assert_not_contains "$(smtd_console 1)" "restarting the job (2 restarts" "a restart after the failed preflight"
smtd_nothing_left
mh_teardown
echo ok
