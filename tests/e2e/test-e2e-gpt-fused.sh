#!/usr/bin/env bash
# a small GPT-2 without dropout, its attention and its loss fused: the generated programs against the
# reference interpreter, the recomputing placements and moves that span kernels against all-fast
# (see e2e-check.sh).
exec bash "$(dirname "$0")/e2e-check.sh" gpt-fused
