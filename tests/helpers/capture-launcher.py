#!/usr/bin/python3
"""Stands in for `smtctl rank` while tests/helpers/capture-mpirun.sh records
what smtd sees of an mpirun job: the rank's stdout and stderr go to files in
$CAPTURE_DIR (smtd reads them from the pipes the real launcher hands it),
how the rank ended goes to rank-R.status, and the launcher ends as the
program ended (its exit code, or the same signal), so that mpirun sees
what it sees under smtd.  A program that cannot be executed is reported
on the launcher's own stderr, as the real launcher does."""
import errno
import os
import resource
import signal
import sys

rank = os.environ.get("OMPI_COMM_WORLD_RANK", "0")
d = os.environ["CAPTURE_DIR"]
flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
out = os.open(f"{d}/rank-{rank}.out", flags, 0o644)
err = os.open(f"{d}/rank-{rank}.err", flags, 0o644)
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.dup2(out, 1)
    os.dup2(err, 2)
    try:
        os.execvp(sys.argv[1], sys.argv[1:])
    except OSError as e:
        os.write(w, str(e.errno).encode())
        os._exit(127 if e.errno == errno.ENOENT else 126)
os.close(w)
os.close(out)
os.close(err)
msg = os.read(r, 32)
_, st = os.waitpid(pid, 0)
with open(f"{d}/rank-{rank}.status", "w") as f:
    if msg:
        f.write(f"exec {errno.errorcode[int(msg)]}\n")
    elif os.WIFSIGNALED(st):
        f.write(f"signal {os.WTERMSIG(st)}\n")
    else:
        f.write(f"exit {os.WEXITSTATUS(st)}\n")
if msg:
    e = int(msg)
    sys.stderr.write(f"smtctl rank: cannot execute {sys.argv[1]}: {os.strerror(e)}\n")
    sys.exit(127 if e == errno.ENOENT else 126)
if os.WIFSIGNALED(st):
    sig = os.WTERMSIG(st)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if sig not in (signal.SIGKILL, signal.SIGSTOP):
        signal.signal(sig, signal.SIG_DFL)
    os.kill(os.getpid(), sig)
sys.exit(os.WEXITSTATUS(st))
