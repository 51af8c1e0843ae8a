#!/bin/bash
# oom_batch.sh - on the GPU machine: the smallest batch, among the given
# ones, at which PyTorch eager runs out of device memory for a model
# (cudnn.benchmark on, TF32 off, as run.sh runs it), by bisection over the
# sorted list, each probe one warm-up step and one timed step in its own
# process.
#
#   ./oom_batch.sh [--python PY] [--out DIR] MODEL BATCH...
#
# Prints "MODEL: eager fits at batch A, runs out of memory at batch B" (A
# or B "none" where no probe fits or none runs out), and writes each
# probe's JSON to DIR/oom-MODEL-bBATCH.json (default: the current
# directory) and DIR/oom-MODEL.txt with that line.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
py=python3
out=.
while [ $# -gt 0 ]; do
	case $1 in
	--python) py=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	-*) echo "oom_batch.sh: unknown option '$1'" >&2; exit 2 ;;
	*) break ;;
	esac
done
[ $# -ge 2 ] || { echo "usage: oom_batch.sh [--python PY] [--out DIR] MODEL BATCH..." >&2; exit 2; }
model=$1
shift
mapfile -t batches < <(printf '%s\n' "$@" | sort -n -u)
mkdir -p "$out"

# probe B: prints ok, oom or error
probe() {
	local f=$out/oom-$model-b$1.json
	timeout -k 10 300 "$py" "$here/torch_gpu.py" --model "$model" --batch "$1" --mode eager \
		--warmup 1 --iters 1 > "$f" 2> "$out/oom-$model-b$1.log"
	"$py" -c 'import json, sys; print(json.load(open(sys.argv[1])).get("status", "error"))' "$f" 2> /dev/null ||
		echo error
}

lo=-1 hi=${#batches[@]} # batches[lo] fits, batches[hi] runs out (sentinels outside)
while [ $((hi - lo)) -gt 1 ]; do
	mid=$(((lo + hi) / 2))
	s=$(probe "${batches[$mid]}")
	echo "oom_batch.sh: $model batch ${batches[$mid]}: $s" >&2
	case $s in
	ok) lo=$mid ;;
	oom) hi=$mid ;;
	*) echo "oom_batch.sh: $model batch ${batches[$mid]} failed; see $out/oom-$model-b${batches[$mid]}.log" >&2; exit 1 ;;
	esac
done
fits=none oom=none
[ $lo -lt 0 ] || fits=${batches[$lo]}
[ $hi -ge ${#batches[@]} ] || oom=${batches[$hi]}
echo "$model: eager fits at batch $fits, runs out of memory at batch $oom" | tee "$out/oom-$model.txt"
