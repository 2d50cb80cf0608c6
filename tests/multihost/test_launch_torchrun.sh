#!/bin/bash
# smtd(8) torchrun: torchrun on every host, for real, on 3 simulated
# hosts with smtd as every host's PID 1: Debian's python3-torch (1.13),
# gloo, 2 processes per host of a small DDP program (tests/helpers/ddp_job.py).
#  1. Success: the toolkit's torchrun argv on every host, every process's
#     lines on the leader's stdout tagged with its rank and host, every rank
#     in the leader's /v1/status, success on every host.
#  2. A process raising on algo-2: every host ends within seconds with a
#     failure naming that rank, its host and the exception line.
#  3. SIGTERM to every host (the leader first, then the workers): every
#     process gets it once and has the grace to finish (it traps SIGTERM,
#     works on for 2 s, writes a file).
#  4. The link between the leader and algo-3 goes down mid-job
#     (--peer-timeout 5): the leader and algo-2 end LostHost naming
#     algo-3, algo-3 ends LostLeader naming algo-1, every host within
#     seconds of the peer timeout (torchrun's own rendezvous would wait
#     for its 30 s or more), nothing left.
#  5. The host algo-3 itself is lost (its link goes silent, then every
#     process on it is killed): the leader and algo-2 end LostHost naming
#     algo-3 within seconds of the peer timeout, nothing left.
# After each: every host's exit code and result file, no process left, and
# how soon after the last process (or the exception) every host ended.
# Each job starts 9 Python processes that import torch: five jobs, the
# fewest that prove these points, each timed.
#
# Debian's torchrun fails at start under Python 3.11 unless --redirects and
# --tee are given: the "torchrun" first on PATH records the argv
# smtd gave it and runs tests/helpers/torchrun_wrapper.sh, which adds them.
. "$top_srcdir/tests/multihost/prelude.sh"
/usr/bin/python3 -c 'import torch.distributed' 2>/dev/null ||
	skip_tool "Debian's python3-torch (/usr/bin/python3 -c 'import torch.distributed' fails)"
[ -x /usr/bin/torchrun ] || skip_tool "/usr/bin/torchrun (python3-torch)"
# LeakSanitizer's scan at smtd's exit is not smtd's end: measured 3.4 s
# between smtd's last log line ("exit code 0") and the host's end at load
# 45, most of the time this test's bounds were loosened for (leaks are
# checked by every other test).
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
SHARE_MAX=1.0
! ldd "$SMTD" 2>/dev/null | grep -q libasan || SHARE_MAX=1.5
DDP="$top_srcdir/tests/helpers/ddp_job.py"
WRAPPER="$top_srcdir/tests/helpers/torchrun_wrapper.sh"
GRACE=10

# job NAME HYPERPARAMETERS: a fresh set of 3 hosts with the program in
# their code directory and the recording torchrun in NAME/bin; sets D.
job() {
	echo "---- $1"
	D=$T/$1
	mkdir -p "$D/bin" "$D/rec" "$D/mark"
	cat >"$D/bin/torchrun" <<EOF
#!/bin/sh
printf '%s\n' "\$@" >"$D/rec/torchrun.\$(hostname)"
env >"$D/rec/torchrun-env.\$(hostname)"
exec "$WRAPPER" "\$@"
EOF
	chmod +x "$D/bin/torchrun"
	mh_setup 3 "$D"
	for k in 1 2 3; do
		smtd_hyper $k "$2"
		cp "$DDP" "$(mh_host_dir $k)/ml/code/ddp_job.py"
	done
	T0=$EPOCHREALTIME
	for k in 1 2 3; do
		SMTD_MH_ENV="PATH=$D/bin:/usr/bin:/bin:/usr/sbin:/sbin" smtd_start $k \
			--processes-per-host 2 --grace $GRACE --debug ${JOB_OPTS:-}
	done
}

