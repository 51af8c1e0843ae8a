#!/bin/bash
# bench/gpu/prepare.sh - build, on the machine with the compiler, the package of
# GPU programs that bench/gpu/run.sh times on a GPU machine (which has CUDA,
# cuDNN and PyTorch but no autotmc).
#
#   bench/gpu/prepare.sh [--quick] [--out DIR] [--solver-time S] [--hw HW]
#                        [--gpu-profile P.tsv|DIR] [--limit-big L]
#                        [--big-batch B] [MODEL...]
#
# For every model (all of them, or the MODELs named) and every variant it
# builds `autotmc build --backend gpu` into DIR (default bench/gpu/out/pkg,
# with --quick bench/gpu/out/quick):
#
#   vgg19, resnet152, densenet201 (batch 64, 224x224), inception_v3 (batch
#   64, 299x299):  all-fast; async and auto at 50% (--ratio 1:1) and 25%
#   (--ratio 3:1) of the all-fast peak of live bytes; um without a cap
#   (unified memory that fits in the device: see run.sh); and in bf16
#   all-fast and auto at 50% and 25% of the bf16 peak, beside PyTorch's
#   autocast eager, torch.compile, selective activation checkpointing (sac)
#   and torch.compile's activation memory budget at 0.5 and 0.25.
#   gpt2 (examples/gpt2.net, GPT-2 small, batch 8, 1024 positions):
#   all-fast; auto at 50% and 25%; PyTorch eager (scaled_dot_product_attention)
#   and composed (attention as autotmc composes it).  Its size column is the
#   sequence length (-D seq).
#   resnet200 (--big-batch, default 640: the smallest batch at which
#   PyTorch eager runs out of an H200's memory, bench/gpu/oom_batch.sh):
#   async and auto at --limit-big (default 128GiB: the H200's 139 GiB less
#   a margin for the CUDA context and the libraries' handles).
#
# --quick: test_vgg (batch 8, 32x32) and resnet50 (batch 32, 224x224) only,
# --solver-time 10, resnet50 also at a --limit of 1GiB: a smoke test of the
# whole pipeline.  MODEL names select among the current list.
#
# Times come from --hw (default h100-pcie5, modeled) or, with --gpu-profile,
# from a profile measured by autotm-gpu-profile (docs/gpu.md): one file for
# every model, or a directory holding MODEL-bBATCH.gpu.tsv for each (as
# bench/gpu/profiles/ does; a model without one there is placed with the
# --hw times).  A build that fails is recorded in the
# manifest with its error and the rest go on; the exit status is then 1.
#
# DIR gets: the programs (M-bB-VARIANT, debug info stripped), one
# libcjson.so.1, M-bB.kernels.tsv (the step's distinct kernels, for
# autotm-gpu-profile), autotm-gpu-profile if it is built, runs.tsv (every
# run, autotmc's and PyTorch's, that run.sh does), manifest.json (the
# compile-time facts of each program: limit, peak, predicted step time, bytes
# moved, ILP statistics), logs/ (each build's output), run.sh, torch_gpu.py,
# collect.py, summarize.py and README.md.
set -euo pipefail

self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"

quick=0
out=
solver_time=60
hw=h100-pcie5
gpu_profile=
limit_big=128GiB
big_batch=640
models=()
usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$self"; }
while [ $# -gt 0 ]; do
	case $1 in
	--quick) quick=1; solver_time=10; shift ;;
	--out) out=$2; shift 2 ;;
	--solver-time) solver_time=$2; shift 2 ;;
	--hw) hw=$2; shift 2 ;;
	--gpu-profile) gpu_profile=$2; shift 2 ;;
	--limit-big) limit_big=$2; shift 2 ;;
	--big-batch) big_batch=$2; shift 2 ;;
	-h|--help) usage; exit 0 ;;
	-*) echo "prepare.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
	*) models+=("$1"); shift ;;
	esac
done

if [ -z "$out" ]; then
	out=$root/bench/gpu/out/pkg
	[ "$quick" = 0 ] || out=$root/bench/gpu/out/quick
fi
autotmc=${AUTOTMC:-$root/autotmc}
py=${PREPARE_PYTHON:-python3}
[ -x "$autotmc" ] || { echo "prepare.sh: no $autotmc; build autotmc first (make)" >&2; exit 1; }
command -v "$py" > /dev/null || { echo "prepare.sh: no $py" >&2; exit 1; }

