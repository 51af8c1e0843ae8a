#!/usr/bin/env bash
# GPT-2 in the language: examples/gpt2.net at GPT-2 small's defaults has
# GPT-2 small's 124,439,808 parameters (the output projection tied to the
# token embedding, counted once), and a small GPT (tests/torch/gpt.net: 2
# layers, 4 heads, 64 wide, vocabulary 97, 16 positions, batch 3) trains
# as PyTorch's from the same weights and data for 5 AdamW steps (clipped,
# weight decay): the interpreter in float64 within 1e-6, the compiled
# program in float32 within 1e-5 (losses, and every final weight within
# 1e-5 or as close to PyTorch's float64 result as PyTorch's float32 one:
# torch_check.py). Also the FLOPs of the dense gradients over [N, T, C].
# And the same judgement split in two as the GPU machine needs it
# (tests/gpu/remote): PyTorch's reference written here (torch_check.py
# --reference), the compiled program trained from its files and judged by
# tests/torch/agree.py, which must also reject the untrained weights.
# The float32 comparisons build attention composed (torch_check.py
# --composed): the fused kernel's float32 results differ from PyTorch's
# by rounding that AdamW amplifies on the key bias, whose gradient is 0 in
# exact arithmetic, beyond what one tensor of PyTorch's own float32 run
# differs by; the fused op is checked in float64 against PyTorch
# (interpret-f64, the default fused), its kernels against the interpreter
# (tests/unit/test-runtime-ops, tests/e2e/test-e2e-gpt-fused.sh).
# The parameter count and the FLOPs need no PyTorch; the rest is skipped
# (77) without it.
set -uo pipefail
srcdir=${TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
autotmc=${AUTOTMC:-$srcdir/autotmc}
. "$srcdir/tests/checks.sh"
out=$("$autotmc" check "$srcdir/examples/gpt2.net" 2>&1)
if grep -qx "parameters: 124439808" <<<"$out"; then
	ok "GPT-2 small has 124439808 parameters"
else
	fail "GPT-2 small's parameters: $(grep parameters <<<"$out")"
fi
# the products' FLOPs over [N, T, C]: 2 per weight element and row of x (every dimension but the last)
if "$autotmc" graph --train --json "$srcdir/tests/torch/gpt.net" | python3 -c '
import json, math, sys
g = json.load(sys.stdin)
shape = lambda i: g["tensors"][i]["shape"]
n = 0
for node in g["nodes"]:
    if node["op"] in ("dense_bwd_weight", "dense_bwd_data"):
        x = shape(node["inputs"][0]) if node["op"] == "dense_bwd_weight" else shape(node["outputs"][0])
        w = shape(node["outputs"][0]) if node["op"] == "dense_bwd_weight" else shape(node["inputs"][1])
        want = 2 * math.prod(w) * math.prod(x[:-1])
        if node["flops"] != want:
            sys.exit("%s: %d FLOPs, not %d" % (node["name"], node["flops"], want))
        n += 1
sys.exit(n == 0)'; then
	ok "the dense gradients' FLOPs count every row of [N, T, C]"
else
	fail "the dense gradients' FLOPs"
fi
. "$srcdir/tests/python.sh"
need_python "torch, numpy" "python3-torch"
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/gpt.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
model=$srcdir/tests/torch/gpt.net
for mode in "interpret-f64 1e-6 --f64" "program-f32 1e-5 --run --composed"; do
	set -- $mode
	mkdir -p "$work/$1"
	if out=$("$py" "$srcdir/tests/torch/torch_check.py" "$autotmc" "$model" "$work/$1" 5 "$2" "${@:3}" 2>&1); then
		ok "$1 against PyTorch"
	else
		fail "$1 against PyTorch"
	fi
	printf '%s\n' "$out" | sed 's/^/#   /'
done
ref=$work/ref
mkdir -p "$ref"
if out=$("$py" "$srcdir/tests/torch/torch_check.py" "$autotmc" "$model" "$ref" 5 1e-5 --reference --composed 2>&1) &&
	"$autotmc" run "$model" --attention composed --iters 5 --weights "$ref/init.safetensors" --input "$ref/x.npy" --labels "$ref/y.npy" \
		--results "$work/ref-run.json" --save-weights "$work/ref-final.safetensors" > /dev/null 2>&1; then
	if out=$("$py" "$srcdir/tests/torch/agree.py" "$ref" "$work/ref-run.json" "$work/ref-final.safetensors" 2>&1); then
		ok "the program against PyTorch's written reference (agree.py)"
	else
		fail "the program against PyTorch's written reference (agree.py)"
	fi
	printf '%s\n' "$out" | tail -2 | sed 's/^/#   /'
	"$py" "$srcdir/tests/torch/agree.py" "$ref" "$work/ref-run.json" "$ref/init.safetensors" > /dev/null 2>&1
	rc=$?
	[ $rc = 1 ] && ok "agree.py rejects the untrained weights" || fail "agree.py on the untrained weights: exit $rc"
else
	fail "PyTorch's written reference: $out"
fi
finish
