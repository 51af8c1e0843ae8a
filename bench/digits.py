#!/usr/bin/env python3
"""scikit-learn's handwritten digits as an autotmc dataset.

    bench/digits.py prepare DIR     write DIR/train and DIR/val

The 1,797 8x8 images (Debian's python3-sklearn ships them; nothing is
downloaded) become x.npy, float32 [N, 1, 8, 8] scaled to [0, 1], and y.npy,
int64 class ids [N]. The split is fixed: a permutation drawn with NumPy's
RandomState(0); its first 1,497 images train, the other 300 validate.
examples/digits.net trains on it:

    autotmc run examples/digits.net --data DIR/train --epochs 20
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


def main(argv):
    if len(argv) != 3 or argv[1] != "prepare":
        print(__doc__.strip(), file=sys.stderr)
        return 2
    prepare(argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
