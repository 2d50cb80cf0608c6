#!/bin/bash
# Output: 3 hosts x 2 ranks, each rank writing 10 MiB of awkward
# bytes (tests/helpers/outrank.c: 1 MiB writes of multi-byte UTF-8 with no
# newline, lines of several MiB, control bytes, NULs, invalid UTF-8, tag
# lookalikes, writes cut anywhere).  The job succeeds; the leader's stdout
# (text mode, each line's own tag removed) and every --rank-log-dir file
# hold exactly what each rank wrote, in order (SHA-256 per rank against
# the same bytes generated again here).  Then the same job with
# --log-format json: every line of the leader's stdout parses, and the
# decoded lines (the pieces of a "partial" line joined, line_b64 where
# present) are again exactly the bytes written.  Last, a rank whose long
# line stops half-way while it waits for the others in MPI_Barrier does
# not hang the job: its line is cut after 5 s.
. "$top_srcdir/tests/multihost/prelude.sh"
command -v mpirun >/dev/null 2>&1 || skip_tool "mpirun (openmpi-bin)"
/usr/bin/python3 -c 'import mpi4py' 2>/dev/null || skip "/usr/bin/python3 has no mpi4py (python3-mpi4py)"
OUTRANK="$top_builddir/tests/helpers/outrank"
[ -x "$OUTRANK" ] || fail "no $OUTRANK (make check builds it)"
hyper='{"sagemaker_mpi_enabled": "true", "sagemaker_mpi_num_of_processes_per_host": "2"}'
SEED=$((RANDOM * 32768 + RANDOM))
BYTES=$((10 * 1024 * 1024))
echo "seed $SEED, $BYTES bytes per rank"

# What each rank writes, generated again here.
mkdir -p "$T/expected"
for r in 0 1 2 3 4 5; do
	"$OUTRANK" --seed "$SEED" --bytes "$BYTES" --rank $r >"$T/expected/rank-$r" || fail "outrank --rank $r"
done

# check MODE STDOUT [LOGDIR]: the leader's stdout (and the rank log files)
# against $T/expected.
check() {
	/usr/bin/python3 "$top_srcdir/tests/multihost/rank_bytes.py" --ranks 6 --per-host 2 \
		--expected "$T/expected" "$@"
}

# ---- text ----
mkdir -p "$T/text"; mh_setup 3 "$T/text"
for k in 1 2 3; do
	smtd_hyper $k "$hyper"
	mkdir -p "$T/text/logs-$k"
done
t0=$EPOCHREALTIME
for k in 1 2 3; do
	smtd_start_to $k "$T/text/stdout.$k" --rank-log-dir "$T/text/logs-$k" -- "$OUTRANK" --seed "$SEED" --bytes "$BYTES"
done
smtd_wait_all 240
echo "text: 6 x $BYTES bytes in $(mh__elapsed "$t0") s from start to the last exit"
for k in 1 2 3; do smtd_check $k 0; done
for k in 2 3; do
	[ ! -s "$T/text/stdout.$k" ] || fail "a worker wrote rank lines to its own stdout: $(head -c 200 "$T/text/stdout.$k")"
	for r in $((2 * k - 2)) $((2 * k - 1)); do
		[ ! -e "$T/text/logs-1/rank-$r.log" ] || fail "rank $r's log file is on the leader, not on algo-$k"
	done
done
check text "$T/text/stdout.1" "$T/text/logs-{K}" || fail "text output differs from what the ranks wrote"
mh_teardown

# ---- JSON ----
mkdir -p "$T/json"; mh_setup 3 "$T/json"
for k in 1 2 3; do smtd_hyper $k "$hyper"; done
t0=$EPOCHREALTIME
for k in 1 2 3; do
	smtd_start_to $k "$T/json/stdout.$k" --log-format json -- "$OUTRANK" --seed "$SEED" --bytes "$BYTES"
done
smtd_wait_all 240
echo "json: 6 x $BYTES bytes in $(mh__elapsed "$t0") s from start to the last exit"
for k in 1 2 3; do smtd_check $k 0; done
check json "$T/json/stdout.1" || fail "JSON output differs from what the ranks wrote"
mh_teardown

# ---- a long line that stops half-way, its rank waiting for the others ----
# Rank 0 writes 100 KiB with no newline and waits in MPI_Barrier for the
# others, which write 5000 lines each first.  Its line must not hold theirs
# back for ever (the job would hang): after SMT_MERGE_STALL_MS (5 s) of
# nothing new it is cut, the rest on a line of its own; the rank's log file
# keeps it whole.
mkdir -p "$T/stall"; mh_setup 3 "$T/stall"
cat >"$T/stall/stall.py" <<'PY'
import os
from mpi4py import MPI
c = MPI.COMM_WORLD
if c.Get_rank() == 0:
    os.write(1, b"p" * (100 * 1024))
    c.Barrier()
    os.write(1, b" done\n")
else:
    for i in range(5000):
        os.write(1, b"rank %d line %05d %s\n" % (c.Get_rank(), i, b"x" * 80))
    c.Barrier()
PY
for k in 1 2 3; do
	smtd_hyper $k "$hyper"
	mkdir -p "$T/stall/logs-$k"
	smtd_start_to $k "$T/stall/stdout.$k" --rank-log-dir "$T/stall/logs-$k" -- /usr/bin/python3 -m mpi4py "$T/stall/stall.py"
done
t0=$EPOCHREALTIME
smtd_wait_all 60
echo "stall: the job ended in $(mh__elapsed "$t0") s"
for k in 1 2 3; do smtd_check $k 0; done
for r in 1 2 3 4 5; do
	assert_eq "$(grep -a -c "^\[1,mpirank:$r,algo-[0-9]\]<stdout>: rank $r line " "$T/stall/stdout.1")" 5000 "rank $r's lines"
done
/usr/bin/python3 - "$T/stall/stdout.1" "$T/stall/logs-1/rank-0.log" <<'PY' || fail "rank 0's cut line"
import sys
tag = b"[1,mpirank:0,algo-1]<stdout>: "
lines = [l[len(tag):] for l in open(sys.argv[1], "rb").read().split(b"\n") if l.startswith(tag)]
assert len(lines) == 2, [l[:20] for l in lines]
assert b"".join(lines) == b"p" * 102400 + b" done", [len(l) for l in lines]
assert open(sys.argv[2], "rb").read() == b"p" * 102400 + b" done\n"
print("rank 0's line: cut in two on stdout (%d + %d bytes), whole in its log file" % tuple(map(len, lines)))
PY
assert_contains "$(smtd_console 1)" "rank 0's stdout stopped in the middle of a long line" "the leader says why the line was cut"
mh_teardown
echo ok
