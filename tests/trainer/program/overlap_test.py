#!/usr/bin/python3
"""Overlap hides communication: megascale-train data parallel over 2 emulated hosts (network namespaces, each
NIC shaped to RATE by tc), with the data-parallel overlap on and off, alternating, ROUNDS runs each. With it on,
the median data-parallel wait (the time the ranks stood waiting on gradients and parameters, over the steps of
all rounds) must be under 80% of its median with it off, and the median step no more than 15% longer. The medians
pool every round's steps: one round's verdict alone varied too much (its waits' ratio 0.59-0.81 over runs).
Whether the step gets shorter is the machine's business (each rank has one core here, which the overlapped
communication shares with the compute): the ratio is printed, not judged. Measured on the 2-core CI machine over
four runs: waits 0.34-0.59, step 0.87-1.03 (the same setting's rounds differ by up to 25%). Root (skips otherwise).
Usage: overlap_test.py MEGASCALE_RUN MEGASCALE_STORE MEGASCALE_TRAIN SOURCE_DIR"""
import csv
import os
import random
import secrets
import statistics
import subprocess
import sys
import tempfile
import time

run_bin, store_bin, train_bin, source = sys.argv[1:5]
sys.path.insert(0, os.path.join(source, "testbed"))
from emulated_cluster import EmulatedCluster, unavailable_reason  # noqa: E402

RATE = os.environ.get("RATE", "300mbit")
ROUNDS = int(os.environ.get("ROUNDS", "3"))
# ~1.7 MB of fp32 gradients per step: at 300 Mbit/s their reduce-scatter and all-gather take a third to half
# of the step with the overlap off (measured at 200 and 400 Mbit/s: 51% and 35%), so the overlap has something to
# hide and compute to hide it behind. What it cannot hide are the step's edges: the first layer's parameters
# gathered before the forward and the last gradients reduced after the backward.
MODEL = ["--layers", "4", "--d-model", "96", "--heads", "4", "--seq-len", "64", "--batch-size", "8",
         "--steps", "8", "--lr", "1e-3", "--threads", "1", "--gemm", "ours-portable",
         "--peak-gflops", "50", "--tokenizer", "bytes",
         "--precision", "fp32", "--log-every", "1000"]


def run_job(cluster, work, name, overlap, port):
    secret = secrets.token_hex(16)
    env = dict(os.environ, MEGASCALE_JOB_SECRET=secret, MEGASCALE_TIMEOUT_MS="60000", MEGASCALE_RANKS_SHARING_CORES="2")
    store = subprocess.Popen(cluster.on(0, [store_bin, "--host", cluster.address(0), "--port", str(port)]),
                             env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.3)
    ranks = []
    for i in range(2):
        argv = cluster.on(i, ["taskset", "-c", str(i % os.cpu_count()), run_bin, "--store",
                              f"tcp://{cluster.address(0)}:{port}", "--job-id", name, "--world-size", "2",
                              "--rank-offset", str(i), "-n", "1", train_bin] + MODEL +
                          ["--data", f"{work}/text.txt", "--overlap", overlap, "--csv", f"{work}/{name}.csv"])
        ranks.append(subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    outputs = [r.communicate(timeout=240)[0] for r in ranks]
    store.kill()
    store.wait()
    if any(r.returncode != 0 for r in ranks):
        print("\n".join(o[-2000:] for o in outputs))
        raise SystemExit(f"FAIL: the run {name} failed")
    rows = list(csv.DictReader(open(f"{work}/{name}.csv")))[2:]  # after warm-up and connection setup
    return [(float(r["step_seconds"]), float(r["dp_wait_s"])) for r in rows]


def main():
    reason = unavailable_reason()
    if reason:
        print(f"SKIPPED: {reason}")
        return 77
    cluster = EmulatedCluster(f"ov{os.getpid() % 1000}", 2)
    if not cluster.up(rate=RATE):
        cluster.down()
        print("FAIL: cannot build the emulated hosts")
        return 1
    steps = {"none": [], "dp": []}
    try:
        with tempfile.TemporaryDirectory() as work:
            words = ["alpha", "beta", "gamma", "delta", "epsilon"]
            rng = random.Random(1)
            with open(f"{work}/text.txt", "w") as text:
                text.write(" ".join(rng.choice(words) for _ in range(50000)))
            port = 32000 + os.getpid() % 1000
            for round_ in range(ROUNDS):
                for overlap in ("none", "dp"):
                    port += 1
                    rows = run_job(cluster, work, f"overlap{os.getpid()}-{overlap}{round_}", overlap, port)
                    steps[overlap] += rows
                    print(f"round {round_ + 1}, overlap {overlap:4}: median step "
                          f"{statistics.median(r[0] for r in rows) * 1e3:7.1f} ms, data-parallel waits "
                          f"{statistics.median(r[1] for r in rows) * 1e3:7.1f} ms")
    finally:
        cluster.down()
    (off_step, off_wait), (on_step, on_wait) = [(statistics.median(r[0] for r in steps[o]),
                                                 statistics.median(r[1] for r in steps[o])) for o in ("none", "dp")]
    print(f"{RATE} per link, medians of {len(steps['dp'])} steps each: overlap on/off step {on_step / off_step:.2f}, "
          f"waits {on_wait / max(off_wait, 1e-9):.2f}")
    ok = True
    if off_wait < 0.15 * off_step:
        print("FAIL: with the overlap off, communication is under 15% of the step: nothing to hide at this rate")
        ok = False
    if not on_step < 1.15 * off_step:
        print("FAIL: the overlap made the step more than 15% longer")
        ok = False
    if not on_wait < 0.8 * off_wait:
        print("FAIL: the overlap left more than 80% of the data-parallel waits")
        ok = False
    print("PASSED" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
