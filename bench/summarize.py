#!/usr/bin/env python3
"""summarize.py - the table of bench/cpu_step.sh from the records it left in
bench/out/: step times (median, min, max over every timed step of every
round), the ratio PyTorch / autotmc, first-step losses, the background load,
and each workload's top kernels from the runtime's --profile-kernels table.
Writes summary.json and summary.md next to the records."""

import argparse
import glob
import json
import os
import re
import statistics

KERNEL_ROW = re.compile(r"^\s*(\d+)\s+(\S+)\s+(.+?)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)%\s*$")


def rounds(out, name, side):
    files = sorted(glob.glob(os.path.join(out, f"{name}.{side}.*.json")),
                   key=lambda f: int(f.rsplit(".", 2)[-2]))
    return [json.load(open(f)) for f in files]


def stats(times):
    return {"median_ms": 1e3 * statistics.median(times), "min_ms": 1e3 * min(times),
            "max_ms": 1e3 * max(times), "steps": len(times)}


def kernels(path, steps):
    """The --profile-kernels table: per kernel id and summed per op, ms per step."""
    rows = []
    if not os.path.exists(path):
        return rows, []
    for line in open(path):
        m = KERNEL_ROW.match(line)
        if m:
            kid, op, impl, calls, total, mean, share = m.groups()
            rows.append({"id": int(kid), "op": op, "impl": impl.strip(),
                         "calls_per_step": int(calls) / steps,
                         "ms_per_step": float(total) / steps, "share": float(share)})
    by_op = {}
    for r in rows:
        o = by_op.setdefault(r["op"], {"op": r["op"], "ms_per_step": 0.0, "share": 0.0,
                                       "calls_per_step": 0.0, "impl": set()})
        o["ms_per_step"] += r["ms_per_step"]
        o["share"] += r["share"]
        o["calls_per_step"] += r["calls_per_step"]
        o["impl"].add(r["impl"])
    ops = sorted(by_op.values(), key=lambda o: -o["ms_per_step"])
    for o in ops:
        o["impl"] = ", ".join(sorted(o["impl"]))
    return rows, ops


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--warmup", type=int, required=True)
    p.add_argument("--iters", type=int, required=True)
    p.add_argument("--names", required=True)
    a = p.parse_args()

    busy = {}
    bpath = os.path.join(a.out, "busy.txt")
    if os.path.exists(bpath):
        for line in open(bpath):
            f = line.split()
            if f[-1] != "n/a":
                busy.setdefault(f[0], []).append(int(f[-1].rstrip("%")))

    results = []
    for name in filter(None, a.names.split(",")):
        at, pt = rounds(a.out, name, "autotmc"), rounds(a.out, name, "torch")
        if not at or not pt:
            continue
        at_times = [t for r in at for t in r["step_times"][a.warmup:]]
        pt_times = [t for r in pt for t in r["step_times"]]
        rows, ops = kernels(os.path.join(a.out, f"{name}.kernels.txt"), a.warmup + a.iters)
        res = {
            "workload": name,
            "threads": at[0]["threads"],
            "autotmc": stats(at_times),
            "pytorch": stats(pt_times),
            "autotmc_round_medians_ms": [1e3 * statistics.median(r["step_times"][a.warmup:]) for r in at],
            "pytorch_round_medians_ms": [1e3 * r["median"] for r in pt],
            "autotmc_actual_runtime_ms": [1e3 * r["actual_runtime"] for r in at],
            "autotmc_first_loss": at[0]["losses"][0],
            "autotmc_last_loss": at[0]["losses"][-1],
            "pytorch_first_loss": pt[0]["losses"][0],
            "pytorch_last_loss": pt[0]["losses"][-1],
            "other_load_pct_max": max(busy.get(name, [0])),
            "kernels_ms_per_step": sum(r["ms_per_step"] for r in rows),
            "top_kernels": sorted(rows, key=lambda r: -r["ms_per_step"])[:8],
            "ops": ops,
        }
        res["ratio"] = res["pytorch"]["median_ms"] / res["autotmc"]["median_ms"]
        ct, ut = rounds(a.out, name, "compile"), rounds(a.out, name, "unfused")
        if ct:  # PyTorch under torch.compile (cpu_step.sh --compile)
            res["compile"] = stats([t for r in ct for t in r["step_times"]])
            res["ratio_compile"] = res["compile"]["median_ms"] / res["autotmc"]["median_ms"]
        if ut:  # autotmc --no-fuse (cpu_step.sh --unfused)
            res["unfused"] = stats([t for r in ut for t in r["step_times"][a.warmup:]])
            res["fusion_speedup"] = res["unfused"]["median_ms"] / res["autotmc"]["median_ms"]
        rt = rounds(a.out, name, "rowmajor")
        if rt:  # autotmc built with AUTOTM_BLOCKED=0 (cpu_step.sh --row-major)
            res["rowmajor"] = stats([t for r in rt for t in r["step_times"][a.warmup:]])
            res["layouts_speedup"] = res["rowmajor"]["median_ms"] / res["autotmc"]["median_ms"]
        results.append(res)

    json.dump(results, open(os.path.join(a.out, "summary.json"), "w"), indent=1)

    md = ["| workload | autotmc ms/step (min–max) | PyTorch ms/step (min–max) | ratio PyTorch/autotmc | first loss autotmc / PyTorch |",
          "|---|---:|---:|---:|---:|"]
    for r in results:
        A, P = r["autotmc"], r["pytorch"]
        md.append(f"| {r['workload']} | {A['median_ms']:.2f} ({A['min_ms']:.2f}–{A['max_ms']:.2f}) "
                  f"| {P['median_ms']:.2f} ({P['min_ms']:.2f}–{P['max_ms']:.2f}) | {r['ratio']:.2f} "
                  f"| {r['autotmc_first_loss']:.4f} / {r['pytorch_first_loss']:.4f} |")
    if any("compile" in r or "unfused" in r for r in results):
        md += ["", "| workload | autotmc ms/step | torch.compile ms/step (min–max) | ratio compile/autotmc "
               "| autotmc --no-fuse ms/step (min–max) | fusion speedup |", "|---|---:|---:|---:|---:|---:|"]
        for r in results:
            C, U = r.get("compile"), r.get("unfused")
            c = f"{C['median_ms']:.2f} ({C['min_ms']:.2f}–{C['max_ms']:.2f}) | {r['ratio_compile']:.2f}" if C else "– | –"
            u = f"{U['median_ms']:.2f} ({U['min_ms']:.2f}–{U['max_ms']:.2f}) | {r['fusion_speedup']:.2f}" if U else "– | –"
            md.append(f"| {r['workload']} | {r['autotmc']['median_ms']:.2f} | {c} | {u} |")
    if any("rowmajor" in r for r in results):
        md += ["", "| workload | autotmc ms/step | row-major (AUTOTM_BLOCKED=0) ms/step (min–max) | layouts' speedup |",
               "|---|---:|---:|---:|"]
        for r in results:
            R = r.get("rowmajor")
            if R:
                md.append(f"| {r['workload']} | {r['autotmc']['median_ms']:.2f} "
                          f"| {R['median_ms']:.2f} ({R['min_ms']:.2f}–{R['max_ms']:.2f}) | {r['layouts_speedup']:.2f} |")
    for r in results:
        md.append("")
        md.append(f"{r['workload']}: kernels {r['kernels_ms_per_step']:.2f} ms of "
                  f"{r['autotmc']['median_ms']:.2f} ms per step (profiled run); by op:")
        md.append("")
        md.append("| op | implementation | calls/step | ms/step | share |")
        md.append("|---|---|---:|---:|---:|")
        for o in r["ops"]:
            if o["share"] >= 0.5:
                md.append(f"| {o['op']} | {o['impl']} | {o['calls_per_step']:g} "
                          f"| {o['ms_per_step']:.3f} | {o['share']:.1f}% |")
    open(os.path.join(a.out, "summary.md"), "w").write("\n".join(md) + "\n")

    print(f"{'workload':10} {'threads':>7} {'autotmc ms':>11} {'(min-max)':>17} "
          f"{'PyTorch ms':>11} {'(min-max)':>17} {'ratio':>6}  first loss a/p  other")
    for r in results:
        A, P = r["autotmc"], r["pytorch"]
        print(f"{r['workload']:10} {r['threads']:7d} {A['median_ms']:11.2f} "
              f"{A['min_ms']:8.2f}-{A['max_ms']:<8.2f} {P['median_ms']:11.2f} "
              f"{P['min_ms']:8.2f}-{P['max_ms']:<8.2f} {r['ratio']:6.2f}  "
              f"{r['autotmc_first_loss']:.3f}/{r['pytorch_first_loss']:.3f}  "
              f"{r['other_load_pct_max']}%")
    print("ratio = PyTorch / autotmc (> 1: autotmc faster); other = the most CPU time "
          "other processes took during one of the workload's timed runs (share of all CPUs)")
    for r in results:
        top = ", ".join(f"{o['op']} {o['ms_per_step']:.2f}" for o in r["ops"][:4])
        print(f"{r['workload']}: top ops (ms/step): {top}")
    print(f"details: {a.out}/summary.md, {a.out}/*.kernels.txt")
    if any(r["other_load_pct_max"] > 10 for r in results):
        print("warning: other processes were using the CPUs during the benchmark; "
              "the figures are not reliable")


if __name__ == "__main__":
    main()
