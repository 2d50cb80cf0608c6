"""mpi_stall.py - an mpi4py job where one rank sleeps while the others wait.

Run as `mpirun -np N /usr/bin/python3 -m mpi4py mpi_stall.py` (Debian's
python3-mpi4py imports only under /usr/bin/python3).  Every rank prints a
line, then the rank named by SMT_STALL_RANK (default: the last) sleeps in
time.sleep forever while every other rank waits in MPI_Barrier (comm.Barrier).
With SMT_STALL_RANK=-1 no rank sleeps and the job ends.
"""
import os
import sys
import time

from mpi4py import MPI


def stuck():
    while True:
        time.sleep(3600)


def main():
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    stall_rank = int(os.environ.get("SMT_STALL_RANK", str(size - 1)))
    print(f"rank {rank} of {size} ready", flush=True)
    if rank == stall_rank:
        stuck()
    comm.Barrier()
    print(f"rank {rank} passed the barrier", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
