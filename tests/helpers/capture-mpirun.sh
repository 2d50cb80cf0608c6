#!/bin/sh
# Record what smtd sees of real Open MPI jobs that fail, for the report
# tests (tests/unit/test_report.c), into tests/data/mpirun/CASE/:
#   mpirun.out, mpirun.err   mpirun's own stdout and stderr (its messages,
#                            the job map, the launcher's own complaints)
#   rank-R.out, rank-R.err   what rank R wrote, as its launcher hands it
#                            to smtd (tests/helpers/capture-launcher.py
#                            stands in for `smtctl rank`)
#   rank-R.status            how rank R ended: exit N, signal N, exec ERRNO
#   status                   mpirun's exit status
# Empty files are left out.  The job runs on this host under smtd's
# mpirun options (--display-map --tag-output, orte_abort_on_non_zero_status);
# this host's name is written as "vm".
#   top_builddir=build-san tests/helpers/capture-mpirun.sh
# Needs mpicc, mpirun (Open MPI 4.1) and Debian's python3 with mpi4py.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
export top_srcdir="$top" top_builddir="${top_builddir:-$top/build-san}"
bin=$("$top/tests/helpers/build-mpi.sh")
launcher="$top/tests/helpers/capture-launcher.py"
host=$(hostname)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
cp "$bin/mpi_job" ./mpi_job
printf '#!/bin/sh\necho never\n' >noexec.sh
chmod 644 noexec.sh
cat >val.py <<'PY'
from mpi4py import MPI
rank = MPI.COMM_WORLD.Get_rank()
print(f"rank {rank} starting", flush=True)


def f():
    raise ValueError("shapes do not match")
f() if rank == 1 else MPI.COMM_WORLD.Barrier()
PY

# capture CASE [MPIRUN-OPTIONS...] -- PROGRAM [ARGS...]
capture() {
	case=$1
	shift
	out="$top/tests/data/mpirun/$case"
	rm -rf "$out"
	mkdir -p "$out"
	opts=
	while [ "$1" != -- ]; do
		opts="$opts $1"
		shift
	done
	shift
	st=0
	# shellcheck disable=SC2086
	CAPTURE_DIR="$out" timeout 120 mpirun --allow-run-as-root $opts --display-map --tag-output \
		--mca orte_abort_on_non_zero_status 1 -x CAPTURE_DIR \
		"$launch" "$@" >"$out/mpirun.out" 2>"$out/mpirun.err" </dev/null || st=$?
	echo "mpirun exit $st" >"$out/status"
	for f in "$out"/*; do
		if [ -s "$f" ]; then
			sed -i -e "s/\\b$host\\b/vm/g" -e "s|$launcher|/usr/local/bin/smtctl|g" "$f"
		else
			rm -f "$f"
		fi
	done
	echo "$case: mpirun exit $st"
}

np2="-np 2 --oversubscribe"
launch=$launcher
capture ok $np2 -- ./mpi_job allreduce
capture exit3 $np2 -- ./mpi_job exit 1 3
capture segv $np2 -- ./mpi_job segv 1
capture sigkill $np2 -- ./mpi_job sigkill 1
capture abort $np2 -- ./mpi_job abort 1 7
capture improper $np2 -- ./mpi_job improper 1
capture python-valueerror $np2 -- /usr/bin/python3 -m mpi4py val.py
capture missing $np2 -- ./missing-prog
capture noexec $np2 -- ./noexec.sh
capture noslots -np 5 -- ./mpi_job allreduce
capture badhost -np 2 --host nosuchhost:2 -- ./mpi_job allreduce
capture badoption -np 2 --bogus-opt -- ./mpi_job allreduce
# The launcher itself is missing (smtctl not installed where orted runs).
launch=/opt/smtd/bin/smtctl
capture nolauncher $np2 -- ./mpi_job allreduce
