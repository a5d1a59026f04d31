#!/usr/bin/python3
"""megascale-run across hosts: each host's megascale-run is an executor, the first to join also drives the job, and
they talk only through the job's store. A real training job (tp2 x dp2, a checkpoint in host memory every step) runs
on two host slots of 2 ranks each, with a third host as a spare.
loopback (any user): the hosts are megascale-run processes with host names of their own, on 127.0.0.1.
  1. fault-free: the reference losses;
  2. a rank killed: detected and named with its host, every rank restarted on the same hosts;
  3. a whole host lost (its megascale-run and its ranks killed), with --self-check: the driver evicts it, the
     others pass their self-check, the hosts of the next run pass the link check between them, the spare takes the
     slot with the slot's checkpoints fetched from their replica on another host, and the ranks resume from host
     memory.
emulated (root): the hosts are network namespaces of testbed/emulated_cluster.sh, the store on host 0.
  4. host 1's cable pulled for 2 s: ridden out, no restart;
  5. host 1's cable pulled for longer than --host-timeout: its executor stops its ranks and leaves (fenced), the
     driver evicts it, the spare takes over from the replica.
In every case the job finishes and its losses equal the fault-free run's bit for bit.
Usage: cluster_recovery_test.py MEGASCALE_RUN MEGASCALE_STORE MEGASCALE_TRAIN SOURCE_DIR loopback|emulated
(exit 77: skipped, the emulated cluster needs root)"""
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

run_bin, store_bin, train_bin, source_dir, mode = sys.argv[1:6]
sys.path.insert(0, os.path.join(source_dir, "testbed"))
import faults  # noqa: E402
from emulated_cluster import EmulatedCluster, unavailable_reason  # noqa: E402
from job_logs import Job, losses, write_text  # noqa: E402

STEPS = 50
HEARTBEAT_MS = 100
HOST_TIMEOUT = 5.0
# A 2 s flap (case 4) must be ridden out: its tcp connections resume only at their next retransmission, whose
# timeout doubles while the link is down, and the neighbour is resolved again after it. f17 saw ranks without
# progress for 10.27 s after one (rank 0 past a reduce-scatter whose data rank 2 still waited for), against a hang
# timeout of 10 s; no case here detects a hang on purpose.
HANG_TIMEOUT = 20.0
SECRET = "0123456789abcdef0123456789abcdef"
TAG = f"cr{os.getpid() % 100000}"
failures = []


def check(condition, what):
    print(("ok:   " if condition else "FAIL: ") + what, flush=True)
    if not condition:
        failures.append(what)


CLUSTER = EmulatedCluster(TAG, 3)


def on_host(i, argv):
    if mode == "emulated":
        return CLUSTER.on(i, argv)
    return ["env", f"MEGASCALE_HOST_NAME=host{i}"] + argv


STORE_ADDRESS = CLUSTER.address(0) if mode == "emulated" else "127.0.0.1"
STORE_PORT = 29000 + os.getpid() % 1000


def start_hosts(work, job_id, extra=()):
    """Host 0 and 1 run slots 0 and 1 (ranks 0-1, 2-3), host 2 joins as the spare; returns their Jobs."""
    train = [train_bin, "--data", os.path.join(work, "..", "text.txt"), "--layers", "4", "--d-model", "32",
             "--heads", "4", "--seq-len", "16", "--batch-size", "8", "--steps", str(STEPS), "--lr", "1e-3",
             "--threads", "1", "--gemm", "ours-portable",
             "--peak-gflops", "50", "--tokenizer", "bytes", "--tp", "2", "--micro-batches",
             "2", "--checkpoint-every", "10", "--log-every", "20", "--checkpoint-dir", os.path.join(work, "ckpt"),
             "--csv", os.path.join(work, "steps.csv")]
    jobs = []
    for i in range(3):
        place = ["--rank-offset", str(2 * i)] if i < 2 else []
        run = [run_bin, "--store", f"tcp://{STORE_ADDRESS}:{STORE_PORT}", "--job-id", job_id, "--world-size", "4",
               "-n", "2", *place, "--spare-hosts", "1", "--max-restarts", "2", "--heartbeat-ms", str(HEARTBEAT_MS),
               "--hang-timeout", str(HANG_TIMEOUT), "--host-timeout", str(HOST_TIMEOUT), "--grace-ms", "1000",
               *extra]
        jobs.append(Job(on_host(i, run + train), env={"MEGASCALE_JOB_SECRET": SECRET, "MEGASCALE_TIMEOUT_MS": "60000"}))
        time.sleep(0.2)  # host 0 joins first: it drives
    return jobs


