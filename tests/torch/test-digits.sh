#!/usr/bin/env bash
# The first real training run: examples/digits.net on scikit-learn's digits
# (bench/digits.py's fixed split), 20 epochs with --data, all-fast and
# under half of its peak with the default optimizer, evaluated on the 300
# validation images every 5 epochs (--val); each run must reach 97%
# accuracy, and PyTorch, evaluating the saved weights and running
# statistics in eval mode, must find the same loss (to 1e-5) and accuracy
# as the run's last evaluation. Then the same in bf16 (--precision bf16,
# under half of its peak): its last evaluation must be within 1 point (3
# images) of the fp32 all-fast run's accuracy. Skipped (77) where no
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
        --val "$work/digits/val" --eval-every 230 --save-weights "$work/w.st" >"$work/run.txt" 2>&1 ||
        { cat "$work/run.txt"; exit 1; }
    [ "$how" = "--optimizer all-fast" ] || grep "^placement:" "$work/run.txt"
    grep -E "^(epoch 20:|eval at)" "$work/run.txt"
    "$py" "$srcdir/bench/digits.py" accuracy "$work/digits/val" "$work/w.st" >"$work/acc.txt" || exit 1
    cat "$work/acc.txt"
    # ours: "eval at step 920: loss L, accuracy A% (K of 300) (T s)"; PyTorch's: "loss: L", "accuracy: A (K of 300)"
    ours=$(sed -n 's/^eval at step 920: loss \([^,]*\), accuracy [0-9.]*% (\([0-9]*\) of 300).*/\1 \2/p' "$work/run.txt")
    theirs=$(sed -n 's/^loss: \(.*\)/\1/p; s/^accuracy: [0-9.]* (\([0-9]*\) of 300)/\1/p' "$work/acc.txt" | tr '\n' ' ')
    if awk -v o="$ours" -v t="$theirs" 'BEGIN { split(o, a, " "); split(t, b, " ");
            exit !(a[2] == b[2] && a[2] >= 291 && (a[1] - b[1]) ^ 2 <= (1e-5 * b[1]) ^ 2 + 1e-14) }'; then
        echo "ok: $how: validation loss and correct of 300, autotmc $ours, PyTorch $theirs"
    else
        echo "FAIL: $how: autotmc's last evaluation ($ours) against PyTorch's ($theirs), or below 97% (291 of 300)"
        fails=$((fails + 1))
    fi
    [ "$how" = "--optimizer all-fast" ] && fp32_correct=${ours#* }
done
"$autotmc" run "$srcdir/examples/digits.net" --precision bf16 --ratio 1:1 --data "$work/digits/train" --epochs 20 \
    --val "$work/digits/val" --eval-every 230 >"$work/run.txt" 2>&1 || { cat "$work/run.txt"; exit 1; }
grep -E "^(placement:|epoch 20:|eval at)" "$work/run.txt"
bf16_correct=$(sed -n 's/^eval at step 920: loss [^,]*, accuracy [0-9.]*% (\([0-9]*\) of 300).*/\1/p' "$work/run.txt")
if [ -n "$bf16_correct" ] && [ -n "${fp32_correct:-}" ] && [ $((fp32_correct - bf16_correct)) -le 3 ]; then
    echo "ok: bf16 at 1:1: $bf16_correct of 300 correct, fp32 all-fast $fp32_correct"
else
    echo "FAIL: bf16 at 1:1: ${bf16_correct:-no evaluation} of 300 correct, more than 3 below fp32's ${fp32_correct:-?}"
    fails=$((fails + 1))
fi
exit $((fails > 0))
