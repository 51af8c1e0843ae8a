#!/usr/bin/env bash
# Training on a dataset (--data DIR: x.npy, y.npy):
#   - the batches are those the documented order gives: an independent
#     Python implementation of it (splitmix64, Fisher-Yates per epoch, the
#     last partial batch dropped) writes each step's batch, the interpreter
#     trains on them one step at a time, and its weights equal, bit for
#     bit, those of the interpreter trained with --data;
#   - the program (runtime, prefetching on a thread or not) trains like the
#     interpreter, and the same seed gives the same losses, another seed
#     other ones;
#   - a partial epoch, the epoch lines and the announcement;
#   - every bad dataset gets its exact message, naming the file, before
#     the first step, from the program and from the interpreter alike;
#   - options that do not go together are refused (exit 2).
# Skipped (77) where no python3 with numpy is installed.
set -uo pipefail
srcdir=${TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
builddir=${TOP_BUILDDIR:-$srcdir}
autotmc=${AUTOTMC:-$builddir/autotmc}
compare=$builddir/tests/e2e/compare-weights
. "$srcdir/tests/python.sh"
need_python "numpy" "python3-numpy"
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/data.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
export XDG_CACHE_HOME=$work/cache
. "$srcdir/tests/checks.sh"

cat >small.net <<'EOF'
model small(batch = 8, lr = 0.1)
network = chain {
    dense(12 => 16, relu)
    dense(16 => 3)
    softmax
}
input  x : f32[batch, 12]
labels y : onehot[batch, 3]
loss = crossentropy(network(x), y)
optimizer = sgd(lr = lr)
EOF
# a batch of 256 KiB: prepared on a thread while the step before runs
cat >wide.net <<'EOF'
model wide(batch = 16, lr = 0.01)
network = chain {
    dense(4096 => 3)
    softmax
}
input  x : f32[batch, 4096]
labels y : onehot[batch, 3]
loss = crossentropy(network(x), y)
optimizer = sgd(lr = lr)
EOF

# mk DIR N FEATURES [CLASSES]: a good dataset of N samples
mk() {
    "$py" - "$@" <<'EOF'
import os, sys
import numpy as np
d, n, f = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.makedirs(d, exist_ok=True)
r = np.random.RandomState(n)
np.save(os.path.join(d, "x.npy"), r.randn(n, f).astype(np.float32))
np.save(os.path.join(d, "y.npy"), r.randint(0, 3, n).astype(np.int64))
EOF
}
mk good 20 12
mk widedata 50 4096

# ---- the order: an independent implementation of the documented one ------------
"$py" - good 5 3 8 <<'EOF'
import os, sys
import numpy as np
d, seed, epochs, batch = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
M = (1 << 64) - 1
def splitmix(s):
    s = (s + 0x9e3779b97f4a7c15) & M
    z = s
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M
    return s, z ^ (z >> 31)
def stream(seed, name):
    h = 0xcbf29ce484222325
    for c in name.encode():
        h = ((h ^ c) * 0x100000001b3) & M
    return splitmix(seed ^ h)[1]
x, y = np.load(os.path.join(d, "x.npy")), np.load(os.path.join(d, "y.npy"))
n = len(y)
t = 0
for e in range(epochs):
    s = stream(seed, "data.order") ^ ((e * 0xd1b54a32d192ed03) & M)
    s, _ = splitmix(s)
    perm = list(range(n))
    for i in range(n - 1, 0, -1):
        s, r = splitmix(s)
        j = r % (i + 1)
        perm[i], perm[j] = perm[j], perm[i]
    for b in range(n // batch):
        idx = perm[b * batch:(b + 1) * batch]
        np.save(f"X{t}.npy", x[idx])
        np.save(f"Y{t}.npy", y[idx])
        t += 1
print(t, "batches")
EOF
"$autotmc" interpret small.net --seed 5 --iters 0 --save-weights W0.st >/dev/null || fail "interpret --iters 0"
for t in 0 1 2 3 4 5; do
    "$autotmc" interpret small.net --seed 5 --iters 1 --weights W$t.st --input X$t.npy --labels Y$t.npy \
        --save-weights W$((t + 1)).st >>chain.txt || fail "interpret step $t"
done
"$autotmc" interpret small.net --seed 5 --data good --epochs 3 --save-weights Wi.st >interp.txt ||
    fail "interpret --data"
if "$compare" Wi.st W6.st 0 >cmp.txt; then
    ok "interpret --data trains on the documented order, bit for bit"
else
    fail "interpret --data and the step-by-step batches differ: $(cat cmp.txt)"
fi
[ "$(grep -c '^step' interp.txt)" -eq 6 ] || fail "3 epochs of 2 steps: $(grep -c '^step' interp.txt) steps"

# ---- the program against the interpreter ---------------------------------------------
losses() { sed -n 's/^step \([0-9]*\): loss \([^ ]*\).*/\1 \2/p' "$1"; }
close() { # close A.txt B.txt: same steps, losses within 1e-5 relative
    paste <(losses "$1") <(losses "$2") | awk '
        { n++; if ($1 != $3) bad = 1; d = $2 - $4; if (d < 0) d = -d; m = $4 < 0 ? -$4 : $4
          if (d > 1e-5 * (m > 1e-3 ? m : 1e-3)) bad = 1 }
        END { exit (bad || n == 0) }'
}
for net in small wide; do
    data=good; [ $net = wide ] && data=widedata
    "$autotmc" interpret $net.net --seed 5 --data $data --epochs 2 --save-weights $net-i.st >$net-i.txt ||
        fail "$net: interpret"
    "$autotmc" run $net.net --seed 5 --data $data --epochs 2 --save-weights $net-r.st >$net-r.txt 2>&1 ||
        fail "$net: run: $(tail -2 $net-r.txt)"
    if close $net-r.txt $net-i.txt && "$compare" $net-r.st $net-i.st 1e-5 >cmp.txt; then
        ok "$net: the program trains on the data like the interpreter ($(losses $net-r.txt | wc -l) steps)"
    else
        fail "$net: program and interpreter differ: $(cat cmp.txt)"; paste <(losses $net-r.txt) <(losses $net-i.txt)
    fi
done
grep -qx "data: widedata: 50 samples, 3 steps of 16 an epoch (the last 2 samples of each epoch's order are dropped); 6 steps, 2 epochs" wide-r.txt ||
    fail "the announcement: $(grep '^data:' wide-r.txt)"
[ "$(grep -c '^epoch [12]: mean loss .* over 3 steps' wide-r.txt)" -eq 2 ] || fail "epoch lines: $(grep '^epoch' wide-r.txt)"

"$autotmc" build small.net -o prog >/dev/null 2>&1 || fail "build"
./prog --data good --seed 5 --iters 3 >a.txt && ./prog --data good --seed 5 --iters 3 >b.txt &&
    ./prog --data good --seed 6 --iters 3 >c.txt || fail "prog --data"
if [ "$(losses a.txt)" = "$(losses b.txt)" ] && [ "$(losses a.txt)" != "$(losses c.txt)" ]; then
    ok "the same seed gives the same batches, another seed other ones"
else
    fail "seeds: $(losses a.txt | tr '\n' ' ') / $(losses b.txt | tr '\n' ' ') / $(losses c.txt | tr '\n' ' ')"
fi
grep -q "; 3 steps, 1.50 epochs$" a.txt || fail "partial run announcement: $(grep '^data:' a.txt)"
grep -q "^epoch 2: mean loss .* over 1 steps (a partial epoch)" a.txt || fail "partial epoch line: $(grep '^epoch' a.txt)"
./prog --data good --seed 5 >d.txt || fail "prog --data without --iters"
[ "$(losses d.txt | wc -l)" -eq 2 ] && ok "without --iters or --epochs: one epoch" || fail "default: $(losses d.txt | wc -l) steps"

# ---- bad datasets: the exact message, before any step --------------------------------
# bad NAME MESSAGE PYTHON: a dataset made by PYTHON (x, y: the good one's arrays)
bad() {
    local name=$1 want=$2 code=$3
    mkdir -p "$name"
    "$py" - "$name" <<EOF
import os, sys
import numpy as np
d = sys.argv[1]
x, y = np.load("good/x.npy"), np.load("good/y.npy")
$code
if x is not None: np.save(os.path.join(d, "x.npy"), x)
if y is not None: np.save(os.path.join(d, "y.npy"), y)
EOF
    for how in run interpret; do
        "$autotmc" $how small.net --data "$name" >out.txt 2>err.txt
        local rc=$?
        if [ $rc -eq 1 ] && grep -qF -- "$want" err.txt && ! grep -q "^step" out.txt; then
            ok "$how: $name: $want"
        else
            fail "$how: $name gave status $rc, '$(tail -1 err.txt)' (want '$want'); $(grep -c '^step' out.txt) steps"
        fi
    done
}
bad nodir "cannot open 'nodir/x.npy': No such file or directory" 'x = y = None'
bad noy "cannot open 'noy/y.npy': No such file or directory" 'y = None'
bad f64 "f64/x.npy: the samples are float64; the model's input 'x' needs float32 (numpy: x.astype(numpy.float32))" \
    'x = x.astype(np.float64)'
bad shape "shape/x.npy: the samples are float32 [20, 13], but the model's input 'x' needs [N, 12] (its shape without the batch, after the number of samples N)" \
    'x = np.zeros((20, 13), np.float32)'
bad rank "rank/x.npy: the samples are float32 [20, 3, 4], but the model's input 'x' needs [N, 12]" \
    'x = x.reshape(20, 3, 4)'
bad u8 "u8/x.npy: element type '|u1' (uint8) is not supported" 'x = x.astype(np.uint8)'
bad yfloat "yfloat/y.npy: the labels are float32 [20], but the model has 3 classes: give class ids (int32 or int64 [N]) or one-hot or soft labels (float32 or float64 [N, 3])" \
    'y = y.astype(np.float32)'
bad ywide "ywide/y.npy: the labels are float32 [20, 4], but the model has 3 classes" \
    'y = np.eye(4, dtype=np.float32)[np.arange(20) % 4]'
bad range "range/y.npy: the label of sample 7 is 3, not a class in [0, 3)" 'y[7] = 3'
bad negative "negative/y.npy: the label of sample 0 is -1, not a class in [0, 3)" 'y = y.astype(np.int32); y[0] = -1'
bad count "count/y.npy: 19 labels for the 20 samples of count/x.npy" 'y = y[:19]'
bad few "few/x.npy: 5 samples, fewer than a batch of 8 (give the model a smaller batch)" 'x, y = x[:5], y[:5]'
bad softnan "softnan/y.npy: the label of sample 2, class 1, is NaN" \
    'y = np.eye(3, dtype=np.float32)[y]; y[2, 1] = np.nan'
bad truncated "truncated/x.npy: the data is 956 bytes but its shape needs 960 (truncated or corrupt)" \
    'np.save(os.path.join(d, "x.npy"), x); open(os.path.join(d, "x.npy"), "r+b").truncate(128 + 956); x = None'
# every sample is checked when the dataset is opened, not when its batch comes
bad nan "nan/x.npy: sample 17 holds a NaN at element 5" 'x[17, 5] = np.nan'
bad inf "inf/x.npy: sample 0 holds an infinite value at element 11" 'x[0, 11] = -np.inf'

# run: a dataset that does not fit the model, and a --resume that names no checkpoint, are refused by
# autotmc itself, before a profile or a build (not by the cached program, under its hash)
for args in "--data shape" "--val shape --data good" "--resume nocheckpoint"; do
    # shellcheck disable=SC2086
    "$autotmc" run small.net $args --profile-db never.db >out.txt 2>err.txt
    rc=$?
    if [ $rc -eq 1 ] && grep -q "^autotmc: error: " err.txt && ! grep -q "^program:" out.txt && [ ! -e never.db ]; then
        ok "run $args: refused before the build: $(head -1 err.txt)"
    else
        fail "run $args gave status $rc: $(head -1 err.txt); $(grep -c '^program:' out.txt) programs"
    fi
done

# more steps than the interpreter takes (the CLI's --iters limit)
"$autotmc" interpret small.net --data good --epochs 1000000 >out.txt 2>err.txt
rc=$?
if [ $rc -eq 1 ] && grep -qF "good: 1000000 epochs of 2 steps are more than 1000000 steps" err.txt &&
    ! grep -q "^step" out.txt; then
    ok "interpret: too many epochs: $(tail -1 err.txt)"
else
    fail "interpret --epochs 1000000 gave status $rc: $(tail -1 err.txt)"
fi

# ---- options that do not go together: exit 2 --------------------------------------------
expect2() {
    local want=$1; shift
    "$@" >out.txt 2>err.txt
    local rc=$?
    if [ $rc -eq 2 ] && grep -qF -- "$want" err.txt; then ok "$*: $want"; else fail "$* gave $rc: $(head -1 err.txt)"; fi
}
for how in run interpret; do
    expect2 "--epochs needs --data" "$autotmc" $how small.net --epochs 2
    expect2 "--data cannot be combined with --input or --labels" "$autotmc" $how small.net --data good --input X0.npy
    expect2 "give --iters or --epochs, not both" "$autotmc" $how small.net --data good --epochs 2 --iters 3
    expect2 "--epochs expects a whole number from 1 to 1000000" "$autotmc" $how small.net --data good --epochs 0
done
expect2 "--epochs needs --data" ./prog --epochs 2
expect2 "--data cannot be combined with --input or --labels" ./prog --data good --labels Y0.npy
expect2 "give --iters or --epochs, not both" ./prog --data good --epochs 2 --iters 3
expect2 "--epochs expects a whole number from 1 to 1000000" ./prog --data good --epochs 0

[ $fails -eq 0 ] || { echo "$fails failed"; exit 1; }
echo "all passed"
