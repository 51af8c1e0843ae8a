#!/usr/bin/env bash
# Fusion changes kernels, not results: test_vgg (relu after its convolutions and a dense layer,
# the relus' gradients with the bias gradients after them),
# tests/torch/small.net (relu after batchnorm, a residual block), tests/e2e/dense-blocks.net (a
# densenet's concatenations: their gradient sums added by the batchnorms' backward kernels) and
# tests/e2e/attention.net (fused
# attention, causal and not, across the kernel's blocks; residual adds folded into dropout, dense and
# layernorm_bwd; a GELU's gradient with its bias gradient; the output layer fused with the loss, in
# blocks of 64 rows; in bf16 autocast's casts folded into the updates and layer norms) train 3 steps fused (the default) and with
# --no-fuse, in fp32 and bf16, from the same seed. Fused must have fewer kernels; its losses and
# final weights must agree with the unfused ones within 1e-5 relative in fp32 (measured: the
# activations bit for bit; attention 2e-7, a softmax normalised by its log-sum-exp and products
# summed in blocks), and in bf16 its losses within 1e-2 and its weights within 5e-2: a fused tanh
# or sigmoid reads the product before it is rounded to bf16, and small.net's batchnorm biases,
# whose gradients nearly cancel, carry that (measured 1.3e-2; attention 2e-3); and a second fused
# run must repeat the first bit for bit. dense-blocks must be bit for bit its unfused self in both
# precisions (its folds round as the kernels they replace); attention.net placed with moves and with
# recomputation must train bit for bit as its all-fast program. Then what check prints of fused attention, and the GPU
# backend's refusal of it (its runtime has no such kernel) except on a modeled GPU; the GPU backend with --fuse
# folding the same nodes as the CPU (tests/gpu runs its fused kernels), and only the loss without it.
set -uo pipefail
srcdir=${TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
builddir=${TOP_BUILDDIR:-$srcdir}
autotmc=${AUTOTMC:-$builddir/autotmc}
compare=$builddir/tests/e2e/compare-weights
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/fusion.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
fails=0
losses() { sed -n 's/^step \([0-9]*\): loss \([^ ]*\).*/\2/p' "$1"; }
kernels() { "$autotmc" check "$@" | sed -n 's/^training step: \([0-9]*\) nodes.*/\1/p'; }
for model in "$srcdir/examples/test_vgg.net" "$srcdir/tests/torch/small.net" "$srcdir/tests/e2e/dense-blocks.net" \
        "$srcdir/tests/e2e/attention.net"; do
    for prec in fp32 bf16; do
        tol=1e-5 wtol=1e-5
        [ $prec = bf16 ] && tol=1e-2 wtol=5e-2
        name=$(basename "$model" .net)-$prec d=$work/$name
        mkdir -p "$d"
        for run in fused fused2 unfused; do
            flag=(--head-loss fused) # in bf16 too, where it is not the default
            [ $run = unfused ] && flag=(--no-fuse)
            if ! AUTOTM_HEAD_BLOCK_ROWS=64 "$autotmc" run "$model" --precision $prec "${flag[@]}" --iters 3 --threads 2 --slow-dir "$d" \
                    --save-weights "$d/$run.st" >"$d/$run.out" 2>&1; then
                echo "FAIL: $name: $run"; tail -5 "$d/$run.out"; fails=$((fails + 1)); continue 2
            fi
        done
        kf=$(kernels "$model" --precision $prec) ku=$(kernels "$model" --precision $prec --no-fuse)
        ok=1
        [ -n "$kf" ] && [ -n "$ku" ] && [ "$kf" -lt "$ku" ] || { echo "FAIL: $name: $kf kernels fused, $ku not"; ok=0; }
        if ! paste <(losses "$d/fused.out") <(losses "$d/unfused.out") | awk -v tol=$tol 'NF != 2 { exit 1 }
                { e = $1 - $2; if (e < 0) e = -e; if (e > tol * ($2 < 0 ? -$2 : $2)) exit 1 } END { exit NR != 3 }'; then
            echo "FAIL: $name: losses fused / unfused:"; paste <(losses "$d/fused.out") <(losses "$d/unfused.out"); ok=0
        fi
        if ! "$compare" "$d/unfused.st" "$d/fused.st" $wtol >"$d/cmp" 2>&1; then
            echo "FAIL: $name: weights fused against unfused"; cat "$d/cmp"; ok=0
        fi
        if [ "$(losses "$d/fused.out")" != "$(losses "$d/fused2.out")" ] || ! cmp -s "$d/fused.st" "$d/fused2.st"; then
            echo "FAIL: $name: a second fused run differs"; ok=0
        fi
        if [[ $name = dense-blocks-* ]] && { [ "$(losses "$d/fused.out")" != "$(losses "$d/unfused.out")" ] ||
                ! cmp -s "$d/fused.st" "$d/unfused.st"; }; then
            echo "FAIL: $name: fused is not bit for bit unfused"; ok=0
        fi
        [ $ok = 1 ] && echo "ok: $name: $kf kernels fused, $ku unfused; losses $(losses "$d/fused.out" | tr '\n' ' ')/ $(losses "$d/unfused.out" | tr '\n' ' '); $(cat "$d/cmp"); repeatable"
        [ $ok = 1 ] || fails=$((fails + 1))
    done
done
# placements of the fused attention.net (moves; recomputation) train bit for bit as its all-fast program
att=$srcdir/tests/e2e/attention.net
"$autotmc" run "$att" --optimizer all-fast --iters 3 --threads 2 --save-weights "$work/att-fast.st" >"$work/att-fast.out" 2>&1
for how in "--limit 700KiB --hw optane-6dimm" "--limit 1MiB --hw optane-6dimm --optimizer recompute"; do
    # shellcheck disable=SC2086
    if "$autotmc" run "$att" $how --iters 3 --threads 2 --slow-dir "$work" --save-weights "$work/att-placed.st" \
            >"$work/att-placed.out" 2>&1 && cmp -s "$work/att-fast.st" "$work/att-placed.st" &&
            [ "$(losses "$work/att-fast.out")" = "$(losses "$work/att-placed.out")" ]; then
        echo "ok: attention.net $how: $(grep -E '^placement:' "$work/att-placed.out"), bit for bit all-fast"
    else
        echo "FAIL: attention.net $how against all-fast"; tail -3 "$work/att-placed.out"; fails=$((fails + 1))
    fi
done
# check: the densenet's gradient sums fused; attention.net's residual gradients (2) and residual adds (dropout, dense)
for sums in dense-blocks:6 attention:6; do
    if "$autotmc" check "$srcdir/tests/e2e/${sums%:*}.net" | grep -q "^fusion: ${sums#*:} sums added by the kernels before"; then
        echo "ok: check: ${sums#*:} sums fused in ${sums%:*}.net"
    else
        echo "FAIL: check of ${sums%:*}.net: $("$autotmc" check "$srcdir/tests/e2e/${sums%:*}.net" | grep fusion)"
        fails=$((fails + 1))
    fi
done
# bf16: autocast's casts folded (dense-blocks above is bit for bit its unfused self with them): the weights'
# gradients read as bf16 by their updates (16 in dense-blocks; attention.net's 12, its 4 layer norms' outputs and
# dy, and 3 residual adds of a bf16 product); none with --no-fuse
for m in dense-blocks:16 attention:23; do
    src=$srcdir/tests/e2e/${m%:*}.net
    n=$("$autotmc" check "$src" --precision bf16 | sed -n "s/^fusion: \([0-9]*\) of autocast's casts folded.*/\1/p")
    if [ "$n" = "${m#*:}" ] && ! "$autotmc" check "$src" --precision bf16 --no-fuse | grep -q "autocast's casts folded"; then
        echo "ok: check: ${m#*:} of autocast's casts folded in ${m%:*}.net"
    else
        echo "FAIL: ${m%:*}.net: [$n] casts folded, ${m#*:} expected"; fails=$((fails + 1))
    fi
done
# ... and bit for bit the same training without those folds (AUTOTM_FUSE_CASTS=0)
for model in "$srcdir/tests/e2e/attention.net" "$srcdir/examples/test_vgg.net"; do
    name=$(basename "$model" .net)
    for folds in 1 0; do
        AUTOTM_FUSE_CASTS=$folds "$autotmc" run "$model" --precision bf16 --iters 3 --threads 2 \
            --save-weights "$work/casts$folds.st" >"$work/casts$folds.out" 2>&1
    done
    if cmp -s "$work/casts1.st" "$work/casts0.st" && [ -s "$work/casts1.st" ] &&
            [ "$(losses "$work/casts1.out")" = "$(losses "$work/casts0.out")" ]; then
        echo "ok: $name bf16: bit for bit with autocast's casts folded and kept"
    else
        echo "FAIL: $name bf16: the casts' folds change the results"; fails=$((fails + 1))
    fi
done
# check: the attention layers fused, and the peak without fusion (the [T, T] weights kept) larger
att=$srcdir/tests/e2e/attention.net
out=$("$autotmc" check "$att" 2>&1)
peak=$(sed -n 's/^peak live bytes: \([0-9]*\) .*/\1/p' <<<"$out")
unfused=$(sed -n 's/^with --no-fuse: [0-9]* kernels, peak live bytes \([0-9]*\) .*/\1/p' <<<"$out")
if grep -q '^fusion: 2 attention layers fused' <<<"$out" && [ -n "$peak" ] && [ -n "$unfused" ] &&
        [ "$peak" -lt "$unfused" ]; then
    echo "ok: check: 2 attention layers fused, peak $peak B against $unfused B with --no-fuse"
else
    echo "FAIL: check of fused attention:"; printf '%s\n' "$out"; fails=$((fails + 1))
fi
composed=$("$autotmc" graph --train "$att" --attention composed)
if grep -q ' = attention(' <<<"$composed" || ! grep -q ' = causal_softmax(' <<<"$composed"; then
    echo "FAIL: --attention composed does not compose attention"; fails=$((fails + 1))
fi
refused() { # WHAT MESSAGE ARGS...: autotmc ARGS exits 2 saying MESSAGE
    local what=$1 msg=$2 err rc
    shift 2
    err=$("$autotmc" "$@" 2>&1 >/dev/null); rc=$?
    if [ $rc -eq 2 ] && grep -q "$msg" <<<"$err"; then
        echo "ok: $what refused"
    else
        echo "FAIL: $what: exit $rc, $err"; fails=$((fails + 1))
    fi
}
refused "--attention fused with --no-fuse" "give it or --attention fused" check "$att" --attention fused --no-fuse
refused "--attention with another value" "expects fused or composed" check "$att" --attention flash
refused "--head-loss fused with --no-fuse" "give it or --head-loss fused" check "$att" --head-loss fused --no-fuse
modeled=$("$autotmc" schedule "$att" --backend gpu --hw "$srcdir/hw/h200-pcie5.hw" --head-loss fused --json 2>&1)
separate=$("$autotmc" graph --train "$att" --head-loss separate 2>&1)
if grep -q '^fusion: the output layer, the loss and their gradients in one kernel' <<<"$out" &&
        grep -q '"dense_crossentropy_ids_grad"' <<<"$modeled" && ! grep -q 'dense_crossentropy_ids_grad' <<<"$separate"
then
    echo "ok: the output layer fused with its loss (check, a modeled GPU), separate with --head-loss separate"
else
    echo "FAIL: --head-loss"; fails=$((fails + 1))
fi
if "$autotmc" schedule "$att" --backend gpu --hw "$srcdir/hw/h200-pcie5.hw" --attention fused --json \
        >"$work/sched" 2>&1 && grep -q '"attention_bwd"' "$work/sched"; then
    echo "ok: a fused attention placed on a modeled GPU"
else
    echo "FAIL: schedule --backend gpu --hw --attention fused"; cat "$work/sched"; fails=$((fails + 1))
fi
# --fuse: the GPU backend folds as the CPU does (without it, only the loss); the same fused nodes on a modeled GPU
for model in dense-blocks attention; do
    src=$srcdir/tests/e2e/$model.net
    gpu=$("$autotmc" schedule "$src" --backend gpu --hw "$srcdir/hw/h200-pcie5.hw" --fuse 2>&1 |
        grep -oE '^ +[0-9]+ +[0-9.]+ +[a-z_0-9]+\+[a-z+]+' | awk '{print $3}' | sort | uniq -c)
    cpu=$("$autotmc" schedule "$src" 2>&1 | grep -oE '^ +[0-9]+ +[0-9.]+ +[a-z_0-9]+\+[a-z+]+' | awk '{print $3}' |
        sort | uniq -c)
    plain=$("$autotmc" schedule "$src" --backend gpu --hw "$srcdir/hw/h200-pcie5.hw" 2>&1 |
        grep -cE '^ +[0-9]+ +[0-9.]+ +[a-z_0-9]+\+(relu|sum|gelu|tanh|sigmoid)')
    if [ -n "$gpu" ] && [ "$gpu" = "$cpu" ] && [ "$plain" = 0 ]; then
        echo "ok: $model: --backend gpu --fuse folds as the CPU ($(echo $gpu | tr -s ' '))"
    else
        echo "FAIL: $model: --backend gpu --fuse: [$gpu] against the CPU's [$cpu]; $plain fused without --fuse"
        fails=$((fails + 1))
    fi
done
for bad in "--fuse|give --backend gpu" "--fuse --no-fuse --backend gpu|give one"; do
    IFS='|' read -r args msg <<< "$bad"
    # shellcheck disable=SC2086
    if "$autotmc" schedule "$srcdir/tests/e2e/dense-blocks.net" $args > "$work/bad" 2>&1; then
        echo "FAIL: schedule $args was accepted"; fails=$((fails + 1))
    elif grep -q "$msg" "$work/bad"; then echo "ok: schedule $args refused"
    else echo "FAIL: schedule $args: $(head -1 "$work/bad")"; fails=$((fails + 1)); fi
done
if [ -x "$srcdir/autotm-gpu-profile" ]; then # the GPU runtime is built: fused programs build for it (tests/gpu runs them)
    for model in dense-blocks attention; do
        "$autotmc" build "$srcdir/tests/e2e/$model.net" --backend gpu --hw "$srcdir/hw/h200-pcie5.hw" --fuse \
            --precision bf16 -o "$work/gpu-$model" >"$work/out" 2>&1 && [ -x "$work/gpu-$model" ] &&
            echo "ok: $model built for the GPU with --fuse (bf16)" ||
            { echo "FAIL: build $model --backend gpu --fuse: $(tail -3 "$work/out")"; fails=$((fails + 1)); }
    done
fi
if [ -x "$srcdir/autotm-gpu-profile" ]; then # the GPU runtime is built: fused attention and head build for it (tests/gpu runs them)
    "$autotmc" build "$att" --backend gpu --hw "$srcdir/hw/h200-pcie5.hw" --attention fused --head-loss fused \
        -o "$work/gpu-prog" >"$work/out" 2>&1 && [ -x "$work/gpu-prog" ] &&
        echo "ok: a fused attention and output layer built for the GPU" ||
        { echo "FAIL: build --backend gpu --attention fused --head-loss fused: $(tail -3 "$work/out")"; fails=$((fails + 1)); }
fi
echo "$fails failed"
[ $fails -eq 0 ]
