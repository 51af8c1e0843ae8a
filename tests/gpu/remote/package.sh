#!/usr/bin/env bash
# package.sh - build, on the machine with the compiler, the GPU tests for a
# GPU machine that has CUDA but not the compiler (no LLVM, CBC, oneDNN):
#
#   tests/gpu/remote/package.sh [--out DIR] [--hw HW] [--gpu-profile P.tsv]
#   (there)  DIR/check.sh [LOGDIR]
#
# DIR (default tests/gpu/out/pkg) gets test-gpu-ops, abi-train-cuda and
# autotm-gpu-profile with libcjson.so.1, the GPU programs of
# test-gpu-train.sh (mlp, test_vgg and resnet50 at small batch: all-fast,
# sync, async and um), the determinism programs (resnet50 at batch 32:
# all-fast, and async at 25% of its peak, which moves most activations),
# a small async program for compute-sanitizer, evaluation programs
# (tests/torch/evalnet.net with the evaluation pass, all-fast and sync),
# the small GPT of tests/torch/gpt.net (batch 3: all-fast and auto, with
# PyTorch's 5 AdamW steps from the same weights and data as the reference,
# written by torch_check.py --reference when this machine's Python has
# PyTorch; batch 48: all-fast and auto with moves and recomputation),
# the references computed here: the interpreter's losses of each train
# model, the CPU runtime's losses of abi-train, and the CPU runtime's
# evaluation of evalnet's weights on a small validation set, and the parts
# of the measured profiles (bench/gpu/profiles) to measure again.  check.sh runs everything there and prints one
# "ok -" or "not ok -" line a check, then "N passed, N failed".
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
out=$root/tests/gpu/out/pkg
times=(--hw h100-pcie5)
while [ $# -gt 0 ]; do
	case $1 in
	--out) out=$2; shift 2 ;;
	--hw) times=(--hw "$2"); shift 2 ;;
	--gpu-profile) times=(--gpu-profile "$2"); shift 2 ;;
	-h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "package.sh: unknown option '$1'" >&2; exit 2 ;;
	esac
done
autotmc=${AUTOTMC:-$root/autotmc}
for f in "$autotmc" "$root/tests/gpu/test-gpu-ops" "$root/tests/gpu/abi-train-cuda" \
	"$root/tests/gpu/abi-train-cpu" "$root/autotm-gpu-profile"; do
	[ -x "$f" ] || { echo "package.sh: no $f: build with CUDA first (make && make check TESTS=)" >&2; exit 1; }
done
rm -rf "$out"
mkdir -p "$out/ref" "$out/prog"
cp "$root/tests/gpu/test-gpu-ops" "$root/tests/gpu/abi-train-cuda" "$root/autotm-gpu-profile" \
	"$root/tests/gpu/remote/check.sh" "$root/tests/gpu/remote/timed.sh" "$root/tests/gpu/gpu-record.py" "$out/"
strip --strip-debug "$out/test-gpu-ops" "$out/abi-train-cuda" "$out/autotm-gpu-profile"

