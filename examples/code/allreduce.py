"""The demo job: every rank reports itself, then all ranks sum their ranks."""
import os
import socket
import sys

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
print(f"rank {rank}/{size} on {socket.gethostname()} "
      f"(SM_CURRENT_HOST={os.environ.get('SM_CURRENT_HOST')}) args={sys.argv[1:]}", flush=True)
total = comm.allreduce(rank, op=MPI.SUM)
if rank == 0:
    print(f"sum of ranks = {total} (expected {size * (size - 1) // 2})", flush=True)
    assert total == size * (size - 1) // 2