def finish(jobs, name):
    codes = [job.wait(180) for job in jobs]
    print(f"--- {name}: exit codes {codes}")
    for t, text in jobs[0].driver(""):
        print("    host 0:", text)
    for i in (1, 2):
        for t, text in jobs[i].driver(""):
            print(f"    host {i}:", text)
    return codes


def run_case(root, name, reference, fault, extra=()):
    """Runs the job, calls fault(jobs, work) once it is under way, and checks what every case shares."""
    work = os.path.join(root, name)
    os.makedirs(work)
    jobs = start_hosts(work, f"{TAG}-{name}", extra)
    try:
        faults.wait_for_step(os.path.join(work, "steps.csv"), 12, process=jobs[0].process)
        fault(jobs, work)
    finally:
        codes = finish(jobs, name)
    check(codes[0] == 0, f"{name}: the job finished on the driver's host (exit {codes[0]})")
    got = losses(work)
    check(got == reference, f"{name}: losses equal the fault-free run's bit for bit ({len(got)} steps)")
    return jobs, codes


def resumed_from_memory(job):
    m = re.search(r"resumed from (\S+) \(each rank's own checkpoint\) at step (\d+)", job.text("out"))
    if m is None or "/megascale-" not in m.group(1):
        print("    the trainer said:", [t for _, t in job.grep(r"resumed from|cannot be loaded")])
        return False
    return True


def loopback_cases(root, reference):
    def kill_rank(jobs, work):
        faults.inject(jobs[1].process.pid, 3, "kill")

    jobs, codes = run_case(root, "rank_killed", reference, kill_rank)
    detected = jobs[0].driver("detected")
    check(len(detected) == 1 and detected[0][1].startswith("detected rank ended: rank 3 (host host1 (executor 1))"),
          f"rank_killed: the driver names rank 3 and its host: {detected}")
    diagnosis = jobs[0].driver("diagnosis: ")
    check(len(diagnosis) == 1 and diagnosis[0][1].startswith("diagnosis: rank 3 (host host1, tp 1 pp 0 dp 1)")
          and "killed by signal 9" in diagnosis[0][1],
          f"rank_killed: the diagnosis merged from both hosts' flight records names rank 3 and its host: {diagnosis}")
    check(jobs[0].driver("restart 1 of 2") != [] and jobs[0].driver("recovered") != [],
          "rank_killed: every rank restarted and the driver saw them recover")
    check(codes == [0, 0, 0], f"rank_killed: every host's megascale-run exits 0: {codes}")
    check(resumed_from_memory(jobs[0]), "rank_killed: the ranks resumed from host memory")

    def lose_host(jobs, work):
        faults.wait_for_step(os.path.join(work, "steps.csv"), 14, process=jobs[0].process)  # replicas reach host 0
        os.kill(jobs[1].process.pid, signal.SIGKILL)

    jobs, codes = run_case(root, "host_lost", reference, lose_host, ["--self-check"])
    check(codes[2] == 0, f"host_lost: the spare host finished the job (exit {codes[2]})")
    check(any("(host host1 (executor 1))" in text for _, text in jobs[0].driver("detected")),
          f"host_lost: the fault is on host1: {jobs[0].driver('detected')}")
    check(jobs[0].driver("evicting host host1 (executor 1)") != [], "host_lost: host1 evicted")
    check(jobs[0].driver("slot 1 (ranks 2-3): spare executor 2 replaces executor 1, with the checkpoints "
                         "replicated to executor 0") != [], "host_lost: the spare takes slot 1")
    check(jobs[2].driver("took over slot 1 (ranks 2-3): fetched their checkpoints") != [],
          "host_lost: the spare fetched the slot's checkpoints from the replica")
    check(resumed_from_memory(jobs[0]), "host_lost: every rank resumed from host memory (no disk read)")
    check(all(jobs[i].driver("self-check on this host's 2 ranks: passed") != [] for i in (0, 2)),
          "host_lost: host0 and the spare passed their self-checks")
    check(jobs[0].driver("link check of 2 hosts") != [] and jobs[0].driver("link check of 2 hosts")[0][1].find(
          "2 of 2 links passed") > 0, f"host_lost: the next run's hosts passed the link check: "
          f"{jobs[0].driver('link check of 2 hosts')}")
    check(jobs[0].driver("link check to host host2:") != [] and jobs[2].driver("link check to host host0:") != [],
          "host_lost: each host probed the link to the other")


