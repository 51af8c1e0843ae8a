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
py=
for cand in python3 /usr/bin/python3; do
    if command -v "$cand" >/dev/null && "$cand" -c 'import torch, numpy' 2>/dev/null; then
        py=$cand
        break
    fi
done
if [ -z "$py" ]; then
    echo "skipping: no python3 with torch and numpy (apt-get install python3-torch)"
    exit 77
fi
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/torch.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
"$py" "$srcdir/tests/torch/torch_check.py" "$autotmc" "$srcdir/tests/torch/small.net" "$work" 3 1e-4
