#!/usr/bin/env python3
"""torch_step.py - the training step of examples/mlp.net and examples/test_vgg.net
in PyTorch (CPU), timed the way bench/cpu_step.sh compares it with autotmc.

    bench/.venv/bin/python bench/torch_step.py --model mlp --batch 16 --threads 2

prints one JSON object: the median, min and max step time over --iters timed
steps after --warmup untimed ones, every step time and every loss (warm-up
steps included in `losses`), and the versions.

The models are the .net files layer for layer:

  mlp (examples/mlp.net): Linear 4096=>4096 + ReLU three times, Linear 4096=>10
      + ReLU, softmax; the loss is cross-entropy.  autotmc hands the softmax's
      input to its fused softmax_crossentropy, so here the last ReLU's output
      goes to F.cross_entropy (log-softmax + NLL), the same function.
      SGD lr 0.005, no momentum.
  test_vgg (examples/test_vgg.net, stdlib/vgg.net): three VGG stages of two
      3x3 convolutions (pad 1, bias, ReLU) and a 2x2 max pool, 3=>16, 16=>32,
      32=>64; flatten; Linear 64*(size/8)^2=>128 + ReLU; Linear 128=>classes.
      SGD lr 0.01, momentum 0.9.

Initial values: PyTorch's defaults for Linear and Conv2d, U(-1/sqrt(fan_in),
1/sqrt(fan_in)) for weights and biases, which is autotmc's rule
(compiler/front/weights.c); not the same numbers.  The batch is N(0, 1) with random
one-hot labels, the same batch every step, as in an autotmc program.

  gpt (examples/gpt2.net and examples/tinygpt.net, stdlib/transformer.net):
      GPT-2 as nanoGPT writes it (gpt_model below): token and position
      embeddings, --layers pre-layernorm blocks of causal self-attention
      (--heads, q, k and v from one projection,
      F.scaled_dot_product_attention) and a 4x GELU MLP, a final layernorm,
      the output projection tied to the token embedding; --width, --vocab,
      --seq. Random token ids and next-token ids. AdamW (betas 0.9, 0.95 as
      gpt2.net, 0.99 with --beta2), weight decay 0.1, gradients clipped to
      norm 1 (clip_grad_norm_), lr 6e-4.

--precision bf16 runs the forward pass and the loss under
torch.autocast("cpu", dtype=torch.bfloat16), mixed precision as PyTorch's
users train (autotmc's --precision bf16).

A step is: optimizer.zero_grad(), forward, loss, backward, (clipping,)
optimizer.step(), timed with time.perf_counter() (CPU ops are synchronous).
--ddp trains data-parallel as PyTorch's users do on CPUs, the peer of
`autotmc run --ranks N`: started by torchrun (`bench/.venv/bin/torchrun
--nproc_per_node N bench/torch_step.py --ddp ...`), each rank --batch
samples of its own, the model in DistributedDataParallel over gloo (its
default 25 MB buckets, overlapped with the backward pass); rank 0 prints.
--compile runs the model under torch.compile (inductor, its default mode:
the forward and backward graphs compiled, the optimizer eager), as a
PyTorch user wanting speed does; compilation happens in the warm-up steps.
"""

import argparse
import json
import os
import platform
import statistics
import sys
import time


