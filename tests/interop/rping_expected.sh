#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The lines rping -v prints for COUNT pings of SIZE octets, each after PREFIX.
#   rping_expected.sh PREFIX COUNT SIZE
# Ping N's buffer (rdma-core librdmacm/examples/rping.c, the client): "rdma-ping-N: ", then the
# letters 'A'..'z' cycling from 'A' + N % 58, then a NUL in the last octet (not printed).
# Used by tests/interop/siw_rping.sh and tests/scripts/ping_cli.sh.
set -euo pipefail
exec awk -v prefix="$1" -v count="$2" -v size="$3" 'BEGIN {
  for (c = 65; c <= 122; c++) letters = letters sprintf("%c", c)
  cycle = letters
  while (length(cycle) < size + 58) cycle = cycle cycle  # any start, any length up to size
  for (ping = 0; ping < count; ping++) {
    head = "rdma-ping-" ping ": "
    line = head substr(cycle, ping % 58 + 1, size - 1 - length(head))
    print prefix substr(line, 1, size - 1)
  }
}'
