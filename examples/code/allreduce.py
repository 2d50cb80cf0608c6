"""The demo job: every rank reports itself, then all ranks sum their ranks.

Hyperparameters arrive as arguments (--epochs 3 --message ... --pause 2);
--pause N keeps the ranks alive N seconds so that `smtctl status` can be
watched while the job runs.
"""
import os
import socket
import sys
import time

from mpi4py import MPI

args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
print(f"rank {rank}/{size} on {socket.gethostname()} "
      f"(SM_CURRENT_HOST={os.environ.get('SM_CURRENT_HOST')}) args={sys.argv[1:]}", flush=True)
time.sleep(float(args.get("--pause", "0")))
total = comm.allreduce(rank, op=MPI.SUM)
if rank == 0:
    print(f"sum of ranks = {total} (expected {size * (size - 1) // 2})", flush=True)
    assert total == size * (size - 1) // 2
