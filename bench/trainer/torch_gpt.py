#!/usr/bin/python3
"""The PyTorch baseline of bench/trainer_compare: the same GPT (serial or parallel block, sliding window,
tied embeddings, tanh GELU), the same AdamW settings and batch shape, timed over steps after warm-up on
random tokens. Prints one JSON line: tokens_per_s, ms_per_step, threads, torch version, BLAS env."""
import argparse
import json
import math
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, d, heads, seq, window, serial):
        super().__init__()
        self.heads, self.serial = heads, serial
        self.ln1 = nn.LayerNorm(d)
        self.ln2 = nn.LayerNorm(d) if serial else None
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.fc = nn.Linear(d, 4 * d)
        self.fcproj = nn.Linear(4 * d, d)
        i = torch.arange(seq).view(seq, 1)
        j = torch.arange(seq).view(1, seq)
        w = window if 0 < window <= seq else seq
        self.register_buffer("blocked", ~((j <= i) & (j > i - w)))

    def attention(self, h):
        b, t, c = h.shape
        q, k, v = self.qkv(h).split(c, dim=-1)
        q, k, v = (x.view(b, t, self.heads, c // self.heads).transpose(1, 2) for x in (q, k, v))
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(c // self.heads)
        scores = scores.masked_fill(self.blocked[:t, :t], float("-inf"))
        return self.proj((torch.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(b, t, c))

    def mlp(self, h):
        return self.fcproj(F.gelu(self.fc(h), approximate="tanh"))

    def forward(self, x):
        if self.serial:
            x = x + self.attention(self.ln1(x))
            return x + self.mlp(self.ln2(x))
        h = self.ln1(x)
        return x + self.attention(h) + self.mlp(h)


class Gpt(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.wte = nn.Embedding(a.vocab, a.d_model)
        self.wpe = nn.Embedding(a.seq_len, a.d_model)
        self.blocks = nn.ModuleList(Block(a.d_model, a.heads, a.seq_len, a.window, a.block == "serial")
                                    for _ in range(a.layers))
        self.lnf = nn.LayerNorm(a.d_model)

    def forward(self, idx, targets):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
        for block in self.blocks:
            x = block(x)
        logits = self.lnf(x) @ self.wte.weight.T
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.reshape(-1))


def main():
    p = argparse.ArgumentParser()
    for name, default in (("layers", 6), ("d-model", 384), ("heads", 6), ("seq-len", 256), ("batch-size", 8),
                          ("vocab", 256), ("window", 0), ("steps", 20), ("warmup-steps", 3), ("threads", 2)):
        p.add_argument("--" + name, type=int, default=default)
    p.add_argument("--block", default="serial")
    a = p.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(a.threads)
    model = Gpt(a)
    decay = [q for n, q in model.named_parameters() if q.dim() >= 2]
    rest = [q for n, q in model.named_parameters() if q.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}],
                            lr=1e-3, betas=(0.9, 0.95), eps=1e-8)
    data = torch.randint(0, a.vocab, (a.batch_size, a.seq_len + 1))
    inputs, targets = data[:, :-1], data[:, 1:]
    times, losses = [], []
    for step in range(a.warmup_steps + a.steps):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = model(inputs, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step >= a.warmup_steps:
            times.append(time.perf_counter() - t0)
        losses.append(loss.item())
    seconds = sum(times)
    print(json.dumps({
        "tokens_per_s": a.batch_size * a.seq_len * len(times) / seconds,
        "ms_per_step": 1000 * seconds / len(times),
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "first_loss": losses[0], "final_loss": losses[-1],
        "openblas_env": {k: os.environ.get(k) for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")},
    }))


if __name__ == "__main__":
    main()
