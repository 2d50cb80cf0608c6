#!/bin/sh
# libsmthostname in a set-user-ID program (preload/smthostname.c, smtd(8)
# SECURITY): the library is loaded into whatever a rank runs, and a program
# that gained privileges at exec (set-user-ID, file capabilities) must not
# take the file its gethostname() reads from the environment of the user
# who started it, or that user could make it read - and name itself
# after - any file it can name.  SMTD_RESOURCE_CONFIG and SMTD_ROOT are read
# with secure_getenv: in secure-execution mode (AT_SECURE) they count for
# nothing, and the host name is what it would be without them.
#
# tests/helpers/secure_hostname loads the library with dlopen (a secure
# process ignores LD_PRELOAD paths) and prints its gethostname(); here it
# is run by root, once plain and once set-user-ID to uid 65534 (effective
# uid 65534, real uid 0: secure-execution mode).
. "$top_srcdir/tests/lib.sh"
[ "$(id -u)" = 0 ] || skip "needs root for a set-user-ID program of another user"
smt_tmpdir
HELPER="$top_builddir/tests/helpers/secure_hostname"
[ -x "$HELPER" ] || fail "no $HELPER (make check builds it)"
[ -r "$SMTD_PRELOAD" ] || fail "no preload library at $SMTD_PRELOAD"
LIB=$(nobody_copy "$SMTD_PRELOAD") || exit 1
PLAIN=$(nobody_copy "$HELPER") || exit 1
mkdir -m 755 "$T/suid"
SUID="$T/suid/secure_hostname"
cp "$HELPER" "$SUID"
chown 65534:65534 "$SUID"
chmod 4755 "$SUID"

# A configuration that names the host "planted-host", readable by all.
mkdir -p "$T/planted/input/config"
chmod -R 755 "$T/planted"
echo '{"current_host": "planted-host", "hosts": ["planted-host"]}' \
	>"$T/planted/input/config/resourceconfig.json"
chmod 644 "$T/planted/input/config/resourceconfig.json"
CONF="$T/planted/input/config/resourceconfig.json"

run() { # run VAR=VALUE... PROGRAM: the helper's line, without smtd's variables
	env -u SMTD_RESOURCE_CONFIG -u SMTD_ROOT "$@" "$LIB" 2>&1 || fail "secure_hostname: $*"
}

# Without secure-execution mode both variables count.
assert_eq "$(run SMTD_RESOURCE_CONFIG="$CONF" "$PLAIN")" "secure=0 host=planted-host" \
	"SMTD_RESOURCE_CONFIG in a plain program"
assert_eq "$(run SMTD_ROOT="$T/planted" "$PLAIN")" "secure=0 host=planted-host" \
	"SMTD_ROOT in a plain program"
assert_eq "$(as_nobody env SMTD_RESOURCE_CONFIG="$CONF" "$PLAIN" "$LIB")" "secure=0 host=planted-host" \
	"SMTD_RESOURCE_CONFIG in a plain program of uid 65534"

# Set-user-ID: neither counts; the name is the one without them.
none=$(run "$SUID")
case $none in
"secure=1 host="*) ;;
*) skip "the set-user-ID helper is not in secure-execution mode ($none): is ${TMPDIR:-/tmp} mounted nosuid?" ;;
esac
[ "$none" != "secure=1 host=planted-host" ] || fail "the machine itself is named planted-host"
assert_eq "$(run SMTD_RESOURCE_CONFIG="$CONF" "$SUID")" "$none" \
	"SMTD_RESOURCE_CONFIG in a set-user-ID program"
assert_eq "$(run SMTD_ROOT="$T/planted" "$SUID")" "$none" \
	"SMTD_ROOT in a set-user-ID program"
echo "ok: $none"
