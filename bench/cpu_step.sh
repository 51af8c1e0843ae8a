#!/bin/bash
# bench/cpu_step.sh - the training step time of autotmc's CPU programs against
# PyTorch on the CPU, same machine, same threads, in one run.
#
#   bench/setup.sh                     # once: PyTorch from PyPI in bench/.venv
#   bench/cpu_step.sh [--threads T] [--iters N] [--warmup W] [--rounds R]
#                     [--only NAME[,NAME...]] [--no-torch-profile]
#                     [--wait-idle S] [--retry K] [--precision fp32|bf16]
#                     [--compile] [--unfused] [--row-major]
#
# Workloads: mlp-b16 (examples/mlp.net), mlp-b64 (-D batch=64), vgg-b8
# (examples/test_vgg.net), vgg-b64 (-D batch=64), tinygpt-b16
# (examples/tinygpt.net), gpt6x512-b8 (examples/gpt2.net at 6 layers of 8
# heads, 512 wide, 256 positions, GPT-2's vocabulary), and the torchvision CNNs
# resnet50-b8, densenet201-b8, inception_v3-b8 (examples/*.net; PyTorch's side
# is bench/gpu/torch_gpu.py --device cpu) and vgg19-b4.  --precision bf16
# trains both sides in mixed precision: autotmc --precision bf16, PyTorch under
# torch.autocast("cpu", dtype=torch.bfloat16).  For each, the autotmc
# program is built once, then R rounds each run the autotmc program (W + N
# steps, --results) and bench/torch_step.py (W warm-up + N timed steps),
# alternating which goes first.  A workload's figure is the median over the
# R x N timed steps of each side (the first W steps of every run dropped);
# min and max are over the same steps.  ratio = PyTorch / autotmc: above 1,
# autotmc is faster.  --compile adds a third side to every round, PyTorch
# under torch.compile (NAME.compile.K.json; its warm-up steps compile);
# --unfused a fourth, the autotmc program built with --no-fuse
# (NAME.unfused.K.json), for fusion's speedup; --row-major a fifth, the autotmc
# program built with AUTOTM_BLOCKED=0 (every tensor row-major, NAME.rowmajor.K.json),
# for the channel-blocked layouts' speedup.  Then one more autotmc run with --profile-kernels (and a
# torch.profiler run) gives the per-kernel tables in bench/out/.
#
# Defaults: T = nproc, N = 20, W = 5, R = 3.  The load that other processes
# put on the CPUs during each timed run is logged (busy.txt, the "other"
# column); --wait-idle S waits, at most S seconds before each run, for the
# CPUs to be idle; --retry K runs a timed run again (up to K times) when
# other processes took more than 10% of the CPUs during it.  Outputs in
# bench/out/ (or $BENCH_OUT): machine.txt, NAME.autotmc.K.json,
# NAME.torch.K.json, NAME.kernels.txt, NAME.torch-profile.txt, busy.txt,
# summary.json, summary.md.  Environment: AUTOTMC (default ./autotmc),
# BENCH_PYTHON (default bench/.venv/bin/python).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

threads=$(nproc)
iters=20
warmup=5
rounds=3
only=
torch_profile=1
idle_wait=0
retry=0
precision=fp32
compile=0
unfused=0
rowmajor=0
usage() { sed -n '2,33p' "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
	case $1 in
	--threads) threads=$2; shift 2 ;;
	--iters) iters=$2; shift 2 ;;
	--warmup) warmup=$2; shift 2 ;;
	--rounds) rounds=$2; shift 2 ;;
	--only) only=$2; shift 2 ;;
	--no-torch-profile) torch_profile=0; shift ;;
	--wait-idle) idle_wait=$2; shift 2 ;;
	--retry) retry=$2; shift 2 ;;
	--precision) precision=$2; shift 2 ;;
	--compile) compile=1; shift ;;
	--unfused) unfused=1; shift ;;
	--row-major) rowmajor=1; shift ;;
	-h|--help) usage; exit 0 ;;
	*) echo "cpu_step.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
	esac
done

autotmc=${AUTOTMC:-$root/autotmc}
py=${BENCH_PYTHON:-$root/bench/.venv/bin/python}
out=${BENCH_OUT:-$root/bench/out}
[ -x "$autotmc" ] || { echo "cpu_step.sh: no $autotmc; build autotmc first (make)" >&2; exit 1; }
[ -x "$py" ] || { echo "cpu_step.sh: no $py; run bench/setup.sh first" >&2; exit 1; }
mkdir -p "$out/prog"

