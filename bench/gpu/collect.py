#!/usr/bin/env python3
"""collect.py - results.json from what bench/gpu/run.sh left in its output
directory: one record per run of runs.tsv (autotmc's programs and PyTorch),
the machine, and the link's bandwidth from autotm-gpu-profile's move lines.

    python3 collect.py --pkg PACKAGE_DIR --out RESULTS_DIR   # writes RESULTS_DIR/results.json

A record: id, model, batch, size, system (autotmc | pytorch), mode
(all-fast, async, um | eager, save_on_cpu, checkpoint), variant (autotmc's
program: all-fast, async-50, um-25, async-76GiB, ...), limit_bytes (autotmc:
the fast-tier limit the placement was made for), status (ok, oom, error,
timeout, not_run), median_seconds / min_seconds / max_seconds over the timed
steps (after the warm-up), step_times, losses, peak_device_bytes (PyTorch:
torch.cuda.max_memory_allocated over the timed steps; autotmc: the fast pool, dram_alloc_size,
which holds every tensor of the step; its kernels' scratch, the cuDNN
workspace, is kernel_scratch_bytes, outside it), predicted_seconds,
bytes_moved (to_fast + to_slow), peak_live_bytes (the all-fast peak the
ratios refer to), error.
"""

import argparse
import glob
import json
import os
import statistics


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def tail(path, n=3):
    try:
        with open(path, errors="replace") as f:
            lines = [l.rstrip() for l in f if l.strip()]
        return " | ".join(lines[-n:])
    except OSError:
        return None


def link_bandwidth(out, pkg):
    """Copy bandwidth (bytes/s) from the profiles' move lines, at the largest
    size measured: per direction (async), both ways at once (each way), sync."""
    return link_from(sorted(glob.glob(os.path.join(out, "*.gpu.tsv")) + glob.glob(os.path.join(pkg, "*.gpu.tsv"))))


def link_from(files):
    """link_bandwidth's figures from these autotm-gpu-profile files; None without move lines."""
    best = {}
    for f in files:
        for line in open(f, errors="replace"):
            p = line.rstrip("\n").split("\t")
            if len(p) != 5 or p[0] != "move":
                continue
            try:
                b, s = int(p[3]), float(p[4])
            except ValueError:
                continue
            key = f"{p[1]}_{p[2]}"
            if s > 0 and (key not in best or b > best[key][0]):
                best[key] = (b, s, os.path.basename(f))
    if not best:
        return None
    bw = {k: v[0] / v[1] for k, v in best.items()}
    bw["bytes"] = max(v[0] for v in best.values())
    bw["source"] = sorted({v[2] for v in best.values()})
    return bw


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pkg", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()

    manifest = load_json(os.path.join(a.pkg, "manifest.json")) or {"programs": []}
    built = {p["program"]: p for p in manifest["programs"]}
    machine = load_json(os.path.join(a.out, "machine.json")) or {}
    warmup = int(machine.get("warmup", 0))

    runs = []
    for line in open(os.path.join(a.pkg, "runs.tsv")):
        if line.startswith("#") or not line.strip():
            continue
        id_, system, model, batch, size, mode, prog = (line.rstrip("\n").split("\t") + [""] * 7)[:7]
        rec = {"id": id_, "model": model, "batch": int(batch), "size": int(size), "system": system}
        raw = os.path.join(a.out, "raw", id_ + ".json")
        st = os.path.join(a.out, "raw", id_ + ".status")
        log = os.path.join(a.out, "logs", id_ + ".log")
        status = "not_run"
        wall = None
        if os.path.exists(st):
            f = open(st).read().split()
            status = f[1] if len(f) > 1 else "error"
            wall = float(f[2]) if len(f) > 2 else None
            rec["exit_status"] = int(f[0]) if f and f[0].lstrip("-").isdigit() else None
        rec["status"] = status
        rec["wall_seconds"] = wall
        r = load_json(raw) if status != "not_run" else None
        if system == "autotmc":
            b = built.get(prog, {})
            c = b.get("compiled", {})
            rec.update({"mode": b.get("optimizer", mode.split("-")[0]), "variant": mode,
                        "program": prog, "limit_bytes": c.get("dram_limit") or None,
                        "peak_live_bytes": c.get("peak_live_bytes"),
                        "predicted_seconds": c.get("predicted_runtime"),
                        "bytes_moved": c.get("bytes_moved"),
                        "bytes_to_fast": c.get("bytes_moved_dram"),
                        "bytes_to_slow": c.get("bytes_moved_pmem"),
                        "bytes_async_moved": c.get("bytes_async_moved"),
                        "times": c.get("times"), "ilp_gap": c.get("ilp_gap"),
                        "ilp_status": c.get("ilp_status"), "build_note": b.get("build_note")})
            if r:
                steps = r.get("step_times") or []
                timed = steps[warmup:] if len(steps) > warmup else steps
                rec.update({"median_seconds": statistics.median(timed) if timed else None,
                            "min_seconds": min(timed) if timed else None,
                            "max_seconds": max(timed) if timed else None,
                            "actual_runtime": r.get("actual_runtime"),
                            "step_times": steps, "losses": r.get("losses"),
                            "peak_device_bytes": r.get("dram_alloc_size"),
                            "slow_pool_bytes": r.get("pmem_alloc_size"),
                            "kernel_scratch_bytes": r.get("kernel_scratch_size"),
                            "limit_bytes": r.get("dram_limit") or rec["limit_bytes"],
                            "predicted_seconds": r.get("predicted_runtime", rec["predicted_seconds"]),
                            "bytes_moved": r.get("bytes_moved", rec["bytes_moved"])})
                rec["record"] = {k: v for k, v in r.items() if k not in ("step_times", "losses")}
            if status not in ("ok", "not_run"):
                rec["error"] = tail(log)
        else:
            rec.update({"mode": mode, "variant": mode})
            if r:
                rec.update({"median_seconds": r.get("median"), "min_seconds": r.get("min"),
                            "max_seconds": r.get("max"), "step_times": r.get("step_times"),
                            "losses": r.get("losses"),
                            "peak_device_bytes": r.get("peak_device_bytes"),
                            "peak_reserved_bytes": r.get("peak_reserved_bytes"),
                            "peak_device_bytes_warmup": r.get("peak_device_bytes_warmup"),
                            "cudnn_benchmark": r.get("cudnn_benchmark"),
                            "tf32": bool(r.get("tf32_matmul") or r.get("tf32_cudnn")),
                            "versions": {k: r.get(k) for k in ("torch", "torchvision", "cuda", "cudnn",
                                                               "device_name", "python")},
                            "error": r.get("error")})
                if mode == "checkpoint":
                    rec["segments"] = r.get("segments")
                    rec["checkpoint_impl"] = r.get("checkpoint_impl")
            elif status not in ("ok", "not_run"):
                rec["error"] = tail(log)
        runs.append(rec)

    res = {"machine": machine, "link": link_bandwidth(a.out, a.pkg),
           "compiled": {k: manifest.get(k) for k in ("created", "times", "autotmc")},
           "runs": runs}
    path = os.path.join(a.out, "results.json")
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(res, f, indent=1)
    os.replace(tmp, path)
    print(path)


if __name__ == "__main__":
    main()