# model | .net file | batch | size | variants | PyTorch modes
# A variant is all-fast, OPT:S:F (--ratio S:F) or OPT@LIMIT (--limit LIMIT),
# with /bf16 after it in bf16 (--precision bf16; its name ends in -bf16),
# /fused with attention fused (--attention fused; -fused) and /fuse with the
# CPU's fusion (--fuse: activations, their gradients and residual sums in the
# kernels before them; -fuse; placed with the --hw times, which model them).
if [ "$quick" = 1 ]; then
	config=(
		"test_vgg|examples/test_vgg.net|8|32|all-fast async:1:1 async:3:1 auto:1:1 auto:3:1 um|eager save_on_cpu"
		"resnet50|examples/resnet50.net|32|224|all-fast async:1:1 async:3:1 um async@1GiB all-fast/bf16 async:3:1/bf16|eager save_on_cpu checkpoint eager-bf16"
	)
else
	config=(
		"vgg19|examples/vgg19.net|64|224|all-fast async:1:1 async:3:1 auto:1:1 auto:3:1 um all-fast/bf16 auto:1:1/bf16 auto:3:1/bf16|eager eager-bf16 save_on_cpu compile-bf16 sac-bf16 budget50-bf16 budget25-bf16"
		"resnet152|examples/resnet152.net|64|224|all-fast async:1:1 async:3:1 auto:1:1 auto:3:1 um all-fast/bf16 auto:1:1/bf16 auto:3:1/bf16|eager eager-bf16 save_on_cpu checkpoint checkpoint-bf16 compile-bf16 sac-bf16 budget50-bf16 budget25-bf16"
		"densenet201|examples/densenet201.net|64|224|all-fast async:1:1 async:3:1 auto:1:1 auto:3:1 um all-fast/bf16 auto:1:1/bf16 auto:3:1/bf16 all-fast/fuse all-fast/bf16/fuse|eager eager-bf16 compile save_on_cpu compile-bf16 sac-bf16 budget50-bf16 budget25-bf16"
		"inception_v3|examples/inception_v3.net|64|299|all-fast async:1:1 async:3:1 auto:1:1 auto:3:1 um all-fast/bf16 auto:1:1/bf16 auto:3:1/bf16|eager eager-bf16 save_on_cpu compile-bf16 sac-bf16 budget50-bf16 budget25-bf16"
		"gpt2|examples/gpt2.net|8|1024|all-fast auto:1:1 auto:3:1 all-fast/bf16 auto:1:1/bf16 auto:3:1/bf16 all-fast/fused auto:3:1/fused all-fast/bf16/fused auto:1:1/bf16/fused auto:3:1/bf16/fused all-fast/bf16/fused/fuse|eager eager-bf16 compile composed compile-bf16 sac-bf16 budget50-bf16 budget25-bf16"
		"resnet200|examples/resnet200.net|$big_batch|224|async@$limit_big auto@$limit_big|eager checkpoint"
	)
fi

