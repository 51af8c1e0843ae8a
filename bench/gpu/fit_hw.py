#!/usr/bin/env python3
"""Fit a hw file's per-op kernel rates to the measured GPU profiles.

For every profile bench/gpu/profiles/MODEL-bBATCH.gpu.tsv, the all-fast
step of MODEL is planned three ways with `autotmc schedule --json`:

  * from the profile (--gpu-profile): each kernel's measured time;
  * with a hw file whose only limit is the fast tier's bandwidth: each
    kernel's bytes, as seconds at that bandwidth;
  * with a hw file whose only limit is 1 GFLOP/s: each kernel's FLOPs.

For each op it then fits the hw model's kernel time,

    launch + max(FLOPs / flops.OP, bytes / (bandwidth * bandwidth.OP)),

by grid search over flops.OP and bandwidth.OP for the least squared
relative error, weighted by each kernel's measured time (what the step
sums), and over the launch time for the least error of all ops; then
scales each op's two rates so that its kernels' modeled times sum to
their measured ones. Kernels measured before their op's kernel was
rewritten (STALE) are left out of the fit and of the comparison. It prints, per model, the all-fast step from the profile against
the fitted model's and the roofline hw file's, once fitted on every
profile and once leaving that model's profile out, and writes the hw file
(--out) from a template (--base) with the fitted lines.

  bench/gpu/fit_hw.py --base bench/gpu/h200-pcie5.hw.in --out hw/h200-pcie5.hw
  bench/gpu/fit_hw.py --check hw/h200-pcie5.hw --within 0.25
"""
import argparse
import glob
import json
import math
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))

TIERS = """[fast]
read_bandwidth = {bw}
write_bandwidth = {bw}
[slow]
read_bandwidth = 50 GB/s
write_bandwidth = 50 GB/s
[compute]
flops = {flops}
launch = 0 us
"""


def schedule(autotmc, model, batch, extra):
    size = ["-D", "size=299"] if model == "inception_v3" else []
    cmd = [autotmc, "schedule", os.path.join(TOP, "examples", model + ".net"), "-D", "batch=" + batch, *size,
           "--backend", "gpu", "--optimizer", "all-fast", "--json", *extra]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def kernels(autotmc, profile, bw, work):
    """(model, [(op, measured s, bytes s at bw, flops)]) for one profile."""
    name = os.path.basename(profile)[: -len(".gpu.tsv")]
    model, batch = name.rsplit("-b", 1)
    mem = os.path.join(work, "mem.hw")
    fl = os.path.join(work, "flops.hw")
    with open(mem, "w") as f:
        f.write(TIERS.format(bw="%g GB/s" % (bw / 1e9), flops="1e19 FLOP/s"))
    with open(fl, "w") as f:
        f.write(TIERS.format(bw="1000 TB/s", flops="1 GFLOP/s"))
    meas = schedule(autotmc, model, batch, ["--gpu-profile", profile])
    tb = schedule(autotmc, model, batch, ["--hw", mem])
    tf = schedule(autotmc, model, batch, ["--hw", fl])
    rows = []
    for a, b, c in zip(meas["steps"], tb["steps"], tf["steps"]):
        assert a["kernel"] == b["kernel"] == c["kernel"]
        rows.append((a["op"], a["kernel_seconds"], b["kernel_seconds"], c["kernel_seconds"] * 1e9))
    return name, rows


def model_time(r, launch, flops, eff):
    op, _, tb, fl = r
    return launch + max(fl / flops if fl > 0 else 0.0, tb / eff)


GRID_FLOPS = [x * 1e12 for x in (1, 2, 3, 4, 6, 8, 10, 12, 15, 20, 25, 30, 35, 40, 45, 50, 60, 70, 80, 100, 130)]
GRID_EFF = [0.02, 0.03, 0.05, 0.07, 0.1, 0.13, 0.16, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]


def distinct(rows):
    """{op: [(row, how many times it occurs)]}: a kernel repeated in the step is fitted once, weighted."""
    count = {}
    for r in rows:
        count[r] = count.get(r, 0) + 1
    ops = {}
    for r, c in count.items():
        ops.setdefault(r[0], []).append((r, c))
    return ops


def error(rcs, launch, fr, ef):
    return sum(c * m * ((model_time(r, launch, fr, ef) - m) / m) ** 2 for r, c in rcs for m in [r[1]] if m > 0)


def fit(rows, launch):
    """{op: (flops, eff)} minimizing the time-weighted squared relative error."""
    out = {}
    for op, rcs in sorted(distinct(rows).items()):
        best = None
        for fr in GRID_FLOPS if any(r[3] > 0 for r, _ in rcs) else GRID_FLOPS[-1:]:
            for ef in GRID_EFF:
                err = error(rcs, launch, fr, ef)
                if best is None or err < best[0]:
                    best = (err, fr, ef)
        out[op] = best[1:]
    return out


# Kernels measured before their op's kernel was rewritten, left out of the
# fit and of the comparison: none since every profile's `add` lines were
# measured again (profiles/README.md).
STALE = []

LAUNCH = [x * 1e-6 for x in (1, 2, 3, 4, 5, 6, 8)]


def fit_launch(rows):
    """(launch, {op: (flops, eff)}): the launch time of LAUNCH whose per-op fit has the least error."""
    best = None
    for launch in LAUNCH:
        params = fit(rows, launch)
        err = sum(error(rcs, launch, *params[op]) for op, rcs in distinct(rows).items())
        if best is None or err < best[0]:
            best = (err, launch, params)
    return best[1:]


