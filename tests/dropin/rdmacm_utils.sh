#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# dropin.rdmacm_utils: Debian's rdmacm-utils, unmodified, on the drop-in librdmacm/libibverbs
# over 127.0.0.1. These succeed (both ends exit 0, the wire judge passes the server's capture
# with nothing but [crc-off]): rdma_server/rdma_client (synchronous endpoints, rdma_get_request),
# rdma_xserver/rdma_xclient -c r, ucmatose with two connections, cmtime with four. These fail
# as they do on an iWARP device (non-zero exit and the errno's message): rdma_xclient -c x (XRC)
# EOPNOTSUPP, udaddy and mckey (UD QPs) EOPNOTSUPP; udpong, rstream and riostream (rsockets)
# ENOSYS with exactly one "libiwarp:" line.
#
# ucmatose's server sends first, which RFC 5044 §7.1.2 lets a responder do only after the
# initiator's first FPDU; Linux siw does not hold the responder back, libiwarp does, so it needs
# RFC 6581 peer-to-peer mode (the initiator sends an RTR first): the drop-in's default, which
# the run below states explicitly (IWARP_MPA_P2P=1).
#
# Usage: rdmacm_utils.sh BUILD_DIR [SHARED_DIR]   (CTest passes both)
# Exit: 0 all passed, 1 a run failed, 77 skipped (rdmacm-utils not installed).
set -u
BUILD=$(realpath "${1:?usage: rdmacm_utils.sh BUILD_DIR [SHARED_DIR]}")
# shellcheck disable=SC2034 # used by rdmacm_lib.sh
SHARED=$(realpath "${2:-$(dirname "$0")/../../../shared}")
HERE=$(dirname "$(realpath "$0")")
command -v ucmatose >/dev/null || { echo "SKIP: rdmacm-utils is not installed"; exit 77; }
[ -e "$BUILD/dropin/librdmacm.so.1" ] || { echo "rdmacm_utils.sh: no drop-in in $BUILD/dropin"; exit 1; }
export LD_LIBRARY_PATH=$BUILD/dropin
W=$(mktemp -d "${TMPDIR:-/tmp}/dropin_rdmacm_utils.XXXXXX")
# shellcheck source=rdmacm_lib.sh
. "$HERE/rdmacm_lib.sh"

# pair NAME EXPECT SERVER_CMD... -- CLIENT_CMD...: the server (capturing) on PORT, then the
# client; "@PORT" in either command becomes the port. Both must exit 0 (SERVER_STAYS=1: the
# server, which serves until killed, must still be up), the client's output must match the
# regular expression EXPECT, and the judge must pass the capture (JUDGE_ALLOW: categories
# allowed besides crc-off).
pair() {
    local name=$1 expect=$2 srv_cmd=() cli_cmd=() pcap problems src cli_rc a
    shift 2
    next_port
    while [ "$1" != -- ]; do srv_cmd+=("${1//@PORT/$PORT}"); shift; done
    shift
    for a in "$@"; do cli_cmd+=("${a//@PORT/$PORT}"); done
    pcap=$W/$PORT.pcap
    IWARP_PCAP=$pcap timeout 30 "${srv_cmd[@]}" >"$W/$PORT.server" 2>&1 &
    local srv=$!
    KIDS+=("$srv")
    wait_for -p "$srv" 10 "$name's server on port $PORT" listening "$PORT"
    timeout 30 stdbuf -oL "${cli_cmd[@]}" >"$W/$PORT.client" 2>&1
    cli_rc=$?
    if [ -n "${SERVER_STAYS:-}" ]; then
        # a server that serves until killed: it must still be up, then it is stopped
        if kill -0 "$srv" 2>/dev/null; then
            kill "$srv"
            wait "$srv"
            src=0
        else
            wait "$srv"
            src="$? (it had exited)"
        fi
    else
        reap "$srv" "$cli_rc"
        src=$?
    fi
    problems=$(
        [ "$src" = 0 ] || echo "    server exit $src: $(tail -n 3 "$W/$PORT.server")"
        [ "$cli_rc" = 0 ] || echo "    client exit $cli_rc: $(tail -n 3 "$W/$PORT.client")"
        grep -qE "$expect" "$W/$PORT.client" ||
            echo "    the client never printed /$expect/: $(tail -n 2 "$W/$PORT.client")"
        judge "$pcap" "$PORT" "crc-off${JUDGE_ALLOW:+|$JUDGE_ALLOW}"
    )
    report "$name" "$problems"
}

# fails NAME EXPECT CMD...: CMD exits non-zero within its timeout and its output matches EXPECT.
fails() {
    local name=$1 expect=$2 rc out
    shift 2
    next_port
    out=$W/fail.$PORT
    timeout 20 "$@" >"$out" 2>&1
    rc=$?
    problems=$(
        [ "$rc" != 0 ] || echo "    exit 0"
        [ "$rc" != 124 ] || echo "    it hung (killed by timeout)"
        grep -qE "$expect" "$out" || echo "    no /$expect/ in: $(head -n 3 "$out")"
    )
    report "$name" "$problems"
}

pair "rdma_server / rdma_client" 'rdma_client: end 0' \
    rdma_server -p @PORT -- rdma_client -s 127.0.0.1 -p @PORT
# rdma_xserver accepts with responder_resources 0 (IRD 0) against the client's default ORD
JUDGE_ALLOW=mpa-ird pair "rdma_xserver / rdma_xclient -c r" 'rdma_xclient: end 0' \
    rdma_xserver -p @PORT -c r -- rdma_xclient -s 127.0.0.1 -p @PORT -c r
IWARP_MPA_P2P=1 pair "ucmatose, 2 connections x 5 messages (peer-to-peer)" 'return status 0' \
    ucmatose -p @PORT -c 2 -C 5 -- ucmatose -s 127.0.0.1 -p @PORT -c 2 -C 5
SERVER_STAYS=1 pair "cmtime, 4 connections" '^disconnect +:' \
    cmtime -p @PORT -c 4 -- cmtime -s 127.0.0.1 -p @PORT -c 4

fails "rdma_xclient -c x: XRC is EOPNOTSUPP" 'rdma_create_ep: Operation not supported' \
    rdma_xclient -s 127.0.0.1 -p "$PORT" -c x
# udaddy and mckey fail at their UD QP, before any peer is needed
fails "udaddy: UD QPs are EOPNOTSUPP" 'unable to create QP: Operation not supported' \
    udaddy -s 127.0.0.1
fails "mckey: UD QPs are EOPNOTSUPP" 'unable to create QP: Operation not supported' \
    mckey -m 239.1.1.1 -b 127.0.0.1
for prog in udpong rstream riostream; do
    fails "$prog: rsockets are ENOSYS" 'rsocket failed: Function not implemented' \
        "$prog" -s 127.0.0.1 -p "$PORT"
    n=$(grep -c '^libiwarp: ' "$W/fail.$PORT")
    [ "$n" = 1 ] || report "$prog logs one line" "    $n libiwarp: lines"
done
finish
