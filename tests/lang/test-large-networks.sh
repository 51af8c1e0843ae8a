#!/usr/bin/env bash
# Large programs elaborate in seconds, and programs over the node limit fail
# at once: no step of elaboration may be quadratic in the number of layers
# of one scope or of one file, and a repeat is checked against the limit
# before it is expanded.  Each case runs under a timeout far above what it
# needs, and far below what a quadratic step takes.
set -uo pipefail
srcdir=${TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
autotmc=${AUTOTMC:-$srcdir/autotmc}
tmp=${TEST_TMPDIR:-$(mktemp -d)}
cd "$tmp" || exit 1
fails=0

tail_decls() { # the declarations after the network
    printf 'input  x : f32[batch, 4]\nlabels y : onehot[batch, 3]\nloss = crossentropy(network(x), y)\n'
}

# expect STATUS SECONDS FILE [GREP]: `autotmc check FILE` exits with STATUS
# within SECONDS, and its stderr matches GREP if given.
expect() {
    local want=$1 limit=$2 file=$3 pattern=${4:-}
    local rc=0 start end
    start=$(date +%s.%N)
    timeout "$limit" "$autotmc" check "$file" >out.txt 2>err.txt || rc=$?
    end=$(date +%s.%N)
    local took
    took=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }')
    if [ $rc -eq 124 ]; then
        echo "FAIL: $file: still running after ${limit}s"
        fails=$((fails + 1))
    elif [ $rc -ne "$want" ]; then
        echo "FAIL: $file: exit status $rc, expected $want"
        head -5 err.txt
        fails=$((fails + 1))
    elif [ -n "$pattern" ] && ! grep -q -- "$pattern" err.txt; then
        echo "FAIL: $file: stderr does not match '$pattern':"
        head -5 err.txt
        fails=$((fails + 1))
    else
        echo "ok: $file (${took}s)"
    fi
}

# 200,000 layers in one chain: each new name is checked against the others.
{
    echo 'model m(batch = 2)'
    echo 'network = chain {'
    echo '    repeat 200000 { relu }'
    echo '    dense(4 => 3)'
    echo '}'
    tail_decls
} >repeat-200k.net
expect 0 30 repeat-200k.net

# 100,000 layer definitions, each used once: definitions are looked up by name.
{
    echo 'model m(batch = 2)'
    for i in $(seq 1 100000); do echo "layer l$i = relu"; done
    echo 'network = chain {'
    for i in $(seq 1 100000); do echo "    l$i"; done
    echo '    dense(4 => 3)'
    echo '}'
    tail_decls
} >definitions-100k.net
expect 0 30 definitions-100k.net

rm -f ./*.net out.txt err.txt
echo "$fails failed"
[ $fails -eq 0 ]
