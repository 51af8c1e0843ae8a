#!/usr/bin/env python3
"""summarize.py - the markdown tables of bench/gpu/run.sh's results.json:
every run, the comparisons with their ratios, and the goals (met, not met,
not measured).

    python3 summarize.py results.json [more.json ...] [-o summary.md]

Several files (from several sessions on the same machine) are merged; a run
id found in more than one file keeps its last record that ran.

The comparisons, per model and batch:
  all-fast / eager    autotmc all-fast over PyTorch eager (goal: <= 1)
  async-50 / bound    autotmc async at 50% of its all-fast peak over
                      max(all-fast time, link time), where link time =
                      max(bytes to the device / host-to-device bandwidth,
                      bytes to the host / device-to-host bandwidth): the
                      copies run on two streams, one per direction, so the
                      busier direction bounds the step (goal: <= 1.3)
  save_on_cpu / async PyTorch save_on_cpu over autotmc async, at the smallest
                      limit measured (25%) and at 50% (goal: >= 4 at 25%)
  async / checkpoint  autotmc async over PyTorch checkpointing, the async run
                      with the largest limit whose device bytes (fast pool +
                      kernel scratch) are at most checkpointing's
                      torch.cuda.max_memory_allocated (goal: <= 1)
  resnet200 (big)     autotmc async at the big limit over PyTorch
                      checkpointing (goal: < 1), eager expected to run out
                      of memory
The link's bandwidth is the largest copy of autotm-gpu-profile's move lines
(asynchronous, each direction); without a profile, 52 GB/s each way,
marked "assumed".
"""

import argparse
import json
import os
import sys

ASSUMED_BW = 52e9
GiB = 1 << 30


def load(paths):
    runs, machine, link, compiled = {}, None, None, None
    for p in paths:
        d = json.load(open(p))
        machine = d.get("machine") or machine
        link = d.get("link") or link
        compiled = d.get("compiled") or compiled
        for r in d.get("runs", []):
            if r.get("status") == "not_run" and r["id"] in runs:
                continue
            runs[r["id"]] = r
    return list(runs.values()), machine or {}, link, compiled or {}


def ms(s):
    return "—" if s is None else f"{1e3 * s:.1f}"


def gib(b):
    if b is None:
        return "—"
    if b == 0:
        return "0"
    return f"{b / GiB:.2f}" if b >= GiB // 100 else f"{b / GiB:.5f}"


def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


def fx(x, d=2):
    return "—" if x is None else f"{x:.{d}f}"


def ok(r):
    return r is not None and r.get("status") == "ok" and r.get("median_seconds") is not None


def device_bytes(r):
    """What a run holds on the device: PyTorch's max_memory_allocated; autotmc's
    fast pool plus its kernels' scratch (cuDNN workspace)."""
    if r.get("peak_device_bytes") is None:
        return None
    return r["peak_device_bytes"] + (r.get("kernel_scratch_bytes") or 0 if r["system"] == "autotmc" else 0)


class Goal:
    def __init__(self, text):
        self.text, self.met, self.failed, self.notes = text, [], [], []

    def add(self, name, good, note=""):
        (self.met if good else self.failed).append(f"{name}{note}")

    def verdict(self):
        if self.failed:
            return f"**not met** ({', '.join(self.failed)}; met: {', '.join(self.met) or 'none'})"
        if self.met:
            return f"**met** ({', '.join(self.met)})"
        return "**not measured**" + (f" ({'; '.join(self.notes)})" if self.notes else "")


