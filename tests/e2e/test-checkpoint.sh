#!/usr/bin/env bash
# Checkpoints (--checkpoint DIR, --save-every K, --resume DIR) on a model
# with every kind of state: batchnorm's running statistics, AdamW's two
# moments, dropout (its masks follow the step), a warmup-cosine schedule
# (its rate follows the step) and clipping, trained on a dataset for 3
# epochs (the order follows the seed and the epoch):
#   - a run killed (SIGKILL) twice at different moments and resumed each
#     time ends with weights bitwise equal to an uninterrupted run's;
#   - Ctrl-C (SIGINT) finishes the step, saves a checkpoint and exits 130;
#     the run resumed from it ends bitwise equal too;
#   - a temporary file that a killed save left behind is removed;
#   - the checkpoint holds the optimizer's state and the run's position;
#   - every wrong use gets its message: a missing checkpoint, a weights
#     file that is not one, a malformed step, another model's, another seed, a checkpoint
#     past the run's end, --save-every without --checkpoint, --resume with
#     --weights, a --checkpoint that is a file.
# Skipped (77) where no python3 with numpy is installed (to make the data).
set -uo pipefail
srcdir=${TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
builddir=${TOP_BUILDDIR:-$srcdir}
autotmc=${AUTOTMC:-$builddir/autotmc}
. "$srcdir/tests/python.sh"
need_python "numpy" "python3-numpy"
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/checkpoint.XXXXXX") || exit 1
trap 'kill -9 $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
cd "$work" || exit 1
export XDG_CACHE_HOME=$work/cache
. "$srcdir/tests/checks.sh"

cat >model.net <<'EOF'
model ckpt(batch = 16)
network = chain {
    dense(32 => 64, bias = false) batchnorm relu
    dropout(0.2)
    dense(64 => 5)
}
input  x : f32[batch, 32]
labels y : onehot[batch, 5]
loss = crossentropy(network(x), y)
optimizer = adamw(lr = 0.01, clip = 1.0, schedule = cosine(steps = 150, warmup = 10, floor = 0.001))
EOF
sed 's/^model ckpt/model other/' model.net >other.net
"$py" - <<'EOF' || exit 1
import os
import numpy as np
r = np.random.RandomState(3)
os.makedirs("data")
np.save("data/x.npy", r.standard_normal((1000, 32)).astype(np.float32))
np.save("data/y.npy", r.randint(0, 5, 1000).astype(np.int64))
EOF
"$autotmc" build model.net -o prog >/dev/null || { echo "FAIL: build"; exit 1; }
"$autotmc" build other.net -o other >/dev/null || { echo "FAIL: build other"; exit 1; }
run=(./prog --data data --epochs 3 --threads 2)

# the uninterrupted run: 3 epochs of 62 steps
"${run[@]}" --save-weights full.st >full.log 2>&1 || { cat full.log; echo "FAIL: uninterrupted run"; exit 1; }
steps=$(grep -c '^step ' full.log)
[ "$steps" = 186 ] && ok "186 steps uninterrupted" || fail "$steps steps uninterrupted, expected 186"

# kill_after LOG N: SIGKILL the background job once LOG shows N steps
kill_after() {
    local log=$1 n=$2 pid=$! i
    for ((i = 0; i < 3000; i++)); do
        [ "$(grep -c '^step ' "$log" 2>/dev/null)" -ge "$n" ] && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.01
    done
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
}

# killed twice, resumed twice, over 100 epochs (so that the kills come
# while it trains); checkpoints every 50 steps, then every 7
long=(./prog --data data --epochs 100 --threads 2)
"${long[@]}" --save-weights full100.st >full100.log 2>&1 || fail "uninterrupted run of 100 epochs"
"${long[@]}" --checkpoint ck --save-every 50 >kill1.log 2>&1 &
kill_after kill1.log 500
at1=$(grep -o 'checkpoint: step [0-9]*' kill1.log | tail -1)
"${long[@]}" --checkpoint ck --save-every 7 --resume ck >kill2.log 2>&1 &
kill_after kill2.log 3000
at2=$(grep -o 'checkpoint: step [0-9]*' kill2.log | tail -1)
touch ck/.checkpoint.safetensors.Ab12Cd # a save killed before its rename leaves this
"${long[@]}" --checkpoint ck --resume ck --save-weights resumed.st >resume.log 2>&1 ||
    { cat resume.log; fail "resuming the killed run"; }
echo "killed after ${at1:-no checkpoint} and ${at2:-no checkpoint}"
line=$(grep '^resuming' resume.log)
resumed_at=$(echo "$line" | sed -n 's/^resuming from ck\/checkpoint.safetensors at step \([0-9]*\) of 6200$/\1/p')
[ -n "$resumed_at" ] && [ "$resumed_at" -gt 0 ] && [ "$resumed_at" -lt 6200 ] &&
    ok "killed mid-run: $line" || fail "not killed mid-run: ${line:-no resumption line}"
cmp -s full100.st resumed.st && ok "killed twice and resumed: the weights equal the uninterrupted run's, bit for bit" ||
    fail "killed and resumed: the weights differ from the uninterrupted run's"
[ ! -e ck/.checkpoint.safetensors.Ab12Cd ] && ok "a killed save's temporary file is removed" ||
    fail "the temporary file of a killed save is still there"
"${run[@]}" --checkpoint ck3 --save-every 1 >every.log 2>&1 && [ "$(grep -c '^checkpoint: step' every.log)" = 186 ] &&
    ok "--save-every 1: 186 checkpoints" || fail "--save-every 1: $(grep -c '^checkpoint: step' every.log) checkpoints"

# what a checkpoint holds
"$py" - ck3/checkpoint.safetensors <<'EOF' && ok "the checkpoint holds the state and the position" || fail "checkpoint contents"
import json, struct, sys
data = open(sys.argv[1], "rb").read()
h = json.loads(data[8:8 + struct.unpack("<Q", data[:8])[0]])
# ck3: the 3-epoch run with a checkpoint every step, the last at its end
m = h.pop("__metadata__")
want = {"format": "autotmc-checkpoint-1", "model": "ckpt", "step": "186", "seed": "1", "epoch": "3",
        "epoch_step": "0", "data": "data"}
assert m == want, m
names = set(h)
for s in ("dense1.weight", "dense1.weight.exp_avg", "dense1.weight.exp_avg_sq", "batchnorm1.running_mean",
          "batchnorm1.running_var", "batchnorm1.num_batches_tracked", "dense2.bias.exp_avg_sq"):
    assert s in names, (s, sorted(names))
print(len(names), "tensors:", ", ".join(sorted(names)))
EOF

# Ctrl-C: the step finishes, a checkpoint is saved, the run ends with 130
# (100 epochs, so that the signal comes while it trains)
"${long[@]}" --checkpoint ci >int1.log 2>&1 &
pid=$!
for ((i = 0; i < 3000; i++)); do
    [ "$(grep -c '^step ' int1.log)" -ge 30 ] && break
    sleep 0.01
done
kill -INT $pid
wait $pid
st=$?
last=$(grep '^step ' int1.log | tail -1 | sed 's/: .*//')
[ $st = 130 ] && ok "Ctrl-C: exit status 130" || fail "Ctrl-C: exit status $st, expected 130"
grep -q "^checkpoint: ${last} saved to ci/checkpoint.safetensors" int1.log &&
    grep -q "^stopped by signal 2 after ${last}$" int1.log && ok "Ctrl-C after ${last}: checkpoint saved" ||
    { cat int1.log | tail -5; fail "Ctrl-C: no checkpoint of the last step ($last)"; }
"${long[@]}" --resume ci --save-weights int.st >int2.log 2>&1 || { cat int2.log; fail "resuming after Ctrl-C"; }
cmp -s full100.st int.st && ok "Ctrl-C and resumed: bitwise the uninterrupted run's weights" ||
    fail "Ctrl-C and resumed: the weights differ"

expect 1 "^prog: error: --resume nowhere: cannot open 'nowhere/checkpoint.safetensors': No such file or directory$" \
    "${run[@]}" --resume nowhere
mkdir -p notck && ./prog --data data --iters 2 --save-weights notck/checkpoint.safetensors >/dev/null 2>&1
expect 1 "^prog: error: notck/checkpoint.safetensors is not an autotmc checkpoint \(its header lacks the run's position\)$" \
    "${run[@]}" --resume notck
expect 1 "^other: error: ck3/checkpoint.safetensors is a checkpoint of the model 'ckpt', not of 'other'$" \
    ./other --data data --resume ck3
mkdir -p badstep && "$py" - ck3/checkpoint.safetensors badstep/checkpoint.safetensors <<'EOF'
import json, struct, sys
data = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", data[:8])[0]
h = json.loads(data[8:8 + n])
h["__metadata__"]["step"] = "12x"
head = json.dumps(h).encode()
head += b" " * (-len(head) % 8)
open(sys.argv[2], "wb").write(struct.pack("<Q", len(head)) + head + data[8 + n:])
EOF
expect 1 "^prog: error: badstep/checkpoint.safetensors: its step, '12x', is not a whole number$" \
    "${run[@]}" --resume badstep
expect 2 "^prog: --seed 5 differs from the checkpoint's seed 1; a resumed run keeps its seed$" \
    "${long[@]}" --resume ci --seed 5
expect 2 "^prog: --resume ck3: the checkpoint is at step 186, beyond this run's 124 steps \(--iters and --epochs count from the start of the run\)$" \
    ./prog --data data --epochs 2 --resume ck3
expect 2 "^prog: --save-every needs --checkpoint DIR$" ./prog --save-every 3
expect 2 "^prog: --resume loads the weights from the checkpoint; give it or --weights, not both$" \
    ./prog --resume ck3 --weights full.st
expect 1 "^prog: error: --checkpoint full.st: not a directory$" ./prog --iters 1 --checkpoint full.st
expect 2 "^autotmc: --save-every needs --checkpoint DIR$" "$autotmc" run model.net --save-every 3

# --plot: the loss of every step and each epoch's mean, drawn by gnuplot
if command -v gnuplot >/dev/null; then
    ./prog --data data --epochs 2 --plot loss.svg >plot.log 2>&1 && grep -q 'training loss: ckpt' loss.svg &&
        grep -q 'mean loss of each epoch' loss.svg && ok "--plot loss.svg drawn" || fail "--plot: $(cat plot.log)"
else
    echo "skipped: --plot (no gnuplot)"
fi
expect 2 "^prog: --plot loss.pdf: a plot is written as .png or .svg$" ./prog --iters 1 --plot loss.pdf
expect 1 "^prog: error: --plot: cannot write nodir/loss.png: its directory does not exist$" ./prog --iters 1 --plot nodir/loss.png

# through autotmc run: the options reach the program
"$autotmc" run model.net --data data --iters 5 --checkpoint viarun >run.log 2>&1 &&
    grep -q '^checkpoint: step 5 saved to viarun/checkpoint.safetensors' run.log &&
    "$autotmc" run model.net --data data --iters 8 --resume viarun >run2.log 2>&1 &&
    grep -q '^resuming from viarun/checkpoint.safetensors at step 5 of 8$' run2.log &&
    [ "$(grep -c '^step ' run2.log)" = 3 ] && ok "autotmc run --checkpoint, then --resume: 3 more steps" ||
    { tail -3 run.log run2.log; fail "autotmc run with checkpoints"; }

finish
