#!/usr/bin/python3
"""The fault campaign on local ranks: megascale-train on 8 ranks (tp2 x pp2 x dp2) under megascale-run's driver, a
checkpoint in host memory every step and on disk every 10, faults injected from outside at random moments:

  kill      kill -9 of a random rank
  stop      SIGSTOP of a random rank (a hang: found by --hang-timeout)
  kill-ckpt kill -9 of a random rank just as a disk checkpoint starts being written
  bad-gemm  a rank whose GEMM returns wrong numbers (MEGASCALE_TEST_CORRUPT_GEMM); after a fault the self-check
            must name it (no spare host here: the job then stops)

Per kind: trials, recovered automatically, detection time (median, max), fault to the next completed step
(median, max), steps redone, and whether the final losses equal a fault-free run's bit for bit.

Then ETTR: a run of --ettr-minutes with one fault a minute (kill or SIGSTOP), for ours and for the baseline users
have today: checkpoints on disk every 20 steps and every process restarted from scratch, as torchrun's elastic
agent does (here: megascale-run relaunched; it gets the same hang detection as ours, so the difference is the
checkpoints and the restart). ETTR = seconds in steps that count / wall seconds; time lost per fault split into
detection, restart and redone steps.

Usage: bench/fault_campaign.py BUILD_DIR [--trials N] [--ettr-minutes M] [--fault-every S] [--seed S]
"""
import argparse
import json
import os
import platform
import random
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SOURCE, "testbed"))
import faults  # noqa: E402
from job_logs import Job, losses, steps_redone, write_text  # noqa: E402

HANG_TIMEOUT = 2.0
DISK_EVERY = 10
MODEL = ["--layers", "4", "--d-model", "64", "--heads", "4", "--seq-len", "32", "--batch-size", "16", "--lr", "1e-3",
         "--threads", "1", "--gemm", "ours-portable", "--tokenizer", "bytes", "--tp", "2", "--pp", "2",
         "--micro-batches", "4", "--log-every", "50"]


def train_command(build, work, data, steps, extra=(), driver=True, memory=True, disk_every=DISK_EVERY):
    run = [os.path.join(build, "launcher", "megascale-run")]
    if driver:
        run += ["--max-restarts", "1000", "--hang-timeout", str(HANG_TIMEOUT), "--heartbeat-ms", "100",
                "--grace-ms", "1000"]
    return run + list(extra) + ["-n", "8", os.path.join(build, "trainer", "megascale-train"), "--data", data,
                                *MODEL, "--steps", str(steps), "--checkpoint-every", str(disk_every),
                                "--memory-checkpoint-every", "1" if memory else "0",
                                "--checkpoint-dir", os.path.join(work, "ckpt"), "--csv", os.path.join(work, "steps.csv")]


def step_seconds(work):
    with open(os.path.join(work, "steps.csv")) as f:
        return [float(line.split(",")[4]) for line in list(f)[1:]]


def wait_until(condition, timeout, job):
    deadline = time.monotonic() + timeout
    while not condition():
        if job.process.poll() is not None:
            return False
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