# torchrun_share: how long after the last torchrun ended (as its host's
# smtd logged it) the last host ended: smtd's own share of the end, in
# SHARE, within a second (smtd(8) DESCRIPTION: every host within a second of the job's
# end); 1.5 s built with the sanitizers, whose exit alone took 1 s at load
# 45 (0.13 s from torchrun's end to smtd's last log line, 1.08 s to the
# host's end).
torchrun_share() {
	local last
	last=$(/usr/bin/python3 - "$D"/algo-*/console.log <<'PY'
import datetime, re, sys
end = 0
for path in sys.argv[1:]:
    for line in open(path, errors="replace"):
        m = re.match(r"(\S+)Z smtd\[algo-\d+\] info: torchrun \(pid \d+\) (ended|was killed)", line)
        if m:
            t = datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%f")
            end = max(end, t.replace(tzinfo=datetime.timezone.utc).timestamp())
print("%.3f" % end)
PY
)
	smtd_time_since "$last" >/dev/null
	SHARE=$SINCE
	echo "the last host ended $SHARE s after the last torchrun (smtd's share, bound $SHARE_MAX s)"
	awk -v s="$SHARE" -v m=$SHARE_MAX 'BEGIN { exit !(s >= 0 && s <= m) }' ||
		{ smtd_show_all; fail "the last host ended $SHARE s after the last torchrun (> $SHARE_MAX s): smtd's own end is slow"; }
}

# after_last_rank T0 WHAT: how long after the last process of the job
# ended (as its host's smtd logged it, --debug) the last host ended; in
# SINCE.
after_last_rank() {
	local last
	last=$(/usr/bin/python3 - "$D"/algo-*/console.log <<'PY'
import datetime, re, sys
end = 0
for path in sys.argv[1:]:
    for line in open(path, errors="replace"):
        m = re.match(r"(\S+)Z smtd\[algo-\d+\] debug: rank \d+ \(pid \d+\) (exited|was killed)", line)
        if m:
            t = datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%f")
            end = max(end, t.replace(tzinfo=datetime.timezone.utc).timestamp())
print("%.3f" % end)
PY
)
	echo -n "the last process ended $(awk -v a="$last" -v b="$1" 'BEGIN { printf "%.2f", a - b }') s after $2; "
	smtd_time_since "$last"
	# smtd's own share is held to a second (torchrun_share).  The whole
	# is torchrun's too: it needs 0.1 s to notice its processes' end
	# (PET_MONITOR_INTERVAL; 5 s without, which made this 3 to 6 s), then
	# waits at its exit barrier for the other hosts' torchrun and exits.
	# Measured (sanitized smtd, LeakSanitizer off): 2.21 s at load 10-17
	# (1.9 s of it torchrun, which waits at its exit barrier for the other
	# hosts' torchrun; 0.54 s smtd's share), 2.31-2.59 s at load 25-30,
	# 3.41 s at load 29 and 4.4 s at load 32-49 (this machine, shared).
	# Most of it is torchrun's and the sanitized exit's time, not smtd's:
	# the 3 s of the commits that made torchrun's end fast (526db3f,
	# cad846e) hold on a quiet machine only, so the whole stays at 4 s,
	# and smtd's own share, the part a regression of smtd would show in,
	# is held to its second below (torchrun_share).  The 4 s had been
	# reached by LeakSanitizer's exit scan (3.4 s at load 45; 5.7-6.2 s
	# in all with it), now off (detect_leaks=0 above).
	awk -v s="$SINCE" 'BEGIN { exit !(s <= 4) }' ||
		{ smtd_show_all; fail "the last host ended $SINCE s after the last process (> 4 s)"; }
	torchrun_share
}

# wait_marks NAME: every rank wrote D/mark/NAME.R.
wait_marks() {
	local r i
	for r in 0 1 2 3 4 5; do
		for ((i = 0; i < 3000; i++)); do
			[ -e "$D/mark/$1.$r" ] && break
			mh_running 1 || { smtd_show_all; fail "the leader ended before rank $r's $1"; }
			sleep 0.05
		done
		[ -e "$D/mark/$1.$r" ] || { smtd_show_all; fail "rank $r never wrote $1"; }
	done
}

hp() { # hp JSON-MEMBERS...: the job's hyperparameters with these added
	local IFS=,
	echo '{"sagemaker_program": "\"ddp_job.py\"", "sagemaker_torch_distributed_enabled": "true", "mark_dir": "'"$D"'/mark"'"${*:+, $*}"'}'
}

