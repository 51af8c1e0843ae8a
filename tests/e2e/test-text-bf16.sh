#!/usr/bin/env bash
# Real training in bf16 converges as fp32 does: tinygpt (examples/tinygpt.net) on the GPL's text
# (bench/text.py's windows of 64 bytes), 20 epochs (600 steps of AdamW with warm-up and a cosine
# schedule) from the same seed in fp32 and in --precision bf16; bf16's final validation loss must be
# within 2% of fp32's. Skipped (77) where no python3 with numpy, or no GPL text, is installed.
set -uo pipefail
srcdir=${TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
autotmc=${AUTOTMC:-$srcdir/autotmc}
. "$srcdir/tests/python.sh"
need_python "numpy" "python3-numpy"
gpl=/usr/share/common-licenses/GPL-3
[ -r "$gpl" ] || { echo "skipping: no $gpl (base-files)"; exit 77; }
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/text.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
"$py" "$srcdir/bench/text.py" prepare "$gpl" "$work/gpl" >/dev/null || exit 1
for p in fp32 bf16; do
    "$autotmc" run "$srcdir/examples/tinygpt.net" --precision $p --data "$work/gpl/train" --val "$work/gpl/val" \
        --epochs 20 --eval-every 300 --seed 2 >"$work/$p.txt" 2>&1 || { cat "$work/$p.txt"; exit 1; }
    grep "^eval at step 600" "$work/$p.txt" | sed "s/^/$p: /"
done
last() { sed -n 's/^eval at step 600: loss \([^,]*\),.*/\1/p' "$work/$1.txt"; }
f=$(last fp32) b=$(last bf16)
if [ -n "$f" ] && [ -n "$b" ] && awk -v f="$f" -v b="$b" 'BEGIN { d = b - f; if (d < 0) d = -d; exit !(d <= 0.02 * f) }'; then
    echo "ok: final validation loss bf16 $b, fp32 $f: within 2%"
else
    echo "FAIL: final validation loss bf16 ${b:-none}, fp32 ${f:-none}: not within 2%"
    exit 1
fi
