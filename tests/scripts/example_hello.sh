#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Runs examples/hello_rdma as server and client over 127.0.0.1 and checks both report the
# greeting: an RDMA Write, an RDMA Read and a Send through the public API only.
set -euo pipefail
# shellcheck source=../support/example_lib.sh
. "$(dirname "$0")/../support/example_lib.sh"
bin=$1
ex_server server "$bin" -p 0
ex_start client "$bin" -p "$ex_port" 127.0.0.1
ex_wait client server
ex_show
ex_expect client 'client: read back "Hello from libiwarp!"'
ex_expect server 'server: received "done"; my buffer now holds "Hello from libiwarp!"'