# ---- 1. success ----
D=$T/ok
job ok "$(hp '"hold": "'"$T"'/ok/release"')"
wait_marks ready
echo "every process trained $(mh__elapsed "$T0") s after the start"
mh_exec 1 "$SMTCTL" status --json >"$D/status.json" || fail "smtctl status on the leader failed"
t0=$EPOCHREALTIME
touch "$D/release"
smtd_wait_all 120
echo "torchrun job: $(mh__elapsed "$T0") s from start to the last exit"
for k in 1 2 3; do smtd_check $k 0; done
smtd_nothing_left
after_last_rank "$t0" "the release"
/usr/bin/python3 - "$D" "$SMTCTL" <<'PY' || { smtd_show_all; fail "the torchrun job"; }
import json, os, sys
D, smtctl = sys.argv[1], sys.argv[2]
# smtd's own argv stays the toolkit's (the wrapper adds --redirects/--tee).
for k in (1, 2, 3):
    with open(os.path.join(D, "rec", "torchrun.algo-%d" % k)) as f:
        argv = f.read().splitlines()
    launcher = argv[argv.index("--no_python") + 1:argv.index("python3")]
    assert argv[:argv.index("--no_python")] == [
        "--nnodes", "3", "--nproc_per_node", "2", "--master_addr", "algo-1",
        "--master_port", "7777", "--node_rank", str(k - 1)], argv
    assert launcher[0] == smtctl and launcher[-2:] == ["rank", "--"], argv
    assert argv[argv.index("python3"):] == [
        "python3", "-u", "/opt/ml/code/ddp_job.py", "--hold", D + "/release",
        "--mark_dir", D + "/mark"], argv
    # Its environment: the toolkit's variables, this host's SM_*, and
    # torchrun's monitor interval.
    with open(os.path.join(D, "rec", "torchrun-env.algo-%d" % k)) as f:
        env = dict(l.split("=", 1) for l in f.read().splitlines() if "=" in l)
    for name, value in (("NCCL_SOCKET_IFNAME", "eth0"), ("NCCL_PROTO", "simple"),
                        ("SM_CURRENT_HOST", "algo-%d" % k), ("PET_MONITOR_INTERVAL", "0.1")):
        assert env.get(name) == value, (k, name, env.get(name))
