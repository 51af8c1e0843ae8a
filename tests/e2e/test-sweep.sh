#!/usr/bin/env bash
# autotmc sweep: every optimizer at every ratio (and every thread count of
# --threads auto) builds, runs and lands in one results file whose records,
# speedups and matrix are consistent; plots are drawn; bad lists are usage
# errors.
set -uo pipefail
srcdir=${TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
builddir=${TOP_BUILDDIR:-$srcdir}
autotmc=${AUTOTMC:-$builddir/autotmc}
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/sweep.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

if ! XDG_CACHE_HOME=$work/cache "$autotmc" sweep "$srcdir/examples/mlp.net" -D batch=8 --hw optane-6dimm --iters 2 --threads auto \
        --optimizers sync,first-touch --ratios 1:0,4:1,0:1 --slow-dir "$work" -o "$work/r.json" \
        >"$work/out" 2>&1; then
    fail "sweep exited with an error"; tail -20 "$work/out"
fi
grep -q '^sweep: .* 0 failed; wrote' "$work/out" || fail "no final summary line"
# -o names the results: the programs go to the program cache, not there
n=$(find "$work/cache/autotm/programs" -name 'mlp-*' ! -name '*.sum' 2>/dev/null | wc -l)
[ "$n" -ge 1 ] || fail "the sweep's programs are not in the program cache"
if ! /usr/bin/env python3 - "$work/r.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
bad = []
threads = d["threads"]
if threads != sorted(threads, reverse=True) or threads[-1] != 1 and len(threads) > 1:
    bad.append(f"thread counts {threads} do not go down to 1")
fast = {r["threads"]: r["actual_runtime"] for r in d["runs"] if r["optimizer"] == "all-fast"}
slow = {r["threads"]: r["actual_runtime"] for r in d["runs"] if r["optimizer"] == "all-slow"}
for a, b in zip(threads, threads[1:]):   # halve while within 10% of the time on every core, else step by one
    want = a // 2 if fast[a] <= 1.1 * fast[threads[0]] else a - 1
    if b != want:
        bad.append(f"after {a} threads ({fast[a]:.4f} s) came {b}, expected {want}")
for t in threads:
    for ratio in d["ratios"]:
        for opt in d["optimizers"]:
            rs = [r for r in d["runs"] if r["threads"] == t and r["ratio"] == ratio and r["optimizer"] == opt]
            if len(rs) != 1:
                bad.append(f"{len(rs)} records for {opt} {ratio} threads {t}")
                continue
            r = rs[0]
            for k in ("predicted_runtime", "actual_runtime", "dram_limit", "dram_alloc_size", "losses"):
                if k not in r:
                    bad.append(f"{opt} {ratio} threads {t}: no {k}")
            if r.get("dram_alloc_size", 1 << 62) > max(r.get("dram_limit", 0), 64):
                bad.append(f"{opt} {ratio}: fast pool {r['dram_alloc_size']} over the limit {r['dram_limit']}")
            if abs(r["speedup_over_all_slow"] - slow[t] / r["actual_runtime"]) > 1e-9:
                bad.append(f"{opt} {ratio}: speedup is not all-slow / measured")
    for ratio in d["ratios"]:
        cell = [m for m in d["matrix"] if m["threads"] == t and m["ratio"] == ratio]
        best = min(r["actual_runtime"] for r in d["runs"] if r["threads"] == t and r["ratio"] == ratio)
        if len(cell) != 1 or cell[0]["actual_runtime"] != best:
            bad.append(f"matrix cell threads {t} ratio {ratio} is not the best run")
limits = {r["ratio"]: r["dram_limit"] for r in d["runs"] if r["ratio"]}
# 0:1 is the all-fast footprint: the peak of live bytes and the kernels' scratch beside it
scratch = {r["ratio"]: r.get("workspace_bytes", 0) for r in d["runs"] if r["ratio"]}
if not limits["1:0"] < limits["4:1"] < limits["0:1"] or limits["0:1"] != d["peak_live_bytes"] + scratch["0:1"]:
    bad.append(f"limits do not follow the ratios: {limits}, scratch {scratch}")
print("\n".join("  " + b for b in bad) or f"  {len(d['runs'])} runs over threads {threads}")
sys.exit(1 if bad else 0)
PY
then
    fail "results file inconsistent"
fi
for p in r-speedup.svg r-predicted.svg; do
    grep -q '<svg' "$work/$p" 2>/dev/null || fail "no plot $p"
done

# Usage errors: exit 2 with a message, nothing run.
check_usage() {
    local want=$1; shift
    "$autotmc" sweep "$srcdir/examples/mlp.net" "$@" -o "$work/u.json" >"$work/u.out" 2>&1
    local rc=$?
    if [ $rc -ne 2 ] || ! grep -qF -- "$want" "$work/u.out" || [ -e "$work/u.json" ]; then
        fail "sweep $* gave status $rc: $(head -2 "$work/u.out")"
    fi
}
check_usage "'5' is not a ratio" --ratios 4:1,5
check_usage "'fastest' is not an optimizer" --optimizers sync,fastest
check_usage "--optimizers LIST" --optimizer sync
check_usage "expected png, svg or none" --plots jpg

echo "$fails failed"
[ $fails -eq 0 ]
