"""ddp_stall.py - a small PyTorch DDP job whose chosen rank stops.

Each rank trains a tiny linear model on random data with SGD under the gloo
backend, prints one line per step, and all-reduces a tensor after every
step.  The rank named by SMT_STALL_RANK sleeps forever just before the
all-reduce of step SMT_STALL_STEP (default 2), so every other rank then
waits in dist.all_reduce: the stall smtd must notice and diagnose.

Rank and world size come from torchrun (RANK, WORLD_SIZE, MASTER_ADDR,
MASTER_PORT) or from Open MPI (OMPI_COMM_WORLD_RANK, ..._SIZE; the master
is then MASTER_ADDR, else the first of SM_HOSTS, else 127.0.0.1).
Runs with Debian's python3-torch (1.13) under /usr/bin/python3.

  SMT_STEPS      steps to run (default 5)
  SMT_STALL_RANK the rank that stops (default: none)
  SMT_STALL_STEP the step at which it stops (default 2)
"""
import json
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def setup_env():
    if "RANK" not in os.environ and "OMPI_COMM_WORLD_RANK" in os.environ:
        os.environ["RANK"] = os.environ["OMPI_COMM_WORLD_RANK"]
        os.environ["WORLD_SIZE"] = os.environ["OMPI_COMM_WORLD_SIZE"]
    if "MASTER_ADDR" not in os.environ:
        hosts = json.loads(os.environ.get("SM_HOSTS", "[]") or "[]")
        os.environ["MASTER_ADDR"] = hosts[0] if hosts else "127.0.0.1"
    os.environ.setdefault("MASTER_PORT", "29511")
    os.environ.setdefault("RANK", "0")
    os.environ.setdefault("WORLD_SIZE", "1")


def stall_forever(rank, step):
    print(f"rank {rank}: stopping before the all-reduce of step {step}", flush=True)
    while True:
        time.sleep(3600)


def main():
    setup_env()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    steps = int(os.environ.get("SMT_STEPS", "5"))
    stall_rank = int(os.environ.get("SMT_STALL_RANK", "-1"))
    stall_step = int(os.environ.get("SMT_STALL_STEP", "2"))
    torch.manual_seed(rank)
    model = DDP(nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(steps):
        x, y = torch.randn(16, 8), torch.randn(16, 1)
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if rank == stall_rank and step == stall_step:
            stall_forever(rank, step)
        total = torch.tensor([loss.item()])
        dist.all_reduce(total)
        print(f"rank {rank} step {step} loss {total.item() / dist.get_world_size():.4f}",
              flush=True)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
