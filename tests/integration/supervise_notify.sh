#!/bin/sh
# Under systemd (Type=notify): READY=1 once the control socket answers, a
# STATUS= for every state, WATCHDOG=1 while WATCHDOG_USEC asks for it -
# received on a real datagram socket standing in for NOTIFY_SOCKET.
. "$top_srcdir/tests/lib.sh"
smt_tmpdir
mkdir -p "$T/root"
/usr/bin/python3 - "$T/notify.sock" "$T/msgs" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(30)
with open(sys.argv[2], "w") as f:
    while True:
        try:
            m = s.recv(4096)
        except socket.timeout:
            break
        f.write(m.decode() + "\n")
        f.flush()
        if b"STATUS=succeeded" in m:
            break
PY
LISTENER=$!
wait_for_file "$T/notify.sock" || fail "the stand-in notify socket did not appear"
rc=0
NOTIFY_SOCKET="$T/notify.sock" WATCHDOG_USEC=200000 timeout 30 "$SMTD" --root "$T/root" --sshd never \
	-- /bin/sleep 1 >"$T/out" 2>&1 || rc=$?
wait $LISTENER
assert_eq "$rc" 0 "exit code under a notify socket"
for m in READY=1 STATUS=starting STATUS=launching STATUS=running STATUS=succeeded WATCHDOG=1; do
	grep -qx "$m" "$T/msgs" || fail "no $m in: $(tr '\n' ' ' < "$T/msgs")"
done
# READY=1 comes before the job is launched: the socket answers by then.
awk '/^READY=1$/ { r = NR } /^STATUS=launching$/ { l = NR } END { exit !(r && l && r < l) }' "$T/msgs" ||
	fail "READY=1 not before launching: $(tr '\n' ' ' < "$T/msgs")"
echo "$(grep -c WATCHDOG=1 "$T/msgs") watchdog pings in 1 s at WATCHDOG_USEC=200000"
echo ok
