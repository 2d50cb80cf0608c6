#!/bin/bash
# Real runs on 3 simulated hosts, smtd as every host's PID 1:
#  1. SMDataParallel (sagemaker_distributed_dataparallel_enabled) with a
#     stand-in smddprun on PATH: what reached each rank (SMDATAPARALLEL_*,
#     NCCL_*, EFA variables, its own host's SM_CURRENT_HOST, the image's
#     variables of its own host's smtd), and that the rank launcher starts
#     smddprun, which starts the program; and on one host, the single-node
#     setting.
#  2. Model parallel (mp_parameters) on the MPI path with a stand-in
#     smddpmprun: `smddpmprun -i TYPE --allow-bypass` before the program,
#     NCCL_PROTO=simple and NCCL_ALGO=ring as SM_DLC_TORCH_VERSION says (2.x),
#     and with torch 1.x and ddp_dist_backend nccl: NCCL_PROTO only, no
#     smddpmprun.
# The stand-ins record their argv and environment, then exec the rest.
. "$top_srcdir/tests/multihost/prelude.sh"
/usr/bin/python3 -c 'import mpi4py' 2>/dev/null || skip_tool "Debian's python3-mpi4py (/usr/bin/python3 -c 'import mpi4py' fails)"
command -v mpirun >/dev/null || skip_tool "mpirun (openmpi-bin)"
PROBE="$top_srcdir/tests/helpers/env_probe.py"
BASE_PATH=/usr/bin:/bin:/usr/sbin:/sbin

# stand_in DIR NAME: DIR/NAME records its argv (one word a line), its
# environment and the name of its parent in DIR/../rec/NAME.RANK.*, then
# runs the rest of its arguments (after `-i TYPE --allow-bypass` for
# smddpmprun).
stand_in() {
	cat >"$1/$2" <<EOF
#!/bin/sh
rec=$1/../rec/$2.\${OMPI_COMM_WORLD_RANK:-x}
printf '%s\n' "\$@" >"\$rec.argv"
env >"\$rec.env"
cat /proc/\$PPID/comm >"\$rec.parent"
while :; do
	case \$1 in
	-i) shift 2 ;;
	--allow-bypass) shift ;;
	*) break ;;
	esac
done
exec "\$@"
EOF
	chmod +x "$1/$2"
}

# job NAME HYPERPARAMETERS: a fresh set of 3 hosts whose code directory
# holds the probe, with the stand-ins in NAME/bin; sets D.
job() {
	echo "---- $1"
	D=$T/$1
	mkdir -p "$D/bin" "$D/rec" "$D/out"
	stand_in "$D/bin" smddprun
	stand_in "$D/bin" smddpmprun
	mh_setup 3 "$D"
	for k in 1 2 3; do
		smtd_hyper $k "$2"
		cp "$PROBE" "$(mh_host_dir $k)/ml/code/probe.py"
	done
}

# start_all [ENV...]: every host's smtd with the stand-ins first on PATH,
# IMAGE_HOST=image-algo-K (each host's image differs) and, on algo-3 only,
# IMAGE_ONLY_ALGO3; plus ENV on every host.
start_all() {
	local k extra
	for k in 1 2 3; do
		extra=
		[ $k = 3 ] && extra=IMAGE_ONLY_ALGO3=yes
		SMTD_MH_ENV="PATH=$D/bin:$BASE_PATH IMAGE_HOST=image-algo-$k $extra $*" smtd_start $k
	done
}

ok_all() {
	smtd_wait_all 60
	for k in 1 2 3; do smtd_check $k 0; done
	smtd_nothing_left
}

