#!/usr/bin/env bash
# The reference interpreter against PyTorch: losses of 3 SGD steps, the
# final weights and batchnorm's running statistics of tests/torch/small.net
# (batchnorm, residual, concat, momentum) from the same safetensors weights
# and data, to 1e-4 relative.
# Skipped (77) where no python3 with torch and numpy is installed; Debian's
# python3-torch is enough.
set -uo pipefail
srcdir=${TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
autotmc=${AUTOTMC:-$srcdir/autotmc}
. "$srcdir/tests/python.sh"
need_python "torch, numpy" "python3-torch"
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/torch.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
"$py" "$srcdir/tests/torch/torch_check.py" "$autotmc" "$srcdir/tests/torch/small.net" "$work" 3 1e-4
