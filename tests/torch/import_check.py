#!/usr/bin/env python3
"""`autotmc import` against PyTorch: export a model to ONNX, import it,
train both 3 SGD steps from the same weights on the same batch.

    import_check.py AUTOTMC MODEL WORKDIR [--run] [--size S] [--batch B] [--dynamic] [--fold]
                    [--opset N] [--refused MESSAGE]

MODEL is a torchvision classification model (resnet18, vgg11_bn, ...) built
with 10 classes, `tiny` (a small network of the blocks import knows:
a residual, a concat, a gate, and x.view(N, -1)), or `gpt` (nanoGPT's model,
small: 12 of 16 positions, a causal mask cut from a buffer, the output tied
to the token embedding; `gpt-encoder` without the mask; `gpt-erf` and
`gpt-unscaled`, which import refuses). It is exported at opset 17 (--opset)
in training mode (torch.onnx.export(..., training=TrainingMode.TRAINING,
do_constant_folding=False): batchnorm normalises by the batch and the
initializers are the parameters and running statistics; --fold: folding
on, as torch.onnx.export's default), with its dropout layers at p = 0 (the
masks are random in both). With --refused, import must refuse the file
with MESSAGE in its error, writing nothing. Otherwise:

  - `autotmc import` writes WORKDIR/MODEL.net and its weights;
  - `autotmc check` prints the parameter count PyTorch counts;
  - `autotmc interpret` (with --run also the compiled CPU program)
    trains 3 steps of SGD at lr 0.001 (a GPT: 0.1) from the exported weights on the
    exported batch, and PyTorch trains the same module the same way:
    every loss within 1e-4 relative, and every final weight and running
    statistic within 1e-4 of its tensor's largest value.

Prints one line a check; exits 1 if any fails.
"""
import json
import os
import re
import struct
import subprocess
import sys

import numpy as np
import torch

from torch_check import read_safetensors  # tests/torch/torch_check.py, beside this script

ITERS, TOL = 3, 1e-4
LR = 0.001  # 0.1 for a GPT (no batch statistics; a step large enough that a wrong gradient shows)


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {p.returncode}\n{p.stdout}{p.stderr}")
    return p.stdout


def metadata(path):
    """a safetensors header's __metadata__ (import's: .net name -> ONNX initializer)"""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        return json.loads(f.read(n)).get("__metadata__", {})


class Tiny(torch.nn.Module):
    """A residual block, a concat of two branches, a squeeze-excite gate and a view to [N, -1]."""

    def __init__(self):
        super().__init__()
        nn = torch.nn
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU())
        self.body = nn.Sequential(nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU())
        self.left = nn.Conv2d(8, 4, 1)
        self.right = nn.Sequential(nn.Conv2d(8, 4, 3, padding=1), nn.ReLU())
        self.se = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(8, 4, 1), nn.ReLU(), nn.Conv2d(4, 8, 1),
                                nn.Hardsigmoid())
        self.pool = nn.Sequential(nn.MaxPool2d(2), nn.AdaptiveAvgPool2d(1))
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        x = self.stem(x)
        x = x + self.body(x)
        x = torch.cat([self.left(x), self.right(x)], 1)
        x = self.pool(x * self.se(x))
        return self.fc(x.view(x.size(0), -1))  # a view, as user code writes it: a Reshape


class Attention(torch.nn.Module):
    """nanoGPT's causal self-attention, as its model.py writes it without flash attention"""

    def __init__(self, width, heads, seq, variant):
        super().__init__()
        self.c_attn, self.c_proj = torch.nn.Linear(width, 3 * width), torch.nn.Linear(width, width)
        self.heads, self.width, self.variant = heads, width, variant
        self.attn_dropout, self.resid_dropout = torch.nn.Dropout(0.0), torch.nn.Dropout(0.0)  # (exported, at 0)
        self.register_buffer("bias", torch.tril(torch.ones(seq, seq)).view(1, 1, seq, seq))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.width, dim=2)
        k = k.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        q = q.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        v = v.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        att = q @ k.transpose(-2, -1)
        if self.variant != "unscaled":
            att = att * (1.0 / (k.size(-1) ** 0.5))
        if self.variant != "encoder":  # an encoder's attention: every position sees every other
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        y = self.attn_dropout(torch.nn.functional.softmax(att, dim=-1)) @ v
        return self.resid_dropout(self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C)))


