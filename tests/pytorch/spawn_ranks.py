"""Starts one process per rank for the backend's tests and reports how they ended."""
import os
import socket
import sys
import traceback

import torch.multiprocessing as mp


def _guarded(target, rank, world, port):
    try:
        target(rank, world, port)
    except Exception:
        print(f"rank {rank}:\n{traceback.format_exc()}", file=sys.stderr, flush=True)
        os._exit(1)


def run_ranks(target, world, timeout_s=240):
    """Runs target(rank, world, port) in `world` spawned processes (port: a free loopback port for the group's
    rendezvous). True when every process exits 0 in time; prints FAILED with the reason otherwise."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_guarded, args=(target, r, world, port)) for r in range(world)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout_s)
        if p.is_alive():
            for q in procs:
                q.kill()
            print("FAILED: a worker hung")
            return False
    if any(p.exitcode != 0 for p in procs):
        print("FAILED: exit codes", [p.exitcode for p in procs])
        return False
    return True
