#!/usr/bin/python3
"""PyTorch DistributedDataParallel (gloo) training the same GPT as megascale-train (bench/trainer/torch_gpt.py)
on the same global batch, one process per rank (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT from the caller).
DDP overlaps its bucketed all-reduce with backward. Steps are timed normally and under no_sync() (no gradient
communication), so step - no_sync step is DDP's exposed communication. Rank 0 prints one JSON line."""
import argparse
import json
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "trainer"))
from torch_gpt import Gpt  # noqa: E402


def gemm_libraries():
    """The BLAS and oneDNN libraries this process has loaded (torch's fp32 GEMMs go to the system BLAS, its
    bf16 autocast GEMMs to oneDNN), with the OPENBLAS_* settings that change OpenBLAS's kernels."""
    with open("/proc/self/maps") as maps:
        paths = {line.split()[-1] for line in maps if "blas" in line or "dnnl" in line or "mkldnn" in line}
    names = sorted({os.path.basename(os.path.realpath(p)) for p in paths if p.startswith("/")})
    env = [f"{k}={os.environ[k]}" for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE") if k in os.environ]
    return ", ".join(names or ["torch's own"]) + (f" ({', '.join(env)})" if env else " (OPENBLAS_* unset)")


def main():
    p = argparse.ArgumentParser()
    for name, default in (("layers", 4), ("d-model", 256), ("heads", 4), ("seq-len", 128), ("batch-size", 16),
                          ("vocab", 256), ("window", 64), ("steps", 8), ("warmup-steps", 2), ("threads", 1)):
        p.add_argument("--" + name, type=int, default=default)
    p.add_argument("--block", default="parallel")
    p.add_argument("--precision", choices=("fp32", "bf16"), default="fp32",
                   help="bf16: autocast (bf16 GEMMs, fp32 weights and gradients), PyTorch's mixed precision")
    a = p.parse_args()
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    torch.set_num_threads(a.threads)
    gpt = Gpt(a)
    # The attention masks are constant bool buffers, which gloo cannot broadcast; every rank builds them alike.
    DistributedDataParallel._set_params_and_buffers_to_ignore_for_model(
        gpt, [name for name, _ in gpt.named_buffers()])
    model = DistributedDataParallel(gpt)
    decay = [q for q in model.parameters() if q.dim() >= 2]
    rest = [q for q in model.parameters() if q.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}],
                            lr=1e-3, betas=(0.9, 0.95), eps=1e-8)
    per_rank = a.batch_size // world
    gen = torch.Generator().manual_seed(rank)
    data = torch.randint(0, a.vocab, (per_rank, a.seq_len + 1), generator=gen)
    inputs, targets = data[:, :-1], data[:, 1:]

    def step(sync):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.precision == "bf16"):
            if sync:
                model(inputs, targets).backward()
            else:
                with model.no_sync():
                    model(inputs, targets).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return time.perf_counter() - t0

    for _ in range(a.warmup_steps):
        step(True)
    dist.barrier()
    synced = sum(step(True) for _ in range(a.steps)) / a.steps
    dist.barrier()
    local = sum(step(False) for _ in range(a.steps)) / a.steps
    times = torch.tensor([synced, local])
    dist.all_reduce(times, op=dist.ReduceOp.MAX)  # the slowest rank sets the pace
    if rank == 0:
        print(json.dumps({"tokens_per_s": a.batch_size * a.seq_len / times[0].item(), "step_s": times[0].item(),
                          "no_sync_step_s": times[1].item(),
                          "exposed_comm_s": max(0.0, times[0].item() - times[1].item()), "world": world,
                          "torch": torch.__version__, "gemm": gemm_libraries()}))
    # torch 1.13's gloo teardown can hang rank 0 forever once the other ranks have exited (seen 4 times in 5
    # runs over emulated hosts); the results are out, so every rank leaves together, without the teardown.
    dist.barrier()
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
