#!/usr/bin/python3
"""The fault campaign on emulated hosts: megascale-train on 8 ranks (tp2 x pp2 x dp2) over 4 emulated hosts x 2
ranks (network namespaces of testbed/emulated_cluster.sh, every link shaped to --rate), plus --spares spare hosts;
one megascale-run per host, host 0's (beside the store) drives the job. A checkpoint in host memory every step
(replicated to the next host) and on disk every 10. Faults injected from outside at random moments:

  kill       kill -9 of a random rank
  stop       SIGSTOP of a random rank (a hang: found by --hang-timeout)
  kill-ckpt  kill -9 of a random rank just as a disk checkpoint starts being written
  flap       a host's cable pulled for 2 s: must be ridden out (nothing detected, no restart)
  cut        a host's cable pulled for --cut-seconds (60): its megascale-run fences itself, the driver evicts the
             host after --host-timeout and a spare takes its slot from the replica; the host rejoins as a spare
             once its cable is back
  host-lost  a whole host lost: its megascale-run and ranks killed, its cable pulled; evicted, replaced by a
             spare; it rejoins as a spare --rejoin-seconds later
  bad-gemm   a host whose GEMM returns wrong numbers (MEGASCALE_TEST_CORRUPT_GEMM in its self-check); after a
             fault the self-check fails it, the driver evicts it and a spare takes over (a short job per trial)

The driver's host (host 0) is never cut or lost: the job has one driver, as MegaScale's has. Per kind: trials,
handled automatically (recovered, or ridden out for flaps), the fault named, detection time (median, max), fault to
the next completed step, steps redone, and whether every job's losses equal a fault-free run's bit for bit (the
learning rate is constant, so a run of any length is a prefix of the reference).

Then ETTR on the same hosts without spares: --ettr-minutes with a fault every --fault-every seconds, its kind drawn
from kill -9, SIGSTOP and a 2 s flap, for ours and for the baseline users have today (disk checkpoints every 20
steps, every process of every host restarted, as torchrun's elastic agent does).

Usage: bench/cluster_fault_campaign.py BUILD_DIR [--trials N] [--kinds K,...] [--ettr-minutes M] [--seed S]
(root: it makes network namespaces)"""
import argparse
import os
import platform
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SOURCE, "testbed"))
import faults  # noqa: E402
from emulated_cluster import EmulatedCluster, unavailable_reason  # noqa: E402
from job_logs import Job, losses, steps_redone, write_text  # noqa: E402

HOSTS, NPROC = 4, 2
RANKS = HOSTS * NPROC
HANG_TIMEOUT = 5.0  # above a 2 s flap and the TCP retransmissions after it: a flap is ridden out
DISK_EVERY = 10
SECRET = "00112233445566778899aabbccddeeff"
PORT = 29411
MODEL = ["--layers", "4", "--d-model", "64", "--heads", "4", "--seq-len", "32", "--batch-size", "16", "--lr", "1e-3",
         "--min-lr", "1e-3", "--warmup", "10", "--threads", "1", "--gemm", "ours-portable", "--tokenizer", "bytes", "--tp", "2", "--pp",
         "2", "--micro-batches", "4", "--log-every", "50"]


def wait_until(condition, timeout, process=None):
    deadline = time.monotonic() + timeout
    while not condition():
        if (process is not None and process.poll() is not None) or time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


