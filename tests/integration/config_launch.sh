#!/bin/sh
# What smtd refuses to launch: a distribution it does not launch,
# a code directory that is a Python package, smtctl and socket paths the
# other hosts' shell would interpret, counts torchrun cannot run.  Each is
# exit 2, one line on stderr, the same line in ROOT/output/failure, and
# nothing launched: stand-ins for every launcher smtd could start record
# themselves if they run.
. "$top_srcdir/tests/lib.sh"
smt_tmpdir

mkdir "$T/bin"
for prog in mpirun torchrun smddprun smddpmprun neuron_parallel_compile; do
	printf '#!/bin/sh\necho "$0 $*" >>"%s/ran"\n' "$T" >"$T/bin/$prog"
	chmod +x "$T/bin/$prog"
done
PATH="$T/bin:$PATH"
export PATH
# No sshd for expect_config_error's runs (tests/lib.sh).
export SMTD_SSHD=never

R="$T/job"
C="$R/input/config"
mkdir -p "$C" "$R/output" "$R/code"
printf '{"current_host":"algo-1","hosts":["algo-1","algo-2"],"current_instance_type":"ml.p4d.24xlarge"}' \
	>"$C/resourceconfig.json"
printf 'print("ran")\n' >"$R/code/train.py"
HP="$C/hyperparameters.json"
LAUNCHES="smtd launches MPI (sagemaker_mpi_enabled), SMDataParallel (sagemaker_distributed_dataparallel_enabled, sagemaker_pytorch_ddp_enabled) and torchrun (sagemaker_torch_distributed_enabled)"

# Every distribution smtd does not launch, on the leader and on a worker,
# alone or next to one it launches.
for flag in sagemaker_pytorch_xla_multi_worker_enabled:"PyTorch XLA's multi-worker launcher" \
	sagemaker_parameter_server_enabled:"TensorFlow's parameter servers" \
	sagemaker_multi_worker_mirrored_strategy_enabled:"TensorFlow's MultiWorkerMirroredStrategy (TF_CONFIG)"; do
	name=${flag%%:*} what=${flag#*:}
	printf '{"sagemaker_program":"\\"train.py\\"","%s":"true"}' "$name" >"$HP"
	expect_config_error "$HP: $name: true asks for $what, which smtd does not launch; $LAUNCHES; run this job with the SageMaker training toolkit, or choose a launch with --launch"
	printf '{"sagemaker_program":"\\"train.py\\"","sagemaker_mpi_enabled":"true","%s":"true"}' "$name" >"$HP"
	expect_config_error "$HP: $name: true asks for $what, which smtd does not launch; $LAUNCHES; run this job with the SageMaker training toolkit, or choose a launch with --launch" \
		--current-host algo-2
done
# A sagemaker_*_enabled flag smtd does not know: a warning, and the job is
# planned as if it were absent; the PyTorch container's
# sagemaker_toolkit_native_launcher_enabled is a setting it knows: no warning.
printf '{"sagemaker_program":"\\"train.py\\"","sagemaker_torch_distributed_enabled":"true","sagemaker_fsdp_enabled":"true"}' >"$HP"
timeout 10 "$SMTD" --root "$R" --dry-run >"$T/out" 2>"$T/err" || fail "unknown setting refused: $(cat "$T/err")"
assert_contains "$T/out" "launch: torchrun (sagemaker_torch_distributed_enabled is true in hyperparameters.json)" "launch beside an unknown setting"
assert_contains "$T/out" "warning: $HP: sagemaker_fsdp_enabled: not a setting smtd knows (neither a distribution nor one of the toolkit's settings); the job runs as if it were absent" "unknown setting warned"
printf '{"sagemaker_program":"\\"train.py\\"","sagemaker_torch_distributed_enabled":"true","sagemaker_toolkit_native_launcher_enabled":"true"}' >"$HP"
timeout 10 "$SMTD" --root "$R" --dry-run >"$T/out" 2>"$T/err" || fail "native launcher setting refused: $(cat "$T/err")"
assert_not_contains "$T/out" "warning:" "native launcher setting warned"
# --launch decides alone: the plan stands.
"$SMTD" --root "$R" --dry-run --launch torchrun >"$T/out" 2>"$T/err" || fail "--launch torchrun: $(cat "$T/err")"
assert_contains "$T/out" "launch: torchrun (--launch torchrun (or SMTD_LAUNCH))" "--launch in the plan"

# A code directory that is a Python package runs as a module (the toolkit's
# PYTHON_PACKAGE entry point).
printf '{"sagemaker_program":"\\"train.py\\"","sagemaker_torch_distributed_enabled":"true"}' >"$HP"
printf 'from setuptools import setup\nsetup()\n' >"$R/code/setup.py"
"$SMTD" --root "$R" --dry-run >"$T/out" 2>"$T/err" || fail "a package: $(cat "$T/err")"
assert_contains "$T/out" "python3 -u -m train" "a package runs as a module"
rm "$R/code/setup.py"

# torchrun runs hosts x processes per host, nothing else.
expect_config_error "--num-processes (or SMTD_NUM_PROCESSES): 3, but torchrun runs hosts x processes per host (2 x 1 = 2); drop it, or set --processes-per-host" \
	--num-processes 3

# Paths that reach the other hosts' shell: a shell substitution or a double
# quote is refused (a space, ';' and a single quote are quoted: the golden
# plan mpi-4hosts-quoted and config_launch_agent.sh).
printf '{"sagemaker_program":"\\"train.py\\"","sagemaker_mpi_enabled":"true"}' >"$HP"
tail="which the shell of the other hosts would interpret: the path reaches them on the command lines that ssh and mpirun's orte_launch_agent run there; choose a path without \$ \` \" \\ or control characters"
expect_config_error "--socket (or SMTD_SOCKET): \"$T/\$(touch $T/pwned)/s.sock\" has '\$', $tail" \
	--socket "$T/\$(touch $T/pwned)/s.sock"
expect_config_error "--smtctl (or SMTD_SMTCTL): \"/opt/a\"b/smtctl\" has '\"', $tail" --smtctl '/opt/a"b/smtctl'
[ ! -e "$T/pwned" ] || fail "a path's command substitution ran"

# Model parallel needs a usable SM_DLC_TORCH_VERSION.
printf '{"sagemaker_program":"\\"train.py\\"","sagemaker_mpi_enabled":"true","mp_parameters":"{\\"partitions\\": 2}"}' >"$HP"
SM_DLC_TORCH_VERSION=latest expect_config_error "SM_DLC_TORCH_VERSION (smtd's environment): \"latest\" does not start with a major version number; set it as the image's PyTorch version (2.0.1) or unset it"
echo "PASS: refused launches"
