#!/bin/bash
# Back-pressure: 3 hosts x 4 ranks write as fast as they can
# (tests/helpers/outrank.c, BYTES each: long lines, 1 MiB writes, short
# lines) while the leader's stdout is read at 2 MB/s (tests/helpers/
# slowread.c on a FIFO).  Every byte of every rank arrives, in order, and
# no smtd grows: the peak RSS (VmHWM) of each host's smtd stays under
# LEADER_MAX_KB or WORKER_MAX_KB, whatever the ranks write.  The ranks are slowed down instead:
# on every host the last rank ends no sooner than half the time the reader
# needs for the whole output (nswatch's record of the ranks' ends).
#
# The bound is what smtd holds by design (smtd(8), OUTPUT, Memory): one
# 64 KiB read and one record per stream, the stdout queue (256 KiB, twice
# while a write is in flight) or a worker's outbox (1 MiB + one record),
# the leader's batches in hand (up to 1 MiB per worker), the 1 MiB log
# ring - a few MiB - on top of the daemon itself, which on the leader has
# libcurl and its libraries loaded.  Measured on Debian 12 (plain build):
# idle 11.7 MiB on the leader, 3.7 MiB on a worker; with this load 16.5-
# 18.1 MiB and 7.3-7.6 MiB, the same with 2 or 4 MiB per rank.  With
# AddressSanitizer (the test build): idle 23.4 and 14.3 MiB, loaded 29 and
# 19.4 MiB; since the pty, crash, preflight and restart modules (the
# sanitized binary and its shadow grew), 25-26 MiB loaded on a worker; since
# a rank's stdout is a pipe again (its reads fill faster than a pty's),
# 36.4 MiB once on the sanitized leader, whose plain build holds 15.3 MiB
# (bound 24) in the same test.  The
# plain build's bounds are the ones smtd(8) states, and scripts/test.sh runs
# this test on that build too.  The bounds below leave room for the unexpected but not for
# the queues to grow with the volume: a worker's 4 ranks write 16 MiB (4
# MiB each), more than the room between a worker's idle RSS and its bound
# (12 - 3.7 = 8.3 MiB plain, 28 - 14.3 = 13.7 MiB sanitized), so a worker
# that held its ranks' output instead of making them wait fails (checked:
# with a 64 MiB outbox, SMT_OUTPUT_OUTBOX_CAP, a worker's peak RSS went
# over its bound).  The reader takes 2 MB/s, twice the 1 MB/s of 2 MiB per
# rank before, so the test takes as long.  Under AddressSanitizer the allocator's quarantine
# would keep every freed buffer for a while and measure churn, not memory
# in use: it is made small here.
. "$top_srcdir/tests/multihost/prelude.sh"
command -v mpirun >/dev/null 2>&1 || skip_tool "mpirun (openmpi-bin)"
OUTRANK="$top_builddir/tests/helpers/outrank"
SLOWREAD="$top_builddir/tests/helpers/slowread"
RATE=2000000
BYTES=${SMT_BP_BYTES:-$((4 * 1024 * 1024))}
SEED=$((RANDOM * 32768 + RANDOM))
hyper='{"sagemaker_mpi_enabled": "true", "sagemaker_mpi_num_of_processes_per_host": "4"}'
if ldd "$SMTD" 2>/dev/null | grep -q libasan; then
	SANITIZED=1
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=1:thread_local_quarantine_size_kb=64"
	LEADER_MAX_KB=$((40 * 1024))
	WORKER_MAX_KB=$((28 * 1024))
else
	SANITIZED=0
	LEADER_MAX_KB=$((24 * 1024))
	WORKER_MAX_KB=$((12 * 1024))
fi
# A worker that buffered everything would hold its idle RSS (3.7 MiB plain,
# 14.3 MiB sanitized, smtd(8)) plus its 4 ranks' bytes: over the bound, or
# the bound cannot see that.
idle_kb=$((SANITIZED ? 14643 : 3789))
[ $((idle_kb + 4 * BYTES / 1024)) -gt $WORKER_MAX_KB ] ||
	fail "4 ranks x $BYTES bytes fit in a worker's room under its bound ($WORKER_MAX_KB kB, idle $idle_kb kB): the test could not see a worker that buffers its ranks' output"
