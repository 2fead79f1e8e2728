#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# scripts.perftest_cli: `iwarp perf --perftest` (perftest's -R protocol, perf_perftest.c) against
# itself on 127.0.0.1: every test (write/read/send x bandwidth/latency) with --verify, so that
# each side checks the data it received or read and both report the agreed count; the
# command-line rules; and a client whose -n differs from the server's (the bandwidth report
# must catch it). The interop against real perftest is tests/interop/siw_perftest.sh.
# Usage: perftest_cli.sh IWARP_BINARY. Exit 0 all passed, 1 otherwise.
set -u
. "$(dirname "$0")/../support/wait_for.sh"
BIN=${1:?usage: perftest_cli.sh IWARP_BINARY}
W=$(mktemp -d "${TMPDIR:-/tmp}/perftest_cli.XXXXXX")
trap 'rm -rf "$W"' EXIT
PORT=$((20000 + $$ % 12000)) # below the ephemeral range (32768-)
FAILED=0
fail() { echo "FAIL $*"; FAILED=$((FAILED + 1)); }

# One server/client pair; both must exit with the given status. TEST OPTIONS: --op X [--lat]
pair() { # NAME SERVER_RC CLIENT_RC SERVER_OPTS -- CLIENT_OPTS
    local name=$1 src=$2 crc=$3
    shift 3
    local sopts=() copts=()
    while [ "$1" != -- ]; do sopts+=("$1"); shift; done
    shift
    copts=("$@")
    PORT=$((PORT + 1))
    timeout 60 "$BIN" perf --perftest --server -p "$PORT" "${sopts[@]}" >"$W/$name.s" 2>&1 &
    local srv=$!
    if ! wait_for -p "$srv" 10 "the server to wait for a client" \
        grep -qs 'waiting for one client' "$W/$name.s"; then
        fail "$name: the server is not ready"
        sed 's/^/    /' "$W/$name.s" | head -n 8
        kill "$srv" 2>/dev/null
        wait "$srv"
        return 1
    fi
    timeout 60 "$BIN" perf --perftest 127.0.0.1 -p "$PORT" "${copts[@]}" >"$W/$name.c" 2>&1
    local c=$?
    wait "$srv"
    local s=$?
    if [ "$s" != "$src" ] || [ "$c" != "$crc" ]; then
        fail "$name: server exit $s (want $src), client exit $c (want $crc)"
        sed 's/^/    /' "$W/$name.s" "$W/$name.c" | grep -v '^    *#\|^     [0-9]' | head -n 8
        return 1
    fi
    return 0
}

for t in "write" "read" "send" "write --lat" "read --lat" "send --lat"; do
    read -ra op <<<"--op $t"
    name="loop-${t// /}"
    args=("${op[@]}" -s 5000 -n 300 --verify)
    pair "$name" 0 0 "${args[@]}" -- "${args[@]}" || continue
    grep -q 'perftest: done: 300 .* of 5000 octets, data verified' "$W/$name.c" ||
        fail "$name: client: $(grep 'perftest: done' "$W/$name.c")"
    if [ "$t" != "read --lat" ]; then
        grep -q 'perftest: done: 300 .* of 5000 octets, data verified' "$W/$name.s" ||
            fail "$name: server: $(grep 'perftest: done' "$W/$name.s")"
    fi
    echo "ok $name"
done

# The server's -n is 300, the client's 200: ib_write_bw's report tells the server.
if pair mismatch 1 0 --op write -s 4096 -n 300 -- --op write -s 4096 -n 200; then
    grep -q 'give the same -n and -s' "$W/mismatch.s" || fail "mismatch: $(tail -n 1 "$W/mismatch.s")"
    echo "ok mismatch"
fi

# Usage errors exit 2.
for bad in "--perftest" "--perftest --server -a" "--perftest --server --qps 2" \
    "--perftest --server --compare-tcp" "--perftest --server -D 1"; do
    read -ra a <<<"$bad"
    "$BIN" perf "${a[@]}" >/dev/null 2>&1
    rc=$?
    if [ $rc = 2 ]; then echo "ok usage: $bad"; else fail "usage: '$bad' exited $rc, not 2"; fi
done
[ "$FAILED" = 0 ] && echo "all passed" || echo "$FAILED failed"
[ "$FAILED" = 0 ]
