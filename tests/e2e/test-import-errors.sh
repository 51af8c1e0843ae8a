#!/usr/bin/env bash
# autotmc import on ONNX files made to be wrong: each must be refused with
# exit status 1 and a message that says what is wrong and where (the node,
# its op type and inputs), never a crash, and must write nothing. The files
# are written by a protobuf encoder of a few lines (no ONNX package):
# truncated, not protobuf, no graph, a missing initializer, a cycle, a
# value written twice, an initializer of an unread type, data of the wrong
# length, dimensions whose product overflows, two data inputs, an op
# without a .net layer, an unsupported join, a weight whose shape
# disagrees with the node, a group count that would overflow the channels, and a directory and a FIFO given as the file.
# Then a good file imports, and -o and --weights refuse to name one file.
set -uo pipefail
srcdir=${TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
builddir=${TOP_BUILDDIR:-$srcdir}
autotmc=${AUTOTMC:-$builddir/autotmc}
command -v python3 > /dev/null || { echo "skipped: no python3"; exit 77; }
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/import-errors.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
fails=0

python3 - <<'EOF' || exit 1
import struct

def varint(n):
    n &= (1 << 64) - 1
    out = b""
    while True:
        b, n = n & 0x7F, n >> 7
        out += bytes([b | (0x80 if n else 0)])
        if not n:
            return out

def ld(field, payload):
    payload = payload.encode() if isinstance(payload, str) else payload
    return varint(field << 3 | 2) + varint(len(payload)) + payload

def num(field, n):
    return varint(field << 3) + varint(n)

def tensor(name, dims, values=None, dtype=1, raw=None):
    t = b"".join(num(1, d) for d in dims) + num(2, dtype) + ld(8, name)
    if raw is not None:
        return t + ld(9, raw)
    return t + ld(9, struct.pack("<%df" % len(values), *values))

def attr_ints(name, ints):
    return ld(1, name) + num(20, 7) + b"".join(num(8, i) for i in ints)

def node(op, ins, outs, name="", attrs=()):
    return b"".join(ld(1, i) for i in ins) + b"".join(ld(2, o) for o in outs) + ld(3, name or op + "_0") \
        + ld(4, op) + b"".join(ld(5, a) for a in attrs)

def value_info(name, dims):
    shape = b"".join(ld(1, num(1, d)) for d in dims)
    return ld(1, name) + ld(2, ld(1, num(1, 1) + ld(2, shape)))

def model(nodes, inits=(), inputs=(("x", (2, 3)),), output="y"):
    g = b"".join(ld(1, n) for n in nodes) + ld(2, "g") + b"".join(ld(5, t) for t in inits) \
        + b"".join(ld(11, value_info(n, d)) for n, d in inputs) + ld(12, value_info(output, (2, 4)))
    return num(1, 7) + ld(2, "craft") + ld(7, g) + ld(8, ld(1, "") + num(2, 14))

w = tensor("fc.weight", (4, 3), [0.5] * 12)
b = tensor("fc.bias", (4,), [0.0] * 4)
gemm = node("Gemm", ["x", "fc.weight", "fc.bias"], ["y"], attrs=[attr_ints("transB", [1])[:0] +
            ld(1, "transB") + num(20, 2) + num(3, 1)])
files = {
    "good": model([gemm], [w, b]),
    "nograph": num(1, 7),
    "missing-init": model([gemm], [b]),
    "cycle": model([node("Relu", ["h"], ["y"]), node("Relu", ["x"], ["h"])]),
    "twice": model([node("Relu", ["x"], ["y"]), node("Relu", ["x"], ["y"], name="again")]),
    "float16": model([gemm], [tensor("fc.weight", (4, 3), raw=b"\0" * 24, dtype=10), b]),
    "short-data": model([gemm], [tensor("fc.weight", (4, 3), [0.5] * 11), b]),
    "overflow": model([gemm], [tensor("fc.weight", (1 << 40, 1 << 40), raw=b""), b]),
    "two-inputs": model([gemm], [w, b], inputs=(("x", (2, 3)), ("z", (2, 3)))),
    "einsum": model([node("Einsum", ["x"], ["y"])]),
    "join": model([node("Relu", ["x"], ["a"]), node("Sub", ["x", "a"], ["y"])]),
    "bad-kernel": model([node("Conv", ["x", "w"], ["y"], attrs=[attr_ints("kernel_shape", [5, 5])])],
                        [tensor("w", (4, 3, 3, 3), [0.1] * 108)], inputs=(("x", (2, 3, 8, 8)),)),
    "bad-group": model([node("Conv", ["x", "w"], ["y"], attrs=[attr_ints("kernel_shape", [3, 3]),
                        ld(1, "group") + num(20, 2) + num(3, 1 << 62)])],
                       [tensor("w", (4, 3, 3, 3), [0.1] * 108)], inputs=(("x", (2, 3, 8, 8)),)),
    "bad-width": model([gemm], [tensor("fc.weight", (4, 5), [0.5] * 20), b]),
}
for name, data in files.items():
    open(name + ".onnx", "wb").write(data)
open("truncated.onnx", "wb").write(files["good"][:len(files["good"]) // 2])
open("garbage.onnx", "wb").write(b"\xff" * 64)
EOF
mkdir dir.onnx
mkfifo fifo.onnx

# refused FILE TEXT: import exits 1 within 20 s, says TEXT, and writes nothing
refused() {
    local f=$1 text=$2 rc
    timeout 20 "$autotmc" import "$f" -o out.net --weights out.safetensors > out.log 2> err.log
    rc=$?
    if [ $rc -eq 1 ] && grep -qF -- "$text" err.log && [ ! -e out.net ] && [ ! -e out.safetensors ]; then
        echo "ok: $f refused: $(head -c 200 err.log)"
    else
        echo "FAIL: $f: exit $rc (want 1 and '$text'): $(cat err.log)"
        fails=$((fails + 1))
    fi
    rm -f out.net out.safetensors
}
refused truncated.onnx "not an ONNX model"
refused garbage.onnx "not an ONNX model"
refused nograph.onnx "the model has no graph"
refused missing-init.onnx "input 1 'fc.weight' is written by no node before it, no initializer"
refused cycle.onnx "input 0 'h' is written by no node before it"
refused twice.onnx "output 'y' is written twice"
refused float16.onnx "elements of ONNX type 10"
refused short-data.onnx "44 bytes of data for 12 elements"
refused overflow.onnx "makes it too large"
refused two-inputs.onnx "more than one data input"
refused einsum.onnx "node 'Einsum_0' (Einsum), inputs 'x': the op Einsum has no .net layer"
refused join.onnx "node 'Sub_0' (Sub), inputs 'x', 'a': it joins the branches"
refused bad-kernel.onnx "kernel_shape and group disagree with the weight"
refused bad-group.onnx "kernel_shape and group disagree with the weight"
refused bad-width.onnx "dense"
refused dir.onnx "is a directory"
refused fifo.onnx "not an ONNX file"

if timeout 20 "$autotmc" import good.onnx -o good.net --weights good.safetensors 2> err.log &&
    grep -q "dense(3 => 4)" good.net && [ -s good.safetensors ] && "$autotmc" check good.net > /dev/null; then
    echo "ok: a good file imports: $(cat err.log)"
else
    echo "FAIL: good.onnx: $(cat err.log)"; fails=$((fails + 1))
fi
timeout 20 "$autotmc" import good.onnx > stdout.net 2> err.log
cmp -s stdout.net good.net || { echo "FAIL: the .net on stdout differs from -o's"; fails=$((fails + 1)); }
timeout 20 "$autotmc" import good.onnx -o same --weights same > out.log 2> err.log
if [ $? -eq 2 ] && [ ! -e same ]; then echo "ok: -o and --weights of one file refused"; else
    echo "FAIL: -o and --weights of one file: $(cat err.log)"; fails=$((fails + 1)); fi
timeout 20 "$autotmc" import good.onnx --precision bf16 > out.log 2> err.log
[ $? -eq 2 ] || { echo "FAIL: import took --precision: $(cat err.log)"; fails=$((fails + 1)); }
echo "$fails failed"
[ $fails -eq 0 ]
