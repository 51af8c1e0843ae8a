#!/usr/bin/env bash
# a chain with dropout: the generated programs against the reference interpreter, and the
# recomputing placements against all-fast (see e2e-check.sh).
exec bash "$(dirname "$0")/e2e-check.sh" dropout
