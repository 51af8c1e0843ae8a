#!/usr/bin/env bash
# Files made to break the readers, and runs whose files go wrong under
# them. Each must end with a clear error and exit status, never a crash,
# a hang or a lost result:
#   - .npy arrays whose byte size wraps 64 bits (--data, --val, --input,
#     interpret), labels too large for a double to print exactly;
#   - safetensors headers with a key given twice (__metadata__, a tensor,
#     a key inside an entry), a NUL in a name, bytes after the JSON, data
#     that belongs to no tensor (--weights, --resume, interpret, eval);
#   - checkpoints whose step is beyond int64, beyond any run, or not
#     plain digits; optimizer state the resumed program has no place for;
#   - outputs that name one file, or a file the run reads (exit 2, before
#     any work); names that are legal but leave no room for the temporary
#     file they are written through; a --checkpoint path near PATH_MAX;
#   - samples that are not finite, or ids out of range, in a training or a
#     validation set: refused at start-up;
#   - a dataset file truncated or overwritten while the run reads it: a
#     message naming it, and the weights and a checkpoint of the steps
#     taken;
#   - FIFOs given as inputs: refused at once, never waited on.
# Skipped (77) where no python3 with numpy is installed.
set -uo pipefail
srcdir=${TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
builddir=${TOP_BUILDDIR:-$srcdir}
autotmc=${AUTOTMC:-$builddir/autotmc}
. "$srcdir/tests/python.sh"
need_python "numpy" "python3-numpy"
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/crafted.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
export XDG_CACHE_HOME=$work/cache
. "$srcdir/tests/checks.sh"

# expect STATUS TEXT CMD...: CMD exits with STATUS within 60 s, its stderr
# holds TEXT, and it took no training step
expect() {
    local want=$1 text=$2
    shift 2
    timeout 60 "$@" >out.log 2>err.log
    local st=$?
    if [ $st = "$want" ] && grep -qF -- "$text" err.log && ! grep -q "^step " out.log; then
        ok "$(grep -F -- "$text" err.log | head -1 | cut -c1-240)"
    else
        fail "$* exited $st (want $want, '$text'): $(tail -2 err.log)"
    fi
}

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
sed 's/sgd(lr = lr)/sgd(lr = lr, momentum = 0.9)/' small.net >momentum.net
cat >tokens.net <<'EOF'
model tokens(batch = 4, seq = 6, vocab = 11, lr = 0.1)
network = chain {
    embedding(vocab => 8)
    dense(8 => vocab)
}
input  idx : i32[batch, seq]
labels y : class[batch, seq]
loss = crossentropy(network(idx), y)
optimizer = sgd(lr = lr)
EOF
"$py" - <<'EOF'
import os, struct
import numpy as np
r = np.random.RandomState(1)
def save(d, x, y):
    os.makedirs(d, exist_ok=True)
    if x is not None: np.save(os.path.join(d, "x.npy"), x)
    if y is not None: np.save(os.path.join(d, "y.npy"), y)
x, y = r.randn(20, 12).astype(np.float32), r.randint(0, 3, 20).astype(np.int64)
save("good", x, y)
t = r.randint(0, 11, (12, 6)).astype(np.int64)
save("tgood", t, t)
save("tgood4", t[:, :4], t[:, :4])
# a shape whose byte size wraps 64 bits: (2**59 + 1) * 4 int64 are "32 bytes"
def wrapped(path):
    h = "{'descr': '<i8', 'fortran_order': False, 'shape': (%d, 4), }" % (2**59 + 1)
    h += " " * ((64 - (10 + len(h) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode() + b"\0" * 32)
os.makedirs("wrap", exist_ok=True)
wrapped("wrap/x.npy"); wrapped("wrap/y.npy"); wrapped("wrapped.npy")
# an element type whose size overflows an int (found by fuzzing)
os.makedirs("typesize", exist_ok=True)
h = "{'descr': '<i411111111111111111', 'fortran_order': False, 'shape': (20, 12), }"
h += " " * ((64 - (10 + len(h) + 1) % 64) % 64) + "\n"
with open("typesize/x.npy", "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode() + x.tobytes())
np.save("typesize/y.npy", y)
bad = y.copy(); bad[3] = 2**63 - 1
save("biglabel", x, bad)
nan = x.copy(); nan[13, 5] = np.nan
save("valnan", nan, y)
tb = t.copy(); tb[9, 2] = 11
save("tbad", tb, t)
EOF

# ---- .npy sizes that wrap 64 bits -------------------------------------------------
# (ids [N, 4] and class labels [N, 4]: the shapes tokens.net -D seq=4 takes)
want="wrap/x.npy: the data is 32 bytes but its shape (576460752303423489, 4) needs 1.84e+19, more than a 64-bit size holds"
expect 1 "$want" "$autotmc" run tokens.net -D seq=4 --data wrap --iters 1
expect 1 "$want" "$autotmc" run tokens.net -D seq=4 --data tgood4 --val wrap --iters 1
expect 1 "$want" "$autotmc" interpret tokens.net -D seq=4 --data wrap
expect 1 "wrapped.npy: the data is 32 bytes" "$autotmc" run small.net --labels wrapped.npy --iters 1
expect 1 "wrapped.npy: the data is 32 bytes" "$autotmc" interpret small.net --input wrapped.npy
expect 1 "typesize/x.npy: element type '<i411111111111111111' (an unknown type) is not supported" \
    "$autotmc" run small.net --data typesize
expect 1 "biglabel/y.npy: the label of sample 3 is 9223372036854775807, not a class in [0, 3)" \
    "$autotmc" run small.net --data biglabel

# ---- safetensors headers ---------------------------------------------------------------
"$autotmc" run small.net --iters 2 --save-weights w.st --checkpoint ck >/dev/null 2>&1 ||
    fail "training the weights to damage"
prog=$(grep -l "" cache/autotm/programs/small-* | grep -v '\.sum$' | head -1)
[ -x "$prog" ] || fail "no cached program of small.net"
"$py" - <<'EOF'
import json, struct
def read(p):
    b = open(p, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    return b[8:8 + n].decode().rstrip(), b[8 + n:]
def write(p, h, data):
    hb = h.encode(); hb += b" " * ((8 - len(hb) % 8) % 8)
    open(p, "wb").write(struct.pack("<Q", len(hb)) + hb + data)
h, d = read("w.st")
j = json.loads(h)
first = next(iter(j))
write("dupmeta.st", '{"__metadata__":{"a":"1","b":"2"},' + h[1:-1] + ',"__metadata__":{"c":"3"}}', d)
write("duptensor.st", h[:-1] + ',"%s":%s}' % (first, json.dumps(j[first])), d)
e = j[first]
inner = '{"dtype":"F32","dtype":"F64","shape":%s,"data_offsets":%s}' % (e["shape"], e["data_offsets"])
write("dupinner.st", h.replace(json.dumps(e, separators=(",", ":")), inner, 1), d)
write("dupmetakey.st", '{"__metadata__":{"a":"1","a":"2"},' + h[1:], d)
write("nul.st", h.replace('"%s"' % first, '"%s\\u0000x"' % first, 1), d)
write("after.st", h + "xyz", d)
write("tail.st", h, d + b"\0" * 8)
last = max((k for k in j), key=lambda k: j[k]["data_offsets"][0])
o = j[last]["data_offsets"]
j[last] = dict(j[last], data_offsets=[o[0] + 4, o[1] + 4])
write("gap.st", json.dumps(j, separators=(",", ":")), d + b"\0" * 4)
# the checkpoint, with __metadata__ twice
h, d = read("ck/checkpoint.safetensors")
import os
os.makedirs("ckdup", exist_ok=True)
write("ckdup/checkpoint.safetensors", h[:-1] + ',"__metadata__":{"step":"1"}}', d)
EOF
for f in dupmeta:"'__metadata__' appears twice in the header" \
         duptensor:"'dense1.weight' appears twice in the header" \
         dupinner:"'dtype' appears twice in the header's entry for tensor 'dense1.weight'" \
         dupmetakey:"'a' appears twice in the header's __metadata__" \
         nul:"the header holds a NUL character" \
         after:"6 bytes follow the header's JSON object inside the header" \
         tail:"the last 8 bytes of the file belong to no tensor" \
         gap:"bytes [1024, 1028) of the data belong to no tensor ('dense2.weight' ends there, tensor 'dense2.bias' begins at 1028)"; do
    name=${f%%:*} text="$name.st: ${f#*:}"
    expect 1 "$text" "$autotmc" interpret small.net --iters 1 --weights "$name.st"
    expect 1 "$text" "$prog" --iters 1 --weights "$name.st"
done
expect 1 "$text" "$autotmc" eval small.net --weights gap.st --data good
expect 1 "'__metadata__' appears twice in the header" "$prog" --resume ckdup --iters 3

# ---- checkpoint steps ----------------------------------------------------------------------
"$py" - <<'EOF'
import json, os, struct
b = open("ck/checkpoint.safetensors", "rb").read()
n = struct.unpack("<Q", b[:8])[0]
j, d = json.loads(b[8:8 + n]), b[8 + n:]
for name, step in [("wrap", "18446744073709551611"), ("int64", "9223372036854775808"),
                   ("long", "123456789012345678901234567890"), ("beyond", "1000000001"),
                   ("space", " 5"), ("plus", "+5"), ("empty", "")]:
    j["__metadata__"]["step"] = step
    h = json.dumps(j, separators=(",", ":")).encode(); h += b" " * ((8 - len(h) % 8) % 8)
    os.makedirs("ck_" + name, exist_ok=True)
    open("ck_%s/checkpoint.safetensors" % name, "wb").write(struct.pack("<Q", len(h)) + h + d)
EOF
for s in wrap:18446744073709551611 int64:9223372036854775808 long:123456789012345678901234567890 beyond:1000000001; do
    expect 1 "ck_${s%%:*}/checkpoint.safetensors: its step, ${s#*:}, is beyond any run's (at most 1000000000)" \
        "$prog" --resume "ck_${s%%:*}" --iters 5
done
for s in "space: 5" "plus:+5" "empty:"; do
    expect 1 "ck_${s%%:*}/checkpoint.safetensors: its step, '${s#*:}', is not a whole number" \
        "$prog" --resume "ck_${s%%:*}" --iters 5
done
[ "$(tr -d '\0' <ck_int64/checkpoint.safetensors | grep -c 9223372036854775808)" = 1 ] &&
    ok "the damaged checkpoint is left as it was" || fail "the checkpoint of step 2^63 was rewritten"
# momentum's state resumed into plain SGD
"$autotmc" run momentum.net --iters 2 --checkpoint ckm >/dev/null 2>&1 || fail "training with momentum"
expect 1 "ckm/checkpoint.safetensors holds 4 tensors that this program does not have, such as 'dense" \
    "$autotmc" run small.net --iters 4 --resume ckm

# ---- outputs that name one file (exit 2, before any work) -----------------------------------
same="name the same file; give each output a file of its own"
expect 2 "--save-weights X and --results X $same" "$autotmc" run small.net --iters 1 --save-weights X --results X
expect 2 "--save-weights ./X and --results X $same" "$prog" --iters 1 --save-weights ./X --results X
expect 2 "--save-weights ck/checkpoint.safetensors and --checkpoint ck/checkpoint.safetensors $same" \
    "$autotmc" run small.net --iters 1 --save-weights ck/checkpoint.safetensors --checkpoint ck
expect 2 "--outputs w.st would replace --weights w.st, which is read by this run" \
    "$autotmc" eval small.net --weights w.st --data good --outputs w.st
ln -s w.st link.st
expect 2 "--save-weights w.st would replace --weights link.st" "$prog" --iters 1 --weights link.st --save-weights w.st
expect 2 "--results good/y.npy would replace --data good/y.npy" "$autotmc" run small.net --data good --results good/y.npy
expect 2 "--results small.net would replace the model small.net" "$autotmc" run small.net --iters 1 --results small.net
expect 2 "would replace the program" "$prog" --iters 1 --results "$prog"
[ -s w.st ] && [ -s small.net ] && ok "nothing was overwritten" || fail "an input was overwritten"
"$prog" --iters 3 --checkpoint ck --resume ck >/dev/null 2>&1 && ok "--checkpoint DIR continues --resume DIR" ||
    fail "--checkpoint ck --resume ck was refused"
"$prog" --iters 1 --save-weights /dev/null --results /dev/null >/dev/null 2>&1 &&
    ok "two outputs to /dev/null" || fail "two outputs to /dev/null were refused"

# ---- names that leave no room for a temporary file --------------------------------------------
long=$(printf 'w%.0s' $(seq 250))
"$prog" --iters 1 --save-weights "$long" --results "${long:1}r" >out.log 2>err.log &&
    [ -s "$long" ] && [ -s "${long:1}r" ] && ok "outputs with names of 250 bytes are written" ||
    fail "250-byte output names: $(tail -1 err.log)"
ls -A | grep -q '^\.autotmc\.' && fail "a temporary file was left behind"
deep=$work/deep
while [ ${#deep} -lt 3980 ]; do deep=$deep/$(printf 'd%.0s' $(seq 100)); done
near=$deep/$(printf 'e%.0s' $(seq $((4070 - ${#deep} - 1))))
over=$near/$(printf 'f%.0s' $(seq 15))
mkdir -p "$over"
"$prog" --iters 1 --checkpoint "$near" >out.log 2>err.log && [ -s "$near/checkpoint.safetensors" ] &&
    ok "a checkpoint in a directory of 4070 bytes" || fail "--checkpoint of 4070 bytes: $(tail -1 err.log | tail -c 200)"
expect 1 "checkpoint.safetensors: File name too long" "$prog" --iters 1 --checkpoint "$over"

# ---- samples checked at start-up ----------------------------------------------------------------
expect 1 "valnan/x.npy: sample 13 holds a NaN at element 5" "$autotmc" run small.net --data good --val valnan
expect 1 "tbad/x.npy: sample 9 holds 11 at element 2, not an id in [0, 11)" \
    "$autotmc" run tokens.net --data tgood --val tbad --iters 3
expect 1 "tbad/x.npy: sample 9 holds 11 at element 2, not an id in [0, 11)" "$autotmc" interpret tokens.net --data tbad
[ -e never.st ] && fail "weights were written"

# ---- a dataset file changed under the run -----------------------------------------------------------
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
"$autotmc" build wide.net -o wide >/dev/null 2>&1 || fail "building wide.net"
# changed HOW TEXT: a long run whose x.npy is changed by HOW once it trains
changed() {
    local how=$1 text=$2
    rm -rf live ckl lw.st && mkdir live
    "$py" -c "import numpy as np; r = np.random.RandomState(0)
np.save('live/x.npy', r.randn(50, 4096).astype(np.float32)); np.save('live/y.npy', r.randint(0, 3, 50))"
    ./wide --data live --iters 1000000 --checkpoint ckl --save-weights lw.st >out.log 2>err.log &
    local pid=$! i
    for i in $(seq 100); do [ -s ckl/checkpoint.safetensors ] || grep -q "^step" out.log && break; sleep 0.1; done
    sleep 0.3
    eval "$how"
    local t0=$SECONDS
    while kill -0 $pid 2>/dev/null && [ $((SECONDS - t0)) -lt 60 ]; do sleep 0.1; done
    kill -9 $pid 2>/dev/null
    wait $pid
    local st=$?
    local step
    step=$(tr -d '\0' <ckl/checkpoint.safetensors 2>/dev/null | grep -o '"step":"[0-9]*"' | grep -o '[0-9]*')
    if [ $st = 1 ] && grep -qF -- "$text" err.log && [ -s lw.st ] && [ "${step:-0}" -gt 0 ]; then
        ok "$(grep -F -- "$text" err.log); weights and the checkpoint of step $step saved"
    else
        fail "$how: exit $st, checkpoint step '${step:-}', $(tail -2 err.log)"
    fi
}
changed "truncate -s 1000 live/x.npy" \
    "live/x.npy: cannot read byte "
changed "$py -c \"import numpy as np; a = np.lib.format.open_memmap('live/x.npy', mode='r+'); a[:] = np.nan; a.flush()\"" \
    "live/x.npy: sample "

# ---- sizes in other files ---------------------------------------------------------------
# a convolution algorithm's workspace near 2^63 in a GPU profile: beyond any device, and
# sums of it would overflow
printf '# autotm gpu profile 1\nmachine\tcrafted\nalgo\tsig\tfwd\tbig\t0.001\t9223372036854775000\t1\n' >huge.tsv
expect 1 "huge.tsv:3: the workspace '9223372036854775000' is not a byte count (at most 2^50)" \
    "$autotmc" schedule small.net --backend gpu --gpu-profile huge.tsv --optimizer all-fast

# ---- FIFOs as inputs: refused, not waited on ------------------------------------------------------
mkdir -p fifo ckf && mkfifo fifo/x.npy wf.st ckf/checkpoint.safetensors && cp good/y.npy fifo/
expect 1 "'fifo/x.npy' is not a regular file (it is a FIFO)" "$prog" --iters 1 --data fifo
expect 1 "'fifo/x.npy' is not a regular file (it is a FIFO)" "$autotmc" interpret small.net --data fifo
expect 1 "'wf.st' is not a regular file (it is a FIFO)" "$prog" --iters 1 --weights wf.st
expect 1 "'wf.st' is not a regular file (it is a FIFO)" "$autotmc" eval small.net --weights wf.st --data good
expect 1 "'ckf/checkpoint.safetensors' is not a regular file (it is a FIFO)" "$prog" --iters 1 --resume ckf
mkfifo hw.hw
expect 1 "cannot read the hw file ./hw.hw: it is a FIFO, not a regular file" \
    "$autotmc" schedule small.net --ratio 4:1 --hw ./hw.hw

finish
