#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Runs examples/hello_rdma as server and client over 127.0.0.1 and checks both report the
# greeting: an RDMA Write, an RDMA Read and a Send through the public API only.
set -euo pipefail
. "$(dirname "$0")/../support/wait_for.sh"
bin=$1
port=$(( 20000 + RANDOM % 12000 )) # below the ephemeral range (32768-)
out=$(mktemp -d)
trap 'kill "$srv" 2>/dev/null || true; rm -rf "$out"' EXIT
"$bin" -p "$port" >"$out/server" 2>&1 &
srv=$!
wait_for -p "$srv" 10 "the server to listen" grep -qs listening "$out/server" ||
  { cat "$out/server"; exit 1; }
timeout 30 "$bin" -p "$port" 127.0.0.1 >"$out/client" 2>&1 || { cat "$out/client" "$out/server"; exit 1; }
wait "$srv" || { cat "$out/server"; exit 1; }
cat "$out/client" "$out/server"
grep -q 'client: read back "Hello from libiwarp!"' "$out/client"
grep -q 'server: received "done"; my buffer now holds "Hello from libiwarp!"' "$out/server"
