#!/usr/bin/python3
"""The diagnosis on real jobs under megascale-run.
1. An 8-rank 3D-parallel training run (tp2 x pp2 x dp2): one rank, at random, is stopped with SIGSTOP at a random
   step. The driver's `diagnosis:` line names that rank and this host within the hang timeout + 5 s, and
   megascale-diagnose over the flight records the driver wrote gives the same verdict.
2. Four ranks whose rank 3 calls an all-gather with half the count of the others: the verdict is a mismatch that
   names rank 3 and both sizes, as the program's bug.
3. Four ranks of a training run, one of them slowed (stopped 20 ms of every 50 ms): the heat map's report names
   it as the slowest against its peers.
Usage: diagnosis_job_test.py MEGASCALE_RUN MEGASCALE_TRAIN MEGASCALE_DIAGNOSE MISMATCH_CHECK SOURCE_DIR"""
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

run_bin, train_bin, diagnose_bin, mismatch_bin, source_dir = sys.argv[1:6]
sys.path.insert(0, os.path.join(source_dir, "testbed"))
import faults  # noqa: E402
from job_logs import driver_lines, write_text  # noqa: E402

HANG_TIMEOUT = 4.0
failures = []


def check(condition, what):
    print(("ok:   " if condition else "FAIL: ") + what, flush=True)
    if not condition:
        failures.append(what)


def verdict_of(lines):
    found = [(t, text[len("diagnosis: "):]) for t, text in lines if text.startswith("diagnosis: ")]
    return found[0] if found else (None, "")


def diagnose_again(records_dir):
    r = subprocess.run([diagnose_bin, records_dir], capture_output=True, text=True, timeout=60)
    first = r.stdout.splitlines()[0] if r.stdout else ""
    return r.returncode, first[len("diagnosis: "):] if first.startswith("diagnosis: ") else first


def stopped_rank(root):
    work = os.path.join(root, "stopped")
    os.makedirs(work)
    diagnosis_dir = os.path.join(work, "diagnosis")
    command = [run_bin, "--hang-timeout", str(HANG_TIMEOUT), "--heartbeat-ms", "100", "--grace-ms", "500",
               "--diagnosis-dir", diagnosis_dir, "-n", "8", train_bin, "--data", os.path.join(root, "text.txt"),
               "--layers", "4", "--d-model", "32", "--heads", "4", "--seq-len", "16", "--batch-size", "8",
               "--steps", "400", "--lr", "1e-3", "--threads", "1", "--gemm", "ours-portable",
               "--peak-gflops", "50", "--tokenizer", "bytes",
               "--tp", "2", "--pp", "2", "--micro-batches", "2", "--log-every", "50",
               "--csv", os.path.join(work, "steps.csv")]
    rng = random.Random(int(time.time()))
    rank, at_step = rng.randrange(8), rng.randrange(3, 12)
    job = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        faults.wait_for_step(os.path.join(work, "steps.csv"), at_step, process=job)
        status = subprocess.run([run_bin, "--status", diagnosis_dir], capture_output=True, text=True, timeout=30)
        pid, injected = faults.inject(job.pid, rank, "stop")
        _, err = job.communicate(timeout=120)
    finally:
        job.kill()
    print(f"--- megascale-run --status while it ran:\n{status.stdout}{status.stderr}")
    rows = [m for line in status.stdout.splitlines()
            for m in [re.match(r"^\s*(\d+)\s+\S+\s+tp \d+ pp \d+ dp \d+\s+(\d+)\s.*\s(\S+)$", line)] if m]
    check(status.returncode == 0 and len(rows) == 8, f"--status lists the 8 ranks ({len(rows)} rows)")
    steps = [int(m.group(2)) for m in rows]
    # The status is rewritten every sampling period (100 ms here, several steps): each rank is running, in the
    # steady loop, all within a step or two of each other (they move in lockstep).
    check(all(m.group(3) == "running" for m in rows) and steps and min(steps) >= 1 and max(steps) - min(steps) <= 2,
          f"each running, in lockstep (steps {steps})")
    check("tp 1 pp 1 dp 1" in status.stdout, "with its coordinates")
    check(not os.path.exists(os.path.join(diagnosis_dir, "status")), "the status went with the job")
    lines = driver_lines(err)
    print(f"--- SIGSTOP rank {rank} (pid {pid}) after step {at_step}")
    for _, text in lines:
        print("   ", text)
    t, verdict = verdict_of(lines)
    host = socket.gethostname()
    check(verdict.startswith(f"rank {rank} (host {host}, tp {rank % 2} pp {rank // 4} dp {(rank // 2) % 2})"),
          f"the verdict names rank {rank}, this host and its coordinates: {verdict}")
    check("stopped by a signal" in verdict, "the verdict says the rank is stopped")
    check(re.search(r"(never entered|holds up) \S+ #\d+ of \S+", verdict) is not None,
          "the verdict names the operation the others wait in")
    check(t is not None and t - injected <= HANG_TIMEOUT + 5,
          f"the verdict came {t - injected if t else -1:.2f} s after the stop (limit {HANG_TIMEOUT + 5} s)")
    records = os.path.join(diagnosis_dir, "restart-0")
    check(len([f for f in os.listdir(records) if f.startswith("rank-")]) == 8 if os.path.isdir(records) else False,
          "the driver wrote the flight records of all 8 ranks")
    status, again = diagnose_again(records)
    check(status == 0 and again == verdict, f"megascale-diagnose over them gives the same verdict: {again}")


