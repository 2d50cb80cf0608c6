#!/bin/sh
# The documents that describe the code are checked against it.
#   1. docs/ARCHITECTURE.md names every source file of daemon/, client/,
#      proto/ and preload/, and every file it names exists.
#   2. smtd(8)'s list of failure kinds is the kinds table of
#      daemon/report.c, each with its exit status.
#   3. Every key of a real /v1/status is a name of proto/smt_proto.h.
#   4. Every module's row in docs/ARCHITECTURE.md names the tests that
#      exercise it (its "tested by" column), each a file of the tree, and
#      every test of tests/unit, tests/integration and tests/multihost is
#      named by a row.
. "$top_srcdir/tests/lib.sh"
smt_tmpdir
ARCH="$top_srcdir/docs/ARCHITECTURE.md"
MAN="$top_srcdir/man/smtd.8"

# ---- 1. the module list ----
missing=
for f in "$top_srcdir"/daemon/*.c "$top_srcdir"/client/*.c "$top_srcdir"/proto/*.c \
	"$top_srcdir"/preload/*.c; do
	rel=${f#"$top_srcdir"/}
	grep -qF "\`$rel\`" "$ARCH" || missing="$missing $rel"
done
[ -z "$missing" ] || fail "docs/ARCHITECTURE.md does not name:$missing"
stale=
for rel in $(grep -oE '`(daemon|client|proto|preload)/[A-Za-z0-9_.-]+\.[ch]`' "$ARCH" | tr -d '`' | sort -u); do
	[ -e "$top_srcdir/$rel" ] || stale="$stale $rel"
done
[ -z "$stale" ] || fail "docs/ARCHITECTURE.md names files that do not exist:$stale"
for d in daemon client proto preload man systemd examples scripts tests bench docs; do
	grep -qF "| \`$d/\` |" "$ARCH" || fail "docs/ARCHITECTURE.md does not describe the directory $d/"
done
echo "ARCHITECTURE.md: $(ls "$top_srcdir"/daemon/*.c "$top_srcdir"/client/*.c "$top_srcdir"/proto/*.c "$top_srcdir"/preload/*.c | wc -l) source files, all named"

# ---- 4. the tests of each module ----
# A module's row: | concern | `dir/file.c` | `test_x`, `y.sh`, ... |.  A
# name is tests/unit/NAME.c, or tests/integration/NAME or
# tests/multihost/NAME for a script.
grep -E '^\| .* \| `(daemon|client|proto|preload)/[A-Za-z0-9_.-]+\.[ch]` \|' "$ARCH" >"$T/rows"
[ "$(wc -l <"$T/rows")" -gt 50 ] || fail "docs/ARCHITECTURE.md: no module tables found"
bad=$(grep -vE '^\| .* \| `[a-z]+/[^`]+` \| `[a-z0-9_]+(\.sh)?`(, `[a-z0-9_]+(\.sh)?`)* \|$' "$T/rows" |
	sed -E 's/.*`([a-z]+\/[^`]+)` \|.*/\1/' | tr '\n' ' ')
[ -z "$bad" ] || fail "docs/ARCHITECTURE.md: rows without a \"tested by\" column of test names: $bad"
# Every name in a "tested by" column, also of the tables of no one module.
grep -E '^\| .* \| `[a-z0-9_]+(\.sh)?`(, `[a-z0-9_]+(\.sh)?`)* \|$' "$ARCH" |
	sed -E 's/.* \| (`[^|]*) \|$/\1/' | tr -d '`' | tr ',' '\n' | tr -d ' ' | sort -u >"$T/named"
unknown=
while read -r name; do
	case $name in
	*.sh) [ -f "$top_srcdir/tests/integration/$name" ] || [ -f "$top_srcdir/tests/multihost/$name" ] ;;
	*) [ -f "$top_srcdir/tests/unit/$name.c" ] ;;
	esac || unknown="$unknown $name"
done <"$T/named"
[ -z "$unknown" ] || fail "docs/ARCHITECTURE.md names tests that do not exist:$unknown"
# The tests: unit programs, integration scripts (not the *_lib.sh they
# source), multi-host scripts.
unnamed=
for f in "$top_srcdir"/tests/unit/test_*.c "$top_srcdir"/tests/integration/*.sh \
	"$top_srcdir"/tests/multihost/test_*.sh; do
	name=${f##*/}
	case $name in
	*_lib.sh) continue ;;
	*.c) name=${name%.c} ;;
	esac
	grep -qxF "$name" "$T/named" || unnamed="$unnamed $name"
done
[ -z "$unnamed" ] || fail "docs/ARCHITECTURE.md: no row says what these tests exercise:$unnamed"
echo "ARCHITECTURE.md: $(wc -l <"$T/rows") modules, each with its tests; $(wc -l <"$T/named") tests, all named"

# ---- 2. the failure kinds ----
"$top_builddir/tests/helpers/kinds" | sort >"$T/table"
[ -s "$T/table" ] || fail "the kinds helper printed nothing"
sed -n '/^\.Sh FAILURE FILE/,/^\.Sh /p' "$MAN" |
	sed -n 's/^\.It Li \([A-Za-z]*\) Pq exit \([0-9+N]*\)$/\1 \2/p' | sort >"$T/man"
if ! cmp -s "$T/table" "$T/man"; then
	diff "$T/table" "$T/man" || true
	fail "smtd(8)'s failure kinds (right) differ from daemon/report.c's table (left)"
fi
echo "smtd(8): $(wc -l <"$T/man") failure kinds, as in the table"

# ---- 3. the status keys ----
PY=/usr/bin/python3
[ -x $PY ] || PY=python3
sed -n 's/^#define SMT_F_[A-Z0-9_]* *"\([a-z0-9_]*\)".*/\1/p' "$top_srcdir/proto/smt_proto.h" |
	sort -u >"$T/names"
[ -s "$T/names" ] || fail "no SMT_F_ names found in proto/smt_proto.h"
mkdir -p "$T/r"
S="$T/s.sock"
"$SMTD" --root "$T/r" --socket "$S" --sshd never --stall-timeout 60 -- /bin/sh -c \
	'echo started; while [ ! -e "$0/go" ]; do sleep 0.05; done' "$T" >"$T/out" 2>&1 &
SPID=$!
wait_until 20 'api_get /v1/status >/dev/null 2>&1 && grep -q "\"lines\":1" "$T/body"' \
	'the job never printed: $(cat "$T/out")'
"$SMTCTL" --socket "$S" stacks --json >"$T/stacks.json" 2>"$T/stacks.err" || true
api_get /v1/status >/dev/null || fail "no status"
mv "$T/body" "$T/status"
touch "$T/go"
wait $SPID || fail "the job failed: $(tail -5 "$T/out")"
$PY - "$T/status" "$T/stacks.json" >"$T/keys" <<'PY' || fail "a status is not JSON"
import json, sys
keys = set()
def walk(v):
    if isinstance(v, dict):
        for k, x in v.items():
            keys.add(k)
            walk(x)
    elif isinstance(v, list):
        for x in v:
            walk(x)
for path in sys.argv[1:]:
    try:
        walk(json.load(open(path)))
    except ValueError:
        if path == sys.argv[1]:
            raise
for k in sorted(keys):
    print(k)
PY
unknown=$(comm -23 "$T/keys" "$T/names" | tr '\n' ' ')
[ -z "$unknown" ] || fail "status keys not named in proto/smt_proto.h: $unknown"
echo "/v1/status and /v1/stacks: $(wc -l <"$T/keys") keys, all in smt_proto.h"