def within_checkpoint(rs, ck, mode):
    """The run of autotmc's MODE with the most device memory within checkpointing's (ck), and its step over
    checkpointing's; (None, None) if none."""
    cands = [r for r in rs if r["system"] == "autotmc" and r.get("mode") == mode and ok(r)
             and device_bytes(r) is not None and device_bytes(r) <= ck["peak_device_bytes"]]
    if not cands:
        return None, None
    m = max(cands, key=device_bytes)
    return m, m["median_seconds"] / ck["median_seconds"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", nargs="+")
    ap.add_argument("-o", "--output", help="also write the markdown to this file")
    ap.add_argument("--link", metavar="PROFILE", action="append", default=[],
                    help="take the link's bandwidth from the move lines of this autotm-gpu-profile output "
                         "where the results have none (run.sh --no-profile); repeatable")
    a = ap.parse_args()
    runs, machine, link, compiled = load(a.results)
    if a.link and not (link and link.get("slow_to_fast_async")):
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from collect import link_from
        link = link_from(a.link)
    lines = []
    w = lines.append

    tv = next((r.get("versions") for r in runs if r.get("versions")), None) or {}
    torch_m = machine.get("torch") or {}
    w("# autotmc on the GPU against PyTorch\n")
    w(f"- GPU: {machine.get('nvidia_smi') or tv.get('device_name') or '?'}; CPU: {machine.get('cpu', '?')}; "
      f"host memory {machine.get('memory_gib', '?')} GiB; {machine.get('date', '?')}")
    w(f"- PyTorch {tv.get('torch') or torch_m.get('torch') or '?'} (CUDA {tv.get('cuda') or torch_m.get('cuda') or '?'}, "
      f"cuDNN {tv.get('cudnn') or torch_m.get('cudnn') or '?'}), torchvision {tv.get('torchvision', '?')}; "
      f"TF32 off in both; cudnn.benchmark {machine.get('cudnn_benchmark', '?')} in PyTorch "
      f"(autotmc: the fastest deterministic algorithm of the measured profile, else cuDNN's heuristic)")
    w(f"- autotmc {compiled.get('autotmc', '?')}, programs placed with times {compiled.get('times', '?')}")
    w(f"- {machine.get('warmup', '?')} warm-up + {machine.get('iters', '?')} timed steps per run; "
      "times are medians of the timed steps")
    if link and link.get("slow_to_fast_async") and link.get("fast_to_slow_async"):
        h2d, d2h = link["slow_to_fast_async"], link["fast_to_slow_async"]
        both = link.get("both_async")
        w(f"- link (autotm-gpu-profile, {link['bytes'] / 2**20:.0f} MiB copies): host→device {h2d / 1e9:.1f} GB/s, "
          f"device→host {d2h / 1e9:.1f} GB/s" + (f", both at once {both / 1e9:.1f} GB/s each way" if both else ""))
        bw_note = "measured"
    else:
        h2d = d2h = ASSUMED_BW
        w("- link: **assumed** 52 GB/s each way (no autotm-gpu-profile move lines)")
        bw_note = "assumed"
    w("")

    w("## Every run\n")
    w("| model | batch | system | mode | limit GiB | status | median ms | min ms | max ms | device GiB | "
      "predicted ms | moved GiB |")
    w("|---|---|---|---|---|---|---|---|---|---|---|---|")
    order = {"all-fast": 0, "eager": 1, "async": 2, "save_on_cpu": 3, "checkpoint": 4, "um": 5}
    runs.sort(key=lambda r: (r["model"], r["batch"], order.get(r.get("mode"), 9), -(r.get("limit_bytes") or 0)))
    for r in runs:
        w(f"| {r['model']} | {r['batch']} | {r['system']} | {r.get('variant') or r.get('mode')} | "
          f"{gib(r.get('limit_bytes'))} | {r['status']} | {ms(r.get('median_seconds'))} | {ms(r.get('min_seconds'))} | "
          f"{ms(r.get('max_seconds'))} | {gib(device_bytes(r))} | {ms(r.get('predicted_seconds'))} | "
          f"{gib(r.get('bytes_moved')) if r['system'] == 'autotmc' else '—'} |")
    noted = [r for r in runs if r.get("build_note")]
    if noted:
        w("\nPlacements the compiler changed:\n")
        for r in noted:
            w(f"- {r['id']}: {r['build_note']}")
    bad = [r for r in runs if r["status"] not in ("ok", "not_run")]
    if bad:
        w("\nRuns that did not finish:\n")
        for r in bad:
            w(f"- {r['id']}: {r['status']}: {r.get('error') or '?'}")
    w("")

    g_fast = Goal("autotmc all-fast no slower than PyTorch eager")
    g_bound = Goal("autotmc async at 50% within 1.3x of max(all-fast, link time)")
    g_soc = Goal("autotmc async at least 4x faster than PyTorch save_on_cpu")
    g_ckpt = Goal("autotmc async no slower than PyTorch checkpointing at the same device memory")
    g_big = Goal("resnet200 where PyTorch eager runs out of memory: autotmc trains faster than PyTorch checkpointing")
    g_big_auto = Goal("the same with auto")

    by = {}
    for r in runs:
        by.setdefault((r["model"], r["batch"]), []).append(r)

    def find(rs, system, mode=None, variant=None):
        for r in rs:
            if r["system"] == system and (mode is None or r.get("mode") == mode) and \
                    (variant is None or r.get("variant") == variant):
                return r
        return None

    w("## Comparisons\n")
    w("| model | batch | all-fast ms | eager ms | all-fast / eager | async-50 ms | link ms "
      f"({bw_note}) | bound ms | async-50 / bound | async-25 ms | save_on_cpu ms | save_on_cpu / async-25 | "
      "save_on_cpu / async-50 | checkpoint ms (GiB) | async at ≤ that memory | async / checkpoint |")
    w("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    big_rows = []
    for (model, batch), rs in sorted(by.items()):
        af = find(rs, "autotmc", "all-fast")
        if af is None and find(rs, "autotmc", "async") is not None and not find(rs, "autotmc", variant="async-50"):
            big_rows.append((model, batch, rs))
            continue
        ea = find(rs, "pytorch", "eager")
        a50 = find(rs, "autotmc", variant="async-50")
        a25 = find(rs, "autotmc", variant="async-25")
        soc = find(rs, "pytorch", "save_on_cpu")
        ck = find(rs, "pytorch", "checkpoint")
        name = f"{model} b{batch}"

        r_fast = ratio(af and af.get("median_seconds"), ea and ea.get("median_seconds")) \
            if ok(af) and ok(ea) else None
        if r_fast is not None:
            g_fast.add(name, r_fast <= 1.0, f" {r_fast:.2f}")
        else:
            g_fast.notes.append(f"{name}: all-fast {af and af['status']}, eager {ea and ea['status']}")

        link_s = bound = r_bound = None
        if a50 is not None and a50.get("bytes_to_fast") is not None:
            link_s = max((a50.get("bytes_to_fast") or 0) / h2d, (a50.get("bytes_to_slow") or 0) / d2h)
            if ok(af):
                bound = max(af["median_seconds"], link_s)
        if ok(a50) and bound:
            r_bound = a50["median_seconds"] / bound
            g_bound.add(name, r_bound <= 1.3, f" {r_bound:.2f}")
        elif a50 is not None:
            g_bound.notes.append(f"{name}: async-50 {a50['status']}, all-fast {af and af['status']}")

        r_soc25 = ratio(soc and soc.get("median_seconds"), a25 and a25.get("median_seconds")) \
            if ok(soc) and ok(a25) else None
        r_soc50 = ratio(soc and soc.get("median_seconds"), a50 and a50.get("median_seconds")) \
            if ok(soc) and ok(a50) else None
        if r_soc25 is not None:
            g_soc.add(name, r_soc25 >= 4.0, f" {r_soc25:.2f}")
        elif soc is not None:
            g_soc.notes.append(f"{name}: save_on_cpu {soc['status']}, async-25 {a25 and a25['status']}")

        ck_txt, match_txt, r_ck = "—", "—", None
        if ck is not None:
            ck_txt = f"{ms(ck.get('median_seconds'))} ({gib(ck.get('peak_device_bytes'))})" if ok(ck) else ck["status"]
            if ok(ck) and ck.get("peak_device_bytes"):
                m, r_ck = within_checkpoint(rs, ck, "async")
                if m:
                    match_txt = f"{m['variant']}: {ms(m['median_seconds'])} ({gib(device_bytes(m))})"
                    g_ckpt.add(name, r_ck <= 1.0, f" {r_ck:.2f} ({m['variant']})")
                else:
                    match_txt = "none measured"
                    g_ckpt.notes.append(f"{name}: no async run within checkpointing's "
                                        f"{gib(ck['peak_device_bytes'])} GiB")
        w(f"| {model} | {batch} | {ms(af and af.get('median_seconds'))} | {ms(ea and ea.get('median_seconds'))} | "
          f"{fx(r_fast)} | {ms(a50 and a50.get('median_seconds'))} | {ms(link_s)} | {ms(bound)} | {fx(r_bound)} | "
          f"{ms(a25 and a25.get('median_seconds'))} | {ms(soc and soc.get('median_seconds'))} | {fx(r_soc25)} | "
          f"{fx(r_soc50)} | {ck_txt} | {match_txt} | {fx(r_ck)} |")
    w("")

    if big_rows:
        w("## Beyond device memory\n")
        w("| model | batch | PyTorch eager | PyTorch checkpoint ms (GiB) | autotmc async ms (limit GiB) | "
          "async / checkpoint | autotmc auto ms (limit GiB) | auto / checkpoint | autotmc um ms (limit GiB) | um / checkpoint |")
        w("|---|---|---|---|---|---|---|---|---|---|")
    for model, batch, rs in big_rows:
        name = f"{model} b{batch}"
        ea = find(rs, "pytorch", "eager")
        ck = find(rs, "pytorch", "checkpoint")
        asy = [r for r in rs if r["system"] == "autotmc" and r.get("mode") == "async"]
        ums = [r for r in rs if r["system"] == "autotmc" and r.get("mode") == "um"]
        aus = [r for r in rs if r["system"] == "autotmc" and r.get("mode") == "auto"]
        au = max(aus, key=lambda r: r.get("limit_bytes") or 0) if aus else None
        r_au = ratio(au["median_seconds"], ck["median_seconds"]) if ok(au) and ok(ck) else None
        if r_au is not None:
            g_big_auto.add(name, r_au < 1.0, f" {r_au:.2f}")
        an = max(asy, key=lambda r: r.get("limit_bytes") or 0) if asy else None
        um = max(ums, key=lambda r: r.get("limit_bytes") or 0) if ums else None
        r_a = ratio(an["median_seconds"], ck["median_seconds"]) if ok(an) and ok(ck) else None
        r_u = ratio(um["median_seconds"], ck["median_seconds"]) if ok(um) and ok(ck) else None
        if r_a is not None:
            g_big.add(name, r_a < 1.0, f" {r_a:.2f}")
        elif ok(an) and ck is not None and ck["status"] in ("oom", "error", "timeout"):
            g_big.add(name, True, f" (checkpointing: {ck['status']})")
        else:
            g_big.notes.append(f"{name}: async {an and an['status']}, checkpoint {ck and ck['status']}")
        def cell(r):
            if r is None:
                return "—"
            return f"{ms(r.get('median_seconds')) if ok(r) else r['status']} ({gib(r.get('limit_bytes'))})"
        ck_cell = "—" if ck is None else (f"{ms(ck['median_seconds'])} ({gib(ck.get('peak_device_bytes'))})"
                                          if ok(ck) else ck["status"])
        w(f"| {model} | {batch} | {ea['status'] if ea else '—'}"
          f"{' (' + gib(ea.get('peak_device_bytes')) + ' GiB at the failure)' if ea and ea['status'] == 'oom' and ea.get('peak_device_bytes') else ''} | "
          f"{ck_cell} | {cell(an)} | {fx(r_a)} | {cell(au)} | {fx(r_au)} | {cell(um)} | {fx(r_u)} |")
    if big_rows:
        w("")

    # auto (swaps and recomputation, the default optimizer under a limit)
    g_auto50 = Goal("autotmc auto at 50% within 1.15x of all-fast")
    g_auto25 = Goal("autotmc auto at 25% within 1.35x of all-fast")
    g_auto_ck = Goal("autotmc auto no slower than PyTorch checkpointing at the same device memory")
    g_pred = Goal("every autotmc run within 15% of its predicted step")
    auto_rows = []
    for (model, batch), rs in sorted(by.items()):
        name = f"{model} b{batch}"
        af = find(rs, "autotmc", "all-fast")
        ck = find(rs, "pytorch", "checkpoint")
        cells = []
        for v, goal, within in (("auto-50", g_auto50, 1.15), ("auto-25", g_auto25, 1.35)):
            r = find(rs, "autotmc", variant=v)
            rr = ratio(r["median_seconds"], af["median_seconds"]) if ok(r) and ok(af) else None
            if rr is not None:
                goal.add(name, rr <= within, f" {rr:.2f}")
            cells.append(f"{ms(r and r.get('median_seconds'))} | {gib(device_bytes(r)) if r and ok(r) else '—'} | {fx(rr)}")
        ck_txt = match_txt = "—"
        r_ck = None
        if ok(ck) and ck.get("peak_device_bytes"):
            ck_txt = f"{ms(ck['median_seconds'])} ({gib(ck['peak_device_bytes'])})"
            m, r_ck = within_checkpoint(rs, ck, "auto")
            if m:
                match_txt = f"{m['variant']}: {ms(m['median_seconds'])} ({gib(device_bytes(m))})"
                g_auto_ck.add(name, r_ck <= 1.0, f" {r_ck:.2f} ({m['variant']})")
        if any(r.get("variant") in ("auto-50", "auto-25") for r in rs):
            auto_rows.append(f"| {model} | {batch} | {ms(af and af.get('median_seconds'))} | {cells[0]} | "
                             f"{cells[1]} | {ck_txt} | {match_txt} | {fx(r_ck)} |")
        for r in rs:
            if r["system"] == "autotmc" and ok(r) and r.get("predicted_seconds"):
                rp = r["median_seconds"] / r["predicted_seconds"]
                g_pred.add(f"{name} {r['variant']}", abs(rp - 1) <= 0.15, f" {rp:.3f}")
    if auto_rows:
        w("## auto (swaps and recomputation)\n")
        w("| model | batch | all-fast ms | auto-50 ms | device GiB | / all-fast | auto-25 ms | device GiB | "
          "/ all-fast | checkpoint ms (GiB) | auto at ≤ that memory | auto / checkpoint |")
        w("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for row in auto_rows:
            w(row)
        w("")

    w("## Goals\n")
    for g in (g_fast, g_bound, g_soc, g_ckpt, g_big, g_big_auto, g_auto50, g_auto25, g_auto_ck, g_pred):
        w(f"- {g.text}: {g.verdict()}")
    w("")
    text = "\n".join(lines)
    print(text)
    if a.output:
        with open(a.output, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    sys.exit(main())