# check_ranks PYTHON: run PYTHON with r (each rank's report), host and
# stand-in files loaded; it asserts.
check_ranks() {
	/usr/bin/python3 - "$D" <<PY || { smtd_show_all; fail "$1: what reached the ranks is wrong"; }
import json, os, sys
D = sys.argv[1]
def lines(path):
    with open(path) as f:
        return f.read().splitlines()
def envfile(path):
    return dict(l.split("=", 1) for l in lines(path) if "=" in l)
for rank in range(6):
    host = "algo-%d" % (rank // 2 + 1)
    with open(os.path.join(D, "out", "rank-%d.json" % rank)) as f:
        r = json.load(f)
    e = r["env"]
    assert r["size"] == 6 and r["sum"] == 15, r
    assert r["gethostname"] == host, r
    assert e.get("SM_CURRENT_HOST") == host, (rank, e)
    assert e.get("IMAGE_HOST") == "image-" + host, (rank, e)
    assert ("IMAGE_ONLY_ALGO3" in e) == (host == "algo-3"), (rank, e)
$(cat)
print("$1: every rank saw what it should")
PY
}

# ---- 1. SMDataParallel with a stand-in smddprun ----
# The workers' image sets NCCL_DEBUG=TRACE: the job's own -x (WARN, from
# the custom options) wins over it.
job smddp '{"sagemaker_program": "\"probe.py\"", "sagemaker_distributed_dataparallel_enabled": "true",
	"sagemaker_mpi_num_of_processes_per_host": "2", "out": "'"$T"'/smddp/out",
	"sagemaker_distributed_dataparallel_custom_mpi_options": "--NCCL_DEBUG WARN -x SMT_CUSTOM=\"a b\""}'
t0=$EPOCHREALTIME
start_all NCCL_DEBUG=TRACE
ok_all
echo "smddp job: $(mh__elapsed "$t0") s from start to the last exit"
for r in 0 1 2 3 4 5; do
	assert_contains "$(smtd_console 1)" "[1,mpirank:$r,algo-$((r / 2 + 1))]<stdout>: rank $r of 6 on algo-$((r / 2 + 1)): sum 15" "rank $r's line on the leader"
done
check_ranks smddp <<'PY'
    assert e.get("SMDATAPARALLEL_USE_HOMOGENEOUS") == "1", (rank, e)
    assert "SMDATAPARALLEL_USE_SINGLENODE" not in e, (rank, e)
    assert e.get("SMDATAPARALLEL_SERVER_ADDR") == "algo-1", (rank, e)
    assert e.get("SMDATAPARALLEL_SERVER_PORT") == "7592", (rank, e)
    assert e.get("SAGEMAKER_INSTANCE_TYPE") == "ml.m5.xlarge", (rank, e)
    assert e.get("NCCL_SOCKET_IFNAME") == "eth0", (rank, e)
    assert e.get("NCCL_DEBUG") == "WARN", (rank, e)
    assert e.get("FI_PROVIDER") == "efa", (rank, e)
    assert e.get("RDMAV_FORK_SAFE") == "1", (rank, e)
    assert e.get("SMT_CUSTOM") == "a b", (rank, e)
    # ml.m5.xlarge is no EFA type; and this is no model-parallel job.
    for absent in ("NCCL_PROTO", "NCCL_ALGO", "FI_EFA_USE_DEVICE_RDMA", "NCCL_MIN_NRINGS"):
        assert absent not in e, (rank, absent, e)
    # The launcher started smddprun, which started the program, with
    # the toolkit's rank command and the user hyperparameters.
    argv = lines(os.path.join(D, "rec", "smddprun.%d.argv" % rank))
    assert argv == ["python3", "-m", "mpi4py", "/opt/ml/code/probe.py", "--out", D + "/out"], argv
    assert lines(os.path.join(D, "rec", "smddprun.%d.parent" % rank)) == ["smtctl"], rank
    assert r["parent"] == "smtctl", r  # smddprun exec'd the program
    se = envfile(os.path.join(D, "rec", "smddprun.%d.env" % rank))
    assert se.get("SMDATAPARALLEL_SERVER_ADDR") == "algo-1" and se.get("SM_CURRENT_HOST") == host, se
PY
mh_teardown

# ---- 1b. SMDataParallel on one host: plain host name, the single-node
# variable, no server ----
echo "---- smddp1"
D=$T/smddp1
mkdir -p "$D/bin" "$D/rec" "$D/out"
stand_in "$D/bin" smddprun
mh_setup 1 "$D"
smtd_hyper 1 '{"sagemaker_program": "\"probe.py\"", "sagemaker_distributed_dataparallel_enabled": "true",
	"sagemaker_mpi_num_of_processes_per_host": "2", "out": "'"$D"'/out"}'
