#!/usr/bin/env bash
# Source files that are not regular files, or are too large, are refused
# with a diagnostic before anything is read from them: a FIFO must not
# block, /dev/zero must not be read until memory runs out.  As the main
# file the error names the file; as an import it points at the import.
set -uo pipefail
srcdir=${TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
autotmc=${AUTOTMC:-$srcdir/autotmc}
case $autotmc in /*) ;; *) autotmc=$(pwd)/$autotmc ;; esac
tmp=${TEST_TMPDIR:-$(mktemp -d)}
cd "$tmp" || exit 1
fails=0

# expect FILE: `autotmc check FILE` exits 1 within 10 s and its stderr is
# exactly the standard input.
expect() {
    local file=$1 rc=0
    cat >want.txt
    timeout 10 "$autotmc" check "$file" >out.txt 2>err.txt </dev/null || rc=$?
    if [ $rc -eq 124 ]; then
        echo "FAIL: check $file: still running after 10s"
        fails=$((fails + 1))
    elif [ $rc -ne 1 ]; then
        echo "FAIL: check $file: exit status $rc, expected 1"
        fails=$((fails + 1))
    elif ! cmp -s want.txt err.txt; then
        echo "FAIL: check $file: stderr differs:"
        diff -u --label expected --label actual want.txt err.txt | sed 's/^/    /'
        fails=$((fails + 1))
    else
        echo "ok: check $file"
    fi
}

mkfifo fifo.net || { echo "mkfifo failed; skipping"; exit 77; }
expect fifo.net <<'EOF'
autotmc: error: cannot read 'fifo.net': it is a FIFO, not a regular file
EOF

printf '# imports a FIFO\nimport "fifo"\n' >import-fifo.net
expect import-fifo.net <<'EOF'
import-fifo.net:2:8: error: cannot import 'fifo.net': it is a FIFO, not a regular file
    2 | import "fifo"
      |        ^~~~~~
EOF

expect /dev/zero <<'EOF'
autotmc: error: cannot read '/dev/zero': it is a character device, not a regular file
EOF

ln -s /dev/zero zero.net
printf 'import "zero"\n' >import-zero.net
expect import-zero.net <<'EOF'
import-zero.net:1:8: error: cannot import 'zero.net': it is a character device, not a regular file
    1 | import "zero"
      |        ^~~~~~
EOF

mkdir dir.net
expect dir.net <<'EOF'
autotmc: error: cannot read 'dir.net': it is a directory
EOF

# One byte over the limit of 16 MiB.
head -c $((16 * 1024 * 1024 + 1)) /dev/zero | tr '\0' '#' >large.net
expect large.net <<'EOF'
autotmc: error: 'large.net' is too large for a .net file (more than 16 MiB)
EOF

printf 'model m(batch = 2)\nimport "large"\n' >import-large.net
expect import-large.net <<'EOF'
import-large.net:2:8: error: 'large.net' is too large for a .net file (more than 16 MiB)
    2 | import "large"
      |        ^~~~~~~
EOF

rm -rf fifo.net zero.net dir.net large.net ./*.net want.txt out.txt err.txt
echo "$fails failed"
[ $fails -eq 0 ]
