#!/bin/sh
# bench/setup.sh - the PyTorch that bench/cpu_step.sh compares autotmc with:
# a virtualenv in bench/.venv with torch, torchvision (the CNNs) and numpy from PyPI.  Idempotent: a
# second run only checks that `import torch` works and prints the versions.
#
#   bench/setup.sh              # python3.11 (else python3) -m venv; pip install
#   PYTHON=python3.12 bench/setup.sh
#   TORCH_SPEC='torch==2.15.0' bench/setup.sh     # the default (what docs/performance.md used)
#
# PyPI's Linux x86-64 torch wheel is the CUDA build: `pip install torch`
# also installs the nvidia-* CUDA libraries and triton (about 5.4 GiB in the
# venv for torch 2.15.0).  They are not used on the CPU, but libtorch links
# against them, so `pip install --no-deps torch` alone fails at `import torch`
# (libcufile.so.0: cannot open shared object file).  Its CPU kernels are
# the ones in the wheel: MKL for BLAS, its own oneDNN, OpenMP (libgomp).
# Debian's python3-torch is deliberately not used (generic BLAS).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
venv="$here/.venv"
torch_spec=${TORCH_SPEC:-torch==2.15.0}

check() {
	"$venv/bin/python" - <<'EOF'
import torch, torchvision, numpy
print(f"torch {torch.__version__}, torchvision {torchvision.__version__} (BLAS: {'MKL' if torch.backends.mkl.is_available() else 'not MKL'}, "
      f"oneDNN: {torch.backends.mkldnn.is_available()}), numpy {numpy.__version__}, "
      f"threads {torch.get_num_threads()}")
EOF
}

if [ -x "$venv/bin/python" ] && check 2>/dev/null; then
	echo "bench/setup.sh: $venv is ready"
	exit 0
fi

if [ -z "${PYTHON:-}" ]; then
	for p in python3.11 /usr/bin/python3.11 python3; do
		if command -v "$p" >/dev/null 2>&1; then PYTHON=$p; break; fi
	done
fi
: "${PYTHON:?no python3 found; set PYTHON}"

if [ ! -x "$venv/bin/python" ]; then
	echo "bench/setup.sh: creating $venv with $PYTHON ($("$PYTHON" --version 2>&1))"
	if ! "$PYTHON" -m venv "$venv"; then
		rm -rf "$venv"
		echo "bench/setup.sh: '$PYTHON -m venv' failed; on Debian: apt-get install -y python3-venv" >&2
		exit 1
	fi
fi

echo "bench/setup.sh: pip install $torch_spec torchvision numpy (from PyPI)"
"$venv/bin/python" -m pip install "$torch_spec" torchvision numpy
check
