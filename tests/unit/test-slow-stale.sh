#!/usr/bin/env bash
# The pmem slow pool's directory left by a run killed with SIGKILL (which
# no handler sees) is removed by the next run that makes a slow pool in the
# same parent, and nothing else is: a live run's directory, another user's,
# a link, a directory that is not empty, one not named by a pid, and one in
# another parent are all kept (docs/runtime.md, Pools).
set -uo pipefail
srcdir=${TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
builddir=${TOP_BUILDDIR:-$srcdir}
autotmc=${AUTOTMC:-$builddir/autotmc}
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/stale.XXXXXX") || exit 1
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
    rm -rf "$work"
}
trap cleanup EXIT
cd "$work" || exit 1
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
# every tensor in the slow pool: the program makes a pmem directory
"$autotmc" build m.net --optimizer all-slow -o prog >build.out 2>&1 ||
    { echo "FAIL: build"; cat build.out; exit 1; }
mkdir slow other

# start_run OUT: a long run in the background with its slow pool in slow/;
# returns once it has made a step (its pool and directory are complete)
start_run() {
    ./prog --iters 1000000000 --slow-dir slow >"$1" 2>&1 &
    run_pid=$!
    pids+=("$run_pid")
    for _ in $(seq 600); do
        grep -q '^step 1:' "$1" && return 0
        kill -0 "$run_pid" 2>/dev/null || break
        sleep 0.1
    done
    echo "FAIL: the program did not start a step:"
    cat "$1"
    exit 1
}

# A run killed with SIGKILL leaves its directory, named by its pid.
start_run killed.out
killed_pid=$run_pid
kill -9 "$killed_pid"
wait "$killed_pid" 2>/dev/null
shopt -s nullglob
left=(slow/autotm-slow.*)
shopt -u nullglob
if [ ${#left[@]} -eq 1 ] && [ "${left[0]}" != "${left[0]#slow/autotm-slow.$killed_pid.}" ]; then
    ok "kill -9 leaves ${left[0]}, named by the run's pid"
else
    fail "after kill -9: ${left[*]:-nothing} in slow/ (expected one autotm-slow.$killed_pid.XXXXXX)"
fi
killed_dir=${left[0]:-none}

# A live run's directory, next to the stale one.
start_run live.out
live_pid=$run_pid
live_dir=$(ls -d slow/autotm-slow."$live_pid".* 2>/dev/null)

# Look-alikes of a stale directory that must stay, and one that must go.
( : ) &
dead=$!
wait $dead
sleep 300 &
sleeper=$!
pids+=("$sleeper")
mkdir "slow/autotm-slow.$sleeper.aaaaaa"                        # its process is alive
mkdir "slow/autotm-slow.$dead.nonemp" && touch "slow/autotm-slow.$dead.nonemp/f"  # not empty
mkdir "slow/autotm-slow.Xy12ab"                                 # not named by a pid
mkdir "other/autotm-slow.$dead.elsewh"                          # another parent
mkdir target && ln -s ../target "slow/autotm-slow.$dead.linkkk"  # a link
keep=("slow/autotm-slow.$sleeper.aaaaaa" "slow/autotm-slow.$dead.nonemp" "slow/autotm-slow.Xy12ab"
      "other/autotm-slow.$dead.elsewh" "slow/autotm-slow.$dead.linkkk" target)
if [ "$(id -u)" = 0 ]; then
    mkdir "slow/autotm-slow.$dead.foreig" && chown 65534 "slow/autotm-slow.$dead.foreig"  # another user's
    keep+=("slow/autotm-slow.$dead.foreig")
fi
mkdir "slow/autotm-slow.$dead.stalee"                           # stale: must go

# The next run tidies slow/ and removes its own directory at the end.
if ./prog --iters 1 --slow-dir slow >next.out 2>&1; then
    ok "a run after the kill succeeds"
else
    fail "a run after the kill failed:"
    cat next.out
fi
next_dir=$(sed -n 's/.*pmem file in \(slow\/autotm-slow\.[^)]*\)).*/\1/p' next.out)
for d in "$killed_dir" "slow/autotm-slow.$dead.stalee" "$next_dir"; do
    if [ -e "$d" ] || [ -z "$d" ]; then
        fail "'$d' is still there"
    else
        ok "'$d' was removed"
    fi
done
for d in "$live_dir" "${keep[@]}"; do
    if [ -n "$d" ] && { [ -d "$d" ] || [ -L "$d" ]; }; then
        ok "'$d' was kept"
    else
        fail "'$d' (live, or not stale) was removed"
    fi
done

# The live run is unharmed, and removes its own directory on SIGTERM.
if kill -0 "$live_pid" 2>/dev/null; then
    kill -TERM "$live_pid"
    wait "$live_pid" 2>/dev/null
    if [ -e "$live_dir" ]; then
        fail "the live run's directory outlived its SIGTERM"
    else
        ok "the live run kept running, and removed its directory on SIGTERM"
    fi
else
    fail "the live run died:"
    cat live.out
fi

echo "$fails failed"
[ $fails -eq 0 ]
