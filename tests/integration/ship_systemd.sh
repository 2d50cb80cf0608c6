#!/bin/sh
# The systemd unit: `systemd-analyze verify` accepts it (with its man pages
# found, so Documentation= is checked too), it is a notify service that
# never restarts a job and stops after smtd's own grace, and the tmpfiles.d
# entry creates /run/smtd.
. "$top_srcdir/tests/lib.sh"
smt_tmpdir
unit="$top_builddir/systemd/smtd.service"
[ -f "$unit" ] || fail "$unit was not built"

# What the unit must say (one key per line, no duplicates).
prop() { sed -n "s/^$1=//p" "$unit"; }
assert_eq "$(prop Type)" notify "Type"
assert_eq "$(prop NotifyAccess)" main "NotifyAccess"
assert_eq "$(prop Restart)" no "Restart"
assert_eq "$(prop KillMode)" mixed "KillMode"
grep -q '^#WatchdogSec=' "$unit" || fail "WatchdogSec is not documented in the unit"
exec_start=$(prop ExecStart)
case "$exec_start" in
/*/sbin/smtd) ;;
*) fail "ExecStart is '$exec_start', not the installed sbin/smtd" ;;
esac
grep -q '@[a-z]*@' "$unit" && fail "unsubstituted @variables@ left in $unit"
# smtd's default grace comes from its own help: the stop timeout must exceed it.
grace=$("$SMTD" --help | sed -n 's/.*--grace.*default \([0-9]*\)).*/\1/p')
[ -n "$grace" ] || fail "cannot read --grace's default from smtd --help"
stop=$(prop TimeoutStopSec | sed 's/s$//')
case "$stop" in ''|*[!0-9]*) fail "TimeoutStopSec '$(prop TimeoutStopSec)' is not plain seconds" ;; esac
[ "$stop" -gt "$grace" ] || fail "TimeoutStopSec=$stop does not exceed smtd's grace of $grace s"

# tmpfiles.d: the entry creates the socket's directory.
if command -v systemd-tmpfiles >/dev/null 2>&1; then
	mkdir -p "$T/root/run"
	systemd-tmpfiles --root="$T/root" --create "$top_srcdir/systemd/smtd.tmpfiles" \
		> "$T/tmpfiles.out" 2>&1 || { cat "$T/tmpfiles.out" >&2; fail "systemd-tmpfiles --create"; }
	[ -d "$T/root/run/smtd" ] || fail "tmpfiles entry did not create /run/smtd"
	assert_eq "$(stat -c %a "$T/root/run/smtd")" 755 "mode of /run/smtd"
fi

command -v systemd-analyze >/dev/null 2>&1 ||
	skip_tool "systemd-analyze (systemd; the unit's keys were checked)"
# verify wants ExecStart to exist and the Documentation= pages to be found:
# point it at the built smtd and at the pages of the source tree.
mkdir -p "$T/man/man1" "$T/man/man5" "$T/man/man8" "$T/unit"
cp "$top_srcdir/man/smtctl.1" "$T/man/man1/"
cp "$top_srcdir/man/smtd-config.5" "$T/man/man5/"
cp "$top_srcdir/man/smtd.8" "$T/man/man8/"
sed "s|^ExecStart=.*|ExecStart=$top_builddir/smtd|" "$unit" > "$T/unit/smtd.service"
MANPATH="$T/man" systemd-analyze verify "$T/unit/smtd.service" > "$T/verify" 2>&1 ||
	{ cat "$T/verify" >&2; fail "systemd-analyze verify smtd.service"; }
# Warnings do not change the exit status; every line that names the unit is one.
if grep 'smtd.service' "$T/verify" >&2; then
	fail "systemd-analyze verify warns about smtd.service"
fi
# The check is real: a broken unit fails it.
sed 's/^Type=notify/Type=notifyy/' "$T/unit/smtd.service" > "$T/unit/bad.service"
MANPATH="$T/man" systemd-analyze verify "$T/unit/bad.service" > "$T/verify-bad" 2>&1
grep -q 'bad.service' "$T/verify-bad" || fail "systemd-analyze verify did not notice Type=notifyy"
echo "systemd unit: ok"
