#!/bin/sh
# `make install DESTDIR=...` puts every file where a distribution would,
# and nothing else; `make uninstall` takes them all away again.
. "$top_srcdir/tests/lib.sh"
smt_tmpdir
dest="$T/dest"
# A clean sub-make: the caller's MAKEFLAGS may carry TESTS=... or -j fds.
submake() {
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$top_builddir" "$@"
}
dir() {
	printf 'print-dir:\n\t@echo $(%s)\n' "$1" | submake -f Makefile -f - print-dir
}
prefix=$(dir prefix) sbindir=$(dir sbindir) bindir=$(dir bindir) libdir=$(dir libdir)
mandir=$(dir mandir) unitdir=$(dir systemdsystemunitdir) tmpfilesdir=$(dir tmpfilesdir)
[ -n "$prefix" ] && [ -n "$sbindir" ] && [ -n "$unitdir" ] || fail "cannot read the install directories"
assert_eq "$unitdir" "$prefix/lib/systemd/system" "systemdsystemunitdir"
assert_eq "$tmpfilesdir" "$prefix/lib/tmpfiles.d" "tmpfilesdir"

submake install DESTDIR="$dest" > "$T/install.out" 2>&1 ||
	{ tail -20 "$T/install.out" >&2; fail "make install DESTDIR=$dest failed"; }

(cd "$dest" && find . ! -type d | sed 's|^\.||' | sort) > "$T/files"
{
	echo "$sbindir/smtd"
	echo "$bindir/smtctl"
	echo "$libdir/libsmthostname.so"
	echo "$libdir/libsmtlinebuf.so"
	echo "$mandir/man1/smtctl.1"
	echo "$mandir/man3/libsmthostname.3"
	echo "$mandir/man5/smtd-config.5"
	echo "$mandir/man8/smtd.8"
	echo "$unitdir/smtd.service"
	echo "$tmpfilesdir/smtd.conf"
} | sort > "$T/expected"
# libtool installs a .la next to a module; it is harmless and optional.
grep -v "^$libdir/libsmt\(hostname\|linebuf\).la\$" "$T/files" > "$T/files.core"
if ! diff -u "$T/expected" "$T/files.core" > "$T/diff"; then
	cat "$T/diff" >&2
	fail "installed files differ from the expected list"
fi
# A module, not a library to link against: no static archive, no soname links.
assert_not_contains "$T/files" ".a" "static archive"
grep -q 'libsmt\(hostname\|linebuf\)\.so\.' "$T/files" && fail "a versioned libsmt*.so.N installed"

[ -x "$dest$sbindir/smtd" ] || fail "smtd is not executable"
[ -x "$dest$bindir/smtctl" ] || fail "smtctl is not executable"
"$dest$sbindir/smtd" --version > "$T/version" || fail "installed smtd --version exited $?"
assert_contains "$T/version" "smtd " "installed smtd --version"
# The preload library depends on libc only, and exports gethostname.
if command -v nm >/dev/null 2>&1; then
	nm -D --defined-only "$dest$libdir/libsmthostname.so" | grep -qw gethostname ||
		fail "installed libsmthostname.so does not export gethostname"
	# libsmtlinebuf.so exports nothing: it only acts before main().
	[ -z "$(nm -D --defined-only "$dest$libdir/libsmtlinebuf.so" | awk '$2 ~ /^[TDB]$/')" ] ||
		fail "installed libsmtlinebuf.so exports symbols: $(nm -D --defined-only "$dest$libdir/libsmtlinebuf.so")"
fi
# The installed unit starts the installed daemon.
grep -qx "ExecStart=$sbindir/smtd" "$dest$unitdir/smtd.service" ||
	fail "installed unit does not run $sbindir/smtd"
assert_eq "$(stat -c %a "$dest$mandir/man8/smtd.8")" 644 "mode of smtd.8"
assert_eq "$(stat -c %a "$dest$unitdir/smtd.service")" 644 "mode of smtd.service"

submake uninstall DESTDIR="$dest" > "$T/uninstall.out" 2>&1 ||
	{ tail -20 "$T/uninstall.out" >&2; fail "make uninstall failed"; }
left=$(cd "$dest" && find . ! -type d)
[ -z "$left" ] || fail "make uninstall left: $left"
echo "install: ok ($(wc -l < "$T/files") files)"
