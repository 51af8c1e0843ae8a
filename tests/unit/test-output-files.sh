#!/usr/bin/env bash
# Output files of a generated program (--save-weights, --results) and of
# `autotmc interpret --save-weights`, written as base/outfile.h says:
#   - a device stays a device (/dev/null is written, never replaced), a
#     FIFO is written through, and so is /dev/stdout when it is a pipe;
#   - a symbolic link stays a link and its target gets the data;
#   - an existing file keeps its mode (0640 stays 0640), a new one gets
#     0666 less the umask;
#   - a path that cannot be written is refused before any work (exit 1, a
#     message naming the option and the path, no step run);
#   - a write that fails at the end (/dev/full) is an error, exit 1.
# Device nodes are made privately (mknod, as root) and tried first: the real
# /dev/null is written only once a private one has survived.
set -uo pipefail
srcdir=${TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
builddir=${TOP_BUILDDIR:-$srcdir}
autotmc=${AUTOTMC:-$builddir/autotmc}
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/outfiles.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
umask 022
fails=0

ok()   { echo "ok: $*"; }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

cat >m.net <<'NET'
model m(batch = 2, width = 6)
network = chain { dense(5 => width, relu) dense(width => 3) }
input x : f32[batch, 5]
labels y : onehot[batch, 3]
loss = crossentropy(network(x), y)
optimizer = sgd(lr = 0.1)
NET

"$autotmc" build m.net -o prog >build.out 2>&1 ||
    { echo "FAIL: build"; cat build.out; exit 1; }

# run NAME COMMAND...: must exit 0
run() {
    local name=$1
    shift
    if "$@" >out.txt 2>err.txt; then
        return 0
    fi
    fail "$name: exit status $?"
    cat err.txt
    return 1
}

# safetensors FILE: the file is a complete safetensors file (its header and data)
safetensors() {
    [ -f "$1" ] || return 1
    local hl
    hl=$(od -An -tu8 -N8 "$1" | tr -d ' ')
    [ -n "$hl" ] && [ "$hl" -gt 2 ] && [ "$(stat -Lc %s "$1")" -gt $((8 + hl)) ] &&
        head -c $((8 + hl)) "$1" | tail -c "$hl" | grep -q '"dtype":"F32"'
}
# record FILE: a complete results record
record() {
    [ -f "$1" ] && grep -q '"actual_runtime"' "$1" && [ "$(tail -c 2 "$1")" = "}" ]
}

# The program's weights, and what a device, a FIFO, a link and a mode get.
run "program --save-weights" ./prog --iters 1 -q --save-weights ref.st --results ref.json &&
    safetensors ref.st && record ref.json && ok "the program saves weights and a results record"

# ---- devices ---------------------------------------------------------------------
if [ "$(id -u)" = 0 ] && mknod null c 1 3 2>/dev/null && mknod full c 1 7 2>/dev/null; then
    private_ok=yes
    for what in "program --save-weights:./prog --iters 1 -q --save-weights" \
                "program --results:./prog --iters 1 -q --results" \
                "interpret --save-weights:$autotmc interpret m.net --iters 1 --save-weights"; do
        name=${what%%:*}
        read -r -a cmd <<<"${what#*:}"
        run "$name to a device node" "${cmd[@]}" null
        if [ -c null ] && [ "$(stat -c %t:%T null)" = 1:3 ]; then
            ok "$name to a device node: it stays a character device"
        else
            fail "$name to a device node replaced it: $(ls -l null)"
            private_ok=no
            rm -f null && mknod null c 1 3
        fi
        rc=0
        "${cmd[@]}" full >out.txt 2>err.txt || rc=$?
        if [ $rc -eq 1 ] && grep -q "cannot write .*full: No space left on device" err.txt && [ -c full ]; then
            ok "$name to /dev/full: exit 1, $(head -1 err.txt)"
        else
            fail "$name to /dev/full: exit $rc, $(ls -l full), stderr:"
            cat err.txt
            rm -f full && mknod full c 1 7
        fi
    done
    if [ $private_ok = yes ]; then
        run "/dev/null" ./prog --iters 1 -q --save-weights /dev/null --results /dev/null &&
            run "/dev/null" "$autotmc" interpret m.net --iters 1 --save-weights /dev/null
        if [ -c /dev/null ] && [ "$(stat -c %t:%T /dev/null)" = 1:3 ]; then
            ok "--save-weights /dev/null, --results /dev/null: /dev/null is still a character device"
        else
            fail "/dev/null is no longer a character device"
        fi
    else
        fail "the real /dev/null not tried: a private device node was replaced"
    fi
else
    echo "skipped: device nodes (not root, or mknod is not allowed here)"
fi

# A FIFO is written through, and stays a FIFO.
mkfifo fifo
timeout 60 cat fifo >fifo.out &
reader=$!
run "program --save-weights to a FIFO" timeout 60 ./prog --iters 1 -q --save-weights fifo
wait $reader
if [ -p fifo ] && safetensors fifo.out && cmp -s ref.st fifo.out; then
    ok "program --save-weights to a FIFO: the FIFO stays, the reader got the weights"
else
    fail "program --save-weights to a FIFO: $(ls -l fifo), $(stat -c %s fifo.out) bytes read"
fi
rm -f fifo

# /dev/stdout as a pipe: a link to /proc/self/fd/1 ("pipe:[N]"), written through.
ln -s /proc/self/fd/1 stdout
if ./prog --iters 1 -q --results stdout 2>err.txt | cat >piped.json && record piped.json && [ -L stdout ]; then
    ok "program --results to a pipe through a /proc/self/fd/1 link: the record came down the pipe"
else
    fail "program --results to a pipe: $(ls -l stdout), stderr:"
    cat err.txt
fi

# ---- links -----------------------------------------------------------------------
for what in "program:./prog --iters 1 -q --save-weights" \
            "interpret:$autotmc interpret m.net --iters 1 --save-weights"; do
    name=${what%%:*}
    read -r -a cmd <<<"${what#*:}"
    mkdir -p dir
    echo old >dir/target.st
    ln -sf dir/target.st link.st
    ln -sf dir/new.st dangling.st
    rm -f dir/new.st
    if run "$name --save-weights to a link" "${cmd[@]}" link.st &&
       run "$name --save-weights to a dangling link" "${cmd[@]}" dangling.st; then
        if [ -L link.st ] && [ "$(readlink link.st)" = dir/target.st ] && safetensors dir/target.st &&
           [ -L dangling.st ] && safetensors dir/new.st; then
            ok "$name --save-weights to a link: the link stays, its target holds the weights"
        else
            fail "$name --save-weights to a link: $(ls -l link.st dangling.st dir)"
        fi
    fi
    rm -rf dir link.st dangling.st
done
echo old >target.json
ln -s target.json link.json
run "program --results to a link" ./prog --iters 1 -q --results link.json &&
    if [ -L link.json ] && record target.json; then
        ok "program --results to a link: the link stays, its target holds the record"
    else
        fail "program --results to a link: $(ls -l link.json target.json)"
    fi

# ---- modes -----------------------------------------------------------------------
echo old >w.st && chmod 0640 w.st
echo old >r.json && chmod 0640 r.json
echo old >i.st && chmod 0604 i.st
rm -f new.st new.json
run "mode" ./prog --iters 1 -q --save-weights w.st --results r.json &&
    run "mode" ./prog --iters 1 -q --save-weights new.st --results new.json &&
    run "mode" "$autotmc" interpret m.net --iters 1 --save-weights i.st &&
    if [ "$(stat -c %a w.st) $(stat -c %a r.json) $(stat -c %a i.st)" = "640 640 604" ] &&
       [ "$(stat -c %a new.st) $(stat -c %a new.json)" = "644 644" ] && safetensors w.st && record r.json; then
        ok "an existing file keeps its mode (0640 stays 0640), a new one gets 0666 less the umask (0644)"
    else
        fail "modes: $(stat -c '%n %a' w.st r.json i.st new.st new.json | tr '\n' ' ')"
    fi
if ls -a | grep -q '^\..*\.[A-Za-z0-9]\{6\}$\|\.tmp'; then
    fail "temporary files left behind: $(ls -a | tr '\n' ' ')"
fi

# ---- paths checked before any work -----------------------------------------------
# check_early NAME PATTERN ARGS...: the program refuses at once (exit 1, the message, no step run)
check_early() {
    local name=$1 pat=$2
    shift 2
    local rc=0
    ./prog --iters 1 "$@" >out.txt 2>err.txt || rc=$?
    if [ $rc -eq 1 ] && grep -q -- "$pat" err.txt && ! grep -q "step 1" out.txt; then
        ok "$name: refused before training: $(head -1 err.txt)"
    else
        fail "$name: exit $rc; stdout: $(head -3 out.txt | tr '\n' ' '); stderr:"
        cat err.txt
    fi
}
check_early "--save-weights into a missing directory" \
    "prog: error: --save-weights: cannot write nodir/w.st: its directory does not exist" --save-weights nodir/w.st
check_early "--results into a missing directory" \
    "prog: error: --results: cannot write nodir/r.json: its directory does not exist" --results nodir/r.json
mkdir -p adir
check_early "--save-weights to a directory" \
    "prog: error: --save-weights: cannot write adir: it is a directory" --save-weights adir
echo data >afile
check_early "--results below a file" \
    "prog: error: --results: cannot write afile/r.json: afile is not a directory" --results afile/r.json
check_early "--save-weights ''" "prog: error: --save-weights: cannot write '': an empty file name" --save-weights ''
if ls nodir adir/* 2>/dev/null | grep -q .; then
    fail "a refused path left files behind"
fi

# the run says what it wrote, in one line at its end (and nothing with -q)
./prog --iters 1 --save-weights said.st --results said.json --plot said.png >said.out 2>&1
if [ "$(tail -1 said.out)" = "wrote said.st (weights), said.json (results), said.png (plot)" ]; then
    ok "the run says what it wrote: $(tail -1 said.out)"
else
    fail "the run's last line is not what it wrote: $(tail -1 said.out)"
fi
./prog --iters 1 -q --save-weights said.st >quiet.out 2>&1
if grep -q '^wrote' quiet.out; then
    fail "-q still says what it wrote"
fi

echo "$fails failed"
[ $fails -eq 0 ]
