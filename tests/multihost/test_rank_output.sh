#!/bin/bash
# Issue 14, output: 3 hosts x 2 ranks, each rank writing 10 MiB of awkward
# bytes (tests/helpers/outrank.c: 1 MiB writes of multi-byte UTF-8 with no
# newline, lines of several MiB, control bytes, NULs, invalid UTF-8, tag
# lookalikes, writes cut anywhere).  The job succeeds; the leader's stdout
# (text mode, each line's own tag removed) and every --rank-log-dir file
# hold exactly what each rank wrote, in order (SHA-256 per rank against
# the same bytes generated again here).  Then the same job with
# --log-format json: every line of the leader's stdout parses, and the
# decoded lines (the pieces of a "partial" line joined, line_b64 where
# present) are again exactly the bytes written.
[ -n "${BASH_VERSION:-}" ] || exec /bin/bash "$0" "$@"
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/multihost/hosts.sh"
. "$top_srcdir/tests/multihost/smtd.sh"
mh_require
command -v mpirun >/dev/null 2>&1 || skip "mpirun (Open MPI) not installed"
smt_tmpdir
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
echo ok
