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
# st FILE HEADER NBYTES: a safetensors file with this JSON header and NBYTES of zeros
st() {
    local n=${#2}
    { printf "$(printf '\\x%02x\\x%02x' $((n & 255)) $((n >> 8 & 255)))"; printf '\0\0\0\0\0\0';
      printf '%s' "$2"; head -c "$3" /dev/zero; } >"$1"
}
f4() { echo "{\"dtype\":\"F32\",\"shape\":[$1],\"data_offsets\":[$2,$3]}"; }
st good.st "{\"a\":$(f4 2 0 8),\"b\":$(f4 2 8 16)}" 16
expect_error "a well-formed hand-made file is read" "has no tensor 'dense1.weight'" \
    "$autotmc" interpret m.net --weights good.st
# A name twice: which one would be meant?
st dup.st "{\"a\":$(f4 2 0 8),\"a\":$(f4 2 8 16)}" 16
expect_error "duplicate names" "dup.st: 'a' appears twice in the header" \
    "$autotmc" interpret m.net --weights dup.st
# Overlapping data: b starts inside a; c lies wholly inside a.
st overlap.st "{\"a\":$(f4 4 0 16),\"b\":$(f4 4 8 24)}" 24
expect_error "overlapping data" \
    "overlap.st: the data of tensor 'b' (bytes \[8, 24)) overlaps that of tensor 'a' (bytes \[0, 16))" \
    "$autotmc" interpret m.net --weights overlap.st
st inside.st "{\"c\":$(f4 2 8 16),\"a\":$(f4 8 0 32),\"d\":$(f4 0 4 4)}" 32
expect_error "data inside another tensor's" \
    "inside.st: the data of tensor 'c' (bytes \[8, 16)) overlaps that of tensor 'a' (bytes \[0, 32))" \
    "$autotmc" interpret m.net --weights inside.st
# Data past the end of the file, and offsets that are not whole numbers.
st past.st "{\"a\":$(f4 2 0 8),\"b\":$(f4 4 8 24)}" 16
expect_error "data past the end of the file" \
    "past.st: tensor 'b' has data offsets \[8, 24) outside the 16 bytes of data" \
    "$autotmc" interpret m.net --weights past.st
st frac.st "{\"a\":$(f4 2 0.5 8.5)}" 16
expect_error "fractional offsets" "frac.st: tensor 'a' has invalid data offsets" \
    "$autotmc" interpret m.net --weights frac.st
# The program reads weights through the same code.
"$autotmc" build m.net -o prog >build.out 2>&1 || { echo "FAIL: build"; cat build.out; exit 1; }
expect_error "duplicate names (program)" "prog: error: dup.st: 'a' appears twice in the header" \
    ./prog --iters 1 --weights dup.st
expect_error "overlapping data (program)" "prog: error: overlap.st: the data of tensor 'b'" \
    ./prog --iters 1 --weights overlap.st

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
# npy FILE DESCR SHAPE NBYTES [DATA]: a version 1.0 .npy file with NBYTES of zeros,
# or the bytes of printf DATA
npy() {
    local descr="'$2'"
    case $2 in \[*) descr=$2 ;; esac  # a structured type is a list
    local dict="{'descr': $descr, 'fortran_order': False, 'shape': $3, }"
    local len=$(( (${#dict} + 11 + 63) / 64 * 64 - 10 ))
    { printf '\x93NUMPY\x01\x00'; printf "\\x$(printf %02x $((len % 256)))\\x$(printf %02x $((len / 256)))";
      printf '%-*s\n' $((len - 1)) "$dict"; if [ $# -ge 5 ]; then printf "$5"; else head -c "$4" /dev/zero; fi
    } >"$1"
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
# Values that are not finite are named where they are, before any step, for the
# interpreter and the program alike (not blamed on the learning rate later).
z4='\0\0\0\0' nan4='\0\0\xc0\x7f' inf4='\0\0\x80\x7f' one4='\0\0\x80\x3f'
npy ynan.npy '<f4' '(2, 3)' 24 "$one4$z4$z4$z4$nan4$one4"
npy xinf.npy '<f4' '(2, 5)' 40 "$z4$z4$z4$z4$z4$z4$z4$inf4$z4$z4"
npy xbig.npy '<f8' '(2, 5)' 80 "\x9c\x75\x00\x88\x3c\xe4\x37\x7e$(printf '%.0s\\0\\0\\0\\0\\0\\0\\0\\0' 1 2 3 4 5 6 7 8 9)"
for who in interpreter program; do
    run=("$autotmc" interpret m.net --iters 1) prog=autotmc
    [ $who = program ] && run=(./prog --iters 1) prog=prog
    expect_error "NaN label ($who)" "^$prog: error: ynan.npy: element 4 is NaN\$" "${run[@]}" --labels ynan.npy
    if grep -q "learning rate" err.txt || grep -q "^step" out.txt; then
        echo "FAIL: NaN label ($who): trained, or blamed the learning rate"
        fails=$((fails + 1))
    fi
    expect_error "infinite input ($who)" "^$prog: error: xinf.npy: element 7 is infinite\$" "${run[@]}" --input xinf.npy
    expect_error "input beyond float32 ($who)" \
        "^$prog: error: xbig.npy: element 0 (1e+300) is too large for float32\$" "${run[@]}" --input xbig.npy
done
"$autotmc" interpret m.net --f64 --input x25.npy --labels y2.npy --iters 1 >/dev/null 2>err.txt ||
    { echo "FAIL: a valid input refused with --f64:"; cat err.txt; fails=$((fails + 1)); }
# A weight that is NaN: the first float of the data of w2.st.
hl=$(od -An -tu8 -N8 w2.st | tr -d ' ')
first=$(head -c $((8 + hl)) w2.st | tail -c "$hl" | grep -o '"[^"]*":{"shape":\[[0-9,]*\],"data_offsets":\[0,' |
        sed 's/^"\([^"]*\)".*/\1/')
cp w2.st wnan.st
printf "$nan4" | dd of=wnan.st bs=1 seek=$((8 + hl)) conv=notrunc status=none
expect_error "NaN weight" "^autotmc: error: wnan.st: tensor '$first': element 0 is NaN\$" \
    "$autotmc" interpret m.net --weights wnan.st
expect_error "NaN weight (program)" "^prog: error: wnan.st: tensor '$first': element 0 is NaN\$" \
    ./prog --iters 1 --weights wnan.st

# .npy element types that are not read: said in words, with what is.
types="use little-endian float32, float64, int32 or int64"
npy be.npy '>f4' '(2, 5)' 40
expect_error "npy big-endian" \
    "^autotmc: error: be.npy: element type '>f4' (big-endian float32) is not supported; $types\$" \
    "$autotmc" interpret m.net --input be.npy
expect_error "npy big-endian (program)" \
    "^prog: error: be.npy: element type '>f4' (big-endian float32) is not supported; $types\$" \
    ./prog --iters 1 --input be.npy
npy half.npy '<f2' '(2, 5)' 20
expect_error "npy float16" "half.npy: element type '<f2' (little-endian float16) is not supported; $types\$" \
    "$autotmc" interpret m.net --input half.npy
npy bool.npy '|b1' '(2,)' 2
expect_error "npy bool" "bool.npy: element type '|b1' (bool) is not supported; $types\$" \
    "$autotmc" interpret m.net --labels bool.npy
npy u8.npy '|u1' '(2,)' 2
expect_error "npy uint8" "u8.npy: element type '|u1' (uint8) is not supported; $types\$" \
    "$autotmc" interpret m.net --labels u8.npy
npy rec.npy "[('a', '<f4'), ('b', '<f4')]" '(2,)' 16
expect_error "npy structured" "rec.npy: element type \[('a', '<f4'), ('b', '<f4')\] is a structured type" \
    "$autotmc" interpret m.net --input rec.npy

echo "$fails failed"
[ $fails -eq 0 ]
