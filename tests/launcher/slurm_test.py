#!/usr/bin/python3
"""megascale under a real Slurm (Debian's slurm-wlm and munge, started on loopback by testbed/slurm/local_slurm.sh
in a temporary directory and stopped at the end):
1. `srun -N1 -n4 collective_check`: four tasks that srun starts directly (no megascale-run, no PMIx) find each
   other through task 0's store on the step's first node, and every collective is exact.
2. `sbatch` of a short megascale-train job under megascale-run, which takes its 4 ranks (tp 2 x dp 2) and job id
   from the allocation: the job completes and trains every step.
3. The same job pre-empted: a pre-emption notice (`scancel --signal=USR1`, what `--signal=USR1@60` sends) makes
   the ranks checkpoint after their current step and stop; megascale-run requeues the job, and its next run
   (SLURM_RESTART_COUNT=1, a fresh key space) resumes from that checkpoint: its losses equal the uninterrupted
   run's bit for bit.
Skipped (exit 77) without root or without the Slurm daemons.
Usage: slurm_test.py MEGASCALE_RUN MEGASCALE_TRAIN COLLECTIVE_CHECK SOURCE_DIR"""
import os
import subprocess
import sys
import tempfile
import time

run_bin, train_bin, check_bin, source = sys.argv[1:5]
local_slurm = os.path.join(source, "testbed", "slurm", "local_slurm.sh")
MODEL = ["--layers", "2", "--d-model", "32", "--heads", "4", "--seq-len", "16", "--batch-size", "8", "--lr", "1e-3",
         "--threads", "1", "--gemm", "ours-portable", "--peak-gflops", "50", "--tokenizer", "bytes", "--tp", "2",
         "--log-every", "5", "--sample-tokens", "0", "--checkpoint-every", "1000"]
failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
        print("FAIL:", what, flush=True)


def slurm(*argv, timeout=30):
    r = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({r.returncode}): {r.stderr.strip()}")
    return r.stdout.strip()


def job_state(job):
    return slurm("scontrol", "show", "job", job, "-o").split("JobState=")[1].split()[0]


def wait_until(what, predicate, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.25)
    check(False, f"{what} within {seconds} s")
    return False


def losses(csv):
    if not os.path.exists(csv):
        return []
    with open(csv) as f:
        return [line.split(",")[1] for line in list(f)[1:]]


def training_script(tmp, name, steps):
    """A batch script users would write: one megascale-run on the node, its ranks from the allocation."""
    path = os.path.join(tmp, name + ".sh")
    flags = " ".join(MODEL + ["--steps", str(steps), "--data", os.path.join(tmp, "text.txt"),
                              "--checkpoint-dir", os.path.join(tmp, name, "checkpoints"),
                              "--csv", os.path.join(tmp, name, "steps.csv")])
    with open(path, "w") as f:
        f.write(f"#!/bin/bash\nset -e\nmkdir -p {tmp}/{name}\n"
                f"srun -N \"$SLURM_NNODES\" -n \"$SLURM_NNODES\" {run_bin} {train_bin} {flags}\n")
    return path


def sbatch(tmp, script, name, *extra):
    out = os.path.join(tmp, name + ".out")
    job = slurm("sbatch", "--parsable", "-N1", "--ntasks-per-node=4", "--open-mode=append", "-o", out, *extra, script)
    return job, out


def read(path):
    return open(path).read() if os.path.exists(path) else ""


def srun_all_reduce(env):
    r = subprocess.run(["srun", "-N1", "-n4", check_bin, "0", "7", "1000"], capture_output=True, text=True,
                       timeout=240, env=env)
    check(r.returncode == 0, f"srun -N1 -n4 collective_check exits 0 (got {r.returncode}): {r.stderr[-2000:]}")
    print("srun -N1 -n4 collective_check:", r.returncode, r.stdout.strip().splitlines()[-1:] if r.stdout else "")


def sbatch_training(tmp, steps):
    job, out = sbatch(tmp, training_script(tmp, "clean", steps), "clean")
    wait_until("the clean training job completes", lambda: job_state(job) in ("COMPLETED", "FAILED", "CANCELLED"), 240)
    text = read(out)
    check(job_state(job) == "COMPLETED", f"the clean job completed (state {job_state(job)}):\n{text[-3000:]}")
    check(f"Slurm job {job} (run 0): node 0 (localhost) of 1, ranks 0-3 of 4" in text,
          "megascale-run took its ranks from the allocation")
    check(f"step {steps}/{steps}" in text, f"the clean job ran {steps} steps")
    return losses(os.path.join(tmp, "clean", "steps.csv"))