def gpt_model(layers, heads, width, vocab, seq, composed=False):
    """GPT-2 as examples/gpt2.net has it (nanoGPT's layout), a torch.nn module:
    token ids [B, T] -> logits [B, T, vocab].  Attention is
    F.scaled_dot_product_attention (causal), or with `composed` (and on a
    torch before 2.0) written out as autotmc composes it: the scaled product
    of queries and keys, a causal mask, softmax, the product with values."""
    import math
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    def attend(q, k, v):
        if not composed and hasattr(F, "scaled_dot_product_attention"):
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)
        t = q.shape[-2]
        a = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
        mask = torch.ones(t, t, dtype=torch.bool, device=q.device).triu(1)
        return F.softmax(a.masked_fill(mask, float("-inf")), dim=-1) @ v

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.ln_2 = nn.LayerNorm(width), nn.LayerNorm(width)
            self.c_attn, self.c_proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
            self.c_fc, self.mlp_proj = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = self.c_attn(self.ln_1(x)).split(width, dim=2)
            q, k, v = (z.view(b, t, heads, c // heads).transpose(1, 2) for z in (q, k, v))
            y = attend(q, k, v)
            x = x + self.c_proj(y.transpose(1, 2).reshape(b, t, c))
            return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(vocab, width), nn.Embedding(seq, width)
            nn.init.normal_(self.wte.weight, std=0.02)  # GPT-2's (and autotmc's) N(0, 0.02)
            nn.init.normal_(self.wpe.weight, std=0.02)
            self.h = nn.ModuleList(Block() for _ in range(layers))
            self.ln_f = nn.LayerNorm(width)

        def forward(self, idx):
            x = self.wte(idx) + self.wpe.weight[:idx.shape[1]]
            for block in self.h:
                x = block(x)
            return self.ln_f(x) @ self.wte.weight.T  # tied to the token embedding

    return GPT()


def build_model(nn, args):
    if args.model == "gpt":
        return gpt_model(args.layers, args.heads, args.width, args.vocab, args.seq), None, args.vocab
    if args.model == "mlp":
        layers = []
        for _ in range(3):
            layers += [nn.Linear(4096, 4096), nn.ReLU()]
        layers += [nn.Linear(4096, 10), nn.ReLU()]
        return nn.Sequential(*layers), (args.batch, 4096), 10
    if args.model == "test_vgg":
        def stage(cin, cout):
            return [nn.Conv2d(cin, cout, 3, padding=1), nn.ReLU(),
                    nn.Conv2d(cout, cout, 3, padding=1), nn.ReLU(),
                    nn.MaxPool2d(2)]
        s = args.size
        layers = stage(3, 16) + stage(16, 32) + stage(32, 64)
        layers += [nn.Flatten(),
                   nn.Linear(64 * (s // 8) * (s // 8), 128), nn.ReLU(),
                   nn.Linear(128, args.classes)]
        return nn.Sequential(*layers), (args.batch, 3, s, s), args.classes
    raise SystemExit(f"torch_step.py: unknown model {args.model!r}")


DEFAULTS = {  # the .net files' defaults: batch, lr, momentum
    "mlp": (16, 0.005, 0.0),
    "test_vgg": (8, 0.01, 0.9),
    "gpt": (8, 0.0006, 0.0),
}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, choices=sorted(DEFAULTS))
    p.add_argument("--batch", type=int)
    p.add_argument("--lr", type=float)
    p.add_argument("--momentum", type=float)
    p.add_argument("--size", type=int, default=32, help="test_vgg image size")
    p.add_argument("--classes", type=int, default=10, help="test_vgg classes")
    p.add_argument("--layers", type=int, default=12, help="gpt: blocks")
    p.add_argument("--heads", type=int, default=12, help="gpt: attention heads")
    p.add_argument("--width", type=int, default=768, help="gpt: embedding width")
    p.add_argument("--vocab", type=int, default=50257, help="gpt: vocabulary")
    p.add_argument("--seq", type=int, default=1024, help="gpt: positions")
    p.add_argument("--beta2", type=float, default=0.95, help="gpt: AdamW's beta2")
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--iters", type=int, default=20, help="timed steps")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--precision", default="fp32", choices=["fp32", "bf16"],
                   help="bf16: forward and loss under torch.autocast('cpu', dtype=torch.bfloat16)")
    p.add_argument("--compile", action="store_true",
                   help="torch.compile the model (inductor: forward and backward; the warm-up steps compile)")
    p.add_argument("--ddp", action="store_true",
                   help="DistributedDataParallel over gloo, started by torchrun (each rank --batch; rank 0 prints)")
    p.add_argument("--profile", metavar="FILE",
                   help="after the timed steps, run --iters more under "
                        "torch.profiler and write its operator table to FILE")
    args = p.parse_args()
    batch, lr, momentum = DEFAULTS[args.model]
    args.batch = args.batch or batch
    args.lr = lr if args.lr is None else args.lr
    args.momentum = momentum if args.momentum is None else args.momentum

    import torch  # after parsing, so that --help is quick
    from torch import nn
    import torch.nn.functional as F

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    model, xshape, classes = build_model(nn, args)
    model.train()
    forward = model
    rank, ranks = 0, 1
    if args.ddp:
        import torch.distributed as dist
        dist.init_process_group("gloo")
        rank, ranks = dist.get_rank(), dist.get_world_size()
        torch.manual_seed(args.seed + rank)  # each rank's batch its own (DDP broadcasts rank 0's weights)
        forward = torch.nn.parallel.DistributedDataParallel(forward)
    if args.compile:  # the DDP module compiled, as PyTorch advises: graphs split at its buckets (DDPOptimizer)
        forward = torch.compile(forward)
    if args.model == "gpt":
        x = torch.randint(0, args.vocab, (args.batch, args.seq))
        y = torch.randint(0, args.vocab, (args.batch, args.seq))
        opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, args.beta2), weight_decay=0.1)
    else:
        x = torch.randn(*xshape)
        y = torch.randint(0, classes, (args.batch,))
        opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)

    def step():
        opt.zero_grad()
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16, enabled=args.precision == "bf16"):
            out = forward(x)
            loss = F.cross_entropy(out.reshape(-1, classes), y.reshape(-1))
        loss.backward()
        if args.model == "gpt":
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss

    losses, times = [], []
    for i in range(args.warmup + args.iters):
        t0 = time.perf_counter()
        loss = step()
        t1 = time.perf_counter()
        losses.append(loss.item())
        if i >= args.warmup:
            times.append(t1 - t0)

    if args.profile:
        from torch.profiler import profile, ProfilerActivity
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            for _ in range(args.iters):
                step()
        with open(args.profile, "w") as f:
            f.write(f"# torch {torch.__version__}, {args.model} batch {args.batch}, "
                    f"{args.threads} threads, {args.iters} steps under torch.profiler\n")
            f.write(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=30))
            f.write("\n")

    if rank != 0:
        return 0
    print(json.dumps({
        "framework": "pytorch",
        "ranks": ranks,
        "model": args.model,
        "precision": args.precision,
        "compiled": args.compile,
        "batch": args.batch,
        "lr": args.lr,
        "momentum": args.momentum,
        "threads": torch.get_num_threads(),
        "parameters": sum(q.numel() for q in model.parameters()),
        "warmup": args.warmup,
        "iterations": args.iters,
        "median": statistics.median(times),
        "min": min(times),
        "max": max(times),
        "step_times": times,
        "losses": losses,
        "torch": torch.__version__,
        "torch_mkldnn": torch.backends.mkldnn.is_available(),
        "python": platform.python_version(),
    }))


if __name__ == "__main__":
    sys.exit(main())
