#!/bin/bash
# The code directory is installed as the toolkit installs
# it, on every host at once, before any rank starts, by the job's Python
# (each host's own venv at /opt/ml/venv, first in PATH), with no network:
# a requirements.txt naming a local package directory; a package (setup.py)
# run as a module; a requirement pip cannot find -> InstallFailed on every
# host naming the host and pip's error line, no rank started;
# --no-install skips it.
. "$top_srcdir/tests/multihost/prelude.sh"
/usr/bin/python3 -c 'import venv, pip' 2>/dev/null || skip "no python3-venv or python3-pip (scripts/setup.sh)"

D=$T/inst
mkdir -p "$D"
mh_setup 3 "$D"
for k in 1 2 3; do
	h=$(mh_host_dir $k)
	# A local package, found by path: pip needs no index.  One copy per
	# host, as on real hosts: pip builds in the source directory, and three
	# builds in one directory at once take each other's files (a wheel
	# without the package, "installed" all the same).
	mkdir -p "$h/pkg/mypkg"
	printf 'from setuptools import setup\nsetup(name="mypkg", version="1.0", packages=["mypkg"])\n' >"$h/pkg/setup.py"
	printf 'X = 42\n' >"$h/pkg/mypkg/__init__.py"
	# The job's Python: a venv of Debian's (mpi4py from its site
	# packages), seen as /opt/ml/venv on its host only.
	/usr/bin/python3 -m venv --system-site-packages --without-pip "$h/ml/venv" ||
		fail "cannot make a venv"
	printf 'import socket, mypkg\nopen("%s/ran-" + socket.gethostname(), "w").close()\nprint("mypkg", mypkg.X, "on", socket.gethostname(), mypkg.__file__, "as", __spec__.name if __spec__ else "a script")\n' \
		"$D" >"$h/ml/code/train.py"
	echo "$h/pkg" >"$h/ml/code/requirements.txt"
done
export PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1
HP='{"sagemaker_program": "\"train.py\"", "sagemaker_mpi_enabled": "true", "sagemaker_mpi_num_of_processes_per_host": "1"}'

# run [SMTD ARGS...]: start every host with its venv first in PATH.
run() {
	local k h
	rm -f "$D"/ran-*
	for k in 1 2 3; do
		h=$(mh_host_dir $k)
		smtd_hyper $k "$HP"
		rm -rf "$h/ml/output/failure" "$h/ml/output/success" "$h/ml/output/data"
		: >"$h/console.log"
	done
	T0=$EPOCHREALTIME
	for k in 1 2 3; do
		SMTD_MH_ENV="PATH=/opt/ml/venv/bin:/usr/bin:/bin:/usr/sbin:/sbin" \
			smtd_start_to $k "$(mh_host_dir $k)/out" "$@"
	done
	smtd_wait_all 120
}

echo "---- requirements.txt naming a local package, on 3 hosts"
run
for k in 1 2 3; do smtd_check $k 0; done
for k in 1 2 3; do
	grep -qF "mypkg 42 on algo-$k /opt/ml/venv/lib/" "$(mh_host_dir 1)/out" &&
		grep "on algo-$k " "$(mh_host_dir 1)/out" | grep -qF " as a script" ||
		{ smtd_show_all; cat "$(mh_host_dir 1)/out" >&2; fail "the rank on algo-$k did not import mypkg from its venv"; }
	grep -qF "pip on algo-$k: running python3 -m pip install -r requirements.txt in /opt/ml/code" \
		"$(smtd_console $k)" || fail "algo-$k: pip's command not in the log"
	grep -qF "pip on algo-$k: Successfully installed mypkg-1.0" "$(smtd_console $k)" ||
		fail "algo-$k: pip's output not in the log"
done
echo "installed and imported on every host ($(mh__elapsed "$T0") s)"

echo "---- a requirement pip cannot find, on algo-2"
echo "smt-no-such-package-xyz" >>"$(mh_host_dir 2)/ml/code/requirements.txt"
run
LINE="InstallFailed: algo-2: pip install in /opt/ml/code exited with code 1: ERROR: Could not find a version that satisfies the requirement smt-no-such-package-xyz (from versions: none)"
for k in 1 2 3; do
	smtd_check $k 1 "$LINE"
	first=$(head -1 "$(smtd_failure $k)")
	if [ $k = 3 ]; then
		assert_eq "$first" "$LINE (reported by the leader algo-1)" "algo-$k's first line"
	else
		assert_eq "$first" "$LINE" "algo-$k's first line"
	fi
done
ls "$D"/ran-* >/dev/null 2>&1 && fail "a rank ran: $(ls "$D"/ran-*)"
smtd_nothing_left

echo "---- --no-install: pip does not run"
run --no-install
for k in 1 2 3; do
	smtd_check $k 0
	assert_not_contains "$(smtd_console $k)" "pip on algo-$k" "algo-$k ran pip with --no-install"
done

echo "---- a package (setup.py) is installed and run as a module"
for k in 1 2 3; do
	h=$(mh_host_dir $k)
	rm "$h/ml/code/requirements.txt"
	printf 'from setuptools import setup\nsetup(name="trainer", version="1.0", py_modules=["train"])\n' \
		>"$h/ml/code/setup.py"
done
run
for k in 1 2 3; do
	smtd_check $k 0
	grep -qF "pip on algo-$k: running python3 -m pip install . in /opt/ml/code" "$(smtd_console $k)" ||
		fail "algo-$k: not installed as a package"
	grep -qF "mypkg 42 on algo-$k" "$(mh_host_dir 1)/out" || fail "no rank ran on algo-$k"
done
# The module ran (python3 -m mpi4py -m train), not the file.
for k in 1 2 3; do
	grep -qF "mypkg 42 on algo-$k /opt/ml/venv/lib/python3" "$(mh_host_dir 1)/out" &&
		grep "on algo-$k " "$(mh_host_dir 1)/out" | grep -qF " as train" ||
		{ cat "$(mh_host_dir 1)/out" >&2; fail "algo-$k did not run the package as a module"; }
done
smtd_nothing_left
mh_teardown
echo ok
