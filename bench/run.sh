#!/bin/bash
# bench/run.sh - every benchmark of issues 5, 7 and 8, side by side with
# its baseline in the same run; prints the table and rewrites
# docs/BENCHMARKS.md.  Needs root (simulated hosts), Open MPI, mpicc, sshd.
#
#   bench/run.sh [--quick] [--runs N] [--only "B1 B3 ..."] [--no-doc]
#
# F1, F13, F3, F4, F5, F6, F7, F9: one row of issue 7's matrix.
# --quick: 2 runs and smaller sizes (about 4 minutes); default 5 runs
# (about 21 minutes).  --only: a subset of faults (B1 B2 and issue 7),
# B3, B4, B5, B6, B7 (B7 includes issue 5's 200-client run), B9 (stalls,
# issue 16).
# The work directory (logs, failure lines, raw numbers) is kept when
# BENCH_KEEP=1.
[ -n "${BASH_VERSION:-}" ] || exec /bin/bash "$0" "$@"
set -u
BENCH_DIR=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$BENCH_DIR/.." && pwd)
QUICK=0
RUNS=
ONLY="faults B3 B4 B5 B6 B7 B9"
DOC=1
while [ $# -gt 0 ]; do
	case $1 in
	--quick) QUICK=1 ;;
	--runs) RUNS=$2; shift ;;
	--only) ONLY=$2; shift ;;
	--no-doc) DOC=0 ;;
	-h | --help) sed -n '2,13p' "$0"; exit 0 ;;
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
make -C "$top_builddir" tests/multihost/mh-init >/dev/null || exit 1
export SMTD=$top_builddir/smtd SMTCTL=$top_builddir/smtctl
export SMTD_PRELOAD=$top_builddir/preload/.libs/libsmthostname.so
MPIDIR=$("$top/tests/helpers/build-mpi.sh") || exit 1
BIN=$top_builddir/bench
mkdir -p "$BIN"
cc -O2 -Wall -o "$BIN/stamp" "$BENCH_DIR/stamp.c" &&
	cc -O2 -Wall -o "$BIN/ratewriter" "$BENCH_DIR/ratewriter.c" &&
	cc -O2 -Wall -o "$BIN/b3shim" "$BENCH_DIR/b3shim.c" && ln -sf b3shim "$BIN/fakessh" &&
	cc -O2 -Wall -pthread -o "$BIN/statusload" "$BENCH_DIR/statusload.c" &&
	mpicc -O2 -Wall -o "$BIN/hang" "$BENCH_DIR/hang.c" || exit 1

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
for f in faults b3 single b9_stall; do . "$BENCH_DIR/$f.sh"; done

t_start=$(bench_now)
for b in $ONLY; do
	case $b in
	faults) bench_b1b2; bench_fault_rows ;;
	B1 | B2) bench_b1b2 ;;
	F*) bench_fault_rows "${b#F}" ;;
	B3) bench_b3 ;;
	B4) bench_b4 ;;
	B5) bench_b5 ;;
	B6) bench_b6 ;;
	B7) bench_b7 ;;
	B9) bench_b9 ;;
	*) echo "bench/run.sh: unknown benchmark $b" >&2 ;;
	esac
done
elapsed=$(bench_sub "$(bench_now)" "$t_start")
cmd="bench/run.sh${QUICK:+}$([ $QUICK = 1 ] && echo ' --quick')$([ "$ONLY" != "faults B3 B4 B5 B6 B7 B9" ] && echo " --only \"$ONLY\"")"
/usr/bin/python3 "$BENCH_DIR/report.py" "$W" "$RUNS" "$elapsed" "$cmd" \
	$([ $DOC = 1 ] && echo "$top/docs/BENCHMARKS.md")
