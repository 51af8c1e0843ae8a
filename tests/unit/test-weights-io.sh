#!/usr/bin/env bash
# Weights and data files: safetensors and .npy round trips, and every
# malformed file is a clear error (exit 1, a message naming the file and the
# tensor) that never crashes and never leaves a half-written output.
set -uo pipefail
srcdir=${TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
autotmc=${AUTOTMC:-$srcdir/autotmc}
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/wio.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
fails=0

cat >m.net <<'NET'
model m(batch = 2, width = 6)
network = chain { dense(5 => width, relu) batchnorm dense(width => 3) }
input x : f32[batch, 5]
labels y : onehot[batch, 3]
loss = crossentropy(network(x), y)
optimizer = sgd(lr = 0.1)
NET

# expect_error NAME PATTERN COMMAND...: exit status 1 and stderr matching PATTERN
expect_error() {
    local name=$1 pat=$2
    shift 2
    local rc=0
    "$@" >out.txt 2>err.txt || rc=$?
    if [ $rc -ne 1 ] || ! grep -q -- "$pat" err.txt; then
        echo "FAIL: $name: exit $rc, stderr:"
        cat err.txt
        fails=$((fails + 1))
    else
        echo "ok: $name: $(head -1 err.txt)"
    fi
}

# Round trip: weights saved after 2 steps, reloaded, give the same third step.
"$autotmc" interpret m.net --iters 2 --save-weights w2.st >/dev/null || { echo "FAIL: save"; exit 1; }
a=$("$autotmc" interpret m.net --iters 3 | tail -1 | sed 's/.*loss //')
b=$("$autotmc" interpret m.net --iters 1 --weights w2.st | tail -1 | sed 's/.*loss //')
# the third step's loss depends only on the weights (plain SGD has no state)
if [ "$a" != "$b" ]; then
    echo "FAIL: round trip: step 3 loss $a, after reload $b"
    fails=$((fails + 1))
else
    echo "ok: round trip: step 3 loss $a after reloading the step-2 weights"
fi

# Truncated file: the header claims more data than there is.
head -c 200 w2.st >trunc.st
expect_error "truncated" "truncated" "$autotmc" interpret m.net --weights trunc.st
# Too short for a header.
printf 'abc' >short.st
expect_error "too short" "too short" "$autotmc" interpret m.net --weights short.st
# Oversized header length.
printf '\xff\xff\xff\xff\xff\xff\x00\x00{}' >huge.st
expect_error "oversized header" "exceeds" "$autotmc" interpret m.net --weights huge.st
# Not JSON.
printf '\x04\x00\x00\x00\x00\x00\x00\x00nope' >notjson.st
expect_error "not JSON" "not a JSON object" "$autotmc" interpret m.net --weights notjson.st
# Mismatched shapes: weights of a wider model.
"$autotmc" interpret m.net -D width=7 --iters 0 --save-weights wide.st >/dev/null
expect_error "shape mismatch" "tensor 'dense1.weight' has shape \[7, 5\] in the file but \[6, 5\] in the model" \
    "$autotmc" interpret m.net --weights wide.st
# A missing tensor.
cat >other.net <<'NET'
model o(batch = 2)
network = chain { dense(5 => 6, relu) dense(6 => 3) }
input x : f32[batch, 5]
labels y : onehot[batch, 3]
loss = crossentropy(network(x), y)
NET
"$autotmc" interpret other.net --iters 0 --save-weights other.st >/dev/null
expect_error "missing tensor" "has no tensor 'batchnorm1.weight'" "$autotmc" interpret m.net --weights other.st
# A failed save leaves nothing behind.
expect_error "save into a missing directory" "its directory does not exist" \
    "$autotmc" interpret m.net --iters 1 --save-weights nodir/w.st
if ls -a | grep -q '^nodir\|^\.w\.st\.'; then
    echo "FAIL: a failed save left files behind"
    fails=$((fails + 1))
fi
# A save over an existing file replaces it whole.
cp w2.st keep.st
"$autotmc" interpret m.net --iters 1 --save-weights keep.st >/dev/null
if cmp -s w2.st keep.st || ls -a | grep -q '^\.keep\.st\.'; then
    echo "FAIL: save over an existing file"
    fails=$((fails + 1))
fi
# npy FILE DESCR SHAPE NBYTES: a version 1.0 .npy file with NBYTES of zeros
npy() {
    local dict="{'descr': '$2', 'fortran_order': False, 'shape': $3, }"
    local len=$(( (${#dict} + 11 + 63) / 64 * 64 - 10 ))
    { printf '\x93NUMPY\x01\x00'; printf "\\x$(printf %02x $((len % 256)))\\x$(printf %02x $((len / 256)))";
      printf '%-*s\n' $((len - 1)) "$dict"; head -c "$4" /dev/zero; } >"$1"
}
npy x25.npy '<f4' '(2, 5)' 40
npy y2.npy '<i8' '(2,)' 16
"$autotmc" interpret m.net --input x25.npy --labels y2.npy --iters 1 >/dev/null 2>err.txt ||
    { echo "FAIL: a valid .npy input and class labels were refused:"; cat err.txt; fails=$((fails + 1)); }
# .npy: wrong shape, wrong magic, truncated, bad class.
npy x35.npy '<f4' '(3, 5)' 60
expect_error "npy shape" "the array is F32\[3, 5\] but input 'x' is f32\[2, 5\]" "$autotmc" interpret m.net --input x35.npy
printf 'garbage' >bad.npy
expect_error "npy magic" "not a .npy file" "$autotmc" interpret m.net --input bad.npy
head -c 150 x35.npy >cut.npy
expect_error "npy truncated" "truncated or corrupt" "$autotmc" interpret m.net --input cut.npy
{ head -c 128 y2.npy; printf '\x07\x00\x00\x00\x00\x00\x00\x00'; head -c 8 /dev/zero; } >y7.npy
expect_error "npy class out of range" "label 7 of row 0 is not a class" "$autotmc" interpret m.net --labels y7.npy

echo "$fails failed"
[ $fails -eq 0 ]
