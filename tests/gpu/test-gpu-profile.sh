#!/usr/bin/env bash
# test-gpu-profile.sh - autotm-gpu-profile (runtime/cuda/gpuprof.c).
#
# Everywhere (no GPU needed):
#   - it needs only the CUDA libraries, cJSON and the C library;
#   - every kind of malformed kernel file is one line on stderr,
#     exactly `FILE:LINE: error: ...`, status 1, and the output file is
#     left as it was (no PROFILE.tsv.tmp either);
#   - --help exits 0, usage errors exit 2 with a "Try" line;
#   - a well-formed file (kernel descriptions written by hand in rt.h's
#     layout) without a GPU: one line `autotm-gpu-profile: error: no CUDA
#     device: ...`, status 1, nothing written.
# With a GPU, that file is profiled: a machine line, a kernel line per
# kernel in input order with positive times, algo lines for the
# convolutions, and move lines for both directions, sync and async.
set -u
build=$(cd "${TOP_BUILDDIR:-.}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
prof=$build/autotm-gpu-profile
if [ ! -x "$prof" ]; then
    echo "skipped: built without CUDA (no autotm-gpu-profile)"
    exit 77
fi
tmp=$(mktemp -d "${TEST_TMPDIR:-/tmp}/gpuprof.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
failed=0
ok() { echo "ok - $1"; }
not_ok() { echo "not ok - $1"; failed=$((failed + 1)); }

# ---- what it links with ------------------------------------------------------
. "$here/needed.sh"
needed=$(needed "$prof")
bad=$(foreign $needed)
if [ -z "$bad" ] && [ -n "$needed" ]; then ok "needs only $needed"; else not_ok "needs $bad (of: $needed)"; fi

# ---- descriptions, by hand -------------------------------------------------------
# rt.h: op, nin, nout, 35 attributes (kh kw sh sw ph pw groups axis offset seed
# eps p bn_momentum, then the optimizer's 15: optim lr momentum nesterov wd
# beta1 beta2 eps clip sched warmup steps floor every gamma, then matmul's
# trans_a trans_b alpha, then clamp's lo hi, then the bf16 arguments' bits,
# the fused activation, attention's causal flag and the blocked arguments'
# bits), the attribute shape (ndim + 4 sizes): RT_D_ARGS = 45; then 16
# arguments of ndim + 4 sizes: RT_DESC_LEN = 126 (the last: the convolution
# algorithm).
#   desc OP NIN NOUT ATTRS ARG...   ATTRS: fields 3.. (comma-separated, or -);
#                                   ARG: "ndim,d0,d1,d2,d3"
desc() {
    local op=$1 nin=$2 nout=$3 attrs=$4 a x
    shift 4
    local v=("$op" "$nin" "$nout")
    if [ "$attrs" != - ]; then IFS=, read -ra x <<<"$attrs"; v+=("${x[@]}"); fi
    while [ ${#v[@]} -lt 45 ]; do v+=(0); done
    for a in "$@"; do IFS=, read -ra x <<<"$a"; v+=("${x[@]}"); done
    while [ ${#v[@]} -lt 126 ]; do v+=(0); done
    (IFS=,; echo "${v[*]}")
}
# op numbers: ops.def's order
CONV2D=0 DENSE=1 RELU=6 SOFTMAX_XENT=14 CONV2D_BWD_DATA=16 CONV2D_BWD_FILTER=17 BATCHNORM_BWD=24
EPS=4532020583610935537 # 1e-5 as double bits
relu=$(desc $RELU 1 1 - 2,64,1024,0,0 2,64,1024,0,0)
header='# autotm gpu kernels 1'
{
    echo "$header"
    echo "# a comment, then an empty line"
    echo
    printf 'relu [64,1024] -> [64,1024]\t%s\n' "$relu"
    printf 'dense [64,1024] [10,1024] [10] -> [64,10]\t%s\n' \
        "$(desc $DENSE 3 1 - 2,64,1024,0,0 2,10,1024,0,0 1,10,0,0,0 2,64,10,0,0)"
    printf 'conv2d [8,3,32,32] [16,3,3,3] [16] -> [8,16,32,32] k3x3 s1x1 p1x1 g1\t%s\n' \
        "$(desc $CONV2D 3 1 3,3,1,1,1,1,1 4,8,3,32,32 4,16,3,3,3 1,16,0,0,0 4,8,16,32,32)"
    printf 'conv2d_bwd_data [8,16,32,32] [16,3,3,3] -> [8,3,32,32] k3x3 s1x1 p1x1 g1\t%s\n' \
        "$(desc $CONV2D_BWD_DATA 2 1 3,3,1,1,1,1,1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,4,8,3,32,32 4,8,16,32,32 4,16,3,3,3 4,8,3,32,32)"
    printf 'conv2d_bwd_filter [8,3,32,32] [8,16,32,32] -> [16,3,3,3] k3x3 s1x1 p1x1 g1\t%s\n' \
        "$(desc $CONV2D_BWD_FILTER 2 1 3,3,1,1,1,1,1 4,8,3,32,32 4,8,16,32,32 4,16,3,3,3)"
    printf 'softmax_crossentropy [8,10] [8,10] -> [1]\t%s\n' \
        "$(desc $SOFTMAX_XENT 2 1 - 2,8,10,0,0 2,8,10,0,0 1,1,0,0,0)"
    printf 'batchnorm_bwd [8,4,6,6] [4] [4] [4] [8,4,6,6] -> [8,4,6,6] [4] [4]\t%s\n' \
        "$(desc $BATCHNORM_BWD 5 3 0,0,0,0,0,0,0,0,0,0,$EPS 4,8,4,6,6 1,4,0,0,0 1,4,0,0,0 1,4,0,0,0 \
            4,8,4,6,6 4,8,4,6,6 1,4,0,0,0 1,4,0,0,0)"
} >good.tsv
nkernels=7

# ---- malformed kernel files --------------------------------------------------------
# bad NAME EXPECTED-LINE-PATTERN CONTENT: one stderr line matching
# "bad.tsv:PATTERN", status 1, out.tsv untouched, no out.tsv.tmp.
bad() {
    local name=$1 want=$2 content=$3
    printf '%s' "$content" >bad.tsv
    echo old >out.tsv
    rm -f out.tsv.tmp
    local err rc
    err=$("$prof" bad.tsv -o out.tsv 2>&1 >/dev/null)
    rc=$?
    if [ $rc -eq 1 ] && [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] &&
       printf '%s\n' "$err" | grep -qx "bad\.tsv:$want" &&
       [ "$(cat out.tsv)" = old ] && [ ! -e out.tsv.tmp ]; then
        ok "$name: $err"
    else
        not_ok "$name: status $rc, stderr: $err"
    fi
}
line() { printf '%s\t%s\n' "$1" "$2"; }  # line SIGNATURE DESCRIPTION
h="$header"$'\n'
bad "empty file" "1: error: expected the header '# autotm gpu kernels 1'" ""
bad "wrong header" "1: error: expected the header '# autotm gpu kernels 1'" \
    "# autotm gpu kernels 2"$'\n'"$(line relu "$relu")"$'\n'
bad "header not first" "1: error: expected the header .*" $'\n'"$h"
bad "missing tab" "4: error: expected a kernel signature, a tab and its description" \
    "$h# comment"$'\n\n'"relu ${relu}"$'\n'
bad "empty signature" "2: error: empty kernel signature" "$h$(line "" "$relu")"$'\n'
bad "too few numbers" "3: error: the description has 125 numbers, not 126 (RT_DESC_LEN of autotm/rt.h)" \
    "$h$(line relu "$relu")"$'\n'"$(line relu "${relu%,0}")"$'\n'
bad "too many numbers" "2: error: the description has 127 numbers, not 126 .*" "$h$(line relu "$relu,0")"$'\n'
bad "not a number" "2: error: number 4 of the description, 'x1', is not a 64-bit integer" \
    "$h$(line relu "$(echo "$relu" | sed 's/^\([^,]*,[^,]*,[^,]*\),0,/\1,x1,/')")"$'\n'
bad "empty number" "2: error: number 2 of the description, '', is not a 64-bit integer" \
    "$h$(line relu "$(echo "$relu" | sed 's/^6,1,/6,,/')")"$'\n'
bad "a fraction" "2: error: number 1 of the description, '6.5', is not a 64-bit integer" \
    "$h$(line relu "$(echo "$relu" | sed 's/^6,/6.5,/')")"$'\n'
bad "out of int64 range" "2: error: number 1 of the description, '99999999999999999999', is not a 64-bit integer" \
    "$h$(line relu "$(echo "$relu" | sed 's/^6,/99999999999999999999,/')")"$'\n'
bad "op out of range" "2: error: op 99 is not an op of ops.def (0 to [0-9]*)" \
    "$h$(line relu "$(echo "$relu" | sed 's/^6,/99,/')")"$'\n'
bad "negative op" "2: error: op -1 is not an op of ops.def .*" \
    "$h$(line relu "$(echo "$relu" | sed 's/^6,/-1,/')")"$'\n'
bad "inputs do not match ops.def" \
    "2: error: relu with 2 inputs and 1 output: ops.def gives it 1 input and 1 output" \
    "$h$(line relu "$(desc $RELU 2 1 - 2,4,4,0,0 2,4,4,0,0 2,4,4,0,0)")"$'\n'
bad "outputs do not match ops.def" \
    "2: error: dense with 2 inputs and 2 outputs: ops.def gives it 2 to 4 inputs and 1 output" \
    "$h$(line dense "$(desc $DENSE 2 2 - 2,4,4,0,0 2,4,4,0,0 2,4,4,0,0 2,4,4,0,0)")"$'\n'
bad "5 dimensions" "2: error: relu: argument 1 has 5 dimensions (1 to 4)" \
    "$h$(line relu "$(desc $RELU 1 1 - 2,4,4,0,0 5,1,1,1,1)")"$'\n'
bad "0 dimensions" "2: error: relu: argument 0 has 0 dimensions (1 to 4)" \
    "$h$(line relu "$(desc $RELU 1 1 - 0,0,0,0,0 2,4,4,0,0)")"$'\n'
bad "size 0" "2: error: relu: argument 0 has size 0 in dimension 1" \
    "$h$(line relu "$(desc $RELU 1 1 - 2,4,0,0,0 2,4,4,0,0)")"$'\n'
bad "negative size" "3: error: dense: argument 2 has size -10 in dimension 1" \
    "$h$(line relu "$relu")"$'\n'"$(line dense "$(desc $DENSE 2 1 - 2,4,4,0,0 2,10,4,0,0 2,4,-10,0,0)")"$'\n'

# ---- the command line ----------------------------------------------------------------
if "$prof" --help | grep -q '^usage: autotm-gpu-profile KERNELS.tsv -o PROFILE.tsv'; then
    ok "--help exits 0 with the usage"
else
    not_ok "--help"
fi
usage() {  # usage NAME ARGS...
    local name=$1 err rc
    shift
    err=$("$prof" "$@" 2>&1 >/dev/null)
    rc=$?
    if [ $rc -eq 2 ] && printf '%s\n' "$err" | tail -n 1 | grep -qx "Try 'autotm-gpu-profile --help'."; then
        ok "usage error, $name: $(printf '%s\n' "$err" | head -n 1)"
    else
        not_ok "usage error, $name: status $rc, stderr: $err"
    fi
}
usage "no arguments"
usage "no -o" good.tsv
usage "two files" good.tsv bad.tsv -o out.tsv
usage "--runs 0" good.tsv -o out.tsv --runs 0
usage "--warmup x" good.tsv -o out.tsv --warmup x
usage "unknown option" good.tsv -o out.tsv --frobnicate

# ---- a well-formed file -----------------------------------------------------------------
echo old >out.tsv
rm -f out.tsv.tmp
err=$("$prof" good.tsv -o out.tsv --runs 3 --warmup 1 2>&1 >/dev/null)
rc=$?
if [ $rc -eq 1 ] && printf '%s\n' "$err" | grep -q '^autotm-gpu-profile: error: no CUDA device'; then
    if [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] && [ "$(cat out.tsv)" = old ] && [ ! -e out.tsv.tmp ]; then
        ok "no GPU: $err; nothing written"
    else
        not_ok "no GPU: more than the one error line, or something written: $err"
    fi
    echo "# no GPU here: the profile itself is not checked"
elif [ $rc -ne 0 ]; then
    not_ok "profiling good.tsv: status $rc: $err"
else
    printf '%s\n' "$err" | sed 's/^/#   /'
    sed 's/^/#   /' out.tsv
    check() {  # check NAME COMMAND...
        local name=$1
        shift
        if "$@"; then ok "$name"; else not_ok "$name"; fi
    }
    check "header" test "$(head -n 1 out.tsv)" = '# autotm gpu profile 1'
    check "machine line" awk -F'\t' '$1 == "machine" { n++; if (NF != 8 || $3 !~ /^[0-9]+\.[0-9]+$/ || $4 <= 0 ||
        ($8 != "tf32 off")) bad++ } END { exit !(n == 1 && !bad) }' out.tsv
    check "a kernel line per kernel, in order" \
        test "$(awk -F'\t' '$1 == "kernel" { print $2 }' out.tsv)" = "$(grep -v '^#' good.tsv | grep . | cut -f1)"
    check "kernel times positive" awk -F'\t' -v n=$nkernels '$1 == "kernel" { k++; if (NF != 7 || $3 <= 0 ||
        $4 < 0 || $5 != 3 || $6 == "") bad++ } END { exit !(k == n && !bad) }' out.tsv
    check "conv kernels' workspace column" awk -F'\t' '$1 == "kernel" && $7 !~ /^[0-9]+$/ { bad++ }
        END { exit bad > 0 }' out.tsv
    for dir in fwd bwd_data bwd_filter; do
        check "algo lines for $dir" awk -F'\t' -v d=$dir '$1 == "algo" && $3 == d { if (NF == 6 && $5 > 0) n++ }
            END { exit !(n > 0) }' out.tsv
    done
    for dir in fast_to_slow slow_to_fast; do
        for kind in sync async; do
            check "move lines $dir $kind" awk -F'\t' -v d=$dir -v k=$kind '$1 == "move" && $2 == d && $3 == k {
                if (NF == 5 && $5 > 0) n++ } END { exit !(n >= 5) }' out.tsv
        done
    done
    check "move lines both async" awk -F'\t' '$1 == "move" && $2 == "both" && $3 == "async" && $5 > 0 { n++ }
        END { exit !(n >= 5) }' out.tsv
    check "no temporary file left" test ! -e out.tsv.tmp
    "$prof" good.tsv -o tf32.tsv --runs 1 --warmup 0 --quiet
    check "--tf32 says so" grep -q "$(printf '\t')tf32 on\$" tf32.tsv
fi

echo "$failed failed"
[ $failed -eq 0 ]
