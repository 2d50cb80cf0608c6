# rank-raise (docs/MULTIHOST-TESTING.md): a rank on the leader raises a
# Python exception.
from mpi4py import MPI

c = MPI.COMM_WORLD
if c.Get_rank() == 0:
    raise ValueError("bench: shapes do not match")
c.Barrier()
