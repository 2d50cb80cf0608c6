#!/bin/sh
# preload_config.sh - the host name each resourceconfig.json gives through
# LD_PRELOAD, in a C program, in /usr/bin/python3 and in the python3 on
# PATH: current_host when the file holds a valid one, the real host name
# for everything else, and never a failed program.
. "$top_srcdir/tests/lib.sh"
smt_tmpdir
PROBE=$top_builddir/tests/helpers/hostname_probe
[ -f "$SMTD_PRELOAD" ] || fail "no preload library at $SMTD_PRELOAD"
unset SMTD_RESOURCE_CONFIG SMTD_ROOT

REAL=$("$PROBE") || fail "the probe fails without the library"
assert_eq "$REAL" "$(uname -n)" "real host name"
case $REAL in algo-*|evil-*|other-*) skip "this machine's host name $REAL is one the test uses" ;; esac

PYTHONS=
[ -x /usr/bin/python3 ] && PYTHONS=/usr/bin/python3
command -v python3 >/dev/null 2>&1 && PYTHONS="$PYTHONS $(command -v python3)"
[ -n "$PYTHONS" ] || echo "note: no python3, C program only" >&2

# expect WHAT NAME: every program sees NAME with the environment as set.
expect() {
	LD_PRELOAD=$SMTD_PRELOAD timeout 20 "$PROBE" >"$T/out" 2>"$T/err" ||
		fail "$1 (C): exit $?: $(cat "$T/err")"
	assert_eq "$(cat "$T/out")" "$2" "$1 (C)"
	[ ! -s "$T/err" ] || fail "$1 (C): stderr: $(cat "$T/err")"
	for py in $PYTHONS; do
		LD_PRELOAD=$SMTD_PRELOAD timeout 20 "$py" -c \
			'import socket; print(socket.gethostname())' >"$T/out" 2>"$T/err" ||
			fail "$1 ($py): exit $?: $(cat "$T/err")"
		assert_eq "$(cat "$T/out")" "$2" "$1 ($py)"
		[ ! -s "$T/err" ] || fail "$1 ($py): stderr: $(cat "$T/err")"
	done
}

# with_file WHAT NAME CONTENT: CONTENT (printf %s) as SMTD_RESOURCE_CONFIG.
with_file() {
	printf '%s' "$3" >"$T/rc.json"
	SMTD_RESOURCE_CONFIG=$T/rc.json expect "$1" "$2"
}

with_file present algo-2 '{"current_host": "algo-2", "hosts": ["algo-1", "algo-2"], "network_interface_name": "eth0"}'
with_file "pretty-printed" algo-1 '{
	"current_host" : "algo-1",
	"hosts" : [ "algo-1" ]
}
'
SMTD_RESOURCE_CONFIG=$T/absent.json expect missing "$REAL"
with_file empty "$REAL" ''
with_file "only whitespace" "$REAL" '
 '
with_file "malformed (unterminated)" "$REAL" '{"current_host": "algo-2"'
with_file "malformed (trailing comma)" "$REAL" '{"current_host": "algo-2",}'
with_file "malformed (trailing text)" "$REAL" '{"current_host": "algo-2"} x'
with_file "not an object" "$REAL" '["algo-2"]'
with_file "no current_host" "$REAL" '{"hosts": ["algo-2"]}'
with_file "current_host a number" "$REAL" '{"current_host": 2}'
with_file "current_host null" "$REAL" '{"current_host": null}'
with_file "current_host an array" "$REAL" '{"current_host": ["algo-2"]}'
with_file "current_host an object" "$REAL" '{"current_host": {"name": "algo-2"}}'
with_file "current_host twice" "$REAL" '{"current_host": "algo-1", "current_host": "algo-2"}'
with_file "empty name" "$REAL" '{"current_host": ""}'
with_file "name with a space" "$REAL" '{"current_host": "algo 2"}'
with_file "name with a comma" "$REAL" '{"current_host": "algo-1,algo-2"}'
with_file "shell in a name" "$REAL" '{"current_host": "$(reboot)"}'
with_file "non-ASCII name" "$REAL" '{"current_host": "algö-2"}'
with_file "invalid UTF-8" "$REAL" "$(printf '{"current_host": "algo-2", "x": "\377"}')"

# 253 characters, labels of 63: the longest valid name; one more is not.
L63=$(printf '%063d' 0 | tr 0 a)
N253=$L63.$L63.$L63.$(printf '%061d' 0 | tr 0 d)
assert_eq "${#N253}" 253 "length of the long name"
with_file "253-character name" "$N253" "{\"current_host\": \"$N253\"}"
with_file "254-character name" "$REAL" "{\"current_host\": \"${N253}d\"}"
with_file "64-character label" "$REAL" "{\"current_host\": \"${L63}a.b\"}"

# Only the top-level key counts, whatever looks like it elsewhere.
with_file "nested and quoted decoys" algo-3 '{"x": {"current_host": "evil-1"}, "note": "\"current_host\": \"evil-2\"", "y": [{"current_host": "evil-3"}], "current_host": "algo-3", "z": {"a": {"current_host": "evil-4"}}}'
with_file "decoys only" "$REAL" '{"x": {"current_host": "evil-1"}, "note": "{\"current_host\": \"evil-2\"}", "current_host_2": "evil-3"}'

