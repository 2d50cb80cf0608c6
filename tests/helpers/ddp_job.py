"""ddp_job.py - a small PyTorch DDP job under torchrun, gloo.

Each process all-reduces a tensor of ones (every process must see the
world size), then trains a tiny linear model with DDP and SGD on random
data for a few steps, printing one line per step, and reports itself in
one line: its rank, the world size, its host (SM_CURRENT_HOST and
gethostname()) and the NCCL variables torchrun's environment gave it.
Rank, world size and the master come from torchrun (RANK, WORLD_SIZE,
MASTER_ADDR, MASTER_PORT).  Runs with Debian's python3-torch (1.13).

Options (the toolkit passes hyperparameters as --key value):
  --steps N          training steps (default 3)
  --mark_dir DIR     write DIR/ready.R once trained (and DIR/raise.R, the
                     time, just before raising)
  --hold FILE        once trained, wait until FILE exists, then end (0)
  --raise_rank R     rank R raises ValueError("shapes do not match") at
                     step 1, while the others wait in the all-reduce
  --trap_term S      SIGTERM: add the time to DIR/term.R (a line each
                     time one comes), go on for S seconds as a checkpoint
                     would, write DIR/done.R and end with 0
"""
import argparse
import os
import signal
import socket
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def write(path, text):
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.rename(path + ".tmp", path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--mark_dir")
    ap.add_argument("--hold")
    ap.add_argument("--raise_rank", type=int, default=-1)
    ap.add_argument("--trap_term", type=float, default=-1)
    a, _ = ap.parse_known_args()
    rank = int(os.environ["RANK"])
    mark = (lambda name: os.path.join(a.mark_dir, "%s.%d" % (name, rank))) if a.mark_dir else None

    if a.trap_term >= 0:
        got = []

        def on_term(signo, frame):
            # One line for every SIGTERM: a stop must deliver it once.
            with open(mark("term"), "a") as f:
                f.write("%.3f\n" % time.time())
            got.append(signo)
            if len(got) > 1:
                print("rank %d: SIGTERM again" % rank, flush=True)
                return
            print("rank %d: SIGTERM, checkpointing for %.1f s" % (rank, a.trap_term), flush=True)
            time.sleep(a.trap_term)
            write(mark("done"), "%.3f\n" % time.time())
            print("rank %d: checkpoint written" % rank, flush=True)
            os._exit(0)
        signal.signal(signal.SIGTERM, on_term)

    dist.init_process_group("gloo")
    world = dist.get_world_size()
    ones = torch.ones(4)
    dist.all_reduce(ones)
    env = " ".join("%s=%s" % (k, os.environ.get(k)) for k in
                   ("SM_CURRENT_HOST", "NCCL_SOCKET_IFNAME", "NCCL_PROTO", "LOCAL_RANK"))
    print("rank %d of %d on %s: all-reduce %.1f %s" %
          (rank, world, socket.gethostname(), ones[0].item(), env), flush=True)

    torch.manual_seed(rank)
    model = DDP(nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(a.steps):
        if rank == a.raise_rank and step == 1:
            write(mark("raise"), "%.3f\n" % time.time())
            raise ValueError("shapes do not match")
        x, y = torch.randn(16, 8), torch.randn(16, 1)
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        total = torch.tensor([loss.item()])
        dist.all_reduce(total)
        print("rank %d step %d loss %.4f" % (rank, step, total.item() / world), flush=True)

    if mark:
        write(mark("ready"), "%.3f\n" % time.time())
    if a.hold:
        deadline = time.time() + 300
        while not os.path.exists(a.hold):
            if time.time() > deadline:
                print("rank %d: %s never came" % (rank, a.hold), flush=True)
                return 3
            time.sleep(0.05)
    print("rank %d done" % rank, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
