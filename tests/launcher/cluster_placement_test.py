#!/usr/bin/python3
"""A cluster job places its host slots in the switch tree's order: three megascale-run executors (host names of
their own, on loopback) join in the order host0, host1, host2, and topology.conf puts host2 and host1 under one
ToR ahead of host0; slot 0 (ranks 0-1) goes to host2, slot 1 (ranks 2-3) to host1, and host0, which drives,
stays the spare. Every rank is told its host block (MEGASCALE_HOST_BLOCK = ranks per host).
Usage: cluster_placement_test.py MEGASCALE_RUN MEGASCALE_STORE SOURCE_DIR"""
import os
import re
import subprocess
import sys
import tempfile
import time

run_bin, store_bin, source_dir = sys.argv[1:4]
sys.path.insert(0, os.path.join(source_dir, "testbed"))
from job_logs import Job  # noqa: E402

SECRET = "0123456789abcdef0123456789abcdef"
failures = []


def check(condition, what):
    print(("ok:   " if condition else "FAIL: ") + what, flush=True)
    if not condition:
        failures.append(what)


def main():
    store = subprocess.Popen([store_bin, "--host", "127.0.0.1", "--port", "0"], stdout=subprocess.PIPE, text=True,
                             env=dict(os.environ, MEGASCALE_JOB_SECRET=SECRET))
    try:
        port = re.search(r"listening on 127\.0\.0\.1:(\d+)", store.stdout.readline()).group(1)
        place(port)
    finally:
        store.kill()
        store.wait()
    print(f"{len(failures)} failed" if failures else "PASSED")
    return 1 if failures else 0


def place(port):
    with tempfile.TemporaryDirectory() as tmp:
        topology = os.path.join(tmp, "topology.conf")
        with open(topology, "w") as f:
            f.write("SwitchName=tor0 Nodes=host2,host1\nSwitchName=tor1 Nodes=host0\nSwitchName=spine Switches=tor0,tor1\n")
        program = ["bash", "-c", "echo placed rank $MEGASCALE_RANK on $MEGASCALE_HOST_NAME block $MEGASCALE_HOST_BLOCK"]
        jobs = []
        for i in range(3):
            argv = ["env", f"MEGASCALE_HOST_NAME=host{i}", run_bin, "--store", f"tcp://127.0.0.1:{port}", "--job-id",
                    f"place{os.getpid()}", "--world-size", "4", "-n", "2", "--spare-hosts", "1", "--topology", topology,
                    "--heartbeat-ms", "100", *program]
            jobs.append(Job(argv, env={"MEGASCALE_JOB_SECRET": SECRET, "MEGASCALE_TIMEOUT_MS": "30000"}))
            time.sleep(0.3)  # join in order: host0 drives
        codes = [job.wait(60) for job in jobs]
        out = "\n".join(job.text() for job in jobs)
        check(codes == [0, 0, 0], f"every executor exits 0 ({codes})\n{out[-3000:]}")
        placed = {int(r): (host, block) for r, host, block in re.findall(r"placed rank (\d+) on (\S+) block (\d+)", out)}
        check(placed == {0: ("host2", "2"), 1: ("host2", "2"), 2: ("host1", "2"), 3: ("host1", "2")},
              f"slots follow the switch tree: ranks 0-1 on host2, 2-3 on host1, blocks of 2 ({placed})")
        check("placing hosts in the switch tree's order" in out, "the driver says it placed by the tree")


if __name__ == "__main__":
    sys.exit(main())
