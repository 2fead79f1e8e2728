#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""The lines rping -v prints for COUNT pings of SIZE octets, each after PREFIX.

Usage: rping_expected.py PREFIX COUNT SIZE
Ping N's buffer (rdma-core librdmacm/examples/rping.c, the client): "rdma-ping-N: ", then the
letters 'A'..'z' cycling from 'A' + N % 58, then a NUL in the last octet (not printed).
Used by tests/interop/siw_rping.sh and tests/scripts/ping_cli.sh.
"""
import sys

prefix, count, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
out = []
for ping in range(count):
    b = bytearray(b"rdma-ping-%d: " % ping)
    c = 65 + ping % 58
    while len(b) < size - 1:
        b.append(c)
        c = 65 if c == 122 else c + 1
    out.append(prefix + b[: size - 1].decode())
sys.stdout.write("\n".join(out) + ("\n" if out else ""))
