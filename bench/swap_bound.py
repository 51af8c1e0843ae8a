#!/usr/bin/env python3
"""swap_bound.py - a lower bound on a training step that only swaps, from its all-fast schedule.

    autotmc schedule MODEL.net --backend gpu --gpu-profile P.gpu.tsv --optimizer all-fast --json > af.json
    python3 bench/swap_bound.py af.json 1.44GiB [--bandwidth 55.3]

At each step i of the all-fast schedule, the bytes live there beyond the
limit (less every tensor no kernel of the step produces: weights,
optimizer state and the batch, which may stay in host memory from one
step to the next), E_i, must be in host memory at step i. With swaps
alone, they leave the device after the step begins and come back before
it ends, over a link of B bytes/s each way, while the kernels before and
after step i take at least their all-fast times C_before and C_after:

    T >= max over i of  max(C_before(i), E_i / B) + max(C_after(i), E_i / B)

It is a bound on `async`-style plans (no recomputation), not on `auto`'s:
where it is far above all-fast, no plan reaches all-fast's time without
recomputing. It assumes each direction at its own full bandwidth (both at
once are slower on a PCIe link), no workspace, no fragmentation, and every
kernel at its fastest time, so the true optimum is higher.
"""
import argparse
import json
import sys

UNITS = {"": 1, "b": 1, "kib": 2**10, "mib": 2**20, "gib": 2**30, "kb": 1e3, "mb": 1e6, "gb": 1e9}


def parse_bytes(text):
    t = text.strip().lower()
    num = t.rstrip("abcdefghijklmnopqrstuvwxyz")
    unit = t[len(num):]
    if unit not in UNITS or not num:
        raise argparse.ArgumentTypeError(f"'{text}' is not a size (e.g. 1.5GiB, 800MiB, 2e9)")
    return float(num) * UNITS[unit]


def bound(d, limit, bw):
    steps = d["steps"]
    live = [sum(x) for x in d["tier_bytes"]]
    produced = set()
    for s in steps:
        if s["op"] in ("sgd", "sgd_momentum", "adamw"):
            continue
        for a in s["arguments"]:
            if a["role"] == "output":
                produced.add(a["tensor"])
    size = {}
    for s in steps:
        for a in s["arguments"]:
            size[a["tensor"]] = a["bytes"]
    resident = sum(b for t, b in size.items() if t not in produced)
    times = [s["step_seconds"] for s in steps]
    total = sum(times)
    best = (total, None, 0.0)
    before = 0.0
    for i, s in enumerate(steps):
        excess = max(0.0, live[i] - resident - limit)
        t = max(before, excess / bw) + max(total - before, excess / bw)
        if t > best[0]:
            best = (t, s, excess)
        before += times[i]
    return total, best, resident


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("schedule", help="autotmc schedule --optimizer all-fast --json output")
    ap.add_argument("limit", type=parse_bytes, help="the fast tier's limit (e.g. 1.44GiB)")
    ap.add_argument("--bandwidth", type=float, default=55.3, help="the link's GB/s each way (default 55.3: "
                    "the H200's measured 1 GiB copies)")
    a = ap.parse_args()
    try:
        d = json.load(open(a.schedule))
        total, (t, step, excess), resident = bound(d, a.limit, a.bandwidth * 1e9)
    except (OSError, ValueError, KeyError) as e:
        print(f"swap_bound.py: {a.schedule}: {e}", file=sys.stderr)
        return 1
    where = f" at step {step['step']} ({step['kernel']}: {excess / 2**30:.2f} GiB beyond the limit)" if step else ""
    print(f"all-fast {total * 1e3:.1f} ms; limit {a.limit / 2**30:.2f} GiB, {resident / 2**30:.2f} GiB never "
          f"produced in the step; swaps alone: at least {t * 1e3:.1f} ms ({t / total:.3f}x all-fast){where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
