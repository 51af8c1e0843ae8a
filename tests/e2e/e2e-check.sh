#!/usr/bin/env bash
# Generated programs against the reference interpreter, end to end.
#
#   bash tests/e2e/e2e-check.sh MODEL
#
# (run by the tests tests/e2e/test-e2e-MODEL.sh, one per model, so that they
# run in parallel).
#
# For each model (small enough for the interpreter: mlp, test_vgg, and
# resnet50, densenet201 and inception_v3 at batch 2 and reduced resolution),
# `autotmc build` a program with every tensor in the fast tier and one with
# the spill-all placement (every activation written to the slow tier after
# its producer and read back before each user), run 3 steps of each from the
# same seed, and check:
#   - the losses of all-fast match the interpreter's to 1e-4 relative;
#   - the final weights match the interpreter's to 1e-4 relative (max-norm);
#   - the losses of spill-all are bitwise those of all-fast, and so are the
#     final weights (moves copy bytes; they must not change a result);
#   - for mlp, test_vgg, resnet50, a chain with dropout and a small GPT-2
#     (examples/gpt2.net at 2 layers of 4 heads, 128 wide, dropout 0.1; and
#     without dropout, gpt-fused: its attention and its loss fused, 96
#     positions, two of the attention kernel's blocks): so are those of
#     the programs placed by auto, recompute (half the peak of live bytes,
#     a slow tier 5000 times slower than DRAM: tests/e2e/slow-tier.hw,
#     where recomputing pays) and checkpoint (2 segments): a recomputed
#     value is bitwise the one it replaces, dropout's mask included.
#     Checkpoint must recompute something; where auto and recompute do, the
#     count is printed;
#   - for mlp, test_vgg, resnet50 and the GPTs: auto must place moves that span
#     kernels (copied in chunks, one before each kernel they overlap) at
#     one of the ratios 1:1, 4:1, 2:1, 8:1, and that program is bitwise
#     equal to all-fast too. The machine is Optane's second tier with the
#     kernels modeled by a roofline (tests/e2e/span-tier.hw), not measured:
#     kernel times measured while other tests run came out up to five
#     times longer, and moves then fitted within single kernels.
# The interpreter runs in float32 mode (every result rounded to float32).
#
# `e2e-check.sh MODEL bf16` does all of it with --precision bf16: the
# programs against the bf16 interpreter within 1e-2 instead of 1e-4 (a
# bf16 result that a kernel sums in another order may round to the
# neighbouring bf16), and every placement still bitwise equal to all-fast.
#
# The GPT is compared kernel by kernel too: AdamW moves a weight whose
# gradient is rounding noise (attention's key bias: its exact gradient is
# 0) by steps that no two float32 computations repeat, so its final
# weights cannot match the interpreter's to 1e-4 (tests/torch/test-gpt.sh
# compares them with PyTorch's in float64).
#
# The deep batchnorm networks at batch 2 are chaotic: one ulp of change in
# the input moves the interpreter's own second-step loss by several percent
# (docs/runtime.md), so no float32 implementation that sums in another
# order can follow it for 3 steps. For them the first step's loss is
# compared at 1e-4, and every kernel of the whole training step is checked
# in lockstep against the interpreter (tests/unit/test-runtime-ops --model),
# fed the interpreter's inputs; the 3-step runs must stay finite, and
# spill-all must still equal all-fast bit for bit.
set -uo pipefail
srcdir=${TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
builddir=${TOP_BUILDDIR:-$srcdir}
autotmc=${AUTOTMC:-$builddir/autotmc}
compare=$builddir/tests/e2e/compare-weights
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/e2e.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
fails=0

# MODEL bf16: everything in --precision bf16, the programs against the bf16 interpreter within 1e-2
prec=() tol=1e-4
if [ "${2:-}" = bf16 ]; then
    prec=(--precision bf16) tol=1e-2
fi

losses() { sed -n 's/^step \([0-9]*\): loss \([^ ]*\).*/\2/p' "$1"; }

check_model() { # NAME STEPS-COMPARED FILE ARGS...
    local name=$1 compared=$2 file=$3
    shift 3
    local d=$work/$name
    mkdir -p "$d"
    if ! "$autotmc" interpret "$file" "$@" "${prec[@]}" --iters 3 --save-weights "$d/ref.st" >"$d/ref.out" 2>&1; then
        echo "FAIL: $name: interpreter"; cat "$d/ref.out"; fails=$((fails + 1)); return
    fi
    for opt in all-fast spill-all; do
        if ! "$autotmc" build "$file" "$@" "${prec[@]}" --optimizer $opt -o "$d/$opt" >"$d/$opt.build" 2>&1 ||
           ! "$d/$opt" --iters 3 --threads 2 --slow-dir "$d" --save-weights "$d/$opt.st" >"$d/$opt.out" 2>&1; then
            echo "FAIL: $name: $opt program"; cat "$d/$opt.build" "$d/$opt.out" 2>/dev/null | tail -20
            fails=$((fails + 1)); return
        fi
    done
    local ok=1
    paste <(losses "$d/ref.out") <(losses "$d/all-fast.out") >"$d/pairs"
    if [ "$(wc -l <"$d/pairs")" -ne 3 ] ||
       ! head -n "$compared" "$d/pairs" | awk -v tol=$tol '{ d = $1 - $2; if (d < 0) d = -d; if (d > tol * ($1 < 0 ? -$1 : $1)) exit 1 }'; then
        echo "FAIL: $name: losses (interpreter, program), the first $compared compared:"; cat "$d/pairs"; ok=0
    fi
    if [ "$compared" = 3 ]; then
        if ! "$compare" "$d/ref.st" "$d/all-fast.st" $tol >"$d/cmp" 2>&1; then
            echo "FAIL: $name: final weights against the interpreter"; cat "$d/cmp"; ok=0
        fi
    elif ! "$builddir/tests/unit/test-runtime-ops" --model "$file" "$@" "${prec[@]}" >"$d/cmp.log" 2>&1; then
        echo "FAIL: $name: kernels in lockstep with the interpreter"; grep -v '^ok' "$d/cmp.log" | tail -20; ok=0
    else
        echo "$(grep -c '^ok' "$d/cmp.log") kernels match the interpreter in lockstep" >"$d/cmp"
    fi
    if [ "$(losses "$d/all-fast.out")" != "$(losses "$d/spill-all.out")" ] || ! cmp -s "$d/all-fast.st" "$d/spill-all.st"; then
        echo "FAIL: $name: spill-all differs from all-fast"; paste <(losses "$d/all-fast.out") <(losses "$d/spill-all.out"); ok=0
    fi
    if [ $ok = 1 ]; then
        echo "ok: $name: losses $(losses "$d/all-fast.out" | tr '\n' ' ')(first $compared compared); $(cat "$d/cmp"); spill-all bitwise equal"
    else
        fails=$((fails + 1))
    fi
}

# auto, recompute and checkpoint programs against the all-fast one of check_model
# KIND WHAT COUNT NAME FILE ARGS...: the first ratio at which auto's plan (span-tier.hw) has COUNT (a
# Python expression over the schedule's JSON, d) above 0; its program trains bitwise like all-fast
check_auto_plan() {
    local kind=$1 what=$2 count=$3 name=$4 file=$5
    shift 5
    local d=$work/$name n=0 ratio size
    # the fast-tier times are measured, so the plan varies
    for ratio in 1:1 4:1 2:1 8:1 1:2 1:3 3:2; do
        size=(--optimizer auto --ratio "$ratio" --hw "$srcdir/tests/e2e/span-tier.hw" --solver-time 10)
        if ! n=$("$autotmc" schedule "$file" "$@" "${prec[@]}" "${size[@]}" --json 2>"$d/$kind.err" | python3 -c "
import json, sys
d = json.load(sys.stdin)
print($count)"); then
            echo "FAIL: $name: auto schedule at $ratio"; tail -5 "$d/$kind.err"; fails=$((fails + 1)); return
        fi
        [ "$n" -gt 0 ] && break
    done
    if [ "$n" -eq 0 ]; then
        echo "FAIL: $name: auto has no $what at any ratio: the check tests nothing"
        fails=$((fails + 1)); return
    fi
    if ! "$autotmc" build "$file" "$@" "${prec[@]}" "${size[@]}" -o "$d/$kind" >"$d/$kind.build" 2>&1 ||
       ! "$d/$kind" --iters 3 --threads 2 --slow-dir "$d" --save-weights "$d/$kind.st" >"$d/$kind.out" 2>&1; then
        echo "FAIL: $name: auto program with $what"; tail -20 "$d/$kind.build" "$d/$kind.out"
        fails=$((fails + 1)); return
    fi
    if [ "$(losses "$d/all-fast.out")" != "$(losses "$d/$kind.out")" ] || ! cmp -s "$d/all-fast.st" "$d/$kind.st"; then
        echo "FAIL: $name: auto with $what differs from all-fast"
        paste <(losses "$d/all-fast.out") <(losses "$d/$kind.out")
        fails=$((fails + 1)); return
    fi
    echo "ok: $name: auto at $ratio (span-tier.hw), $n: $what, bitwise equal to all-fast"
}

# auto's moves that span kernels, copied in chunks, change nothing
check_spans() { # NAME FILE ARGS...
    check_auto_plan spans "moves spanning kernels (copied in chunks)" \
        'sum(len(m.get("shares", [])) > 1 for m in d["moves"])' "$@"
}

# weights and state updated in fast copies of slow homes and written back change nothing
check_offload() { # NAME FILE ARGS...
    check_auto_plan offload "weights or optimizer state offloaded" 'd["offloaded_tensors"]' "$@"
}

check_recompute() { # NAME FILE ARGS...
    local name=$1 file=$2
    shift 2
    local d=$work/$name ok=1 notes=
    for opt in auto recompute checkpoint; do
        local size=(--ratio 1:1 --hw "$srcdir/tests/e2e/slow-tier.hw" --solver-time 10)
        [ $opt = checkpoint ] && size=(--segments 2)
        if ! "$autotmc" build "$file" "$@" "${prec[@]}" --optimizer $opt "${size[@]}" -o "$d/$opt" >"$d/$opt.build" 2>&1 ||
           ! "$d/$opt" --iters 3 --threads 2 --slow-dir "$d" --save-weights "$d/$opt.st" >"$d/$opt.out" 2>&1; then
            echo "FAIL: $name: $opt program"; cat "$d/$opt.build" "$d/$opt.out" 2>/dev/null | tail -20; ok=0; continue
        fi
        local made
        made=$(sed -n 's/^recomputation: \([0-9]*\) tensors* made again.*/\1/p' "$d/$opt.build")
        if [ $opt = checkpoint ] && [ -z "$made" ]; then
            echo "FAIL: $name: checkpoint recomputes nothing"; ok=0
        fi
        if [ "$(losses "$d/all-fast.out")" != "$(losses "$d/$opt.out")" ] || ! cmp -s "$d/all-fast.st" "$d/$opt.st"; then
            echo "FAIL: $name: $opt differs from all-fast"; paste <(losses "$d/all-fast.out") <(losses "$d/$opt.out"); ok=0
        fi
        notes="$notes $opt ${made:-0} recomputed;"
    done
    if [ $ok = 1 ]; then
        echo "ok: $name: auto, recompute, checkpoint bitwise equal to all-fast;$notes"
    else
        fails=$((fails + 1))
    fi
}

ex=$srcdir/examples
case ${1:-} in
    mlp) check_model mlp 3 "$ex/mlp.net" && check_recompute mlp "$ex/mlp.net" && check_spans mlp "$ex/mlp.net" &&
        check_offload mlp "$ex/mlp.net" ;;
    test_vgg) check_model test_vgg 3 "$ex/test_vgg.net" && check_recompute test_vgg "$ex/test_vgg.net" &&
        check_spans test_vgg "$ex/test_vgg.net" ;;
    resnet50) check_model resnet50 1 "$ex/resnet50.net" -D batch=2 -D size=64 -D lr=0.001 &&
        check_recompute resnet50 "$ex/resnet50.net" -D batch=2 -D size=64 -D lr=0.001 &&
        check_spans resnet50 "$ex/resnet50.net" -D batch=2 -D size=64 -D lr=0.001 ;;
    dropout) check_model dropout 3 "$srcdir/tests/e2e/dropout.net" -D batch=1024 &&
        check_recompute dropout "$srcdir/tests/e2e/dropout.net" -D batch=1024 ;;
    gpt) set -- "$ex/gpt2.net" -D n_layer=2 -D n_head=4 -D n_embd=128 -D vocab=256 -D seq=64 -D batch=8 -D p=0.1
        check_model gpt 1 "$@" && check_recompute gpt "$@" && check_spans gpt "$@" ;;
    gpt-fused) set -- "$ex/gpt2.net" -D n_layer=2 -D n_head=4 -D n_embd=128 -D vocab=256 -D seq=96 -D batch=4 -D p=0
        check_model gpt-fused 1 "$@" && check_recompute gpt-fused "$@" && check_spans gpt-fused "$@" ;;
    densenet201) check_model densenet201 1 "$ex/densenet201.net" -D batch=2 -D size=64 -D lr=0.001 ;;
    inception_v3) check_model inception_v3 1 "$ex/inception_v3.net" -D batch=2 -D size=96 -D lr=0.001 ;;
    *) echo "usage: e2e-check.sh mlp|test_vgg|resnet50|densenet201|inception_v3|dropout|gpt [bf16]" >&2; exit 2 ;;
esac
echo "$fails failed"
[ $fails -eq 0 ]
