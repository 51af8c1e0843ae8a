#!/usr/bin/env bash
# bench/ranks_step.sh - data parallel on this machine against PyTorch's
# DistributedDataParallel (gloo), in one session, alternated: tinygpt
# (examples/tinygpt.net: AdamW, clipping) on 2 ranks of batch 8 each, one
# thread a rank, autotmc run --ranks 2 against bench/torch_step.py --ddp
# under torchrun (the same network, nanoGPT's layout). One JSON line a
# run on stdout: {"side", "round", "median_ms"}. --compile adds a third
# side, the DDP module under torch.compile (inductor; its warm-up steps
# compile).
#
#   bench/setup.sh; bench/ranks_step.sh [ROUNDS] [--compile] > bench/results/ranks.jsonl
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
rounds=2 compile=0
for a in "$@"; do
	case $a in
	--compile) compile=1 ;;
	[0-9]*) rounds=$a ;;
	*) echo "usage: bench/ranks_step.sh [ROUNDS] [--compile]" >&2; exit 2 ;;
	esac
done
torch_ddp() { # ARGS...: PyTorch's median step in ms, DDP on 2 ranks
	"$top/bench/.venv/bin/torchrun" --nproc_per_node 2 "$top/bench/torch_step.py" --model gpt --ddp --threads 1 \
		--layers 4 --heads 4 --width 128 --vocab 256 --seq 64 --beta2 0.99 --batch 8 --iters 40 "$@" 2>/dev/null |
		tail -1 | python3 -c 'import json, sys; print(json.load(sys.stdin)["median"] * 1e3)'
}
for r in $(seq "$rounds"); do
	ms=$("$top/autotmc" run "$top/examples/tinygpt.net" --ranks 2 -D batch=8 --iters 40 2>/dev/null |
		sed -n 's/^median step time: \([0-9.]*\) ms.*/\1/p')
	echo "{\"side\": \"autotmc --ranks 2\", \"round\": $r, \"median_ms\": $ms}"
	ms=$(torch_ddp --warmup 5)
	echo "{\"side\": \"PyTorch DDP (gloo), torchrun 2\", \"round\": $r, \"median_ms\": $ms}"
	if [ $compile = 1 ]; then
		ms=$(torch_ddp --warmup 8 --compile)
		echo "{\"side\": \"PyTorch DDP (gloo) under torch.compile, torchrun 2\", \"round\": $r, \"median_ms\": $ms}"
	fi
done
