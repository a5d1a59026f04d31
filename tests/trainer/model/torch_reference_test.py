#!/usr/bin/python3
"""Our GPT against the same model written in PyTorch, on the same weights and batch.

float64: logits, loss and every parameter gradient agree to a relative error below 1e-10, for both block
kinds and a window smaller than the sequence. float32: ten steps of AdamW and of LAMB (warmup + cosine,
clipping, weight decay) give the same losses and weights to 1e-4. Exit 77 (CTest: skipped) when PyTorch
is not installed.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import torch
    import torch.nn.functional as F
except ImportError as error:
    print(f"SKIPPED: PyTorch or numpy is missing ({error}) [missing: python3-torch python3-numpy]")
    sys.exit(77)

SHAPE = dict(layers=2, d_model=16, heads=4, seq_len=12, vocab=23, batch=3)


def run_oracle(oracle, out, precision, block, window, optimizer, steps):
    args = [oracle, "--precision", precision, "--block", block, "--window", str(window), "--optimizer", optimizer,
            "--steps", str(steps), "--out", out, "--seed", "11", "--spread", "8" if precision == "f64" else "1",
            "--lr", "1e-2", "--weight-decay", "0.1", "--clip", "1.0"]
    for key in ("layers", "d_model", "heads", "seq_len", "vocab", "batch"):
        args += ["--" + key.replace("_", "-"), str(SHAPE[key])]
    subprocess.run(args, check=True)
    with open(os.path.join(out, "manifest.json")) as f:
        return json.load(f)["params"]


def load(out, name, dtype, shape=None):
    array = np.fromfile(os.path.join(out, name), dtype=dtype)
    return torch.from_numpy(array.reshape(shape) if shape is not None else array)


def forward(params, inputs, targets, block, window):
    b, t = inputs.shape
    c, h = SHAPE["d_model"], SHAPE["heads"]
    hd = c // h
    x = params["wte"][inputs] + params["wpe"][:t]
    i = torch.arange(t).view(t, 1)
    j = torch.arange(t).view(1, t)
    allowed = (j <= i) & (j > i - (window if 0 < window <= t else t))
    for layer in range(SHAPE["layers"]):
        p = lambda name: params[f"layers.{layer}.{name}"]
        ln1 = F.layer_norm(x, (c,), p("ln1.weight"), p("ln1.bias"), eps=1e-5)
        qkv = ln1 @ p("qkv.weight") + p("qkv.bias")
        q, k, v = (qkv[..., n * c:(n + 1) * c].view(b, t, h, hd).transpose(1, 2) for n in range(3))
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(hd)
        scores = scores.masked_fill(~allowed, float("-inf"))
        att = (torch.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(b, t, c)
        attention = att @ p("proj.weight") + p("proj.bias")
        if block == "serial":
            x = x + attention
            mlp_in = F.layer_norm(x, (c,), p("ln2.weight"), p("ln2.bias"), eps=1e-5)
        else:
            mlp_in = ln1
        mlp = F.gelu(mlp_in @ p("fc.weight") + p("fc.bias"), approximate="tanh") @ p("fcproj.weight") + p("fcproj.bias")
        x = x + mlp if block == "serial" else x + attention + mlp
    x = F.layer_norm(x, (c,), params["lnf.weight"], params["lnf.bias"], eps=1e-5)
    logits = x @ params["wte"].T
    return logits, F.cross_entropy(logits.reshape(-1, SHAPE["vocab"]), targets.reshape(-1))


def relative(ours, theirs):
    scale = theirs.abs().max().item()
    return (ours - theirs).abs().max().item() / (scale if scale > 0 else 1.0)


def comparable(name, ours, theirs):
    """The key bias has an exactly zero gradient (softmax ignores a per-row constant), so its float32 gradient
    is rounding noise that Adam scales to full-size steps in both implementations alike: leave it out."""
    if name.endswith("qkv.bias"):
        c = SHAPE["d_model"]
        keep = torch.cat([torch.arange(0, c), torch.arange(2 * c, 3 * c)])
        return ours[keep], theirs[keep]
    return ours, theirs


def lr_at(step, max_lr, steps, warmup=2):
    if step < warmup:
        return max_lr * (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, steps - warmup))
    min_lr = max_lr / 10
    return min_lr + 0.5 * (1 + math.cos(math.pi * progress)) * (max_lr - min_lr)


def lamb_step(params, grads, state, step, lr, decay_names, betas=(0.9, 0.95), eps=1e-8, wd=0.1):
    for name, p in params.items():
        g = grads[name]
        m, v = state.setdefault(name, (torch.zeros_like(p), torch.zeros_like(p)))
        m.mul_(betas[0]).add_(g, alpha=1 - betas[0])
        v.mul_(betas[1]).addcmul_(g, g, value=1 - betas[1])
        update = (m / (1 - betas[0] ** step)) / ((v / (1 - betas[1] ** step)).sqrt() + eps)
        if name in decay_names:
            update = update + wd * p
        w_norm, u_norm = p.double().norm().item(), update.double().norm().item()
        trust = w_norm / u_norm if w_norm > 0 and u_norm > 0 else 1.0
        p.sub_(update, alpha=lr * trust)


def check_gradients(oracle, tmp, block, window):
    out = os.path.join(tmp, f"f64-{block}-{window}")
    os.makedirs(out)
    manifest = run_oracle(oracle, out, "f64", block, window, "adamw", 0)
    shape = (SHAPE["batch"], SHAPE["seq_len"])
    inputs = load(out, "inputs", np.int32, shape).long()
    targets = load(out, "targets", np.int32, shape).long()
    params = {p["name"]: load(out, "init." + p["name"], np.float64, p["shape"]).requires_grad_() for p in manifest}
    logits, loss = forward(params, inputs, targets, block, window)
    loss.backward()
    errors = {"logits": relative(load(out, "logits", np.float64, logits.shape), logits.detach()),
              "loss": relative(load(out, "loss", np.float64), loss.detach().view(1))}
    for p in manifest:
        errors["grad " + p["name"]] = relative(load(out, "grad." + p["name"], np.float64, p["shape"]),
                                               params[p["name"]].grad)
    worst = max(errors, key=errors.get)
    print(f"float64 {block} window={window}: loss {loss.item():.6f}, {len(errors)} tensors, "
          f"worst relative error {errors[worst]:.2e} ({worst})")
    return [f"{block} window={window}: {k} relative error {e:.3e}" for k, e in errors.items() if not e < 1e-10]


def check_training(oracle, tmp, optimizer, block, window, steps=10, lr=1e-2):
    out = os.path.join(tmp, f"f32-{optimizer}")
    os.makedirs(out)
    manifest = run_oracle(oracle, out, "f32", block, window, optimizer, steps)
    shape = (SHAPE["batch"], SHAPE["seq_len"])
    inputs = load(out, "inputs", np.int32, shape).long()
    targets = load(out, "targets", np.int32, shape).long()
    params = {p["name"]: load(out, "init." + p["name"], np.float32, p["shape"]).clone().requires_grad_()
              for p in manifest}
    decay = {p["name"] for p in manifest if p["decay"]}
    torch_opt = None
    if optimizer == "adamw":
        groups = [{"params": [params[n] for n in params if n in decay], "weight_decay": 0.1},
                  {"params": [params[n] for n in params if n not in decay], "weight_decay": 0.0}]
        torch_opt = torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.95), eps=1e-8)
    state, losses = {}, []
    for step in range(steps):
        for p in params.values():
            p.grad = None
        _, loss = forward(params, inputs, targets, block, window)
        loss.backward()
        losses.append(loss.item())
        torch.nn.utils.clip_grad_norm_(list(params.values()), 1.0)
        with torch.no_grad():
            if torch_opt is not None:
                for group in torch_opt.param_groups:
                    group["lr"] = lr_at(step, lr, steps)
                torch_opt.step()
            else:
                lamb_step(params, {n: p.grad for n, p in params.items()}, state, step + 1, lr_at(step, lr, steps),
                          decay)
    ours = load(out, "losses", np.float32).double()
    loss_error = relative(ours, torch.tensor(losses, dtype=torch.float64))
    param_error = max(relative(*comparable(p["name"], load(out, "final." + p["name"], np.float32, p["shape"]),
                                           params[p["name"]].detach())) for p in manifest)
    print(f"float32 {optimizer} {steps} steps: loss {losses[0]:.4f} -> {losses[-1]:.4f} "
          f"(ours {ours[-1].item():.4f}); relative error losses {loss_error:.2e}, weights {param_error:.2e}")
    failures = []
    if not loss_error < 1e-4:
        failures.append(f"{optimizer}: losses differ by {loss_error:.3e}")
    if not param_error < 1e-4:
        failures.append(f"{optimizer}: final weights differ by {param_error:.3e}")
    if not losses[-1] < losses[0]:
        failures.append(f"{optimizer}: loss did not fall ({losses[0]} -> {losses[-1]})")
    return failures


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--oracle", required=True)
    args = parser.parse_args()
    torch.set_num_threads(2)
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        for block, window in (("parallel", 0), ("serial", 0), ("parallel", 5), ("serial", 4)):
            failures += check_gradients(args.oracle, tmp, block, window)
        failures += check_training(args.oracle, tmp, "adamw", "serial", 5)
        failures += check_training(args.oracle, tmp, "lamb", "parallel", 0)
    for failure in failures:
        print("FAIL:", failure)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
