#!/bin/sh
# A single-host MPI job under smtd with the real mpirun: success, tagged
# output of every rank, and the failure report for each way a rank fails.
. "$top_srcdir/tests/lib.sh"
smt_tmpdir
MPIDIR=$("$top_srcdir/tests/helpers/build-mpi.sh") || exit $?
JOB="$MPIDIR/mpi_job"
HOST=$(hostname)
mkdir -p "$T/root"
# Debian's python3 has mpi4py; the one first on PATH here may not.
export PATH="/usr/bin:$PATH"
export OMPI_MCA_odls_base_sigkill_timeout=0

run() { # run NAME SMTD-ARGS... -> $rc, $T/NAME.out, $T/NAME.err
	name=$1; shift
	rm -rf "$T/root/output"
	rc=0
	timeout 120 "$SMTD" --root "$T/root" --sshd never --mpi --processes-per-host 2 \
		--mpi-options "--oversubscribe" "$@" >"$T/$name.out" 2>"$T/$name.err" || rc=$?
}

# 1. C MPI_Allreduce on 2 ranks.
run allreduce -- "$JOB" allreduce
assert_eq "$rc" 0 "exit code of the allreduce job"
[ -f "$T/root/output/success" ] || fail "no success file"
assert_contains "$T/allreduce.out" "[1,mpirank:0,$HOST]<stdout>: rank 0 of 2: sum 1" "rank 0 tagged"
assert_contains "$T/allreduce.out" "[1,mpirank:1,$HOST]<stdout>: rank 1 of 2: sum 1" "rank 1 tagged"
assert_not_contains "$T/allreduce.out" "<stdout rank=" "raw mpirun XML in the output"

# 2. python3 + mpi4py on 2 ranks.
cat > "$T/hello.py" <<'PY'
from mpi4py import MPI
c = MPI.COMM_WORLD
print(f"py rank {c.Get_rank()} of {c.Get_size()} sum {c.allreduce(c.Get_rank())}", flush=True)
PY
run python -- /usr/bin/python3 -m mpi4py "$T/hello.py"
assert_eq "$rc" 0 "exit code of the mpi4py job"
assert_contains "$T/python.out" "[1,mpirank:0,$HOST]<stdout>: py rank 0 of 2 sum 1" "py rank 0"
assert_contains "$T/python.out" "[1,mpirank:1,$HOST]<stdout>: py rank 1 of 2 sum 1" "py rank 1"

# 3. A Python exception on rank 1.
cat > "$T/fail.py" <<'PY'
from mpi4py import MPI
import time
c = MPI.COMM_WORLD
def check(a, b):
    if a != b:
        raise ValueError("shapes do not match")
if c.Get_rank() == 1:
    check((2, 3), (3, 2))
c.Barrier()
PY
run pyfail -- /usr/bin/python3 -m mpi4py "$T/fail.py"
assert_eq "$rc" 1 "exit code when a rank raises"
f="$T/root/output/failure"
[ -f "$f" ] || fail "no failure file"
line1=$(head -1 "$f")
echo "failure line 1: $line1"
case $line1 in *"rank 1"*) ;; *) fail "line 1 does not name rank 1: $line1";; esac
case $line1 in *"$HOST"*) ;; *) fail "line 1 does not name the host: $line1";; esac
case $line1 in *"ValueError: shapes do not match"*) ;; *) fail "line 1 misses the exception: $line1";; esac
case $line1 in *"code 1"*) ;; *) fail "line 1 misses exit code 1: $line1";; esac
assert_contains "$f" "Traceback" "the traceback follows"
head -c 1024 "$f" | grep -q -- "--allow-run-as-root" && fail "mpirun argv in the first 1024 bytes"
head -c 1024 "$f" | grep -q -- "btl_tcp_if_include" && fail "mpirun argv in the first 1024 bytes"

# 4. A C rank that segfaults.
run segv -- "$JOB" segv 1
assert_eq "$rc" 1 "exit code when a rank segfaults"
line1=$(head -1 "$T/root/output/failure")
echo "failure line 1: $line1"
case $line1 in *SIGSEGV*) ;; *) fail "no SIGSEGV in: $line1";; esac
case $line1 in *"rank 1"*) ;; *) fail "segfault: rank not named: $line1";; esac

# 5. A rank that exits 3.
run exit3 -- "$JOB" exit 1 3
assert_eq "$rc" 1 "exit code when a rank exits 3"
line1=$(head -1 "$T/root/output/failure")
echo "failure line 1: $line1"
case $line1 in *"code 3"*) ;; *) fail "no exit code 3 in: $line1";; esac
case $line1 in *"rank 1"*) ;; *) fail "exit 3: rank not named: $line1";; esac

# 6. MPI_Abort.  Under load mpirun sometimes exits before it relays the
# rank's "MPI_ABORT was invoked on rank 0" message (an Open MPI race); the
# abort's error code is then all that is known, and must be there.
run abort -- "$JOB" abort 0 7
assert_eq "$rc" 1 "exit code after MPI_Abort"
line1=$(head -1 "$T/root/output/failure")
echo "failure line 1: $line1"
case $line1 in *"rank 0"*"code 7"*|*"code 7"*) ;; *) fail "MPI_Abort: neither rank nor code named: $line1";; esac

# 7. The rank program is missing: nothing is launched.
run missing -- "$T/no-such-program"
assert_eq "$rc" 1 "exit code for a missing rank program"
assert_contains "$T/root/output/failure" "ProgramNotFound" "missing rank program"
assert_not_contains "$T/missing.err" "launched" "mpirun launched for a missing program"
echo ok
