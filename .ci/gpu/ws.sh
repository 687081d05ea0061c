#!/usr/bin/env bash
# bash .ci/gpu/ws.sh SECONDS: the workshop preset as an instructor meets it, with empty Inductor
# and Triton caches of its own; runs/workshop comes back as $OUT/workshop.tgz.
set -uo pipefail
source .ci/gpu/env.sh || exit 3
export TORCHINDUCTOR_CACHE_DIR=/tmp/ws-inductor TRITON_CACHE_DIR=/tmp/ws-triton
rm -rf /tmp/ws-inductor /tmp/ws-triton runs/workshop
timeout -s INT "$1" ./run_all.sh --preset workshop; rc=$?
tar czf "$OUT/workshop.tgz" runs/workshop
echo "runner exit $rc"
