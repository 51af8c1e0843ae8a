#!/usr/bin/env bash
# Token models (tests/torch/tokennet.net: i32 ids, embedding,
# position_embedding, layernorm, dense over [N, T, C], the cross-entropy
# of class ids) against PyTorch, 5 AdamW steps from the same weights and
# data: the interpreter in float64 within 1e-6, the compiled program in
# float32 within 1e-5 (losses and every final weight). Then the program
# with every activation moved through the slow tier (spill-all) is
# bitwise the all-fast one, and a run on a dataset of ids with --val
# evaluates per position, as `autotmc eval --outputs` does.
# Skipped (77) where no python3 with torch and numpy is installed.
set -uo pipefail
srcdir=${TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
autotmc=${AUTOTMC:-$srcdir/autotmc}
. "$srcdir/tests/python.sh"
. "$srcdir/tests/checks.sh"
need_python "torch, numpy" "python3-torch"
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/tokens.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
model=$srcdir/tests/torch/tokennet.net
holds() { # message command...: the command succeeds
	local msg=$1
	shift
	if "$@"; then ok "$msg"; else fail "$msg"; fi
}

torch_check() { # name args...
	local name=$1
	shift
	mkdir -p "$work/$name"
	if out=$("$py" "$srcdir/tests/torch/torch_check.py" "$autotmc" "$model" "$work/$name" "$@" 2>&1); then
		ok "$name against PyTorch"
	else
		fail "$name against PyTorch"
	fi
	printf '%s\n' "$out" | sed 's/^/#   /'
}
torch_check interpret-f64 5 1e-6 --f64
torch_check program-f32 5 1e-5 --run

# moves change nothing: spill-all against all-fast, the same weights and batch
d=$work/program-f32
for o in all-fast spill-all; do
	"$autotmc" run "$model" --optimizer "$o" --iters 3 --weights "$d/init.safetensors" --input "$d/x.npy" \
		--labels "$d/y.npy" --save-weights "$work/$o.safetensors" --results "$work/$o.json" >"$work/$o.out" 2>&1 ||
		fail "run --optimizer $o: $(cat "$work/$o.out")"
done
holds "spill-all's weights are all-fast's, bitwise" cmp -s "$work/all-fast.safetensors" "$work/spill-all.safetensors"
holds "spill-all's losses are all-fast's" "$py" -c "
import json, sys
a, b = (json.load(open(sys.argv[i]))['losses'] for i in (1, 2))
sys.exit(a != b or len(a) != 3)" "$work/all-fast.json" "$work/spill-all.json"

# a dataset of ids, evaluated per position
"$py" - "$work" <<'PY'
import sys, numpy as np
w = sys.argv[1]
r = np.random.default_rng(5)
for d, n in (("train", 12), ("val", 5)):
    x = r.integers(0, 23, (n, 8)).astype(np.int32)
    np.save(f"{w}/{d}-x.npy", x)
    np.save(f"{w}/{d}-y.npy", ((x * 3 + 1) % 23).astype(np.int64))
PY
for d in train val; do mkdir -p "$work/$d" && mv "$work/$d-x.npy" "$work/$d/x.npy" && mv "$work/$d-y.npy" "$work/$d/y.npy"; done
out=$("$autotmc" run "$model" --data "$work/train" --val "$work/val" --epochs 4 --save-weights "$work/w.safetensors" 2>&1)
holds "a run on ids evaluates 40 positions" grep -q "eval at step 16: .*(.* of 40 positions)" <<<"$out"
printf '%s\n' "$out" | grep "eval at" | sed 's/^/#   /'
"$autotmc" eval "$model" --weights "$work/w.safetensors" --data "$work/val" --outputs "$work/out.npy" >"$work/eval.out" 2>&1 ||
	fail "autotmc eval: $(cat "$work/eval.out")"
holds "eval --outputs is [5, 8, 23]" "$py" -c "
import numpy as np, sys
sys.exit(np.load(sys.argv[1]).shape != (5, 8, 23))" "$work/out.npy"
holds "ids out of range are refused with the sample named" bash -c "
\"$py\" -c 'import numpy as np; x = np.zeros((12, 8), np.int32); x[7, 2] = 23; np.save(\"$work/train/x.npy\", x)'
\"$autotmc\" run \"$model\" --data \"$work/train\" --iters 4 2>&1 | grep -q 'sample 7 holds 23 at element 2, not an id in \\[0, 23)'"
finish