class ClusterJob:
    """One megascale-run per host: hosts 0..3 hold the slots (--rank-offset), the others are spares."""

    def __init__(self, cluster, args, work, data, steps, job_id, spares, driver=True, extra=(), host_env=None,
                 disk_every=DISK_EVERY, memory=True):
        self.cluster, self.args, self.work, self.job_id = cluster, args, work, job_id
        self.csv = os.path.join(work, "steps.csv")
        self.train = [os.path.join(args.build, "trainer", "megascale-train"), "--data", data, *MODEL, "--steps",
                      str(steps), "--checkpoint-every", str(disk_every), "--memory-checkpoint-every",
                      "1" if memory else "0", "--checkpoint-dir", os.path.join(work, "ckpt"), "--csv", self.csv]
        self.spares, self.driver_mode, self.extra, self.host_env = spares, driver, list(extra), host_env or {}
        self.runs, self.done_runs = {}, []
        for i in range(HOSTS + spares):
            self.start(i, first=True)
            if i == 0:
                time.sleep(0.3)  # host 0 joins first: it drives

    def start(self, i, first=False):
        run = [os.path.join(self.args.build, "launcher", "megascale-run"), "--store",
               f"tcp://{self.cluster.address(0)}:{PORT}", "--job-id", self.job_id, "--world-size", str(RANKS),
               "-n", str(NPROC), "--heartbeat-ms", "100", "--hang-timeout", str(HANG_TIMEOUT), "--grace-ms", "1000"]
        if first and i < HOSTS:
            run += ["--rank-offset", str(NPROC * i)]
        if self.driver_mode:
            run += ["--max-restarts", "1000", "--spare-hosts", str(self.spares), "--host-timeout",
                    str(self.args.host_timeout)]
        env = {"MEGASCALE_JOB_SECRET": SECRET, **self.host_env.get(i, {})}
        if i in self.runs:
            self.done_runs.append(self.runs[i])
        self.runs[i] = Job(self.cluster.on(i, run + self.extra + self.train), env=env)

    def driver(self, prefix):
        return self.runs[0].driver(prefix)

    def running(self):
        return self.runs[0].process.poll() is None

    def host_of(self, rank):
        for i, job in self.runs.items():
            if job.process.poll() is None and faults.find_rank(job.process.pid, rank) is not None:
                return i
        return None

    def idle_spares(self):
        holders = {self.host_of(r) for r in range(RANKS)}
        return [i for i, job in self.runs.items() if job.process.poll() is None and i not in holders]

    def grep_all(self, pattern):
        """(arrival time, match) over every megascale-run this job had, in the order the lines arrived."""
        hits = [hit for job in list(self.runs.values()) + self.done_runs for hit in job.grep(pattern)]
        return sorted(hits, key=lambda hit: hit[0])

    def wait(self, timeout):
        codes = {i: job.wait(timeout) for i, job in self.runs.items()}
        for job in self.done_runs:
            job.wait(5)
        return codes


def first_after(events, when):
    """The first event at or after `when`; the driver's times are cut to milliseconds, hence the 1 ms."""
    return next((e for e in events if e[0] >= when - 0.001), None)


def fmt(values, digits=2):
    values = [v for v in values if v is not None]
    return f"{statistics.median(values):.{digits}f} / {max(values):.{digits}f}" if values else "-"


