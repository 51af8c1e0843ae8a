#!/usr/bin/env bash
# The measured GPU profiles committed in bench/gpu/profiles/ stay usable on
# any machine: each MODEL-bBATCH.gpu.tsv holds every kernel of its model's
# training step (an op added to the model without profiling it again makes
# the profile unusable: autotmc refuses to plan with it), and all-fast
# planned from it is predicted from measured times; the hw file fitted to
# them stays within 25% of each.
set -uo pipefail
srcdir=${TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
builddir=${TOP_BUILDDIR:-$srcdir}
autotmc=${AUTOTMC:-$builddir/autotmc}
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/gpuprofiles.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
fails=0 n=0
for p in "$srcdir"/bench/gpu/profiles/*-b*.gpu.tsv; do
    name=$(basename "$p" .gpu.tsv)
    model=${name%-b*} batch=${name##*-b}
    size=224; [ "$model" = inception_v3 ] && size=299
    n=$((n + 1))
    if "$autotmc" schedule "$srcdir/examples/$model.net" -D batch="$batch" -D size="$size" --backend gpu \
            --gpu-profile "$p" --optimizer all-fast > "$work/$name.out" 2>&1 &&
       grep -q "GPU profile .*$name.gpu.tsv" "$work/$name.out"; then
        echo "  ok: $name"
    else
        echo "FAIL: $name: $(grep -m1 error "$work/$name.out" || tail -1 "$work/$name.out")"
        fails=$((fails + 1))
    fi
done
[ $n -gt 0 ] || { echo "FAIL: no profiles in bench/gpu/profiles"; fails=1; }
# hw/h200-pcie5.hw, whose per-op rates were fitted to these profiles
# (bench/gpu/fit_hw.py), models each one's all-fast step within 25%
if ! /usr/bin/env python3 "$srcdir/bench/gpu/fit_hw.py" --autotmc "$autotmc" --profiles "$srcdir/bench/gpu/profiles" \
        --check "$srcdir/hw/h200-pcie5.hw" --within 0.25; then
    echo "FAIL: hw/h200-pcie5.hw is off by more than 25% on a profile"
    fails=$((fails + 1))
fi
echo "$fails failed"
[ $fails -eq 0 ]
