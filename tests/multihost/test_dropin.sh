#!/bin/bash
# Real jobs on 3 simulated hosts, smtd as every host's PID 1, the
# configurations SageMaker really hands a container:
#  1. A tuning job whose program is in a subdirectory: hyperparameters.json
#     has _tuning_objective_metric (SageMaker's), list and dict values and a
#     float; sagemaker_program is sub/train.py, which imports mypkg from the
#     code directory and parses its arguments with argparse's parse_args()
#     (an unknown argument is exit 2).  Every rank on every host must get
#     the toolkit's arguments and SM_HPS, and import mypkg.
#  2. A real torch DDP job under MPI (gloo, /usr/bin/python3) that
#     initialises with init_method="env://" and sets no variable of its own:
#     MASTER_ADDR and MASTER_PORT come from smtd, as from the PyTorch
#     container's training code.
. "$top_srcdir/tests/multihost/prelude.sh"
/usr/bin/python3 -c 'import mpi4py' 2>/dev/null || skip "Debian's python3-mpi4py is needed"
command -v mpirun >/dev/null || skip "mpirun (Open MPI) is needed"
trap 'smtd_show_all' ERR

ok_all() {
	smtd_wait_all "$1"
	for k in 1 2 3; do smtd_check $k 0; done
	smtd_nothing_left
}

# ---- 1. a tuning job, program in a subdirectory ----
D=$T/tuning
mkdir -p "$D/out"
mh_setup 3 "$D"
for k in 1 2 3; do
	c=$(mh_host_dir $k)/ml/code
	mkdir -p "$c/sub" "$c/mypkg"
	printf 'NAME = "mypkg from the code root"\n' >"$c/mypkg/__init__.py"
	cat >"$c/sub/train.py" <<'PY'
import argparse, json, os
import mypkg
from mpi4py import MPI

p = argparse.ArgumentParser()
for name in ("--lr", "--layers", "--opts", "--out"):
    p.add_argument(name)
a = p.parse_args()  # exit 2 on any argument it does not know
rank = MPI.COMM_WORLD.Get_rank()
with open(os.path.join(a.out, "rank-%d.json" % rank), "w") as f:
    json.dump({"args": vars(a), "pkg": mypkg.NAME, "hps": os.environ["SM_HPS"],
               "user_args": os.environ["SM_USER_ARGS"], "host": os.environ["SM_CURRENT_HOST"],
               "pythonpath": os.environ["PYTHONPATH"]}, f)
PY
	smtd_hyper $k '{"sagemaker_program": "\"sub/train.py\"", "sagemaker_mpi_enabled": "true",
		"_tuning_objective_metric": "\"validation:accuracy\"", "sagemaker_job_name": "\"tuning-job-001\"",
		"lr": "0.1", "layers": "[64, 32]", "opts": "{\"b\": 1, \"a\": \"x\"}", "out": "\"'"$D"'/out\""}'
done
for k in 1 2 3; do smtd_start $k; done
ok_all 60
/usr/bin/python3 - "$D/out" "$(mh_host_dir 1)/ml/code" <<'PY' || { smtd_show_all; fail "tuning job: what reached the ranks is wrong"; }
import json, os, sys
out, code = sys.argv[1:]
for rank in range(3):
    with open(os.path.join(out, "rank-%d.json" % rank)) as f:
        r = json.load(f)
    host = "algo-%d" % (rank + 1)
    assert r["host"] == host, r
    assert r["pkg"] == "mypkg from the code root", r
    assert r["args"] == {"lr": "0.1", "layers": "[64, 32]", "opts": "a=x,b=1", "out": out}, r
    assert r["hps"] == '{"layers":[64,32],"lr":0.1,"opts":{"a":"x","b":1},"out":"%s"}' % out, r
    assert json.loads(r["user_args"]) == ["--layers", "[64, 32]", "--lr", "0.1", "--opts", "a=x,b=1", "--out", out], r
    assert r["pythonpath"].split(":")[0].endswith("/ml/code"), r
print("tuning job: 3 ranks on 3 hosts parsed the toolkit's arguments and imported mypkg")
PY
mh_teardown

# ---- 2. torch DDP under MPI, env:// ----
/usr/bin/python3 -c 'import torch.distributed' 2>/dev/null || skip "Debian's python3-torch is needed"
D=$T/ddp
mkdir -p "$D/out"
mh_setup 3 "$D"
for k in 1 2 3; do
	cat >"$(mh_host_dir $k)/ml/code/ddp.py" <<'PY'
import json, os, sys
import torch
import torch.distributed as dist

# Only what mpirun gives: the rank and the size.  MASTER_ADDR/MASTER_PORT are smtd's.
dist.init_process_group("gloo", init_method="env://",
                        rank=int(os.environ["OMPI_COMM_WORLD_RANK"]),
                        world_size=int(os.environ["OMPI_COMM_WORLD_SIZE"]))
t = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(t)
with open(os.path.join(sys.argv[2], "rank-%d.json" % dist.get_rank()), "w") as f:
    json.dump({"sum": t.item(), "master": os.environ["MASTER_ADDR"], "port": os.environ["MASTER_PORT"],
               "version": os.environ["SM_DLC_TORCH_VERSION"], "torch": torch.__version__}, f)
dist.destroy_process_group()
PY
	smtd_hyper $k '{"sagemaker_program": "\"ddp.py\"", "sagemaker_mpi_enabled": "true", "out": "\"'"$D"'/out\""}'
done
for k in 1 2 3; do smtd_start $k; done
ok_all 120
/usr/bin/python3 - "$D/out" <<'PY' || { smtd_show_all; fail "torch DDP job: wrong result"; }
import json, os, sys
for rank in range(3):
    with open(os.path.join(sys.argv[1], "rank-%d.json" % rank)) as f:
        r = json.load(f)
    assert r["sum"] == 6.0, r
    assert (r["master"], r["port"]) == ("algo-1", "7777"), r
    assert r["version"] == r["torch"], r
print("torch DDP: 3 ranks initialised with env:// and all-reduced 6")
PY
mh_teardown
echo "PASS: drop-in jobs"
