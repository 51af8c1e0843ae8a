#!/usr/bin/env bash
# test-gpu-train.sh - autotmc run --backend gpu, end to end, against the
# reference interpreter: for mlp, test_vgg and resnet50 at small batch,
# the losses of 3 steps agree within 1e-3 (relative; TF32 off, the
# runtime's default; resnet50: see below) with every tensor in device
# memory (all-fast), under a limit that forces moves (sync and async), and
# with unified memory (um, uncapped); the device pool of every run is within
# its limit (the runtime's own accounting, in the results record). On a
# GPU machine without the compiler, tests/gpu/remote/package.sh and check.sh run
# the same checks and more.
# Skipped (77) without CUDA or without a GPU.
set -uo pipefail
srcdir=${TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
builddir=${TOP_BUILDDIR:-$srcdir}
autotmc=${AUTOTMC:-$builddir/autotmc}
if [ ! -e "$builddir/libautotmrt-cuda.a" ]; then
    echo "skipped: built without CUDA (no libautotmrt-cuda.a)"
    exit 77
fi
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/gputrain.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
export XDG_CACHE_HOME=$work/cache
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
losses() { sed -n 's/^step \([0-9]*\): loss \([^ ]*\).*/\2/p' "$1"; }

first=1
# resnet50 with a small learning rate (at batch 2 and lr 0.1 its losses
# diverge within 3 steps); its first loss within 1e-4, the later ones within
# 2e-2 (rounding moves them: the CPU runtime's by 3e-3 at step 3)
for spec in "mlp 8 1:1" "test_vgg 8 1:3" "resnet50 2 1:3 -D lr=0.001"; do
    set -- $spec
    model=$1 batch=$2 ratio=$3
    shift 3
    defs=("$@")
    tol=1e-3 tol2=1e-3
    [ $model = resnet50 ] && tol=1e-4 tol2=2e-2
    src=$srcdir/examples/$model.net
    "$autotmc" interpret "$src" -D batch=$batch "${defs[@]}" --iters 3 >"$work/$model.ref" 2>&1 ||
        { fail "$model: interpreter"; continue; }
    for opt in all-fast sync async um; do
        name=$model-$opt
        # um without a cap: a managed pool larger than the device memory left to it is refused
        limit=(--ratio $ratio); [ $opt = all-fast ] || [ $opt = um ] && limit=()
        "$autotmc" run "$src" -D batch=$batch "${defs[@]}" --backend gpu --hw h100-pcie5 --optimizer $opt "${limit[@]}" \
            --iters 3 --results "$work/$name.json" >"$work/$name.out" 2>&1
        rc=$?
        if [ $first = 1 ] && [ $rc -ne 0 ] && grep -q 'error: no CUDA device' "$work/$name.out"; then
            echo "skipped: $(grep 'error: no CUDA device' "$work/$name.out")"
            exit 77
        fi
        first=0
        if [ $rc -ne 0 ]; then
            fail "$name: status $rc"; tail -5 "$work/$name.out"; continue
        fi
        if ! paste <(losses "$work/$model.ref") <(losses "$work/$name.out") | awk -v name="$name" -v tol=$tol -v tol2=$tol2 '
                NF != 2 { bad = 1 }
                NF == 2 { d = $1 - $2; if (d < 0) d = -d; s = $1 < 0 ? -$1 : $1; if (s < 1) s = 1
                          if (NR == 2) tol = tol2
                          if (d > tol * s) { bad = 1; printf "  %s: interpreter %s, GPU %s\n", name, $1, $2 } }
                END { exit bad || NR != 3 }'; then
            fail "$name: losses differ from the interpreter"; continue
        fi
        if ! python3 "$srcdir/tests/gpu/gpu-record.py" "$work/$name.json" "  "; then
            fail "$name: results record"; continue
        fi
        echo "ok: $name"
    done
done
echo "$fails failed"
[ $fails -eq 0 ]
