#!/usr/bin/env python3
# The reports of one placement agree on its recomputes (docs/schedule.md):
#
#   python3 tests/e2e/schedule-reports.py S.json T.json [--table S.txt [--same]]
#                                         [--record R.json] [--segments K] [--expect-recomputes]
#
# S.json and T.json come from one `autotmc schedule --json --trace T.json`;
# S.txt is the table and summary of `autotmc schedule` with the same options,
# R.json the results record of the program `autotmc build` made with them.
# Checked:
#   - the JSON: one entry per kernel run again, `recompute_kernels` of them,
#     `recomputed_tensors` of them not scratch (the last kernel of a chain,
#     which makes the tensor; the ones before it make scratch values for it),
#     each kernel the one of its `step`, `recompute_seconds` their sum, and
#     on the timeline after the synchronous moves of its boundary, one after
#     another, before the asynchronous moves issued there and the kernel;
#     `segments` for checkpoint only;
#   - the trace: one "recompute" event per entry, on the kernels' lane, at
#     the entry's start and for its seconds, overlapping no kernel;
#   - the table: before each step, the moves that finish there, then the
#     recomputes, then the moves issued there; its summary counts its own
#     recompute lines; with --same (a deterministic placement, so that the
#     two runs made the same one) the lines are the JSON's entries, in order;
#   - the record: num_recomputed, num_recompute_kernels, recompute_time and
#     segments equal to the JSON's;
#   - every move and recompute has its reason (reasons.c).
# Prints what it checked; exits 1 with every inconsistency found.
import argparse
import json
import re
import sys

ap = argparse.ArgumentParser()
ap.add_argument("json")
ap.add_argument("trace")
ap.add_argument("--table")
ap.add_argument("--same", action="store_true")
ap.add_argument("--record")
ap.add_argument("--segments", type=int)
ap.add_argument("--expect-recomputes", action="store_true")
args = ap.parse_args()

bad = []
EPS = 1e-9  # seconds: the timeline's sums in another order


def close(a, b, rel=1e-9):
    return abs(a - b) <= rel * max(abs(a), abs(b)) + 1e-15


d = json.load(open(args.json))
steps, moves, rcs = d["steps"], d["moves"], d["recomputes"]
chains = [r for r in rcs if not r["scratch"]]
if args.expect_recomputes and not any(r["scratch"] for r in rcs):
    bad.append(f"expected recomputes with scratch values, found {len(rcs)} recomputes, none scratch")
if d["recompute_kernels"] != len(rcs):
    bad.append(f"recompute_kernels {d['recompute_kernels']}, but {len(rcs)} recomputes")
if d["recomputed_tensors"] != len(chains):
    bad.append(f"recomputed_tensors {d['recomputed_tensors']}, but {len(chains)} recomputes make their tensor")
if not close(d["recompute_seconds"], sum(r["seconds"] for r in rcs)):
    bad.append(f"recompute_seconds {d['recompute_seconds']} is not the sum of the recomputes' seconds")
if (d["optimizer"] == "checkpoint") != ("segments" in d):
    bad.append(f"optimizer {d['optimizer']}: segments {'missing' if 'segments' not in d else 'given'}")
if args.segments is not None and d.get("segments") != args.segments:
    bad.append(f"segments {d.get('segments')}, not {args.segments}")
# every decision says why: a recompute that makes its tensor weighs its time against the link's,
# a move to the fast tier names its reader or why it needs none, a move out where the tier is full
for i, r in enumerate(rcs):
    why = r.get("reason", "")
    if not why or (not r["scratch"] and "out and back" not in why) or (r["scratch"] and "chain" not in why):
        bad.append(f"recompute {i} ({r['kernel']}): reason {why!r}")
for i, m in enumerate(moves):
    why = m.get("reason", "")
    if not why or (m["to"] == "fast" and not re.search(r"reads it at step|step's end|no kernel reads it", why)) or \
            (m["to"] == "slow" and not re.search(r"full at step|out over steps", why)):
        bad.append(f"move {i} of {m['tensor']} to {m['to']}: reason {why!r}")

