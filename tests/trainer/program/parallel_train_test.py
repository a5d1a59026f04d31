#!/usr/bin/python3
"""megascale-train as real processes under megascale-run, for every layout with T, P, D in {1, 2} plus tp4, pp4
with two virtual stages, pp2 x dp2 without any overlap and pp4 with eager 1F1B: 10 fp32 steps give per-step
losses within 1e-5 (relative) of the single-process run of the same model, batch and data, and final weights
within 1e-4 (read from the checkpoints); each layout run twice gives the same losses bit for bit. A run
stopped halfway resumes bit for bit, and its checkpoint loads into another layout.
Usage: parallel_train_test.py MEGASCALE_RUN MEGASCALE_TRAIN"""
import json
import re
import os
import random
import struct
import subprocess
import sys
import tempfile

import numpy

failures = []
MODEL = ["--layers", "8", "--d-model", "32", "--heads", "4", "--seq-len", "16", "--batch-size", "8",
         "--steps", "10", "--lr", "1e-3", "--threads", "1", "--gemm", "ours-portable",
         "--peak-gflops", "50", "--tokenizer", "bytes"]
# (ranks, tp, pp, virtual stages, micro-batches, more flags)
LAYOUTS = [(n_tp * n_pp * n_dp, n_tp, n_pp, 1, 2, []) for n_tp in (1, 2) for n_pp in (1, 2) for n_dp in (1, 2)]
LAYOUTS += [(4, 4, 1, 1, 2, []), (4, 1, 4, 2, 4, [])]
# No overlap at all (each transfer acknowledged before computing on), and eager 1F1B 2 deep on 4 stages.
LAYOUTS += [(4, 1, 2, 1, 4, ["--overlap", "none"]), (4, 1, 4, 1, 4, ["--pp-extra-warmup", "2"])]


def check(condition, what):
    if not condition:
        failures.append(what)
        print("FAIL:", what)


def run(argv, timeout=240):
    r = subprocess.run(argv, capture_output=True, timeout=timeout, text=True)
    return r.returncode, r.stdout, r.stderr


def csv_losses(path):
    with open(path) as f:
        return [float(line.split(",")[1]) for line in list(f)[1:]]


def sections(path):
    """Our section files: a 64-byte header, then (u32 name length, name, u64 length, bytes)."""
    data = open(path, "rb").read()
    at, out = 64, {}
    while at < len(data):
        (n,) = struct.unpack_from("<I", data, at)
        name = data[at + 4:at + 4 + n].decode()
        (length,) = struct.unpack_from("<Q", data, at + 4 + n)
        at += 12 + n
        out[name] = data[at:at + length]
        at += length
    return out


