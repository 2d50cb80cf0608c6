#!/bin/sh
# preload_elf.sh - the library needs libc only, exports gethostname and
# __gethostname_chk only, carries no sanitizer runtime, and its man page
# is lint-clean.
. "$top_srcdir/tests/lib.sh"
smt_tmpdir
[ -f "$SMTD_PRELOAD" ] || fail "no preload library at $SMTD_PRELOAD"
command -v readelf >/dev/null 2>&1 || skip_tool "readelf (binutils)"

readelf -d "$SMTD_PRELOAD" >"$T/dynamic" || fail "readelf -d"
grep NEEDED "$T/dynamic" | sed 's/.*\[\(.*\)\]/\1/' >"$T/needed"
assert_eq "$(cat "$T/needed")" "libc.so.6" "NEEDED entries"

# Every defined dynamic symbol, of any type: the whole API.
readelf -W --dyn-syms "$SMTD_PRELOAD" |
	awk '$1 ~ /^[0-9]+:$/ && $7 != "UND" && NF >= 8 { print $8 }' |
	sort >"$T/exports"
printf '%s\n' __gethostname_chk gethostname >"$T/want"
diff -u "$T/want" "$T/exports" || fail "exported symbols"

readelf -W --dyn-syms "$SMTD_PRELOAD" >"$T/syms"
assert_not_contains "$T/syms" "__asan" "sanitizer symbols"
assert_not_contains "$T/syms" "__ubsan" "sanitizer symbols"

# ldd resolves it the same way on this machine.
ldd "$SMTD_PRELOAD" >"$T/ldd" 2>&1 || fail "ldd: $(cat "$T/ldd")"
awk '$2 == "=>" { print $1 }' "$T/ldd" >"$T/deps"
assert_eq "$(cat "$T/deps")" "libc.so.6" "ldd dependencies"

if command -v mandoc >/dev/null 2>&1; then
	# Warnings and worse; the style notes about manuals this machine has
	# not indexed (smtd.8 before installation) are not the page's fault.
	mandoc -T lint -W warning "$top_srcdir/man/libsmthostname.3" >"$T/lint" 2>&1 ||
		fail "mandoc -T lint: $(cat "$T/lint")"
	[ ! -s "$T/lint" ] || fail "mandoc -T lint: $(cat "$T/lint")"
else
	skip_part "the man page's lint" "mandoc"
fi
exit 0
