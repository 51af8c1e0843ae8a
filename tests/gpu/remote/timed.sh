#!/usr/bin/env bash
# timed.sh - check.sh's checks in phases under one deadline, for GPU time
# that comes in short windows: each phase gets at most what is left, and its
# logs are packed into OUTDIR as soon as it ends, so that whatever finished
# before the deadline is kept.
#
#   tests/gpu/out/pkg/timed.sh OUTDIR [SECONDS]     (default 520)
#
# Phases, in this order: a (ops, abi, train, eval; at most 150 s), r (the
# reprofile parts, the smallest files first, at most 45 s each), d (det,
# at most 60 s), s (san, at most 220 s). OUTDIR gets check.txt (every
# phase's output) and PHASE.tgz (its logs, weights left out). The
# merged profiles are made on the machine with the compiler:
#   bench/gpu/profile_parts.py merge bench/gpu/profiles/M.gpu.tsv r/M.part.gpu.tsv -o bench/gpu/profiles/M.gpu.tsv
set -u
[ $# -ge 1 ] || { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
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
phase a 150 --only ops,abi,train,eval

# the CUDA libraries, as check.sh finds them, for the profiler run directly
libdirs=
for lib in libcudart.so.13 libcublas.so.13 libcublasLt.so.13 libcudnn.so.9; do
	f=$(find /usr/local/cuda/lib64/ /usr/local/cuda/targets/ /usr/lib/x86_64-linux-gnu/ /opt/ /usr/local/lib/ \
		-name "$lib" 2> /dev/null | head -1)
	[ -n "$f" ] && libdirs=${libdirs:+$libdirs:}$(dirname "$f")
done
mkdir -p "$logs/r"
echo "== r at $(elapsed) s" | tee -a "$log"
while IFS= read -r part; do
	[ -f "$part" ] || continue
	m=$(basename "$part" .part.kernels.tsv)
	t=$(cap 45)
	[ "$t" -lt 10 ] && { echo "reprofile $m: no time left" | tee -a "$log"; break; }
	LD_LIBRARY_PATH=$pkg${libdirs:+:$libdirs} timeout -k 5 "$t" "$pkg/autotm-gpu-profile" "$part" \
		-o "$logs/r/$m.part.gpu.tsv" > "$logs/r/$m.txt" 2>&1
	rc=$?
	echo "reprofile $m: exit $rc, $(grep -c '^kernel' "$logs/r/$m.part.gpu.tsv" 2> /dev/null || echo 0) kernels" | tee -a "$log"
done < <(find "$pkg/reprofile" -name '*.part.kernels.tsv' -printf '%s %p\n' 2> /dev/null | sort -n | cut -d' ' -f2-)
pack r
phase d 60 --only det
SANITIZER_TIMEOUT=${SANITIZER_TIMEOUT:-70} phase s 220 --only san
echo "== done at $(elapsed) s" | tee -a "$log"
rm -rf "$logs"
