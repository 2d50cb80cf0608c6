#!/bin/bash
# Preflight on 3 simulated hosts.  Each host checks itself
# before the launch (its probe root stands for /dev, /proc and /sys: GPUs,
# EFA devices, /dev/shm) and runs --preflight-command; one bad host ends
# the job on every host as PreflightFailed (exit 1) before any rank runs,
# naming that host and the check.  With every check passing the job runs
# as before, and preflight.json holds every host's results.
. "$top_srcdir/tests/multihost/prelude.sh"

D=$T/pf
SHM=$D/probe-1/dev/shm
# The small /dev/shm of algo-1 is a tmpfs of 64 MiB, mounted before the
# hosts start (their mount namespaces copy it) and unmounted at the end.
cleanup_shm() { mountpoint -q "$SHM" && { umount "$SHM" || umount -l "$SHM"; }; true; }
trap 'cleanup_shm; rm -rf "$T"' EXIT
mkdir -p "$D/bin"
mh_setup 3 "$D"
for k in 1 2 3; do
	mkdir -p "$D/probe-$k/dev/shm" "$D/probe-$k/proc/driver/nvidia/gpus" "$D/probe-$k/sys/class/infiniband"
	# Every rank that starts leaves a mark.
	printf 'import socket\nopen("%s/ran-" + socket.gethostname(), "w").close()\nprint("rank on", socket.gethostname())\n' \
		"$D" >"$(mh_host_dir $k)/ml/code/train.py"
done
mount -t tmpfs -o size=64m smt-test-shm "$SHM" || fail "cannot mount a small tmpfs on $SHM"

# GPUs: 4 on each host (a ml.p3.8xlarge), nvidia2 missing on algo-2.
for k in 1 2 3; do
	for g in 0 1 2 3; do
		[ $k = 2 ] && [ $g = 2 ] && continue
		mknod "$D/probe-$k/dev/nvidia$g" c 1 3
		mkdir -p "$D/probe-$k/proc/driver/nvidia/gpus/0000:00:1$g.0"
	done
done
# EFA: 8 devices bound to efa on algo-1 and algo-2 (a ml.trn1.32xlarge),
# none on algo-3; a device of another driver does not count.
for k in 1 2; do
	for e in 0 1 2 3 4 5 6 7; do
		mkdir -p "$D/probe-$k/sys/class/infiniband/rdmap${e}s0/device"
		ln -s ../../../../bus/pci/drivers/efa "$D/probe-$k/sys/class/infiniband/rdmap${e}s0/device/driver"
	done
done
mkdir -p "$D/probe-3/sys/class/infiniband/mlx5_0/device"
ln -s ../../../../bus/pci/drivers/mlx5_core "$D/probe-3/sys/class/infiniband/mlx5_0/device/driver"

# A preflight command that fails on algo-2, one that hangs on algo-3.
cat >"$D/bin/check" <<'SH'
#!/bin/sh
echo "checking $(hostname)"
if [ "$(hostname)" = algo-2 ]; then
	echo "ERROR: all_reduce bus bandwidth 12.1 GB/s, expected at least $2" >&2
	exit 4
fi
SH
cat >"$D/bin/hang" <<'SH'
#!/bin/sh
[ "$(hostname)" = algo-3 ] && exec sleep 1000
echo "fine on $(hostname)"
SH
chmod +x "$D/bin/check" "$D/bin/hang"
# An image whose python3 has no torch (a job that does not use PyTorch):
# smtd looks for torch in the site directories of the python3 it finds on
# PATH, and finds none for a program that is not pythonX.Y; the ranks still
# run Debian's python3 with mpi4py.
mkdir -p "$D/notorch"
printf '#!/bin/sh\nexec /usr/bin/python3 "$@"\n' >"$D/notorch/python3"
chmod +x "$D/notorch/python3"

HP_MPI='{"sagemaker_program": "\"train.py\"", "sagemaker_mpi_enabled": "true", "sagemaker_mpi_num_of_processes_per_host": "1"}'

# instance_type TYPE: every host's resourceconfig.json names TYPE.
instance_type() {
	local k f
	for k in 1 2 3; do
		f=$(mh_host_dir $k)/ml/input/config/resourceconfig.json
		sed -i "s/\"ml\.[a-z0-9.]*\"/\"$1\"/g" "$f"
	done
}

# run HYPERPARAMETERS [SMTD ARGS...]: start every host, wait for all.
run() {
	local k h hp=$1
	shift
	rm -f "$D"/ran-*
	for k in 1 2 3; do
		h=$(mh_host_dir $k)
		smtd_hyper $k "$hp"
		rm -rf "$h/ml/output/failure" "$h/ml/output/success" "$h/ml/output/data"
		: >"$h/console.log"
	done
	T0=$EPOCHREALTIME
	for k in 1 2 3; do
		SMTD_MH_ENV="PATH=$D/notorch:/usr/bin:/bin:/usr/sbin:/sbin SMTD_GPU_PROBE_ROOT=$D/probe-$k" \
			smtd_start $k "$@"
	done
	smtd_wait_all 60
}

