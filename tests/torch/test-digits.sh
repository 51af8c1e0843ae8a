#!/usr/bin/env bash
# The first real training run: examples/digits.net on scikit-learn's digits
# (bench/digits.py's fixed split), 20 epochs with --data, all-fast and
# under half of its peak with the default optimizer; PyTorch evaluates the
# saved weights and running statistics in eval mode on the 300 validation
# images, and each run must reach 97% accuracy. Skipped (77) where no
# python3 with torch, numpy and scikit-learn is installed.
set -uo pipefail
srcdir=${TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
autotmc=${AUTOTMC:-$srcdir/autotmc}
. "$srcdir/tests/python.sh"
need_python "torch, numpy, sklearn" "python3-torch python3-sklearn"
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/digits.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
fails=0
"$py" "$srcdir/bench/digits.py" prepare "$work/digits" || exit 1
for how in "--optimizer all-fast" "--ratio 1:1"; do
    # shellcheck disable=SC2086
    "$autotmc" run "$srcdir/examples/digits.net" $how --data "$work/digits/train" --epochs 20 \
        --save-weights "$work/w.st" >"$work/run.txt" 2>&1 || { cat "$work/run.txt"; exit 1; }
    [ "$how" = "--optimizer all-fast" ] || grep "^placement:" "$work/run.txt"
    grep "^epoch 20:" "$work/run.txt"
    "$py" "$srcdir/bench/digits.py" accuracy "$work/digits/val" "$work/w.st" >"$work/acc.txt" || exit 1
    cat "$work/acc.txt"
    acc=$(sed -n 's/^accuracy: \([0-9.]*\).*/\1/p' "$work/acc.txt")
    if awk -v a="$acc" 'BEGIN { exit !(a >= 0.97) }'; then
        echo "ok: $how: validation accuracy $acc"
    else
        echo "FAIL: $how: validation accuracy $acc, below 0.97"
        fails=$((fails + 1))
    fi
done
exit $((fails > 0))
