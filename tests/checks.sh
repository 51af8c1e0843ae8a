# tests/checks.sh - sourced by the shell tests that count their checks (not a
# test itself):
#
#   . "$srcdir/tests/checks.sh"
#   ok MESSAGE            a check that passed
#   fail MESSAGE          one that failed (counted in $fails)
#   expect STATUS REGEX CMD...
#                         CMD exits with STATUS, a line of its stderr matches
#                         the extended REGEX, and it took no training step
#                         (no "step N:" line on stdout): a refusal before work
#   finish                print "N failed" and exit with whether none did
fails=0
ok() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
expect() {
    local want=$1 msg=$2
    shift 2
    "$@" >out.log 2>err.log
    local st=$?
    if [ $st = "$want" ] && grep -Eq -- "$msg" err.log && ! grep -q "^step " out.log; then
        ok "$(head -1 err.log)"
    else
        fail "$* exited $st: $(cat err.log)"
    fi
}
finish() {
    echo "$fails failed"
    [ "$fails" = 0 ]
    exit
}
