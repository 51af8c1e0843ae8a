#!/usr/bin/env bash
# Data-parallel training (autotmc run --ranks N, docs/distributed.md) on this
# machine with Open MPI:
#   - 2 ranks with half a batch each train as 1 rank with the whole batch
#     (the same .npy arrays, split by rank, or the same dataset), 3 steps,
#     within float rounding of the order the gradients are summed in: an MLP
#     with SGD, a small GPT with AdamW and clipping by the global norm,
#     all-fast, and the MLP placed under a limit with moves; the losses
#     printed are the whole batch's; the gradients exchanged on the
#     exchange's thread in buckets (several 4 MiB gradients packed into one
#     message) and, with AUTOTM_RANKS_OVERLAP=0, in the allreduce kernels;
#   - 2 ranks resumed from a checkpoint end bitwise as if they had not stopped;
#   - the link between the ranks measured (autotm-ranks-probe) and kept;
#   - the ranks' weights are the same bits after every step (the debug mode
#     AUTOTM_CHECK_RANKS=1 compares them) and at the end (the run checks it,
#     and says so);
#   - rank 1 of 2 only: no report on standard output but rank 0's, and only
#     rank 0 writes the weights;
#   - programs that differ across ranks are refused at the start;
#   - a rank that dies stops the others, and a rank that waits too long in a
#     collective stops with a clear message, instead of hanging.
set -uo pipefail
srcdir=${TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
builddir=${TOP_BUILDDIR:-$srcdir}
autotmc=${AUTOTMC:-$builddir/autotmc}
compare=$builddir/tests/e2e/compare-weights
command -v mpirun > /dev/null || { echo "skipped: no mpirun (Debian package: openmpi-bin)"; exit 77; }
. "$srcdir/tests/python.sh"
need_python numpy python3-numpy
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/ranks.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
export XDG_CACHE_HOME=$work/cache
export AUTOTM_CHECK_RANKS=1 # the debug mode: the ranks compare their weights after every step
cd "$work" || exit 1
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }

cat > mlp.net <<'EOF'
model mlp(batch = 8)
network = chain {
    dense(64 => 256, relu)
    dense(256 => 256, relu)
    dense(256 => 10)
}
input  x : f32[batch, 64]
labels y : class[batch]
loss = crossentropy(network(x), y)
optimizer = sgd(lr = 0.1)
EOF
"$py" - <<'EOF' || exit 1
import numpy as np
rng = np.random.default_rng(3)
np.save("x.npy", rng.standard_normal((16, 64)).astype(np.float32))
np.save("y.npy", rng.integers(0, 10, 16).astype(np.int64))
np.save("ids.npy", rng.integers(0, 64, (8, 16)).astype(np.int32))
np.save("next.npy", rng.integers(0, 64, (8, 16)).astype(np.int32))
import os
os.makedirs("data")
np.save("data/x.npy", rng.standard_normal((64, 64)).astype(np.float32))
np.save("data/y.npy", rng.integers(0, 10, 64).astype(np.int64))
EOF