class Block(torch.nn.Module):
    def __init__(self, width, heads, seq, variant):
        super().__init__()
        nn = torch.nn
        self.ln_1, self.ln_2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.attn = Attention(width, heads, seq, variant)
        self.mlp = nn.Sequential()
        self.mlp.c_fc = nn.Linear(width, 4 * width)
        self.mlp.gelu = nn.GELU() if variant == "erf" else nn.GELU(approximate="tanh")
        self.mlp.c_proj, self.mlp.dropout = nn.Linear(4 * width, width), nn.Dropout(0.0)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(torch.nn.Module):
    """nanoGPT's GPT (token and position embeddings, pre-norm blocks, the output tied to the token embedding)
    over blocks of 16 positions; variant: "" (as nanoGPT), "encoder" (no mask), "erf" (the exact GELU),
    "unscaled" (scores not scaled)"""

    def __init__(self, variant="", vocab=64, seq=16, layers=2, heads=2, width=32):
        super().__init__()
        nn = torch.nn
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab, width), wpe=nn.Embedding(seq, width),
            h=nn.ModuleList([Block(width, heads, seq, variant) for _ in range(layers)]), ln_f=nn.LayerNorm(width)))
        self.lm_head = nn.Linear(width, vocab, bias=False)
        self.transformer.wte.weight = self.lm_head.weight
        for mod in self.modules():  # layer norms other than 1 and 0, so that a mixed-up parameter shows
            if isinstance(mod, nn.LayerNorm):
                nn.init.normal_(mod.weight, 1.0, 0.1)
                nn.init.normal_(mod.bias, 0.0, 0.1)

    def forward(self, idx):
        pos = torch.arange(0, idx.size(1), dtype=torch.long, device=idx.device)
        x = self.transformer.wte(idx) + self.transformer.wpe(pos)
        for block in self.transformer.h:
            x = block(x)
        return self.lm_head(self.transformer.ln_f(x))


def build(name):
    torch.manual_seed(0)
    if name == "tiny":
        m = Tiny()
    elif name.startswith("gpt"):
        m = GPT(name[4:])
    else:
        import torchvision
        m = getattr(torchvision.models, name)(num_classes=10)
    for mod in m.modules():  # random masks differ: no dropout, no stochastic depth
        if isinstance(mod, torch.nn.Dropout) or type(mod).__name__ == "StochasticDepth":
            mod.p = 0.0
    return m


def train(m, x, y, lr):
    """ITERS steps of SGD: the losses, and the final parameters and running statistics by name"""
    opt = torch.optim.SGD(m.parameters(), lr=lr)
    losses = []
    for _ in range(ITERS):
        opt.zero_grad()
        out = m(x)
        loss = torch.nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    # the parameters (a tied one once) and batchnorm's running statistics; not other buffers (a causal mask)
    state = dict(m.named_parameters())
    state.update((k, v) for k, v in m.named_buffers() if k.endswith(("running_mean", "running_var")))
    return losses, {k: v.detach().double().numpy() for k, v in state.items()}


