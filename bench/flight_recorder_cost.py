#!/usr/bin/python3
"""What the flight recorder costs: all_reduce_perf with the recorder on and off (MEGASCALE_FLIGHT_RECORDER),
alternating in pairs so that drift hits both alike, at 8 B (latency: 2000 iterations) and 64 MiB (bandwidth), on
2 ranks over shm (the node engine) and over tcp (the schedule executor, which also notes whom it waits for).
Prints the machine, each pair, and the median of the pairs' ratios. Target: at most +2% at 8 B, nothing
measurable at 64 MiB.
Usage: bench/flight_recorder_cost.py [BUILD_DIR] [--pairs N]"""
import argparse
import os
import platform
import re
import statistics
import subprocess

ROW = re.compile(r"^\s*(?:\[0\]\s+)?(\d+)\s+(\d+)\s+float\s+\S+\s+-?\d+\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)")


def run(build, transport, recorder, size, iters):
    cmd = [os.path.join(build, "launcher", "megascale-run"), "-n", "2", os.path.join(build, "bench", "all_reduce_perf"),
           "-b", size, "-e", size, "-n", str(iters), "-w", "20" if iters > 100 else "2", "-c", "0"]
    env = dict(os.environ, MEGASCALE_TRANSPORT=transport, MEGASCALE_FLIGHT_RECORDER="1" if recorder else "0")
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    for line in out.stdout.splitlines():
        m = ROW.match(line)
        if m:
            return float(m.group(3))  # out-of-place time, us
    raise RuntimeError(f"no result from {' '.join(cmd)}:\n{out.stdout[-1000:]}\n{out.stderr[-1000:]}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("build", nargs="?", default="build")
    parser.add_argument("--pairs", type=int, default=7)
    args = parser.parse_args()
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    print(f"# flight recorder cost: {cpu}, {os.cpu_count()} cores, Linux {platform.release()}; all_reduce_perf, 2 ranks, "
          f"float sum; {args.pairs} pairs, recorder on and off alternating (which goes first alternates too)")
    verdicts = []
    for transport in ("shm", "tcp"):
        for size, iters, limit in (("8", 2000, 2.0), ("64M", 5, None)):
            ratios, on_times, off_times = [], [], []
            for pair in range(args.pairs):
                order = (True, False) if pair % 2 == 0 else (False, True)
                times = {rec: run(args.build, transport, rec, size, iters) for rec in order}
                on_times.append(times[True])
                off_times.append(times[False])
                ratios.append(100.0 * (times[True] / times[False] - 1))
            median = statistics.median(ratios)
            print(f"{transport:>4} {size:>4} B: on {statistics.median(on_times):10.2f} us, off "
                  f"{statistics.median(off_times):10.2f} us; median of the pairs {median:+.1f}% "
                  f"(pairs: {', '.join(f'{r:+.1f}%' for r in ratios)})")
            if limit is not None:
                verdicts.append((f"{transport} 8 B latency +{limit:.0f}% at most", median <= limit, median))
            else:
                spread = statistics.pstdev(ratios)
                verdicts.append((f"{transport} 64 MiB: not measurable (within the pairs' spread {spread:.1f}%)",
                                 abs(median) <= max(spread, 1.0), median))
    for name, ok, value in verdicts:
        print(f"target: {name}: {'met' if ok else 'MISSED'} ({value:+.1f}%)")


if __name__ == "__main__":
    main()