# name | .net file | autotmc -D options | torch_step.py options
workloads=(
	"mlp-b16|examples/mlp.net||--model mlp --batch 16"
	"mlp-b64|examples/mlp.net|-D batch=64|--model mlp --batch 64"
	"vgg-b8|examples/test_vgg.net||--model test_vgg --batch 8"
	"vgg-b64|examples/test_vgg.net|-D batch=64|--model test_vgg --batch 64"
	"tinygpt-b16|examples/tinygpt.net||--model gpt --batch 16 --layers 4 --heads 4 --width 128 --vocab 256 --seq 64 --beta2 0.99"
	"gpt6x512-b8|examples/gpt2.net|-D n_layer=6 -D n_head=8 -D n_embd=512 -D seq=256 -D batch=8|--model gpt --batch 8 --layers 6 --heads 8 --width 512 --vocab 50257 --seq 256"
	"resnet50-b8|examples/resnet50.net|-D batch=8|gpu/torch_gpu.py --device cpu --model resnet50 --batch 8"
	"densenet201-b8|examples/densenet201.net|-D batch=8|gpu/torch_gpu.py --device cpu --model densenet201 --batch 8"
	"inception_v3-b8|examples/inception_v3.net|-D batch=8|gpu/torch_gpu.py --device cpu --model inception_v3 --batch 8"
	"vgg19-b4|examples/vgg19.net|-D batch=4|gpu/torch_gpu.py --device cpu --model vgg19 --batch 4"
)
# the PyTorch script of a workload: bench/torch_step.py unless its options name another
torch_script() { case $1 in gpu/*) echo "bench/${1%% *}" ;; *) echo bench/torch_step.py ;; esac; }
torch_args() { case $1 in gpu/*) echo "${1#* }" ;; *) echo "$1" ;; esac; }

# busy: the share of all CPUs busy over one second, from /proc/stat.
busy() {
	local a b t=0 k
	read -ra a < /proc/stat; sleep 1; read -ra b < /proc/stat
	for k in 1 2 3 4 5 6 7 8; do t=$((t + b[k] - a[k])); done
	echo $(( t > 0 ? 100 * (t - (b[4] - a[4]) - (b[5] - a[5])) / t : 0 ))
}

# With --wait-idle S: wait (at most S seconds) until other processes leave
# the CPUs alone (busy under 10% for one second).
wait_idle() {
	local t0=$SECONDS
	while [ "$idle_wait" -gt 0 ] && [ $((SECONDS - t0)) -lt "$idle_wait" ] && [ "$(busy)" -ge 10 ]; do
		sleep 4
	done
}

# measured LABEL OUT CMD...: run CMD, its output to the file OUT (- for none), and log, in busy.txt, the share of all the
# CPUs that other processes used meanwhile (busy time from /proc/stat less
# CMD's own user + system time from /usr/bin/time).  With --retry K, a run
# during which others took more than 10% is run again, up to K times (the
# discarded runs are logged in busy-discarded.txt).
measured() {
	local label=$1 o=$2 a b tf t k other try=0; shift 2
	[ "$o" != - ] || o=/dev/stdout
	if [ ! -x /usr/bin/time ]; then
		wait_idle; "$@" > "$o"; echo "$label other n/a" >> "$busy_log"; return
	fi
	tf=$(mktemp)
	while :; do
		wait_idle
		read -ra a < /proc/stat
		/usr/bin/time -f '%e %U %S' -o "$tf" "$@" > "$o"
		read -ra b < /proc/stat
		t=0
		for k in 1 2 3 4 5 6 7 8; do t=$((t + b[k] - a[k])); done
		other=$(awk -v t="$t" -v idle=$((b[4] - a[4] + b[5] - a[5])) -v hz="$(getconf CLK_TCK)" \
			'{ o = t > 0 ? 100 * ((t - idle) / hz - $2 - $3) / (t / hz) : 0;
			   printf "%d", o < 0 ? 0 : o + 0.5 }' "$tf")
		try=$((try + 1))
		if [ "$other" -gt 10 ] && [ "$try" -le "$retry" ]; then
			echo "$label other $other%" >> "$out/busy-discarded.txt"
			continue
		fi
		echo "$label other $other%" >> "$busy_log"
		break
	done
	rm -f "$tf"
}

# machine and versions
{
	echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "cpu: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs ($(lscpu | sed -n 's/^Core(s) per socket: *//p') cores per socket, $(lscpu | sed -n 's/^Thread(s) per core: *//p') threads per core), $(lscpu | sed -n 's/^Hypervisor vendor: *//p' | sed 's/./hypervisor &/')"
	echo "memory: $(free -g | awk '/^Mem:/ {print $2 " GiB"}')"
	echo "kernel: $(uname -sr)"
	echo "autotmc: $(git describe --always --dirty 2>/dev/null || echo unknown), $("$autotmc" --version 2>&1 | head -1)"
	echo "oneDNN (autotmc): $(dpkg-query -W -f '${Package} ${Version}' libdnnl2 2>/dev/null || echo unknown)"
	echo "pytorch: $("$py" -c 'import re, torch; c = torch.__config__.show(); m = re.search(r"Math Kernel Library Version (\S+)", c); d = re.search(r"MKL-DNN (v\S+)", c); print(torch.__version__, "from PyPI; MKL", m and m.group(1), "; oneDNN", d and d.group(1))' 2>/dev/null)"
	echo "autotmc binary: $(date -u -r "$autotmc" '+%Y-%m-%d %H:%M UTC'); runtime library: $(date -u -r "$root/libautotmrt.a" '+%Y-%m-%d %H:%M UTC' 2>/dev/null || echo '?')"
	echo "environment: OMP_WAIT_POLICY=${OMP_WAIT_POLICY-unset} GOMP_SPINCOUNT=${GOMP_SPINCOUNT-unset} OMP_PROC_BIND=${OMP_PROC_BIND-unset}"
	echo "threads: $threads; steps per run: $warmup warm-up + $iters timed; rounds: $rounds; precision: $precision"
} > "$out/machine.txt"
cat "$out/machine.txt"
echo

