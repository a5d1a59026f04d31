"""Fault injection into a running job, for tests and the fault campaign: find a rank's process under a
megascale-run, kill it, stop it, or wait until a job's CSV reaches a step. What a person at a terminal would do
with pgrep and kill, from Python."""
import os
import signal
import time


def _children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


def _descendants(pid):
    out, todo = [], [pid]
    while todo:
        for child in _children(todo.pop()):
            out.append(child)
            todo.append(child)
    return out


def _environment(pid):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            items = f.read().split(b"\0")
    except OSError:
        return {}
    return dict(item.decode(errors="replace").split("=", 1) for item in items if b"=" in item)


def find_rank(root_pid, rank):
    """The pid of `rank` among the processes under root_pid (a megascale-run or its parent), or None: the first
    process going down from root_pid whose MEGASCALE_RANK is rank (a rank's own children, which inherit the
    variable, come after it)."""
    for pid in _descendants(root_pid):
        if _environment(pid).get("MEGASCALE_RANK") == str(rank):
            return pid
    return None


def rank_pid(root_pid, rank, timeout=30.0):
    """find_rank, waiting up to `timeout` for the rank to appear."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pid = find_rank(root_pid, rank)
        if pid is not None:
            return pid
        time.sleep(0.01)
    raise TimeoutError(f"no process of rank {rank} under pid {root_pid} within {timeout} s")


def csv_steps(path):
    """Rows in a megascale-train CSV (its header not counted); 0 before it exists."""
    try:
        with open(path) as f:
            return max(0, sum(1 for _ in f) - 1)
    except OSError:
        return 0


def wait_for_step(path, step, timeout=120.0, process=None):
    """Waits until the CSV has `step` rows; raises if it takes longer or `process` (a Popen) ends first."""
    deadline = time.monotonic() + timeout
    while csv_steps(path) < step:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"the job ended (status {process.returncode}) before step {step}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path} did not reach step {step} within {timeout} s")
        time.sleep(0.005)


def inject(root_pid, rank, how):
    """how: 'kill' (SIGKILL) or 'stop' (SIGSTOP). Returns (pid, time.time() just before the signal: what reacts to
    it can only log a later time)."""
    pid = rank_pid(root_pid, rank)
    sent = time.time()
    os.kill(pid, {"kill": signal.SIGKILL, "stop": signal.SIGSTOP}[how])
    return pid, sent
