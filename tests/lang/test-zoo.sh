#!/usr/bin/env bash
# The model zoo: every example passes `autotmc check` at its default batch
# and prints its peak live bytes; the large AutoTM workloads also at batch 1;
# the six torchvision-identical models have exactly torchvision's
# parameter counts (torchvision 0.14: sum of p.numel() over parameters()).
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

declare -A torchvision=(
    [vgg19.net]=143667240
    [resnet50.net]=25557032
    [resnet152.net]=60192808
    [densenet201.net]=20013928
    [inception_v3.net]=23834568
    [mobilenet_v2.net]=3504872
)
# not torchvision's: timm's vit_tiny_patch16_224
declare -A others=([vit.net]=5717416)
for f in "${!others[@]}"; do
    got=$("$autotmc" check "$f" | sed -n 's/^parameters: //p')
    if [ "$got" != "${others[$f]}" ]; then
        echo "FAIL: $f has $got parameters, its reference ${others[$f]}"
        fails=$((fails + 1))
    else
        echo "ok: $f has its reference's $got parameters"
    fi
done
for f in "${!torchvision[@]}"; do
    got=$("$autotmc" check "$f" | sed -n 's/^parameters: //p')
    if [ "$got" != "${torchvision[$f]}" ]; then
        echo "FAIL: $f has $got parameters, torchvision's model ${torchvision[$f]}"
        fails=$((fails + 1))
    else
        echo "ok: $f has torchvision's $got parameters"
    fi
done
echo "$fails failed"
[ $fails -eq 0 ]