# one rank, the whole batch; two ranks, half each; the weights within RTOL of each other's largest value. With
# SGD the sums' order alone differs (measured 1.5e-7); AdamW divides each gradient by the root of its second
# moment, so a gradient of rounding size (a key bias's, 0 in exact arithmetic) takes steps of the learning
# rate whatever its size (measured 5.6e-6)
RTOL=2e-6
pair() {  # name model batch [options: the data, ...]
    local name=$1 model=$2 b=$3
    shift 3
    "$autotmc" run "$model" -D batch="$b" --iters 3 --slow-dir "$work" --save-weights "$name-1.safetensors" "$@" \
        > "$name-1.log" 2>&1 || { bad "$name: 1 rank: exit $?"; tail -5 "$name-1.log"; return; }
    "$autotmc" run "$model" -D batch=$((b / 2)) --ranks 2 --iters 3 --slow-dir "$work" \
        --save-weights "$name-2.safetensors" "$@" > "$name-2.log" 2>&1 || { bad "$name: 2 ranks: exit $?"; tail -5 "$name-2.log"; return; }
    # the losses printed: the mean over the ranks' shards, the whole batch's
    local l1 l2
    l1=$(grep -o '^step [0-9]*: loss [^ ]*' "$name-1.log" | awk '{print $4}' | tr '\n' ' ')
    l2=$(grep -o '^step [0-9]*: loss [^ ]*' "$name-2.log" | awk '{print $4}' | tr '\n' ' ')
    if ! grep -q '^ranks: 2, .*; weights the same on every rank (checked)' "$name-2.log"; then
        bad "$name: 2 ranks did not report the check of the weights"; tail -5 "$name-2.log"
    elif ! "$py" -c "import sys; a, b = map(float, sys.argv[1].split()), map(float, sys.argv[2].split()); \
            sys.exit(not all(abs(x - y) <= 1e-5 * abs(x) for x, y in zip(a, b)))" "$l1" "$l2" || [ -z "$l1" ]; then
        bad "$name: losses of 2 ranks [$l2] against 1 rank's [$l1]"
    elif out=$("$compare" "$name-1.safetensors" "$name-2.safetensors" "$RTOL"); then
        ok "$name: 2 ranks of batch $((b / 2)) = 1 rank of batch $b: losses [$l2] within 1e-5, weights within $RTOL ($out); $(grep -m1 '^placement:' "$name-2.log")"
    else
        bad "$name: 2 ranks against 1: $out"
    fi
}
pair mlp-sgd mlp.net 16 --input x.npy --labels y.npy
pair mlp-moves mlp.net 16 --input x.npy --labels y.npy --ratio 1:1 --hw optane-6dimm
pair mlp-data mlp.net 16 --data data
AUTOTM_RANKS_OVERLAP=0 pair mlp-kernels mlp.net 16 --input x.npy --labels y.npy  # the exchange in the kernels
grep -q 'gradients exchanged in the allreduce kernels' mlp-kernels-2.log || bad "AUTOTM_RANKS_OVERLAP=0 did not say so"
# many gradients of 4 MiB, with momentum, clipped by their global norm: buckets of several, packed
cat > wide.net <<'EOF2'
model wide(batch = 8)
network = chain {
    dense(64 => 1024, relu)
    repeat 8 { dense(1024 => 1024, relu) }
    dense(1024 => 10)
}
input  x : f32[batch, 64]
labels y : class[batch]
loss = crossentropy(network(x), y)
optimizer = sgd(lr = 0.01, momentum = 0.9, clip = 1.0)
EOF2
pair wide-clip wide.net 16 --input x.npy --labels y.npy
grep -qE 'gradients exchanged beside the backward pass, ([2-9]|[1-9][0-9])[0-9.]* in a bucket \([0-9]+ buckets\)' \
    wide-clip-2.log || bad "wide: no bucket of several gradients: $(grep '^ranks:' wide-clip-2.log)"
RTOL=2e-5 pair gpt-adamw "$srcdir/examples/tinygpt.net" 8 --input ids.npy --labels next.npy -I "$srcdir/stdlib" -D seq=16 \
    -D n_layer=1 -D n_embd=32 -D n_head=2 -D vocab=64
grep -qE 'placement: [a-z-]+; [1-9][0-9]* moves' mlp-moves-2.log || bad "mlp under a limit made no move"
grep -q 'on each of 2 ranks' mlp-data-2.log || bad "--data on 2 ranks did not say so"
# the link between 2 ranks, measured by autotm-ranks-probe with the first program and kept for the others
if read -r bw lat < "$XDG_CACHE_HOME/autotm/ranks-link-2" && grep -q "with the ranks' all-reduce at" mlp-sgd-2.log; then
    ok "the link between 2 ranks measured: $bw B/s, $lat s a hop; $(grep -o "with the ranks' all-reduce at [0-9.]* GB/s" mlp-sgd-2.log | head -1)"
else
    bad "no measured link between 2 ranks"; grep -i 'warning' mlp-sgd-2.log
fi
# a kept link that does not read as one (a damaged file) is measured again, not believed
printf 'nan -1\n' > "$XDG_CACHE_HOME/autotm/ranks-link-2"
"$autotmc" schedule mlp.net --ranks 2 --summary > relink.log 2>&1
if read -r bw lat < "$XDG_CACHE_HOME/autotm/ranks-link-2" && [ "$bw" != nan ] && ! grep -q warning relink.log; then
    ok "a damaged ranks-link-2 measured again: $bw B/s"
else
    bad "a damaged ranks-link-2: $(cat "$XDG_CACHE_HOME/autotm/ranks-link-2")"; tail -3 relink.log
fi

