#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# dropin.rdmacm_rping: Debian's rping, unmodified, on the drop-in librdmacm/libibverbs over
# loopback: server and client on the drop-in over 127.0.0.1 and ::1, -V (the client checks the
# data that came back) with -C counts, ping sizes 64 and 65535, MPA CRC off and on
# (IWARP_MPA_CRC), markers, MPA revision 1, peer-to-peer with a Read RTR; rping -q (QPs made
# with ibv_create_qp, moved with rdma_init_qp_attr, named by qp_num), on the server alone and on
# both ends; caller progress (IWARP_PROGRESS=caller) on both ends; and rping against libiwarp's
# own `iwarp ping` in both roles. A run passes when
# both ends exit 0, the client's -v lines are the -C pings asked for, and the wire judge finds
# nothing in the server's capture (IWARP_PCAP) but [crc-off] where CRC is off.
#
# Usage: rdmacm_rping.sh BUILD_DIR [SHARED_DIR]   (CTest passes both)
# Exit: 0 all passed, 1 a run failed, 77 skipped (rping not installed).
set -u
BUILD=$(realpath "${1:?usage: rdmacm_rping.sh BUILD_DIR [SHARED_DIR]}")
# shellcheck disable=SC2034 # used by rdmacm_lib.sh
SHARED=$(realpath "${2:-$(dirname "$0")/../../../shared}")
HERE=$(dirname "$(realpath "$0")")
command -v rping >/dev/null || { echo "SKIP: rping (rdmacm-utils) is not installed"; exit 77; }
[ -e "$BUILD/dropin/librdmacm.so.1" ] || { echo "rdmacm_rping.sh: no drop-in in $BUILD/dropin"; exit 1; }
export LD_LIBRARY_PATH=$BUILD/dropin
W=$(mktemp -d "${TMPDIR:-/tmp}/dropin_rping.XXXXXX")
# shellcheck source=rdmacm_lib.sh
. "$HERE/rdmacm_lib.sh"
IWARP=$BUILD/iwarp

# pings FILE COUNT: the client's "ping data:" lines are COUNT, numbered 0..COUNT-1.
pings() {
    local n
    n=$(grep -c '^ping data: rdma-ping-' "$1")
    [ "$n" = "$2" ] || { echo "    client printed $n pings, not $2: $(tail -n 2 "$1")"; return; }
    grep -q "^ping data: rdma-ping-$(($2 - 1)): " "$1" || echo "    the last ping is not number $(($2 - 1))"
}

# run NAME ADDR CRC SERVER_CMD... -- CLIENT_CMD...: the server (capturing) then the client on
# PORT; both must exit 0 and the judge must pass the capture.
run() {
    local name=$1 addr=$2 crc=$3 srv_cmd=() cli_cmd=() pcap problems src crc_rc
    shift 3
    while [ "$1" != -- ]; do srv_cmd+=("$1"); shift; done
    shift
    cli_cmd=("$@")
    next_port
    pcap=$W/$PORT.pcap
    IWARP_MPA_CRC=$crc IWARP_PCAP=$pcap timeout 20 "${srv_cmd[@]}" -a "$addr" -p "$PORT" \
        >"$W/$PORT.server" 2>&1 &
    local srv=$!
    KIDS+=("$srv")
    wait_for -p "$srv" 10 "the server on port $PORT" listening "$PORT"
    IWARP_MPA_CRC=$crc timeout 15 "${cli_cmd[@]}" -a "$addr" -p "$PORT" >"$W/$PORT.client" 2>&1
    crc_rc=$?
    reap "$srv" "$crc_rc"
    src=$?
    problems=$(
        [ "$src" = 0 ] || echo "    server exit $src: $(tail -n 3 "$W/$PORT.server")"
        [ "$crc_rc" = 0 ] || echo "    client exit $crc_rc: $(tail -n 3 "$W/$PORT.client")"
        [ -z "${COUNT:-}" ] || pings "$W/$PORT.client" "$COUNT"
        judge "$pcap" "$PORT" "$([ "$crc" = 1 ] || echo crc-off)"
        # the MPA option reached the wire: every FPDU carries a good CRC, or none has one
        if [ "$crc" = 1 ]; then
            grep -qE 'crc good=[1-9][0-9]* bad=0 unchecked=0' "$pcap.judge" 2>/dev/null ||
                echo "    IWARP_MPA_CRC=1 but not every FPDU has a good CRC: $(grep -h 'crc good' "$pcap.judge")"
        fi
    )
    report "$name" "$problems"
}

for addr in 127.0.0.1 ::1; do
    for size in 64 65535; do
        for crc in 0 1; do
            COUNT=5 run "rping $addr -S $size -C 5 -V, CRC $crc" "$addr" "$crc" \
                rping -s -S "$size" -- rping -c -v -V -S "$size" -C 5
        done
    done
done
# the other MPA options from the environment, on both ends
for opts in IWARP_MPA_MARKERS=1 IWARP_MPA_REV=1 "IWARP_MPA_P2P=1 IWARP_MPA_RTR=read"; do
    # shellcheck disable=SC2086 # opts is a list of assignments
    COUNT=3 run "rping with $opts" 127.0.0.1 0 env $opts rping -s -- env $opts rping -c -v -V -C 3
done
# caller progress: rping's CM thread and CQ thread both wait inside the library, each must
# wake for its own events (200 pings, each a Send, Read, Send, Write, Send exchange)
COUNT=200 run "rping with IWARP_PROGRESS=caller on both ends (two waiting threads each)" \
    127.0.0.1 0 env IWARP_PROGRESS=caller rping -s -- env IWARP_PROGRESS=caller rping -c -v -V -C 200
COUNT=4 run "rping -s -q (the server's QP by ibv_create_qp, accepted by qp_num)" 127.0.0.1 0 \
    rping -s -q -- rping -c -v -V -C 4
COUNT=4 run "rping -q both sides (QPs by ibv_create_qp, connected by qp_num) 127.0.0.1" 127.0.0.1 0 \
    rping -s -q -- rping -c -q -v -V -C 4
COUNT=4 run "rping -q ::1 CRC 1" ::1 1 rping -s -q -- rping -c -q -v -V -C 4
if [ -x "$IWARP" ]; then
    COUNT=3 run "iwarp ping server, rping client" 127.0.0.1 0 \
        "$IWARP" ping -s -- rping -c -v -V -C 3
    # iwarp ping prints rping's "ping data:" lines too (-v)
    COUNT=3 run "rping server, iwarp ping client (CRC 1, ::1)" ::1 1 \
        rping -s -- "$IWARP" ping -c -v -V -C 3
else
    report "rping against iwarp ping" "    $IWARP is not built"
fi
finish
