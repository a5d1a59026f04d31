"""Two builds of megascale side by side in one run, rounds alternating so that drift hits both alike: the
collectives' *_perf tools on local ranks, the main job's tokens/s (megascale-train, tp2 x pp2 x dp2 under
megascale-run), and, as root, the hierarchical and flat all-reduce / all-gather across emulated hosts
(bench/multihost_compare.sh part 2). Prints medians and ratios that read "new's speed over old's" (old/new time, new/old busbw or tokens/s: above 1
is faster).
Usage: before_after.py OLD_BUILD NEW_BUILD   (env: RANKS="2 4 8" REPEATS=3 MAX=64M ITERS=10 SMALL_ITERS=200
       COLLECTIVES="all_reduce all_gather reduce_scatter alltoall" TRAIN_STEPS=30 PARTS="collectives train multihost")"""
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

import compare  # run(), memcpy_gbps()
from algorithm_compare import cpu_model

OLD, NEW = sys.argv[1], sys.argv[2]
RANKS = [int(r) for r in os.environ.get("RANKS", "2 4 8").split()]
REPEATS = int(os.environ.get("REPEATS", "3"))
MAX = os.environ.get("MAX", "64M")
ITERS = os.environ.get("ITERS", "10")
SMALL_ITERS = os.environ.get("SMALL_ITERS", "200")
COLLECTIVES = os.environ.get("COLLECTIVES", "all_reduce all_gather reduce_scatter alltoall").split()
TRAIN_STEPS = os.environ.get("TRAIN_STEPS", "30")
PARTS = os.environ.get("PARTS", "collectives train multihost").split()
SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILDS = (("old", OLD), ("new", NEW))


def ratio_line(label, old, new):
    return f"{label:<40} {old:>12.4g} {new:>12.4g} {new / old if old else float('nan'):>8.3f}"


def collectives():
    values = {}  # (collective, ranks, size, build) -> [busbw]
    for ranks in RANKS:
        for collective in COLLECTIVES:
            for _ in range(REPEATS):
                for name, build in BUILDS:
                    tool = [os.path.join(build, "launcher", "megascale-run"), "-n", str(ranks),
                            os.path.join(build, "bench", f"{collective}_perf")]
                    for cmd in (tool + ["-n", SMALL_ITERS, "-b", "8", "-e", "64K", "-f", "8", "-w", "10"],
                                tool + ["-n", ITERS, "-b", "512K", "-e", MAX, "-f", "8", "-w", "2"]):
                        for size, (time_us, _) in compare.run(cmd).items():
                            values.setdefault((collective, ranks, size, name), []).append(time_us)
    print(f"\n## collectives on local ranks, out-of-place time in us (median of {REPEATS}); ratio old/new time")
    print(f"{'collective ranks size':<40} {'old':>12} {'new':>12} {'old/new':>8}")
    ratios = {}
    for collective in COLLECTIVES:
        for ranks in RANKS:
            sizes = sorted({k[2] for k in values if k[0] == collective and k[1] == ranks})
            for size in sizes:
                old = statistics.median(values.get((collective, ranks, size, "old"), [float("nan")]))
                new = statistics.median(values.get((collective, ranks, size, "new"), [float("nan")]))
                print(ratio_line(f"{collective} {ranks} {size}", new, old).replace(f"{new:>12.4g} {old:>12.4g}",
                                                                                     f"{old:>12.4g} {new:>12.4g}", 1))
                ratios.setdefault(collective, []).append(old / new)
    print("\n# per collective: worst and median speed new/old (old time / new time) over ranks and sizes")
    for collective, r in ratios.items():
        print(f"#   {collective:<16} worst {min(r):.3f}  median {statistics.median(r):.3f}")


def train():
    data = "/usr/share/doc/jargon-text/jargon.txt.gz"
    tokens = {"old": [], "new": []}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(REPEATS):
            for name, build in BUILDS:
                summary = os.path.join(tmp, f"{name}.json")
                cmd = [os.path.join(build, "launcher", "megascale-run"), "-n", "8",
                       os.path.join(build, "trainer", "megascale-train"), "--config",
                       os.path.join(SOURCE, "trainer", "configs", "main_job.conf"), "--data", data,
                       "--steps", TRAIN_STEPS, "--checkpoint-every", "0", "--sample-tokens", "0",
                       "--summary-json", summary]
                r = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
                if r.returncode != 0:
                    sys.stderr.write(f"warning: {name} training exited {r.returncode}: {r.stderr[-1000:]}\n")
                    continue
                tokens[name].append(json.load(open(summary))["tokens_per_s"])
    print(f"\n## the main job (tp2 x pp2 x dp2, {TRAIN_STEPS} steps), tokens/s (median of {REPEATS})")
    if tokens["old"] and tokens["new"]:
        print(ratio_line("megascale-train tokens/s", statistics.median(tokens["old"]), statistics.median(tokens["new"])))


def multihost():
    if os.geteuid() != 0:
        print("\n## across emulated hosts: skipped (needs root)")
        return
    busbw = {}  # (collective, tool, build) -> [GB/s]
    env = dict(os.environ, PARTS="2", TOOLS="hier ring", REPEATS="1")
    for _ in range(REPEATS):
        for name, build in BUILDS:
            r = subprocess.run(["bash", os.path.join(SOURCE, "bench", "multihost_compare.sh"), build], env=env,
                               capture_output=True, text=True, timeout=3600)
            for m in re.finditer(r"^(all_reduce|all_gather)\s+([\d.]+)\s+([\d.]+)", r.stdout, re.M):
                busbw.setdefault((m.group(1), "hier", name), []).append(float(m.group(2)))
                busbw.setdefault((m.group(1), "ring", name), []).append(float(m.group(3)))
    print(f"\n## across emulated hosts (bench/multihost_compare.sh part 2 defaults), busbw GB/s (median of {REPEATS})")
    for collective in ("all_reduce", "all_gather"):
        for tool in ("hier", "ring"):
            old, new = busbw.get((collective, tool, "old")), busbw.get((collective, tool, "new"))
            if old and new:
                print(ratio_line(f"{collective} {tool}", statistics.median(old), statistics.median(new)))


def main():
    print(f"# machine: {cpu_model()}, {os.cpu_count()} cores; memcpy {compare.memcpy_gbps() or 0:.1f} GB/s")
    print(f"# old: {OLD}\n# new: {NEW}")
    print(f"{'':<40} {'old':>12} {'new':>12} {'new/old':>8}")
    for part, fn in (("collectives", collectives), ("train", train), ("multihost", multihost)):
        if part in PARTS:
            fn()
            sys.stdout.flush()


if __name__ == "__main__":
    main()
