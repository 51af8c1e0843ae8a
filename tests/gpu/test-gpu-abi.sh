#!/usr/bin/env bash
# test-gpu-abi.sh - the same training program (tests/gpu/abi-train.c)
# linked with the CPU runtime and with the GPU runtime trains alike: the
# losses of 5 steps agree within 1e-4 * max(1, |loss|). The program moves
# a weight and its velocity between the pools every step (rt_move,
# rt_move_async, rt_move_wait) and uses dropout, so this checks the copy
# streams' ordering and the shared dropout mask. The GPU program runs
# three ways: device memory, unified memory capped at 256 MiB
# (RT_PROGRAM_MANAGED), and with TF32 (AUTOTM_TF32=1, within 1e-2).
# Skipped (77) without a GPU.
set -u
build=${TOP_BUILDDIR:-.}
gpu=$build/tests/gpu/abi-train-cuda cpu=$build/tests/gpu/abi-train-cpu
if [ ! -x "$gpu" ]; then
    echo "skipped: built without CUDA (no tests/gpu/abi-train-cuda)"
    exit 77
fi
args="--iters 5 --seed 3"
if ! out=$("$gpu" $args 2>&1); then
    if printf '%s\n' "$out" | grep -q 'error: no CUDA device'; then
        echo "skipped: $out"
        exit 77
    fi
    printf '%s\n' "$out"
    exit 1
fi
losses() { sed -n 's/^step [0-9]*: loss \([^ ]*\) .*/\1/p'; }
ref=$("$cpu" $args --slow-dir "${TEST_TMPDIR:-/tmp}" | losses)
fail=0
compare() {  # compare NAME TOLERANCE LOSSES
    local r
    r=$(paste <(printf '%s\n' "$ref") <(printf '%s\n' "$3") | awk -v tol="$2" '
        { n++; d = $1 - $2; if (d < 0) d = -d; s = $1 < 0 ? -$1 : $1; if (s < 1) s = 1
          if (d > tol * s) bad++; printf "#   step %d: cpu %s gpu %s\n", n, $1, $2 }
        END { if (n != 5) bad++; print bad + 0 }')
    printf '%s\n' "$r" | sed '$d'
    if [ "$(printf '%s\n' "$r" | tail -n 1)" != 0 ]; then
        echo "not ok - $1"
        fail=1
    else
        echo "ok - $1"
    fi
}
compare "device memory" 1e-4 "$(printf '%s\n' "$out" | losses)"
compare "managed memory, 256 MiB" 1e-4 "$(ABI_TRAIN_MANAGED=268435456 "$gpu" $args | losses)"
compare "TF32" 1e-2 "$(AUTOTM_TF32=1 "$gpu" $args | losses)"
exit $fail
