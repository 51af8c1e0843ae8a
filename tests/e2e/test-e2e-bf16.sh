#!/usr/bin/env bash
# bf16 programs (--precision bf16) end to end: a CNN with batchnorm and the small GPT-2 with dropout
# against the bf16 interpreter, and every placement - spill-all, auto, recompute, checkpoint and
# auto's moves that span kernels - bitwise equal to all-fast (see e2e-check.sh).
here=$(dirname "$0")
bash "$here/e2e-check.sh" test_vgg bf16 || exit 1
exec bash "$here/e2e-check.sh" gpt bf16