cp "$PROBE" "$(mh_host_dir 1)/ml/code/probe.py"
SMTD_MH_ENV="PATH=$D/bin:$BASE_PATH" smtd_start 1
code=$(mh_wait 1 60) || fail "the one-host job did not end"
EXIT_1=$code
smtd_check 1 0
/usr/bin/python3 - "$D" <<'PY' || { smtd_show_all; fail "smddp1: what reached the ranks is wrong"; }
import json, os, sys
D = sys.argv[1]
for rank in range(2):
    r = json.load(open(os.path.join(D, "out", "rank-%d.json" % rank)))
    e = r["env"]
    assert r["size"] == 2 and r["gethostname"] == "algo-1", r
    assert e.get("SMDATAPARALLEL_USE_SINGLENODE") == "1", (rank, e)
    for absent in ("SMDATAPARALLEL_USE_HOMOGENEOUS", "SMDATAPARALLEL_SERVER_ADDR",
                   "SMDATAPARALLEL_SERVER_PORT", "SAGEMAKER_INSTANCE_TYPE"):
        assert absent not in e, (rank, absent, e)
    assert os.path.exists(os.path.join(D, "rec", "smddprun.%d.argv" % rank)), rank
print("smddp1: both ranks on one host saw the single-node setting")
PY
mh_teardown

# ---- 2. model parallel, torch 2: smddpmprun and both NCCL variables ----
job mp2 '{"sagemaker_program": "\"probe.py\"", "sagemaker_mpi_enabled": "true",
	"sagemaker_mpi_num_of_processes_per_host": "2", "out": "'"$T"'/mp2/out",
	"mp_parameters": "{\"partitions\": 2, \"microbatches\": 4, \"ddp\": true}"}'
t0=$EPOCHREALTIME
start_all SM_DLC_TORCH_VERSION=2.0.1
ok_all
echo "model-parallel job: $(mh__elapsed "$t0") s from start to the last exit"
check_ranks mp2 <<'PY'
    assert e.get("NCCL_PROTO") == "simple", (rank, e)
    assert e.get("NCCL_ALGO") == "ring", (rank, e)
    assert e.get("NCCL_DEBUG") == "INFO" and e.get("NCCL_MIN_NRINGS") == "4", (rank, e)
    assert not any(k.startswith("SMDATAPARALLEL_") for k in e), (rank, e)
    argv = lines(os.path.join(D, "rec", "smddpmprun.%d.argv" % rank))
    assert argv == ["-i", "ml.m5.xlarge", "--allow-bypass", "python3", "-m", "mpi4py",
                    "/opt/ml/code/probe.py", "--mp_parameters", "ddp=True,microbatches=4,partitions=2",
                    "--out", D + "/out"], argv
    assert lines(os.path.join(D, "rec", "smddpmprun.%d.parent" % rank)) == ["smtctl"], rank
    assert r["parent"] == "smtctl", r  # smddpmprun exec'd the program
    assert not os.path.exists(os.path.join(D, "rec", "smddprun.%d.argv" % rank)), rank
PY
mh_teardown

# ---- 2b. model parallel, torch 1, ddp_dist_backend nccl: NCCL_PROTO only,
# the program without smddpmprun ----
job mp1 '{"sagemaker_program": "\"probe.py\"", "sagemaker_mpi_enabled": "true",
	"sagemaker_mpi_num_of_processes_per_host": "2", "out": "'"$T"'/mp1/out",
	"mp_parameters": "{\"partitions\": 2, \"ddp_dist_backend\": \"nccl\"}"}'
start_all SM_DLC_TORCH_VERSION=1.13.1
ok_all
check_ranks mp1 <<'PY'
    assert e.get("NCCL_PROTO") == "simple", (rank, e)
    assert "NCCL_ALGO" not in e, (rank, e)
    assert e.get("SM_DLC_TORCH_VERSION") == "1.13.1", (rank, e)
    assert r["parent"] == "smtctl", r
    assert not os.path.exists(os.path.join(D, "rec", "smddpmprun.%d.argv" % rank)), rank
PY
mh_teardown
echo ok
