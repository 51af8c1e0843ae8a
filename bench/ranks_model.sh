#!/usr/bin/env bash
# bench/ranks_model.sh - the modeled data-parallel scaling table of
# docs/distributed.md: each model's all-fast step on the modeled H200
# (hw/h200-pcie5.hw) at its batch per GPU, on 1 to 8 GPUs whose gradients
# are exchanged over PCIe 5.0 (the hw file's [ranks] link) and over NVLink
# (--ranks-bandwidth 360GB/s), not overlapped with the backward pass.
#
#   bench/ranks_model.sh [PRECISION]     (fp32, the default, or bf16)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
autotmc=${AUTOTMC:-$top/autotmc}
precision=${1:-fp32}
step() {  # model batch ranks [options]: the predicted step in ms
    local m=$1 b=$2 n=$3
    shift 3
    local ranks=()
    [ "$n" -gt 1 ] && ranks=(--ranks "$n")
    "$autotmc" schedule "$top/examples/$m.net" --backend gpu --hw h200-pcie5 --precision "$precision" \
        --optimizer all-fast -D batch="$b" "${ranks[@]}" "$@" --summary 2>&1 |
        sed -n 's/^predicted step time: \([0-9.]*\) ms.*/\1/p'
}
printf '| model | GPUs | step, PCIe 5.0 (ms) | efficiency | step, NVLink (ms) | efficiency |\n|---|---:|---:|---:|---:|---:|\n'
for spec in "resnet50 64" "gpt2 8"; do
    read -r m b <<< "$spec"
    one=$(step "$m" "$b" 1)
    for n in 1 2 4 8; do
        p=$(step "$m" "$b" "$n")
        v=$([ "$n" = 1 ] && echo "$one" || step "$m" "$b" "$n" --ranks-bandwidth 360GB/s)
        printf '| %s b%s | %d | %.1f | %.0f%% | %.1f | %.0f%% |\n' "$m" "$b" "$n" "$p" \
            "$(echo "100 * $one / $p" | bc -l)" "$v" "$(echo "100 * $one / $v" | bc -l)"
    done
done
