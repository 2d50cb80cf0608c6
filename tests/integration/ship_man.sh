#!/bin/sh
# The man pages render without warnings and keep up with the programs:
# every long option of `smtd --help` and every SMTD_* variable smtd reads
# is in smtd(8), every command of smtctl in smtctl(1), every SMTD_* variable
# in smtd-config(5).
. "$top_srcdir/tests/lib.sh"
smt_tmpdir
man="$top_srcdir/man"
pages="smtd.8 smtctl.1 smtd-config.5 libsmthostname.3"

command -v mandoc >/dev/null 2>&1 || command -v groff >/dev/null 2>&1 ||
	skip_tool "mandoc and groff (man-db)"
for p in $pages; do
	[ -f "$man/$p" ] || fail "man/$p is missing"
	if command -v mandoc >/dev/null 2>&1; then
		mandoc -T lint -W warning "$man/$p" > "$T/lint" 2>&1 ||
			{ cat "$T/lint" >&2; fail "mandoc -T lint -W warning $p"; }
		[ ! -s "$T/lint" ] || { cat "$T/lint" >&2; fail "mandoc warns about $p"; }
	fi
	if command -v groff >/dev/null 2>&1; then
		groff -ww -z -man "$man/$p" > "$T/groff" 2>&1 || fail "groff -ww -z -man $p failed"
		[ ! -s "$T/groff" ] || { cat "$T/groff" >&2; fail "groff warns about $p"; }
	fi
done

# The pages as a reader sees them (mdoc source spells "--" as "\-").
render() {
	if command -v mandoc >/dev/null 2>&1; then
		mandoc -T ascii "$1" | col -bx 2>/dev/null || mandoc -T ascii "$1" | sed 's/.\x08//g'
	else
		groff -man -T ascii "$1" 2>/dev/null | sed 's/.\x08//g'
	fi
}
for p in smtd.8 smtctl.1 smtd-config.5; do
	render "$man/$p" > "$T/$p.txt"
	[ -s "$T/$p.txt" ] || fail "$p renders empty"
done

# Every long option of smtd --help in smtd(8).
"$SMTD" --help > "$T/help" || fail "smtd --help exited $?"
grep -o -- '--[a-z][a-z-]*' "$T/help" | sort -u > "$T/options"
[ "$(wc -l < "$T/options")" -ge 20 ] || fail "smtd --help lists only $(wc -l < "$T/options") options"
while read -r opt; do
	grep -qE -- "(^|[^a-z-])$opt([^a-z-]|\$)" "$T/smtd.8.txt" || fail "smtd(8) does not document $opt"
done < "$T/options"

# Every SMTD_* variable smtd reads (from its help and its source) in smtd(8)
# and smtd-config(5).
{
	grep -o 'SMTD_[A-Z_]*' "$T/help"
	grep -o '"SMTD_[A-Z_]*"' "$top_srcdir/daemon/options.c" | tr -d '"'
} | sort -u > "$T/vars"
[ "$(wc -l < "$T/vars")" -ge 20 ] || fail "found only $(wc -l < "$T/vars") SMTD_* variables"
while read -r var; do
	[ "$var" = SMTD_GPU_PROBE_ROOT ] ||
		grep -qw -- "$var" "$T/smtd.8.txt" || fail "smtd(8) does not document $var"
	grep -qw -- "$var" "$T/smtd-config.5.txt" || fail "smtd-config(5) does not document $var"
done < "$T/vars"

# Every failure kind that smtd writes in smtd(8).
# (a summary starts with its kind, a CamelCase word: "LostHost: worker ...")
grep -hoE '"[A-Z][a-z]+([A-Z][a-z]+)+: ' "$top_srcdir"/daemon/leader.c \
	"$top_srcdir"/daemon/worker.c "$top_srcdir"/daemon/daemon.c \
	"$top_srcdir"/daemon/smtd.c | tr -d '": ' > "$T/kinds"