# Every rank in the leader's status, on its own host, running.
ranks = json.load(open(os.path.join(D, "status.json")))["job"]["ranks"]
seen = sorted((r["rank"], r["host"], r["state"]) for r in ranks)
assert seen == [(r, "algo-%d" % (r // 2 + 1), "running") for r in range(6)], seen
assert all(r.get("pid", 0) > 1 for r in ranks), ranks
print("torchrun argv and environment on every host as the toolkit's; every rank in the leader's status:", seen)
PY
for r in 0 1 2 3 4 5; do
	h=algo-$((r / 2 + 1))
	assert_contains "$(smtd_console 1)" "[1,mpirank:$r,$h]<stdout>: rank $r of 6 on $h: all-reduce 6.0 SM_CURRENT_HOST=$h NCCL_SOCKET_IFNAME=eth0 NCCL_PROTO=simple LOCAL_RANK=$((r % 2))" "rank $r's line on the leader"
	assert_contains "$(smtd_console 1)" "[1,mpirank:$r,$h]<stdout>: rank $r step 2 loss " "rank $r's last step on the leader"
	assert_contains "$(smtd_console 1)" "[1,mpirank:$r,$h]<stdout>: rank $r done" "rank $r's end on the leader"
done
mh_teardown

# ---- 2. a process raises on algo-2 ----
D=$T/raise
job raise "$(hp '"raise_rank": "3"')"
smtd_wait_all 120
echo "failed torchrun job: $(mh__elapsed "$T0") s from start to the last exit"
[ -s "$D/mark/raise.3" ] || fail "rank 3 did not raise"
smtd_time_since "$(cat "$D/mark/raise.3")"
for k in 1 2 3; do smtd_check $k 1 "rank 3" "algo-2" "ValueError: shapes do not match"; done
head -1 "$(smtd_failure 1)" | grep -q "rank 3.*algo-2\|algo-2.*rank 3" || fail "the summary line does not name rank 3 on algo-2: $(head -1 "$(smtd_failure 1)")"
assert_contains "$(smtd_console 1)" "[1,mpirank:3,algo-2]<stderr>: ValueError: shapes do not match" "rank 3's exception on the leader's stdout"
smtd_nothing_left
# Seconds, not the grace (10 s): the raising process prints its traceback
# and exits, its torchrun ends the other process and exits, the leader
# stops the other hosts, whose torchrun each exits.  Measured (LeakSanitizer
# off), from the rank's mark just before it raises: 1.84 s at load 10-17,
# 2.54 s at load 25, 3.38 s at load 30-54 (of which 0.72 s from the rank's
# exit to smtd's last log line on every host, the rest Python's exit and
# the sanitized smtd's).  cad846e's 2 s leaves no margin for those under
# load: 4 s (it had been loosened to 5, most of which was LeakSanitizer's
# exit scan); smtd's own share is held as above.
awk -v s="$SINCE" 'BEGIN { exit !(s <= 4) }' || { smtd_show_all; fail "the job took $SINCE s to end everywhere after the exception (> 4 s)"; }
torchrun_share
mh_teardown

# ---- 3. SIGTERM to every host ----
# A platform's stop reaches the hosts a moment apart: here the leader first,
# which passes the stop on to the workers at once, then the workers, once
# every process has its SIGTERM.  Each process traps it, works on for 2 s
# (a checkpoint) and ends; the grace is 10 s.
D=$T/term
job term "$(hp '"hold": "'"$T"'/term/never"' '"trap_term": "2"')"
wait_marks ready
t0=$EPOCHREALTIME
mh_kill 1 TERM
wait_marks term
mh_kill 2 TERM
mh_kill 3 TERM
smtd_wait_all 60
smtd_time_since "$t0"
stop=$SINCE
for k in 1 2 3; do smtd_check $k 143 "Stopped" "SIGTERM"; done
for r in 0 1 2 3 4 5; do
	[ -s "$D/mark/done.$r" ] || { smtd_show_all; fail "rank $r was killed before the end of its 2 s after SIGTERM (grace $GRACE s)"; }
done
smtd_nothing_left
# The processes need 2 s after SIGTERM; the hosts end within a second or
# so of them, long before the grace ends.
after_last_rank "$t0" "SIGTERM"
awk -v s="$stop" 'BEGIN { exit !(s >= 2) }' || fail "the stop took $stop s, but the processes needed 2 s"
# One stop, one SIGTERM for each process: a second one interrupts what
# the first one started (Python's second SIGINT breaks the cleanup of the
# first; many training loops take a second SIGTERM for "quit now").
twice=
for r in 0 1 2 3 4 5; do
	n=$(wc -l <"$D/mark/term.$r")
	[ "$n" = 1 ] || twice="$twice rank $r ($n times, on algo-$((r / 2 + 1)))"
done
[ -z "$twice" ] || fail "SIGTERM delivered more than once for one stop:$twice - the worker's smtd signals its ranks both for the leader's stop and for its own SIGTERM"
mh_teardown

# ---- 4. the link to algo-3 is lost ----
PT=5
D=$T/link
JOB_OPTS="--peer-timeout $PT" job link "$(hp '"hold": "'"$T"'/link/never"')"
wait_marks ready
t0=$EPOCHREALTIME
mh_link_down 3
smtd_wait_all 60
smtd_time_since "$t0"
smtd_check 1 3 "LostHost" "algo-3"
smtd_check 2 3 "algo-3"
smtd_check 3 3 "LostLeader" "algo-1"
smtd_nothing_left
# The peer timeout, then the ranks' and torchrun's end (SIGTERM, no
# trap: at once; torchrun's exit 0.5 to 2.5 s under load): measured 6.9 s
# (--peer-timeout + 1.9 s) at load 17-60.
awk -v s="$SINCE" -v pt=$PT 'BEGIN { exit !(s <= pt + 4) }' ||
	{ smtd_show_all; fail "the hosts ended $SINCE s after the link went down (> --peer-timeout $PT + 4 s)"; }
mh_teardown

# ---- 5. algo-3 is lost: the machine, not only its link ----
D=$T/host
JOB_OPTS="--peer-timeout $PT" job host "$(hp '"hold": "'"$T"'/host/never"')"
wait_marks ready
t0=$EPOCHREALTIME
mh_vanish 3
smtd_wait_all 60
smtd_time_since "$t0"
smtd_check 1 3 "LostHost" "algo-3"
smtd_check 2 3 "algo-3"
smtd_nothing_left
# As for the link: the peer timeout, then the torchruns' end.
awk -v s="$SINCE" -v pt=$PT 'BEGIN { exit !(s <= pt + 4) }' ||
	{ smtd_show_all; fail "the hosts ended $SINCE s after algo-3 was lost (> --peer-timeout $PT + 4 s)"; }
mh_teardown
echo ok
