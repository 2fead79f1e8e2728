#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Runs examples/sctp_rdma over 127.0.0.1: DDP over SCTP (usrsctp over UDP), two connections on
# one association, the server sending first. Each connection's greeting must be read back by
# the client and be in the server's buffer when the client's "done" arrives.
set -euo pipefail
# shellcheck source=../support/example_lib.sh
. "$(dirname "$0")/../support/example_lib.sh"
bin=$1
ex_server server "$bin" -p 0
ex_start client "$bin" -p "$ex_port" 127.0.0.1
ex_wait client server
ex_show
for i in 0 1; do
    ex_expect client "client: connection $i read back \"Hello over SCTP, connection $i!\""
    ex_expect server "server: connection $i received \"done\"; its buffer holds \"Hello over SCTP, connection $i!\""
done
