#!/bin/sh
# Swapping, recomputation and both, on a GPU modeled by hw/h100-pcie5.hw:
# for each model and fast-tier fraction, `autotmc schedule --backend gpu
# --json` with every optimizer that compares (all-fast, checkpoint,
# recompute, async, auto), one line each in bench/out/recompute.tsv:
# predicted step time and its ratio to all-fast, bytes moved, time
# recomputed, solver time, gap and status. A ratio below what an optimizer
# can place is placed at its smallest feasible limit (as --ratio does), so
# each line gives the limit it was placed for and its share of the peak.
#
#   bench/recompute.sh [MODELS] [FRACTIONS] [OPTIMIZERS]
#       (defaults: "resnet50:32 resnet152:64 densenet201:64 inception_v3:64 vgg19:64",
#        "1:1 3:1" (50% and 25% of the peak of live bytes),
#        "all-fast checkpoint recompute async auto")
#
# AUTOTMC names the compiler (default ./autotmc), SOLVER_TIME the solver's
# seconds per placement (default 60), HW the hw file (default h100-pcie5),
# PRECISION the step's precision (fp32, the default, or bf16: then the
# lines go to bench/out/recompute-bf16.tsv), ATTENTION fused or composed
# (--attention, default composed: the GPU runtime's; a column says which),
# HEAD fused or separate (--head-loss, default separate: the GPU runtime's;
# the attention column then says "fused, head fused"), FUSE=1 adds --fuse (every fold the CPU makes; the column
# then ends in ", --fuse").
# GPU_PROFILES=DIR plans from the measured profiles DIR/MODEL-bBATCH.gpu.tsv (bench/gpu/profiles) instead
# of hw/h100-pcie5.hw, and writes bench/out/recompute-profiles.tsv.
set -eu
cd "$(dirname "$0")/.."
models=${1:-resnet50:32 resnet152:64 densenet201:64 inception_v3:64 vgg19:64}
ratios=${2:-1:1 3:1}
optimizers=${3:-all-fast checkpoint recompute async auto}
autotmc=${AUTOTMC:-./autotmc}
precision=${PRECISION:-fp32}
out=bench/out/recompute.tsv
[ "$precision" = fp32 ] || out=bench/out/recompute-$precision.tsv
[ -n "${GPU_PROFILES:-}" ] && out=${out%.tsv}-profiles.tsv
mkdir -p bench/out
attention=${ATTENTION:-composed}
head=${HEAD:-separate}
acol=$attention
[ "$head" = fused ] && acol="$attention, head fused"
fuse=
[ "${FUSE:-0}" = 1 ] && fuse=--fuse && acol="$acol, --fuse"
[ -s "$out" ] || printf 'model\tbatch\tprecision\tattention\thw\tratio\toptimizer\tlimit_gib\tof_peak\tpredicted_ms\tx_all_fast\tmoved_gib\trecompute_ms\tsolve_s\tgap\tstatus\n' >"$out"
for m in $models; do
    model=${m%:*} batch=${m#*:}
    times="--hw hw/${HW:-h100-pcie5}.hw --precision $precision --attention $attention --head-loss $head $fuse"
    [ -n "${GPU_PROFILES:-}" ] && times="--gpu-profile $GPU_PROFILES/$model-b$batch.gpu.tsv --precision $precision --attention $attention"
    fast=$("$autotmc" schedule "examples/$model.net" -D batch="$batch" --backend gpu $times \
        --optimizer all-fast --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["predicted_seconds"])')
    for ratio in $ratios; do
        for opt in $optimizers; do
            size="--ratio $ratio"
            [ "$opt" = all-fast ] && size=
            json=$("$autotmc" schedule "examples/$model.net" -D batch="$batch" --backend gpu $times \
                --optimizer "$opt" $size --solver-time "${SOLVER_TIME:-60}" --json 2>bench/out/recompute.err) || {
                printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\tFAILED\t%s\n' "$model" "$batch" "$precision" "$acol" "${HW:-h100-pcie5}" "$ratio" "$opt" \
                    "$(tail -1 bench/out/recompute.err)" | tee -a "$out"
                continue
            }
            printf '%s' "$json" | python3 -c '
import json, sys
d = json.load(sys.stdin)
fast, (model, batch, prec, attn, hw, ratio, opt) = float(sys.argv[1]), sys.argv[2:9]
s = d.get("solver") or {}
moved = sum(m["bytes"] for m in d["moves"]) / 2**30
lim = d["limit"] or d["peak_live_bytes"]
print("\t".join([model, batch, prec, attn, hw, ratio, opt, "%.2f" % (lim / 2**30), "%.1f%%" % (100 * lim / d["peak_live_bytes"]),
                 "%.3f" % (1e3 * d["predicted_seconds"]),
                 "%.3f" % (d["predicted_seconds"] / fast), "%.2f" % moved,
                 "%.3f" % (1e3 * d["recompute_seconds"]), "%.1f" % s.get("total_seconds", 0),
                 "%.2f%%" % (100 * s.get("gap", 0)), s.get("status", "baseline")]))
' "$fast" "$model" "$batch" "$precision" "$acol" "${HW:-h100-pcie5}" "$ratio" "$opt" | tee -a "$out"
        done
    done
done