def main():
    args = [a for i, a in enumerate(sys.argv[1:]) if not a.startswith("--")
            and sys.argv[i] not in ("--size", "--batch", "--opset", "--refused")]
    flags = sys.argv[1:]
    autotmc, name, work = args[0], args[1], args[2]
    gpt = name.startswith("gpt")
    size = int(flags[flags.index("--size") + 1]) if "--size" in flags else 64
    batch = int(flags[flags.index("--batch") + 1]) if "--batch" in flags else 2
    os.makedirs(work, exist_ok=True)
    m = build(name).train()
    torch.manual_seed(1)
    if gpt:  # token ids, and a next token at every position: 12 of the 16 positions a block holds
        seq = 16 if "--fold" in flags else 12  # (folding keeps the position table's rows in use only)
        x = torch.randint(0, 64, (batch, seq))
        y = torch.randint(0, 64, (batch, seq))
    else:
        x = torch.randn(batch, 3, size, size)
        y = torch.randint(0, 10, (batch,))
    onnx = f"{work}/{name}.onnx"
    # --dynamic: the batch symbolic, as users export for serving (a view's size then comes from Shape(x))
    dynamic = {"x": {0: "batch"}, "logits": {0: "batch"}} if "--dynamic" in flags else None
    opset = int(flags[flags.index("--opset") + 1]) if "--opset" in flags else 17
    torch.onnx.export(m, x, onnx, training=torch.onnx.TrainingMode.TRAINING, do_constant_folding="--fold" in flags,
                      input_names=["x"], output_names=["logits"], dynamic_axes=dynamic, opset_version=opset)
    np.save(f"{work}/x.npy", x.numpy())
    np.save(f"{work}/y.npy", y.numpy().astype(np.int64))
    net, weights = f"{work}/{name}.net", f"{work}/{name}.safetensors"
    if "--refused" in flags:  # import must refuse the file with this message
        want = flags[flags.index("--refused") + 1]
        p = subprocess.run([autotmc, "import", onnx, "-o", net], capture_output=True, text=True)
        ok = p.returncode == 1 and want in p.stderr and not os.path.exists(net)
        print(f"{'ok' if ok else 'FAIL'}: {name} (opset {opset}) refused: {p.stderr.strip()[-300:]}")
        sys.exit(0 if ok else 1)
    run([autotmc, "import", onnx, "-o", net, "--weights", weights])
    # the learning rate of the test (the import writes sgd(lr = 0.01)): small enough that 3 steps of a deep
    # network with batch statistics of few elements stay where float32 rounding does not decide them
    text = open(net).read()
    lr = 0.1 if gpt else LR
    open(net, "w").write(text.replace("optimizer = sgd(lr = 0.01)", f"optimizer = sgd(lr = {lr})"))
    bad = 0

    params = sum(p.numel() for p in m.parameters())
    got = re.search(r"^parameters: (\d+)", run([autotmc, "check", net]), re.M)
    ok = got and int(got.group(1)) == params
    print(f"{'ok' if ok else 'FAIL'}: {name}: {got.group(1) if got else '?'} parameters, PyTorch {params}")
    bad += not ok

    # PyTorch: the same module (exporting does not change it), 3 steps of SGD; again in float64 for the rule below
    state = {k: v.clone() for k, v in m.state_dict().items()}
    theirs, final = train(m, x, y, lr)
    m.load_state_dict(state)
    exact, exact_final = train(m.double(), x if gpt else x.double(), y, lr)
    print(f"# PyTorch float32 {theirs}, float64 {exact}")
    onnx_name = metadata(weights)
    how = ["interpret"] + (["run"] if "--run" in flags else [])
    for cmd in how:
        out = run([autotmc, cmd, net, "-D", f"batch={batch}", "--iters", str(ITERS), "--weights", weights,
                   "--input", f"{work}/x.npy",
                   "--labels", f"{work}/y.npy", "--save-weights", f"{work}/{cmd}.safetensors"]
                  + (["--slow-dir", work] if cmd == "run" else []))
        ours = [float(v) for v in re.findall(r"^step \d+: loss (\S+)", out, re.M)]
        # within TOL of PyTorch's float32, or as close to float64 as PyTorch's float32 is (torch_check.py's rule:
        # a network whose batch statistics have few elements, MobileNetV2 at 64x64, is that sensitive)
        rel = max((abs(a - b) / abs(b) for a, b in zip(ours, theirs)), default=1.0)
        by_f64 = sum(abs(a - b) > TOL * abs(b) and abs(a - e) <= 2 * abs(b - e) for a, b, e in zip(ours, theirs, exact))
        ok = len(ours) == ITERS and all(abs(a - b) <= TOL * abs(b) or abs(a - e) <= 2 * abs(b - e)
                                        for a, b, e in zip(ours, theirs, exact))
        print(f"{'ok' if ok else 'FAIL'}: {name} {cmd}: losses {ours}, PyTorch {theirs}: relative {rel:.2e}"
              + (f" ({by_f64} as close to float64 as PyTorch's)" if by_f64 else ""))
        bad += not ok
        # the final tensors, by their PyTorch (ONNX initializer) names
        saved = read_safetensors(f"{work}/{cmd}.safetensors")
        by_torch = {onnx_name[k]: v for k, v in saved.items() if k in onnx_name}
        missing = [k for k in final if k not in by_torch]
        rels = {k: float(np.abs(by_torch[k] - v).max() / max(np.abs(v).max(), 1e-30))
                for k, v in final.items() if k in by_torch}
        close = {k for k, r in rels.items()
                 if r > TOL and np.abs(by_torch[k] - exact_final[k]).max() <= 2 * np.abs(final[k] - exact_final[k]).max()}
        worst, worst_name = max(((r, k) for k, r in rels.items() if k not in close), default=(0.0, ""))
        folded = "--fold" in flags  # constant folding renames the transposed weights (onnx::MatMul_N)
        ok = (not missing or folded) and worst <= TOL
        print(f"{'ok' if ok else 'FAIL'}: {name} {cmd}: {len(final)} final tensors within {worst:.2e} of their "
              f"largest value from PyTorch's (the farthest: {worst_name})" + (f", {len(close)} more as close to float64 as PyTorch's" if close else "")
              + (f"; {len(missing)} renamed by constant folding" if missing and folded else
                 f"; not found: {missing[:5]}" if missing else ""))
        bad += not ok
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
