#!/usr/bin/env bash
# mlp: the generated program against the reference interpreter (see e2e-check.sh).
exec bash "$(dirname "$0")/e2e-check.sh" mlp
