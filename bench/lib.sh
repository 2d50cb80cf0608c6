# bench/lib.sh - shared by the benchmark scripts (sourced by bench/run.sh).
#
#   bench_now                  seconds since the epoch, microseconds
#   bench_sub A B              A - B, 3 decimals
#   bench_record ID METRIC UNIT TARGET "SMTD VALUES" "BASELINE VALUES" [NOTE]
#                              one row of the table ("" baseline: none),
#                              with the 1-minute load average at the time;
#                              a value that is not a number ("failed", or
#                              "-" for a run that did not end) is a run
#                              whose job failed: bench/report.py counts it
#                              as failed, never in min/median/max
#   bench_failed N             N values "failed" (one per column of R)
#   bench_load                 the load averages (1, 5, 15 minutes)
#   max_of NUMBERS...          the largest
#   bench_note TEXT            a line for the notes under the table
#   bench_log_time FILE REGEX  epoch seconds of the first smtd log line of
#                              FILE matching REGEX (its ISO time stamp)

bench_now() {
	echo "${EPOCHREALTIME/,/.}"
}

bench_sub() {
	awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a - b }'
}

bench_record() {
	local load
	load=$(cut -d' ' -f1 /proc/loadavg)
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" "$6" "${7:-}" "$load" >>"$BENCH_OUT/results.tsv"
	printf 'bench: %s %s: smtd [%s] baseline [%s] %s (load %s)\n' "$1" "$2" "$5" "$6" "$3" "$load" >&2
}

bench_failed() {
	local i out=
	for ((i = 0; i < $1; i++)); do out="$out failed"; done
	echo "${out# }"
}

bench_load() {
	cut -d' ' -f1-3 /proc/loadavg
}

max_of() {
	echo "$@" | tr ' ' '\n' | awk 'NF { if (m == "" || $1 + 0 > m + 0) m = $1 } END { print m }'
}

bench_note() {
	printf '%s\n' "$*" >>"$BENCH_OUT/notes.txt"
}

bench_log_time() {
	local line
	line=$(grep -m1 -E "$2" "$1") || return 1
	# 2026-11-23T02:35:38.429Z smtd[vm] ...
	date -u -d "$(echo "$line" | cut -c1-23 | tr T ' ')" +%s.%N | cut -c1-14
}

bench_log() {
	echo "bench: $*" >&2
}