begin = [0.0]
for st in steps:
    begin.append(begin[-1] + st["step_seconds"])
pending = {}  # tensor -> the scratch entries of its chain still waiting for its last kernel
for i, r in enumerate(rcs):
    at, st = r["before_step"], steps[r["step"]]
    what = f"recompute {i} ({r['kernel']} for {r['tensor']} before step {at})"
    outs = [a["tensor"] for a in st["arguments"] if a["role"] == "output"]
    if st["kernel"] != r["kernel"] or st["op"] != r["op"] or outs != r["outputs"]:
        bad.append(f"{what}: step {r['step']} is {st['kernel']} ({st['op']}) -> {outs}")
    if not r["step"] < at < len(steps):
        bad.append(f"{what}: its kernel's step {r['step']} is not before it")
    if r["scratch"] == (r["tensor"] in r["outputs"]):
        bad.append(f"{what}: scratch {r['scratch']} but outputs {r['outputs']}")
    key = (r["tensor"], at)
    if r["scratch"]:
        pending[key] = pending.get(key, 0) + 1
    else:
        pending.pop(key, None)
    start, end = r["start_seconds"], r["start_seconds"] + r["seconds"]
    if r["seconds"] < 0 or start < begin[at] - EPS or end > steps[at]["start_seconds"] + EPS:
        bad.append(f"{what}: [{start}, {end}] s is not within step {at}'s boundary "
                   f"[{begin[at]}, {steps[at]['start_seconds']}]")
    for m in moves:
        if m["kind"] == "sync" and m["before_step"] == at and m["start_seconds"] + m["seconds"] > start + EPS:
            bad.append(f"{what}: starts before the sync move of {m['tensor']} ends")
        if m["kind"] == "async" and m["issued_before_step"] == at and m["start_seconds"] < end - EPS:
            bad.append(f"{what}: ends after the async move of {m['tensor']} issued there starts")
for (t, at), n in pending.items():
    bad.append(f"{n} scratch recomputes for {t} before step {at} and none that makes it")
for at in {r["before_step"] for r in rcs}:
    here = sorted((r for r in rcs if r["before_step"] == at), key=lambda r: r["start_seconds"])
    for x, y in zip(here, here[1:]):
        if not close(x["start_seconds"] + x["seconds"], y["start_seconds"], 1e-9):
            bad.append(f"before step {at}: {y['kernel']} does not start when {x['kernel']} ends")

t = json.load(open(args.trace))
ev = t["traceEvents"]
lanes = {e["tid"]: e["args"]["name"] for e in ev if e.get("ph") == "M"}
kernels = [e for e in ev if e.get("ph") == "X" and e["cat"] not in ("recompute", "sync move", "async move")]
tr = [e for e in ev if e.get("cat") == "recompute"]
lane = {e["tid"] for e in kernels}
if len(lane) != 1:
    bad.append(f"trace: kernels on lanes {sorted(lane)}")
if len(tr) != len(rcs):
    bad.append(f"trace: {len(tr)} recompute events, {len(rcs)} recomputes")
for e, r in zip(tr, rcs):
    if (e["name"] != r["kernel"] or e["args"]["tensor"] != r["tensor"] or e["tid"] not in lane or
            e["args"]["before_step"] != r["before_step"] or
            not close(e["ts"], 1e6 * r["start_seconds"]) or not close(e["dur"], 1e6 * r["seconds"])):
        bad.append(f"trace: event {e} is not recompute {r}")
    for k in kernels:
        if k["ts"] + k["dur"] > e["ts"] + 1e-3 and e["ts"] + e["dur"] > k["ts"] + 1e-3:
            bad.append(f"trace: recompute {e['name']} overlaps kernel {k['name']}")
            break
if tr and "recompute" not in lanes.get(tr[0]["tid"], ""):
    bad.append(f"trace: the recomputes' lane is named {lanes.get(tr[0]['tid'])!r}")

