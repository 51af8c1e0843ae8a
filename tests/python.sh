# tests/python.sh - sourced by the tests that use Python (not a test itself):
#
#   . "$srcdir/tests/python.sh"; need_python "torch, numpy" "python3-torch"
#
# sets $py to the first of python3 and /usr/bin/python3 that imports the
# modules, or skips the test (exit 77) naming the Debian packages to install.
need_python() {
    local modules=$1 packages=$2 cand
    py=
    for cand in python3 /usr/bin/python3; do
        if command -v "$cand" >/dev/null && "$cand" -c "import $modules" 2>/dev/null; then
            py=$cand
            return 0
        fi
    done
    echo "skipping: no python3 with $modules (apt-get install $packages)"
    exit 77
}
