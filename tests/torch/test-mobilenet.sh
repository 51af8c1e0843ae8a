#!/usr/bin/env bash
# examples/mobilenet_v2.net against PyTorch (its parameter count, torchvision's,
# is tests/lang/test-zoo.sh's): 3 SGD steps of the reference interpreter at
# batch 8, 64x64, 10 classes, no dropout: the losses, the final weights and
# batchnorm's running statistics from the same safetensors weights and data,
# to 1e-4 relative as tests/torch/torch_check.py judges them (depthwise
# convolutions, relu6, inverted residuals).
set -uo pipefail
srcdir=${TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
autotmc=${AUTOTMC:-$srcdir/autotmc}
. "$srcdir/tests/python.sh"
need_python "torch, numpy" "python3-torch"
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/mobilenet.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
"$py" "$srcdir/tests/torch/torch_check.py" "$autotmc" "$srcdir/examples/mobilenet_v2.net" "$work" 3 1e-4 \
    -Dbatch=8 -Dsize=64 -Dclasses=10 -Dp=0 -Dlr=0.002
