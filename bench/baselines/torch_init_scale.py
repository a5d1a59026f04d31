#!/usr/bin/python3
"""PyTorch's process-group initialization at N ranks, the baseline of bench/init_scale: one process per rank
(torch.distributed keeps one default group per process), each doing what a Megatron-LM job does at start:
TCPStore (rank 0 hosts it), init_process_group("gloo"), new_group() for every tensor-, data- and pipeline-
parallel group in Megatron's order (every rank creates every group), then one exchange with its ring
neighbours (8 bytes to rank + 1, from rank - 1).

The processes import torch first; the clock starts when all have, so import time is not counted. Prints
one line: "torch_init_scale: ranks N seconds S" (S: the last rank ready), or a line saying why it failed."""
import argparse
import os
import subprocess
import sys
import time


def megatron_groups(world, tp, pp):
    """Every group's ranks in the order Megatron-LM's initialize_model_parallel creates them (every rank
    creates every group): data-parallel, tensor-parallel, then pipeline groups; rank = t + tp * (d + dp * p)."""
    dp = world // (tp * pp)
    at = lambda t, d, p: t + tp * (d + dp * p)  # noqa: E731
    for p in range(pp):
        for t in range(tp):
            yield [at(t, d, p) for d in range(dp)]
    for p in range(pp):
        for d in range(dp):
            yield [at(t, d, p) for t in range(tp)]
    for d in range(dp):
        for t in range(tp):
            yield [at(t, d, p) for p in range(pp)]


def worker(args):
    import datetime

    import torch
    import torch.distributed as dist

    rank, world = args.rank, args.ranks
    timeout = datetime.timedelta(seconds=args.timeout)
    os.write(args.ready_fd, b"r")
    start = int.from_bytes(os.read(args.go_fd, 8), "little") / 1e9
    try:
        store = dist.TCPStore("127.0.0.1", args.port, world, rank == 0, timeout)
        dist.init_process_group("gloo", store=store, rank=rank, world_size=world, timeout=timeout)
        mine = []
        for ranks in megatron_groups(world, args.tp, args.pp):
            group = dist.new_group(ranks)  # a collective over the world, members or not
            if rank in ranks:
                mine.append(group)
        out = torch.tensor([rank], dtype=torch.int64)
        back = torch.tensor([-1], dtype=torch.int64)
        sent = dist.isend(out, (rank + 1) % world)
        dist.recv(back, (rank - 1) % world)
        sent.wait()
        ok = int(back.item()) == (rank - 1) % world
        print(f"{rank} {time.monotonic() - start:.6f} {int(ok)}", flush=True)
        return 0 if ok else 1
    except Exception as e:  # noqa: BLE001 - reported to the parent, which names the rank
        print(f"{rank} error {type(e).__name__}: {e}".replace("\n", " "), flush=True)
        return 1


def parent(args):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ready_r, ready_w = os.pipe()
    go_r, go_w = os.pipe()
    procs = []
    for rank in range(args.ranks):
        argv = [sys.executable, os.path.abspath(__file__), "--worker", "--rank", str(rank), "--ranks", str(args.ranks),
                "--tp", str(args.tp), "--pp", str(args.pp), "--port", str(port), "--timeout", str(args.timeout),
                "--ready-fd", str(ready_w), "--go-fd", str(go_r)]
        procs.append(subprocess.Popen(argv, pass_fds=(ready_w, go_r), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True))
    os.close(ready_w)
    os.close(go_r)
    got = 0
    while got < args.ranks:
        chunk = os.read(ready_r, args.ranks - got)
        if not chunk:
            print(f"torch_init_scale: ranks {args.ranks}: a process died while importing torch")
            return 1
        got += len(chunk)
    start = time.monotonic_ns()
    os.write(go_w, start.to_bytes(8, "little") * args.ranks)
    ready, failures = [], []
    deadline = time.monotonic() + args.timeout + 30
    for p in procs:
        try:
            out, err = p.communicate(timeout=max(1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            print(f"torch_init_scale: ranks {args.ranks}: timed out after {args.timeout} s")
            return 1
        line = (out.strip().splitlines() or [""])[-1].split(" ", 2)
        if p.returncode == 0 and len(line) == 3 and line[2] == "1":
            ready.append(float(line[1]))
        else:
            failures.append(" ".join(line) or err.strip().splitlines()[-1:])
    if failures:
        print(f"torch_init_scale: ranks {args.ranks}: {len(failures)} ranks failed, e.g. {failures[0]}")
        return 1
    ready.sort()
    print(f"# torch {__import__('torch').__version__} gloo, tp {args.tp} x pp {args.pp}: p50 {ready[len(ready) // 2]:.3f} s")
    print(f"torch_init_scale: ranks {args.ranks} seconds {ready[-1]:.3f}")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--ranks", type=int, required=True)
    ap.add_argument("--tp", type=int, default=8)
    ap.add_argument("--pp", type=int, default=4)
    ap.add_argument("--timeout", type=int, default=300, help="seconds each rank may take")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--rank", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--ready-fd", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--go-fd", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.ranks % (args.tp * args.pp) != 0:
        ap.error("--tp x --pp must divide --ranks")
    return worker(args) if args.worker else parent(args)


if __name__ == "__main__":
    sys.exit(main())
