#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The main job: installs what is missing, builds the release configuration and runs
# `iwarp perf` in loopback mode: a server and a client in one process on 127.0.0.1 move RDMA
# Writes of every size from 2 B to 8 MiB through the whole stack (verbs, CM, RDMAP, DDP, MPA
# over kernel TCP), next to plain TCP measured in the same run (--compare-tcp).
#   scripts/run.sh [iwarp perf options]   (e.g. --op read, --op send --lat --busy-poll; see
#                                          `build/release/iwarp perf --help`)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --build
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)"
if [ $# -eq 0 ]; then
  set -- --all-sizes --compare-tcp
fi
exec build/release/iwarp perf "$@"
