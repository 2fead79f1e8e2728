#!/usr/bin/env bash
# DDP over SCTP through the whole library, judged on the wire: `iwarp ping --transport sctp`
# (rping's protocol: Send, RDMA Read, RDMA Write, Send per ping, then both Stream Session
# Terminates) recorded by the client's packet trace (IWARP_PCAP: each SCTP packet as its UDP
# datagram), then judged by the wire checker (check.sh --sctp-udp: zero errors) and by
# `iwarp dump` (zero errors), which must agree. 64-octet pings keep every DATA chunk in its
# own packet: the checker maps DATA chunk fields to DDP segments per packet and misreads two
# chunks bundled into one packet (see docs/design.md §9).
#   sctp_judge.sh IWARP_BIN CHECK_SH
set -u
BIN=$1
CHECK=$2
W=$(mktemp -d)
SRV=
trap '[ -n "$SRV" ] && kill "$SRV" 2>/dev/null; rm -rf "$W"' EXIT
command -v tshark >/dev/null || { echo "FAIL: tshark is not installed"; exit 1; }
PORT=$((20000 + RANDOM % 20000))
"$BIN" ping -s -a 127.0.0.1 -p "$PORT" --transport sctp -S 64 >"$W/srv.log" 2>&1 &
SRV=$!
for _ in $(seq 100); do
    grep -q '^listening on' "$W/srv.log" 2>/dev/null && break
    sleep 0.05
done
IWARP_PCAP="$W/c.pcap" timeout 60 "$BIN" ping -c -a 127.0.0.1 -p "$PORT" --transport sctp \
    -C 20 -S 64 -V >"$W/cli.log" 2>&1 || { echo "FAIL: client: $(tail -n 3 "$W/cli.log")"; exit 1; }
timeout 20 tail --pid="$SRV" -f /dev/null
wait "$SRV" || { echo "FAIL: server: $(tail -n 3 "$W/srv.log")"; exit 1; }
SRV=
rc=0
bash "$CHECK" -q --sctp-udp "$PORT" "$W/c.pcap" >"$W/judge.txt" 2>&1
if ! grep -q '^RESULT: PASS' "$W/judge.txt" || ! grep -q 'errors=0 ' "$W/judge.txt"; then
    echo "FAIL: check.sh:"; grep -E 'ERROR|SUMMARY|RESULT' "$W/judge.txt" | head -20; rc=1
fi
# 20 pings: 20 Read Requests and Responses, 20 Writes, 80 Sends; session Initiate/Accept and
# both Terminates
grep -q 'ReadReq=20, ReadResp=20, Send=80, Write=20' "$W/judge.txt" ||
    { echo "FAIL: unexpected messages: $(grep rdmap_messages "$W/judge.txt")"; rc=1; }
grep -q 'sctp-ctl=4' "$W/judge.txt" || { echo "FAIL: not 4 session control chunks"; rc=1; }
"$BIN" dump "$W/c.pcap" >"$W/dump.txt" 2>&1
if ! grep -q 'errors=0 warnings=0 sctp_associations=1' "$W/dump.txt" ||
    ! grep -q '^RESULT: PASS' "$W/dump.txt"; then
    echo "FAIL: iwarp dump:"; tail -n 5 "$W/dump.txt"; rc=1
fi
[ $rc = 0 ] && echo "PASS: the client's SCTP capture is clean for check.sh and iwarp dump"
exit $rc