selected() {
	[ ${#models[@]} = 0 ] && return 0
	local m
	for m in "${models[@]}"; do [ "$m" = "$1" ] && return 0; done
	return 1
}
for m in "${models[@]}"; do
	found=0
	for c in "${config[@]}"; do [ "${c%%|*}" = "$m" ] && found=1; done
	[ "$found" = 1 ] || { echo "prepare.sh: unknown model '$m' (the models: $(printf '%s ' "${config[@]%%|*}"))" >&2; exit 2; }
done

times=(--hw "$hw")
[ -z "$gpu_profile" ] || times=(--gpu-profile "$gpu_profile")

mkdir -p "$out/logs"
here=$root/bench/gpu
cp "$here/run.sh" "$here/torch_gpu.py" "$root/bench/torch_step.py" "$here/collect.py" "$here/summarize.py" \
	"$here/README.md" "$out/"
if [ -x "$root/autotm-gpu-profile" ]; then
	cp "$root/autotm-gpu-profile" "$out/"
else
	echo "prepare.sh: note: no $root/autotm-gpu-profile; the package will not profile the GPU" >&2
fi

runs=$out/runs.tsv
# runs.tsv: one run a line, tab-separated:
#   id  system  model  batch  size  mode  program
# (system autotmc: mode is the variant, program the file; pytorch: mode is
# eager|save_on_cpu|checkpoint|composed, with -bf16 under autocast bf16, program empty)
records=$out/logs/records.jsonl
if [ ${#models[@]} = 0 ] || [ ! -f "$runs" ] || [ ! -f "$records" ]; then
	printf '# id\tsystem\tmodel\tbatch\tsize\tmode\tprogram\n' > "$runs"
	: > "$records"
fi

# drop_runs MODEL BATCH: forget MODEL's earlier lines (a rebuild of a subset)
drop_runs() {
	local tmp
	tmp=$(mktemp)
	awk -F'\t' -v m="$1" -v b="$2" '$3 != m || $4 != b' "$runs" > "$tmp" && cat "$tmp" > "$runs"
	awk -v id="\"model_key\": \"$1\", \"batch\": $2," 'index($0, id) == 0' "$records" > "$tmp" && cat "$tmp" > "$records"
	rm -f "$tmp"
}

failed=0
t_all=$SECONDS
for c in "${config[@]}"; do
	IFS='|' read -r model net batch size variants modes <<< "$c"
	selected "$model" || continue
	drop_runs "$model" "$batch"
	case $model in
	gpt*) defs=(-D "batch=$batch" -D "seq=$size"); echo "== $model batch $batch, $size positions" >&2 ;;
	*) defs=(-D "batch=$batch" -D "size=$size"); echo "== $model batch $batch, ${size}x$size" >&2 ;;
	esac
	"$autotmc" profile "$net" "${defs[@]}" --backend gpu --export "$out/$model-b$batch.kernels.tsv" > /dev/null
	[[ " $variants" != *"/bf16"* ]] || "$autotmc" profile "$net" "${defs[@]}" --backend gpu --precision bf16 \
		--export "$out/$model-b$batch-bf16.kernels.tsv" > /dev/null
	[[ " $variants" != *"/bf16/fused"* ]] || "$autotmc" profile "$net" "${defs[@]}" --backend gpu --precision bf16 \
		--attention fused --export "$out/$model-b$batch-bf16-fused.kernels.tsv" > /dev/null
	# (a variant's modifiers end with /fuse: " $variants " holds "/fuse ")
	[[ " $variants " != *"/fuse "* ]] || "$autotmc" profile "$net" "${defs[@]}" --backend gpu --fuse \
		--export "$out/$model-b$batch-fuse.kernels.tsv" > /dev/null
	[[ " $variants " != *"/bf16/fuse "* && " $variants " != *"/bf16/fused/fuse "* ]] || "$autotmc" profile "$net" \
		"${defs[@]}" --backend gpu --precision bf16 --fuse --export "$out/$model-b$batch-bf16-fuse.kernels.tsv" > /dev/null
	if [ -d "$gpu_profile" ]; then
		# a directory of measured profiles: this model's, by name
		times=(--gpu-profile "$gpu_profile/$model-b$batch.gpu.tsv")
		if [ ! -f "${times[1]}" ]; then
			echo "prepare.sh: note: no ${times[1]}: $model is placed with modeled times (--hw $hw)" >&2
			times=(--hw "$hw")
		fi
	fi
	for v in $variants; do
		prec=() suffix=
		while [[ $v == */* ]]; do # modifiers: /bf16 (--precision bf16), /fused (--attention fused)
			case ${v##*/} in
			bf16) prec+=(--precision bf16); suffix=-bf16$suffix ;;
			fused) prec+=(--attention fused); suffix=-fused$suffix ;;
			fuse) prec+=(--fuse); suffix=-fuse$suffix ;;
			*) echo "prepare.sh: bad variant '$v'" >&2; exit 2 ;;
			esac
			v=${v%/*}
		done
		case $v in
		all-fast|um) opt=$v; place=(); name=$v ;;
		*@*) opt=${v%%@*}; place=(--limit "${v#*@}"); name=$opt-${v#*@} ;;
		*:*:*)
			opt=${v%%:*}; r=${v#*:}
			place=(--ratio "$r")
			name=$opt-$(awk -v s="${r%%:*}" -v f="${r#*:}" 'BEGIN { printf "%g", 100 * f / (s + f) }')
			;;
		*) echo "prepare.sh: bad variant '$v'" >&2; exit 2 ;;
		esac
		name=$name$suffix
		id=$model-b$batch-$name
		prog=$out/$id
		log=$out/logs/build-$id.txt
		solver=()
		case $opt in async|sync|auto|recompute) solver=(--solver-time "$solver_time") ;; esac
		t0=$SECONDS
		set +e
		vtimes=("${times[@]}") # the measured profiles have no fused kernels: --fuse is placed with modeled times
		[[ $suffix != *-fuse* ]] || vtimes=(--hw "$hw")
		"$autotmc" build "$net" "${defs[@]}" --backend gpu "${vtimes[@]}" --optimizer "$opt" \
			"${place[@]}" "${solver[@]}" "${prec[@]}" -o "$prog" > "$log" 2>&1
		rc=$?
		set -e
		secs=$((SECONDS - t0))
		if [ "$rc" = 0 ]; then
			strip --strip-debug "$prog" 2> /dev/null || true
			echo "   $id: built in ${secs}s" >&2
		else
			failed=1
			rm -f "$prog"
			echo "   $id: FAILED in ${secs}s: $(grep -m1 'error' "$log" || tail -1 "$log")" >&2
		fi
		"$py" - "$prog" "$log" "$rc" "$secs" "$model" "$batch" "$size" "$name" "$opt" "${place[*]}" "$net" >> "$records" <<'EOF'
import json, os, re, sys
prog, log, rc, secs, model, batch, size, name, opt, place, net = sys.argv[1:]
rec = {"model_key": model, "batch": int(batch), "size": int(size), "variant": name,
       "optimizer": opt, "placement_options": place, "source": net,
       "program": os.path.basename(prog), "build_status": "ok" if rc == "0" else "error",
       "build_seconds": int(secs), "build_log": "logs/" + os.path.basename(log)}
text = open(log, errors="replace").read()
if rc != "0":
    errs = [l for l in text.splitlines() if "error" in l]
    rec["build_error"] = (errs or text.splitlines()[-1:] or [""])[0]
else:
    # the compiler's fields of the results record are a JSON string in the program
    data = open(prog, "rb").read()
    i = data.find(b'{"model":')
    while i >= 0:
        j = data.find(b"\0", i)
        try:
            r = json.loads(data[i:j].decode())
            if "compiled_for" in r:
                rec["compiled"] = r
                break
        except ValueError:
            pass
        i = data.find(b'{"model":', i + 1)
    m = re.search(r"fast pool: .*", text)
    rec["build_pools"] = m.group(0) if m else None
    m = re.search(r"^ILP: .*", text, re.M)
    rec["build_ilp"] = m.group(0) if m else None
    m = re.search(r"^autotmc: note: .*", text, re.M)
    rec["build_note"] = m.group(0) if m else None
    rec["program_bytes"] = os.path.getsize(prog)
print(json.dumps(rec))
EOF
		[ "$rc" != 0 ] || printf '%s\tautotmc\t%s\t%s\t%s\t%s\t%s\n' "$id" "$model" "$batch" "$size" "$name" "$id" >> "$runs"
	done
	for mode in $modes; do
		printf '%s\tpytorch\t%s\t%s\t%s\t%s\t\n' "$model-b$batch-torch-$mode" "$model" "$batch" "$size" "$mode" >> "$runs"
	done
done

# one libcjson.so.1 (autotmc writes one beside every program)
[ -f "$out/libcjson.so.1" ] || echo "prepare.sh: warning: no libcjson.so.1 in $out" >&2

"$py" - "$records" "$out/manifest.json" "$hw" "$gpu_profile" "$(git describe --always --dirty 2>/dev/null || echo unknown)" <<'EOF'
import json, sys, time
recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
json.dump({"created": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "times": ("gpu profile " + sys.argv[4]) if sys.argv[4] else "modeled: hw/" + sys.argv[3],
           "autotmc": sys.argv[5], "programs": recs}, open(sys.argv[2], "w"), indent=1)
EOF

echo "prepare.sh: $(grep -c autotmc "$runs") programs, $(grep -c pytorch "$runs") PyTorch runs in $out" \
	"($(du -sh "$out" | cut -f1); $((SECONDS - t_all)) s)" >&2
[ "$failed" = 0 ] || echo "prepare.sh: some builds failed; see $out/manifest.json and $out/logs/" >&2
exit "$failed"
