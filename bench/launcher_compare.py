"""Small all-reduce latency of the same program under megascale-run and under Open MPI's mpirun (PMIx
rendezvous, nothing else set), alternating in one run: the launcher must not change what a collective costs.
    python3 bench/launcher_compare.py [BUILD_DIR]   (env: RANKS="2 4" ROUNDS=5 ITERS=2000)"""
import os
import platform
import re
import statistics
import subprocess
import sys

BUILD = sys.argv[1] if len(sys.argv) > 1 else "build"
RANKS = [int(r) for r in os.environ.get("RANKS", "2 4").split()]
ROUNDS = int(os.environ.get("ROUNDS", "5"))
ITERS = os.environ.get("ITERS", "2000")
SIZES = [8, 1024]
ROW = re.compile(r"^\s*(?:\[0\]\s+)?(\d+)\s+(\d+)\s+float\s+\S+\s+-?\d+\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(\S+)")
ENV = {k: v for k, v in os.environ.items() if k not in ("MASTER_ADDR", "MASTER_PORT", "MEGASCALE_STORE")}
ENV.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


def command(launcher, ranks):
    perf = [os.path.join(BUILD, "bench", "all_reduce_perf"), "-b", "8", "-e", "1K", "-f", "128", "-n", ITERS,
            "-w", "200", "-c", "1"]
    if launcher == "megascale-run":
        return [os.path.join(BUILD, "launcher", "megascale-run"), "-n", str(ranks)] + perf
    forward = [a for v in ENV if v.startswith("MEGASCALE_") for a in ("-x", v)]
    return ["mpirun", "-np", str(ranks), "--oversubscribe", "--bind-to", "none", "--mca", "oob_tcp_if_include",
            "lo", "--mca", "btl_tcp_if_include", "lo"] + forward + perf


def run(launcher, ranks):
    out = subprocess.run(command(launcher, ranks), env=ENV, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        sys.exit(f"{launcher} -n {ranks} failed ({out.returncode}):\n{out.stdout[-1500:]}{out.stderr[-1500:]}")
    rows, described = {}, ""
    for line in out.stdout.splitlines():
        m = ROW.match(line)
        if m:
            if m.group(6) != "0":
                sys.exit(f"{launcher}: wrong results at {m.group(1)} B")
            rows[int(m.group(1))] = float(m.group(3))
        elif "# megascale " in line:
            described = line.split("# megascale ", 1)[1].strip()
    return rows, described


def main():
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    print(f"# machine: {cpu}, {os.cpu_count()} cores, {platform.release()}")
    print(f"# all_reduce_perf fp32 sum out-of-place, {ITERS} iterations per size, {ROUNDS} rounds alternating "
          "megascale-run and mpirun; figures are medians of the rounds, ratio = mpirun / megascale-run")
    for ranks in RANKS:
        times = {l: {s: [] for s in SIZES} for l in ("megascale-run", "mpirun")}
        described = {}
        for _ in range(ROUNDS):
            for launcher in ("megascale-run", "mpirun"):
                rows, described[launcher] = run(launcher, ranks)
                for s in SIZES:
                    times[launcher][s].append(rows[s])
        print(f"\n## {ranks} ranks ({described['megascale-run']}; under mpirun: {described['mpirun']})")
        print(f"{'size':>8} {'megascale-run us':>17} {'mpirun us':>10} {'ratio':>7}")
        for s in SIZES:
            a, b = statistics.median(times["megascale-run"][s]), statistics.median(times["mpirun"][s])
            print(f"{s:>8} {a:>17.2f} {b:>10.2f} {b / a:>7.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
