#!/usr/bin/python3
"""megascale-train end to end on a small model: it trains (the loss falls), writes its CSV, summary JSON and
PNG, prints progress lines, refuses bad input with a clear message, and a run stopped after 8 steps and
resumed from its checkpoint gives the same losses, bit for bit, as a run that never stopped."""
import json
import os
import random
import re
import subprocess
import sys
import tempfile

COMMON = ["--layers", "2", "--d-model", "32", "--heads", "2", "--seq-len", "16", "--batch-size", "4",
          "--steps", "16", "--lr", "3e-3", "--tokenizer", "bpe:300", "--threads", "2",
          # Bit-exact resumption needs the same kernels on both sides: pin the backend instead of measuring.
          "--gemm", "ours-portable"]
# Runs after the first report MFU against a given peak: measuring the host's GEMM peak takes seconds each.
GIVEN_PEAK = ["--peak-gflops", "50"]
failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
        print("FAIL:", what)


def run(binary, *args):
    result = subprocess.run([binary, *args], capture_output=True, timeout=240)
    result.stdout, result.stderr = result.stdout.decode(), result.stderr.decode()  # must be valid UTF-8
    return result.returncode, result.stdout, result.stderr


def csv_losses(path):
    with open(path) as f:
        rows = [line.strip().split(",") for line in f][1:]
    return {int(r[0]): r[1] for r in rows}


def main():
    binary = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        rng = random.Random(7)
        words = ["kernel", "hacker", "the", "a", "bit", "byte", "wizard", "guru", "of", "and", "to", "run"]
        text = os.path.join(tmp, "text.txt")
        with open(text, "w") as f:
            f.write(" ".join(rng.choice(words) for _ in range(30000)))
        p = lambda name: os.path.join(tmp, name)

        rc, out, err = run(binary, *COMMON, "--data", text, "--csv", p("a.csv"), "--summary-json", p("a.json"),
                           "--plot", p("a.png"), "--log-every", "4", "--sample-tokens", "12")
        check(rc == 0, f"straight run exits 0 (got {rc}: {err})")
        check(re.search(r"^step +4/16 \| loss \d+\.\d{4} \| lr [\d.e+-]+ \| [\d,]+ tok/s \| MFU [\d.]+% \| ETA \S+$",
                        out, re.M) is not None, "progress line format")
        check(re.search(r"GEMM: ours-portable; peak \d+ GFLOP/s\n", out), "prints which GEMM ran and its measured peak")
        check("sample: " in out, "prints a sample")
        if rc != 0:
            sys.exit(1)
        summary = json.load(open(p("a.json")))
        for key in ("tokens_per_s", "mfu", "first_loss", "final_loss", "gemm_backend", "gemm_peak_gflops"):
            check(key in summary, f"summary has {key}")
        check(summary["final_loss"] < summary["first_loss"] - 0.5,
              f"loss falls ({summary['first_loss']} -> {summary['final_loss']})")
        check(summary["tokens_per_s"] > 0 and 0 < summary["mfu"] < 1.5, "throughput and MFU are sane")
        check(open(p("a.png"), "rb").read(8) == b"\x89PNG\r\n\x1a\n", "the plot is a PNG")
        straight = csv_losses(p("a.csv"))
        check(sorted(straight) == list(range(1, 17)), "CSV has one row per step")

        ckpt = p("ckpt")
        rc, out, err = run(binary, *COMMON, *GIVEN_PEAK, "--data", text, "--checkpoint-dir", ckpt, "--stop-after", "8",
                           "--csv", p("b1.csv"))
        check(rc == 0, f"first half exits 0 ({err})")
        rc, out, err = run(binary, *COMMON, *GIVEN_PEAK, "--data", text, "--checkpoint-dir", ckpt, "--csv", p("b2.csv"))
        check(rc == 0, f"second half exits 0 ({err})")
        check(re.search(r"peak 50 GFLOP/s \(given\)", out) and "MFU" in out, "MFU against the given --peak-gflops")
        check("resumed from" in out and "step 8" in out, "the second half says where it resumed")
        halves = {**csv_losses(p("b1.csv")), **csv_losses(p("b2.csv"))}
        check(sorted(halves) == list(range(1, 17)), "the halves cover steps 1-16 once")
        check(halves == straight, f"resumed losses equal the straight run's bit for bit\n{halves}\n{straight}")

        latest = os.path.join(ckpt, open(os.path.join(ckpt, "latest")).read().strip())
        with open(latest, "r+b") as f:
            f.truncate(os.path.getsize(latest) // 2)
        rc, out, err = run(binary, *COMMON, *GIVEN_PEAK, "--data", text, "--checkpoint-dir", ckpt)
        check(rc != 0 and "truncated" in err, f"a truncated checkpoint is refused ({rc}: {err.strip()})")

        tokenize = os.path.join(os.path.dirname(binary), "megascale-tokenize")
        rc, out, err = run(tokenize, "train", "--input", text, "--vocab", "280", "--out", p("t.bpe"))
        check(rc == 0 and "280 tokens" in out, f"megascale-tokenize train ({err})")
        rc, out, err = run(tokenize, "encode", "--input", text, "--tokenizer", p("t.bpe"), "--out", p("t.bin"))
        check(rc == 0, f"megascale-tokenize encode ({err})")
        rc, out, err = run(binary, *COMMON, *GIVEN_PEAK, "--data", p("t.bin"), "--steps", "2")
        check(rc == 0 and "vocabulary 280 (token shard)" in out, f"trains from a token shard ({err})")

        rc, out, err = run(binary, *COMMON, "--data", p("missing.txt"))
        check(rc == 2 and "cannot open training text" in err, f"a missing data file is named ({err.strip()})")
        rc, out, err = run(binary, "--layers", "0", "--data", text)
        check(rc == 2 and "--layers must be at least 1" in err, f"a bad shape is named ({err.strip()})")
        rc, out, err = run(binary, "--heads", "5", "--data", text)
        check(rc == 2 and "--heads (5) must divide --d-model" in err, f"heads/d_model mismatch ({err.strip()})")
    print("PASS" if not failures else f"{len(failures)} failures")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
