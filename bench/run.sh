#!/bin/bash
# bench/run.sh - every benchmark of issues 5, 7, 8, 14 and 16, side by side
# with its baseline in the same run; prints the table and rewrites
# docs/BENCHMARKS.md.  Needs root (simulated hosts), Open MPI, mpicc, sshd.
#
#   bench/run.sh [--quick] [--runs N] [--only "B1 B3 ..."] [--no-doc]
#
# --quick: 2 runs and smaller sizes; default 5 runs.  --only: a subset of
# faults (B1, B2 and every fault of docs/MULTIHOST-TESTING.md's table that
# a benchmark times), B1 (with B2), a fault by its name (rank-exit,
# rank-exit-barrier, rank-raise, orted-kill, host-down, leader-down,
# link-down, sigterm-all), B3, B4, B4m, B5, B6, B7 (with issue 5's
# 200-client run), B8, B9 (stalls), B10 (restarts in place, with B10t, B10m, B10s),
# B12 (the leader with 256, 512 and 1000 workers; --quick: 64 and 256).
# The work directory (logs, failure lines, raw numbers) is kept when
# BENCH_KEEP=1.  SMTD_OVERRIDE runs another program in smtd's place (a wrapper
# that runs the built smtd under heaptrack, say).
[ -n "${BASH_VERSION:-}" ] || exec /bin/bash "$0" "$@"
set -u
BENCH_DIR=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$BENCH_DIR/.." && pwd)
QUICK=0
RUNS=
ALL="faults B3 B4 B4m B5 B6 B7 B8 B9 B10 B12"
ONLY=$ALL
DOC=1
while [ $# -gt 0 ]; do
	case $1 in
	--quick) QUICK=1 ;;
	--runs) RUNS=$2; shift ;;
	--only) ONLY=$2; shift ;;
	--no-doc) DOC=0 ;;
	-h | --help) sed -n '2,16p' "$0"; exit 0 ;;
	*) echo "bench/run.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
[ -n "$RUNS" ] || { [ $QUICK = 1 ] && RUNS=2 || RUNS=5; }
[ "$(id -u)" = 0 ] || { echo "bench/run.sh: needs root (network, PID and mount namespaces)" >&2; exit 77; }

export PATH=/usr/bin:/bin:/usr/sbin:/sbin:$PATH
export top_srcdir=$top top_builddir=$top/build
echo "bench: building (scripts/build.sh build, -O2, no sanitizers)" >&2
"$top/scripts/build.sh" "$top_builddir" || exit 1
# The bench's own helpers (bench/local.mk), with the project's flags.
make -C "$top_builddir" tests/multihost/mh-init bench/stamp bench/ratewriter bench/b3shim \
	bench/statusload bench/ckptrank >"$top_builddir/bench.make.out" 2>&1 ||
	{ tail -20 "$top_builddir/bench.make.out" >&2; exit 1; }
export SMTD=${SMTD_OVERRIDE:-$top_builddir/smtd} SMTCTL=$top_builddir/smtctl
export SMTD_PRELOAD=$top_builddir/preload/.libs/libsmthostname.so
MPIDIR=$("$top/tests/helpers/build-mpi.sh") || exit 1
BIN=$top_builddir/bench
ln -sf b3shim "$BIN/fakessh"

W=$(mktemp -d /tmp/smt-bench.XXXXXX)
BENCH_OUT=$W
: >"$W/results.tsv"
: >"$W/notes.txt"
mkdir -p "$W/logs"
cleanup() {
	[ "${BENCH_KEEP:-0}" = 1 ] && echo "bench: work directory kept: $W" >&2 || rm -rf "$W"
}
trap cleanup EXIT

. "$BENCH_DIR/lib.sh"
. "$top/tests/multihost/hosts.sh"
. "$top/tests/multihost/smtd.sh"
# b9_stall.sh last: it uses the others' helpers.
for f in faults b3 single output grace b9_stall b10_restart b12; do . "$BENCH_DIR/$f.sh"; done

t_start=$(bench_now)
for b in $ONLY; do
	bench_log "$b at load $(bench_load)"
	case $b in
	faults) bench_b1b2; bench_faults ;;
	B1 | B2) bench_b1b2 ;;
	B3) bench_b3 ;;
	B4) bench_b4 ;;
	B4m) bench_b4m ;;
	B5) bench_b5 ;;
	B6) bench_b6 ;;
	B7) bench_b7 ;;
	B8) bench_b8 ;;
	B9) bench_b9 ;;
	B10) bench_b10 ;;
	B12) bench_b12 ;;
	*)
		if fault_known "$b"; then
			bench_faults "$b"
		else
			echo "bench/run.sh: unknown benchmark $b" >&2
		fi
		;;
	esac
done
elapsed=$(bench_sub "$(bench_now)" "$t_start")
cmd="bench/run.sh$([ $QUICK = 1 ] && echo ' --quick')$([ "$ONLY" != "$ALL" ] && echo " --only \"$ONLY\"")"
/usr/bin/python3 "$BENCH_DIR/report.py" "$W" "$RUNS" "$elapsed" "$cmd" \
	$([ $DOC = 1 ] && echo "$top/docs/BENCHMARKS.md")
