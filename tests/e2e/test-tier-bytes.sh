#!/usr/bin/env bash
# The fast tier's bytes that `schedule --json` reports (tier_bytes) and
# `--plot` draws (both from one count, report_schedule.c's tier_usage) never
# exceed the packed fast pool: an output written over its kernel's dying
# input is counted once, as the pool holds it (before, test_vgg's sync at
# 3:1 on the CPU drew 527,172 bytes beside a pool of 283,520). Placements
# with in-place outputs, on the CPU's Optane model and the GPU's H200 model;
# and the trace's counter track holds the same bytes.
set -uo pipefail
srcdir=${TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
builddir=${TOP_BUILDDIR:-$srcdir}
autotmc=${AUTOTMC:-$builddir/autotmc}
. "$srcdir/tests/python.sh"
need_python "json" "python3"
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/tierbytes.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
fails=0
n=0
for model in "test_vgg.net -D batch=8" "tinygpt.net"; do
    for opt in sync recompute auto; do
        for target in "--hw optane-6dimm" "--backend gpu --hw h200-pcie5"; do
            n=$((n + 1))
            # shellcheck disable=SC2086
            if ! "$autotmc" schedule "$srcdir/examples/"$model --optimizer $opt --ratio 3:1 $target --solver-time 5 \
                    --json >"$work/$n.json" 2>"$work/$n.err"; then
                echo "FAIL: $model $opt $target: $(tail -1 "$work/$n.err")"; fails=$((fails + 1)); continue
            fi
            "$py" - "$work/$n.json" "$model $opt $target" <<'PY' || fails=$((fails + 1))
import json, sys
d = json.load(open(sys.argv[1]))
fast = [f for f, s in d["tier_bytes"]]
over = [i for i, f in enumerate(fast) if f > d["fast_pool_bytes"]]
what = f"{sys.argv[2]}: the fast tier at most {max(fast)} bytes, the pool {d['fast_pool_bytes']}, " \
       f"{d['in_place_outputs']} outputs in place"
if over:
    print(f"FAIL: {what}: above the pool at steps {over[:5]}")
    sys.exit(1)
if d["in_place_outputs"] == 0:
    print(f"FAIL: {what}: no output in place, so the check tests little")
    sys.exit(1)
print(f"ok: {what}")
PY
        done
    done
done
# the trace: a counter track of the same bytes, one sample per step and the end; moves carry their bytes
"$autotmc" schedule "$srcdir/examples/test_vgg.net" -D batch=8 --optimizer sync --ratio 2:1 --hw optane-6dimm \
    --json --trace "$work/t.trace" >"$work/t.json" 2>"$work/t.err" || { echo "FAIL: the traced schedule"; exit 1; }
"$py" - "$work/t.json" "$work/t.trace" <<'PY' || fails=$((fails + 1))
import json, sys
d, t = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))["traceEvents"]
counters = [e for e in t if e.get("ph") == "C" and e["name"] == "tier bytes"]
moves = [e for e in t if e.get("cat", "").endswith("move")]
want = [[f, s] for f, s in d["tier_bytes"]]
got = [[e["args"]["fast"], e["args"]["slow"]] for e in counters]
if got[:-1] != want or got[-1] != want[-1]:
    print(f"FAIL: the trace's counters ({len(got)}) are not tier_bytes ({len(want)} steps and the end)")
    sys.exit(1)
if not moves or any(e["args"]["bytes"] <= 0 for e in moves):
    print(f"FAIL: {len(moves)} move events, not all with their bytes")
    sys.exit(1)
print(f"ok: the trace's counter track is tier_bytes ({len(got)} samples); {len(moves)} moves with their bytes")
PY

echo "$fails failed"
[ $fails -eq 0 ]
