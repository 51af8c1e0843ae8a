#!/usr/bin/env bash
# The status line of a placement (compiler/place/ticker.h): on a terminal (a
# pseudo-terminal made by script(1)) a placement that takes seconds draws
# "placing (auto) [bar] N/M s  note" on standard error and clears it at
# the end, while its JSON on standard output stays whole; off a terminal,
# or with AUTOTM_NO_PROGRESS set, nothing is drawn.
set -uo pipefail
srcdir=${TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
builddir=${TOP_BUILDDIR:-$srcdir}
autotmc=${AUTOTMC:-$builddir/autotmc}
command -v script >/dev/null || { echo "SKIP: no script(1) to make a terminal"; exit 77; }
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/progress.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# auto at a quarter of ResNet-50's peak searches for its whole time (3 s)
cmd="'$autotmc' schedule '$srcdir/examples/resnet50.net' -D batch=32 --backend gpu --hw h100-pcie5 --ratio 3:1 --solver-time 3 --json"

script -qec "$cmd >'$work/tty.json'" /dev/null </dev/null >"$work/tty.out" 2>&1 || fail "on a terminal: exit $?"
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$work/tty.json" || fail "on a terminal: the JSON is not whole"
grep -aq 'placing (auto) \[[#-]*\] [0-9]*/3 s  ' "$work/tty.out" || fail "on a terminal: no status line: $(head -c 300 "$work/tty.out" | cat -v)"
# (which note a loaded machine first draws depends on its timing: any of them)
grep -aqE 'start: |search: |repairing the packing|the whole program from|program \([0-9]+ rows\)' "$work/tty.out" ||
    fail "on a terminal: the status line has no note: $(tail -c 300 "$work/tty.out" | cat -v)"
# the line is cleared at the end: nothing is printed after the last clear
[ "$(tail -c 4 "$work/tty.out" | od -An -tx1 | tr -d ' ')" = 0d1b5b4b ] ||
    fail "on a terminal: the status line is not cleared at the end: $(tail -c 80 "$work/tty.out" | cat -v)"

script -qec "AUTOTM_NO_PROGRESS=1 $cmd >'$work/quiet.json'" /dev/null </dev/null >"$work/quiet.out" 2>&1 ||
    fail "AUTOTM_NO_PROGRESS: exit $?"
grep -aq 'placing (' "$work/quiet.out" && fail "AUTOTM_NO_PROGRESS: a status line was drawn"

eval "$cmd" >"$work/plain.json" 2>"$work/plain.err" || fail "off a terminal: exit $?"
grep -aq 'placing (' "$work/plain.err" && fail "off a terminal: a status line was drawn: $(head -c 200 "$work/plain.err")"
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$work/plain.json" || fail "off a terminal: the JSON is not whole"

[ $fails = 0 ] && echo "progress: drawn on a terminal, cleared at the end, absent off one and with AUTOTM_NO_PROGRESS"
exit $((fails > 0))
