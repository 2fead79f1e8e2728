#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Runs examples/mt_client (4 threads, a QP each, one context) against examples/event_server
# over 127.0.0.1: each thread must read back its own last value and, after the barrier, the
# next thread's.
set -euo pipefail
# shellcheck source=../support/example_lib.sh
. "$(dirname "$0")/../support/example_lib.sh"
mt=$1 srv=$2
ex_server server "$srv" -p 0 -n 4
ex_start client "$mt" -p "$ex_port" -t 4 -r 25 -c mt 127.0.0.1
ex_wait client server
ex_show
for t in 0 1 2 3; do
    ex_expect client "thread $t: 25 rounds, own key -> \"VALUE v$t.24\", thread $(((t + 1) % 4))'s key -> \"VALUE v$(((t + 1) % 4)).24\""
done
ex_expect server "server: served 4 clients, 4 keys stored"
