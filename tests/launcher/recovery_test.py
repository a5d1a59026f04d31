#!/usr/bin/python3
"""megascale-run's driver on a real 3D-parallel training job (4 local ranks, tp2 x dp2, a checkpoint in host memory
every step, on disk every 10):
a rank killed with SIGKILL, and a rank stopped with SIGSTOP, at a random step. Each fault is detected and named
(the killed rank at once, the stopped one within the stopped timeout + 1 s, long before the hang timeout), every rank is restarted, the job
finishes, its losses equal the fault-free run's bit for bit (the data resumed at the exact sample) and at most
one checkpoint interval is redone (the restart loaded the checkpoint in host memory). With --self-check the host
passes its self-check before the restart; a rank whose GEMM gives wrong numbers fails it, named, and the job
stops (no spare host). A program that always fails is restarted --max-restarts times, then the job
ends naming it.
Usage: recovery_test.py MEGASCALE_RUN MEGASCALE_TRAIN SOURCE_DIR"""
import os
import random
import re
import subprocess
import sys
import tempfile
import time

run_bin, train_bin, source_dir = sys.argv[1:4]
sys.path.insert(0, os.path.join(source_dir, "testbed"))
import faults  # noqa: E402
from job_logs import driver_lines, losses, write_text  # noqa: E402

STEPS = 60
HANG_TIMEOUT = 4.0
STOPPED_TIMEOUT = 1.0
failures = []


def check(condition, what):
    print(("ok:   " if condition else "FAIL: ") + what, flush=True)
    if not condition:
        failures.append(what)


def command(work, extra=()):
    return [run_bin, "--max-restarts", "2", "--hang-timeout", str(HANG_TIMEOUT), "--stopped-timeout",
            str(STOPPED_TIMEOUT), "--heartbeat-ms", "100",
            "--grace-ms", "1000", "-n", "4", *extra, train_bin, "--data", os.path.join(work, "..", "text.txt"),
            "--layers", "4", "--d-model", "32", "--heads", "4", "--seq-len", "16", "--batch-size", "8",
            "--steps", str(STEPS), "--lr", "1e-3", "--threads", "1", "--gemm", "ours-portable",
            "--peak-gflops", "50", "--tokenizer",
            "bytes", "--tp", "2", "--micro-batches", "2", "--checkpoint-every", "10", "--log-every", "20",
            "--checkpoint-dir", os.path.join(work, "ckpt"), "--csv", os.path.join(work, "steps.csv")]


def run_with_fault(root, name, how, rank, at_step, reference, extra=()):
    work = os.path.join(root, name)
    os.makedirs(work)
    job = subprocess.Popen(command(work, extra), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        faults.wait_for_step(os.path.join(work, "steps.csv"), at_step, process=job)
        pid, injected = faults.inject(job.pid, rank, how)
        out, err = job.communicate(timeout=120)
    finally:
        job.kill()
    lines = driver_lines(err)
    print(f"--- {name}: {how} rank {rank} (pid {pid}) after step {at_step}")
    for _, text in lines:
        print("   ", text)
    check(job.returncode == 0, f"{name}: the job finished" + ("" if job.returncode == 0 else f": {err[-600:]}"))
    detected = [(t, text) for t, text in lines if text.startswith("detected")]
    check(len(detected) == 1, f"{name}: one fault detected")
    resumed = re.search(r"resumed from (\S+) \(each rank's own checkpoint\) at step (\d+)", out)
    check(resumed is not None and "/megascale-" in resumed.group(1),
          f"{name}: the restarted ranks resumed from the checkpoint in host memory: {resumed and resumed.group(1)}")
    if detected:
        t, text = detected[0]
        report = re.search(r"last report: step (\d+) (\w+)", text)
        if report and resumed:
            # The trainer reports (step, "step") when it starts a step and (step, "ckpt") once it completed it.
            completed = int(report.group(1)) - (0 if report.group(2) == "ckpt" else 1)
            redone = completed - int(resumed.group(2))
            check(0 <= redone <= 1, f"{name}: {redone} step(s) redone (memory checkpoint interval 1)")
        kind = "rank ended" if how == "kill" else "hang"
        check(text.startswith(f"detected {kind}: rank {rank} (pid {pid})"), f"{name}: names rank {rank}: {text}")
        limit = 1.0 if how == "kill" else STOPPED_TIMEOUT + 1.0
        check(t - injected < limit, f"{name}: detected {t - injected:.2f} s after the fault (limit {limit} s)")
    check(any(text.startswith("restart 1 of 2") for _, text in lines), f"{name}: every rank restarted")
    if "--self-check" in extra:
        check(any(text.startswith("self-check on this host's 4 ranks: passed") for _, text in lines),
              f"{name}: the host passed its self-check before the restart")
    check(any(text.startswith("recovered") for _, text in lines), f"{name}: reported its recovery")
    got = losses(work)
    check(got == reference, f"{name}: losses equal the fault-free run's bit for bit ({len(got)} steps)")


def main():
    with tempfile.TemporaryDirectory() as root:
        write_text(os.path.join(root, "text.txt"))
        clean = os.path.join(root, "clean")
        os.makedirs(clean)
        r = subprocess.run(command(clean), capture_output=True, text=True, timeout=300)
        check(r.returncode == 0, "the fault-free run finished" + ("" if r.returncode == 0 else f": {r.stderr[-600:]}"))
        reference = losses(clean)
        check(len(reference) == STEPS, f"the fault-free run logged {len(reference)} steps")
        check("detected" not in r.stderr, "the fault-free run saw no fault")
        rng = random.Random(int(time.time()))
        for name, how, extra in (("kill", "kill", ["--self-check"]), ("hang", "stop", [])):
            run_with_fault(root, name, how, rng.randrange(4), rng.randrange(10, STEPS - 15), reference, extra)

        # A rank whose GEMM gives wrong numbers (the test-only fault hook): after a fault the self-check names it,
        # and with no spare host the job stops.
        work = os.path.join(root, "bad_gemm")
        os.makedirs(work)
        job = subprocess.Popen(command(work, ["--self-check"]), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env=dict(os.environ, MEGASCALE_TEST_CORRUPT_GEMM="3"))
        try:
            faults.wait_for_step(os.path.join(work, "steps.csv"), 5, process=job)
            faults.inject(job.pid, 0, "kill")
            out, err = job.communicate(timeout=120)
        finally:
            job.kill()
        check(job.returncode != 0, "bad GEMM: the job stopped")
        check(re.search(r"GEMM of rank 3 \(host \S+\): FAIL .*wrong result", out) is not None,
              "bad GEMM: the self-check names rank 3's wrong results")
        check(re.search(r"GEMM of rank [012] \(host \S+\): PASS", out) is not None, "bad GEMM: the others pass")
        check("self-check on this host's 4 ranks: FAILED" in err and "evicting this host" in err,
              "bad GEMM: the driver evicts the host and, with no spare, stops")

        # A program that always fails: restarted twice, then the job ends with its status, naming it.
        r = subprocess.run([run_bin, "--max-restarts", "2", "-n", "2", "bash", "-c",
                            "if [ $MEGASCALE_RANK = 1 ]; then exit 5; fi; sleep 30"],
                           capture_output=True, text=True, timeout=60)
        check(r.returncode == 5, f"a failing program ends the job with its status (got {r.returncode})")
        check(r.stderr.count("detected rank ended: rank 1") == 3, "each of its three runs was detected")
        check("giving up: 2 restart(s) used of --max-restarts 2" in r.stderr, "the driver says it gave up")
    print(f"{len(failures)} failed" if failures else "PASSED")
    return 1 if failures else 0


sys.exit(main())
