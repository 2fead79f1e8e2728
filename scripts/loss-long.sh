#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The long form of CTest loss.two_hosts (tests/scripts/loss.sh, docs/design.md "Loss between two
# hosts"): the same two namespaces, the same nftables loss and the same checks, with 1 GiB of
# mixed RDMA Writes, Reads and Sends per configuration instead of 64 MiB (CRC on/off x 1/64 QPs
# x 1%/5% loss). Not run by CI: it takes tens of minutes on a 2-core machine. Needs root.
#   scripts/loss-long.sh [BUILD_DIR]     (default build/release, configured and built here)
# Environment: as loss.sh (LOSS_RATES, LOSS_QPS, LOSS_CRC, LOSS_KEEP); LOSS_BYTES overrides the
# 1 GiB; LOSS_TIMEOUT (default 3600 s per configuration).
# The server holds each QP's whole Write region (BYTES / QPS) in memory: about 1.1 GiB per side.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build/release}
if [ $# -eq 0 ]; then
  cmake --preset release >/dev/null
  cmake --build --preset release --target loss_peer
fi
export LOSS_BYTES=${LOSS_BYTES:-1073741824} LOSS_TIMEOUT=${LOSS_TIMEOUT:-3600}
exec bash tests/scripts/loss.sh "$BUILD/tests/loss_peer"
