#!/bin/bash
# run.sh - time, on a GPU machine, the package that bench/gpu/prepare.sh built:
# autotmc's GPU programs and the same models in PyTorch, each run in its own
# process under a timeout, then write results.json and print the table.
#
#   ./run.sh [--iters N] [--warmup W] [--timeout S] [--out DIR]
#            [--only NAME[,NAME...]] [--resume] [--no-um] [--no-torch]
#            [--no-autotmc] [--no-profile] [--profile-timeout S]
#            [--no-cudnn-benchmark] [--python PY]
#
# Run it in the package directory (or anywhere: it finds the package beside
# itself).  Every run listed in runs.tsv:
#
#   autotmc  ./PROG --iters W+N --quiet --results DIR/raw/ID.json
#            (median over the last N steps; the program's own actual_runtime,
#            the median over all W+N, is kept too)
#   pytorch  PYTHON torch_gpu.py --model M --batch B --size S --mode MODE
#            --warmup W --iters N   (TF32 off, cudnn.benchmark on; a mode
#            MODE-bf16 runs MODE with --precision bf16: autocast bf16)
#
# in this order: autotm-gpu-profile on one kernel (the link's bandwidth,
# DIR/link.gpu.tsv), when the package has the profiler; every non-um run of
# the first model, then of the next, ...; then autotm-gpu-profile on each
# M-bB.kernels.tsv (the kernels' times, DIR/M-bB.gpu.tsv); then the um runs (unified memory oversubscribed on purpose; last, so that a driver
# in trouble costs nothing else).  After every run DIR/results.json is
# rewritten (collect.py), so an interrupted session keeps what it measured;
# --resume skips the runs DIR already has.
#
#   --iters N            timed steps (default 10)
#   --warmup W           untimed steps first (default 3)
#   --timeout S          seconds per run (default 300); a run past it is
#                        recorded with status "timeout"
#   --out DIR            where raw/, logs/, machine.json and results.json go
#                        (default: results/ in the package)
#   --only LIST          only these runs: model names (resnet152), model and
#                        batch (resnet200-b576) or run ids (runs.tsv, column 1)
#   --no-um, --no-torch, --no-autotmc, --no-profile   leave those out
#   --profile-timeout S  seconds for each autotm-gpu-profile (default 300)
#   --no-cudnn-benchmark PyTorch with cudnn.benchmark = False
#   --python PY          the Python with PyTorch (default python3)
set -uo pipefail

pkg=$(cd "$(dirname "$0")" && pwd)
cd "$pkg" || exit 1
iters=10
warmup=3
timeout_s=300
out=$pkg/results
only=
resume=0
do_um=1
do_torch=1
do_autotmc=1
do_profile=1
profile_timeout=300
bench_flag=
py=python3
usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; }
while [ $# -gt 0 ]; do
	case $1 in
	--iters) iters=$2; shift 2 ;;
	--warmup) warmup=$2; shift 2 ;;
	--timeout) timeout_s=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--only) only=$2; shift 2 ;;
	--resume) resume=1; shift ;;
	--no-um) do_um=0; shift ;;
	--no-torch) do_torch=0; shift ;;
	--no-autotmc) do_autotmc=0; shift ;;
	--no-profile) do_profile=0; shift ;;
	--profile-timeout) profile_timeout=$2; shift 2 ;;
	--no-cudnn-benchmark) bench_flag=--no-cudnn-benchmark; shift ;;
	--python) py=$2; shift 2 ;;
	-h|--help) usage; exit 0 ;;
	*) echo "run.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
	esac
done
[ -f runs.tsv ] || { echo "run.sh: no runs.tsv in $pkg: run bench/gpu/prepare.sh first" >&2; exit 1; }
mkdir -p "$out/raw" "$out/logs"

