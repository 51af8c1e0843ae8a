#!/usr/bin/env bash
# The CPU's channel-blocked layouts (compiler/front/layout.h) change where bytes go, not results:
# tests/e2e/blocked.net (channels in blocks of 16: a stem with max pooling, a dense block and a
# transition, a residual block with biases) trains 3 steps with its activations blocked (the default)
# and with AUTOTM_BLOCKED=0 (every tensor row-major), fused and with --no-fuse, in fp32 and bf16, from
# the same seed. Blocked must agree with row-major within 1e-5 relative in fp32 (losses and final
# weights; only a batch normalisation's sums are taken in another order: measured bit for bit) and
# 1e-2 / 5e-2 in bf16, and a second blocked run must repeat the first bit for bit. Then what check
# prints, and a placement with moves training bit for bit as the all-fast program.
set -uo pipefail
srcdir=${TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
builddir=${TOP_BUILDDIR:-$srcdir}
autotmc=${AUTOTMC:-$builddir/autotmc}
compare=$builddir/tests/e2e/compare-weights
model=$srcdir/tests/e2e/blocked.net
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/layout.XXXXXX") || { echo "FAIL: cannot make a temporary directory"; exit 1; }
trap 'rm -rf "$work"' EXIT
fails=0
losses() { sed -n 's/^step \([0-9]*\): loss \([^ ]*\).*/\2/p' "$1"; }
train() { # NAME BLOCKED ARGS...: 3 steps into $work/NAME.out and NAME.st
    local name=$1 blocked=$2
    shift 2
    AUTOTM_BLOCKED=$blocked "$autotmc" run "$model" --iters 3 --threads 2 --slow-dir "$work" \
        --save-weights "$work/$name.st" "$@" >"$work/$name.out" 2>&1 ||
        { echo "FAIL: $name"; tail -5 "$work/$name.out"; return 1; }
}
for prec in fp32 bf16; do
    for fuse in fused unfused; do
        tol=1e-5 wtol=1e-5
        [ $prec = bf16 ] && tol=1e-2 wtol=5e-2
        flag=()
        [ $fuse = unfused ] && flag=(--no-fuse)
        n=$prec-$fuse
        train "$n-blocked" 1 --precision $prec "${flag[@]}" && train "$n-blocked2" 1 --precision $prec "${flag[@]}" &&
            train "$n-plain" 0 --precision $prec "${flag[@]}" || { fails=$((fails + 1)); continue; }
        ok=1
        if ! paste <(losses "$work/$n-blocked.out") <(losses "$work/$n-plain.out") | awk -v tol=$tol 'NF != 2 { exit 1 }
                { e = $1 - $2; if (e < 0) e = -e; if (e > tol * ($2 < 0 ? -$2 : $2)) exit 1 } END { exit NR != 3 }'; then
            echo "FAIL: $n: losses blocked / row-major:"; paste <(losses "$work/$n-blocked.out") <(losses "$work/$n-plain.out")
            ok=0
        fi
        if ! "$compare" "$work/$n-plain.st" "$work/$n-blocked.st" $wtol >"$work/cmp" 2>&1; then
            echo "FAIL: $n: weights blocked against row-major"; cat "$work/cmp"; ok=0
        fi
        if [ "$(losses "$work/$n-blocked.out")" != "$(losses "$work/$n-blocked2.out")" ] ||
                ! cmp -s "$work/$n-blocked.st" "$work/$n-blocked2.st"; then
            echo "FAIL: $n: a second blocked run differs"; ok=0
        fi
        [ $ok = 1 ] && echo "ok: $n: losses $(losses "$work/$n-blocked.out" | tr '\n' ' ')/ $(losses "$work/$n-plain.out" |
            tr '\n' ' ')row-major; $(cat "$work/cmp"); repeatable"
        [ $ok = 1 ] || fails=$((fails + 1))
    done
done
# check: how many tensors are blocked (every [N, C, H, W] activation and gradient of 16k channels, and the global
# pooling's [N, C, 1, 1], whose bytes are those of either layout), none on the GPU backend nor with AUTOTM_BLOCKED=0
out=$("$autotmc" check "$model")
nblocked=$(sed -n 's/^layout: \([0-9]*\) activations and gradients stored channel-blocked.*/\1/p' <<<"$out")
if [ "$nblocked" = 47 ] && ! AUTOTM_BLOCKED=0 "$autotmc" check "$model" | grep -q '^layout:' &&
        ! "$autotmc" check "$model" --backend gpu --hw "$srcdir/hw/h200-pcie5.hw" 2>&1 | grep -q '^layout:'; then
    echo "ok: check: $nblocked tensors blocked on the CPU, none row-major or on the GPU"
else
    echo "FAIL: check: [$nblocked] tensors blocked, 47 expected"; fails=$((fails + 1))
fi
# graph --train marks them, and the profiles' signatures tell the layouts apart
marked=$("$autotmc" graph --train "$model" | grep -c ' nChw16c' || true)
if [ "$marked" = 47 ] && "$autotmc" profile "$model" --fast-only --threads 2 --profile-db "$work/p.db" -q &&
        grep -aqs 'maxpool \[4,32,16,16\]c16 -> \[4,32,8,8\]c16' "$work"/p.db*; then
    echo "ok: graph --train marks the $marked blocked tensors (nChw16c)"
else
    echo "FAIL: graph --train marks [$marked] tensors nChw16c"; fails=$((fails + 1))
fi
# a placement with moves trains bit for bit as the all-fast program
train fast 1 --optimizer all-fast && train placed 1 --limit 700KiB --hw optane-6dimm || fails=$((fails + 1))
if grep -q '^placement: auto; [1-9]' "$work/placed.out" && cmp -s "$work/fast.st" "$work/placed.st" &&
        [ "$(losses "$work/fast.out")" = "$(losses "$work/placed.out")" ]; then
    echo "ok: $(grep '^placement:' "$work/placed.out"), bit for bit all-fast"
else
    echo "FAIL: the placed program against all-fast"; grep '^placement:' "$work/placed.out"; fails=$((fails + 1))
fi
exit $((fails > 0))