def mismatch(root):
    diagnosis_dir = os.path.join(root, "mismatch")
    r = subprocess.run([run_bin, "--hang-timeout", "3", "--heartbeat-ms", "100", "--grace-ms", "500",
                        "--diagnosis-dir", diagnosis_dir, "-n", "4", mismatch_bin, "3"],
                       capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, MEGASCALE_TIMEOUT_MS="20000"))
    lines = driver_lines(r.stderr)
    for _, text in lines:
        print("   ", text)
    _, verdict = verdict_of(lines)
    check(r.returncode != 0, "the mismatched job failed")
    check(verdict.startswith("mismatch (a bug in the program, not a fault of the machines)"),
          f"the verdict is a mismatch: {verdict}")
    check(re.search(r"rank 3 called all_gather #\d+ with 4096 B \(1024 x float\); ranks 0-2 called all_gather #\d+ with "
                    r"8192 B \(2048 x float\)", verdict) is not None, "it names rank 3 and both sizes")
    status, again = diagnose_again(os.path.join(diagnosis_dir, "restart-0"))
    check(status == 0 and again == verdict, f"megascale-diagnose agrees: {again}")


def slowed_rank(root):
    """One rank of four gets 40% of the time it would (stopped 20 ms of every 50 ms, as a CPU quota would):
    the heat map's report names it."""
    prefix = os.path.join(root, "heatmap")
    steps = 30  # of ~50 ms each: long against the throttle's 50 ms period
    command = [run_bin, "-n", "4", train_bin, "--data", os.path.join(root, "text.txt"), "--layers", "4", "--d-model",
               "96", "--heads", "4", "--seq-len", "32", "--batch-size", "16", "--steps", str(steps), "--lr", "1e-3",
               "--threads", "1", "--gemm", "ours-portable",
               "--peak-gflops", "50", "--tokenizer", "bytes", "--tp", "2", "--log-every", "50",
               "--heatmap", prefix]
    slow = random.Random(int(time.time())).randrange(4)
    job = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stop = threading.Event()

    def throttle():
        pid = faults.rank_pid(job.pid, slow)
        while not stop.is_set() and job.poll() is None:
            try:
                os.kill(pid, signal.SIGSTOP)
                time.sleep(0.02)
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                return
            time.sleep(0.03)

    thread = threading.Thread(target=throttle)
    thread.start()
    try:
        out, err = job.communicate(timeout=240)
    finally:
        stop.set()
        thread.join()
        job.kill()
    report = out[out.find("heat map:"):] if "heat map:" in out else ""
    print(f"--- rank {slow} slowed:\n{report}")
    check(job.returncode == 0, "the slowed job finished" + ("" if job.returncode == 0 else f": {err[-600:]}"))
    lines = report.splitlines()
    first = re.match(r"\[0\] rank (\d+) \(.*\): [\d.]+ ms per step, ([\d.]+)x", lines[1]) if len(lines) > 1 else None
    if first is None and len(lines) > 1:
        first = re.match(r"rank (\d+) \(.*\): [\d.]+ ms per step, ([\d.]+)x", lines[1].split("] ", 1)[-1])
    check(first is not None and int(first.group(1)) == slow and float(first.group(2)) >= 1.3,
          f"the heat map's report names rank {slow} first, well above its peers: {lines[1] if len(lines) > 1 else ''}")
    with open(prefix + ".png", "rb") as f:
        check(f.read(8) == b"\x89PNG\r\n\x1a\n", "the heat map is a PNG")
    with open(prefix + ".csv") as f:
        rows = f.read().splitlines()
    check(rows[0] == "rank,step,compute_ms" and len(rows) == 1 + 4 * steps, f"the CSV has a row per rank and step ({len(rows) - 1})")


def main():
    with tempfile.TemporaryDirectory() as root:
        write_text(os.path.join(root, "text.txt"))
        stopped_rank(root)
        mismatch(root)
        slowed_rank(root)
    print(f"{len(failures)} failed" if failures else "PASSED")
    return 1 if failures else 0


sys.exit(main())