def calibrate(rows):
    """fit_launch, then each op's rates scaled so that its kernels' modeled time sums to their measured time
    (the fit of relative errors alone underestimated every model's step by 7-27%)."""
    launch, params = fit_launch(rows)
    out = {}
    for op, (fr, ef) in params.items():
        rs = [r for r in rows if r[0] == op]
        meas = sum(r[1] for r in rs) - launch * len(rs)
        model = sum(model_time(r, launch, fr, ef) for r in rs) - launch * len(rs)
        k = meas / model if model > 0 and meas > 0 else 1.0
        out[op] = (fr / k, min(1.0, ef / k))
    return launch, out


def step(rows, launch, params, default):
    return sum(model_time(r, launch, *params.get(r[0], default)) for r in rows)


def kernel_sum(d, name):
    return sum(st["kernel_seconds"] for st in d["steps"] if (name, st["op"]) not in STALE)


def check(a):
    """0 if every profile's all-fast step modeled by a.check is within a.within of the measured one."""
    bad = 0
    for p in sorted(glob.glob(a.profiles + "/*-b*.gpu.tsv")):
        name = os.path.basename(p)[: -len(".gpu.tsv")]
        model, batch = name.rsplit("-b", 1)
        meas = kernel_sum(schedule(a.autotmc, model, batch, ["--gpu-profile", p]), name)
        hw = kernel_sum(schedule(a.autotmc, model, batch, ["--hw", a.check]), name)
        ok = abs(hw / meas - 1) <= a.within
        bad += not ok
        print("  %s: %s: measured %.1f ms, %s %.1f ms (x%.2f)" % ("ok" if ok else "FAIL", name, meas * 1e3,
                                                                os.path.basename(a.check), hw * 1e3, hw / meas))
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--autotmc", default=os.path.join(TOP, "autotmc"))
    ap.add_argument("--profiles", default=os.path.join(HERE, "profiles"))
    ap.add_argument("--bandwidth", type=float, default=4.8e12, help="the fast tier's bandwidth, B/s (H200: 4.8 TB/s)")
    ap.add_argument("--flops", type=float, default=67e12, help="FLOP/s of an op not fitted (FP32 peak)")
    ap.add_argument("--roofline", default=os.path.join(TOP, "hw", "h100-pcie5.hw"), help="hw file to compare with")
    ap.add_argument("--base", help="hw file template: its text, then the fitted lines, makes --out")
    ap.add_argument("--out", help="the hw file to write")
    ap.add_argument("--check", metavar="HW", help="only compare HW's all-fast steps with the profiles' and fail "
                    "where one is off by more than --within")
    ap.add_argument("--within", type=float, default=0.25, help="the largest relative error --check accepts")
    a = ap.parse_args()
    if a.check:
        sys.exit(check(a))
    with tempfile.TemporaryDirectory() as work:
        data = dict(kernels(a.autotmc, p, a.bandwidth, work) for p in sorted(glob.glob(a.profiles + "/*-b*.gpu.tsv")))
    for name, op in STALE:  # neither fitted nor compared
        if name in data:
            data[name] = [r for r in data[name] if r[0] != op]
    roof = {}
    for name in data:
        model, batch = name.rsplit("-b", 1)
        steps = schedule(a.autotmc, model, batch, ["--hw", a.roofline])["steps"]
        roof[name] = sum(st["kernel_seconds"] for st in steps if (name, st["op"]) not in STALE)
    launch, every = calibrate([r for rows in data.values() for r in rows])
    default = (a.flops, 1.0)
    print("| profile | measured kernels (ms) | %s (ms) | ratio | fitted on all (ms) | ratio | "
          "fitted without it (ms) | ratio |" % os.path.basename(a.roofline))
    print("|---|---|---|---|---|---|---|---|")
    worst_all = worst_out = 0.0
    for name, rows in data.items():
        meas = sum(r[1] for r in rows)
        fit_all = step(rows, launch, every, default)
        olaunch, others = calibrate([r for n, rs in data.items() if n != name for r in rs])
        fit_out = step(rows, olaunch, others, default)
        worst_all = max(worst_all, abs(fit_all / meas - 1))
        worst_out = max(worst_out, abs(fit_out / meas - 1))
        print("| %s | %.1f | %.1f | %.2f | %.1f | %.2f | %.1f | %.2f |" % (
            name, meas * 1e3, roof[name] * 1e3, roof[name] / meas, fit_all * 1e3, fit_all / meas,
            fit_out * 1e3, fit_out / meas))
    print("\nworst step error: %.1f%% fitted on all, %.1f%% left out" % (100 * worst_all, 100 * worst_out))
    print("\n| op | flops (TFLOP/s) | bandwidth (fraction) | kernels | measured (ms, all profiles) |")
    print("|---|---|---|---|---|")
    print("\nlaunch: %g us" % (launch * 1e6))
    lines = ["launch = %g us" % (launch * 1e6)]
    for op, (fr, ef) in every.items():
        rs = [r for rows in data.values() for r in rows if r[0] == op]
        print("| %s | %.4g | %.3g | %d | %.1f |" % (op, fr / 1e12, ef, len(rs), sum(r[1] for r in rs) * 1e3))
        if any(r[3] > 0 for r in rs):
            lines.append("flops.%s = %.4g TFLOP/s" % (op, fr / 1e12))
        lines.append("bandwidth.%s = %.3g" % (op, ef))
    if a.out:
        text = open(a.base).read() if a.base else ""
        with open(a.out, "w") as f:
            f.write(text.rstrip("\n") + "\n" + "\n".join(lines) + "\n")
        print("\nwrote " + a.out, file=sys.stderr)


if __name__ == "__main__":
    main()
