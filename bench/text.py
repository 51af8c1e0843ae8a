#!/usr/bin/python3
"""Any text as a byte-level autotmc dataset, and PyTorch's GPT trained on it.

    bench/text.py prepare FILE DIR [SEQ]      write DIR/train and DIR/val
    bench/text.py torch DIR EPOCHS [SEED]     examples/tinygpt.net's model,
                                              optimizer, schedule and batches
                                              of 16 trained by PyTorch (its own
                                              initialisation and shuffle), its
                                              validation loss after each epoch

`prepare` reads FILE as bytes (a vocabulary of 256) and cuts it into windows
of SEQ + 1 bytes (default 64) that start every SEQ bytes: x.npy holds each
window's first SEQ bytes, int32 [N, SEQ], and y.npy the byte after each of
them, int64 class ids [N, SEQ]. The first 90% of the text trains, the rest
validates, so no validation window overlaps a training one. Then

    autotmc run examples/tinygpt.net --data DIR/train --val DIR/val --epochs 20

trains on it (examples/tinygpt.net: 4 layers of 4 heads, 128 wide, 64
positions; AdamW with a cosine schedule).

`torch` builds the same network as a torch.nn module, written here from
nanoGPT's description (pre-layernorm blocks, causal attention with q, k and
v from one projection, a GELU MLP 4x wide, the output projection tied to the
token embedding), initialised as autotmc initialises it (linear layers
uniform(+-1/sqrt(fan_in)) as torch.nn.Linear, embeddings N(0, 0.02), layer
norms 1 and 0) but from PyTorch's generator, and trains it with
torch.optim.AdamW, the same cosine schedule and clipping, shuffling the
windows each epoch and dropping the last partial batch as autotmc does; it
prints the mean validation loss per position after each epoch (every
validation window, as `autotmc run --val` evaluates).
"""
import math
import os
import sys

import numpy as np

# examples/tinygpt.net's defaults
BATCH, SEQ, VOCAB, LAYERS, HEADS, WIDTH = 16, 64, 256, 4, 4, 128
LR, BETA2, WD, CLIP, STEPS, WARMUP = 0.001, 0.99, 0.1, 1.0, 600, 50


def prepare(path, out, seq):
    data = np.frombuffer(open(path, "rb").read(), dtype=np.uint8)
    cut = int(len(data) * 0.9)
    for name, part in (("train", data[:cut]), ("val", data[cut:])):
        n = (len(part) - 1) // seq
        if n < 1:
            sys.exit(f"{path}: too short for windows of {seq} bytes")
        idx = np.arange(n)[:, None] * seq + np.arange(seq)[None, :]
        os.makedirs(f"{out}/{name}", exist_ok=True)
        np.save(f"{out}/{name}/x.npy", part[idx].astype(np.int32))
        np.save(f"{out}/{name}/y.npy", part[idx + 1].astype(np.int64))
        print(f"{out}/{name}: {n} windows of {seq} bytes")


def schedule_lr(t):
    """docs/language.md's cosine(steps = STEPS, warmup = WARMUP, floor = LR / 10)"""
    floor = LR / 10
    if t < WARMUP:
        return LR * (t + 1) / WARMUP
    if t >= STEPS:
        return floor
    return floor + (LR - floor) * 0.5 * (1 + math.cos(math.pi * (t - WARMUP) / (STEPS - WARMUP)))


def model():
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from torch_step import gpt_model
    return gpt_model(LAYERS, HEADS, WIDTH, VOCAB, SEQ)


def train_torch(d, epochs, seed):
    import torch
    import torch.nn.functional as F
    torch.manual_seed(seed)
    torch.set_num_threads(int(os.environ.get("THREADS", "2")))
    net = model()  # nn.Linear's defaults are uniform(+-1/sqrt(fan_in)) for weight and bias: autotmc's rule
    opt = torch.optim.AdamW(net.parameters(), lr=LR, betas=(0.9, BETA2), eps=1e-8, weight_decay=WD)
    x, y = (torch.tensor(np.load(f"{d}/train/{f}.npy")).long() for f in ("x", "y"))
    vx, vy = (torch.tensor(np.load(f"{d}/val/{f}.npy")).long() for f in ("x", "y"))
    steps = len(x) // BATCH
    t = 0
    print(f"torch: {len(x)} windows, {steps} steps of {BATCH} an epoch, {epochs} epochs")
    for e in range(epochs):
        order = torch.randperm(len(x))
        net.train()
        total = 0.0
        for s in range(steps):
            b = order[s * BATCH:(s + 1) * BATCH]
            loss = F.cross_entropy(net(x[b]).reshape(-1, VOCAB), y[b].reshape(-1))
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), CLIP)
            for g in opt.param_groups:
                g["lr"] = schedule_lr(t)
            opt.step()
            total += loss.item()
            t += 1
        net.eval()
        with torch.no_grad():
            val = F.cross_entropy(net(vx).reshape(-1, VOCAB), vy.reshape(-1)).item()
        print(f"epoch {e + 1} (step {t}): train loss {total / steps:.4f}, validation loss {val:.4f}")


def main():
    a = sys.argv[1:]
    if len(a) >= 3 and a[0] == "prepare":
        prepare(a[1], a[2], int(a[3]) if len(a) > 3 else SEQ)
    elif len(a) >= 3 and a[0] == "torch":
        train_torch(a[1], int(a[2]), int(a[3]) if len(a) > 3 else 0)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
