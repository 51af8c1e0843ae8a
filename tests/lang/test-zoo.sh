#!/usr/bin/env bash
# The model zoo: every example passes `autotmc check` at its default batch
# and prints its peak live bytes; the large AutoTM workloads also at batch 1;
# the six torchvision-identical models have exactly torchvision's
# parameter counts (torchvision 0.14: sum of p.numel() over parameters()),
# and vit.net timm's vit_tiny_patch16_224's.
set -uo pipefail
srcdir=${TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
autotmc=${AUTOTMC:-$srcdir/autotmc}
cd "$srcdir/examples" || exit 1
fails=0

check() { # check FILE [ARGS...]: exit 0 and a 'peak live bytes' line
    local out
    if ! out=$("$autotmc" check "$@" 2>&1) || ! grep -q '^peak live bytes: [1-9]' <<<"$out"; then
        echo "FAIL: autotmc check $*"
        echo "$out" | tail -5
        fails=$((fails + 1))
        return 1
    fi
    echo "ok: $* -> $(grep '^parameters:' <<<"$out"), $(grep '^peak live bytes' <<<"$out" | cut -d' ' -f4-5)"
}

for f in *.net; do
    check "$f"
done
for f in resnet200.net densenet264.net inception_v4.net vgg416.net; do
    check "$f" -D batch=1
done

# MODEL=COUNT:REFERENCE, the reference model whose parameter count it has
for spec in vgg19.net=143667240:torchvision resnet50.net=25557032:torchvision \
        resnet152.net=60192808:torchvision densenet201.net=20013928:torchvision \
        inception_v3.net=23834568:torchvision mobilenet_v2.net=3504872:torchvision \
        "vit.net=5717416:timm's vit_tiny_patch16_224"; do
    f=${spec%%=*} want=${spec#*=}
    ref=${want#*:} want=${want%%:*}
    got=$("$autotmc" check "$f" | sed -n 's/^parameters: //p')
    if [ "$got" != "$want" ]; then
        echo "FAIL: $f has $got parameters, $ref's $want"
        fails=$((fails + 1))
    else
        echo "ok: $f has $ref's $got parameters"
    fi
done
echo "$fails failed"
[ $fails -eq 0 ]
