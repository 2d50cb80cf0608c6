"""env_probe.py - an mpi4py rank that reports what reached it.

Each rank all-reduces its rank number (so the job really is one MPI job),
then writes OUT/rank-R.json: its rank, the world size, the sum, its host
name, the parent of this Python process (the program that started it), its
argv and every environment variable whose name starts with one of the
prefixes of interest (SageMaker data parallel, NCCL, EFA, the SM_CURRENT_*
of its host, the image's variables of the test).  Prints one line.

  python3 -m mpi4py env_probe.py --out DIR [any other --key value pairs]
"""
import json
import os
import socket
import sys

from mpi4py import MPI

PREFIXES = ("SMDATAPARALLEL_", "NCCL_", "FI_", "RDMAV_", "SAGEMAKER_", "SM_CURRENT_",
            "SM_DLC_", "IMAGE_", "SMT_")


def main():
    args = sys.argv[1:]
    out = args[args.index("--out") + 1]
    c = MPI.COMM_WORLD
    rank = c.Get_rank()
    total = c.allreduce(rank, op=MPI.SUM)
    try:
        with open("/proc/%d/comm" % os.getppid()) as f:
            parent = f.read().strip()
    except OSError:
        parent = "?"
    me = {
        "rank": rank,
        "size": c.Get_size(),
        "sum": total,
        "gethostname": socket.gethostname(),
        "parent": parent,
        "argv": sys.argv,
        "env": {k: v for k, v in os.environ.items() if k.startswith(PREFIXES)},
    }
    with open(os.path.join(out, "rank-%d.json" % rank), "w") as f:
        json.dump(me, f, sort_keys=True)
    print("rank %d of %d on %s: sum %d" % (rank, c.Get_size(), me["gethostname"], total),
          flush=True)


if __name__ == "__main__":
    main()
