#!/bin/sh
# The house's line length: every line of the C sources of daemon/, client/,
# proto/ and preload/ fits 100 columns, tabs counted as 8 (the width
# .clang-format formats to: `clang-format --lines=N:N FILE` rewraps one).
# Each line over is named with its file, number and width.
. "$top_srcdir/tests/lib.sh"
smt_tmpdir
n=0
for f in "$top_srcdir"/daemon/*.[ch] "$top_srcdir"/client/*.[ch] "$top_srcdir"/proto/*.[ch] \
	"$top_srcdir"/preload/*.[ch]; do
	n=$((n + 1))
	expand -t 8 "$f" | awk -v f="${f#"$top_srcdir"/}" \
		'length($0) > 100 { printf "%s:%d: %d columns\n", f, NR, length($0) }'
done >"$T/over"
[ $n -gt 50 ] || fail "only $n source files found under $top_srcdir"
[ ! -s "$T/over" ] || { cat "$T/over" >&2; fail "$(wc -l <"$T/over") lines wider than 100 columns (above)"; }
echo "$n source files, every line within 100 columns"
