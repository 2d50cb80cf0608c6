#!/bin/bash
# Every distribution smtd does not launch, on a real start of
# smtd as PID 1 of 3 simulated hosts with sshd managed by smtd (not only
# --dry-run, which tests/integration/config_launch.sh covers): each host
# exits 2 at once with the one line on stderr and in its failure file, and
# nothing is launched - stand-ins for sshd, mpirun, torchrun, smddprun and
# smddpmprun record themselves if they run.
. "$top_srcdir/tests/multihost/prelude.sh"

D=$T/refused
mkdir -p "$D/bin"
for prog in sshd mpirun torchrun smddprun smddpmprun; do
	printf '#!/bin/sh\necho "$(hostname) $0 $*" >>"%s/ran"\n' "$D" >"$D/bin/$prog"
	# sshd works as well, in case it is started: the refusal is then late.
	[ $prog = sshd ] && echo 'exec /usr/sbin/sshd "$@"' >>"$D/bin/$prog"
	chmod +x "$D/bin/$prog"
done
mh_setup 3 "$D"
for k in 1 2 3; do printf 'print("ran")\n' >"$(mh_host_dir $k)/ml/code/train.py"; done
HP=/opt/ml/input/config/hyperparameters.json
LAUNCHES="smtd launches MPI (sagemaker_mpi_enabled), SMDataParallel (sagemaker_distributed_dataparallel_enabled, sagemaker_pytorch_ddp_enabled) and torchrun (sagemaker_torch_distributed_enabled)"

# refused HYPERPARAMETERS MESSAGE: every host started with HYPERPARAMETERS
# ends with exit 2 and MESSAGE, within a second, having launched nothing.
refused() {
	local k h t0 code took
	for k in 1 2 3; do
		h=$(mh_host_dir $k)
		smtd_hyper $k "$1"
		rm -f "$h/ml/output/failure" "$h/ml/output/success"
		: >"$h/console.log"
	done
	for k in 1 2 3; do
		SMTD_MH_ENV="PATH=$D/bin:/usr/bin:/bin:/usr/sbin:/sbin" smtd_start $k --sshd-path "$D/bin/sshd"
		# From the last host's start: starting a namespaced host takes
		# the harness 1-4 s on a loaded 2-core machine, which is not
		# smtd's time.
		t0=$EPOCHREALTIME
	done
	smtd_wait_all 30
	# Taken here: the checks below read files, slowly on a loaded machine.
	took=$(mh__elapsed "$t0")
	echo "refused on every host $took s after the last start: ${2:0:100}..."
	for k in 1 2 3; do
		code=EXIT_$k
		assert_eq "${!code}" 2 "algo-$k's exit code"
		assert_eq "$(cat "$(smtd_console $k)")" "smtd: $2" "algo-$k's stderr, one line"
		assert_eq "$(cat "$(smtd_failure $k)")" "ConfigurationError: $2" "algo-$k's failure file"
		[ ! -e "$(mh_host_dir $k)/ml/output/success" ] || fail "a success file on algo-$k"
	done
	[ ! -e "$D/ran" ] || fail "launched despite the refusal: $(cat "$D/ran")"
	# The refusal comes before anything is started: no host had time to
	# reach another.
	awk -v s="$took" 'BEGIN { exit !(s < 5) }' || fail "the refusal took $took s, more than 5 s"
}

for flag in sagemaker_pytorch_xla_multi_worker_enabled:"PyTorch XLA's multi-worker launcher" \
	sagemaker_parameter_server_enabled:"TensorFlow's parameter servers" \
	sagemaker_multi_worker_mirrored_strategy_enabled:"TensorFlow's MultiWorkerMirroredStrategy (TF_CONFIG)"; do
	name=${flag%%:*} what=${flag#*:}
	# Alone, and next to a distribution smtd launches: never a silent
	# other job.
	refused '{"sagemaker_program": "\"train.py\"", "'"$name"'": "true"}' \
		"$HP: $name: true asks for $what, which smtd does not launch; $LAUNCHES; run this job with the SageMaker training toolkit, or choose a launch with --launch"
	refused '{"sagemaker_program": "\"train.py\"", "sagemaker_mpi_enabled": "true", "'"$name"'": "true"}' \
		"$HP: $name: true asks for $what, which smtd does not launch; $LAUNCHES; run this job with the SageMaker training toolkit, or choose a launch with --launch"
done
# A sagemaker_*_enabled flag smtd does not know is a warning, not a
# refusal: the job runs (tests/integration/config_launch.sh checks the
# warning).
smtd_nothing_left
mh_teardown
echo ok