step() { echo "package.sh: $*" >&2; }
# build NAME SRC BATCH OPTIMIZER [PLACEMENT...]: SRC a model of examples/, or a path
build() {
	local name=$1 src=$2 batch=$3 opt=$4
	shift 4
	step "$name"
	[[ $src == */* ]] || src=$root/examples/$src.net
	"$autotmc" build "$src" -D batch="$batch" --backend gpu "${times[@]}" \
		--optimizer "$opt" "$@" -o "$out/prog/$name" > "$out/prog/$name.build.txt" 2>&1 ||
		{ cat "$out/prog/$name.build.txt" >&2; exit 1; }
	strip --strip-debug "$out/prog/$name"
}

# the CPU runtime's losses of abi-train (test-gpu-abi.sh's reference)
"$root/tests/gpu/abi-train-cpu" --iters 5 --seed 3 --slow-dir "${TMPDIR:-/tmp}" > "$out/ref/abi-train.txt"

# test-gpu-train.sh's programs and the interpreter's losses
# (resnet50 with a small learning rate: at batch 2 and lr 0.1 its losses
# diverge within 3 steps, and rounding decides by how much)
for spec in "mlp 8 1:1" "test_vgg 8 1:3" "resnet50 2 1:3 -D lr=0.001"; do
	read -r model batch ratio defs <<< "$spec"
	# shellcheck disable=SC2086
	"$autotmc" interpret "$root/examples/$model.net" -D batch="$batch" $defs --iters 3 > "$out/ref/$model.txt"
	for opt in all-fast sync async um; do
		case $opt in
		all-fast|um) build "$model-$opt" "$model" "$batch" $opt $defs ;;
		*) build "$model-$opt" "$model" "$batch" $opt $defs --ratio "$ratio" --solver-time 20 ;;
		esac
	done
done
# a token model (embeddings, layernorm, GELU, dense over [N, T, C], class
# labels per position): all-fast, sync and auto, against the interpreter
# (batch 48: activations beside the weights, so that the placements move)
tok=$root/tests/torch/tokennet.net
"$autotmc" interpret "$tok" -D batch=48 --iters 3 > "$out/ref/tokennet.txt"
build tokennet-all-fast "$tok" 48 all-fast
build tokennet-sync "$tok" 48 sync --ratio 1:1 --solver-time 20
build tokennet-auto "$tok" 48 auto --ratio 1:1 --solver-time 20
# unified memory capped below its pool: refused unless AUTOTM_UM_OVERSUBSCRIBE=1
build um-over mlp 8 um --ratio 1:1

# determinism: all-fast and async at 25% of the peak, resnet50 batch 32,
# from the measured profile where there is one, cut to one algorithm a
# convolution (the fastest deterministic one with at most 16 MiB of
# workspace, else the one with the least), so that both programs run the
# same kernels and their bits can be compared
det=("${times[@]}")
prof=$root/bench/gpu/profiles/resnet50-b32.gpu.tsv
if [ -f "$prof" ]; then
	python3 - "$prof" > "$out/ref/resnet50-b32.one-algo.gpu.tsv" <<'EOF'
import sys
lines = open(sys.argv[1]).read().splitlines()
nondet = {("bwd_data", "0"), ("bwd_filter", "0"), ("bwd_filter", "3")}
best = {}
def key(f):  # within 16 MiB of workspace the fastest, else the smallest workspace
    ws = int(f[5])
    return (0, float(f[4])) if ws <= 16 << 20 else (1, ws)
for l in lines:
    f = l.split("\t")
    if f[0] == "algo" and (f[2], f[6]) not in nondet:
        if f[1] not in best or key(f) < key(best[f[1]].split("\t")):
            best[f[1]] = l
for l in lines:
    f = l.split("\t")
    if f[0] != "algo" or best.get(f[1]) == l:
        print(l)
EOF
	det=(--gpu-profile "$out/ref/resnet50-b32.one-algo.gpu.tsv")
fi
build_det() { local times=("${det[@]}"); build "$@"; } # build sees this times (dynamic scope)
build_det det-all-fast resnet50 32 all-fast
build_det det-async-25 resnet50 32 async --ratio 3:1 --solver-time 60
# compute-sanitizer: a few steps of a program that moves
build san-async resnet50 4 async --ratio 3:1 --solver-time 20

# evaluation: evalnet's weights after 3 interpreter steps (running
# statistics away from 0 and 1), a validation set of 27 samples (a partial
# last batch), the CPU program's evaluation of them, and the GPU programs
# with the evaluation pass
evalnet=$root/tests/torch/evalnet.net
"$autotmc" interpret "$evalnet" --iters 3 --save-weights "$out/ref/evalnet.safetensors" > /dev/null
mkdir -p "$out/ref/evalset"
python3 - "$out/ref/evalset" <<'EOF'
# .npy files by hand (this machine's python3 may lack NumPy): float32 x [27, 3, 8, 8], int64 y [27]
import random, struct, sys
def save(path, descr, shape, fmt, values):
    head = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (descr, "".join(f"{d}, " for d in shape))
    head += " " * (-(10 + len(head) + 1) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(head)) + head.encode())
        f.write(struct.pack("<%d%s" % (len(values), fmt), *values))
rng = random.Random(7)
save(sys.argv[1] + "/x.npy", "<f4", (27, 3, 8, 8), "f", [rng.gauss(0, 1) for _ in range(27 * 3 * 8 * 8)])
save(sys.argv[1] + "/y.npy", "<i8", (27,), "q", [rng.randrange(5) for _ in range(27)])
EOF
"$autotmc" run "$evalnet" --iters 0 --weights "$out/ref/evalnet.safetensors" --val "$out/ref/evalset" \
	--results "$out/ref/evalnet-eval.json" --slow-dir "${TMPDIR:-/tmp}" > /dev/null
build evalnet-all-fast "$evalnet" 4 all-fast --with-eval
build evalnet-sync "$evalnet" 4 sync --with-eval --ratio 1:3 --solver-time 20

# the small GPT: against PyTorch (batch 3; the reference needs PyTorch and
# NumPy here: tests/python.sh) and auto with moves and recomputation
# against all-fast, bit for bit (batch 48)
gpt=$root/tests/torch/gpt.net
# shellcheck source=../../python.sh
gpt_py=$(. "$root/tests/python.sh"; need_python "torch, numpy" python3-torch > /dev/null && echo "$py") || true
if [ -n "$gpt_py" ]; then
	mkdir -p "$out/ref/gpt"
	"$gpt_py" "$root/tests/torch/torch_check.py" "$autotmc" "$gpt" "$out/ref/gpt" 5 1e-5 --reference > /dev/null
	cp "$root/tests/torch/agree.py" "$out/"
else
	echo "package.sh: warning: no python3 with torch and numpy: the package has no PyTorch reference for gpt" >&2
fi
build gpt-all-fast "$gpt" 3 all-fast
build gpt-auto "$gpt" 3 auto --ratio 1:1 --solver-time 20
build gpt-fused "$gpt" 3 all-fast --attention fused
build gpt-head "$gpt" 3 all-fast --head-loss fused # the output layer fused with its loss (cuda/head.c)
build gptb48-all-fast "$gpt" 48 all-fast
build gptb48-auto "$gpt" 48 auto --ratio 1:1 --solver-time 20
build gptb48-ranks "$gpt" 48 all-fast --ranks 2 --ranks-bandwidth 40GB/s # all-reduce kernels (NCCL), run alone by check.sh
grep -q '^recomputation:' "$out/prog/gptb48-auto.build.txt" ||
	echo "package.sh: warning: gptb48-auto recomputes nothing" >&2

# bf16 (check.sh's bf16): the small GPT against PyTorch's autocast (batch 3,
# the reference written here), auto against all-fast bit for bit (batch
# 48), resnet50 at batch 2 against the bf16 interpreter, and resnet50 at
# batch 32 async at 25% of its bf16 peak, to be bitwise all-fast
if [ -n "$gpt_py" ]; then
	mkdir -p "$out/ref/gpt16"
	"$gpt_py" "$root/tests/torch/torch_check.py" "$autotmc" "$gpt" "$out/ref/gpt16" 5 1e-2 --reference --autocast \
		> /dev/null
fi
bf16=(--precision bf16)
build gpt16-all-fast "$gpt" 3 all-fast "${bf16[@]}"
build gpt16-auto "$gpt" 3 auto --ratio 1:1 --solver-time 20 "${bf16[@]}"
build gpt16-fused "$gpt" 3 all-fast --attention fused "${bf16[@]}"
build gpt16-head "$gpt" 3 all-fast --head-loss fused "${bf16[@]}"
build gpt16b48-fused-all-fast "$gpt" 48 all-fast --attention fused "${bf16[@]}"
build gpt16b48-fused-auto "$gpt" 48 auto --ratio 1:1 --solver-time 20 --attention fused "${bf16[@]}"
build gpt16b48-all-fast "$gpt" 48 all-fast "${bf16[@]}"
build gpt16b48-auto "$gpt" 48 auto --ratio 1:1 --solver-time 20 "${bf16[@]}"
"$autotmc" interpret "$root/examples/resnet50.net" -D batch=2 -D lr=0.001 --iters 3 "${bf16[@]}" \
	> "$out/ref/resnet50-bf16.txt"
build resnet50-bf16-all-fast resnet50 2 all-fast -D lr=0.001 "${bf16[@]}"
build resnet50-bf16-async resnet50 2 async --ratio 1:3 --solver-time 20 -D lr=0.001 "${bf16[@]}"
build det16-all-fast resnet50 32 all-fast "${bf16[@]}"
build det16-async-25 resnet50 32 async --ratio 3:1 --solver-time 60 "${bf16[@]}"

# --fuse (check.sh's fuse): the GPU folding activations, their gradients and
# sums into the kernels before them, as the CPU does. The small GPT with all
# of it fused against PyTorch (fp32, 1e-5) and its autocast (bf16, 1e-2);
# bf16 auto at batch 48 against its all-fast, bit for bit; mlp, test_vgg
# (async, moves) and resnet50 against the interpreter (train's references),
# resnet50 in bf16 against the bf16 interpreter
all_fused=(--fuse --attention fused --head-loss fused)
build gpt-fuse "$gpt" 3 all-fast "${all_fused[@]}"
build gpt16-fuse "$gpt" 3 all-fast "${all_fused[@]}" "${bf16[@]}"
build gpt16b48-fuse-all-fast "$gpt" 48 all-fast "${all_fused[@]}" "${bf16[@]}"
build gpt16b48-fuse-auto "$gpt" 48 auto --ratio 1:1 --solver-time 20 "${all_fused[@]}" "${bf16[@]}"
build mlp-fuse mlp 8 all-fast --fuse
build test_vgg-fuse test_vgg 8 async --ratio 1:3 --solver-time 20 --fuse
build resnet50-fuse resnet50 2 all-fast -D lr=0.001 --fuse
build resnet50-bf16-fuse resnet50 2 all-fast -D lr=0.001 --fuse "${bf16[@]}"

cp "$out/prog/libcjson.so.1" "$out/"

# the benchmark models' kernels, for autotm-gpu-profile
mkdir -p "$out/kernels"
bench_models=("resnet50 32 224" "vgg19 64 224" "resnet152 64 224" "densenet201 64 224" "inception_v3 64 299")
for spec in "${bench_models[@]}"; do
	IFS=: read -r model batch size <<< "${spec// /:}"
	"$autotmc" profile "$root/examples/$model.net" -D batch="$batch" -D size="$size" --backend gpu \
		--export "$out/kernels/$model-b$batch.kernels.tsv" > /dev/null
done
# and in bf16: resnet50 and GPT-2 small at batch 8 (its bf16 kernels, composed attention)
"$autotmc" profile "$root/examples/resnet50.net" -D batch=32 --backend gpu "${bf16[@]}" \
	--export "$out/kernels/resnet50-b32-bf16.kernels.tsv" > /dev/null
"$autotmc" profile "$root/examples/gpt2.net" -D batch=8 --backend gpu "${bf16[@]}" \
	--export "$out/kernels/gpt2-b8-bf16.kernels.tsv" > /dev/null
# the kernels of the measured profiles to measure again (check.sh's
# reprofile): the adds (rewritten after some profiles were measured), the
# bias gradients (summed in groups since: base/ops.h's op_bias_groups) and
# the 1x1 convolutions of stride 1 (the backend's own algorithms for them,
# runtime/cuda/conv_gemm.h, are in no profile yet); with the profiles and
# profile_parts.py, which merges the new lines into them there
mkdir -p "$out/reprofile"
cp "$root/bench/gpu/profile_parts.py" "$out/"
for spec in "${bench_models[@]}" "resnet200 576 224"; do
	IFS=: read -r model batch size <<< "${spec// /:}"
	prof=$root/bench/gpu/profiles/$model-b$batch.gpu.tsv
	[ -f "$prof" ] || continue
	k=$out/kernels/$model-b$batch.kernels.tsv
	[ -f "$k" ] || { k=$out/reprofile/all.kernels.tsv # a model only profiled again here (resnet200 b576)
		"$autotmc" profile "$root/examples/$model.net" -D batch="$batch" -D size="$size" --backend gpu \
			--export "$k" > /dev/null; }
	part=$out/reprofile/$model-b$batch.part.kernels.tsv
	python3 "$root/bench/gpu/profile_parts.py" select "$k" --match '^add |^bias_grad |kh=1 kw=1 sh=1 sw=1 groups=1\b' \
		-o "$part" 2> /dev/null
	if grep -qv '^#' "$part"; then cp "$prof" "$out/reprofile/"; else rm "$part"; fi
done
rm -f "$out/reprofile/all.kernels.tsv"
# the package is larger than what a device session may carry (64 MiB): also as one .tar.xz (about a fifth),
# unpacked there with `tar xJf pkg.tar.xz`
tar -C "$(dirname "$out")" -cf - "$(basename "$out")" | xz -T0 -6 > "$out.tar.xz"
step "$(du -sh "$out" | cut -f1) in $out; $(du -sh "$out.tar.xz" | cut -f1) in $out.tar.xz"
