#!/usr/bin/env bash
# Evaluation as a user meets it (the numbers against PyTorch are
# tests/torch/test-eval.sh's):
#   - a training program built --with-eval evaluates --val DIR every
#     --eval-every K steps and at the end, one line each, into the results
#     record's "evaluations" and the --plot; with --limit its evaluation
#     pass is placed under the limit too;
#   - a validation set smaller than a batch is evaluated whole;
#   - `autotmc schedule --eval` shows the evaluation graph's placement;
#   - a checkpoint is evaluated by `autotmc eval` like saved weights, its
#     optimizer state ignored, and gives the run's last evaluation;
#   - --outputs writes a .npy of [N, classes] float32;
#   - every wrong use gets its message before any step: --val in a program
#     built without the pass, --eval-every without --val, --outputs in a
#     training program, training options in an evaluation program, a
#     validation set of the wrong shape, autotmc eval without --weights or
#     --data.
# Skipped (77) where no python3 with numpy is installed (to make the data).
set -uo pipefail
srcdir=${TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
builddir=${TOP_BUILDDIR:-$srcdir}
autotmc=${AUTOTMC:-$builddir/autotmc}
. "$srcdir/tests/python.sh"
need_python "numpy" "python3-numpy"
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/eval.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
export XDG_CACHE_HOME=$work/cache
. "$srcdir/tests/checks.sh"

cat >model.net <<'EOF'
model evm(batch = 8)
network = chain {
    dense(12 => 32) batchnorm relu
    dropout(0.3)
    dense(32 => 4)
}
input  x : f32[batch, 12]
labels y : onehot[batch, 4]
loss = crossentropy(network(x), y)
optimizer = adamw(lr = 0.01)
EOF
"$py" - <<'EOF'
import os
import numpy as np
rng = np.random.default_rng(5)
w = rng.standard_normal((12, 4))
for d, n in (("train", 96), ("val", 21), ("tiny", 3)):
    os.makedirs(d)
    x = rng.standard_normal((n, 12)).astype(np.float32)
    np.save(f"{d}/x.npy", x)
    np.save(f"{d}/y.npy", np.argmax(x @ w, axis=1).astype(np.int64))
os.makedirs("wrong")
np.save("wrong/x.npy", np.zeros((5, 11), np.float32))
np.save("wrong/y.npy", np.zeros(5, np.int64))
EOF

"$autotmc" build model.net --with-eval -o prog >build.log 2>&1 || { cat build.log; fail "build --with-eval"; }
grep -q "^evaluation pass:" build.log && ok "build --with-eval shows the evaluation pass's placement" ||
    fail "build --with-eval: no evaluation pass in its report"
./prog --data train --epochs 3 --val val --eval-every 10 --results r.json --plot p.svg --checkpoint ck \
    >run.log 2>&1 || { cat run.log; fail "training with --val"; }
[ "$(grep -c '^eval at step ' run.log)" = 4 ] && grep -q "^eval at step 36: loss [0-9.e-]*, accuracy [0-9.]*% ([0-9]* of 21)" run.log &&
    ok "--eval-every 10 over 36 steps: at steps 10, 20, 30 and the end" ||
    { grep "^eval" run.log; fail "the evaluation lines"; }
"$py" - <<'EOF' && ok "results record: evaluations (step, loss, accuracy, samples)" || fail "results record"
import json
r = json.load(open("r.json"))
ev = r["evaluations"]
assert [e["step"] for e in ev] == [10, 20, 30, 36], ev
assert all(e["samples"] == 21 and 0 <= e["accuracy"] <= 1 and e["loss"] > 0 for e in ev), ev
assert r["eval_batch_time"] > 0 and r["eval_predicted_batch_time"] > 0
EOF
grep -q "validation accuracy" p.svg && ok "--plot draws the evaluations" || fail "--plot without the evaluations"

"$autotmc" eval model.net --weights ck/checkpoint.safetensors --data val --outputs out.npy --results e.json \
    >eval.log 2>&1 || { cat eval.log; fail "autotmc eval of a checkpoint"; }
last=$(grep "^eval at step 36" run.log | sed 's/.*loss \([^,]*\),.*/\1/')
grep -q "^loss: " eval.log && grep -q "^accuracy: " eval.log && ! grep -q "warning" eval.log &&
    ok "autotmc eval of a checkpoint: $(grep '^loss' eval.log), no warning" || { cat eval.log; fail "autotmc eval output"; }
"$py" - "$last" <<'EOF' && ok "autotmc eval gives the run's last evaluation; --outputs is [21, 4] float32" ||
import json, sys
import numpy as np
e = json.load(open("e.json"))["evaluations"][0]
assert f"{e['loss']:.6g}" == sys.argv[1], (e, sys.argv[1])
o = np.load("out.npy")
assert o.shape == (21, 4) and o.dtype == np.float32 and np.all(np.isfinite(o)), o.shape
EOF
    fail "autotmc eval against the run's evaluation, or --outputs"
./prog --data train --iters 2 --val tiny >tiny.log 2>&1 && grep -q "(.* of 3)" tiny.log &&
    ok "a validation set smaller than a batch: all 3 samples" || { cat tiny.log; fail "a tiny validation set"; }
"$autotmc" run model.net --data train --iters 4 --val val --ratio 3:1 >lim.log 2>&1 &&
    grep -q "^evaluation pass:" lim.log && grep -q "^eval at step 4: " lim.log &&
    [ "$(grep -c '^limit: ' lim.log)" = 2 ] &&
    ok "autotmc run --val --ratio 3:1: the step placed under $(grep '^limit: ' lim.log | cut -d' ' -f2-3 | paste -sd/ | sed 's|/|, the pass under |')" ||
    { tail -20 lim.log; fail "autotmc run --val under a limit"; }

"$autotmc" schedule model.net --eval --ratio 3:1 >sched.log 2>&1 && grep -q " batchnorm_eval " sched.log &&
    ! grep -Eq " (dropout|adamw|batchnorm) " sched.log && grep -q "^placement: auto" sched.log &&
    ok "autotmc schedule --eval: the evaluation graph's placement (batchnorm_eval, no dropout, no update)" ||
    { cat sched.log; fail "autotmc schedule --eval"; }

"$autotmc" build model.net -o plain >/dev/null 2>&1 || fail "build without the pass"
expect 2 "^plain: --val: this program was compiled without the evaluation pass \(build it with --with-eval, or run it with autotmc run --val DIR\)$" \
    ./plain --val val
expect 2 "^prog: --eval-every needs --val DIR$" ./prog --eval-every 3
expect 2 "^prog: --outputs is for evaluation programs \(autotmc eval\)$" ./prog --outputs o.npy
expect 1 "^prog: error: wrong/x.npy: the samples are float32 \[5, 11\], but the model's input 'x' needs \[N, 12\]" \
    ./prog --data train --val wrong
expect 1 "^evm-[0-9a-f]*: error: cannot write /dev/full: No space left on device$" \
    "$autotmc" eval model.net --weights ck/checkpoint.safetensors --data val --outputs /dev/full
expect 2 "^autotmc: --eval-every needs --val DIR$" "$autotmc" run model.net --eval-every 3
expect 2 "^autotmc: give the weights to evaluate: --weights W" "$autotmc" eval model.net --data val
expect 2 "^autotmc: give the dataset to evaluate: --data DIR$" "$autotmc" eval model.net --weights ck/checkpoint.safetensors
"$autotmc" eval model.net --weights ck/checkpoint.safetensors --data val >/dev/null 2>&1
evprog=
for p in cache/autotm/programs/evm-*; do
    [ "${p%.sum}" = "$p" ] && "$p" --help | grep -q "^usage: .* --data DIR \[OPTIONS\]" && evprog=$p
done
for opt in "--iters 3" "--val val" "--checkpoint c2"; do
    expect 2 "^evm-[0-9a-f]*: ${opt%% *} is for training; this program evaluates the model on --data DIR$" \
        "$evprog" --data val $opt
done
expect 2 "^evm-[0-9a-f]*: this program evaluates the model on a dataset: give --data DIR$" "$evprog"

finish
