#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Runs examples/ddp_ulp over 127.0.0.1: a ULP on the DDP interface without RDMAP. The tagged
# block must be placed whole and intact in the server's Tagged Buffer; the untagged messages
# must arrive on their queues with their MSNs and the ULP's RsvdULP headers, and the server's
# answer must reach the client.
set -euo pipefail
# shellcheck source=../support/example_lib.sh
. "$(dirname "$0")/../support/example_lib.sh"
bin=$1
ex_server server "$bin" -p 0
ex_start client "$bin" -p "$ex_port" 127.0.0.1
ex_wait client server
ex_show
ex_expect server "server: tagged message to STag of my block, header 'B': 100000 octets placed, 0 differ"
ex_expect server 'server: untagged message on QN 1, MSN 1, header "REC01": "record: 100000 octets of pattern"'
ex_expect server 'server: untagged message on QN 0, MSN 1, header "END01": "end"'
ex_expect client 'client: answer on QN 0, header "ANSW1": "placed 100000 octets, 0 differ"'