grep -o '= "[A-Z][A-Za-z]*"' "$top_srcdir/daemon/report.c" | tr -d '="  ' >> "$T/kinds"
for k in RankFailed RankKilled OutOfMemory ProgramNotFound ProgramNotExecutable LaunchFailed \
	MpirunKilled JobFailed Stopped LostHost LostLeader PeersNotReady LeaderNotReady \
	ConfigurationError SshdFailed; do
	echo "$k"
done >> "$T/kinds"
sort -u "$T/kinds" | grep -v '^InternalError$' > "$T/kinds.u"
[ "$(wc -l < "$T/kinds.u")" -ge 15 ] || fail "found only $(wc -l < "$T/kinds.u") failure kinds"
while read -r k; do
	grep -qw -- "$k" "$T/smtd.8.txt" || fail "smtd(8) does not document the failure kind $k"
done < "$T/kinds.u"

# Every smtctl command, from its help and from its command table, in smtctl(1).
"$SMTCTL" --help > "$T/ctlhelp" || fail "smtctl --help exited $?"
{
	sed -n '/^commands:/,/^$/p' "$T/ctlhelp" | sed -n 's/^  \([a-z][a-z-]*\).*/\1/p'
	sed -n 's/^[[:space:]]*{ "\([a-z][a-z-]*\)", cmd_.*/\1/p' "$top_srcdir/client/smtctl.c"
} | sort -u > "$T/commands"
[ "$(wc -l < "$T/commands")" -ge 8 ] || fail "found only $(wc -l < "$T/commands") smtctl commands"
grep -qx exec-orted "$T/commands" || fail "exec-orted not found among smtctl's commands"
sed -n '/^COMMANDS/,/^[A-Z]/p' "$T/smtctl.1.txt" > "$T/commands.txt"
while read -r c; do
	grep -qE "^     $c( |\$)" "$T/commands.txt" || fail "smtctl(1) has no entry for the command $c"
done < "$T/commands"
# and its options (read from a file: a `fail` in a piped loop would only
# leave the loop's subshell)
grep -o -- '--[a-z][a-z-]*' "$T/ctlhelp" | sort -u > "$T/ctloptions"
[ "$(wc -l < "$T/ctloptions")" -ge 3 ] || fail "smtctl --help lists only $(wc -l < "$T/ctloptions") options"
while read -r opt; do
	grep -qE -- "(^|[^a-z-])$opt([^a-z-]|\$)" "$T/smtctl.1.txt" || fail "smtctl(1) does not document $opt"
done < "$T/ctloptions"

assert_contains "$T/smtctl.1.txt" "curl --unix-socket /run/smtd/smtd.sock http://localhost/v1/status" \
	"smtctl(1) curl example"
assert_contains "$T/smtd.8.txt" "--peer-timeout s" "smtd(8) --peer-timeout"
grep -A8 -- '--peer-timeout s' "$T/smtd.8.txt" | grep -q 'default 10' ||
	fail "smtd(8) does not give --peer-timeout's default of 10 s"
for code in 0 1 2 3 '128\+N'; do
	sed -n '/^EXIT STATUS/,/^[A-Z]/p' "$T/smtd.8.txt" | grep -qE "^     $code " ||
		fail "smtd(8) EXIT STATUS lacks $code"
done
for code in 0 1 2 3 4; do
	sed -n '/^EXIT STATUS/,/^[A-Z]/p' "$T/smtctl.1.txt" | grep -qE "^     $code " ||
		fail "smtctl(1) EXIT STATUS lacks $code"
done
for s in starting waiting-for-peers waiting-for-leader launching running finishing \
	succeeded failed stopped; do
	grep -qE "^     $s( |\$)" "$T/smtd.8.txt" || fail "smtd(8) does not describe the state $s"
done
echo "man pages: ok ($(wc -l < "$T/options") smtd options, $(wc -l < "$T/commands") smtctl commands)"
