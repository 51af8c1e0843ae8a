#!/usr/bin/env python3
"""Judge a program's training against PyTorch's reference, without PyTorch.

    agree.py REFDIR RESULTS.json FINAL.safetensors [RTOL]

REFDIR is what `torch_check.py ... --reference` wrote: ref.json (PyTorch's
losses in float32 and float64) and torch-f32.safetensors and
torch-f64.safetensors (its final tensors).  RESULTS.json is the results
record of a program trained from REFDIR's init.safetensors, x.npy and
y.npy for ref.json's iters steps (`PROG --iters N --weights ... --input ...
--labels ... --results RESULTS.json --save-weights FINAL.safetensors`).

The rules are torch_check.py's for float32: every loss within RTOL
(default ref.json's) of PyTorch float32's, relative; every final tensor
within RTOL in max-norm (||a - b||_inf <= RTOL ||b||_inf), or, where it is
not, as accurate as PyTorch's float32: against float64, within twice
PyTorch float32's own difference.  And every tensor of the reference is
saved, none more.

Standard library only: it runs on a GPU machine whose Python may lack
NumPy.  Exit status 0 agreement, 1 disagreement, 2 unreadable input.
"""
import json
import struct
import sys
from array import array


def read_safetensors(path):
    """name -> (shape, array of float) for F32 and F64 tensors"""
    with open(path, "rb") as f:
        data = f.read()
    (hlen,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + hlen])
    body = data[8 + hlen:]
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        code = {"F32": "f", "F64": "d"}.get(e["dtype"])
        if code is None:
            raise ValueError(f"{path}: {name} is {e['dtype']}, not F32 or F64")
        a = array(code)
        b, en = e["data_offsets"]
        a.frombytes(body[b:en])
        if sys.byteorder != "little":
            a.byteswap()
        out[name] = (e["shape"], a)
    return out


def relative(a, b):
    """||a - b||_inf / ||b||_inf"""
    diff = max((abs(x - y) for x, y in zip(a, b)), default=0.0)
    return diff / max(max((abs(y) for y in b), default=0.0), 1e-30)


def main():
    if len(sys.argv) not in (4, 5):
        sys.exit(__doc__)
    refdir, results, final_path = sys.argv[1:4]
    try:
        ref = json.load(open(f"{refdir}/ref.json"))
        rtol = float(sys.argv[4]) if len(sys.argv) > 4 else ref["rtol"]
        ours = json.load(open(results))["losses"]
        final = read_safetensors(final_path)
        t32 = read_safetensors(f"{refdir}/torch-f32.safetensors")
        t64 = read_safetensors(f"{refdir}/torch-f64.safetensors")
    except (OSError, ValueError, KeyError) as e:
        print(f"agree.py: {e}", file=sys.stderr)
        return 2
    bad = 0
    theirs = ref["losses_f32"]
    for i, (a, b) in enumerate(zip(ours, theirs)):
        rel = abs(a - b) / abs(b)
        print(f"step {i + 1}: program {a:.9g}  pytorch {b:.9g}  relative difference {rel:.2e}")
        bad += rel > rtol
    if len(ours) != len(theirs):
        print(f"the program trained {len(ours)} steps, the reference {len(theirs)}")
        bad += 1
    if sorted(final) != sorted(t32):
        print(f"saved tensors differ: only the program's {sorted(set(final) - set(t32))}, "
              f"only the reference's {sorted(set(t32) - set(final))}")
        bad += 1
    worst = (0.0, "")
    for name in sorted(set(final) & set(t32)):
        (shape, v), (wshape, w), (_, e) = final[name], t32[name], t64[name]
        if shape != wshape:
            print(f"{name}: shape {shape}, the reference's {wshape}")
            bad += 1
            continue
        rel = relative(v, w)
        if rel > rtol:
            ours64, theirs64 = relative(v, e), relative(w, e)
            print(f"{name}: relative difference {rel:.2e}; against float64 program {ours64:.2e}, "
                  f"pytorch {theirs64:.2e}")
            if ours64 <= 2 * theirs64:
                rel = 0.0
        worst = max(worst, (rel, name))
        bad += rel > rtol
    print(f"{len(final)} tensors after {len(ours)} steps: largest relative difference {worst[0]:.2e} ({worst[1]})")
    print("agreement" if not bad else f"DISAGREEMENT beyond {rtol:g}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
