#!/usr/bin/env bash
# The optimizers, schedules and clipping against torch.optim: the
# interpreter in float64 (--f64) against PyTorch in float64 over 5 steps of
# tests/torch/small.net, losses and every final weight and running
# statistic within 1e-6 relative, for SGD with momentum, weight decay and
# Nesterov's method, SGD with step decay and clipping, AdamW, AdamW with
# warmup, cosine decay and clipping, and SGD with momentum, cosine decay
# and clipping; then two of them as compiled programs in float32 against
# PyTorch in float32 (1e-3: AdamW divides by the root of small second
# moments, which float32 rounding of the gradients moves).
# Skipped (77) where no python3 with torch and numpy is installed.
set -uo pipefail
srcdir=${TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
autotmc=${AUTOTMC:-$srcdir/autotmc}
. "$srcdir/tests/python.sh"
need_python "torch, numpy" "python3-torch"
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/optim.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT

optimizers=(
	"sgd(lr = 0.1, momentum = 0.9, weight_decay = 0.01, nesterov = true)"
	"sgd(lr = 0.2, weight_decay = 0.05, clip = 0.5, schedule = step_decay(every = 2, gamma = 0.5))"
	"adamw(lr = 0.01)"
	"adamw(lr = 0.01, beta1 = 0.8, beta2 = 0.99, eps = 1e-6, weight_decay = 0.1, clip = 0.5, schedule = cosine(steps = 4, warmup = 2, floor = 0.001))"
	"sgd(lr = 0.1, momentum = 0.5, clip = 0.5, schedule = cosine(steps = 5, floor = 0.01))"
)
failed=0
check() { # name optimizer flags...
	local name=$1 opt=$2
	shift 2
	sed "s/^optimizer = .*/optimizer = $opt/" "$srcdir/tests/torch/small.net" >"$work/model.net"
	grep -qF "optimizer = $opt" "$work/model.net" || { echo "not ok - $name: no model"; failed=1; return; }
	mkdir -p "$work/$name"
	if out=$("$py" "$srcdir/tests/torch/torch_check.py" "$autotmc" "$work/model.net" "$work/$name" "$@" 2>&1); then
		echo "ok - $name: $opt"
	else
		echo "not ok - $name: $opt"
		failed=1
	fi
	printf '%s\n' "$out" | sed 's/^/#   /'
}
for i in "${!optimizers[@]}"; do
	check "interpret-f64-$i" "${optimizers[$i]}" 5 1e-6 --f64
done
check "program-f32-1" "${optimizers[1]}" 5 1e-3 --run
check "program-f32-3" "${optimizers[3]}" 5 1e-3 --run
exit $failed
