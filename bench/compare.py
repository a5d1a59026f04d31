"""Runs our *_perf tools and the MPI/Gloo baselines alternately and prints them side by side (see compare.sh)."""
import os
import re
import statistics
import subprocess
import sys

BUILD = sys.argv[1] if len(sys.argv) > 1 else "build"
RANKS = [int(r) for r in os.environ.get("RANKS", "2 4 8").split()]
REPEATS = int(os.environ.get("REPEATS", "3"))
MAX = os.environ.get("MAX", "256M")
ITERS = os.environ.get("ITERS", "10")
COLLECTIVES = ["all_reduce", "all_gather", "reduce_scatter"]
ROW = re.compile(r"^\s*(?:\[0\]\s+)?(\d+)\s+(\d+)\s+float\s+\S+\s+-?\d+\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(\S+)")

ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_btl_vader_single_copy_mechanism=os.environ.get("OMPI_MCA_btl_vader_single_copy_mechanism", "cma"))


def exe(name):
    path = os.path.join(BUILD, "bench", name)
    return path if os.path.exists(path) else None


SMALL_ITERS = os.environ.get("SMALL_ITERS", "200")


def sweeps(tool_args):
    """8 B alone, then 16 B..64 KiB and 256 KiB..MAX by 4x (hitting 1 KiB, 4 KiB, 64 MiB and 256 MiB). Small
    sizes run many iterations, so one-time costs (a thread wake-up at the start and end of a timed loop) do
    not masquerade as per-operation latency."""
    return [tool_args + ["-n", SMALL_ITERS, "-b", "8", "-e", "8"],
            tool_args + ["-n", SMALL_ITERS, "-b", "16", "-e", "64K", "-f", "4"],
            tool_args + ["-n", ITERS, "-b", "256K", "-e", MAX, "-f", "4"]]


def run(cmd):
    out = subprocess.run(cmd, env=ENV, capture_output=True, text=True, timeout=3600)
    if out.returncode != 0:
        sys.stderr.write(f"warning: {' '.join(cmd)} exited {out.returncode}\n{out.stderr[-2000:]}\n")
    rows = {}
    for line in out.stdout.splitlines():
        m = ROW.match(line)
        if m:
            size, time_us, busbw, wrong = int(m.group(1)), float(m.group(3)), float(m.group(5)), m.group(6)
            if wrong not in ("0", "N/A"):
                sys.stderr.write(f"warning: wrong results in {' '.join(cmd)} at {size} B\n")
            rows[size] = (time_us, busbw)
    return rows


def commands(tool, collective, ranks):
    launcher = os.path.join(BUILD, "launcher", "megascale-run")
    if tool == "megascale":
        base = [launcher, "-n", str(ranks), exe(f"{collective}_perf"), "-w", "2", "-c", "1"]
    elif tool == "mpi" and exe("mpi_perf"):
        # Loopback only: Open MPI's runtime and TCP transport never touch the machine's outward interface.
        base = ["mpirun", "-np", str(ranks), "--oversubscribe", "--bind-to", "none", "--mca", "oob_tcp_if_include", "lo",
                "--mca", "btl_tcp_if_include", "lo", exe("mpi_perf"), collective]
    elif tool == "gloo" and exe("gloo_perf") and collective != "reduce_scatter":
        base = [launcher, "-n", str(ranks), exe("gloo_perf"), collective]
    else:
        return None
    return sweeps(base)


def memcpy_gbps():
    bench = exe("reduce_bench")
    if not bench:
        return None
    out = subprocess.run([bench, "--benchmark_filter=^memcpy/67108864$", "--benchmark_min_time=0.5"],
                         capture_output=True, text=True).stdout
    m = re.search(r"bytes_per_second=([\d.]+)G/s", out)
    # memcpy moves 2 bytes of traffic per byte copied; report the copy rate (bytes copied per second).
    return float(m.group(1)) * 1.073741824 / 2 if m else None


