#!/usr/bin/env bash
# Placements under a limit, end to end: for every optimizer and several
# limits, the program built for test_vgg (times modeled for an Optane
# machine, so that the slow tier is worth avoiding and moves are made) keeps
# its fast pool within the limit (the runtime refuses a pool over the limit
# it was built for) and trains bitwise like the all-fast program: the same
# losses and the same final weights. Then checkpoint_sequential with two
# segments, whose recomputes (chains with scratch values) must train
# bitwise the same too, and appear alike in every report: the table, the
# JSON, the trace and the program's results record (schedule-reports.py).
#
# Every byte counted: in each program's results record, the kernels'
# scratch the runtime allocated (reordered arguments, oneDNN's scratchpad)
# is what the compiler counted from the profile, and the fast pool plus it
# is within the limit. Then the runtime's own check: with a profile that
# claims no scratch, sync at exactly the all-fast pool's size keeps every
# tensor fast, and the program must refuse to run (pool + scratch over the
# limit); with the true profile, the same limit leaves room for the scratch.
# And with the solvers' logs on (AUTOTM_SOLVER_LOG=1), schedule --json still
# writes nothing but JSON on stdout, and the log names the steps where the
# fast tier is full.
set -uo pipefail
srcdir=${TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
builddir=${TOP_BUILDDIR:-$srcdir}
autotmc=${AUTOTMC:-$builddir/autotmc}
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/place.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
model=$srcdir/examples/test_vgg.net
hw=$srcdir/hw/optane-6dimm.hw
fails=0
losses() { sed -n 's/^step \([0-9]*\): loss \([^ ]*\).*/\2/p' "$1"; }
# RECORD: the runtime's scratch is the compiler's, and pool + scratch <= limit
scratch_counted() {
    python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
pool, scratch, limit = r["dram_alloc_size"], r["kernel_scratch_size"], r["dram_limit"]
planned = r.get("workspace_bytes", 0)
if scratch != planned:
    sys.exit("the runtime allocated %d bytes of kernel scratch, the compiler counted %d" % (scratch, planned))
if limit > 0 and pool + scratch > limit:
    sys.exit("fast pool %d + scratch %d > limit %d" % (pool, scratch, limit))
print("pool %d + scratch %d <= limit %d" % (pool, scratch, limit))' "$1"
}

"$autotmc" build "$model" -o "$work/fast" >"$work/fast.build" 2>&1 &&
    "$work/fast" --iters 3 --slow-dir "$work" --save-weights "$work/fast.st" >"$work/fast.out" 2>&1 ||
    { echo "FAIL: the all-fast program"; cat "$work/fast.build" "$work/fast.out"; exit 1; }

# all-slow takes no fast-tier size: it runs once, the others at each ratio
for opt in static sync async first-touch all-slow; do
    ratios="1:1 4:1 8:1"
    [ $opt = all-slow ] && ratios=none
    for ratio in $ratios; do
        name=$opt-${ratio/:/-}
        size=(--ratio "$ratio")
        [ "$ratio" = none ] && size=()
        if ! "$autotmc" build "$model" --optimizer $opt "${size[@]}" --hw "$hw" --solver-time 20 \
                -o "$work/$name" >"$work/$name.build" 2>&1; then
            echo "FAIL: $name: build"; tail -5 "$work/$name.build"; fails=$((fails + 1)); continue
        fi
        if ! "$work/$name" --iters 3 --slow-dir "$work" --save-weights "$work/$name.st" \
                --results "$work/$name.json" >"$work/$name.out" 2>&1; then
            echo "FAIL: $name: run"; tail -5 "$work/$name.out"; fails=$((fails + 1)); continue
        fi
        if [ "$(losses "$work/fast.out")" != "$(losses "$work/$name.out")" ] ||
           ! cmp -s "$work/fast.st" "$work/$name.st"; then
            echo "FAIL: $name: training differs from all-fast"
            paste <(losses "$work/fast.out") <(losses "$work/$name.out"); fails=$((fails + 1)); continue
        fi
        if ! counted=$(scratch_counted "$work/$name.json" 2>&1); then
            echo "FAIL: $name: $counted"; fails=$((fails + 1)); continue
        fi
        summary=$(grep -E '^(placement|fast pool|limit):' "$work/$name.build" | tr '\n' ' ')
        echo "ok: $name: bitwise equal to all-fast; $counted; $summary"
    done
done
name=checkpoint-2
# unfused: fused, test_vgg's recomputes are single conv2d+relu kernels, without the scratch values
ck=(--optimizer checkpoint --segments 2 --hw "$hw" --no-fuse)
if ! "$autotmc" build "$model" "${ck[@]}" -o "$work/$name" >"$work/$name.build" 2>&1; then
    echo "FAIL: $name: build"; tail -5 "$work/$name.build"; fails=$((fails + 1))
elif ! "$work/$name" --iters 3 --slow-dir "$work" --save-weights "$work/$name.st" \
        --results "$work/$name.json" >"$work/$name.out" 2>&1; then
    echo "FAIL: $name: run"; tail -5 "$work/$name.out"; fails=$((fails + 1))
elif [ "$(losses "$work/fast.out")" != "$(losses "$work/$name.out")" ] || ! cmp -s "$work/fast.st" "$work/$name.st"; then
    echo "FAIL: $name: training differs from all-fast"; fails=$((fails + 1))
elif ! "$autotmc" schedule "$model" "${ck[@]}" --json --trace "$work/$name.trace" >"$work/$name.schedule.json" \
        2>"$work/$name.err" || ! "$autotmc" schedule "$model" "${ck[@]}" >"$work/$name.table" 2>"$work/$name.err"; then
    echo "FAIL: $name: schedule"; tail -5 "$work/$name.err"; fails=$((fails + 1))
elif ! /usr/bin/env python3 "$srcdir/tests/e2e/schedule-reports.py" "$work/$name.schedule.json" "$work/$name.trace" \
        --table "$work/$name.table" --same --record "$work/$name.json" --segments 2 --expect-recomputes; then
    echo "FAIL: $name: the reports disagree on the recomputes"; fails=$((fails + 1))
else
    echo "ok: $name: bitwise equal to all-fast; $(grep -E '^recomputation:' "$work/$name.build")"
fi

# the solvers print to stdout (CBC's log, its cut generators' remarks): --json's stdout stays pure JSON
for solver in cbc lp_solve; do
    if ! AUTOTM_SOLVER_LOG=1 "$autotmc" schedule "$model" --optimizer sync --ratio 1:1 --hw "$hw" --solver $solver \
            --json >"$work/log-$solver.json" 2>"$work/log-$solver.err"; then
        echo "FAIL: $solver with its log: schedule"; tail -3 "$work/log-$solver.err"; fails=$((fails + 1))
    elif ! python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$work/log-$solver.json" 2>/dev/null; then
        echo "FAIL: $solver's log mixed into --json's output:"; head -3 "$work/log-$solver.json"; fails=$((fails + 1))
    elif ! grep -qiE 'CBC MILP Solver|lp_solve version' "$work/log-$solver.err"; then
        echo "FAIL: $solver logged nothing to stderr: the check tests nothing"; fails=$((fails + 1))
    elif ! grep -qE '^sync: the fast tier is within 1% of its limit at [0-9]+ of [0-9]+ steps: [0-9]' \
            "$work/log-$solver.err"; then
        echo "FAIL: $solver's log does not say where the capacity binds"; fails=$((fails + 1))
    else
        echo "ok: $solver's log ($(wc -l <"$work/log-$solver.err") lines) on stderr, stdout pure JSON"
    fi
done

# the runtime refuses a pool that leaves no room for the scratch it finds
pool=$("$autotmc" schedule "$model" --json 2>"$work/pool.err" | python3 -c 'import json, sys; print(json.load(sys.stdin)["fast_pool_bytes"])')
python3 -c '
import sqlite3, sys
src, dst = sqlite3.connect(sys.argv[1]), sqlite3.connect(sys.argv[2])
src.backup(dst)
dst.execute("UPDATE kernels SET scratch = 0")
dst.commit()' "$XDG_CACHE_HOME/autotm/profiles.db" "$work/noscratch.db"
at=(--optimizer sync --limit "$pool" --hw "$hw" --solver-time 20)
if [ -z "$pool" ] || ! "$autotmc" build "$model" "${at[@]}" --profile-db "$work/noscratch.db" -o "$work/noscratch" \
        >"$work/noscratch.build" 2>&1; then
    echo "FAIL: no-scratch profile: build at the all-fast pool ($pool bytes)"; tail -5 "$work/pool.err" "$work/noscratch.build"
    fails=$((fails + 1))
elif "$work/noscratch" --iters 1 --slow-dir "$work" >"$work/noscratch.out" 2>&1 ||
        ! grep -q "and the kernels' scratch (.*) exceed the fast-tier limit" "$work/noscratch.out"; then
    echo "FAIL: a program without room for its kernels' scratch ran, or failed otherwise:"; tail -5 "$work/noscratch.out"
    fails=$((fails + 1))
elif ! "$autotmc" build "$model" "${at[@]}" -o "$work/scratch" >"$work/scratch.build" 2>&1 ||
        ! "$work/scratch" --iters 1 --slow-dir "$work" --results "$work/scratch.json" >"$work/scratch.out" 2>&1 ||
        ! counted=$(scratch_counted "$work/scratch.json" 2>&1); then
    echo "FAIL: sync at the all-fast pool with the true profile: ${counted:-}"; tail -5 "$work/scratch.build" "$work/scratch.out"
    fails=$((fails + 1))
else
    echo "ok: at the all-fast pool ($pool bytes) the runtime refuses a plan that counted no scratch" \
        "($(grep -o "error: .*" "$work/noscratch.out" | cut -c1-90)...); with the true profile: $counted"
fi
echo "$fails failed"
[ $fails -eq 0 ]
