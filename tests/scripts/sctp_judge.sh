#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# DDP over SCTP through the whole library, judged on the wire. Each capture is the library's own
# packet trace (each SCTP packet as its UDP datagram) and must be clean for the wire checker
# (check.sh --sctp-udp: zero errors) and for `iwarp dump` (zero errors, zero warnings), the two
# counting the same PDUs:
#   ping   `iwarp ping --transport sctp`, 20 pings of 65535 octets (rping's protocol: Send, RDMA
#          Read, RDMA Write, Send per ping, each message in many segments, then both Stream
#          Session Terminates): the exact message counts;
#   sends  `iwarp perf --op send` with 8 QPs as 8 streams of one association, 128 small Sends
#          in flight each, busy-polled: usrsctp bundles DATA chunks of several streams into one
#          packet (asserted: over 100 such packets), so MSNs and DDP-SSNs are judged per stream;
#   writes, reads  64 KiB RDMA Writes (16 in flight) and Reads (8 in flight): long runs of
#          full-size segments and multi-segment Read Responses.
#   sctp_judge.sh IWARP_BIN CHECK_SH     (exit 77, SKIP, without tshark or the checker)
set -u
. "$(dirname "$0")/../support/wait_for.sh"
BIN=$1
CHECK=$2
W=$(mktemp -d)
SRV=
trap '[ -n "$SRV" ] && kill "$SRV" 2>/dev/null; rm -rf "$W"' EXIT
command -v tshark >/dev/null || { echo "SKIP: tshark is not installed (scripts/install-deps.sh installs it)"; exit 77; }
[ -x "$CHECK" ] || { echo "SKIP: $CHECK not found (the shared folder must sit beside the checkout)"; exit 77; }
rc=0
fail() { echo "FAIL: $*"; rc=1; }

# judge NAME PCAP UDPPORT: both judges on one capture; the listings stay in $W/NAME.*
# The checker's one known blind spot: Wireshark does not hand a DATA chunk whose TSN it saw
# before (usrsctp retransmitted it: a SACK came late on a loaded machine) to the DDP dissector,
# and check.sh then reports "N unfragmented DDP DATA chunks but only 0 dissected" for that
# packet. True when every error of judge file $1 is that one, on a packet of $2 (SCTP over UDP
# port $3) each of whose DATA chunks Wireshark marks as a retransmission; `iwarp dump` still
# judges every chunk of those packets.
only_retransmissions() {
    local fr n_data n_retx
    grep -E '^ *ERROR' "$1" | grep -vq 'unfragmented DDP DATA chunks but only 0 dissected' && return 1
    for fr in $(grep -oE 'ERROR #[0-9]+' "$1" | grep -oE '[0-9]+' | sort -u); do
        tshark -r "$2" -o sctp.reassembly:TRUE -d "udp.port==$3,sctp" -Y "frame.number==$fr" -V \
            >"$W/frame.txt" 2>/dev/null
        n_data=$(grep -c '^ *DATA chunk' "$W/frame.txt")
        n_retx=$(grep -c 'This TSN is a retransmission of one in frame' "$W/frame.txt")
        [ "$n_data" -gt 0 ] && [ "$n_retx" = "$n_data" ] || return 1
    done
}

judge() {
    local name=$1 pcap=$2 port=$3 jp dp
    bash "$CHECK" -q --sctp-udp "$port" "$pcap" >"$W/$name.judge" 2>&1
    if ! grep -q '^RESULT: PASS' "$W/$name.judge" || ! grep -q 'errors=0 ' "$W/$name.judge"; then
        if only_retransmissions "$W/$name.judge" "$pcap" "$port"; then
            echo "$name: check.sh: $(grep -c '^ *ERROR' "$W/$name.judge") packets of retransmitted" \
                "DATA chunks not dissected by Wireshark (not an error of ours); all else clean"
        else
            fail "$name: check.sh:"
            grep -E 'ERROR|SUMMARY|RESULT' "$W/$name.judge" | head -20
        fi
    fi
    "$BIN" dump "$pcap" >"$W/$name.dump" 2>&1
    if ! grep -q 'errors=0 warnings=0 sctp_associations=1 ddp=1' "$W/$name.dump" ||
        ! grep -q '^RESULT: PASS' "$W/$name.dump"; then
        fail "$name: iwarp dump:"
        grep -E 'ERROR|WARN' "$W/$name.dump" | head -10
        tail -n 2 "$W/$name.dump"
    fi
    jp=$(grep -o 'iwarp_pdus=[0-9]*' "$W/$name.judge" | grep -o '[0-9]*')
    dp=$(grep -o ' pdus=[0-9]*' "$W/$name.dump" | grep -o '[0-9]*')
    [ -n "$jp" ] && [ "$jp" = "$dp" ] || fail "$name: check.sh saw ${jp:-no} PDUs, iwarp dump ${dp:-no}"
    echo "$name: $(grep '^SUMMARY: rdmap' "$W/$name.judge" | sed 's/SUMMARY: //'); ${jp:-?} PDUs"
}

