#!/bin/bash
# Real jobs across 3 simulated hosts, smtd as every host's PID 1:
# C MPI_Allreduce, mpi4py with each rank's own host, custom MPI options
# with quoted values, and a worker that starts late.
. "$top_srcdir/tests/multihost/prelude.sh"
MPIDIR=$("$top_srcdir/tests/helpers/build-mpi.sh") || exit $?
trap 'smtd_show_all' ERR

hyper='{"sagemaker_mpi_enabled": "true", "sagemaker_mpi_num_of_processes_per_host": "2"}'

# ---- 1. C MPI_Allreduce, 3 hosts x 2 ranks ----
mkdir -p "$T/c"; mh_setup 3 "$T/c"
for k in 1 2 3; do smtd_hyper $k "$hyper"; done
t0=$EPOCHREALTIME
for k in 1 2 3; do smtd_start $k -- "$MPIDIR/mpi_job" allreduce; done
smtd_wait_all 60
echo "allreduce job: $(mh__elapsed "$t0") s from start to the last exit"
for k in 1 2 3; do
	code=EXIT_$k
	[ "${!code}" = 0 ] || { smtd_show_all; fail "algo-$k exited ${!code}"; }
	[ -f "$(mh_host_dir $k)/ml/output/success" ] || fail "no success file on algo-$k"
	[ ! -e "$(smtd_failure $k)" ] || fail "failure file on algo-$k"
done
for r in 0 1 2 3 4 5; do
	assert_contains "$(smtd_console 1)" "<stdout>: rank $r of 6: sum 15" "rank $r's line on the leader"
done
host_of_rank4=$(grep -o '\[1,mpirank:4,[^]]*\]' "$(smtd_console 1)" | head -1)
assert_eq "$host_of_rank4" "[1,mpirank:4,algo-3]" "rank 4 tagged with its host from mpirun's map"
spread=$(echo "$T_END_1 $T_END_2 $T_END_3" | tr ' ' '\n' | sort -n | awk 'NR==1{a=$1} END{printf "%.3f", $1-a}')
echo "hosts exited within $spread s of each other"
awk -v s="$spread" 'BEGIN { exit !(s < 1.0) }' || fail "hosts exited $spread s apart (> 1 s)"
mh_teardown

# ---- 1b. the same job with --log-format json: every console line is JSON,
# sshd's and ssh's messages included ----
mkdir -p "$T/json"; mh_setup 3 "$T/json"
for k in 1 2 3; do smtd_hyper $k "$hyper"; smtd_start $k --log-format json -- "$MPIDIR/mpi_job" allreduce; done
smtd_wait_all 60
for k in 1 2 3; do
	code=EXIT_$k
	[ "${!code}" = 0 ] || { smtd_show_all; fail "json: algo-$k exited ${!code}"; }
done
/usr/bin/python3 - "$(smtd_console 1)" "$(smtd_console 2)" "$(smtd_console 3)" <<'PY' || fail "a console line is not JSON"
import json, sys
ranks, sources = set(), set()
for path in sys.argv[1:]:
    for n, raw in enumerate(open(path, "rb"), 1):
        try:
            o = json.loads(raw)
        except ValueError:
            sys.exit("%s:%d: not JSON: %r" % (path, n, raw[:200]))
        if "rank" in o:
            ranks.add(o["rank"])
        elif "message" in o:
            sources.add(o["message"].split(":")[0])
assert ranks == set(range(6)), ranks
assert "sshd" in sources, sources
print("every console line of 3 hosts is JSON; ranks", sorted(ranks))
PY
mh_teardown

# ---- 2. mpi4py: every rank its own host; rank 0 writes the model ----
mkdir -p "$T/py"; mh_setup 3 "$T/py"
cat >"$T/py/gather.py" <<'PY'
import json, os, socket
from mpi4py import MPI
c = MPI.COMM_WORLD
me = {"rank": c.Get_rank(), "size": c.Get_size(),
      "SM_CURRENT_HOST": os.environ.get("SM_CURRENT_HOST"),
      "gethostname": socket.gethostname()}
everyone = c.gather(me, root=0)
if c.Get_rank() == 0:
    with open(os.path.join(os.environ["SM_MODEL_DIR"], "result.json"), "w") as f:
        json.dump(everyone, f)
