#!/bin/sh
# Build every libFuzzer target tests/fuzz/fuzz_*.c with clang and run it for
# a bounded time.  tests/fuzz/NAME.sources lists the project sources and
# libraries the target links (one shell word each, relative to the top).
#   tests/fuzz/run.sh BUILDDIR [SECONDS]
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
out=$1
secs=${2:-${SMT_FUZZ_SECONDS:-20}}
mkdir -p "$out"
cd "$top"
if ! command -v clang >/dev/null; then
	echo "fuzz: SKIP: clang is not installed (scripts/setup.sh installs it)"
	exit 0
fi
cflags="-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -I$top/proto -I$top/daemon -I$top/build-san -I$top/tests/fuzz -DSMT_FUZZING=1"
status=0
for src in tests/fuzz/fuzz_*.c; do
	[ -e "$src" ] || continue
	name=$(basename "$src" .c)
	srcs=$(grep -v '^#' "tests/fuzz/$name.sources" | tr '\n' ' ')
	libs=$(pkg-config --libs libuv jansson libcurl) 
	# shellcheck disable=SC2086
	if ! clang $cflags -o "$out/$name" "$src" $srcs $libs -lhttp_parser 2>"$out/$name.build.log"; then
		echo "fuzz: FAIL: $name does not build:"; tail -20 "$out/$name.build.log"; status=1; continue
	fi
	mkdir -p "$out/$name.corpus"
	seeds=
	[ -d "tests/fuzz/$name.seeds" ] && seeds="tests/fuzz/$name.seeds"
	# shellcheck disable=SC2086
	if "$out/$name" -max_total_time="$secs" -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
		"$out/$name.corpus" $seeds >"$out/$name.log" 2>&1; then
		echo "fuzz: PASS: $name ($(grep -o 'stat::number_of_executed_units: [0-9]*' "$out/$name.log" | awk '{print $2}') runs in ${secs}s)"
	else
		echo "fuzz: FAIL: $name"; tail -40 "$out/$name.log"; status=1
	fi
done
exit $status
