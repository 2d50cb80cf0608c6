"""A tiny MPI job: every rank reports where it runs; rank 0 writes the
answers to $SM_MODEL_DIR/result.json.  Run by smtd as
`python3 -m mpi4py /opt/ml/code/train.py --epochs 2`."""
import argparse
import json
import os
import socket

from mpi4py import MPI

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=1)
args = parser.parse_args()

comm = MPI.COMM_WORLD
me = {
    "rank": comm.Get_rank(),
    "size": comm.Get_size(),
    "SM_CURRENT_HOST": os.environ.get("SM_CURRENT_HOST"),
    "gethostname": socket.gethostname(),
    "GREETING": os.environ.get("GREETING"),
    "channel": os.environ.get("SM_CHANNEL_TRAINING"),
}
total = comm.allreduce(me["rank"], op=MPI.SUM)
print("rank %d of %d on %s, %d epochs, sum of ranks %d"
      % (me["rank"], me["size"], me["gethostname"], args.epochs, total), flush=True)
everyone = comm.gather(me, root=0)
if me["rank"] == 0:
    path = os.path.join(os.environ["SM_MODEL_DIR"], "result.json")
    with open(path, "w") as f:
        json.dump(everyone, f, indent=1, sort_keys=True)
    print("wrote %s" % path, flush=True)
