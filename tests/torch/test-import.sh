#!/usr/bin/env bash
# autotmc import against PyTorch (tests/torch/import_check.py): torchvision
# models, a small network of every block import writes (residual,
# concat, gate) and a small nanoGPT (causal and not; exported with constant
# folding too), exported to ONNX in training mode, imported, and trained 3
# SGD steps (lr 0.001; the GPT 0.1) from the exported weights on the exported batch by
# the reference interpreter and, where marked, the compiled CPU program:
# the parameter count, the losses and the final weights and running
# statistics against PyTorch's within 1e-4 (or as close to float64 as
# PyTorch's float32; at these sizes the batch statistics of the deep
# networks have few elements). Three transformers are refused with the
# message that says what to change. Then the small network placed under a
# limit with auto (moves) trains bit for bit as all-fast.
set -uo pipefail
srcdir=${TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
autotmc=${AUTOTMC:-$srcdir/autotmc}
. "$srcdir/tests/python.sh"
need_python "torch, torchvision, numpy" "python3-torch python3-torchvision"
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/import.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
export XDG_CACHE_HOME=$work/cache
fails=0
# model batch size [flags]
for spec in "tiny 2 16 --run" "tiny 2 16 --dynamic" "resnet18 2 64 --run" "squeezenet1_1 2 64 --run" "mobilenet_v3_small 2 64 --run" \
    "efficientnet_b0 8 64" "mobilenet_v2 8 64" "densenet121 4 64" "gpt 4 0 --run" "gpt 4 0 --fold" "gpt-encoder 4 0"; do
    read -r model batch size run <<< "$spec"
    "$py" "$srcdir/tests/torch/import_check.py" "$autotmc" "$model" "$work/$model${run#--}" --batch "$batch" --size "$size" \
        $run 2>&1 | grep -E '^(ok|FAIL|#)|Error|error' || fails=$((fails + 1))
    [ "${PIPESTATUS[0]}" = 0 ] || fails=$((fails + 1))
done

# transformers import refuses, with what to do: the exact GELU, scores not scaled as .net's attention, a layer norm
# exported as arithmetic (before opset 17)
for spec in "gpt-erf 17|the exact GELU (erf)" "gpt-unscaled 17|not 1/sqrt(16)" "gpt 14|export with opset_version=17"; do
    IFS='|' read -r model_opset message <<< "$spec"
    read -r model opset <<< "$model_opset"
    "$py" "$srcdir/tests/torch/import_check.py" "$autotmc" "$model" "$work/refused-$model-$opset" --batch 2 \
        --opset "$opset" --refused "$message" 2>&1 | grep -E '^(ok|FAIL)|Error' || fails=$((fails + 1))
    [ "${PIPESTATUS[0]}" = 0 ] || fails=$((fails + 1))
done

# the small network under a limit: auto moves tensors, and the losses and weights are all-fast's, bit for bit
t=$work/tinyrun
runs() {
    "$autotmc" run "$t/tiny.net" -D batch=32 --iters 3 --weights "$t/tiny.safetensors" --slow-dir "$work" \
        --save-weights "$t/$1.safetensors" "${@:2}" 2>&1 | tee "$t/$1.log" | grep -o '^step [0-9]*: loss [^ ]*'
}
a=$(runs all-fast --optimizer all-fast) b=$(runs auto --ratio 1:1 --hw optane-6dimm --optimizer auto)
if [ -n "$a" ] && [ "$a" = "$b" ] && cmp -s "$t/all-fast.safetensors" "$t/auto.safetensors" &&
    grep -qE 'placement: auto; [1-9][0-9]* moves' "$t/auto.log"; then
    echo "ok: imported tiny at batch 32 at half its peak (--ratio 1:1, --hw optane-6dimm) with auto: $(grep -m1 'placement:' "$t/auto.log"); bitwise all-fast"
else
    echo "FAIL: imported tiny under a limit: all-fast [$a], auto [$b]"; tail -5 "$t/auto.log"; fails=$((fails + 1))
fi
echo "$fails failed"
[ $fails -eq 0 ]
