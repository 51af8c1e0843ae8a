#!/usr/bin/env bash
# bf16 training (--precision bf16) against PyTorch, 5 steps, within 1e-2
# as tests/torch/torch_check.py judges it (a tensor beyond that agrees if
# it is as close to float64 as PyTorch's bf16 is): a CNN with batchnorm, a
# residual block and SGD with momentum (small.net), a small GPT with AdamW
# and clipping (gpt.net) and bidirectional attention over a sequence
# (seq.net), each both ways: the reference interpreter against PyTorch
# replaying the bf16 graph with its own bf16 kernels (--bf16), and the
# compiled CPU program against PyTorch's autocast on the float32 graph
# (--autocast --run), what a user compares against. Then the bytes: a
# bf16 ResNet-50 at batch 32 needs at most 0.56 of fp32's peak; a bf16
# step is placed on a modeled GPU and builds for the GPU backend (whose
# kernels tests/gpu checks on a GPU); --tf32 is the GPU's and sets the
# program's flag.
set -uo pipefail
srcdir=${TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
autotmc=${AUTOTMC:-$srcdir/autotmc}
. "$srcdir/tests/python.sh"
need_python "torch, numpy" "python3-torch"
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/bf16.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

for model in small gpt seq; do
    for how in --bf16 "--autocast --run"; do
        w=$work/$model${how// /}
        mkdir -p "$w"
        "$py" "$srcdir/tests/torch/torch_check.py" "$autotmc" "$srcdir/tests/torch/$model.net" "$w" 5 1e-2 \
            $how || fail "$model $how"
    done
done

peak() { "$autotmc" check "$srcdir/examples/resnet50.net" -D batch=32 "$@" | sed -n 's/^peak live bytes: \([0-9]*\) .*/\1/p'; }
p32=$(peak) p16=$(peak --precision bf16)
echo "resnet50 b32 peak: fp32 $p32 B, bf16 $p16 B"
if [ -z "$p32" ] || [ -z "$p16" ] || [ $((p16 * 100)) -gt $((p32 * 56)) ]; then
    fail "resnet50's bf16 peak $p16 is more than 0.56 of fp32's $p32"
fi
"$autotmc" check "$srcdir/examples/resnet50.net" --precision bf16 | grep -q '^precision: bf16 ' || fail "check does not say bf16"

s16=$("$autotmc" schedule "$srcdir/examples/resnet50.net" -D batch=32 --backend gpu --hw h200-pcie5 --precision bf16 \
    --optimizer all-fast | grep '^placement: all-fast in bf16')
[ -n "$s16" ] || fail "schedule --backend gpu --hw --precision bf16 does not place a bf16 step"
if "$autotmc" build --tf32 "$srcdir/examples/mlp.net" -o "$work/x" >"$work/out" 2>&1 ||
   ! grep -q -- "--tf32 is for the GPU backend" "$work/out"; then
    fail "build --tf32 on the CPU backend: $(cat "$work/out")"
fi
if [ -x "$srcdir/autotm-gpu-profile" ]; then # the GPU runtime is built: a GPU program's flags say TF32 (8)
    "$autotmc" build --backend gpu --hw h200-pcie5 --tf32 --emit-llvm "$srcdir/examples/mlp.net" -o "$work/g" \
        >"$work/out" 2>&1 && grep -q '^@program = .* i64 8 }$' "$work/g.ll" || fail "build --backend gpu --tf32: $(tail -3 "$work/out")"
fi
if [ -x "$srcdir/autotm-gpu-profile" ]; then # the GPU runtime is built: a bf16 GPU program builds (its kernels: tests/gpu)
    "$autotmc" build --backend gpu --hw h200-pcie5 --precision bf16 "$srcdir/examples/mlp.net" -o "$work/g16" \
        >"$work/out" 2>&1 && [ -x "$work/g16" ] || fail "build --backend gpu --precision bf16: $(tail -3 "$work/out")"
fi
"$autotmc" interpret --precision fp16 "$srcdir/examples/mlp.net" >"$work/out" 2>&1
[ $? -eq 2 ] && grep -q "expects fp32 or bf16, got 'fp16'" "$work/out" || fail "--precision fp16: $(cat "$work/out")"
[ $fails -eq 0 ]
