#!/usr/bin/env bash
# test-gpu-link.sh - what can be checked of the GPU runtime without a GPU.
#
#   - libautotmrt-cuda.a links into a training program (abi-train-cuda)
#     that needs only CUDA, cuDNN, cuBLAS(Lt), cJSON and the C library: no
#     oneDNN, memkind, LLVM, OpenMP or libstdc++, in its NEEDED entries or
#     among the library's undefined symbols;
#   - run without a GPU, that program fails with one error line naming the
#     reason, and exit status 1 (with a GPU, it trains: status 0);
#   - a unified-memory program linked with the CPU runtime is refused.
set -u
build=${TOP_BUILDDIR:-.}
gpu=$build/tests/gpu/abi-train-cuda cpu=$build/tests/gpu/abi-train-cpu
if [ ! -x "$gpu" ]; then
    echo "skipped: built without CUDA (no tests/gpu/abi-train-cuda)"
    exit 77
fi
fail=0

. "$(dirname "$0")/needed.sh"
needed=$(needed "$gpu")
bad=$(foreign $needed)
if [ -n "$bad" ] || [ -z "$needed" ]; then
    echo "not ok: abi-train-cuda needs ${bad:-nothing?}"
    fail=1
fi
echo "abi-train-cuda needs: $needed"
foreign=$(nm -u "$build/libautotmrt-cuda.a" | grep -E ' (dnnl_|memkind_|omp_|GOMP_|LLVM|__cxa_|__gxx_|_Unwind_|_Z)' | sort -u)
if [ -n "$foreign" ]; then
    echo "not ok: libautotmrt-cuda.a uses symbols of other libraries:"
    echo "$foreign"
    fail=1
fi

out=$("$gpu" --iters 2 --quiet 2>&1)
rc=$?
if [ $rc -eq 0 ]; then
    echo "a GPU is present: abi-train-cuda trained 2 steps"
elif [ $rc -eq 1 ] && [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] &&
     printf '%s\n' "$out" | grep -q '^abi-train-cuda: error: no CUDA device'; then
    echo "without a GPU: $out"
else
    echo "not ok: abi-train-cuda without a GPU exited $rc with:"
    printf '%s\n' "$out"
    fail=1
fi

out=$(ABI_TRAIN_MANAGED=1048576 "$cpu" --iters 1 --quiet 2>&1)
rc=$?
if [ $rc -ne 1 ] || ! printf '%s\n' "$out" | grep -q 'link it with libautotmrt-cuda.a'; then
    echo "not ok: a managed program on the CPU runtime exited $rc with:"
    printf '%s\n' "$out"
    fail=1
fi
[ $fail -eq 0 ] && echo "ok"
exit $fail
