#!/usr/bin/env bash
# `autotmc profile` end to end (docs/profiling.md):
#   - an interrupted profile (kill -9 at a known measurement, and at a
#     random moment from outside) keeps what it measured; the next profile
#     measures only the rest, leaves the stored rows untouched and ends
#     with every signature complete;
#   - a second profile of a fully profiled model measures nothing and takes
#     less than 5 s (ResNet-50);
#   - random bytes and a foreign SQLite database are clear errors (exit 1,
#     the path and what is wrong), never a crash, and the foreign file is
#     left as it was;
#   - hw files: the shipped ones parse; malformed ones are file:line errors;
#   - bad options are usage errors (exit 2).
# Runs `autotmc profile` when autotmc has the command, else the same code
# through autotmc profile.
set -uo pipefail
srcdir=${TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
builddir=${TOP_BUILDDIR:-$srcdir}
autotmc=${AUTOTMC:-$builddir/autotmc}
helper=$builddir/tests/unit/test-profile
export AUTOTM_STDLIB=${AUTOTM_STDLIB:-$srcdir/stdlib}
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/profile.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
export XDG_CACHE_HOME=$work/cache   # never the user's database
mkdir -p slow
passed=0 failed=0

ok()   { echo "ok - $*"; passed=$((passed + 1)); }
fail() { echo "not ok - $*"; failed=$((failed + 1)); }

if [ ! -x "$helper" ]; then
    echo "test-profile.sh: $helper is not built (make check builds it)"
    exit 77
fi
profile() { "$autotmc" profile "$@"; }

# SQL on a database: the sqlite3 shell, or Python's sqlite3 module.
q() {
    if command -v sqlite3 >/dev/null 2>&1; then
        sqlite3 -batch -noheader -separator '|' "$1" "$2"
    else
        python3 - "$1" "$2" <<'PY'
import sqlite3, sys
for row in sqlite3.connect(sys.argv[1]).execute(sys.argv[2]):
    print("|".join("" if v is None else str(v) for v in row))
PY
    fi
}

cat >tiny.net <<'NET'
model tiny(batch = 4)
network = chain {
    conv(3x3, 3 => 8, pad = 1) batchnorm relu
    conv(3x3, 8 => 8, pad = 1) batchnorm relu
    conv(3x3, 8 => 8, pad = 1) batchnorm relu
    flatten dense(8 * 8 * 8 => 10)
}
input x : f32[batch, 3, 8, 8]
labels y : onehot[batch, 10]
loss = crossentropy(network(x), y)
optimizer = sgd(lr = 0.1, momentum = 0.9)
NET
opts=(--threads 1 --runs 3 --slow-dir "$work/slow")

# ---- interrupted at a known point (the test hook raises SIGKILL) ----------
db=resume.db
AUTOTM_PROFILE_KILL_AFTER=9 profile tiny.net "${opts[@]}" --profile-db $db >out1.txt 2>err1.txt
rc=$?
n1=$(q $db "select count(*) from measurements")
if [ $rc -eq 137 ] && [ "$n1" = 9 ]; then
    ok "killed by SIGKILL after 9 measurements: $n1 rows kept"
else
    fail "kill -9 at measurement 9: exit $rc, $n1 rows"; cat err1.txt
fi
q $db "select signature, config, seconds, measured_at from measurements order by 1, 2" >before.txt
profile tiny.net "${opts[@]}" --profile-db $db >out2.txt 2>err2.txt
rc=$?
q $db "select signature, config, seconds, measured_at from measurements order by 1, 2" >after.txt
if [ $rc -eq 0 ] && [ "$(grep -cFx -f before.txt after.txt)" = "$(wc -l <before.txt)" ]; then
    ok "resumed: the $(wc -l <before.txt) rows measured before the kill are unchanged"
else
    fail "resume: exit $rc"; cat err2.txt; diff before.txt after.txt | head
fi
nsig=$(sed -n 's/^profile: \([0-9]*\) kernels of .*/\1/p' out1.txt)
complete=$(q $db "select count(*) from kernels where complete = 1")
moves=$(q $db "select count(*) from moves")
if [ -n "$nsig" ] && [ "$complete" = "$nsig" ] && [ "$moves" = 28 ]; then
    ok "every signature is complete ($complete of $nsig) and the 28 moves are stored"
else
    fail "after resuming: $complete complete kernels of ${nsig:-?}, $moves moves"
fi
measured_now=$(sed -n 's/.*: \([0-9]*\) measurements in .*/\1/p' out2.txt)
total=$(( $(q $db "select count(*) from measurements") + moves ))
if [ -n "$measured_now" ] && [ $((measured_now + 9)) = "$total" ]; then
    ok "the resumed profile took the $measured_now missing measurements, not the 9 stored ones"
else
    fail "the resumed profile measured ${measured_now:-?}, the database has $total"
fi
profile tiny.net "${opts[@]}" --profile-db $db >out3.txt 2>&1
if grep -q "nothing to measure" out3.txt; then
    ok "a third profile measures nothing"
else
    fail "a third profile:"; cat out3.txt
fi

# ---- killed from outside at a random moment ---------------------------------
# autotmc itself runs in the background, not the shell function (whose
# subshell would take the kill while autotmc went on writing): $! is the
# pid of the process that writes the database, checked before the kill.
db=external.db
"$autotmc" profile tiny.net --threads 1 --runs 50 --slow-dir "$work/slow" --profile-db $db >ext.txt 2>&1 &
pid=$!
for _ in $(seq 1 1200); do
    n=$(q $db "select count(*) from measurements" 2>/dev/null || echo 0)
    [ "${n:-0}" -ge 5 ] && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.05
done
victim=$(ps -o comm= -p $pid 2>/dev/null)
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null   # returns once the kill took effect and the process is gone
rc=$?
if [ "$victim" = "$(basename "$autotmc")" ] && [ $rc -eq 137 ] && ! kill -0 $pid 2>/dev/null; then
    ok "kill -9 took autotmc itself (pid $pid) while it was profiling"
else
    fail "kill -9 of pid $pid ('$victim'): exit $rc, expected 137 (killed while profiling)"; cat ext.txt
fi
kept=$(q $db "select count(*) from measurements")
q $db "select signature, config, seconds, measured_at from measurements order by 1, 2" >ext-before.txt
profile tiny.net "${opts[@]}" --profile-db $db >ext2.txt 2>&1
rc2=$?
q $db "select signature, config, seconds, measured_at from measurements order by 1, 2" >ext-after.txt
complete=$(q $db "select count(*) from kernels where complete = 1")
if [ $rc2 -eq 0 ] && [ "${kept:-0}" -ge 1 ] && [ "$complete" = "$nsig" ] &&
    grep -q "($kept\|already in the database" ext2.txt &&
    [ "$(grep -cFx -f ext-before.txt ext-after.txt)" = "$(wc -l <ext-before.txt)" ]; then
    ok "$kept measurements stored before the kill are kept unchanged; the next profile completes all $complete"
else
    fail "after the external kill -9: ${kept:-?} kept, then exit $rc2 with $complete complete"; cat ext2.txt
    diff ext-before.txt ext-after.txt | head
fi
integrity=$(q $db "pragma integrity_check")
[ "$integrity" = ok ] && ok "the database is intact after kill -9" || fail "integrity: $integrity"

# ---- a fully profiled model: no measurement, under 5 s ----------------------
db=resnet.db
rn=(-D batch=2 -D size=64 --runs 3)
if profile "$srcdir/examples/resnet50.net" "${rn[@]}" --profile-db $db >rn1.txt 2>rn1.err; then
    start=$(date +%s%N)
    profile "$srcdir/examples/resnet50.net" "${rn[@]}" --profile-db $db >rn2.txt 2>&1
    rc=$?
    ms=$(( ($(date +%s%N) - start) / 1000000 ))
    if [ $rc -eq 0 ] && grep -q "nothing to measure" rn2.txt && [ $ms -lt 5000 ]; then
        ok "ResNet-50 profiled again: nothing to measure, $ms ms"
    else
        fail "ResNet-50 second profile: exit $rc in $ms ms"; cat rn2.txt
    fi
else
    fail "ResNet-50 profile"; tail rn1.err
fi

# ---- databases that are not ours ---------------------------------------------
head -c 65536 /dev/urandom >junk.db
profile tiny.net "${opts[@]}" --profile-db junk.db >out.txt 2>err.txt
rc=$?
if [ $rc -eq 1 ] && grep -q "junk.db is damaged or not an SQLite database" err.txt; then
    ok "random bytes: $(head -1 err.txt)"
else
    fail "random bytes: exit $rc"; cat err.txt
fi
q foreign.db "create table songs (title text, year integer); insert into songs values ('Blue Monday', 1983)" >/dev/null
cp foreign.db foreign.orig
profile tiny.net "${opts[@]}" --profile-db foreign.db >out.txt 2>err.txt
rc=$?
if [ $rc -eq 1 ] && grep -q "foreign.db is an SQLite database but not an autotm profile database" err.txt &&
    cmp -s foreign.db foreign.orig; then
    ok "a foreign SQLite database, left as it was: $(head -1 err.txt)"
else
    fail "foreign database: exit $rc"; cat err.txt
fi
head -c 100 "$db" >truncated.db   # an SQLite header and nothing else
profile tiny.net "${opts[@]}" --profile-db truncated.db >out.txt 2>err.txt
rc=$?
if [ $rc -eq 1 ] && grep -q "truncated.db" err.txt; then
    ok "a truncated database: $(head -1 err.txt)"
else
    fail "truncated database: exit $rc"; cat err.txt
fi
mkdir -p notafile.db
profile tiny.net "${opts[@]}" --profile-db notafile.db >out.txt 2>err.txt
rc=$?
[ $rc -eq 1 ] && grep -q "notafile.db" err.txt && ok "a directory as the database: $(head -1 err.txt)" ||
    { fail "directory as database: exit $rc"; cat err.txt; }

# ---- hw files ------------------------------------------------------------------
for f in "$srcdir"/hw/*.hw; do
    if out=$("$helper" --hw "$f" 2>&1); then ok "$(basename "$f"): $out"; else fail "$f: $out"; fi
done
printf '# a tier without its write bandwidth\n[fast]\nread_bandwidth = 100 GB/s\nwrite_bandwidth = 80 GB/s\n\n[slow]\nread_bandwidth = 10 GB/s\n' >a.hw
printf '[fast]\nread_bandwidth = 100 GB/s\nwrite_bandwidth = 80 GB\n' >b.hw
printf '[fast]\nread_bandwidth = 100 GB/s\n[turbo]\n' >c.hw
for case in "a.hw:6: error: [slow] has no write_bandwidth" \
            "b.hw:3: error: write_bandwidth expects a bandwidth" \
            "c.hw:3: error: unknown section [turbo]"; do
    f=${case%%:*}
    "$helper" --hw "$f" >out.txt 2>err.txt
    rc=$?
    if [ $rc -eq 1 ] && grep -qF "$case" err.txt; then ok "$(cat err.txt)"; else fail "$f: exit $rc: $(cat err.txt)"; fi
done

# ---- usage errors ---------------------------------------------------------------
for args in "--runs 0 tiny.net" "--threads x tiny.net" "--slow fast tiny.net" "--bogus tiny.net" ""; do
    # shellcheck disable=SC2086
    profile $args >out.txt 2>err.txt
    rc=$?
    [ $rc -eq 2 ] && ok "usage error '$args': $(head -1 err.txt)" || { fail "'$args': exit $rc"; cat err.txt; }
done
profile tiny.net --slow-dir "$work/nowhere" >out.txt 2>err.txt
rc=$?
[ $rc -eq 1 ] && grep -q "nowhere is not a directory" err.txt && ok "$(head -1 err.txt)" ||
    { fail "--slow-dir nowhere: exit $rc"; cat err.txt; }

echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
