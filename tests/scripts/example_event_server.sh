#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Runs examples/event_server with 8 clients at once over 127.0.0.1: one server thread, a
# completion channel, one SRQ for every connection. Each client must read back every value it
# PUT (its last one is checked here) and find a key nobody set missing; the server must have
# served all 8 and stored one key per client.
set -euo pipefail
# shellcheck source=../support/example_lib.sh
. "$(dirname "$0")/../support/example_lib.sh"
bin=$1
n=8
ex_server server "$bin" -p 0 -n "$n"
for i in $(seq "$n"); do ex_start "client$i" "$bin" -p "$ex_port" -r 20 -c "c$i" 127.0.0.1; done
for i in $(seq "$n"); do ex_wait "client$i"; done
ex_wait server
ex_show
for i in $(seq "$n"); do
    ex_expect "client$i" "client c$i: 20 rounds, GET c$i -> \"c$i-19\""
    ex_expect "client$i" "client c$i: GET unset-c$i -> \"NOT_FOUND\""
done
ex_expect server "server: served $n clients, $n keys stored"
