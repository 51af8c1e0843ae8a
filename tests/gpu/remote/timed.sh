#!/usr/bin/env bash
# timed.sh - check.sh's checks in phases under one deadline, for GPU time
# that comes in short windows: each phase gets at most what is left, and its
# logs are packed into OUTDIR as soon as it ends, so that whatever finished
# before the deadline is kept.
#
#   tests/gpu/out/pkg/timed.sh OUTDIR [SECONDS]     (default 520)
#
# Phases, in this order: a (ops, gpt, bf16: every kernel, the bf16 and
# fused ones too, and the programs that use them; at most 200 s), f (fuse:
# the programs built with --fuse; at most 60 s), b (abi,
# train, eval; at most 100 s), d (det, at most 60 s), s (san, at most 190
# s), r (reprofile: each profile's part at most PROFILE_TIMEOUT, default
# 45 s, merged into a copy of its profile, r/M.gpu.tsv, to commit in its
# place; what is left).
# OUTDIR gets check.txt (every phase's output) and PHASE.tgz (its logs,
# saved weights left out).
set -u
[ $# -ge 1 ] || { sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
out=$(mkdir -p "$1" && cd "$1" && pwd) || exit 2
deadline=${2:-520}
pkg=$(cd "$(dirname "$0")" && pwd)
t0=$(date +%s)
logs=$(mktemp -d)
log=$out/check.txt
export PYTHONUNBUFFERED=1
elapsed() { echo $(($(date +%s) - t0)); }
cap() { local t=$1 left=$((deadline - $(elapsed))); [ "$t" -gt "$left" ] && t=$left; echo "$t"; }
pack() { tar czf "$out/$1.tgz" --exclude='*.safetensors' -C "$logs" "$1"; }
phase() { # NAME SECONDS check.sh-ARGS...
	local name=$1 t
	t=$(cap "$2")
	shift 2
	if [ "$t" -lt 10 ]; then echo "== $name: no time left" | tee -a "$log"; return; fi
	echo "== $name (at most ${t} s) at $(elapsed) s" | tee -a "$log"
	timeout -k 5 "$t" "$pkg/check.sh" "$logs/$name" "$@" 2>&1 | tee -a "$log"
	pack "$name"
}
nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used,clocks.sm,clocks.mem --format=csv | tee "$log"
phase a 200 --only ops,gpt,bf16
phase f 60 --only fuse
phase b 100 --only abi,train,eval
phase d 60 --only det
SANITIZER_TIMEOUT=${SANITIZER_TIMEOUT:-60} phase s 190 --only san
PROFILE_TIMEOUT=${PROFILE_TIMEOUT:-45} phase r 600 --only reprofile
echo "== done at $(elapsed) s" | tee -a "$log"
rm -rf "$logs"
