#!/bin/bash
# bench/data.sh - what training on a dataset (--data) costs: the median
# step time of a program fed from a dataset against the same program on
# its synthetic batch, in one session, alternating which runs first.
#
#   bench/data.sh [--rounds R] [MODEL[:BATCH] ...]
#
# Models are examples/MODEL.net (default: digits test_vgg:32 mlp:64). For
# each, a dataset of 2,048 random samples of the model's input shape with
# random class ids is written (numpy), the program is built once, and R
# rounds (default 5) each run it on the synthetic batch and on the dataset
# for the same number of steps (`--iters`, at least 2 epochs' worth of
# batches for the larger models is not needed: 64 steps, so every run
# prepares 63 batches ahead). A model's figure is the median over the R
# runs of each run's median step time; ratio = data / synthetic (1.05 is
# 5% slower). Prints a Markdown table. Environment: AUTOTMC (default
# ./autotmc), PYTHON (a python3 with numpy; default python3).
set -euo pipefail
cd "$(dirname "$0")/.."
autotmc=${AUTOTMC:-./autotmc}
python=${PYTHON:-python3}
rounds=5
if [ "${1:-}" = --rounds ]; then rounds=$2; shift 2; fi
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(digits test_vgg:32 mlp:64)
work=$(mktemp -d "${TMPDIR:-/tmp}/data-bench.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT

median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }
step_ms() { sed -n 's/^median step time: \([0-9.]*\) ms.*/\1/p'; }

echo "| model | batch | synthetic | --data | ratio |"
echo "|---|---|---|---|---|"
for spec in "${models[@]}"; do
    model=${spec%%:*}
    defs=()
    [ "$spec" != "$model" ] && defs=(-D "batch=${spec#*:}")
    net=examples/$model.net
    prog=$work/$model
    "$autotmc" build "$net" "${defs[@]}" -o "$prog" >/dev/null
    # the input's shape and the classes, from `autotmc check`
    read -r shape classes < <("$autotmc" check "$net" "${defs[@]}" |
        sed -n 's/^input: [^ ]* f32\[\(.*\)\]$/\1/p; s/^labels: [^ ]* onehot\[[0-9]*, \([0-9]*\)\]$/\1/p' |
        paste -sd' ' | sed 's/, /,/g')
    batch=${shape%%,*}
    "$python" - "$work/$model-data" "$shape" "$classes" <<'PY'
import os, sys
import numpy as np
out, shape, k = sys.argv[1], [int(v) for v in sys.argv[2].split(",")], int(sys.argv[3])
os.makedirs(out, exist_ok=True)
r = np.random.RandomState(0)
np.save(os.path.join(out, "x.npy"), r.randn(2048, *shape[1:]).astype(np.float32))
np.save(os.path.join(out, "y.npy"), r.randint(0, k, 2048).astype(np.int64))
PY
    syn=() dat=()
    for ((i = 0; i < rounds; i++)); do
        if ((i % 2 == 0)); then
            syn+=("$("$prog" --iters 64 | step_ms)")
            dat+=("$("$prog" --data "$work/$model-data" --iters 64 | step_ms)")
        else
            dat+=("$("$prog" --data "$work/$model-data" --iters 64 | step_ms)")
            syn+=("$("$prog" --iters 64 | step_ms)")
        fi
    done
    s=$(printf '%s\n' "${syn[@]}" | median)
    d=$(printf '%s\n' "${dat[@]}" | median)
    echo "| $model | $batch | $s ms | $d ms | $(awk -v d="$d" -v s="$s" 'BEGIN {printf "%.3f", d / s}') |"
done
