#!/usr/bin/python3
"""scikit-learn's handwritten digits as an autotmc dataset.

    bench/digits.py prepare DIR             write DIR/train and DIR/val
    bench/digits.py accuracy DIR W          PyTorch's eval-mode loss and accuracy
                                            of examples/digits.net's weights W
                                            (saved by --save-weights) on DIR
    bench/digits.py torch DIR EPOCHS        the same model, split, optimizer and
                                            batches of 32 trained by PyTorch (its
                                            own initialisation and shuffle), then
                                            evaluated on DIR/val

The 1,797 8x8 images (Debian's python3-sklearn ships them; nothing is
downloaded) become x.npy, float32 [N, 1, 8, 8] scaled to [0, 1], and y.npy,
int64 class ids [N]. The split is fixed: a permutation drawn with NumPy's
RandomState(0); its first 1,497 images train, the other 300 validate.
examples/digits.net trains on it:

    autotmc run examples/digits.net --data DIR/train --epochs 20 --save-weights W

`accuracy` builds examples/digits.net as a torch.nn module, loads W (the
weights and batchnorm's running statistics), and evaluates it in eval mode
(running statistics) on DIR/val: PyTorch's cross-check of autotmc's own
evaluation (--val DIR, autotmc eval; tests/torch/test-digits.sh).
"""
import os
import sys

import numpy as np

VAL = 300


def load():
    from sklearn.datasets import load_digits
    d = load_digits()
    x = (d.data / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)
    y = d.target.astype(np.int64)
    order = np.random.RandomState(0).permutation(len(y))
    return x[order], y[order]


def prepare(out):
    x, y = load()
    n = len(y) - VAL
    for name, sl in (("train", slice(0, n)), ("val", slice(n, None))):
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        np.save(os.path.join(d, "x.npy"), np.ascontiguousarray(x[sl]))
        np.save(os.path.join(d, "y.npy"), np.ascontiguousarray(y[sl]))
        print(f"{d}: {len(y[sl])} samples")


def read_safetensors(path):
    import json
    import struct
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        body = f.read()
    out = {}
    for name, e in header.items():
        if name != "__metadata__":
            b, en = e["data_offsets"]
            out[name] = np.frombuffer(body[b:en], dtype="<f4").reshape(e["shape"]).copy()
    return out


def digits_model():
    import torch.nn as nn
    # examples/digits.net, layer by layer, under autotmc's names
    layers = [("conv1", nn.Conv2d(1, 16, 3, padding=1)), ("batchnorm1", nn.BatchNorm2d(16)), ("relu1", nn.ReLU()),
              ("conv2", nn.Conv2d(16, 32, 3, padding=1)), ("batchnorm2", nn.BatchNorm2d(32)), ("relu2", nn.ReLU()),
              ("maxpool1", nn.MaxPool2d(2)),
              ("conv3", nn.Conv2d(32, 32, 3, padding=1)), ("batchnorm3", nn.BatchNorm2d(32)), ("relu3", nn.ReLU()),
              ("maxpool2", nn.MaxPool2d(2)), ("flatten", nn.Flatten()),
              ("dense1", nn.Linear(128, 64)), ("relu4", nn.ReLU()), ("dense2", nn.Linear(64, 10))]
    from collections import OrderedDict
    return nn.Sequential(OrderedDict(layers))


def evaluate(model, data):
    import torch
    model.eval()
    x = torch.tensor(np.load(os.path.join(data, "x.npy")))
    y = torch.tensor(np.load(os.path.join(data, "y.npy")))
    with torch.no_grad():
        z = model(x)
    loss = torch.nn.functional.cross_entropy(z, y).item()
    acc = (z.argmax(1) == y).float().mean().item()
    print(f"loss: {loss:.6g}")
    print(f"accuracy: {acc:.4f} ({int(round(acc * len(y)))} of {len(y)})")


def accuracy(data, weights):
    import torch
    model = digits_model()
    w = {k: torch.tensor(v.reshape(()) if k.endswith("num_batches_tracked") else v)
         for k, v in read_safetensors(weights).items()}
    model.load_state_dict(w)  # strict: every weight and statistic, nothing else
    evaluate(model, data)


def train_torch(data, epochs):
    import torch
    torch.manual_seed(0)
    torch.set_num_threads(os.cpu_count() or 1)
    model = digits_model()
    x = torch.tensor(np.load(os.path.join(data, "train", "x.npy")))
    y = torch.tensor(np.load(os.path.join(data, "train", "y.npy")))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    batch = 32
    for e in range(epochs):
        model.train()
        perm = torch.randperm(len(y))
        total = 0.0
        for b in range(len(y) // batch):  # the last partial batch dropped, as autotmc does
            idx = perm[b * batch:(b + 1) * batch]
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x[idx]), y[idx])
            loss.backward()
            opt.step()
            total += loss.item()
        print(f"epoch {e + 1}: mean loss {total / (len(y) // batch):.6g}")
    evaluate(model, os.path.join(data, "val"))


def main(argv):
    if len(argv) == 3 and argv[1] == "prepare":
        prepare(argv[2])
    elif len(argv) == 4 and argv[1] == "accuracy":
        accuracy(argv[2], argv[3])
    elif len(argv) == 4 and argv[1] == "torch":
        train_torch(argv[2], int(argv[3]))
    else:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
