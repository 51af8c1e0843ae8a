#!/usr/bin/env bash
# Evaluation against PyTorch's model.eval(): tests/torch/evalnet.net
# (batchnorm over channels and features, dropout, a residual block) is
# trained a few steps by the compiled program with --val, its saved
# weights and running statistics evaluated by `autotmc eval --outputs`,
# and every output (over a validation set that ends in a partial batch),
# the loss and the accuracy compared with PyTorch's from the same weights,
# to 1e-5 relative. Also: evaluating during training leaves the training
# bitwise unchanged, and the run's last evaluation is autotmc eval's. Once
# all in the fast tier, once with every tensor moved out and back
# (spill-all: the training step and the evaluation pass both move).
# Skipped (77) where no python3 with torch and numpy is installed.
set -uo pipefail
srcdir=${TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
autotmc=${AUTOTMC:-$srcdir/autotmc}
. "$srcdir/tests/python.sh"
need_python "torch, numpy" "python3-torch"
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/torch-eval.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
status=0
for place in "" "--optimizer spill-all"; do
	echo "# placement: ${place:-all-fast}"
	rm -rf "${work:?}"/*
	# shellcheck disable=SC2086
	"$py" "$srcdir/tests/torch/torch_check.py" "$autotmc" "$srcdir/tests/torch/evalnet.net" "$work" 0 1e-5 --eval \
		-- $place || status=1
done
exit $status
