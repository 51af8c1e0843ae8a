#!/usr/bin/env bash
# inception_v3: the generated program against the reference interpreter (see e2e-check.sh).
exec bash "$(dirname "$0")/e2e-check.sh" inception_v3
