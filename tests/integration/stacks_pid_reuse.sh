#!/bin/sh
# A stack read of a PID that was reused during the read (daemon/stacks.c,
# smtd(8) SECURITY): the tools attach by number, and a rank that ends
# while its stack is read can be followed at that number by another
# process, whose stack - or what a tool of the rank's made up - must not
# be taken for the rank's.  smtd notes the target's start time when the
# read begins and checks it again once the tool is done.
#
# In a PID namespace of its own (ns_last_pid chooses the next PID), a
# stand-in eu-stack (tests/helpers/stacks_read --path) prints a stack for
# the PID it was given, then waits while the test ends that process and
# starts another at the same PID; the read must end "process PID is gone",
# never with that stack.
. "$top_srcdir/tests/lib.sh"
if [ "${SMT_STACKS_NS:-}" != 1 ]; then
	[ "$(id -u)" = 0 ] || skip "needs root for a PID namespace"
	unshare --pid --fork --mount-proc true 2>/dev/null || skip "no PID namespaces here"
	SMT_STACKS_NS=1 exec unshare --pid --fork --mount-proc sh "$0"
fi
[ -w /proc/sys/kernel/ns_last_pid ] || skip "/proc/sys/kernel/ns_last_pid is not writable here"
smt_tmpdir
READ="$top_builddir/tests/helpers/stacks_read"
mkdir "$T/bin"
mkfifo "$T/go"
cat >"$T/bin/eu-stack" <<EOS
#!/bin/sh
# eu-stack -p PID: a stack for PID, then wait for the test.
echo "PID \$2 - process"
echo "TID \$2:"
echo "#0  0x00007f1234567890 frame_of_the_process_read"
: >"$T/printed"
read x <"$T/go"
EOS
chmod 755 "$T/bin/eu-stack"

Q=
/bin/sleep 300 &
P=$!
trap 'kill -9 $P $Q 2>/dev/null; rm -rf "$T"' EXIT
"$READ" --path "$T/bin" --timeout 20000 "$P" >"$T/out" 2>&1 &
R=$!
wait_for_file "$T/printed" 20 || fail "the stand-in eu-stack did not run: $(cat "$T/out")"

# The process read ends; another takes its PID (one clock tick later, so
# that the start times differ).
kill -9 "$P"
wait "$P" 2>/dev/null
sleep 0.05
n=0
while :; do
	echo $((P - 1)) >/proc/sys/kernel/ns_last_pid
	/bin/sleep 300 &
	Q=$!
	[ "$Q" != "$P" ] || break
	kill -9 "$Q"
	wait "$Q" 2>/dev/null
	n=$((n + 1))
	[ $n -lt 50 ] || fail "PID $P was not given again"
done
echo go >"$T/go"
wait "$R" || fail "stacks_read failed: $(cat "$T/out")"
assert_contains "$T/out" "=== $P reason: process $P is gone" "the read of a reused PID"
assert_not_contains "$T/out" "frame_of_the_process_read" "the reused PID's stack"
kill -9 "$Q"
echo "ok: PID $P reused after $n tries"
