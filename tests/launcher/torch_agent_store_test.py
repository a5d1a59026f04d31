#!/usr/bin/python3
"""torchrun's default static rendezvous, reproduced: the elastic agent serves a torch TCPStore on MASTER_PORT and
gives workers TORCHELASTIC_USE_AGENT_STORE=True. Debian's torchrun 1.13 cannot start workers on Python 3.11, so this
test plays the agent: a real torch.distributed.TCPStore on MASTER_PORT, and N workers started with the agent's
environment. They must rendezvous through the agent's store (rank 0 cannot serve its own on the occupied port) and
their collectives must be right. A second run without rank 0 must fail within the timeout, naming the store.

Usage: torch_agent_store_test.py N program [args...]   (skips, exit 77 with a reason, without torch)"""
import datetime
import os
import subprocess
import sys
import time

try:
    import torch.distributed as dist
except ImportError as e:
    print(f"SKIPPED: torch is not importable ({e}) [missing: python3-torch]")
    sys.exit(77)


def agent_env(rank, n, port, run_id, restart):
    env = dict(os.environ)
    env.update({"RANK": str(rank), "WORLD_SIZE": str(n), "LOCAL_RANK": str(rank), "LOCAL_WORLD_SIZE": str(n),
                "GROUP_RANK": "0", "ROLE_RANK": str(rank), "ROLE_WORLD_SIZE": str(n), "ROLE_NAME": "default",
                "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "TORCHELASTIC_RUN_ID": run_id,
                "TORCHELASTIC_USE_AGENT_STORE": "True", "TORCHELASTIC_RESTART_COUNT": str(restart),
                "TORCHELASTIC_MAX_RESTARTS": "0", "OMP_NUM_THREADS": "1"})
    for name in ("MEGASCALE_JOB_SECRET", "MEGASCALE_STORE", "MEGASCALE_UNIQUE_ID"):
        env.pop(name, None)
    return env


def run_workers(ranks, n, port, run_id, restart, command, timeout_s):
    procs = [subprocess.Popen(command, env=agent_env(r, n, port, run_id, restart), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for r in ranks]
    outputs = []
    for p in procs:
        try:
            out, _ = p.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            p.kill()
            out, _ = p.communicate()
            out += "\n<killed: hung>"
        outputs.append((p.returncode, out))
    return outputs


def main():
    n, command = int(sys.argv[1]), sys.argv[2:]
    agent = dist.TCPStore("127.0.0.1", 0, None, True, datetime.timedelta(seconds=60), wait_for_workers=False)
    port = agent.port
    agent.set("torchelastic/agent/alive", "1")  # the agent's own keys live beside ours

    results = run_workers(range(n), n, port, "job42", 0, command, 120)
    failed = [(code, out) for code, out in results if code != 0]
    for code, out in results:
        print(out.strip())
    if failed:
        print(f"FAILED: {len(failed)} of {n} workers failed under the agent store")
        return 1
    if agent.get("torchelastic/agent/alive") != b"1" or not agent.get("megascale/job42.0/store").startswith(b"tcp://"):
        print("FAILED: the agent store does not hold our key beside its own")
        return 1

    # A restarted group (TORCHELASTIC_RESTART_COUNT=1) must not read the first group's URL: without rank 0 it waits
    # for its own key and fails at the timeout, naming the agent store.
    os.environ["MEGASCALE_TIMEOUT_MS"] = "2000"
    start = time.monotonic()
    results = run_workers(range(1, n), n, port, "job42", 1, command, 60)
    elapsed = time.monotonic() - start
    for code, out in results:
        if code == 0 or "torchrun agent store at 127.0.0.1" not in out or "did not appear" not in out:
            print(f"FAILED: a worker without rank 0 did not fail clearly (exit {code}):\n{out}")
            return 1
    if elapsed > 30:
        print(f"FAILED: workers without rank 0 took {elapsed:.1f} s to fail with a 2 s timeout")
        return 1
    print(f"a group without rank 0 failed in {elapsed:.1f} s: {results[0][1].strip().splitlines()[-1]}")
    print(f"PASSED: {n} workers rendezvoused through torchrun's agent store on port {port}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