def main():
    results = {}  # (collective, ranks, tool) -> size -> list of (time, busbw)
    copy_before = memcpy_gbps()
    for ranks in RANKS:
        for collective in COLLECTIVES:
            for rep in range(REPEATS):
                for tool in ("megascale", "mpi", "gloo"):  # alternate, so drift hits all three alike
                    cmds = commands(tool, collective, ranks)
                    if not cmds:
                        continue
                    for cmd in cmds:
                        for size, value in run(cmd).items():
                            results.setdefault((collective, ranks, tool), {}).setdefault(size, []).append(value)
    copy_after = memcpy_gbps()
    med = lambda values, k: statistics.median(v[k] for v in values)
    print(f"# machine: {os.cpu_count()} cores; memcpy {copy_before or 0:.1f} GB/s before, {copy_after or 0:.1f} GB/s "
          f"after (64 MiB, bytes copied per second); medians of {REPEATS} alternating runs; fp32 sum, out-of-place")
    verdicts = []
    for collective in COLLECTIVES:
        for ranks in RANKS:
            ours = results.get((collective, ranks, "megascale"), {})
            mpi = results.get((collective, ranks, "mpi"), {})
            gloo = results.get((collective, ranks, "gloo"), {})
            print(f"\n## {collective}, {ranks} ranks")
            print(f"{'size':>10} {'ours us':>9} {'ours GB/s':>9} {'mpi us':>9} {'mpi GB/s':>9} {'gloo us':>9} "
                  f"{'gloo GB/s':>9} {'bw/mpi':>7} {'bw/gloo':>7} {'lat/mpi':>7}")
            for size in sorted(ours):
                o_t, o_b = med(ours[size], 0), med(ours[size], 1)
                cells = [f"{size:>10}", f"{o_t:>9.2f}", f"{o_b:>9.2f}"]
                ratios = []
                for other in (mpi, gloo):
                    if size in other:
                        cells += [f"{med(other[size], 0):>9.2f}", f"{med(other[size], 1):>9.2f}"]
                    else:
                        cells += [f"{'-':>9}", f"{'-':>9}"]
                for other in (mpi, gloo):
                    b = med(other[size], 1) if size in other else 0
                    ratios.append(f"{o_b / b:>7.2f}" if b > 0 else f"{'-':>7}")
                ratios.append(f"{o_t / med(mpi[size], 0):>7.2f}" if size in mpi and med(mpi[size], 0) > 0 else f"{'-':>7}")
                print(" ".join(cells + ratios))
    # The targets.
    def bw(collective, ranks, tool, size):
        rows = results.get((collective, ranks, tool), {})
        return med(rows[size], 1) if size in rows else None

    def lat(collective, ranks, tool, size):
        rows = results.get((collective, ranks, tool), {})
        return med(rows[size], 0) if size in rows else None

    def check(name, ok):
        verdicts.append((name, ok))

    mib64 = 64 << 20
    if 2 in RANKS:
        o, m, g = bw("all_reduce", 2, "megascale", mib64), bw("all_reduce", 2, "mpi", mib64), bw("all_reduce", 2, "gloo", mib64)
        check("2 ranks 64 MiB all-reduce busbw >= 2.5x Open MPI", None if not (o and m) else o >= 2.5 * m)
        check("2 ranks 64 MiB all-reduce busbw >= 5x Gloo", None if not (o and g) else o >= 5 * g)
        for c in ("all_gather", "reduce_scatter"):
            o, m = bw(c, 2, "megascale", mib64), bw(c, 2, "mpi", mib64)
            check(f"2 ranks 64 MiB {c} busbw >= 2x Open MPI", None if not (o and m) else o >= 2 * m)
        sizes = [s for s in sorted(results.get(("all_reduce", 2, "megascale"), {})) if s <= 4096]
        ok = all(lat("all_reduce", 2, "megascale", s) <= lat("all_reduce", 2, "mpi", s)
                 for s in sizes if lat("all_reduce", 2, "mpi", s)) if sizes else None
        check("2 ranks 8 B..4 KiB all-reduce latency <= Open MPI", ok)
    if 8 in RANKS:
        o, m = bw("all_reduce", 8, "megascale", mib64), bw("all_reduce", 8, "mpi", mib64)
        check("8 ranks 64 MiB all-reduce busbw >= 2x Open MPI", None if not (o and m) else o >= 2 * m)
        if 2 in RANKS:
            small = [s for s in sorted(results.get(("all_reduce", 8, "megascale"), {})) if s <= 4096]
            ok = all(lat("all_reduce", 8, "megascale", s) <= 10 * lat("all_reduce", 2, "megascale", s)
                     for s in small if lat("all_reduce", 2, "megascale", s)) if small else None
            check("8 ranks latency <= 10x the 2-rank latency (8 B..4 KiB)", ok)
    print("\n## targets")
    for name, ok in verdicts:
        print(f"{'PASS' if ok else 'n/a ' if ok is None else 'FAIL'}  {name}")


if __name__ == "__main__":
    main()