# The CUDA libraries of the programs (libcudnn.so.9, libcublas.so.13,
# libcudart.so.13): their run path has /usr/local/cuda/lib64 and the
# package; elsewhere (PyTorch's pip wheels, the system) they are added to
# LD_LIBRARY_PATH.
first_prog=$(awk -F'\t' '$2 == "autotmc" { print $7; exit }' runs.tsv)
if [ -n "$first_prog" ] && [ -x "$first_prog" ] && ldd "./$first_prog" 2> /dev/null | grep -q 'not found'; then
	dirs=$("$py" - <<'EOF' 2> /dev/null
import glob, os, site, sys
want = ("libcudnn.so.9", "libcublas.so.13", "libcublasLt.so.13", "libcudart.so.13")
# the pip wheels' nvidia/*/lib (PyTorch's own cuDNN and cuBLAS), then the system
roots = [os.path.join(p, "nvidia") for p in site.getsitepackages() + [site.getusersitepackages()]]
roots = [p for p in roots if os.path.isdir(p)]
roots += ["/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib", "/usr/lib/x86_64-linux-gnu"]
roots += glob.glob("/usr/local/cuda-*/lib64")
found = []
for r in roots:
    for w in want:
        for f in glob.glob(os.path.join(r, "**", w), recursive=True):
            d = os.path.dirname(f)
            if d not in found:
                found.append(d)
print(":".join(found))
EOF
)
	export LD_LIBRARY_PATH=${dirs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	echo "run.sh: LD_LIBRARY_PATH=$LD_LIBRARY_PATH" >&2
	if ldd "./$first_prog" | grep 'not found' >&2; then
		echo "run.sh: warning: the programs miss the libraries above; their runs will fail" >&2
	fi
fi

# the machine and the versions
{
	echo "{"
	echo "\"date\": \"$(date -u '+%Y-%m-%d %H:%M UTC')\","
	echo "\"hostname\": \"$(hostname)\","
	echo "\"kernel\": \"$(uname -sr)\","
	echo "\"cpu\": \"$(lscpu 2> /dev/null | sed -n 's/^Model name: *//p' | head -1), $(nproc) CPUs\","
	echo "\"memory_gib\": \"$(free -g 2> /dev/null | awk '/^Mem:/ {print $2}')\","
	echo "\"nvidia_smi\": \"$(nvidia-smi --query-gpu=name,driver_version,memory.total,pcie.link.gen.max,pcie.link.width.max --format=csv,noheader 2> /dev/null | head -1)\","
	echo "\"nvcc\": \"$(nvcc --version 2> /dev/null | sed -n 's/.*release \([^,]*\).*/\1/p')\","
	echo "\"iters\": $iters, \"warmup\": $warmup, \"timeout_s\": $timeout_s,"
	echo "\"cudnn_benchmark\": $([ -n "$bench_flag" ] && echo false || echo true),"
	echo "\"AUTOTM_TF32\": \"${AUTOTM_TF32-}\","
	echo "\"LD_LIBRARY_PATH\": \"${LD_LIBRARY_PATH-}\","
	echo "\"torch\": $("$py" -c 'import json, torch; print(json.dumps({"torch": torch.__version__, "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(), "device": torch.cuda.get_device_name() if torch.cuda.is_available() else None}))' 2> /dev/null || echo null)"
	echo "}"
} > "$out/machine.json"
cat "$out/machine.json"

selected() { # ID MODEL BATCH
	[ -z "$only" ] && return 0
	[[ ",$only," == *",$1,"* || ",$only," == *",$2,"* || ",$only," == *",$2-b$3,"* ]]
}
collect() { "$py" "$pkg/collect.py" --pkg "$pkg" --out "$out" > /dev/null || echo "run.sh: collect.py failed" >&2; }