def inject_faults(job, work, kind, count, rng, gap):
    """Injects `count` faults of `kind`, each once the job recovered from the last and `gap` seconds passed."""
    csv = os.path.join(work, "steps.csv")
    injected = []  # (time.time(), kind, rank, completed steps at the fault)
    for i in range(count):
        # In its steady loop: recovered from the last fault, or (the first) past its first step.
        if not wait_until(lambda: len(job.driver("recovered")) >= i and faults.csv_steps(csv) > 0, 120, job):
            break
        time.sleep(rng.uniform(*gap))
        how = "stop" if kind == "stop" else "kill"
        if kind == "kill-ckpt":  # just as the next disk checkpoint starts: its step appears in the CSV
            target = (faults.csv_steps(csv) // DISK_EVERY + 1) * DISK_EVERY
            if not wait_until(lambda: faults.csv_steps(csv) >= target, 120, job):
                break
        rank = rng.randrange(8)
        done = faults.csv_steps(csv)
        try:
            _, at = faults.inject(job.process.pid, rank, how)
        except (TimeoutError, ProcessLookupError):
            break
        injected.append((at, how, rank, done))
        if not wait_until(lambda: len(job.driver("detected")) > i, 60, job):
            break
    return injected


def first_after(events, when):
    """The first event at or after `when`; the driver's times are cut to milliseconds, hence the 1 ms."""
    return next((e for e in events if e[0] >= when - 0.001), None)


def per_fault(job, injected):
    """Detection s, fault-to-next-step s, steps redone, named, for each injected fault: each paired with the first
    detection, resumption and recovery after it."""
    detected, recovered = job.driver("detected"), job.driver("recovered")
    resumed = [(t, int(m.group(1))) for t, m in job.grep(r"^\[\d+\] resumed from .* at step (\d+)")]
    rows = []
    for at, how, rank, done in injected:
        d = first_after(detected, at)
        if d is None:
            continue
        r = first_after(recovered, d[0])
        back = first_after(resumed, d[0])
        named = f"rank {rank} " in d[1]
        if not named:
            print(f"    (the {how} of rank {rank} was followed by: {d[1]})")
        rows.append((how, d[0] - at, r[0] - at if r else None, steps_redone(done, back[1] if back else None), named))
    return rows


def fmt(values, digits=2):
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    return f"{statistics.median(values):.{digits}f} / {max(values):.{digits}f}"


def campaign(build, root, data, trials, rng, reference_steps, kinds):
    reference = os.path.join(root, "reference")
    os.makedirs(reference)
    job = Job(train_command(build, reference, data, reference_steps))
    if job.wait(900) != 0:
        sys.exit("the fault-free run failed:\n" + "\n".join(t for _, _, t in job.lines[-20:]))
    expected = losses(reference)
    print(f"fault-free run: {len(expected)} steps, mean step {statistics.mean(step_seconds(reference)) * 1e3:.0f} ms")
    table = []
    for kind in [k for k in ("kill", "stop", "kill-ckpt") if k in kinds]:
        work = os.path.join(root, kind)
        os.makedirs(work)
        job = Job(train_command(build, work, data, reference_steps))
        injected = inject_faults(job, work, kind, trials, rng, (0.5, 1.5))
        status = job.wait(900)
        rows = per_fault(job, injected)
        for (at, how, rank, done), row in zip(injected, rows):
            print(f"    {how} rank {rank} after step {done}: detected {row[1]:.2f} s, next step "
                  f"{row[2] if row[2] is None else round(row[2], 2)} s, redone {row[3]}, named {row[4]}")
        recovered = sum(1 for r in rows if r[2] is not None and r[4])
        equal = status == 0 and losses(work) == expected
        table.append((kind, len(injected), recovered, fmt([r[1] for r in rows]), fmt([r[2] for r in rows]),
                      fmt([r[3] for r in rows], 0), "yes" if equal else "NO"))
        print(f"  {kind}: {len(injected)} faults, {recovered} recovered, final losses equal: {equal}", flush=True)
    # A rank with a wrong GEMM: each trial its own short run; the self-check must name the rank.
    named = 0
    for _ in range(trials if "bad-gemm" in kinds else 0):
        work = tempfile.mkdtemp(dir=root, prefix="bad-gemm-")
        bad = rng.randrange(8)
        job = Job(train_command(build, work, data, reference_steps, ["--self-check"]),
                  env={"MEGASCALE_TEST_CORRUPT_GEMM": str(bad)})
        csv = os.path.join(work, "steps.csv")
        if wait_until(lambda: faults.csv_steps(csv) >= 3, 120, job):
            faults.inject(job.process.pid, (bad + 1) % 8, "kill")
        job.wait(300)
        if job.grep(rf"GEMM of rank {bad} \(host \S+\): FAIL") and job.driver("evicting this host"):
            named += 1
    if "bad-gemm" in kinds:
        table.append(("bad-gemm", trials, f"{named} named by the self-check, host evicted (no spare: job stopped)",
                      "-", "-", "-", "-"))
    return table


def ettr_run(build, root, data, minutes, fault_every, rng, baseline):
    """One ETTR run: ours (driver restarts, memory checkpoints) or the baseline (relaunch, disk every 20)."""
    work = os.path.join(root, "ettr-baseline" if baseline else "ettr-ours")
    os.makedirs(work)
    steps = 1000000  # stopped by the clock
    start = time.time()
    end = start + minutes * 60
    next_fault = start + fault_every
    losses_per_fault = []  # (detection, restart, redone seconds)
    launches = 0
    mean_step = None
    while time.time() < end:
        launches += 1
        if baseline:
            argv = train_command(build, work, data, steps, driver=False, memory=False, disk_every=20)
            argv[1:1] = ["--hang-timeout", str(HANG_TIMEOUT), "--heartbeat-ms", "100", "--grace-ms", "1000"]
        else:
            argv = train_command(build, work, data, steps)
        job = Job(argv)
        csv = os.path.join(work, "steps.csv")
        while time.time() < end and job.process.poll() is None:
            if time.time() < next_fault:
                time.sleep(0.05)
                continue
            how = rng.choice(["kill", "stop"])
            done = faults.csv_steps(csv)
            try:
                _, at = faults.inject(job.process.pid, rng.randrange(8), how)
            except (TimeoutError, ProcessLookupError):
                next_fault = time.time() + 1
                continue
            next_fault = at + fault_every
            if not wait_until(lambda: first_after(job.driver("detected"), at) is not None, 60, job) and \
                    job.process.poll() is None:
                continue
            detected = [t for t, _ in job.driver("detected") if t >= at - 0.001]
            detection = (detected[0] - at) if detected else 0.0
            if baseline:  # megascale-run exits after a fault: relaunch everything (the loop above)
                job.wait(30)
                relaunched = time.time()
                before = os.stat(csv).st_ino if os.path.exists(csv) else None
                job = Job(argv)
                launches += 1
                # The relaunched trainer replaces the CSV (a new file) once it resumed.
                wait_until(lambda: os.path.exists(csv) and os.stat(csv).st_ino != before, 120, job)
                back = first_after([(t, int(m.group(1))) for t, m in job.grep(r"^\[\d+\] resumed from \S+ at step (\d+)")], 0)
                base = back[1] if back else 0
                wait_until(lambda: faults.csv_steps(csv) > base, 120, job)
                restart = time.time() - detected[0] if detected else time.time() - relaunched
            else:
                wait_until(lambda: first_after(job.driver("recovered"), at) is not None, 60, job)
                back = first_after([(t, int(m.group(1))) for t, m in job.grep(r"^\[\d+\] resumed from .* at step (\d+)")], at)
                base = back[1] if back else done
                rec = [t for t, _ in job.driver("recovered") if t >= at - 0.001]
                restart = (rec[0] - detected[0]) if rec and detected else 0.0
            if mean_step is None:
                seconds = step_seconds(work)
                mean_step = statistics.median(seconds) if seconds else 0.0
            losses_per_fault.append((detection, restart, steps_redone(done, base) * (mean_step or 0)))
        if job.process.poll() is None:
            job.process.send_signal(signal.SIGINT)
        job.wait(60)
    wall = time.time() - start
    counted = sum(step_seconds(work))
    return {"wall": wall, "counted": counted, "ettr": counted / wall, "faults": len(losses_per_fault),
            "detection": statistics.mean([x[0] for x in losses_per_fault]) if losses_per_fault else 0,
            "restart": statistics.mean([x[1] for x in losses_per_fault]) if losses_per_fault else 0,
            "redone": statistics.mean([x[2] for x in losses_per_fault]) if losses_per_fault else 0,
            "steps": len(step_seconds(work))}


def checkpoint_cost(build, root, pairs, steps):
    """The main job's shape (trainer/configs/main_job.conf, 8 ranks) with a checkpoint into host memory every step
    and with none, alternating; wall seconds per step (the CSV's elapsed time, which includes the saves)."""
    data = "/usr/share/doc/jargon-text/jargon.txt.gz"
    if not os.path.exists(data):
        print("checkpoint cost: skipped (the jargon-text package's text is missing)")
        return
    per_step, cpu, blocked = {0: [], 1: []}, {0: [], 1: []}, []
    for i in range(pairs):
        for every in (0, 1):
            work = os.path.join(root, f"cost-{every}-{i}")
            os.makedirs(work)
            argv = [os.path.join(build, "launcher", "megascale-run"), "--max-restarts", "1", "-n", "8",
                    os.path.join(build, "trainer", "megascale-train"), "--config",
                    os.path.join(SOURCE, "trainer", "configs", "main_job.conf"), "--data", data, "--steps", str(steps),
                    "--memory-checkpoint-every", str(every), "--log-every", str(steps), "--sample-tokens", "0",
                    "--csv", os.path.join(work, "steps.csv"), "--summary-json", os.path.join(work, "summary.json")]
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            subprocess.run(argv, capture_output=True, check=True, timeout=900)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu[every].append((after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) / steps)
            with open(os.path.join(work, "steps.csv")) as f:
                rows = [line.split(",") for line in list(f)[1:]]
            # From the end of the first step (start-up and its first save left out) to the end of the last.
            per_step[every].append((float(rows[-1][7]) - float(rows[0][7])) / (len(rows) - 1))
            with open(os.path.join(work, "summary.json")) as f:
                summary = json.load(f)
            if summary["checkpoint_saves"] > 0:
                blocked.append(summary["checkpoint_blocked_s"] / summary["checkpoint_saves"])
    def compare(name, unit, series):
        # The median of the pairs' ratios: each pair ran back to back, so slow drift of the VM cancels within it.
        ratios = [b / a - 1 for a, b in zip(series[0], series[1])]
        off, on = statistics.median(series[0]), statistics.median(series[1])
        print(f"  {name}: no checkpoints {off * 1e3:.1f} {unit}, into host memory every step {on * 1e3:.1f} {unit}; "
              f"median of the pairs {statistics.median(ratios) * 100:+.1f}% (pairs: " +
              ", ".join(f"{r * 100:+.1f}%" for r in ratios) + ")", flush=True)

    print(f"\ncheckpoint cost, main job (8 ranks tp2 x pp2 x dp2), {pairs} alternating pairs of {steps} steps:")
    compare("wall", "ms/step", per_step)
    # CPU time of all ranks (start-up included, alike in both): less swayed by scheduling on a shared VM.
    compare("CPU of all ranks", "ms/step", cpu)
    saved = statistics.median(blocked)
    print(f"  a save blocks the reporting rank {saved * 1e3:.2f} ms (median of the runs' means), "
          f"{saved / statistics.median(per_step[1]) * 100:.2f}% of its step", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("build")
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--ettr-minutes", type=float, default=10)
    parser.add_argument("--fault-every", type=float, default=60)
    parser.add_argument("--seed", type=int, default=int(time.time()))
    parser.add_argument("--skip-campaign", action="store_true")
    parser.add_argument("--kinds", default="kill,stop,kill-ckpt,bad-gemm", help="which faults the campaign injects")
    parser.add_argument("--cost-pairs", type=int, default=0, help="measure the memory checkpoint's cost first")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")
    print(f"# fault campaign: {platform.node()}, {cpu}, {os.cpu_count()} cores; seed {args.seed}; GEMM ours-portable")
    print(f"# 8 local ranks tp2 x pp2 x dp2; memory checkpoint every step, disk every {DISK_EVERY}; "
          f"hang timeout {HANG_TIMEOUT} s, stopped timeout 1 s (default)")
    with tempfile.TemporaryDirectory(prefix="fault-campaign-") as root:
        data = os.path.join(root, "text.txt")
        write_text(data, words=60000, seed=11)
        if args.cost_pairs > 0:
            checkpoint_cost(args.build, root, args.cost_pairs, 60)
        if not args.skip_campaign:
            steps = 60 + args.trials * 40
            table = campaign(args.build, root, data, args.trials, rng, steps, args.kinds.split(","))
            print("\n| fault | trials | recovered automatically | detection s (median / max) | "
                  "fault to next step s (median / max) | steps redone (median / max) | final losses equal |")
            print("|---|---|---|---|---|---|---|")
            for row in table:
                print("| " + " | ".join(str(c) for c in row) + " |")
        if args.ettr_minutes > 0:
            print(f"\nETTR: {args.ettr_minutes:g} min each, a fault (kill -9 or SIGSTOP of a random rank) every "
                  f"{args.fault_every:g} s", flush=True)
            ours = ettr_run(args.build, root, data, args.ettr_minutes, args.fault_every, rng, baseline=False)
            base = ettr_run(args.build, root, data, args.ettr_minutes, args.fault_every, rng, baseline=True)
            print("| run | wall s | faults | steps kept | ETTR | lost per fault s: detection | restart to next step |"
                  " redone steps |")
            print("|---|---|---|---|---|---|---|---|")
            for name, r in (("megascale (memory every step, driver restart)", ours),
                            ("baseline (disk every 20, full relaunch)", base)):
                print(f"| {name} | {r['wall']:.0f} | {r['faults']} | {r['steps']} | {r['ettr'] * 100:.1f}% | "
                      f"{r['detection']:.2f} | {r['restart']:.2f} | {r['redone']:.2f} |")
            print(f"ETTR ours / baseline: {ours['ettr'] / base['ettr']:.2f}x")


if __name__ == "__main__":
    main()
