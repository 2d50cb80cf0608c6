"""b10job.py - B10's job (bench/b10_restart.sh): torch DDP (gloo) or mpi4py.

First thing, before any import that takes time, each process writes the
moment its process started (from /proc/self/stat, as the kernel counts it)
to DIR/start.A.R, A the attempt (SMTD_RESTART_COUNT under smtd,
TORCHELASTIC_RESTART_COUNT under torchrun's own restarts).  In attempt 0
rank 4 writes DIR/fail.0 (the time) and exits 1 once every rank is up,
at once (os._exit): the time Python and torch take to tear down before a
process ends (0.73 s measured here for a gloo rank) is the rank's own, as
its grace is, and no launcher sees the exit before the process ended;
with B10_STALL=1 it sleeps instead (nothing is printed: the job stalls).
Attempt 1 ends at once, with 0.  Usage: b10job.py torch|mpi DIR.
"""
import os
import sys
import time


def started():
    with open("/proc/self/stat") as f:
        ticks = int(f.read().rsplit(")", 1)[1].split()[19])
    age = time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
    return time.time() - age


def put(path, value):
    with open(path + ".tmp", "w") as f:
        f.write("%.6f\n" % value)
    os.rename(path + ".tmp", path)


def main():
    t0 = started()
    kind, out = sys.argv[1], sys.argv[2]
    attempt = int(os.environ.get("SMTD_RESTART_COUNT", os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")))
    os.makedirs(out, exist_ok=True)
    if kind == "torch":
        import torch
        import torch.distributed as dist
        rank = int(os.environ["RANK"])
        put(os.path.join(out, "start.%d.%d" % (attempt, rank)), t0)
        dist.init_process_group("gloo")
        barrier = dist.barrier
    else:
        from mpi4py import MPI
        rank = MPI.COMM_WORLD.Get_rank()
        put(os.path.join(out, "start.%d.%d" % (attempt, rank)), t0)
        barrier = MPI.COMM_WORLD.Barrier
    print("rank %d attempt %d up" % (rank, attempt), flush=True)
    barrier()
    if attempt == 0:
        if rank == 4:
            if os.environ.get("B10_STALL") == "1":
                time.sleep(3600)
            sys.stdout.flush()
            put(os.path.join(out, "fail.0"), time.time())
            os._exit(1)
        barrier()
        time.sleep(3600)


if __name__ == "__main__":
    main()
