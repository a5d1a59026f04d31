#!/usr/bin/python3
"""PyTorch's TCPStore rendezvous at N ranks, one client per rank in threads of one process (as bench/init_scale
simulates ranks): each rank connects its own TCPStore client to the master, publishes its address (one set of
a value the size of ours), and reads the addresses of the peers it would connect to in the world, TP, PP and DP
groups (a get each, waiting until the peer has published): the same store work per rank as bench/init_scale's
ranks do. The clock runs from the start signal to the last rank done. Last line:
"torch_store_scale: ranks N seconds S".
Usage: torch_store_scale.py --ranks N [--tp 8] [--pp 4] [--timeout S]"""
import argparse
import datetime
import sys
import threading
import time

import torch
import torch.distributed as dist


def peers(rank, ranks, tp, pp):
    """The next rank in the world ring and in this rank's TP, PP and DP groups (rank = t + tp * (d + dp * p))."""
    dp = ranks // (tp * pp)
    t, rest = rank % tp, rank // tp
    d, p = rest % dp, rest // dp
    at = lambda t_, d_, p_: t_ + tp * (d_ + dp * p_)  # noqa: E731
    return [(rank + 1) % ranks, at((t + 1) % tp, d, p), at(t, d, (p + 1) % pp), at(t, (d + 1) % dp, p)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ranks", type=int, required=True)
    parser.add_argument("--tp", type=int, default=8)
    parser.add_argument("--pp", type=int, default=4)
    parser.add_argument("--timeout", type=float, default=300)
    args = parser.parse_args()
    if args.ranks % (args.tp * args.pp):
        sys.exit("torch_store_scale: --tp x --pp must divide --ranks")
    timeout = datetime.timedelta(seconds=args.timeout)
    master = dist.TCPStore("127.0.0.1", 0, args.ranks + 1, True, timeout, wait_for_workers=False)
    port = master.port
    value = "x" * 117  # the bytes one of our ranks publishes (its listener addresses)
    start = threading.Event()
    done_at = [0.0] * args.ranks
    errors = []

    def rank_main(rank):
        try:
            start.wait()
            client = dist.TCPStore("127.0.0.1", port, args.ranks + 1, False, timeout, wait_for_workers=False)
            client.set(f"addr/{rank}", value)
            for peer in peers(rank, args.ranks, args.tp, args.pp):
                client.get(f"addr/{peer}")
            done_at[rank] = time.monotonic()
        except Exception as error:  # noqa: BLE001 (reported below, the run fails)
            errors.append(f"rank {rank}: {error}")

    threading.stack_size(256 << 10)
    threads = [threading.Thread(target=rank_main, args=(r,)) for r in range(args.ranks)]
    for t in threads:
        t.start()
    began = time.monotonic()
    start.set()
    for t in threads:
        t.join()
    if errors:
        print("\n".join(errors[:5]), file=sys.stderr)
        sys.exit(f"torch_store_scale: {len(errors)} of {args.ranks} ranks failed")
    print(f"# torch {torch.__version__} TCPStore, {args.ranks} clients in threads, 5 store operations per rank")
    print(f"torch_store_scale: ranks {args.ranks} seconds {max(done_at) - began:.3f}")


if __name__ == "__main__":
    main()
