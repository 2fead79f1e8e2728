#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Runs examples/mw_fastreg over 127.0.0.1: RDMA Writes through a type-1 window, a type-2
# window and a fast-registered STag must each land in its area; the client's Send with
# Invalidate must revoke the type-2 window; the server may no longer post from the invalidated
# fast-registered STag; the Read through the locally invalidated
# fast-registered STag must fail with a remote access error and an RDMAP Terminate, Remote
# Protection Error / Invalid STag (RFC 5040 §7.2: layer 0, type 1, code 0: 0x000100), on both
# sides, placing nothing.
set -euo pipefail
# shellcheck source=../support/example_lib.sh
. "$(dirname "$0")/../support/example_lib.sh"
bin=$1
ex_server server "$bin" -p 0
ex_start client "$bin" -p "$ex_port" 127.0.0.1
ex_wait client server
ex_show
ex_expect server 'server: received "written", which invalidated the type-2 window'
for k in 'type-1 window' 'type-2 window' 'fast-registered MR'; do
    ex_expect server "server: through the $k: \"written through the $k\""
done
ex_expect server 'server: a Send from the invalidated STag: IWARP_ERR_STAG_INVALID'
ex_expect client 'client: the server says "revoked"'
ex_expect client 'client: RDMA Read through the revoked STag: remote access error, Terminate cause 0x000100, nothing placed'
ex_expect server 'server: async event local access violation work queue error, Terminate cause 0x000100 sent'