class Campaign:
    def __init__(self, args, cluster, root, data, rng):
        self.args, self.cluster, self.root, self.data, self.rng = args, cluster, root, data, rng
        self.reference = None
        self.jobs = 0

    def job(self, steps, work=None, **kwargs):
        self.jobs += 1
        if work is None:
            work = os.path.join(self.root, f"job{self.jobs}")
            os.makedirs(work)
        return ClusterJob(self.cluster, self.args, work, self.data, steps, f"campaign-{os.getpid()}-{self.jobs}",
                          **kwargs)

    def exact(self, cj):
        got = losses(cj.work)
        return len(got) > 0 and got == self.reference[:len(got)]

    def run_reference(self):
        cj = self.job(self.args.steps_per_job, spares=0)
        codes = cj.wait(1800)
        self.reference = losses(cj.work)
        if any(codes.values()) or len(self.reference) != self.args.steps_per_job:
            sys.exit(f"the fault-free run failed: {codes}\n" + cj.runs[0].text()[-3000:])
        seconds = [float(line.split(",")[4]) for line in list(open(cj.csv))[1:]]
        print(f"fault-free run: {len(self.reference)} steps, median step {statistics.median(seconds) * 1e3:.0f} ms",
              flush=True)

    def inject(self, cj, kind, pending):
        """One fault of `kind`; returns (time, kind, target text, host index, completed steps) or None."""
        rng = self.rng
        if kind == "kill-ckpt":
            target = (faults.csv_steps(cj.csv) // DISK_EVERY + 1) * DISK_EVERY
            if not wait_until(lambda: faults.csv_steps(cj.csv) >= target, 120, cj.runs[0].process):
                return None
        if kind in ("kill", "stop", "kill-ckpt"):
            rank = rng.randrange(RANKS)
            host = cj.host_of(rank)
            if host is None:
                return None
            done = faults.csv_steps(cj.csv)
            _, at = faults.inject(cj.runs[host].process.pid, rank, "stop" if kind == "stop" else "kill")
            return at, kind, f"rank {rank} ", host, done
        # A host other than the driver's, holding a slot now.
        host = cj.host_of(rng.randrange(NPROC, RANKS))
        if host is None or host == 0:
            return None
        name = self.cluster.name(host)
        done = faults.csv_steps(cj.csv)
        at = time.time()
        if kind == "flap":
            self.cluster.link_down(host)
            time.sleep(2.0)
            self.cluster.link_up(host)
        elif kind == "cut":
            self.cluster.link_down(host)
            pending.append((at + self.args.cut_seconds, host))
        elif kind == "host-lost":
            cj.runs[host].process.send_signal(signal.SIGKILL)
            self.cluster.link_down(host)
            pending.append((at + self.args.rejoin_seconds, host))
        return at, kind, f"host {name} ", host, done

    @staticmethod
    def rejoin(cj, cluster, pending):
        """Hosts whose time away is over get their cable back and a megascale-run that joins as a spare."""
        for item in [p for p in pending if p[0] <= time.time()]:
            pending.remove(item)
            cluster.link_up(item[1])
            if cj.running():
                cj.runs[item[1]].wait(30)
                cj.start(item[1])

    def kind_rows(self, kind, trials):
        rows, equal, left = [], True, trials
        while left > 0:
            cj = self.job(self.args.steps_per_job, spares=self.args.spares)
            pending, injected = [], []
            stop_at = self.args.steps_per_job * 0.8
            while left > 0 and cj.running() and faults.csv_steps(cj.csv) < stop_at:
                self.rejoin(cj, self.cluster, pending)
                # In its steady loop (recovered from the last fault) with a spare when the fault needs one.
                settled = len(cj.driver("recovered")) >= len(cj.driver("detected")) and faults.csv_steps(cj.csv) > 0
                needs_spare = kind in ("cut", "host-lost")
                if not settled or (needs_spare and not cj.idle_spares()):
                    time.sleep(0.1)
                    continue
                time.sleep(self.rng.uniform(0.5, 1.5))
                fault = self.inject(cj, kind, pending)
                if fault is None:
                    continue
                injected.append(fault)
                left -= 1
                wait_until(lambda: first_after(cj.driver("detected"), fault[0]) is not None or
                           (kind == "flap" and time.time() > fault[0] + 15), 120, cj.runs[0].process)
            while pending and cj.running():
                self.rejoin(cj, self.cluster, pending)
                time.sleep(0.2)
            for _, host in pending:
                self.cluster.link_up(host)
            codes = cj.wait(1800)
            ok = codes.get(0) == 0 and self.exact(cj)
            equal = equal and ok
            rows += self.measure(cj, injected)
            print(f"  {kind}: a job with {len(injected)} faults ended {codes}; losses equal: {ok}", flush=True)
        return rows, equal

    @staticmethod
    def measure(cj, injected):
        detected, recovered = cj.driver("detected"), cj.driver("recovered")
        # The rank that reports (the last pipeline stage's first) may run on any host, and move to a spare.
        resumed = [(t, int(m.group(1))) for t, m in cj.grep_all(r"^\[\d+\] resumed from .* at step (\d+)")]
        rows = []
        for at, kind, target, host, done in injected:
            d = first_after(detected, at)
            if kind == "flap":
                ridden = d is None or d[0] > at + 15
                print(f"    flap of host {host}: {'ridden out' if ridden else 'NOT ridden out: ' + d[1]}")
                rows.append((kind, None, None, 0 if ridden else None, ridden))
                continue
            if d is None:
                print(f"    {kind} of {target}: not detected")
                continue
            r = first_after(recovered, d[0])
            back = first_after(resumed, d[0])
            named = target in d[1] or (kind == "bad-gemm")
            redone = steps_redone(done, back[1] if back else None)
            print(f"    {kind} of {target.strip()} after step {done}: detected {d[0] - at:.2f} s, next step "
                  f"{r[0] - at if r else float('nan'):.2f} s, redone {'-' if redone is None else redone}: {d[1][:150]}")
            if redone is not None and redone > 1:  # more than the one step a memory checkpoint allows: say why
                for t, m in cj.grep_all(r"^(\[\d+\] )?(.*(cannot be loaded|resumed from|fetched|replica).*)$"):
                    if at <= t <= (r[0] if r else t) + 1:
                        print(f"      log +{t - at:.2f} s: {m.group(2)[:300]}")
            rows.append((kind, d[0] - at, r[0] - at if r else None, redone, named and r))
        return rows

    def bad_gemm_rows(self, trials):
        rows, named, equal = [], 0, True
        for _ in range(trials):
            bad = self.rng.randrange(1, HOSTS)
            steps = 40
            cj = self.job(steps, spares=1, extra=["--self-check"], host_env={bad: {"MEGASCALE_TEST_CORRUPT_GEMM": "1"}})
            if wait_until(lambda: faults.csv_steps(cj.csv) >= 5, 120, cj.runs[0].process):
                rank = self.rng.randrange(RANKS)
                faults.inject(cj.runs[cj.host_of(rank)].process.pid, rank, "kill")
            codes = cj.wait(600)
            name = self.cluster.name(bad)
            found = cj.grep_all(rf"GEMM of rank 1 \(host {name}\): FAIL") and \
                cj.driver(f"evicting host {name} ") and cj.driver("slot ")
            ok = codes.get(0) == 0 and self.exact(cj) and len(losses(cj.work)) == steps
            named += 1 if found else 0
            equal = equal and ok
            if not found or not ok:
                for _, text in cj.driver(""):
                    print("      driver:", text)
                for _, m in cj.grep_all(r"^\[\d+\] (verdict: .*|.*: (SLOW|FAIL) .*)$"):
                    print("      self-check:", m.group(1))
            print(f"    bad GEMM on host {bad}: {'named and evicted, a spare took over' if found else 'NOT named'}; "
                  f"job {codes}, losses equal: {ok}", flush=True)
        return named, equal

    def ettr(self, baseline):
        args, rng = self.args, self.rng
        start = time.time()
        end = start + args.ettr_minutes * 60
        next_fault = start + args.fault_every
        lost = []  # (detection, restart, redone) seconds per fault
        cj = self.job(10 ** 6, spares=0, driver=not baseline, disk_every=20 if baseline else DISK_EVERY,
                      memory=not baseline)
        while time.time() < end:
            if not cj.running():
                break
            if time.time() < next_fault:
                time.sleep(0.05)
                continue
            kind = rng.choice(["kill", "stop", "flap"])
            done = faults.csv_steps(cj.csv)
            fault = self.inject(cj, kind, [])
            if fault is None:
                next_fault = time.time() + 1
                continue
            at = fault[0]
            next_fault = at + args.fault_every
            if kind == "flap":
                continue  # ridden out by both: the cost is in the wall time
            if baseline:
                # Every megascale-run exits after a fault (the one whose rank failed, then the others as their
                # peers fail): relaunch them all, under a new job id, resuming from the disk checkpoint.
                wait_until(lambda: not any(j.process.poll() is None for j in cj.runs.values()), 120)
                gone = time.time()
                old = cj
                old.wait(30)
                # The same checkpoint directory and CSV: the relaunch resumes where the disk checkpoint left off.
                cj = self.job(10 ** 6, work=old.work, spares=0, driver=False, disk_every=20, memory=False)
                wait_until(lambda: cj.grep_all(r"resumed from \S+ at step (\d+)") != [], 180, cj.runs[0].process)
                hits = cj.grep_all(r"resumed from \S+ at step (\d+)")
                resumed = int(hits[0][1].group(1)) if hits else 0
                wait_until(lambda: faults.csv_steps(cj.csv) > resumed, 180, cj.runs[0].process)
                lost.append((gone - at, time.time() - gone, steps_redone(done, resumed)))
            else:
                wait_until(lambda: first_after(cj.driver("recovered"), at) is not None, 120, cj.runs[0].process)
                d, r = first_after(cj.driver("detected"), at), first_after(cj.driver("recovered"), at)
                back = first_after([(t, int(m.group(1))) for t, m in
                                    cj.grep_all(r"^\[\d+\] resumed from .* at step (\d+)")], at)
                if d and r:
                    lost.append((d[0] - at, r[0] - d[0], steps_redone(done, back[1] if back else None) or 0))
        for job in cj.runs.values():
            if job.process.poll() is None:
                job.process.send_signal(signal.SIGINT)
        cj.wait(60)
        wall = time.time() - start
        seconds = [float(line.split(",")[4]) for line in list(open(cj.csv))[1:]]
        mean_step = statistics.median(seconds) if seconds else 0
        counted, kept = sum(seconds), len(seconds)
        mean = (lambda xs: statistics.mean(xs) if xs else 0)
        return {"wall": wall, "ettr": counted / wall, "faults": len(lost), "steps": kept,
                "detection": mean([x[0] for x in lost]), "restart": mean([x[1] for x in lost]),
                "redone": mean([x[2] * mean_step for x in lost])}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("build")
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--kinds", default="kill,stop,kill-ckpt,flap,cut,host-lost,bad-gemm")
    parser.add_argument("--spares", type=int, default=3)
    parser.add_argument("--rate", default="1gbit", help="every emulated link's rate (tc syntax)")
    parser.add_argument("--cut-seconds", type=float, default=60)
    parser.add_argument("--rejoin-seconds", type=float, default=15)
    parser.add_argument("--host-timeout", type=float, default=10)
    parser.add_argument("--steps-per-job", type=int, default=600)
    parser.add_argument("--ettr-minutes", type=float, default=10)
    parser.add_argument("--fault-every", type=float, default=60)
    parser.add_argument("--seed", type=int, default=int(time.time()))
    args = parser.parse_args()
    if unavailable_reason():
        sys.exit(f"cluster_fault_campaign: {unavailable_reason()}")
    rng = random.Random(args.seed)
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")
    print(f"# fault campaign on emulated hosts: {platform.node()}, {cpu}, {os.cpu_count()} cores; seed {args.seed}; "
          f"GEMM ours-portable")
    print(f"# {HOSTS} hosts x {NPROC} ranks (tp2 x pp2 x dp2) + {args.spares} spare hosts, links {args.rate}; memory "
          f"checkpoint every step, disk every {DISK_EVERY}; hang timeout {HANG_TIMEOUT} s, stopped timeout 1 s "
          f"(default), host timeout "
          f"{args.host_timeout} s", flush=True)
    cluster = EmulatedCluster(f"fc{os.getpid() % 10000}", HOSTS + args.spares)
    if not cluster.up(args.rate):
        sys.exit("cluster_fault_campaign: cannot make the emulated cluster")
    store = subprocess.Popen(cluster.on(0, [os.path.join(args.build, "launcher", "megascale-store"), "--host",
                                            cluster.address(0), "--port", str(PORT)]),
                             stdout=subprocess.DEVNULL, env=dict(os.environ, MEGASCALE_JOB_SECRET=SECRET))
    try:
        with tempfile.TemporaryDirectory(prefix="cluster-campaign-") as root:
            data = os.path.join(root, "text.txt")
            write_text(data, words=60000, seed=11)
            c = Campaign(args, cluster, root, data, rng)
            kinds = args.kinds.split(",")
            table = []
            if set(kinds) - {"bad-gemm"}:
                c.run_reference()
            for kind in [k for k in ("kill", "stop", "kill-ckpt", "flap", "cut", "host-lost") if k in kinds]:
                rows, equal = c.kind_rows(kind, args.trials)
                handled = sum(1 for r in rows if r[4])
                table.append((kind, len(rows), handled, fmt([r[1] for r in rows]), fmt([r[2] for r in rows]),
                              fmt([r[3] for r in rows], 0), "yes" if equal else "NO"))
            if "bad-gemm" in kinds:
                if c.reference is None:
                    c.args.steps_per_job = 40
                    c.run_reference()
                named, equal = c.bad_gemm_rows(args.trials)
                table.append(("bad-gemm", args.trials, f"{named} named by the self-check, evicted, spare took over",
                              "-", "-", "-", "yes" if equal else "NO"))
            print("\n| fault | trials | handled automatically | detection s (median / max) | "
                  "fault to next step s (median / max) | steps redone (median / max) | final losses equal |")
            print("|---|---|---|---|---|---|---|")
            for row in table:
                print("| " + " | ".join(str(x) for x in row) + " |", flush=True)
            if args.ettr_minutes > 0:
                print(f"\nETTR on the emulated hosts: {args.ettr_minutes:g} min each, a fault (kill -9, SIGSTOP or "
                      f"a 2 s flap) every {args.fault_every:g} s", flush=True)
                ours = c.ettr(baseline=False)
                base = c.ettr(baseline=True)
                print("| run | wall s | faults restarted | steps kept | ETTR | lost per fault s: detection | "
                      "restart to next step | redone steps |")
                print("|---|---|---|---|---|---|---|---|")
                for name, r in (("megascale (memory every step, driver restart)", ours),
                                ("baseline (disk every 20, full relaunch)", base)):
                    print(f"| {name} | {r['wall']:.0f} | {r['faults']} | {r['steps']} | {r['ettr'] * 100:.1f}% | "
                          f"{r['detection']:.2f} | {r['restart']:.2f} | {r['redone']:.2f} |")
                print(f"ETTR ours / baseline: {ours['ettr'] / base['ettr']:.2f}x", flush=True)
    finally:
        store.kill()
        store.wait()
        cluster.down()


if __name__ == "__main__":
    main()
