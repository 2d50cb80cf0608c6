#!/bin/sh
# --log-format json: every line smtd prints - its own messages, mpirun's,
# the ranks' - is one JSON object; a failing 2-rank MPI job and a
# standalone job are parsed line by line.
. "$top_srcdir/tests/lib.sh"
smt_tmpdir
export PATH="/usr/bin:$PATH"
mkdir -p "$T/root"
cat >"$T/fail.py" <<'PY'
import sys
from mpi4py import MPI
c = MPI.COMM_WORLD
print("rank", c.Get_rank(), "bytes \x01 \u00e9", flush=True)
sys.stdout.buffer.write(b"invalid utf-8 \xff\xfe\n")
sys.stdout.flush()
# Rank 1 fails only once every rank has printed: its MPI_Abort would
# otherwise beat a slow rank 0 to its first line.
c.Barrier()
if c.Get_rank() == 1:
    raise ValueError("shapes do not match")
c.Barrier()
PY
rc=0
"$SMTD" --root "$T/root" --sshd never --mpi --processes-per-host 2 --mpi-options "--oversubscribe" \
	--log-format json -- /usr/bin/python3 -m mpi4py "$T/fail.py" >"$T/out" 2>"$T/err" || rc=$?
assert_eq "$rc" 1 "exit code of the failing job"
/usr/bin/python3 - "$T/out" "$T/err" <<'PY' || fail "not every line is JSON"
import json, sys
ranks, daemon, mpirun = set(), 0, 0
for path in sys.argv[1:]:
    for n, raw in enumerate(open(path, "rb"), 1):
        try:
            o = json.loads(raw)
        except ValueError as e:
            sys.exit("%s:%d: not JSON (%s): %r" % (path, n, e, raw[:200]))
        if not isinstance(o, dict) or "time" not in o:
            sys.exit("%s:%d: not an object with a time: %r" % (path, n, raw[:200]))
        if "rank" in o:
            assert o["stream"] in ("stdout", "stderr") and "line" in o and "host" in o, o
            ranks.add(o["rank"])
        elif o.get("stream") == "mpirun":
            mpirun += 1
        else:
            assert o["level"] in ("debug", "info", "warn", "error") and "message" in o and "state" in o, o
            daemon += 1
assert ranks == {0, 1}, ranks
assert daemon > 3 and mpirun > 0, (daemon, mpirun)
print("JSON lines: ranks %s, %d of smtd, %d of mpirun" % (sorted(ranks), daemon, mpirun))
PY
grep -q '"line_b64"' "$T/out" || fail "invalid UTF-8 not carried as line_b64"
grep -q 'ValueError: shapes do not match' "$T/out" || fail "the traceback is not in the rank lines"

rc=0
"$SMTD" --root "$T/root" --sshd never --log-format json -- /bin/sh -c 'echo out; echo err >&2' >"$T/out2" 2>"$T/err2" || rc=$?
assert_eq "$rc" 0 "exit code of the standalone job"
/usr/bin/python3 -c '
import json, sys
for p in sys.argv[1:]:
    for line in open(p, "rb"):
        json.loads(line)
' "$T/out2" "$T/err2" || fail "standalone: not every line is JSON"
echo ok
