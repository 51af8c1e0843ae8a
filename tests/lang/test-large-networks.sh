#!/usr/bin/env bash
# Large programs elaborate in seconds, and programs over the node limit fail
# at once: no step of elaboration may be quadratic in the number of layers
# of one scope or of one file, and a repeat or a use of a layer is checked
# against the limits before it is expanded; a name of a megabyte is not
# echoed whole.  Each
# case runs under a timeout far above what it needs (on a busy machine),
# and far below what a quadratic step takes.
set -uo pipefail
srcdir=${TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
autotmc=${AUTOTMC:-$srcdir/autotmc}
case $autotmc in /*) ;; *) autotmc=$(pwd)/$autotmc ;; esac
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
expect 0 60 repeat-200k.net

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
expect 0 60 definitions-100k.net

# A million nodes, just under the limit.
{
    echo 'model m(batch = 2)'
    echo 'network = chain {'
    echo '    repeat 1000000 { relu }'
    echo '    dense(4 => 3)'
    echo '}'
    tail_decls
} >nodes-1m.net
expect 0 60 nodes-1m.net

# Over the limit: a repeat of repeats fails before it expands anything ...
{
    echo 'model m(batch = 2)'
    echo 'network = chain {'
    echo '    repeat 1000000 { repeat 1000000 { relu } }'
    echo '    dense(4 => 3)'
    echo '}'
    tail_decls
} >repeat-nodes.net
expect 1 20 repeat-nodes.net 'repeat-nodes.net:3:5: error: network too large: expanding this repeat makes more'

# ... also when its layers add no node ...
{
    echo 'model m(batch = 2)'
    echo 'network = chain {'
    echo '    repeat 1000000 { repeat 1000000 { identity } }'
    echo '    dense(4 => 3)'
    echo '}'
    tail_decls
} >repeat-identity.net
expect 1 20 repeat-identity.net 'repeat-identity.net:3:5: error: network too large: expanding this repeat applies more'

# ... and so does a layer that calls layers twice over, 2^40 times ...
for act in identity relu; do
    {
        echo 'model m(batch = 2)'
        echo "layer l0 = $act"
        for i in $(seq 1 40); do echo "layer l$i = chain { l$((i - 1)) l$((i - 1)) }"; done
        echo 'network = chain {'
        echo '    l40'
        echo '    dense(4 => 3)'
        echo '}'
        tail_decls
    } >tree-$act.net
done
expect 1 20 tree-identity.net "tree-identity.net:44:5: error: network too large: using layer 'l40' here applies more"
expect 1 20 tree-relu.net "tree-relu.net:44:5: error: network too large: using layer 'l40' here makes more"

# ... and where layers passed as arguments hide the count, the count of
# layers applied stops it.
{
    echo 'model m(batch = 2)'
    echo 'layer l0 = identity'
    for i in $(seq 1 40); do
        echo "layer twice$i(f) = chain { f f }"
        echo "layer l$i = twice$i(l$((i - 1)))"
    done
    echo 'network = chain {'
    echo '    l40'
    echo '    dense(4 => 3)'
    echo '}'
    tail_decls
} >tree-arguments.net
expect 1 60 tree-arguments.net 'error: network too large: more than [0-9]* layers applied'

# A name of a megabyte is not echoed whole: the message shows 64 bytes of
# it and the source line a window around the caret.
{
    echo 'model m(batch = 2)'
    echo 'network = chain {'
    printf '    relu '; head -c 1000000 /dev/zero | tr '\0' 'a'; echo
    echo '    dense(4 => 3)'
    echo '}'
    tail_decls
} >long-name.net
expect 1 20 long-name.net "long-name.net:3:10: error: unknown name 'a\{64\}\.\.\.'$"
if [ "$(wc -c <err.txt)" -gt 1000 ]; then
    echo "FAIL: long-name.net: $(wc -c <err.txt) bytes of diagnostics"
    fails=$((fails + 1))
fi

rm -f ./*.net out.txt err.txt
echo "$fails failed"
[ $fails -eq 0 ]
