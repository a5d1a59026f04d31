#!/usr/bin/python3
"""DistributedDataParallel over the "megascale" backend trains a small model to the same weights as over Gloo,
and a peer that dies makes every survivor's collective raise within the timeout instead of hanging.

Usage: ddp_and_failure_test.py ddp N | dead-peer N      (PYTHONPATH must reach build/python; skips without torch)"""
import datetime
import os
import sys
import time

try:
    import torch
    import torch.distributed as dist
    from spawn_ranks import run_ranks
    from torch.nn.parallel import DistributedDataParallel as DDP
except ImportError as e:
    print(f"SKIPPED: torch is not importable ({e}) [missing: python3-torch]")
    sys.exit(77)


def train(model, group, rank, steps=12):
    ddp = DDP(model, process_group=group)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    gen = torch.Generator().manual_seed(100 + rank)  # each rank its own data, as DDP is used
    for _ in range(steps):
        x = torch.randn(16, 12, generator=gen)
        y = torch.randn(16, 3, generator=gen)
        opt.zero_grad()
        torch.nn.functional.mse_loss(ddp(x), y).backward()
        opt.step()
    return [p.detach().clone() for p in model.parameters()]


def ddp_worker(rank, world, port):
    import megascale_torch  # noqa: F401
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=60))
    ms = dist.new_group(backend="megascale")
    torch.manual_seed(0)
    template = torch.nn.Sequential(torch.nn.Linear(12, 32), torch.nn.GELU(), torch.nn.Linear(32, 3))
    initial = [p.detach().clone() for p in template.parameters()]
    ours = train(template, ms, rank)
    for p, v in zip(template.parameters(), initial):
        p.data.copy_(v)
    theirs = train(template, dist.new_group(backend="gloo"), rank)
    moved = max((a - b).abs().max().item() for a, b in zip(ours, initial))
    worst = max((a - b).abs().max().item() for a, b in zip(ours, theirs))
    if moved < 1e-3 or worst > 1e-5:
        raise AssertionError(f"weights moved {moved:.3g}, differ from gloo's by {worst:.3g}")
    if rank == 0:
        print(f"DDP: weights moved {moved:.3g}, max difference from gloo {worst:.2e}", flush=True)
    dist.destroy_process_group()


def dead_peer_worker(rank, world, port):
    import megascale_torch  # noqa: F401
    dist.init_process_group("megascale", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=5))
    t = torch.ones(1000)
    dist.all_reduce(t)
    if rank == world - 1:
        os._exit(0)  # dies without a word, mid-job
    start = time.monotonic()
    try:
        for _ in range(100):
            dist.all_reduce(t)
    except RuntimeError as e:
        took = time.monotonic() - start
        if took > 20 or "megascale" not in str(e):
            raise AssertionError(f"raised after {took:.1f} s: {e}")
        print(f"rank {rank}: raised after {took:.2f} s: {str(e).splitlines()[0]}", flush=True)
        os._exit(0)  # the group is broken; skip its orderly shutdown
    raise AssertionError("all_reduce with a dead peer did not raise")


def main():
    mode, world = sys.argv[1], int(sys.argv[2])
    if not run_ranks({"ddp": ddp_worker, "dead-peer": dead_peer_worker}[mode], world, timeout_s=180):
        return 1
    print(f"PASSED: {mode} with {world} processes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
