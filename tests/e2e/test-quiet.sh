#!/usr/bin/env bash
# What a command prints of a profile it measures on the way (docs/cli.md):
# off a terminal one line (kernels, time, database, whether every kernel ran
# as fast with its arguments slow); --verbose every kernel and the moves'
# bandwidths; -q nothing at all, and `run -q` no plan and no losses. A
# placement that moves nothing because the tiers measure alike says why.
set -uo pipefail
srcdir=${TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
builddir=${TOP_BUILDDIR:-$srcdir}
autotmc=${AUTOTMC:-$builddir/autotmc}
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/quiet.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
fails=0
ok() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
cat >"$work/m.net" <<'NET'
model m(batch = 4)
network = chain { dense(16 => 32, relu) dense(32 => 32, relu) dense(32 => 4) }
input x : f32[batch, 16]
labels y : onehot[batch, 4]
loss = crossentropy(network(x), y)
NET

# brief: one profile line on stderr, nothing per kernel
"$autotmc" schedule "$work/m.net" --optimizer sync --ratio 1:1 --profile-db "$work/brief.db" --summary \
    >"$work/brief.out" 2>"$work/brief.err" || fail "brief: exit $?"
lines=$(grep -c '^profile' "$work/brief.err")
if [ "$lines" = 1 ] && grep -q "^profile: [0-9]* kernels and the moves measured in .*, into $work/brief.db" \
        "$work/brief.err"; then
    ok "one profile line: $(head -c 160 "$work/brief.err")"
else
    fail "brief: $lines profile lines: $(head -3 "$work/brief.err")"
fi
# verbose: a line per kernel and the bandwidth table
"$autotmc" schedule "$work/m.net" --optimizer sync --ratio 1:1 --profile-db "$work/verbose.db" --summary --verbose \
    >"$work/verbose.out" 2>"$work/verbose.err" || fail "verbose: exit $?"
if grep -q '^profile: \[1/' "$work/verbose.err" && grep -q '^move bandwidth' "$work/verbose.err"; then
    ok "--verbose: $(grep -c '^profile: \[' "$work/verbose.err") kernel lines and the bandwidths"
else
    fail "--verbose: $(head -3 "$work/verbose.err")"
fi
# quiet: nothing on stderr from the profile, nothing at all from run -q
"$autotmc" run "$work/m.net" --optimizer sync --ratio 1:1 --profile-db "$work/quiet.db" --iters 2 -q \
    >"$work/quiet.out" 2>"$work/quiet.err" || fail "run -q: exit $?"
if [ ! -s "$work/quiet.out" ] && [ ! -s "$work/quiet.err" ]; then
    ok "run -q prints nothing"
else
    fail "run -q printed: $(head -3 "$work/quiet.out" "$work/quiet.err")"
fi
# a placement with no move where the tiers measure alike says why (or, where this machine's slow tier
# is slower, moves or keeps tensors slow for a reason the times give: then the line must not appear)
if grep -q '^placement: sync; 0 moves' "$work/brief.out"; then
    if grep -q "every kernel as fast" "$work/brief.err" && ! grep -q '^why no moves: ' "$work/brief.out"; then
        fail "the tiers measured alike and the plan has no move, but does not say why"
    else
        ok "the plan says why it has no move: $(grep '^why no moves' "$work/brief.out" | head -c 100)"
    fi
fi
echo "$fails failed"
[ $fails -eq 0 ]
