#!/usr/bin/env bash
# Placement for the GPU backend, checked on any machine (times modeled by
# hw/h100-pcie5.hw's roofline): every argument of every kernel is in device
# memory at its kernel, the device pool stays within the limit, a limit
# below the peak makes moves, async is no slower than sync, and the
# options that make no sense on a GPU are refused with a message.
set -uo pipefail
srcdir=${TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
builddir=${TOP_BUILDDIR:-$srcdir}
autotmc=${AUTOTMC:-$builddir/autotmc}
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/gpuplan.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

for spec in "test_vgg 32" "test_vgg 64"; do
    set -- $spec
    model=$1 batch=$2
    for ratio in 1:3 1:6; do
        ok=1
        for opt in all-fast sync async; do
            name=$model-$opt-${ratio/:/-}
            limit=(--ratio $ratio); [ $opt = all-fast ] && limit=()
            if ! "$autotmc" schedule "$srcdir/examples/$model.net" -D batch=$batch --backend gpu --hw h100-pcie5 \
                    --optimizer $opt "${limit[@]}" --solver-time 30 --json >"$work/$name.json" 2>"$work/$name.err"; then
                fail "$name: $(cat "$work/$name.err")"; ok=0
            fi
        done
        [ $ok = 1 ] || continue
        if ! /usr/bin/env python3 - "$work" "$model" "${ratio/:/-}" <<'PY'
import json, sys
work, model, ratio = sys.argv[1:]
d = {o: json.load(open(f"{work}/{model}-{o}-{ratio}.json")) for o in ("all-fast", "sync", "async")}
bad = []
for o in ("sync", "async"):
    s = d[o]
    slow = [(st["kernel"], a["tensor"]) for st in s["steps"] for a in st["arguments"] if a["tier"] != "fast"]
    if slow:
        bad.append(f"{o}: {len(slow)} kernel arguments in host memory, e.g. {slow[0]}")
    if s["fast_pool_bytes"] > s["limit"]:
        bad.append(f"{o}: device pool {s['fast_pool_bytes']} over the limit {s['limit']}")
    if s["limit"] < s["peak_live_bytes"] and not s["moves"]:
        bad.append(f"{o}: limit {s['limit']} below the peak {s['peak_live_bytes']} and no move")
    if s["predicted_seconds"] < d["all-fast"]["predicted_seconds"] * (1 - 1e-9):
        bad.append(f"{o}: predicted faster than all-fast")
    if "modeled" not in s["times"]:
        bad.append(f"{o}: times not marked modeled: {s['times']}")
if d["async"]["predicted_seconds"] > d["sync"]["predicted_seconds"] * (1 + 2e-3):   # within the MIP gap
    bad.append("async predicted slower than sync")
print("\n".join("  " + b for b in bad) or
      f"  ok: {model} {ratio.replace('-', ':')}: " + ", ".join(
          f"{o} {1e3 * d[o]['predicted_seconds']:.3f} ms/{len(d[o]['moves'])} moves" for o in d))
sys.exit(1 if bad else 0)
PY
        then
            fail "$model $ratio"
        fi
    done
done

# Refused: a CPU-only optimizer on the GPU, um on the CPU, no hw, an unknown backend.
check_error() {
    local want=$1; shift
    "$autotmc" schedule "$srcdir/examples/mlp.net" "$@" >"$work/e.out" 2>&1
    local rc=$?
    if [ $rc -ne 1 ] || ! grep -qF -- "$want" "$work/e.out"; then
        fail "schedule $* gave status $rc: $(head -2 "$work/e.out")"
    fi
}
check_error "does not run on the GPU backend" --backend gpu --hw h100-pcie5 --optimizer static --ratio 1:1
check_error "a baseline of the GPU backend" --optimizer um --ratio 1:1
check_error "--hw h100-pcie5" --backend gpu --optimizer sync --ratio 1:1
check_error "has no [compute] section" --backend gpu --hw optane-6dimm --optimizer sync --ratio 1:1
check_error "unknown backend 'tpu'" --backend tpu --optimizer sync --ratio 1:1
check_error "at least" --backend gpu --hw h100-pcie5 --optimizer sync --limit 1KiB

echo "$fails failed"
[ $fails -eq 0 ]