def preempted_training(tmp, steps, clean):
    job, out = sbatch(tmp, training_script(tmp, "preempted", steps), "preempted", "--requeue")
    csv = os.path.join(tmp, "preempted", "steps.csv")
    if not wait_until("the job trains a few steps", lambda: len(losses(csv)) >= 5, 120):
        return
    slurm("scancel", "--signal=USR1", job)  # what sbatch --signal=USR1@60 sends before pre-emption
    # Slurm holds a requeued job back before it may start again (its BeginTime); the test moves that to now.
    if wait_until("the job is requeued", lambda: f"pre-empted: requeued Slurm job {job}" in read(out), 120):
        wait_until("the requeued job is pending", lambda: job_state(job) in ("PENDING", "RUNNING", "COMPLETED"), 60)
        if job_state(job) == "PENDING":
            begin = slurm("scontrol", "show", "job", job, "-o").split("StartTime=")[1].split()[0]
            print(f"requeued job {job}: Slurm lets it start at {begin}; starting it now", flush=True)
            slurm("scontrol", "update", f"JobId={job}", "StartTime=now")
    wait_until("the job is requeued and runs again",
               lambda: "(run 1)" in read(out), 240)
    wait_until("the requeued job completes", lambda: job_state(job) in ("COMPLETED", "FAILED", "CANCELLED"), 240)
    text = read(out)
    check(job_state(job) == "COMPLETED", f"the requeued job completed (state {job_state(job)}):\n{text[-4000:]}")
    check("pre-emption notice" in text, "megascale-run passed the notice on")
    stop = [line for line in text.splitlines() if "stopping after step" in line]
    check(len(stop) == 1, f"the ranks stopped once after a step: {stop}")
    check(f"pre-empted: requeued Slurm job {job}" in text, "megascale-run requeued the job")
    check(f"Slurm job {job} (run 1)" in text, "the next run is run 1 of the job")
    resumed = [line for line in text.splitlines() if "resumed from" in line]
    check(len(resumed) == 1 and stop and stop[0].split("stopping after step ")[1].split()[0] in resumed[0],
          f"the next run resumed from the step it stopped at: {stop} {resumed}")
    print("pre-empted job:", stop, resumed, flush=True)
    got = losses(csv)
    check(got == clean, f"the pre-empted and requeued run's losses equal the clean run's ({len(got)} vs {len(clean)})")


def main():
    probe = subprocess.run(["bash", local_slurm, "check"], capture_output=True, text=True)
    if probe.returncode != 0:
        print(probe.stdout.strip())
        return 77
    with tempfile.TemporaryDirectory(prefix="megascale-slurm-") as tmp:
        os.chmod(tmp, 0o755)
        with open(os.path.join(tmp, "text.txt"), "w") as f:
            f.write("the quick brown fox jumps over the lazy dog; pack my box with five dozen liquor jugs. " * 400)
        up = subprocess.run(["bash", local_slurm, "up", os.path.join(tmp, "slurm")], capture_output=True, text=True,
                            timeout=120)
        try:
            if up.returncode != 0:
                check(False, f"the local Slurm starts: {up.stdout}{up.stderr}")
                return 1
            env = dict(os.environ, SLURM_CONF=os.path.join(tmp, "slurm", "slurm.conf"), MEGASCALE_TIMEOUT_MS="60000")
            env["PATH"] = env.get("PATH", "") + ":/usr/sbin"
            os.environ.update(env)
            started = time.monotonic()
            srun_all_reduce(env)
            print(f"srun all-reduce: {time.monotonic() - started:.1f} s", flush=True)
            steps = 60
            started = time.monotonic()
            clean = sbatch_training(tmp, steps)
            check(len(clean) == steps, f"the clean run logged {steps} steps ({len(clean)})")
            print(f"sbatch training: {time.monotonic() - started:.1f} s", flush=True)
            started = time.monotonic()
            preempted_training(tmp, steps, clean)
            print(f"pre-empted, requeued and resumed training: {time.monotonic() - started:.1f} s", flush=True)
        finally:
            subprocess.run(["bash", local_slurm, "down", os.path.join(tmp, "slurm")], timeout=60)
    print("slurm test:", "FAILED" if failures else "passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
