"""ddp_ckpt.py - a PyTorch DDP job (gloo) that checkpoints and resumes.

Trains a tiny linear model with DDP for --steps steps, one line per step on
every rank.  Rank 0 saves a checkpoint (the step and the model's state) to
--ckpt every --every steps, under a temporary name renamed into place.
At its start rank 0 loads the checkpoint if there is one; the step it
resumes from reaches every rank by a broadcast, and the weights by DDP's
own broadcast of rank 0's state at construction.  So only rank 0's host
needs the checkpoint.

SMTD_RESTART_COUNT (smtd's) says which attempt this is: each rank prints
"rank R attempt A resumes at step S" and, with --raise_rank R and
--raise_step S, rank R raises ValueError at step S of attempt 0 only.  At
the end each rank prints "rank R done: steps S..T of attempt A".
"""
import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--every", type=int, default=4)
    ap.add_argument("--ckpt", default="/opt/ml/checkpoints/ddp.pt")
    ap.add_argument("--raise_rank", type=int, default=-1)
    ap.add_argument("--raise_step", type=int, default=-1)
    a, _ = ap.parse_known_args()
    rank = int(os.environ["RANK"])
    attempt = int(os.environ.get("SMTD_RESTART_COUNT", "-1"))

    dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = nn.Linear(8, 1)
    start = torch.zeros(1, dtype=torch.long)
    if rank == 0 and os.path.exists(a.ckpt):
        saved = torch.load(a.ckpt)
        model.load_state_dict(saved["model"])
        start[0] = saved["step"] + 1
    dist.broadcast(start, 0)
    first = int(start[0])
    print("rank %d attempt %d resumes at step %d" % (rank, attempt, first), flush=True)
    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    for step in range(first, a.steps + 1):
        if attempt == 0 and rank == a.raise_rank and step == a.raise_step:
            raise ValueError("bad batch at step %d" % step)
        x = torch.randn(16, 8)
        loss = ddp(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        print("rank %d step %d loss %.4f" % (rank, step, loss.item()), flush=True)
        if rank == 0 and step % a.every == 0:
            os.makedirs(os.path.dirname(a.ckpt), exist_ok=True)
            torch.save({"step": step, "model": model.state_dict()}, a.ckpt + ".tmp")
            os.rename(a.ckpt + ".tmp", a.ckpt)
            print("rank 0 checkpoint at step %d" % step, flush=True)
        # Every rank checkpoints the same step: none runs ahead of a save.
        dist.barrier()
    print("rank %d done: steps %d..%d of attempt %d" % (rank, first, a.steps, attempt),
          flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
