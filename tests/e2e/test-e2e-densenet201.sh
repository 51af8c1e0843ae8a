#!/usr/bin/env bash
# densenet201: the generated program against the reference interpreter (see e2e-check.sh).
exec bash "$(dirname "$0")/e2e-check.sh" densenet201