def sharded_weights(step_dir):
    """Whole tensors assembled from a parallel checkpoint's shards (the layout each part records)."""
    whole = {}
    for name in sorted(os.listdir(step_dir)):
        s = sections(os.path.join(step_dir, name))
        for key in s:
            if not key.startswith("tensor:") or not key.endswith(":layout"):
                continue
            tensor = key[7:-7]
            layout = struct.unpack(f"<{len(s[key]) // 8}q", s[key])
            dim, index, count, blocks, shape = layout[0], layout[1], layout[2], layout[3], list(layout[4:])
            part = numpy.frombuffer(s[f"tensor:{tensor}:param"], dtype=numpy.float32)
            if tensor not in whole:
                whole[tensor] = numpy.zeros(shape, dtype=numpy.float32)
            if dim < 0:
                whole[tensor] = part.reshape(shape)
                continue
            outer = int(numpy.prod(shape[:dim])) if dim > 0 else 1
            inner = int(numpy.prod(shape[dim + 1:]))
            g = whole[tensor].reshape(outer, blocks, count, shape[dim] // blocks // count, inner)
            g[:, :, index] = part.reshape(outer, blocks, shape[dim] // blocks // count, inner)
    return whole


def single_weights(path, layers, d, vocab, seq):
    """The single-process checkpoint's flat buffer, cut by the whole model's table (parallel block)."""
    flat = numpy.frombuffer(sections(path)["params"], dtype=numpy.float32)
    shapes = [("wte", (vocab, d)), ("wpe", (seq, d))]
    for l in range(layers):
        p = f"layers.{l}."
        shapes += [(p + "ln1.weight", (d,)), (p + "ln1.bias", (d,)), (p + "qkv.weight", (d, 3 * d)),
                   (p + "qkv.bias", (3 * d,)), (p + "proj.weight", (d, d)), (p + "proj.bias", (d,)),
                   (p + "fc.weight", (d, 4 * d)), (p + "fc.bias", (4 * d,)), (p + "fcproj.weight", (4 * d, d)),
                   (p + "fcproj.bias", (d,))]
    shapes += [("lnf.weight", (d,)), ("lnf.bias", (d,))]
    out, at = {}, 0
    for name, shape in shapes:
        size = int(numpy.prod(shape))
        out[name] = flat[at:at + size].reshape(shape)
        at += size
    check(at == flat.size, f"the single-process checkpoint holds {flat.size} parameters, the table {at}")
    return out


def latest(ckpt):
    return os.path.join(ckpt, open(os.path.join(ckpt, "latest")).read().strip())


def main():
    launcher, trainer = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        rng = random.Random(3)
        words = ["kernel", "hacker", "the", "a", "bit", "byte", "wizard", "guru", "of", "and", "to", "run"]
        text = os.path.join(tmp, "text.txt")
        with open(text, "w") as f:
            f.write(" ".join(rng.choice(words) for _ in range(20000)))
        common = MODEL + ["--data", text]

        rc, out, err = run([trainer, *common, "--csv", f"{tmp}/single.csv", "--checkpoint-dir", f"{tmp}/single"])
        check(rc == 0, f"single-process run ({err.strip()})")
        if rc != 0:
            sys.exit(1)
        want = csv_losses(f"{tmp}/single.csv")
        want_weights = single_weights(latest(f"{tmp}/single"), 8, 32, 256, 16)

        for ranks, tp, pp, v, micro, more in LAYOUTS:
            name = f"tp{tp}_pp{pp}_dp{ranks // (tp * pp)}" + (f"_v{v}" if v > 1 else "") + "".join(more).replace("-", "_")
            runs = []
            for attempt in (1, 2):
                ckpt = f"{tmp}/{name}_{attempt}"
                argv = [launcher, "-n", str(ranks), trainer, *common, "--tp", str(tp), "--pp", str(pp),
                        "--virtual-stages", str(v), "--micro-batches", str(micro), "--csv", f"{ckpt}.csv",
                        "--checkpoint-dir", ckpt, *more]
                if attempt == 1 and ranks == 8:
                    argv += ["--trace", f"{tmp}/trace.json", "--summary-json", f"{tmp}/summary.json"]
                rc, out, err = run(argv)
                check(rc == 0, f"{name} run {attempt} exits 0 ({err.strip()[-400:]})")
                if rc != 0:
                    break
                runs.append(csv_losses(f"{ckpt}.csv"))
            if len(runs) < 2:
                continue
            check(runs[0] == runs[1], f"{name}: two runs give the same losses bit for bit")
            worst = max(abs(a - b) / b for a, b in zip(runs[0], want))
            check(len(runs[0]) == 10 and worst < 1e-5, f"{name}: losses within 1e-5 of one process (worst {worst:.2e})")
            got = sharded_weights(latest(f"{tmp}/{name}_1"))
            check(sorted(got) == sorted(want_weights), f"{name}: the checkpoint holds every tensor")
            diff = max(float(numpy.abs(got[k] - want_weights[k]).max()) for k in want_weights if k in got)
            check(diff < 1e-4, f"{name}: final weights within 1e-4 of one process (worst {diff:.2e})")
            print(f"{name}: worst loss {worst:.1e}, worst weight {diff:.1e}")

        # The merged trace: one process per rank, a track per stream, spans of every kind.
        trace = json.load(open(f"{tmp}/trace.json"))["traceEvents"]
        pids = {e["pid"] for e in trace}
        check(pids == set(range(8)), f"the trace has one process per rank ({sorted(pids)})")
        tracks = {e["args"]["name"] for e in trace if e["name"] == "thread_name"}
        check({"compute", "tensor-parallel comm", "pipeline comm", "data-parallel comm"} <= tracks,
              f"the trace names its tracks ({tracks})")
        spans = [e for e in trace if e["ph"] == "X"]
        names = {e["name"].split(" ")[0] for e in spans}
        check({"F0.0", "B0.0", "optimizer", "all-gather", "reduce-scatter"} <= names and
              any(e["name"].startswith("gradient reduce-scatter") for e in spans) and
              any(e["name"].startswith("receive of an activation") for e in spans),
              f"the trace holds computes, TP, PP and DP spans ({sorted(names)[:20]})")
        # The 3D timeline: ranks named by their coordinates; a micro-batch's arrows join a stage's compute to the
        # next stage's, within one pipeline column (the same tp and dp).
        names = {e["pid"]: e["args"]["name"] for e in trace if e["name"] == "process_name"}
        check(all(re.fullmatch(r"rank \d: tp \d pp \d dp \d", n) for n in names.values()),
              f"every rank is named by its coordinates ({sorted(names.values())[:3]})")
        coords = {pid: tuple(int(v) for v in re.findall(r"(?:tp|pp|dp) (\d)", n)) for pid, n in names.items()}
        starts = {e["id"]: e for e in trace if e["ph"] == "s"}
        ends = {e["id"]: e for e in trace if e["ph"] == "f"}
        joined = [(starts[i], ends[i]) for i in starts if i in ends]
        check(len(joined) > 0 and len(joined) == len(starts) == len(ends),
              f"every arrow leaves one rank and enters another ({len(starts)} out, {len(ends)} in)")
        check(all(coords[s["pid"]][0] == coords[f["pid"]][0] and coords[s["pid"]][2] == coords[f["pid"]][2] and
                  coords[s["pid"]][1] != coords[f["pid"]][1] and s["ts"] <= f["ts"] + 5000 for s, f in joined),
              "each arrow joins two stages of one pipeline column, forward in time (5 ms for the ranks' epochs)")
        summary = json.load(open(f"{tmp}/summary.json"))
        check(summary["gemm_peak_gflops"] == 50, f"MFU is against the given --peak-gflops ({summary})")
        check(summary["layout"] == "tp2 x pp2 x dp2" and summary["exposed_comm_s_per_step"] > 0 and
              summary["compute_s_per_step"] > 0, f"the summary reports compute and exposed communication ({summary})")

        # Stopped after 5 steps and resumed: the same losses bit for bit; the checkpoint loads into another layout.
        layout = ["--tp", "2", "--pp", "2", "--micro-batches", "2"]
        straight = csv_losses(f"{tmp}/tp2_pp2_dp2_1.csv")
        ckpt = f"{tmp}/resume"
        rc, out, err = run([launcher, "-n", "8", trainer, *common, *layout, "--checkpoint-dir", ckpt,
                            "--checkpoint-every", "2", "--stop-after", "5", "--csv", f"{tmp}/r1.csv"])
        check(rc == 0, f"first half ({err.strip()[-300:]})")
        os.system(f"cp -r {ckpt} {tmp}/other")
        rc, out, err = run([launcher, "-n", "8", trainer, *common, *layout, "--checkpoint-dir", ckpt,
                            "--csv", f"{tmp}/r2.csv"])
        check(rc == 0 and "resumed from" in out, f"second half resumes ({err.strip()[-300:]})")
        check(csv_losses(f"{tmp}/r1.csv") + csv_losses(f"{tmp}/r2.csv") == straight,
              "a resumed run gives the same losses bit for bit")
        rc, out, err = run([launcher, "-n", "4", trainer, *common, "--pp", "2", "--micro-batches", "2",
                            "--checkpoint-dir", f"{tmp}/other", "--csv", f"{tmp}/r3.csv"])
        other = csv_losses(f"{tmp}/r3.csv") if rc == 0 else []
        worst = max((abs(a - b) / b for a, b in zip(other, straight[5:])), default=1)
        check(rc == 0 and len(other) == 5 and worst < 1e-5,
              f"tp2 x pp2 x dp2's checkpoint continues as tp1 x pp2 x dp2 (worst {worst:.1e}; {err.strip()[-300:]})")

        # bf16 data-parallel traffic: the checkpoint keeps the fp32 master weights, so a resumed run rounds the
        # same values the straight run computes with.
        bf16 = [launcher, "-n", "2", trainer, *common, "--micro-batches", "2", "--dp-comm-precision", "bf16"]
        rc, out, err = run([*bf16, "--csv", f"{tmp}/b0.csv"])
        check(rc == 0 and "data-parallel traffic in bf16" in out, f"dp2 with bf16 traffic ({err.strip()[-300:]})")
        bf16_straight = csv_losses(f"{tmp}/b0.csv") if rc == 0 else []
        worst = max((abs(a - b) / b for a, b in zip(bf16_straight, want)), default=1)
        check(len(bf16_straight) == 10 and worst < 1e-2, f"bf16 traffic follows one process to 1e-2 (worst {worst:.1e})")
        run([*bf16, "--checkpoint-dir", f"{tmp}/b", "--checkpoint-every", "2", "--stop-after", "5", "--csv", f"{tmp}/b1.csv"])
        rc, out, err = run([*bf16, "--checkpoint-dir", f"{tmp}/b", "--csv", f"{tmp}/b2.csv"])
        check(rc == 0 and csv_losses(f"{tmp}/b1.csv") + csv_losses(f"{tmp}/b2.csv") == bf16_straight,
              f"with bf16 traffic a resumed run gives the same losses bit for bit ({err.strip()[-300:]})")

        shard = os.path.join(latest(ckpt), "shard_tp1_pp0.ckpt")
        with open(shard, "r+b") as f:
            f.truncate(os.path.getsize(shard) - 10)
        rc, out, err = run([launcher, "-n", "8", trainer, *common, *layout, "--steps", "12", "--checkpoint-dir", ckpt])
        check(rc != 0 and "shard_tp1_pp0.ckpt" in err and "truncated" in err,
              f"a truncated shard is refused, naming the file ({rc}: {err.strip()[-300:]})")
        rc, out, err = run([launcher, "-n", "3", trainer, *common, "--tp", "2"])
        check(rc != 0 and "must divide the 3 ranks" in err, f"a layout that does not fit is named ({err.strip()[-200:]})")
    print("PASS" if not failures else f"{len(failures)} failures")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