# resuming 2 ranks from rank 0's checkpoint ends as the run that did not stop, bitwise
two=("$autotmc" run mlp.net -D batch=8 --ranks 2 --data data --slow-dir "$work")
"${two[@]}" --iters 4 --save-weights whole.safetensors > whole.log 2>&1 &&
    "${two[@]}" --iters 2 --checkpoint ck > part.log 2>&1 &&
    "${two[@]}" --iters 4 --checkpoint ck --resume ck --save-weights resumed.safetensors > resumed.log 2>&1
rc=$?
if [ $rc = 0 ] && cmp -s whole.safetensors resumed.safetensors; then
    ok "2 ranks stopped after 2 steps and resumed to 4: bitwise the run of 4"
else
    bad "2 ranks resumed: exit $rc, weights $(cmp whole.safetensors resumed.safetensors 2>&1)"; tail -3 resumed.log
fi

# rank 0 alone reports: one report of the steps in the output
n=$(grep -c '^median step time' mlp-sgd-2.log)
[ "$n" = 1 ] && ok "one report for 2 ranks" || bad "$n reports for 2 ranks"

# programs that differ across ranks are refused (two programs under one mpirun)
prog() { "$autotmc" build mlp.net -D batch="$1" -o "$work/mlp-$1" > /dev/null 2>&1; }
prog 4 && prog 8 || bad "building two programs"
root=$([ "$(id -u)" = 0 ] && echo --allow-run-as-root)
timeout 120 mpirun $root --oversubscribe -np 1 ./mlp-4 --iters 2 : -np 1 ./mlp-8 --iters 2 > mismatch.log 2>&1
rc=$?
if [ $rc != 0 ] && [ $rc != 124 ] && grep -q 'the ranks run different programs' mismatch.log; then
    ok "different programs refused: $(grep -m1 -o 'rank [0-9] of 2: the ranks run different programs[^(]*' mismatch.log)"
else
    bad "different programs: exit $rc"; tail -5 mismatch.log
fi

# autotmc run itself under mpirun (each rank would compile, and start ranks of its own) is refused
timeout 120 mpirun $root --oversubscribe -np 2 "$autotmc" run mlp.net --iters 1 > nested.log 2>&1
rc=$?
[ $rc != 0 ] && [ $rc != 124 ] && grep -q 'autotmc run is started once, not under mpirun' nested.log &&
    ok "autotmc run under mpirun refused" || { bad "autotmc run under mpirun: exit $rc"; tail -3 nested.log; }

# a rank that dies stops the others (mpirun ends the job), and one that hangs is stopped by the watchdog
"$autotmc" build mlp.net -D batch=4 --ranks 2 -o "$work/mlp-ranks" > /dev/null 2>&1 || bad "building for 2 ranks"
cat > die.sh <<'EOF'
#!/bin/sh
# rank 1 stops hard before training; rank 0 must not wait for ever
[ "$OMPI_COMM_WORLD_RANK" = 1 ] && exec sleep 30
exec "$@"
EOF
chmod +x die.sh
start=$(date +%s)
AUTOTM_RANK_TIMEOUT=5 timeout 120 mpirun $root --oversubscribe -np 2 ./die.sh ./mlp-ranks --iters 2 > hang.log 2>&1
rc=$? took=$(($(date +%s) - start))
if [ $rc != 0 ] && [ $rc != 124 ] && grep -q 'waited [0-9]* s in .* for the other ranks' hang.log; then
    ok "a rank that never joins: rank 0 stops after ${took} s with: $(grep -m1 -o 'waited [0-9]* s in [^:]*' hang.log)"
else
    bad "a rank that never joins: exit $rc after ${took} s"; tail -5 hang.log
fi
cat > kill.sh <<'EOF'
#!/bin/sh
# rank 1 dies in the middle of training
if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then "$@" & sleep 1; kill -9 $!; exit 9; fi
exec "$@"
EOF
chmod +x kill.sh
start=$(date +%s)
timeout 120 mpirun $root --oversubscribe -np 2 ./kill.sh ./mlp-ranks --iters 100000 > dead.log 2>&1
rc=$? took=$(($(date +%s) - start))
[ $rc != 0 ] && [ $rc != 124 ] && ok "a rank killed in training: the job ends (exit $rc after ${took} s)" ||
    { bad "a rank killed in training: exit $rc after ${took} s"; tail -5 dead.log; }

echo "$fails failed"
[ $fails -eq 0 ]