nlines = 0
if args.table:
    text = open(args.table).read().splitlines()
    line_re = re.compile(r"^\s+recompute (?P<outs>.+?)(?: for (?P<t>\S+))? "
                         r"\((?P<op>\S+) (?P<kernel>\S+), (?P<scratch>scratch, )?(?P<ms>[0-9.]+) ms\)"
                         r"(?:: (?P<why>.+))?$")  # a chain's last kernel gives its reason
    order = {"move": 0, "wait": 0, "recompute": 1, "start": 2}
    listed, block, step = [], [], None
    for ln in text:
        m = re.match(r"^\s*(\d+)\s+[0-9.]+\s", ln)
        if m:
            step = int(m.group(1))
            kinds = [k for k, _ in block]
            if kinds != sorted(kinds):
                bad.append(f"table: before step {step} the lines are out of order: "
                           + "; ".join(x.strip() for _, x in block))
            block = []
            continue
        words = ln.split()
        if words and words[0] in order and (words[0] != "start" or words[1] == "moving"):
            block.append((order[words[0]], ln))
        if words and words[0] == "recompute":
            r = line_re.match(ln)
            if not r:
                bad.append(f"table: cannot read {ln.strip()!r}")
                continue
            listed.append((r, (step if step is not None else -1) + 1))
    nlines = len(listed)
    made = sum(1 for r, _ in listed if not r.group("t"))
    summary = [ln for ln in text if ln.startswith("recomputation:")]
    want = f"recomputation: {made} tensor{'' if made == 1 else 's'} made again by {nlines} kernel" \
           f"{'' if nlines == 1 else 's'}, "
    if nlines or d["optimizer"] == "checkpoint":
        if len(summary) != 1 or not summary[0].startswith(want):
            bad.append(f"table: summary {summary}, expected one line starting {want!r}")
        elif args.segments is not None and not summary[0].endswith(f"; {args.segments} segments"):
            bad.append(f"table: summary {summary[0]!r} does not give {args.segments} segments")
    elif summary:
        bad.append(f"table: summary {summary[0]!r} with no recompute line")
    if args.same:
        if nlines != len(rcs):
            bad.append(f"table: {nlines} recompute lines, {len(rcs)} recomputes in the JSON")
        for (r, at), j in zip(listed, rcs):
            outs = ", ".join(j["outputs"]) if j["scratch"] else j["tensor"]
            if (r.group("kernel"), r.group("op"), r.group("outs"), r.group("t"), bool(r.group("scratch")), at) != \
                    (j["kernel"], j["op"], outs, j["tensor"] if j["scratch"] else None, j["scratch"],
                     j["before_step"]) or abs(float(r.group("ms")) - 1e3 * j["seconds"]) > 6e-4:
                bad.append(f"table: {r.group(0).strip()!r} before step {at} is not {j}")

if args.record:
    rec = json.load(open(args.record))
    for field, want in (("num_recomputed", d["recomputed_tensors"]), ("num_recompute_kernels", len(rcs))):
        if rec.get(field) != want:
            bad.append(f"record: {field} {rec.get(field)}, the JSON has {want}")
    if "recompute_time" not in rec or not close(rec["recompute_time"], d["recompute_seconds"], 1e-6):
        bad.append(f"record: recompute_time {rec.get('recompute_time')}, the JSON has {d['recompute_seconds']}")
    if rec.get("segments") != d.get("segments"):
        bad.append(f"record: segments {rec.get('segments')}, the JSON has {d.get('segments')}")

if bad:
    print("\n".join("  " + b for b in bad))
    sys.exit(1)
print(f"  ok: {d['model']} {d['optimizer']}: {len(chains)} tensors recomputed by {len(rcs)} kernels "
      f"({1e3 * d['recompute_seconds']:.3f} ms), {len(moves)} moves; trace {len(tr)} recompute events"
      + (f"; table {nlines} recompute lines" if args.table else "")
      + (f"; record {rec['num_recomputed']}/{rec['num_recompute_kernels']}" if args.record else ""))
