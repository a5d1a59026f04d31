#!/usr/bin/python3
"""torch.distributed all_reduce through the "megascale" backend next to Gloo, in the same processes, alternating
rounds: latency at 8 B (sync all_reduce, median per-call time) and bus bandwidth at 64 MiB (fp32 sum;
busbw = algbw x 2(n-1)/n as nccl-tests). Prints the machine, the figures, the ratios and the targets
(64 MiB busbw >= 2x gloo; 8 B latency <= 1/10 of gloo's).
    PYTHONPATH=build/python /usr/bin/python3 bench/torch_backend_compare.py   (env: RANKS="2 4" ROUNDS=5)"""
import datetime
import os
import platform
import socket
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

RANKS = [int(r) for r in os.environ.get("RANKS", "2 4").split()]
ROUNDS = int(os.environ.get("ROUNDS", "5"))
SMALL_ITERS = int(os.environ.get("SMALL_ITERS", "300"))
BIG_ITERS = int(os.environ.get("BIG_ITERS", "4"))
BIG = 64 << 20


def timed(group, tensor, iters):
    dist.barrier(group=group)
    start = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(tensor, group=group)
    elapsed = torch.tensor([time.perf_counter() - start], dtype=torch.float64)
    dist.all_reduce(elapsed, op=dist.ReduceOp.MAX, group=group)  # the slowest rank's time is the collective's
    return elapsed.item() / iters


def worker(rank, world, port, results):
    import megascale_torch  # noqa: F401
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=300))
    groups = {"megascale": dist.new_group(backend="megascale"), "gloo": dist.new_group(backend="gloo")}
    small, big = torch.ones(2), torch.ones(BIG // 4)
    for name, g in groups.items():  # warm up connections and buffers
        timed(g, small, 20)
        timed(g, big, 1)
    figures = {name: {"lat": [], "bw": []} for name in groups}
    for _ in range(ROUNDS):
        for name, g in groups.items():
            figures[name]["lat"].append(timed(g, small, SMALL_ITERS) * 1e6)
            t = timed(g, big, BIG_ITERS)
            figures[name]["bw"].append(BIG / t / 1e9 * 2 * (world - 1) / world)
    if rank == 0:
        results.put(figures)
    dist.barrier()
    dist.destroy_process_group()


def main():
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    print(f"# machine: {cpu}, {os.cpu_count()} cores, Linux {platform.release()}, torch {torch.__version__}")
    print(f"# torch.distributed all_reduce fp32 sum, CPU tensors; {ROUNDS} rounds alternating megascale and gloo "
          f"in the same processes; medians of the rounds")
    print(f"# latency: 8 B, {SMALL_ITERS} calls per round; bandwidth: 64 MiB, {BIG_ITERS} calls per round, busbw in GB/s")
    print(f"{'ranks':>5} {'ms lat us':>10} {'gloo lat us':>12} {'lat ratio':>10} {'ms busbw':>9} {'gloo busbw':>11} "
          f"{'bw ratio':>9}")
    verdicts = []
    for world in RANKS:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        ctx = mp.get_context("spawn")
        results = ctx.Queue()
        procs = [ctx.Process(target=worker, args=(r, world, port, results)) for r in range(world)]
        for p in procs:
            p.start()
        figures = results.get(timeout=1800)
        for p in procs:
            p.join()
        med = {n: {k: statistics.median(v) for k, v in f.items()} for n, f in figures.items()}
        lat_ratio = med["megascale"]["lat"] / med["gloo"]["lat"]
        bw_ratio = med["megascale"]["bw"] / med["gloo"]["bw"]
        print(f"{world:>5} {med['megascale']['lat']:>10.2f} {med['gloo']['lat']:>12.2f} {lat_ratio:>10.3f} "
              f"{med['megascale']['bw']:>9.3f} {med['gloo']['bw']:>11.3f} {bw_ratio:>9.2f}")
        verdicts.append(f"# {world} ranks: 8 B latency megascale/gloo {lat_ratio:.3f} (target <= 0.10): "
                        f"{'met' if lat_ratio <= 0.10 else 'MISSED'}; 64 MiB busbw megascale/gloo {bw_ratio:.2f} "
                        f"(target >= 2): {'met' if bw_ratio >= 2 else 'MISSED'}")
    print("\n".join(verdicts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
