"""Algorithms of one collective side by side: our *_perf tool under MEGASCALE_ALGO=COLLECTIVE:NAME for each
algorithm, rounds alternating so that drift hits all alike; median time per size and the ratio to the first.
Usage: algorithm_compare.py BUILD   (env: TOOL=alltoall ALGOS="pairwise bruck auto" RANKS="4 8"
       TRANSPORT=tcp REPEATS=3 MAX=64K ITERS=200)"""
import os
import platform
import statistics
import sys

import compare  # run(), memcpy_gbps(), exe()

TOOL = os.environ.get("TOOL", "alltoall")
ALGOS = os.environ.get("ALGOS", "pairwise bruck auto").split()
RANKS = [int(r) for r in os.environ.get("RANKS", "4 8").split()]
TRANSPORT = os.environ.get("TRANSPORT", "tcp")
REPEATS = int(os.environ.get("REPEATS", "3"))
MAX = os.environ.get("MAX", "64K")
ITERS = os.environ.get("ITERS", "200")


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or "unknown CPU"


def main():
    perf = compare.exe(f"{TOOL}_perf")
    launcher = os.path.join(compare.BUILD, "launcher", "megascale-run")
    if perf is None:
        sys.exit(f"no {TOOL}_perf under {compare.BUILD}/bench")
    results = {}  # (ranks, algo) -> size -> [time_us]
    for ranks in RANKS:
        for _ in range(REPEATS):
            for algo in ALGOS:
                compare.ENV.update(MEGASCALE_TRANSPORT=TRANSPORT, MEGASCALE_ALGO=f"{TOOL}:{algo}")
                cmd = [launcher, "-n", str(ranks), perf, "-b", "8", "-e", MAX, "-f", "4", "-n", ITERS, "-w", "10"]
                for size, (time_us, _) in compare.run(cmd).items():
                    results.setdefault((ranks, algo), {}).setdefault(size, []).append(time_us)
    print(f"# machine: {cpu_model()}, {os.cpu_count()} cores; memcpy {compare.memcpy_gbps() or 0:.1f} GB/s; "
          f"{TOOL}_perf over {TRANSPORT}, medians of {REPEATS} alternating rounds, out-of-place time in us "
          f"(size: nccl-tests' total bytes per rank)")
    for ranks in RANKS:
        base = results.get((ranks, ALGOS[0]), {})
        header = f"{'ranks':>5} {'size':>8}" + "".join(f" {a:>10}" for a in ALGOS) + \
                 "".join(f" {a + '/' + ALGOS[0]:>16}" for a in ALGOS[1:])
        print(header)
        for size in sorted(base):
            times = [statistics.median(results.get((ranks, a), {}).get(size, [float("nan")])) for a in ALGOS]
            print(f"{ranks:>5} {size:>8}" + "".join(f" {t:>10.1f}" for t in times) +
                  "".join(f" {t / times[0]:>16.2f}" for t in times[1:]))


if __name__ == "__main__":
    main()