# failed HOST FIRST_LINE [leader]: every host exited 1 with HOST's
# FIRST_LINE (the other hosts: as reported by the leader; with "leader",
# HOST too: the leader found it), no rank ran, nothing is left, and the
# leader's preflight.json has HOST's failure.
failed() {
	local host=$1 line=$2 by=${3:-} k first
	for k in 1 2 3; do
		smtd_check $k 1 "$line"
		first=$(head -1 "$(smtd_failure $k)")
		if { [ "algo-$k" = "$host" ] && [ -z "$by" ]; } || [ $k = 1 ]; then
			assert_eq "$first" "$line" "algo-$k's first line"
		else
			assert_eq "$first" "$line (reported by the leader algo-1)" "algo-$k's first line"
		fi
	done
	ls "$D"/ran-* >/dev/null 2>&1 && fail "a rank ran: $(ls "$D"/ran-*)"
	smtd_nothing_left
	local pj=$(mh_host_dir 1)/ml/output/data/preflight.json
	[ -s "$pj" ] || fail "no preflight.json on the leader"
	python3 - "$pj" "$host" "$line" <<'PY' || fail "preflight.json: $(cat "$pj")"
import json, sys
d = {r["host"]: r for r in json.load(open(sys.argv[1]))}
r = d[sys.argv[2]]
assert r["state"] == "failed", r
assert r["failure"] == sys.argv[3], (r["failure"], sys.argv[3])
PY
	echo "every host: $line ($(mh__elapsed "$T0") s)"
}

echo "---- a GPU missing on algo-2"
instance_type ml.p3.8xlarge
run "$HP_MPI"
failed algo-2 "PreflightFailed: algo-2: 3 of 4 GPUs visible (no /dev/nvidia2)"

echo "---- a type smtd does not know: algo-2 sees fewer GPUs than the others"
instance_type ml.m5.xlarge
run "$HP_MPI"
failed algo-2 "PreflightFailed: algo-2: 3 GPUs visible, where algo-1 of the same instance type ml.m5.xlarge sees 4" leader

echo "---- no EFA device on algo-3"
instance_type ml.trn1.32xlarge
run "$HP_MPI"
failed algo-3 "PreflightFailed: algo-3: 0 of 8 EFA devices of ml.trn1.32xlarge (/sys/class/infiniband/* bound to the efa driver); without them the job runs over TCP or hangs"

echo "---- a small /dev/shm on algo-1 (--min-shm 1G)"
instance_type ml.m5.xlarge
run "$HP_MPI" --min-shm 1G
failed algo-1 "PreflightFailed: algo-1: /dev/shm is 64 MiB, less than --min-shm 1 GiB (PyTorch's DataLoader workers die with \"bus error\")"

echo "---- --preflight-command fails on algo-2"
run "$HP_MPI" --preflight-command "$D/bin/check --min-busbw 90"
failed algo-2 "PreflightFailed: algo-2: --preflight-command $D/bin/check exited with code 4: ERROR: all_reduce bus bandwidth 12.1 GB/s, expected at least 90"
grep -qF -- "--preflight-command on algo-2: checking algo-2" "$(smtd_console 2)" || fail "the command's output is not in algo-2's log"

echo "---- sagemaker_preflight_command hangs on algo-3 (--preflight-timeout 2)"
run '{"sagemaker_program": "\"train.py\"", "sagemaker_mpi_enabled": "true", "sagemaker_mpi_num_of_processes_per_host": "1", "sagemaker_preflight_command": "\"'"$D"'/bin/hang\""}' \
	--preflight-timeout 2
failed algo-3 "PreflightFailed: algo-3: --preflight-command did not end within 2 s (--preflight-timeout)"

echo "---- every check passes: the job runs as before"
mknod "$D/probe-2/dev/nvidia2" c 1 3
mkdir -p "$D/probe-2/proc/driver/nvidia/gpus/0000:00:12.0"
# The small /dev/shm of a job that does not use PyTorch is a warning.
run "$HP_MPI" --preflight-command "/bin/echo preflight is fine"
for k in 1 2 3; do
	smtd_check $k 0
	grep -qF -- "--preflight-command on algo-$k: preflight is fine" "$(smtd_console $k)" ||
		fail "the command's output is not in algo-$k's log"
done
for k in 1 2 3; do [ -e "$D/ran-algo-$k" ] || fail "no rank ran on algo-$k"; done
grep -qF "preflight on algo-1: /dev/shm is 64 MiB, less than --min-shm 1 GiB (a warning: the ranks do not use PyTorch)" \
	"$(smtd_console 1)" || { smtd_show_all; fail "no warning for the small /dev/shm"; }
python3 - "$(mh_host_dir 1)/ml/output/data/preflight.json" <<'PY' || fail "preflight.json of a passing job"
import json, sys
l = json.load(open(sys.argv[1]))
assert [r["host"] for r in l] == ["algo-1", "algo-2", "algo-3"], l
d = {r["host"]: r for r in l}
for host, r in d.items():
    assert r["state"] == "passed" and r["host"] == host, r
    assert any(c["check"] == "shm" for c in r["checks"]), r
    assert r["gpus"] == 4, r
    # The built-in checks and the command, timed on the host.
    print(host, "built-in checks", r["builtin_microseconds"] / 1000.0, "ms, the phase",
          r["microseconds"] / 1000.0, "ms")
PY
smtd_nothing_left
cleanup_shm
mh_teardown
echo ok