echo "seed $SEED, 12 ranks x $BYTES bytes, stdout read at $RATE bytes/s; sanitized smtd: $SANITIZED"

mkdir -p "$T/expected"
for r in $(seq 0 11); do
	"$OUTRANK" --seed "$SEED" --bytes "$BYTES" --rank $r >"$T/expected/rank-$r" || fail "outrank --rank $r"
done

mkdir -p "$T/bp"; mh_setup 3 "$T/bp"
for k in 1 2 3; do smtd_hyper $k "$hyper"; done
mkfifo "$T/bp/stdout.fifo"
timeout 600 "$SLOWREAD" --rate "$RATE" <"$T/bp/stdout.fifo" >"$T/bp/stdout.1" 2>"$T/bp/slowread.err" &
reader=$!
t0=$EPOCHREALTIME
smtd_start_to 1 "$T/bp/stdout.fifo" -- "$OUTRANK" --seed "$SEED" --bytes "$BYTES"
for k in 2 3; do smtd_start_to $k "$T/bp/stdout.$k" -- "$OUTRANK" --seed "$SEED" --bytes "$BYTES"; done
for k in 1 2 3; do smtd_hwm_watch $k; done
smtd_wait_all 300
elapsed=$(mh__elapsed "$t0")
wait $reader || fail "the reader failed: $(cat "$T/bp/slowread.err")"
cat "$T/bp/slowread.err"
size=$(stat -c %s "$T/bp/stdout.1")
echo "job: $elapsed s from start to the last exit; the leader's stdout: $size bytes"
# Memory first: a worker that holds its ranks' output may also fail the
# job (its leader cannot keep up); the bound says why.
over=
for k in 1 2 3; do
	hwm=$(smtd_hwm $k)
	[ -n "$hwm" ] || fail "no VmHWM sampled for algo-$k's smtd"
	max=$WORKER_MAX_KB
	[ $k = 1 ] && max=$LEADER_MAX_KB
	echo "algo-$k: smtd peak RSS (VmHWM) $hwm kB = $(awk -v h="$hwm" 'BEGIN { printf "%.1f", h / 1024 }') MiB (bound $((max / 1024)) MiB)"
	[ "$hwm" -le "$max" ] || over="$over algo-$k ($hwm kB > $max kB)"
done
[ -z "$over" ] || fail "smtd's peak RSS is over its bound on$over"
for k in 1 2 3; do smtd_check $k 0; done
/usr/bin/python3 "$top_srcdir/tests/multihost/rank_bytes.py" --ranks 12 --per-host 4 \
	--expected "$T/expected" text "$T/bp/stdout.1" || fail "the leader's stdout lost or changed bytes"

# The ranks waited for the reader: on every host the last rank ended no
# sooner than half the reader's time for the whole output (a host that
# held its ranks' output lets them end at once; the job's own end says
# nothing: the leader cannot exit before the reader has taken it all).
need=$(awk -v s="$size" -v r="$RATE" 'BEGIN { printf "%.1f", s / r }')
for k in 1 2 3; do
	smtd_watch_wait $k
	last=$(awk '$2 == "outrank" { if ($5 > m) m = $5 } END { printf "%.3f", m }' "$(smtd_watch_report $k)")
	awk -v l="$last" -v t0="$t0" 'BEGIN { exit !(l > t0) }' ||
		{ cat "$(smtd_watch_report $k)" >&2; fail "algo-$k: no rank (outrank) seen ending"; }
	took=$(awk -v l="$last" -v t0="$t0" 'BEGIN { printf "%.1f", l - t0 }')
	echo "algo-$k: its last rank ended $took s after the start (the reader needs $need s for it all)"
	awk -v d="$took" -v n="$need" 'BEGIN { exit !(d >= 0.5 * n) }' ||
		fail "algo-$k's ranks ended $took s after the start: they did not wait for a reader that needs $need s"
done

mh_teardown
echo ok
