#!/usr/bin/env bash
# Layers beyond the zoo's against PyTorch, 3 steps by the reference
# interpreter and by the compiled CPU program, to 1e-4 relative as
# tests/torch/torch_check.py judges them: squeeze-and-excitation's gate with
# hardswish and silu (se.net), a [batch, seq, features] input through
# bidirectional attention, clamp and the mean over its positions (seq.net).
set -uo pipefail
srcdir=${TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
autotmc=${AUTOTMC:-$srcdir/autotmc}
. "$srcdir/tests/python.sh"
need_python "torch, numpy" "python3-torch"
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/layers.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
fails=0
for model in se seq; do
    for how in "" --run; do
        mkdir -p "$work/$model$how"
        # shellcheck disable=SC2086
        "$py" "$srcdir/tests/torch/torch_check.py" "$autotmc" "$srcdir/tests/torch/$model.net" "$work/$model$how" 3 1e-4 \
            $how || fails=$((fails + 1))
    done
done
[ $fails -eq 0 ]
