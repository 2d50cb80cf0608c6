# tests/lib.sh - shared helpers for the shell tests (sourced).
set -u
: "${top_srcdir:?run through make check}"
: "${top_builddir:?run through make check}"

# A fresh directory for this test, removed on exit.
smt_tmpdir() {
	T=$(mktemp -d "${TMPDIR:-/tmp}/smt-test.XXXXXX")
	trap 'rm -rf "$T"' EXIT
}

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

skip() {
	echo "SKIP: $*" >&2
	exit 77
}

# assert_eq ACTUAL EXPECTED WHAT
assert_eq() {
	[ "$1" = "$2" ] || fail "$3: expected '$2', got '$1'"
}

# assert_contains FILE PATTERN WHAT (fixed string)
assert_contains() {
	grep -qF -- "$2" "$1" || { echo "---- $1:" >&2; head -c 4000 "$1" >&2; fail "$3: '$2' not found in $1"; }
}

assert_not_contains() {
	! grep -qF -- "$2" "$1" || fail "$3: '$2' unexpectedly found in $1"
}
