"""restart_job.py - an mpi4py job whose attempts behave differently.

SMTD_RESTART_COUNT (smtd's) is the attempt, -1 when absent.  Every rank
prints "rank R attempt A starts", then checks that no process of an
earlier attempt on its host is still alive (each rank, and the daemon a
rank double-forked, left its PID in RJ_DIR/pid.A.*): a line
"rank R: process P of attempt A is still alive" if one is.  RJ_MODE:
  ok           every rank ends at once (0)
  fail         rank RJ_RANK raises ValueError in attempt 0; later attempts end (0)
  fail-always  rank RJ_RANK raises ValueError in every attempt
  stall        rank RJ_RANK sleeps in attempt 0 while the others wait in a
               barrier; later attempts end (0)
  hold         attempt 0 prints a line every 0.2 s forever; later ones end (0)
  daemon       in attempt 0 every rank double-forks a sleeping daemon (its
               own session) and rank RJ_RANK raises; later attempts end (0)
"""
import os
import sys
import time

from mpi4py import MPI


def alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def daemonize(path):
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            with open(path + ".tmp", "w") as f:
                f.write("%d\n" % os.getpid())
            os.rename(path + ".tmp", path)
            os.execv("/bin/sleep", ["sleep", "3600"])
        os._exit(0)
    while not os.path.exists(path):
        time.sleep(0.01)


def main():
    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    attempt = int(os.environ.get("SMTD_RESTART_COUNT", "-1"))
    mode = os.environ.get("RJ_MODE", "ok")
    odd = int(os.environ.get("RJ_RANK", "4"))
    state = os.environ.get("RJ_DIR", "/opt/ml/rj")
    os.makedirs(state, exist_ok=True)
    print("rank %d attempt %d starts" % (rank, attempt), flush=True)
    for name in sorted(os.listdir(state)):
        parts = name.split(".")
        if parts[0] != "pid" or not parts[1].isdigit() or int(parts[1]) >= attempt:
            continue
        with open(os.path.join(state, name)) as f:
            pid = int(f.read())
        if alive(pid):
            print("rank %d: process %d of attempt %s is still alive" % (rank, pid, parts[1]),
                  flush=True)
    with open(os.path.join(state, "pid.%d.rank%d" % (attempt, rank)), "w") as f:
        f.write("%d\n" % os.getpid())
    first = attempt == 0
    if mode == "daemon" and first:
        daemonize(os.path.join(state, "pid.0.daemon%d" % rank))
    comm.Barrier()
    if rank == odd and ((mode in ("fail", "daemon") and first) or mode == "fail-always"):
        raise ValueError("bad batch in attempt %d" % attempt)
    if mode == "stall" and first:
        if rank == odd:
            time.sleep(3600)
        comm.Barrier()
    if mode == "hold" and first:
        while True:
            print("rank %d attempt %d running" % (rank, attempt), flush=True)
            time.sleep(0.2)
    print("rank %d attempt %d done" % (rank, attempt), flush=True)


if __name__ == "__main__":
    main()
