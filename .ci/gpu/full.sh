#!/usr/bin/env bash
# bash .ci/gpu/full.sh SECONDS [runner args]: a full-preset run on the lent GPU host, stopped at
# SECONDS (--resume continues it on the same machine); runs/full comes back as $OUT/runs.tgz.
set -uo pipefail
limit=$1; shift
source .ci/gpu/env.sh || exit 3
timeout -s INT "$limit" ./run_all.sh "$@"; rc=$?
tar czf "$OUT/runs.tgz" runs/full
echo "runner exit $rc"
