#!/usr/bin/env bash
# GPT-2 in the language: examples/gpt2.net at GPT-2 small's defaults has
# GPT-2 small's 124,439,808 parameters (the output projection tied to the
# token embedding, counted once), and a small GPT (tests/torch/gpt.net: 2
# layers, 4 heads, 64 wide, vocabulary 97, 16 positions, batch 3) trains
# as PyTorch's from the same weights and data for 5 AdamW steps (clipped,
# weight decay): the interpreter in float64 within 1e-6, the compiled
# program in float32 within 1e-5 (losses, and every final weight within
# 1e-5 or as close to PyTorch's float64 result as PyTorch's float32 one:
# torch_check.py). The parameter count needs no PyTorch; the rest is
# skipped (77) without it.
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
. "$srcdir/tests/python.sh"
need_python "torch, numpy" "python3-torch"
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/gpt.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
model=$srcdir/tests/torch/gpt.net
for mode in "interpret-f64 1e-6 --f64" "program-f32 1e-5 --run"; do
	set -- $mode
	mkdir -p "$work/$1"
	if out=$("$py" "$srcdir/tests/torch/torch_check.py" "$autotmc" "$model" "$work/$1" 5 "$2" "$3" 2>&1); then
		ok "$1 against PyTorch"
	else
		fail "$1 against PyTorch"
	fi
	printf '%s\n' "$out" | sed 's/^/#   /'
done
finish