# run_one ID SYSTEM MODEL BATCH SIZE MODE PROG
run_one() {
	local id=$1 system=$2 model=$3 batch=$4 size=$5 mode=$6 prog=$7 rc t0 status
	local raw=$out/raw/$id.json log=$out/logs/$id.log
	if [ "$resume" = 1 ] && [ -f "$out/raw/$id.status" ]; then
		echo "run.sh: $id: done before ($(cat "$out/raw/$id.status"))" >&2
		return
	fi
	rm -f "$raw" "$out/raw/$id.status"
	t0=$(date +%s.%N)
	if [ "$system" = autotmc ]; then
		timeout -k 10 "$timeout_s" "./$prog" --iters $((warmup + iters)) --quiet --results "$raw" > "$log" 2>&1
		rc=$?
	else
		# shellcheck disable=SC2086
		# MODE-bf16: MODE under torch.autocast(dtype=torch.bfloat16)
		prec=fp32
		[ "${mode%-bf16}" = "$mode" ] || prec=bf16
		timeout -k 10 "$timeout_s" "$py" "$pkg/torch_gpu.py" --model "$model" --batch "$batch" --size "$size" \
			--mode "${mode%-bf16}" --precision "$prec" --warmup "$warmup" --iters "$iters" $bench_flag > "$raw" 2> "$log"
		rc=$?
	fi
	if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
		status=timeout
	elif [ "$system" = pytorch ] && [ -s "$raw" ]; then
		status=$("$py" -c 'import json, sys; print(json.load(open(sys.argv[1])).get("status", "error"))' "$raw" 2> /dev/null || echo error)
	elif [ "$rc" = 0 ]; then
		status=ok
	elif grep -qiE 'out of memory|cudaErrorMemoryAllocation' "$log"; then
		status=oom
	else
		status=error
	fi
	echo "$rc $status $(awk -v t0="$t0" -v t1="$(date +%s.%N)" 'BEGIN { printf "%.1f", t1 - t0 }')" > "$out/raw/$id.status"
	echo "run.sh: $id: $status (exit $rc, $(cut -d' ' -f3 "$out/raw/$id.status") s)" >&2
	collect
}

runs_of() { # FILTER: nonum | um
	awk -F'\t' -v f="$1" '!/^#/ && NF >= 6 { um = ($2 == "autotmc" && $6 ~ /^um-/); if ((f == "um") == um) print }' runs.tsv
}
# The link first: autotm-gpu-profile on one kernel gives the copy lines
# (bandwidth each way, blocking and asynchronous, and both ways at once) in
# seconds; the profiles of whole models come after the timed runs.
if [ "$do_profile" = 1 ] && [ -x ./autotm-gpu-profile ] && { [ "$resume" = 0 ] || [ ! -s "$out/link.gpu.tsv" ]; }; then
	k=$(find . -maxdepth 1 -name '*.kernels.tsv' | sort | head -1)
	if [ -n "$k" ]; then
		{ grep '^#' "$k"; grep -v '^#' "$k" | head -1; } > "$out/link.kernels.tsv"
		echo "run.sh: autotm-gpu-profile (the link)" >&2
		timeout -k 10 "$profile_timeout" ./autotm-gpu-profile "$out/link.kernels.tsv" -o "$out/link.gpu.tsv" \
			> "$out/logs/link.gpu-profile.log" 2>&1 \
			|| echo "run.sh: autotm-gpu-profile failed (exit $?); see $out/logs/link.gpu-profile.log" >&2
	fi
fi

while IFS=$'\t' read -r id system model batch size mode prog; do
	selected "$id" "$model" "$batch" || continue
	[ "$system" = autotmc ] && [ "$do_autotmc" = 0 ] && continue
	[ "$system" = pytorch ] && [ "$do_torch" = 0 ] && continue
	run_one "$id" "$system" "$model" "$batch" "$size" "$mode" "$prog"
done < <(runs_of nonum)

if [ "$do_profile" = 1 ] && [ -x ./autotm-gpu-profile ]; then
	for k in *.kernels.tsv; do
		[ -f "$k" ] || continue
		name=${k%.kernels.tsv}
		selected "$name" "${name%-b*}" "${name##*-b}" || continue
		if [ "$resume" = 1 ] && [ -s "$out/$name.gpu.tsv" ]; then continue; fi
		echo "run.sh: autotm-gpu-profile $k" >&2
		timeout -k 10 "$profile_timeout" ./autotm-gpu-profile "$k" -o "$out/$name.gpu.tsv" > "$out/logs/$name.gpu-profile.log" 2>&1 \
			|| echo "run.sh: autotm-gpu-profile $k failed (exit $?); see $out/logs/$name.gpu-profile.log" >&2
		collect
	done
elif [ "$do_profile" = 1 ]; then
	echo "run.sh: no autotm-gpu-profile in the package: the link bandwidth will be assumed" >&2
fi

if [ "$do_um" = 1 ] && [ "$do_autotmc" = 1 ]; then
	while IFS=$'\t' read -r id system model batch size mode prog; do
		selected "$id" "$model" "$batch" || continue
		run_one "$id" "$system" "$model" "$batch" "$size" "$mode" "$prog"
	done < <(runs_of um)
fi

collect
"$py" "$pkg/summarize.py" "$out/results.json"
