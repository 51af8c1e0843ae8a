#!/usr/bin/env bash
# The compiler as a careless or hostile user drives it: wrong command
# lines (exit 2 before any work), output paths that cannot be written
# (exit 1 before any work), odd destinations (devices, links, modes kept),
# paths that would be code to gnuplot, machine-readable stdout, a damaged
# program cache, numbers no machine has (hw files, profiles), counts that
# overflow, a read-only and a damaged profile database, two profilers on
# one database.
set -uo pipefail
srcdir=${TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
builddir=${TOP_BUILDDIR:-$srcdir}
autotmc=${AUTOTMC:-$builddir/autotmc}
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/bad.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
export XDG_CACHE_HOME=$work/cache
mlp=$srcdir/examples/mlp.net
db=$work/p.db
. "$srcdir/tests/checks.sh"

# expect STATUS MESSAGE CMD...: CMD exits with STATUS, its stderr holds MESSAGE
expect() {
    local status=$1 want=$2; shift 2
    "$@" >out.txt 2>err.txt
    local rc=$?
    if [ $rc -eq "$status" ] && { [ -z "$want" ] || grep -qF -- "$want" err.txt; }; then
        ok "$* -> $rc: $(head -1 err.txt)"
    else
        fail "$* gave status $rc (want $status, '$want'): $(head -2 err.txt)"
    fi
}

# ---- the command line: one rule, exit 2, nothing done ------------------------
for cmd in schedule build run; do
    o=(); [ $cmd = build ] && o=(-o "$work/prog")
    expect 2 "--threads expects a whole number from 1 to 4096" "$autotmc" $cmd "$mlp" "${o[@]}" --threads 0
    expect 2 "--threads expects a whole number from 1 to 4096" "$autotmc" $cmd "$mlp" "${o[@]}" --threads -3
    expect 2 "--threads expects a whole number from 1 to 4096" "$autotmc" $cmd "$mlp" "${o[@]}" --threads abc
    expect 2 "--threads expects a whole number from 1 to 4096" "$autotmc" $cmd "$mlp" "${o[@]}" --threads 10000
done
expect 2 "--limit abc: expected a size" "$autotmc" schedule "$mlp" --limit abc
expect 2 "--limit 0x1p62: expected a size" "$autotmc" schedule "$mlp" --limit 0x1p62
expect 2 "--limit 99999999999999999999: expected a size" "$autotmc" schedule "$mlp" --limit 99999999999999999999
expect 2 "--ratio 4: expected SLOW:FAST" "$autotmc" schedule "$mlp" --ratio 4
expect 2 "unknown optimizer 'fastest'" "$autotmc" schedule "$mlp" --optimizer fastest --ratio 4:1
expect 2 "unknown solver 'gurobi'" "$autotmc" schedule "$mlp" --ratio 4:1 --solver gurobi
expect 2 "--solver-time -1: expected a positive number of seconds" "$autotmc" schedule "$mlp" --ratio 4:1 --solver-time -1
expect 2 "unknown backend 'tpu'" "$autotmc" schedule "$mlp" --ratio 4:1 --backend tpu
expect 2 "--iters expects a whole number" "$autotmc" interpret "$mlp" --iters x
expect 2 "--seed expects a whole number" "$autotmc" interpret "$mlp" --seed -1
expect 2 "-D expects NAME=VALUE" "$autotmc" check "$mlp" -D batch
expect 2 "unknown option '--optim' (did you mean --optimizer O?)" "$autotmc" schedule "$mlp" --optim sync
expect 2 "unknown option '--optimiser' (did you mean --optimizer?)" "$autotmc" schedule "$mlp" --optimiser sync
expect 2 "not an optimizer a sweep varies (auto, recompute, static, sync, async, first-touch; all-slow and all-fast always run)" "$autotmc" sweep "$mlp" --optimizers checkpoint
expect 2 "optimizer 'all-fast' takes no fast-tier size" "$autotmc" build "$mlp" -o "$work/prog" --optimizer all-fast --limit 1GiB
expect 2 "optimizer 'all-slow' takes no fast-tier size" "$autotmc" schedule "$mlp" --optimizer all-slow --ratio 1:1
expect 2 "needs the fast tier's size" "$autotmc" schedule "$mlp" --optimizer sync
expect 1 "no hw file 'no-such-machine'" "$autotmc" schedule "$mlp" --ratio 4:1 --hw no-such-machine
# a well-formed limit as large as int64 is taken
expect 0 "" "$autotmc" schedule "$mlp" -D batch=2 --ratio 4:1 --hw optane-6dimm --profile-db "$db" --summary
expect 0 "" "$autotmc" schedule "$mlp" -D batch=2 --limit 9223372036854775807 --hw optane-6dimm --profile-db "$db" --summary
# run checks its options before building anything
expect 2 "--threads expects" "$autotmc" run "$mlp" --threads 0
if grep -q "^program:" out.txt; then fail "run --threads 0 built a program"; fi

# ---- output paths: checked before any work -------------------------------------
expect 1 "cannot write $work/missing/w.st: its directory does not exist" \
    "$autotmc" interpret "$mlp" -D batch=2 --iters 1 --save-weights "$work/missing/w.st"
grep -q "^step" out.txt && fail "interpret trained before refusing its output path"
expect 1 "cannot write $work/missing/r.json" "$autotmc" sweep "$mlp" -D batch=2 -o "$work/missing/r.json"
grep -q "\[1" out.txt && fail "sweep ran before refusing its output path"
expect 1 "cannot write $work/missing/p.png" "$autotmc" schedule "$mlp" -D batch=2 --ratio 4:1 \
    --profile-db "$work/never.db" --plot "$work/missing/p.png"
[ -e "$work/never.db" ] && fail "schedule profiled before refusing its plot path"
expect 1 "it is a directory" "$autotmc" build "$mlp" -D batch=2 -o "$work"
expect 1 "cannot write $work/missing/t.json" "$autotmc" schedule "$mlp" --ratio 4:1 --trace "$work/missing/t.json"

# ---- odd destinations ----------------------------------------------------------
if [ "$(id -u)" -eq 0 ]; then
    "$autotmc" build "$mlp" -D batch=2 -o /dev/null >/dev/null 2>&1
    [ -c /dev/null ] && ok "build -o /dev/null leaves the device" || fail "/dev/null is no longer a device"
fi
: >keep && chmod 0750 keep && ln -s keep link
"$autotmc" build "$mlp" -D batch=2 -o link >/dev/null 2>&1
if [ -L link ] && [ "$(stat -c %a keep)" = 750 ] && [ -s keep ] && ./keep --help >/dev/null 2>&1; then
    ok "build through a link writes its target, keeps the link and the mode"
else
    fail "build -o link: link $(stat -c %F link), target mode $(stat -c %a keep)"
fi

# ---- plots: the path is never code -------------------------------------------
crafted="a';system('touch pwned');'.png"
if "$autotmc" schedule "$mlp" -D batch=2 --ratio 4:1 --hw optane-6dimm --profile-db "$db" --summary \
        --plot "$crafted" >out.txt 2>err.txt && [ -s "$crafted" ] && [ ! -e pwned ]; then
    ok "a plot path with quotes is a file name, not code"
else
    fail "crafted plot path: $(ls) $(head -2 err.txt)"
fi
"$autotmc" schedule "$mlp" -D batch=2 --ratio 4:1 --hw optane-6dimm --profile-db "$db" --summary \
    --plot /proc/version.png >out.txt 2>err.txt
if LC_ALL=C grep -q "PNG" out.txt; then fail "an unwritable plot path put the image on stdout"; else ok "no image on stdout"; fi

# ---- stdout is the command's own -----------------------------------------------
"$autotmc" schedule "$mlp" -D batch=2 --ratio 4:1 --json --profile-db "$work/fresh.db" >out.json 2>err.txt
if python3 -c "import json,sys; json.load(open('out.json'))" 2>/dev/null && grep -q "profile" err.txt; then
    ok "schedule --json on an empty database: JSON alone on stdout, the profile's report on stderr"
else
    fail "schedule --json stdout is not JSON: $(head -c 200 out.json)"
fi
"$autotmc" schedule "$mlp" -D batch=2 --ratio 4:1 --summary --profile-db "$work/fresh.db" >out.txt 2>&1
n=$(grep -c "predicted step time" out.txt)
[ "$n" = 1 ] && ok "--summary prints the summary once" || fail "--summary printed the predicted time $n times"

# ---- the program cache ---------------------------------------------------------
"$autotmc" run "$mlp" -D batch=2 --iters 1 --profile-db "$work/fresh.db" >run1.txt 2>&1
prog=$(sed -n 's/^program: //p' run1.txt)
if [ -x "$prog" ] && [ -s "$prog.sum" ]; then
    head -c 4096 "$prog" >"$prog.cut" && cat "$prog.cut" >"$prog"        # truncated
    if "$autotmc" run "$mlp" -D batch=2 --iters 1 --profile-db "$work/fresh.db" >run2.txt 2>&1 &&
            grep -q "^step 1" run2.txt; then
        ok "a truncated cached program is rebuilt"
    else
        fail "truncated cache: $(tail -2 run2.txt)"
    fi
    cp /bin/true "$prog"                                                   # a stale binary
    if "$autotmc" run "$mlp" -D batch=2 --iters 1 --profile-db "$work/fresh.db" >run3.txt 2>&1 &&
            grep -q "^step 1" run3.txt; then
        ok "a foreign binary in the cache is rebuilt"
    else
        fail "stale cache: $(tail -2 run3.txt)"
    fi
else
    fail "no cached program with a checksum: $(tail -2 run1.txt)"
fi

# ---- numbers no machine has ----------------------------------------------------
for bw in 1e-300 1e-15 1e300; do
    sed "0,/read_bandwidth = .*/s//read_bandwidth = $bw GB\/s/" "$srcdir/hw/optane-6dimm.hw" >odd.hw
    expect 1 "odd.hw:" "$autotmc" schedule "$mlp" -D batch=2 --ratio 4:1 --hw odd.hw --profile-db "$db"
    grep -q "outside what autotmc models" err.txt || fail "hw $bw GB/s: no range in the message"
done
for t in 1e20 -1; do
    cp "$work/fresh.db" odd.db
    python3 - odd.db "$t" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("update measurements set seconds = ? where rowid = (select min(rowid) from measurements)", (float(sys.argv[2]),))
c.commit()
PY
    expect 1 "is damaged" "$autotmc" schedule "$mlp" -D batch=2 --ratio 4:1 --profile-db odd.db
done
# a kernel's scratch near 2^62 (sums of it would overflow): unknown, so measured again
cp "$work/fresh.db" odd.db
python3 - odd.db <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("update kernels set scratch = ? where rowid = (select min(rowid) from kernels)", (1 << 62,))
c.commit()
PY
expect 0 "" "$autotmc" schedule "$mlp" -D batch=2 --ratio 4:1 --profile-db odd.db --summary
big=$(python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("select max(scratch) from kernels").fetchone()[0])' odd.db)
[ "$big" -lt $((1 << 50)) ] && ok "a scratch of 2^62 in the database is measured again ($big)" ||
    fail "a scratch of 2^62 was kept: $big"
expect 0 "" "$autotmc" check "$mlp" -D batch=1099511627776
if grep -q "FLOPs: -\|FLOPs -" out.txt || ! grep -q "too many to count" out.txt; then
    fail "FLOPs of a batch of 2^40: $(grep FLOP out.txt)"
else
    ok "FLOPs beyond 64 bits are said to be so"
fi

# ---- the profile database --------------------------------------------------------
head -c 4096 /dev/urandom >junk.db
expect 1 "junk.db is damaged or not an SQLite database" "$autotmc" schedule "$mlp" -D batch=2 --ratio 4:1 --profile-db junk.db
if [ "$(id -u)" -eq 0 ] && command -v runuser >/dev/null; then
    mkdir ro && cp "$work/fresh.db" ro/p.db && chmod 444 ro/p.db && chmod 555 ro && chmod 755 "$work"
    if runuser -u nobody -- "$autotmc" schedule "$mlp" -D batch=2 --ratio 4:1 --summary --profile-db "$work/ro/p.db" \
            >out.txt 2>err.txt; then
        ok "a read-only database serves a placement"
    else
        fail "read-only database: $(head -2 err.txt)"
    fi
fi
"$autotmc" profile "$srcdir/examples/test_vgg.net" -D batch=2 --profile-db two.db --quiet &
first=$!
sleep 0.5
"$autotmc" profile "$srcdir/examples/test_vgg.net" -D batch=2 --profile-db two.db >second.txt 2>&1
wait $first
if grep -q "another process is profiling" second.txt && grep -q "nothing to measure" second.txt; then
    ok "a second profiler waits for the first and measures nothing twice"
elif grep -q "nothing to measure" second.txt; then
    ok "a second profiler measured nothing twice (the first had finished)"
else
    fail "two profilers: $(head -3 second.txt)"
fi

echo "$fails failed"
[ $fails -eq 0 ]