selected() { [ -z "$only" ] || [[ ",$only," == *",$1,"* ]]; }

busy_log=$out/busy.txt
: > "$busy_log"
: > "$out/busy-discarded.txt"
for w in "${workloads[@]}"; do
	IFS='|' read -r name net defs targs <<< "$w"
	selected "$name" || continue
	prog=$out/prog/$name
	# shellcheck disable=SC2086
	"$autotmc" build $defs "$net" --precision "$precision" -o "$prog" > "$out/$name.build.txt"
	# shellcheck disable=SC2086
	[ "$unfused" = 0 ] || "$autotmc" build $defs "$net" --precision "$precision" --no-fuse -o "$prog.unfused" \
		> "$out/$name.unfused.build.txt"
	# shellcheck disable=SC2086
	[ "$rowmajor" = 0 ] || AUTOTM_BLOCKED=0 "$autotmc" build $defs "$net" --precision "$precision" -o "$prog.rowmajor" \
		> "$out/$name.rowmajor.build.txt"
	rm -f "$out/$name".autotmc.*.json "$out/$name".torch.*.json "$out/$name".compile.*.json "$out/$name".unfused.*.json \
		"$out/$name".rowmajor.*.json
	for r in $(seq 1 "$rounds"); do
		run_autotmc() {
			measured "$name autotmc $r" - "$prog" --iters $((warmup + iters)) --threads "$threads" \
				--quiet --results "$out/$name.autotmc.$r.json"
		}
		run_torch() {
			# shellcheck disable=SC2086
			measured "$name torch $r" "$out/$name.torch.$r.json" "$py" "$(torch_script "$targs")" \
				$(torch_args "$targs") --precision "$precision" --threads "$threads" --warmup "$warmup" --iters "$iters"
		}
		run_compiled() {
			local a
			a=$(torch_args "$targs")
			case $(torch_script "$targs") in */torch_gpu.py) a="$a --mode compile" ;; *) a="$a --compile" ;; esac
			# shellcheck disable=SC2086
			measured "$name compile $r" "$out/$name.compile.$r.json" "$py" "$(torch_script "$targs")" \
				$a --precision "$precision" --threads "$threads" --warmup "$warmup" --iters "$iters"
		}
		run_unfused() {
			measured "$name unfused $r" - "$prog.unfused" --iters $((warmup + iters)) --threads "$threads" \
				--quiet --results "$out/$name.unfused.$r.json"
		}
		run_rowmajor() {
			measured "$name rowmajor $r" - "$prog.rowmajor" --iters $((warmup + iters)) --threads "$threads" \
				--quiet --results "$out/$name.rowmajor.$r.json"
		}
		if [ $((r % 2)) = 1 ]; then run_autotmc; run_torch; else run_torch; run_autotmc; fi
		[ "$compile" = 0 ] || run_compiled
		[ "$unfused" = 0 ] || run_unfused
		[ "$rowmajor" = 0 ] || run_rowmajor
		echo "$name: round $r of $rounds done" >&2
	done
	measured "$name profile" "$out/$name.kernels.txt" "$prog" --iters $((warmup + iters)) \
		--threads "$threads" --quiet --profile-kernels
	if [ "$torch_profile" = 1 ] && [ "$(torch_script "$targs")" = bench/torch_step.py ]; then
		wait_idle
		# shellcheck disable=SC2086
		"$py" bench/torch_step.py $targs --precision "$precision" --threads "$threads" --warmup "$warmup" \
			--iters "$iters" --profile "$out/$name.torch-profile.txt" \
			> /dev/null 2> "$out/$name.torch-profile.log"
	fi
done

echo
"$py" bench/summarize.py --out "$out" --warmup "$warmup" --iters "$iters" \
	--names "$(for w in "${workloads[@]}"; do n=${w%%|*}; selected "$n" && printf '%s,' "$n"; done)"
