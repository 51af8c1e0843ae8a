#!/usr/bin/env bash
# tests/lang/run-diagnostics.sh: exact diagnostics for bad programs.
#
# For every tests/lang/NAME.net: run `$AUTOTMC check NAME.net [ARGS]` from
# tests/lang (so messages carry the bare file name), where ARGS are the words
# of NAME.args if it exists.  The run must exit with status 1 and its stderr
# must equal NAME.expected byte for byte.  A .net without a .expected is an
# error, as is any other exit status (>= 128 is reported as a crash).
set -uo pipefail

srcdir=${TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
autotmc=${AUTOTMC:-${TOP_BUILDDIR:-$srcdir}/autotmc}
case $autotmc in /*) ;; *) autotmc=$(pwd)/$autotmc ;; esac

if [ ! -x "$autotmc" ]; then
    echo "run-diagnostics: $autotmc is not an executable" >&2
    exit 1
fi

cd "$srcdir/tests/lang" || exit 1

tmp=$(mktemp -d "${TEST_TMPDIR:-${TMPDIR:-/tmp}}/diag.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

shopt -s nullglob
files=(*.net)
shopt -u nullglob
if [ ${#files[@]} -eq 0 ]; then
    echo "run-diagnostics: no tests/lang/*.net files; skipping"
    exit 77
fi

nchecked=0
nbad=0
for f in "${files[@]}"; do
    base=${f%.net}
    if [ ! -f "$base.expected" ]; then
        echo "FAIL: $f: no $base.expected"
        nbad=$((nbad + 1))
        continue
    fi
    args=()
    if [ -f "$base.args" ]; then
        read -r -d '' -a args <"$base.args" || true
    fi
    rc=0
    "$autotmc" check "$f" "${args[@]}" >"$tmp/stdout" 2>"$tmp/stderr" || rc=$?
    nchecked=$((nchecked + 1))
    ok=yes
    if [ $rc -ge 128 ]; then
        echo "FAIL: $f: CRASH (exit status $rc, signal $((rc - 128)))"
        ok=no
    elif [ $rc -ne 1 ]; then
        echo "FAIL: $f: exit status $rc, expected 1"
        ok=no
    fi
    if ! cmp -s "$base.expected" "$tmp/stderr"; then
        echo "FAIL: $f: stderr differs from $base.expected:"
        diff -u --label "$base.expected" --label "$f (actual stderr)" "$base.expected" "$tmp/stderr" | sed 's/^/    /'
        ok=no
    fi
    if [ $ok = no ]; then
        nbad=$((nbad + 1))
    fi
done

echo "run-diagnostics: checked $nchecked files, $nbad failed"
[ $nbad -eq 0 ]
