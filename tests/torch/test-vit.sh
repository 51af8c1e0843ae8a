#!/usr/bin/env bash
# examples/vit.net against PyTorch: a small ViT (32x32 images in 8x8 patches,
# width 32, 2 blocks of 2 heads, 10 classes; its parameter count at the
# defaults, timm's ViT-Ti/16, is tests/lang/test-zoo.sh's), 3 AdamW steps by
# the reference interpreter and by the compiled CPU program: the losses and
# the final weights from the same safetensors weights and data, to 1e-4
# relative (patch embedding, tokens, the class token, bidirectional
# attention, token(0)).
set -uo pipefail
srcdir=${TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
autotmc=${AUTOTMC:-$srcdir/autotmc}
. "$srcdir/tests/python.sh"
need_python "torch, numpy" "python3-torch"
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/vit.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
fails=0
for how in "" --run; do
    mkdir -p "$work/x$how"
    # shellcheck disable=SC2086
    "$py" "$srcdir/tests/torch/torch_check.py" "$autotmc" "$srcdir/examples/vit.net" "$work/x$how" 3 1e-4 $how \
        -Dbatch=4 -Dsize=32 -Dpatch=8 -Dwidth=32 -Ddepth=2 -Dheads=2 -Dclasses=10 || fails=$((fails + 1))
done
[ $fails -eq 0 ]
