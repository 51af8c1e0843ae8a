#!/usr/bin/env bash
# The profile database and the program cache under concurrent, interrupted
# and odd use:
#   - several first runs at once on an empty cache all succeed: the
#     database is made whole (schema and all) before any reader can see it;
#   - Ctrl-C during the link leaves no temporary file behind, neither the
#     linker's in $TMPDIR nor the object and program in the cache, and
#     those a kill -9 left are swept by the next build (a live process's
#     are kept);
#   - a model name of 240 characters builds and runs (the cache shortens
#     it), and a cache too deep for its names is refused before any work.
set -uo pipefail
srcdir=${TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
builddir=${TOP_BUILDDIR:-$srcdir}
autotmc=${AUTOTMC:-$builddir/autotmc}
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/cache.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
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

# ---- first runs at once on an empty cache ------------------------------------------
bad=0
for round in 1 2 3 4 5 6; do
    rm -rf fresh
    for i in 1 2 3; do
        (XDG_CACHE_HOME=$work/fresh "$autotmc" run small.net --iters 1 >run$i.out 2>run$i.err; echo $? >run$i.rc) &
    done
    wait
    for i in 1 2 3; do
        if [ "$(cat run$i.rc)" != 0 ]; then
            bad=$((bad + 1))
            echo "round $round, run $i: exit $(cat run$i.rc): $(tail -1 run$i.err)"
        fi
    done
done
[ $bad = 0 ] && ok "18 first runs, three at a time on an empty cache, all succeed" ||
    fail "$bad of 18 concurrent first runs failed"

# ---- Ctrl-C during the link -----------------------------------------------------------
export XDG_CACHE_HOME=$work/cache
mkdir -p tmp
# a compiler driver that says it is linking, then waits for its parent to go
cat >slowcc <<EOF
#!/bin/sh
touch "$work/linking"
while kill -0 \$PPID 2>/dev/null; do sleep 0.1; done
exit 1
EOF
chmod +x slowcc
CC=$work/slowcc TMPDIR=$work/tmp "$autotmc" run small.net --iters 1 >int.out 2>int.err &
pid=$!
for i in $(seq 300); do [ -e linking ] && break; sleep 0.1; done
[ -e linking ] || fail "the link never started: $(tail -1 int.err)"
kill -INT $pid
wait $pid
st=$?
left=$(ls -A tmp cache/autotm/programs 2>/dev/null | grep -E '^autotm-link|\.tmp[0-9]')
if [ $st = 130 ] && [ -z "$left" ]; then
    ok "Ctrl-C during the link: exit 130, no temporary file left"
else
    fail "Ctrl-C during the link: exit $st, left: $left"
fi

# ---- what a kill -9 left is swept by the next build ----------------------------------
dead=$(sh -c 'echo $$')
touch "tmp/autotm-link.$dead.Ab12Cd" "tmp/autotm-link.$$.Ef34Gh" \
    "cache/autotm/programs/small-0123456789abcdef.tmp$dead" \
    "cache/autotm/programs/small-0123456789abcdef.tmp$dead.o" \
    "cache/autotm/programs/small-0123456789abcdef.tmp$$.o" "tmp/notours.$dead.Ab12Cd"
TMPDIR=$work/tmp "$autotmc" run small.net --iters 1 >sweep.out 2>sweep.err || fail "run after the kill: $(tail -1 sweep.err)"
if [ ! -e "tmp/autotm-link.$dead.Ab12Cd" ] && [ ! -e "cache/autotm/programs/small-0123456789abcdef.tmp$dead" ] &&
    [ ! -e "cache/autotm/programs/small-0123456789abcdef.tmp$dead.o" ]; then
    ok "the temporary files of a process that is gone are swept"
else
    fail "stale temporary files remain: $(ls -A tmp cache/autotm/programs | tr '\n' ' ')"
fi
if [ -e "tmp/autotm-link.$$.Ef34Gh" ] && [ -e "cache/autotm/programs/small-0123456789abcdef.tmp$$.o" ] &&
    [ -e "tmp/notours.$dead.Ab12Cd" ]; then
    ok "a live process's temporary files, and others', are kept"
else
    fail "a live process's or another name's file was removed"
fi

# ---- long names ------------------------------------------------------------------------
name=m$(printf 'a%.0s' $(seq 239))
sed "s/^model small/model $name/" small.net >long.net
"$autotmc" run long.net --iters 1 >long.out 2>long.err && grep -q "^median step time" long.out &&
    ok "a model name of 240 characters builds and runs" || fail "a 240-character model name: $(tail -1 long.err)"
deep=$work/deep
while [ ${#deep} -lt 3990 ]; do deep=$deep/$(printf 'd%.0s' $(seq 100)); done
mkdir -p "$deep"
XDG_CACHE_HOME=$deep "$autotmc" run small.net --iters 1 >deep.out 2>deep.err
st=$?
if [ $st = 1 ] && grep -q "is too deep a directory for its programs' names" deep.err && ! grep -q "^profile" deep.out; then
    ok "a cache too deep for its names is refused before any work"
else
    fail "a deep cache: exit $st, $(tail -c 300 deep.err)"
fi

finish
