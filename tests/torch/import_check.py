#!/usr/bin/env python3
"""`autotmc import` against PyTorch: export a model to ONNX, import it,
train both 3 SGD steps from the same weights on the same batch.

    import_check.py AUTOTMC MODEL WORKDIR [--run] [--size S] [--batch B] [--dynamic]

MODEL is a torchvision classification model (resnet18, vgg11_bn, ...) built
with 10 classes, or `tiny` (a small network of the blocks import knows:
a residual, a concat, a gate, and x.view(N, -1)). It is exported in training mode
(torch.onnx.export(..., training=TrainingMode.TRAINING,
do_constant_folding=False): batchnorm normalises by the batch and the
initializers are the parameters and running statistics), with its dropout
layers at p = 0 (the masks are random in both). Then:

  - `autotmc import` writes WORKDIR/MODEL.net and its weights;
  - `autotmc check` prints the parameter count PyTorch counts;
  - `autotmc interpret` (with --run also the compiled CPU program)
    trains 3 steps of SGD at lr 0.001 from the exported weights on the
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

ITERS, LR, TOL = 3, 0.001, 1e-4


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


def build(name):
    torch.manual_seed(0)
    if name == "tiny":
        m = Tiny()
    else:
        import torchvision
        m = getattr(torchvision.models, name)(num_classes=10)
    for mod in m.modules():  # random masks differ: no dropout, no stochastic depth
        if isinstance(mod, torch.nn.Dropout) or type(mod).__name__ == "StochasticDepth":
            mod.p = 0.0
    return m


def train(m, x, y):
    """ITERS steps of SGD: the losses, and the final state by name (num_batches_tracked left out)"""
    opt = torch.optim.SGD(m.parameters(), lr=LR)
    losses = []
    for _ in range(ITERS):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(m(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, {k: v.detach().double().numpy() for k, v in m.state_dict().items()
                    if not k.endswith("num_batches_tracked")}


def main():
    args = [a for i, a in enumerate(sys.argv[1:]) if not a.startswith("--")
            and sys.argv[i] not in ("--size", "--batch")]
    flags = sys.argv[1:]
    autotmc, name, work = args[0], args[1], args[2]
    size = int(flags[flags.index("--size") + 1]) if "--size" in flags else 64
    batch = int(flags[flags.index("--batch") + 1]) if "--batch" in flags else 2
    os.makedirs(work, exist_ok=True)
    m = build(name).train()
    torch.manual_seed(1)
    x = torch.randn(batch, 3, size, size)
    y = torch.randint(0, 10, (batch,))
    onnx = f"{work}/{name}.onnx"
    # --dynamic: the batch symbolic, as users export for serving (a view's size then comes from Shape(x))
    dynamic = {"x": {0: "batch"}, "logits": {0: "batch"}} if "--dynamic" in flags else None
    torch.onnx.export(m, x, onnx, training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                      input_names=["x"], output_names=["logits"], dynamic_axes=dynamic)
    np.save(f"{work}/x.npy", x.numpy())
    np.save(f"{work}/y.npy", y.numpy().astype(np.int64))
    net, weights = f"{work}/{name}.net", f"{work}/{name}.safetensors"
    run([autotmc, "import", onnx, "-o", net, "--weights", weights])
    # the learning rate of the test (the import writes sgd(lr = 0.01)): small enough that 3 steps of a deep
    # network with batch statistics of few elements stay where float32 rounding does not decide them
    text = open(net).read()
    open(net, "w").write(text.replace("optimizer = sgd(lr = 0.01)", f"optimizer = sgd(lr = {LR})"))
    bad = 0

    params = sum(p.numel() for p in m.parameters())
    got = re.search(r"^parameters: (\d+)", run([autotmc, "check", net]), re.M)
    ok = got and int(got.group(1)) == params
    print(f"{'ok' if ok else 'FAIL'}: {name}: {got.group(1) if got else '?'} parameters, PyTorch {params}")
    bad += not ok

    # PyTorch: the same module (exporting does not change it), 3 steps of SGD; again in float64 for the rule below
    state = {k: v.clone() for k, v in m.state_dict().items()}
    theirs, final = train(m, x, y)
    m.load_state_dict(state)
    exact, exact_final = train(m.double(), x.double(), y)
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
        ok = not missing and worst <= TOL
        print(f"{'ok' if ok else 'FAIL'}: {name} {cmd}: {len(final)} final tensors within {worst:.2e} of their "
              f"largest value from PyTorch's (the farthest: {worst_name})" + (f", {len(close)} more as close to float64 as PyTorch's" if close else "")
              + (f"; not found: {missing[:5]}" if missing else ""))
        bad += not ok
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