def emulated_cases(root, reference):
    def flap(jobs, work):
        CLUSTER.link_down(1)
        time.sleep(2.0)
        CLUSTER.link_up(1)

    jobs, codes = run_case(root, "flap_2s", reference, flap)
    check(jobs[0].driver("detected") == [], f"flap_2s: ridden out, nothing detected: {jobs[0].driver('detected')}")
    check(codes == [0, 0, 0], f"flap_2s: every host's megascale-run exits 0: {codes}")

    def long_cut(jobs, work):
        faults.wait_for_step(os.path.join(work, "steps.csv"), 14, process=jobs[0].process)  # replicas reach host 0
        CLUSTER.link_down(1)
        time.sleep(HOST_TIMEOUT + 4)
        CLUSTER.link_up(1)

    jobs, codes = run_case(root, "cut_long", reference, long_cut)
    check(codes[1] == 1 and jobs[1].driver("cannot reach the job's store") != [],
          f"cut_long: host 1's executor fenced itself (exit {codes[1]})")
    check(jobs[0].driver(f"evicting host {CLUSTER.name(1)} (executor 1)") != [], "cut_long: host 1 evicted")
    check(jobs[2].driver("took over slot 1 (ranks 2-3): fetched their checkpoints") != [],
          "cut_long: the spare fetched the slot's checkpoints from the replica")
    check(codes[2] == 0, f"cut_long: the spare host finished the job (exit {codes[2]})")


def main():
    if mode == "emulated":
        if unavailable_reason():
            print(f"SKIPPED: {unavailable_reason()}")
            return 77
        if not CLUSTER.up():
            print("FAILED: cannot make the emulated cluster")
            return 1
    store = subprocess.Popen(on_host(0, [store_bin, "--host", STORE_ADDRESS, "--port", str(STORE_PORT)]),
                             stdout=subprocess.DEVNULL, env=dict(os.environ, MEGASCALE_JOB_SECRET=SECRET))
    try:
        with tempfile.TemporaryDirectory() as root:
            write_text(os.path.join(root, "text.txt"))
            clean = os.path.join(root, "clean")
            os.makedirs(clean)
            jobs = start_hosts(clean, f"{TAG}-clean")
            codes = finish(jobs, "clean")
            reference = losses(clean)
            check(codes == [0, 0, 0] and len(reference) == STEPS,
                  f"the fault-free run finished on every host ({codes}, {len(reference)} steps)")
            check(jobs[0].driver("detected") == [], "the fault-free run saw no fault")
            (emulated_cases if mode == "emulated" else loopback_cases)(root, reference)
    finally:
        store.kill()
        store.wait()
        if mode == "emulated":
            CLUSTER.down()
    print(f"{len(failures)} failed" if failures else "PASSED")
    return 1 if failures else 0


sys.exit(main())