PY
for k in 1 2 3; do
	smtd_hyper $k "$hyper"
	smtd_start $k -- /usr/bin/python3 -m mpi4py "$T/py/gather.py"
done
smtd_wait_all 60
for k in 1 2 3; do
	code=EXIT_$k
	[ "${!code}" = 0 ] || { smtd_show_all; fail "mpi4py: algo-$k exited ${!code}"; }
done
result="$(mh_host_dir 1)/ml/model/result.json"
[ -s "$result" ] || fail "no result.json in the leader's model directory"
/usr/bin/python3 - "$result" <<'PY' || fail "result.json: $(cat "$result")"
import json, sys
ranks = json.load(open(sys.argv[1]))
assert len(ranks) == 6, ranks
for r in ranks:
    host = "algo-%d" % (r["rank"] // 2 + 1)
    assert r["size"] == 6, r
    assert r["SM_CURRENT_HOST"] == host, r
    assert r["gethostname"] == host, r
print("every rank reports its own host:", [r["gethostname"] for r in ranks])
PY
mh_teardown

# ---- 3. custom MPI options with quoted values reach mpirun intact ----
mkdir -p "$T/opts"; mh_setup 3 "$T/opts"
opts='{"sagemaker_mpi_enabled": "true", "sagemaker_mpi_num_of_processes_per_host": "1", "sagemaker_mpi_custom_mpi_options": "-x SMT_QUOTED=\"a b  c\" -x SMT_SINGLE='"'"'$(not run)'"'"' --NCCL_DEBUG WARN"}'
cat >"$T/opts/env.py" <<'PY'
import os
from mpi4py import MPI
r = MPI.COMM_WORLD.Get_rank()
print("rank %d quoted=<%s> single=<%s> nccl=<%s>" % (r, os.environ.get("SMT_QUOTED"),
      os.environ.get("SMT_SINGLE"), os.environ.get("NCCL_DEBUG")), flush=True)
PY
for k in 1 2 3; do
	smtd_hyper $k "$opts"
	smtd_start $k -- /usr/bin/python3 -m mpi4py "$T/opts/env.py"
done
smtd_wait_all 60
for k in 1 2 3; do
	code=EXIT_$k
	[ "${!code}" = 0 ] || { smtd_show_all; fail "custom options: algo-$k exited ${!code}"; }
done
for r in 0 1 2; do
	assert_contains "$(smtd_console 1)" "rank $r quoted=<a b  c> single=<\$(not run)> nccl=<WARN>" "rank $r's environment"
done
mh_teardown

# ---- 4. a worker that starts 5 s after the leader ----
mkdir -p "$T/late"; mh_setup 3 "$T/late"
for k in 1 2 3; do smtd_hyper $k "$hyper"; done
smtd_start 1 -- "$MPIDIR/mpi_job" allreduce
smtd_start 2 -- "$MPIDIR/mpi_job" allreduce
# The leader waits; its status shows who is ready.
wait_until 20 'mh_exec 1 "$SMTCTL" status --json >"$T/late/status.json" 2>/dev/null &&
	grep -q "\"host\": *\"algo-2\", *\"ready\": *true" "$T/late/status.json"' \
	'algo-2 never became ready: $(cat "$T/late/status.json")'
grep -q '"state": *"waiting-for-peers"' "$T/late/status.json" || fail "the leader does not wait for algo-3: $(cat "$T/late/status.json")"
grep -q '"host": *"algo-3", *"ready": *false' "$T/late/status.json" || fail "algo-3 shown ready: $(cat "$T/late/status.json")"
mh_exec 1 "$SMTCTL" status >"$T/late/status.txt" || true
cat "$T/late/status.txt"
sleep 5
smtd_start 3 -- "$MPIDIR/mpi_job" allreduce
smtd_wait_all 60
for k in 1 2 3; do
	code=EXIT_$k
	[ "${!code}" = 0 ] || { smtd_show_all; fail "late worker: algo-$k exited ${!code}"; }
done
assert_contains "$(smtd_console 1)" "rank 5 of 6: sum 15" "the job ran after the late worker came"
echo ok
