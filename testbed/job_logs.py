"""Reading what a job says, for tests and benchmarks: megascale-run's timestamped decision lines, a
megascale-train CSV's losses, a job whose output lines are kept with their arrival times, and a text to train on."""
import datetime
import os
import random
import re
import subprocess
import threading
import time

WORDS = ("the quick brown fox jumps over a lazy dog while hackers debug programs all night and the machine "
         "keeps on training through every fault it meets").split()


def write_text(path, words=20000, seed=7):
    """A text of `words` words drawn from WORDS: data for a small training run."""
    rng = random.Random(seed)
    with open(path, "w") as f:
        f.write(" ".join(rng.choice(WORDS) for _ in range(words)))


def losses(work):
    """(step, loss) of each row of work/steps.csv, as text: equal means bit for bit."""
    with open(os.path.join(work, "steps.csv")) as f:
        return [tuple(line.split(",")[:2]) for line in list(f)[1:]]


def steps_redone(seen, resumed):
    """Steps a restart redid: the last step an injector saw in the CSV before its fault, less the step the job
    resumed from (None when it never resumed). The ranks may finish (and save) one step more than the injector
    saw before the fault lands: that resumes one step later and redoes nothing."""
    return None if resumed is None else max(0, seen - resumed)


def driver_lines(text, prefix=""):
    """(time.time() of the line, its text) of megascale-run's decision lines in `text` that start with prefix."""
    out = []
    for m in re.finditer(r"^megascale-run: \[(\S+)Z\] (.*)$", text, re.M):
        if m.group(2).startswith(prefix):
            when = datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%f")
            out.append((when.replace(tzinfo=datetime.timezone.utc).timestamp(), m.group(2)))
    return out


class Job:
    """One process (a megascale-run) with its output read line by line, each line's arrival time kept."""

    def __init__(self, argv, env=None):
        self.lines = []  # (time.time(), stream, text)
        self.lock = threading.Lock()
        self.process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                        env=dict(os.environ, **(env or {})))
        self.threads = [threading.Thread(target=self._read, args=(s, n), daemon=True)
                        for s, n in ((self.process.stdout, "out"), (self.process.stderr, "err"))]
        for t in self.threads:
            t.start()

    def _read(self, stream, name):
        for line in stream:
            with self.lock:
                self.lines.append((time.time(), name, line.rstrip("\n")))

    def text(self, stream=None):
        with self.lock:
            return "\n".join(text for _, s, text in self.lines if stream is None or s == stream)

    def driver(self, prefix):
        """(time the driver wrote it, text) of its decision lines that start with prefix."""
        return driver_lines(self.text(), prefix)

    def grep(self, pattern):
        with self.lock:
            return [(t, m) for t, _, text in self.lines for m in [re.search(pattern, text)] if m]

    def wait(self, timeout):
        try:
            self.process.wait(timeout=timeout)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
        for t in self.threads:
            t.join(timeout=5)
        return self.process.returncode
