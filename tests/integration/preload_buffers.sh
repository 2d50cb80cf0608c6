#!/bin/sh
# preload_buffers.sh - short buffers follow glibc exactly: min(len,
# strlen+1) bytes are copied and, when the name with its NUL does not fit,
# the call fails with ENAMETOOLONG (no NUL written).  Checked against
# golden output, against glibc itself for the real host name, and against
# glibc given the same name in a UTS namespace when we may make one.
. "$top_srcdir/tests/lib.sh"
smt_tmpdir
PROBE=$top_builddir/tests/helpers/hostname_probe
[ -f "$SMTD_PRELOAD" ] || fail "no preload library at $SMTD_PRELOAD"
unset SMTD_ROOT
printf '{"current_host": "algo-12", "hosts": ["algo-12"]}' >"$T/rc.json"
export SMTD_RESOURCE_CONFIG="$T/rc.json"

probe() {
	LD_PRELOAD=$SMTD_PRELOAD "$PROBE" "$@" >"$T/got" 2>&1 || true
}

cat >"$T/want" <<'GOLDEN'
size=0 rc=-1 errno=ENAMETOOLONG buf=""
size=1 rc=-1 errno=ENAMETOOLONG buf="a"
size=2 rc=-1 errno=ENAMETOOLONG buf="al"
size=6 rc=-1 errno=ENAMETOOLONG buf="algo-1"
size=7 rc=-1 errno=ENAMETOOLONG buf="algo-12"
size=8 rc=0 errno=0 buf="algo-12\0"
size=9 rc=0 errno=0 buf="algo-12\0~"
size=64 rc=0 errno=0 buf="algo-12\0~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~"
GOLDEN
probe 0 1 2 6 7 8 9 64
diff -u "$T/want" "$T/got" || fail "gethostname on short buffers"
# A program built with _FORTIFY_SOURCE reaches us through __gethostname_chk.
probe -c 0 1 2 6 7 8 9 64
diff -u "$T/want" "$T/got" || fail "__gethostname_chk on short buffers"

# The longest name: 1 byte, exactly its length, and its length + 1.
L63=$(printf '%063d' 0 | tr 0 a)
N253=$L63.$L63.$L63.$(printf '%061d' 0 | tr 0 d)
printf '{"current_host": "%s"}' "$N253" >"$T/rc.json"
{
	printf '%s\n' 'size=1 rc=-1 errno=ENAMETOOLONG buf="a"'
	printf '%s\n' "size=253 rc=-1 errno=ENAMETOOLONG buf=\"$N253\""
	printf '%s\n' "size=254 rc=0 errno=0 buf=\"$N253\\0\""
} >"$T/want"
probe 1 253 254
diff -u "$T/want" "$T/got" || fail "253-character name on short buffers"

# Falling back, the library is glibc: the same bytes for every size.
REAL=$("$PROBE") || fail "the probe fails without the library"
sizes=$(seq 0 $((${#REAL} + 2)))
# shellcheck disable=SC2086
"$PROBE" $sizes >"$T/glibc" 2>&1 || true
SMTD_RESOURCE_CONFIG=$T/absent.json probe $sizes
diff -u "$T/glibc" "$T/got" || fail "fallback differs from glibc on short buffers"
assert_contains "$T/glibc" "size=${#REAL} rc=-1 errno=ENAMETOOLONG buf=\"$REAL\"" "glibc on a buffer of the name's length"

# glibc itself with the name algo-12, when a UTS namespace can be made.
if unshare -u true 2>/dev/null; then
	unshare -u sh -c 'hostname algo-12 && exec "$0" 0 1 2 6 7 8 9 64' "$PROBE" >"$T/glibc" 2>&1 || true
	printf '{"current_host": "algo-12"}' >"$T/rc.json"
	probe 0 1 2 6 7 8 9 64
	diff -u "$T/glibc" "$T/got" || fail "library differs from glibc for the same name"
else
	echo "note: no UTS namespace, glibc comparison for algo-12 skipped" >&2
fi
exit 0