# ping: our server and client on a fixed UDP port
PORT=$((20000 + RANDOM % 20000))
# -d: the server says "listening on" when it does
"$BIN" ping -s -d -a 127.0.0.1 -p "$PORT" --transport sctp -S 65535 >"$W/srv.log" 2>&1 &
SRV=$!
if wait_for -p "$SRV" 10 "the ping server to listen" grep -qs '^listening on' "$W/srv.log" &&
    IWARP_PCAP="$W/ping.pcap" timeout 60 "$BIN" ping -c -a 127.0.0.1 -p "$PORT" \
    --transport sctp -C 20 -S 65535 -V >"$W/cli.log" 2>&1; then
    timeout 20 tail --pid="$SRV" -f /dev/null
    wait "$SRV" || fail "ping server: $(tail -n 3 "$W/srv.log")"
    SRV=
    judge ping "$W/ping.pcap" "$PORT"
    # 20 pings: 20 Read Requests, 80 Sends, and the Read Responses and Writes of 65535 octets
    # in 47 segments each (1410 octets at MTU 1500); session Initiate/Accept and both Terminates
    grep -q 'ReadReq=20, ReadResp=940, Send=80, Write=940' "$W/ping.judge" ||
        fail "ping: unexpected messages: $(grep rdmap_messages "$W/ping.judge")"
    grep -q 'sctp-ctl=4' "$W/ping.judge" || fail "ping: not 4 session control chunks"
else
    fail "ping client: $(tail -n 3 "$W/cli.log")"
fi

# perf NAME PERF-OPTIONS...: a loopback run (server and client in one process) traced; its UDP
# port is the first packet's destination.
perf() {
    local name=$1 port
    shift
    timeout 120 "$BIN" perf --transport sctp --verify --trace "$W/$name.pcap" "$@" \
        >"$W/$name.log" 2>&1 || { fail "$name: iwarp perf $*: $(tail -n 3 "$W/$name.log")"; return 1; }
    port=$(tshark -r "$W/$name.pcap" -T fields -e udp.dstport -c 1 2>/dev/null)
    judge "$name" "$W/$name.pcap" "$port"
    PERF_PORT=$port
}

if perf sends --op send -s 64 --qps 8 --qd 128 -n 3000 --busy-poll; then
    bundled=$(tshark -r "$W/sends.pcap" -d "udp.port==$PERF_PORT,sctp" -T fields \
        -e sctp.chunk_type 2>/dev/null | grep -c '^0,0')
    echo "sends: $bundled packets carry more than one DATA chunk"
    [ "$bundled" -gt 100 ] || fail "sends: only $bundled packets with bundled DATA chunks"
    n=$(grep -o 'Send=[0-9]*' "$W/sends.judge" | grep -o '[0-9]*')
    [ "${n:-0}" -ge 24000 ] || fail "sends: ${n:-no} Sends judged, 8 x 3000 posted"
fi
perf writes --op write -s 65536 --qd 16 -n 200 &&
    { grep -qE 'Write=([0-9]{4,})' "$W/writes.judge" || fail "writes: too few Write segments"; }
perf reads --op read -s 65536 --qd 8 -n 50 &&
    { grep -q 'ReadReq=50,' "$W/reads.judge" || fail "reads: not 50 Read Requests"; }
[ $rc = 0 ] && echo "PASS: every SCTP capture is clean for check.sh and iwarp dump"
exit $rc
