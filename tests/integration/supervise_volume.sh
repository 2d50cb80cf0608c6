#!/bin/sh
# Output at volume through smtd and the real mpirun --xml: every byte of 1
# GiB of lines, of a 10 MiB line and of random binary bytes arrives (the
# checksums match once the tags are taken off), and smtd's peak memory
# stays bounded.
. "$top_srcdir/tests/lib.sh"
smt_tmpdir
MPIDIR=$("$top_srcdir/tests/helpers/build-mpi.sh") || exit $?
JOB="$MPIDIR/mpi_job"
mkdir -p "$T/root"
export PATH="/usr/bin:$PATH"
# Freed memory in ASan's quarantine would count as smtd's own.
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:quarantine_size_mb=8"
GIB=${SMT_VOLUME_BYTES:-1073741824}
if ldd "$SMTD" 2>/dev/null | grep -q libasan; then
	VOLUME_MAX_KB=$((40 * 1024))
else
	VOLUME_MAX_KB=$((20 * 1024))
fi

# run NAME FILE [MODE]: rank 0 copies FILE to its stdout under smtd (1 rank);
# smtd's stdout goes to a checksum of the untagged lines.
run() {
	name=$1 file=$2 mode=${3:-bytes}
	rm -rf "$T/root/output"
	rc=0
	"$SMTD" --root "$T/root" --sshd never --mpi --processes-per-host 1 -- "$JOB" "$mode" "$file" \
		2>"$T/$name.err" | sed 's/^\[1,mpirank:0,[^]]*\]<stdout>: //' | sha256sum | cut -d' ' -f1 >"$T/$name.sum" &
	pipe=$!
	# smtd is the pipeline's first process: find it to read its peak RSS.
	# The oldest that matches: a child it forked still has its command line
	# until it execs (mpirun, whose 20 MiB a loaded machine measured).
	i=0; spid=
	while [ -z "$spid" ] && [ $i -lt 200 ]; do
		spid=$(pgrep -o -f -- "--root $T/root --sshd never" || true); i=$((i + 1)); sleep 0.05
	done
	[ -n "$spid" ] || { kill $pipe 2>/dev/null; fail "$name: smtd not found by pgrep: its peak RSS cannot be read"; }
	hwm=0
	while kill -0 "$spid" 2>/dev/null; do
		h=$(awk '/^VmHWM/ {print $2}' "/proc/$spid/status" 2>/dev/null || echo 0)
		[ -n "$h" ] && [ "$h" -gt "$hwm" ] && hwm=$h
		sleep 0.2
	done
	wait $pipe || rc=$?
	[ "$hwm" -gt 0 ] || fail "$name: no VmHWM read for smtd (pid $spid)"
	[ -f "$T/root/output/success" ] || { tail -20 "$T/$name.err"; fail "$name: no success file"; }
	want=$(sha256sum <"$file" | cut -d' ' -f1)
	assert_eq "$(cat "$T/$name.sum")" "$want" "$name: checksum of what smtd forwarded"
	echo "$name: $(stat -c %s "$file") bytes intact; smtd peak RSS $((hwm / 1024)) MiB"
	PEAK_KB=$hwm
}

# 1 GiB of 100-byte lines, made by a generator (not stored twice).
/usr/bin/python3 - "$T/gib.txt" "$GIB" <<'PY'
import sys
line = b"%09d " + b"abcdefghijklmnopqrstuvwxyz0123456789" * 2 + b"ABCDEFGHIJKLMNOPQRSTUVWXY\n"
n = int(sys.argv[2]) // 100
with open(sys.argv[1], "wb") as f:
    for i in range(0, n, 10000):
        f.write(b"".join(line % j for j in range(i, min(n, i + 10000))))
PY
t0=$(date +%s%N)
run gib "$T/gib.txt"
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
echo "1 GiB through mpirun --xml and smtd in $ms ms ($(( $(stat -c %s "$T/gib.txt") / 1024 / (ms > 0 ? ms : 1) )) MiB/s)"
rm -f "$T/gib.txt"
# The documented caps (output.h, smtd(8) Memory) are under 8 MiB for one
# rank, the log ring's 1 MiB and the stdout buffers included, on top of the
# idle daemon (about 4 MiB; 15 MiB with the sanitizers, and ASan's 8 MiB
# quarantine of freed memory): 20 MiB, 40 MiB sanitized.  (It was 160.)
[ "$PEAK_KB" -lt "$VOLUME_MAX_KB" ] ||
	fail "smtd's peak RSS $((PEAK_KB / 1024)) MiB over 1 GiB of output (bound $((VOLUME_MAX_KB / 1024)) MiB)"

# One 10 MiB line.
/usr/bin/python3 -c 'import sys; sys.stdout.write("x" * (10 << 20) + "\n")' >"$T/long.txt"
run long "$T/long.txt"

# Control bytes, NULs and invalid UTF-8 under mpirun, in the small pieces
# mpirun 4.1.4 survives: its --xml output buffer overflows (ORTE_ERROR_LOG
# "Out of resource" in iof_base_output.c, then a segfault) when one chunk
# holds more than about 1,400 bytes outside printable ASCII, each written as
# "&#NNN;".  This is mpirun's limit, documented in smtd(8) BUGS.
/usr/bin/python3 - "$T/binary.txt" <<'PY'
import random, sys
random.seed(7)
with open(sys.argv[1], "wb") as f:
    for i in range(2000):
        # 4 bytes of 40 outside printable ASCII: even a full 4 KiB chunk of
        # these stays well inside mpirun's buffer.
        head = bytes(random.choice([0, 1, 9, 13, 27, 127, 128, 192, 255]) for _ in range(4))
        f.write(head + bytes(random.randrange(32, 127) for _ in range(36)) + b"\n")
PY
run binary "$T/binary.txt" slowcopy

# 8 MiB of random bytes (NULs, 0xFF, invalid UTF-8) from a standalone
# program: no mpirun, smtd's own line splitting.
head -c 8388608 /dev/urandom >"$T/random.bin"
printf '\n' >>"$T/random.bin"
rm -rf "$T/root/output"
"$SMTD" --root "$T/root" --sshd never -- /bin/cat "$T/random.bin" 2>"$T/random.err" |
	sed 's/^\[1,mpirank:0,[^]]*\]<stdout>: //' | sha256sum | cut -d' ' -f1 >"$T/random.sum"
assert_eq "$(cat "$T/random.sum")" "$(sha256sum <"$T/random.bin" | cut -d' ' -f1)" "8 MiB of random bytes, standalone"
echo "random: 8 MiB of random bytes intact"
echo ok
