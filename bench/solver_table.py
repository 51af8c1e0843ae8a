#!/usr/bin/env python3
"""solver_table.py - bench/out/solver.tsv (bench/solver.sh) as the markdown
table of docs/performance-journal.md: one row per model, ratio and optimizer, CBC
beside lp_solve.

    python3 bench/solver_table.py [bench/out/solver.tsv]
"""
import csv
import sys

path = sys.argv[1] if len(sys.argv) > 1 else "bench/out/solver.tsv"
rows = list(csv.DictReader(open(path), delimiter="\t"))
by = {}
for r in rows:
    by.setdefault((r["model"], r["batch"], r["ratio"], r["optimizer"]), {})[r["solver"]] = r


def cell(r):
    if r is None:
        return "not run"
    if r.get("rows") == "FAILED":
        why = r.get("columns") or ""
        if "within its time limit" in why:
            limit = why.split("time limit of ")[-1].split()[0]
            return "no solution" + (" in a 6 s re-solve" if limit == "6" else " in 60 s")
        return f"failed: {why}"
    status = {"optimal": "optimal", "feasible (time limit)": "time limit"}.get(
        r["status"], "sync's placement" if r["status"].startswith("sync's") else r["status"])
    return f"{float(r['total_s']):.1f} s, {100 * float(r['gap']):.2f}% ({status}, {r['attempts']}x)"


print("| model | ratio | optimizer | rows | columns | integers | CBC | lp_solve | predicted / all-fast |")
print("|---|---|---|---:|---:|---:|---|---|---:|")
order = {m: i for i, m in enumerate(dict.fromkeys(r["model"] for r in rows))}
for (model, batch, ratio, opt), s in sorted(by.items(), key=lambda kv: (order[kv[0][0]], kv[0][2],
                                             ["static", "sync", "async"].index(kv[0][3]))):
    any_ = s.get("cbc") or s.get("lp_solve")
    pred = float(any_["predicted_s"]) / float(any_["all_fast_s"]) if any_.get("predicted_s") else float("nan")
    print(f"| {model} b{batch} | {ratio} | {opt} | {any_['rows']} | {any_['columns']} | {any_['integers']} | "
          f"{cell(s.get('cbc'))} | {cell(s.get('lp_solve'))} | {pred:.3f} |")
met = [s["cbc"] for s in by.values() if "cbc" in s and s["cbc"].get("rows") != "FAILED"]
ok = [r for r in met if float(r["total_s"]) <= 60.5 and float(r["gap"]) <= 0.01 and r["status"] == "optimal"
      or float(r["total_s"]) <= 60.5 and float(r["gap"]) <= 0.01 and r["status"].startswith("feasible")]
print(f"\nCBC: {len(ok)} of {len(met)} placements within 60 s at a gap of at most 1%; "
      f"worst gap {100 * max(float(r['gap']) for r in met):.2f}%, "
      f"longest {max(float(r['total_s']) for r in met):.1f} s.")