# Escapes are decoded before anything is compared.
with_file "escaped key and value" algo-4 '{"current\u005fhost": "alg\u006F-4", "s": "\"\\\/\b\f\n\r\t\ud83d\ude00"}'
with_file "escaped slash in the name" "$REAL" '{"current_host": "algo\/4"}'
with_file "escaped NUL" "$REAL" '{"current_host": "algo-4\u0000x"}'
with_file "lone surrogate" "$REAL" '{"current_host": "algo-4", "s": "\ud800"}'

# Nesting: 32 levels is the limit (smtd-config(5)), 10,000 must not crash.
deep() { printf '{"current_host": "algo-5", "x": '; printf "%0$1d" 0 | tr 0 '['; printf "%0$1d" 0 | tr 0 ']'; printf '}'; }
with_file "nested 32 deep" algo-5 "$(deep 31)"
with_file "nested 33 deep" "$REAL" "$(deep 32)"
with_file "nested 10,000 deep" "$REAL" "$(deep 10000)"

# Size: 1 MiB is the limit (smtd-config(5)).
mib() { printf '{"current_host": "algo-6"}'; head -c $(($1 - 26)) /dev/zero | tr '\0' ' '; }
mib 1048576 >"$T/big.json"
assert_eq "$(wc -c <"$T/big.json")" 1048576 "size of the 1 MiB file"
SMTD_RESOURCE_CONFIG=$T/big.json expect "exactly 1 MiB" algo-6
mib 1048577 >"$T/big.json"
SMTD_RESOURCE_CONFIG=$T/big.json expect "1 MiB + 1" "$REAL"
mib 2097152 >"$T/big.json"
SMTD_RESOURCE_CONFIG=$T/big.json expect "2 MiB" "$REAL"

# Not regular files: never opened for reading, never a hang.
mkdir "$T/dir.json"
SMTD_RESOURCE_CONFIG=$T/dir.json expect directory "$REAL"
mkfifo "$T/fifo.json"
SMTD_RESOURCE_CONFIG=$T/fifo.json expect FIFO "$REAL"
SMTD_RESOURCE_CONFIG=/dev/zero expect "character device" "$REAL"
ln -s "$T/absent.json" "$T/dangling.json"
SMTD_RESOURCE_CONFIG=$T/dangling.json expect "dangling symlink" "$REAL"
printf '{"current_host": "algo-8"}' >"$T/target.json"
ln -s "$T/target.json" "$T/link.json"
SMTD_RESOURCE_CONFIG=$T/link.json expect "symlink to a file" algo-8

# Unreadable (mode 000) for a user who is not root.  nobody runs copies of
# the probe and the library: the build tree may not be readable to it.
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null 2>&1; then
	NB_PROBE=$(nobody_copy "$PROBE") || exit 1
	NB_PRELOAD=$(nobody_copy "$SMTD_PRELOAD") || exit 1
	printf '{"current_host": "algo-9"}' >"$T/locked.json"
	chmod 000 "$T/locked.json"
	got=$(SMTD_RESOURCE_CONFIG=$T/locked.json LD_PRELOAD=$NB_PRELOAD as_nobody "$NB_PROBE" 2>&1) ||
		fail "mode 000: probe failed: $got"
	assert_eq "$got" "$REAL" "mode 000 as nobody"
	chmod 644 "$T/locked.json"
	got=$(SMTD_RESOURCE_CONFIG=$T/locked.json LD_PRELOAD=$NB_PRELOAD as_nobody "$NB_PROBE" 2>&1)
	assert_eq "$got" algo-9 "mode 644 as nobody"
else
	echo "note: mode 000 not checked (not root, or no setpriv)" >&2
fi

# Where the file is looked for: SMTD_RESOURCE_CONFIG, else under SMTD_ROOT.
mkdir -p "$T/root/input/config"
printf '{"current_host": "algo-10"}' >"$T/root/input/config/resourceconfig.json"
printf '{"current_host": "algo-11"}' >"$T/explicit.json"
SMTD_ROOT=$T/root expect "SMTD_ROOT" algo-10
SMTD_ROOT=$T/root SMTD_RESOURCE_CONFIG=$T/explicit.json expect "SMTD_RESOURCE_CONFIG first" algo-11
SMTD_ROOT=$T/root SMTD_RESOURCE_CONFIG= expect "empty SMTD_RESOURCE_CONFIG" algo-10
SMTD_ROOT=$T/nowhere expect "SMTD_ROOT without the file" "$REAL"
SMTD_ROOT=/$(printf '%05000d' 0) expect "SMTD_ROOT longer than PATH_MAX" "$REAL"
if [ ! -e /opt/ml/input/config/resourceconfig.json ]; then
	expect "default path, absent" "$REAL"
fi

# Read once: a change to the file after the first call is not seen.
printf '{"current_host": "algo-12"}' >"$T/once.json"
for py in $PYTHONS; do
	got=$(SMTD_RESOURCE_CONFIG=$T/once.json LD_PRELOAD=$SMTD_PRELOAD "$py" -c '
import socket, sys
first = socket.gethostname()
with open(sys.argv[1], "w") as f:
    f.write("{\"current_host\": \"other-1\"}")
print(first, socket.gethostname())' "$T/once.json") || fail "read once ($py)"
	assert_eq "$got" "algo-12 algo-12" "read once ($py)"
	printf '{"current_host": "algo-12"}' >"$T/once.json"
done
exit 0
