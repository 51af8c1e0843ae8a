#!/usr/bin/env bash
# tests/lang/run-valid.sh: expected output of the IR printer for valid programs.
#
# For every tests/lang/valid/NAME.net: run `$AUTOTMC graph NAME.net [ARGS]`
# from tests/lang/valid, where ARGS are the words of NAME.args if it exists.
# The run must exit 0, print nothing on stderr, and its stdout must equal
# NAME.expected byte for byte.
set -uo pipefail

srcdir=${TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
autotmc=${AUTOTMC:-${TOP_BUILDDIR:-$srcdir}/autotmc}
case $autotmc in /*) ;; *) autotmc=$(pwd)/$autotmc ;; esac
[ -x "$autotmc" ] || { echo "run-valid: $autotmc is not an executable" >&2; exit 1; }
cd "$srcdir/tests/lang/valid" || exit 1
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

nchecked=0
nbad=0
for f in *.net; do
    base=${f%.net}
    if [ ! -f "$base.expected" ]; then
        echo "FAIL: $f: no $base.expected"
        nbad=$((nbad + 1))
        continue
    fi
    args=()
    [ -f "$base.args" ] && read -r -d '' -a args <"$base.args"
    rc=0
    "$autotmc" graph "$f" "${args[@]}" >"$tmp/out" 2>"$tmp/err" || rc=$?
    nchecked=$((nchecked + 1))
    if [ $rc -ne 0 ] || [ -s "$tmp/err" ] || ! cmp -s "$tmp/out" "$base.expected"; then
        echo "FAIL: $f (exit $rc)"
        cat "$tmp/err"
        diff -u "$base.expected" "$tmp/out" | head -40
        nbad=$((nbad + 1))
    fi
done
echo "run-valid: $nchecked programs, $nbad failed"
[ $nbad -eq 0 ]
