#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# loss.two_hosts (issue 17, "Loss, between two hosts"): libiwarp between two network
# namespaces joined by a veth pair, with random packet loss.
#
#   - MTU 1500 and no segmentation offload on the pair (gso_max_size 1500, gso_max_segs 1), so
#     TCP cuts every FPDU into real 1448-octet segments, as on a wire, and a drop loses one
#     segment, not a 64 KiB super-packet; a counter checks no packet over 1500 octets passed.
#   - nftables (the kernel here has no netem) drops N% of the test's TCP packets at random on
#     the input hook of *each* namespace (`numgen random mod 100 < N drop`), so both directions
#     lose: client to server (Writes, Sends, Read Requests, ACKs) and server to client (Read
#     Responses, credit Sends, ACKs). Only the test's port range is touched.
#   - rto_min 10ms on both namespaces' routes (where the kernel takes it; else noted), so a
#     tail loss costs a short retransmission timeout, not 200 ms.
#   - For each of CRC on/off x 1/64 QPs x 1%/5% loss: loss_peer (tests/scripts/loss_peer.c) as
#     server in one namespace and client in the other moves LOSS_BYTES (64 MiB) of mixed RDMA
#     Writes, Reads and Sends; PASS when both exit 0: every octet checked (Writes at the
#     target when a later Send arrives, Reads at the initiator, Sends at the target), each
#     QP's Sends in order, every WR completed exactly once in posting order with SUCCESS, no
#     async event or CM event (no Terminate, no lost connection).
#   Per configuration it prints the time, the throughput, the segments dropped, TCP's
#   retransmissions and retransmission timeouts (nstat in each namespace).
#
# Usage: loss.sh LOSS_PEER
# Environment: LOSS_BYTES (default 67108864), LOSS_RATES ("1 5"), LOSS_QPS ("1 64"),
# LOSS_CRC ("1 0"), LOSS_TIMEOUT (seconds per configuration, default 200), LOSS_KEEP=DIR keeps
# every program's output when a configuration failed. scripts/loss-long.sh runs 1 GiB each.
# LOSS_CORRUPT=N (the checks' own test, CTest loss.detects_damage): also overwrite one octet
# of the payload of N in 1000 large packets to the server (veth does not verify TCP
# checksums), and PASS only when the run fails: with CRC off by loss_peer's data checks, with
# CRC on by MPA's CRC (a Terminate), never by a data check.
# Exit: 0 passed, 1 failed, 77 skipped (not root, no ip/nft, namespaces or nft refused).
set -u
PEER=$(realpath "${1:?usage: loss.sh LOSS_PEER}")
HERE=$(dirname "$(realpath "$0")")
# shellcheck source=../support/wait_for.sh
. "$HERE/../support/wait_for.sh"
# shellcheck source=../support/optional.sh
. "$HERE/../support/optional.sh"
skip() {
    echo "SKIP: $*"
    exit 77
}
[ "$(id -u)" = 0 ] || skip "not root (network namespaces, nftables)"
have "loss between namespaces" ip nft nstat || optional_exit 0
[ -x "$PEER" ] || {
    echo "loss.sh: $PEER is not executable"
    exit 1
}
BYTES=${LOSS_BYTES:-67108864}
RATES=${LOSS_RATES:-1 5}
QPSS=${LOSS_QPS:-1 64}
CRCS=${LOSS_CRC:-1 0}
TMO=${LOSS_TIMEOUT:-200}
CORRUPT=${LOSS_CORRUPT:-}
PORT0=7470 # the test's ports: PORT0 .. PORT0 + 99, one per configuration

W=$(mktemp -d "${TMPDIR:-/tmp}/loss.XXXXXX")
NA=iwloss$$s NB=iwloss$$c IA=iwl$$s IB=iwl$$c
AA=10.233.1.1 AB=10.233.1.2
KIDS=()
cleanup() {
    for p in "${KIDS[@]}"; do kill "$p" 2>/dev/null; done
    if [ "${FAILED:-0}" -gt 0 ] && [ -n "${LOSS_KEEP:-}" ]; then
        mkdir -p "$LOSS_KEEP" && cp -r "$W" "$LOSS_KEEP/"
    fi
    ip netns del "$NA" 2>/dev/null
    ip netns del "$NB" 2>/dev/null
    rm -rf "$W"
}
trap cleanup EXIT
trap "exit 1" INT TERM
{
    ip netns add "$NA" && ip netns add "$NB" &&
        ip link add "$IA" type veth peer name "$IB" &&
        ip link set "$IA" netns "$NA" && ip link set "$IB" netns "$NB" &&
        ip -n "$NA" link set "$IA" mtu 1500 && ip -n "$NB" link set "$IB" mtu 1500 &&
        ip -n "$NA" addr add "$AA/24" dev "$IA" && ip -n "$NB" addr add "$AB/24" dev "$IB" &&
        ip -n "$NA" link set "$IA" up && ip -n "$NB" link set "$IB" up &&
        ip -n "$NA" link set lo up && ip -n "$NB" link set lo up
} 2>"$W/netns.err" || skip "cannot make network namespaces: $(head -n 1 "$W/netns.err")"
# No segmentation offload: TCP builds one MSS-sized packet at a time (a veth passes GSO packets
# whole, so with offload a drop would take up to 64 KiB at once).
for ns_if in "$NA $IA" "$NB $IB"; do
    read -r ns ifc <<<"$ns_if"
    ip -n "$ns" link set "$ifc" gso_max_size 1500 gso_max_segs 1 2>>"$W/gso.err" ||
        echo "NOTE: the kernel refused gso_max_size/gso_max_segs on $ifc: $(head -n 1 "$W/gso.err")" \
            "(the oversize counter below says whether packets over 1500 octets passed)"
done
RTO=on
for ns_if in "$NA $IA" "$NB $IB"; do
    read -r ns ifc <<<"$ns_if"
    ip -n "$ns" route replace 10.233.1.0/24 dev "$ifc" rto_min 10ms 2>>"$W/rto.err" || RTO=off
done
if [ $RTO = on ]; then
    echo "INFO: rto_min 10ms on both routes: $(ip -n "$NA" route show 10.233.1.0/24)"
else
    echo "NOTE: the kernel refused the rto_min route metric ($(head -n 1 "$W/rto.err")); the default minimum RTO (200 ms) applies"
fi
ip netns exec "$NA" nft add table inet iwloss 2>"$W/nft.err" ||
    skip "nft cannot add a table in a namespace: $(head -n 1 "$W/nft.err")"

# rules NS DIR RATE: in NS's input hook, for the test's packets (DIR dport: to the server,
# sport: to the client), count those over 1500 octets, count all, drop RATE% at random.
rules() {
    local ns=$1 rate=$3 m="tcp $2 $PORT0-$((PORT0 + 99))"
    ip netns exec "$ns" nft -f - <<EOF
table inet iwloss
delete table inet iwloss
table inet iwloss {
    chain input {
        type filter hook input priority 0; policy accept;
        $m meta length > 1500 counter
        $m counter
        $m numgen random mod 100 < $rate counter drop
$([ -n "$CORRUPT" ] && [ "$2" = dport ] &&
        echo "        $m meta length > 1000 numgen random mod 1000 < $CORRUPT @th,480,8 set 0x5a counter")
    }
}
EOF
}
# counters NS: "OVERSIZE SEEN DROPPED MANGLED" (packets) of NS's rules
counters() {
    ip netns exec "$1" nft list chain inet iwloss input |
        awk '/counter packets/ { for (i = 1; i < NF; i++) if ($i == "packets") v[n++] = $(i + 1) }
             END { print v[0] + 0, v[1] + 0, v[2] + 0, v[3] + 0 }'
}
# tcpstat NS: "OUTSEGS RETRANS TIMEOUTS PROBES" (TCP segments sent, retransmitted; RTO
# expiries; tail loss probes) of the namespace, which holds nothing but the test's connections
tcpstat() {
    ip netns exec "$1" nstat -asz TcpOutSegs TcpRetransSegs TcpExtTCPTimeouts \
        TcpExtTCPLossProbes 2>/dev/null |
        awk '$1 == "TcpOutSegs" { o = $2 } $1 == "TcpRetransSegs" { r = $2 }
             $1 == "TcpExtTCPTimeouts" { t = $2 } $1 == "TcpExtTCPLossProbes" { p = $2 }
             END { print o + 0, r + 0, t + 0, p + 0 }'
}

PASSED=0 FAILED=0 N=0
T_ALL0=${EPOCHREALTIME/[.,]/}
for rate in $RATES; do
    for qps in $QPSS; do
        for crc in $CRCS; do
            port=$((PORT0 + N))
            N=$((N + 1))
            name="loss ${rate}%, CRC $([ "$crc" = 1 ] && echo on || echo off), $qps QP$([ "$qps" = 1 ] || echo s), $((BYTES >> 20)) MiB"
            if ! { rules "$NA" dport "$rate" && rules "$NB" sport "$rate"; } 2>"$W/rules.err"; then
                FAILED=$((FAILED + 1))
                echo "FAIL $name: nft rules: $(head -n 2 "$W/rules.err")"
                continue
            fi
            read -r sa0 sr0 st0 sp0 <<<"$(tcpstat "$NA")"
            read -r ca0 cr0 ct0 cp0 <<<"$(tcpstat "$NB")"
            out=$W/run$N
            t0=${EPOCHREALTIME/[.,]/}
            timeout "$TMO" ip netns exec "$NA" "$PEER" server "$AA" "$port" "$qps" "$BYTES" "$crc" \
                >"$out.server" 2>&1 &
            srv=$!
            KIDS+=("$srv")
            crc_rc=1
            if wait_for -p "$srv" 30 "the server listening" grep -qs "^listening" "$out.server"; then
                timeout "$TMO" ip netns exec "$NB" "$PEER" client "$AA" "$port" "$qps" "$BYTES" \
                    "$crc" "$N" >"$out.client" 2>&1
                crc_rc=$?
            fi
            [ $crc_rc = 0 ] || kill "$srv" 2>/dev/null
            wait "$srv"
            srv_rc=$?
            t1=${EPOCHREALTIME/[.,]/}
            read -r sa1 sr1 st1 sp1 <<<"$(tcpstat "$NA")"
            read -r ca1 cr1 ct1 cp1 <<<"$(tcpstat "$NB")"
            read -r s_over s_seen s_drop s_mangled <<<"$(counters "$NA")"
            read -r c_over c_seen c_drop _ <<<"$(counters "$NB")"
            secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", (b - a) / 1e6 }')
            if [ -n "$CORRUPT" ]; then
                # The checks' own test: damaged payload must fail the run, by a data check with
                # CRC off, and never by one with CRC on (MPA's CRC must refuse it first: a
                # Terminate, seen as a completion error, an async event or a lost connection).
                caught=$(grep -h -m1 'FAIL:' "$out.server" "$out.client" | head -n 1)
                problems=$(
                    [ "$s_mangled" -gt 0 ] || echo "    no packet was damaged"
                    [ -n "$caught" ] || echo "    the damage went unnoticed (client exit $crc_rc, server exit $srv_rc)"
                    [ "$crc" = 1 ] && grep -h 'FAIL:.*differs' "$out.server" "$out.client" |
                        sed 's/^/    with CRC on, damaged data was placed: /'
                )
                if [ -z "$problems" ]; then
                    PASSED=$((PASSED + 1))
                    echo "PASS $name, $s_mangled packets to the server damaged: caught: ${caught#*FAIL: }"
                else
                    FAILED=$((FAILED + 1))
                    echo "FAIL $name, $s_mangled packets to the server damaged"
                    echo "$problems"
                fi
                continue
            fi
            problems=$(
                [ $crc_rc = 0 ] || printf '    client exit %s:\n%s\n' "$crc_rc" "$(tail -n 5 "$out.client" | sed 's/^/      /')"
                [ $srv_rc = 0 ] || printf '    server exit %s:\n%s\n' "$srv_rc" "$(tail -n 5 "$out.server" | sed 's/^/      /')"
                # the failing check's own line, which the library's later log lines may push out
                # of the tails above
                grep -h 'FAIL:' "$out.client" "$out.server" | sed 's/^/    /'
                grep -q '^client: .* no Terminate$' "$out.client" || echo "    no client summary line"
                grep -q '^server: .* no Terminate$' "$out.server" || echo "    no server summary line"
                [ "$s_over" = 0 ] && [ "$c_over" = 0 ] ||
                    echo "    packets over 1500 octets passed: $s_over to the server, $c_over to the client"
                [ "$s_drop" -gt 0 ] && [ "$c_drop" -gt 0 ] ||
                    echo "    the rules dropped nothing in one direction ($c_drop to the client, $s_drop to the server)"
            )
            if [ -z "$problems" ]; then
                PASSED=$((PASSED + 1))
                echo "PASS $name: $secs s"
            else
                FAILED=$((FAILED + 1))
                echo "FAIL $name: $secs s"
                echo "$problems"
            fi
            # the figures: the client's line, then what the network did
            sed -n 's/^client: /    client: /p' "$out.client"
            sed -n 's/^server: /    server: /p' "$out.server"
            awk -v cs="$c_seen" -v cd="$c_drop" -v ss="$s_seen" -v sd="$s_drop" \
                -v cr=$((cr1 - cr0)) -v ct=$((ct1 - ct0)) -v co=$((ca1 - ca0)) -v cp=$((cp1 - cp0)) \
                -v sr=$((sr1 - sr0)) -v st=$((st1 - st0)) -v so=$((sa1 - sa0)) -v sp=$((sp1 - sp0)) 'BEGIN {
                f = "    to the %s: %d of %d packets dropped (%.2f%%); %s TCP: %d segments sent, %d retransmitted, %d RTO expiries, %d tail loss probes\n"
                printf f, "server", sd, ss, ss ? 100 * sd / ss : 0, "client", co, cr, ct, cp
                printf f, "client", cd, cs, cs ? 100 * cd / cs : 0, "server", so, sr, st, sp
            }'
        done
    done
done
T_ALL1=${EPOCHREALTIME/[.,]/}
echo "$PASSED passed, $FAILED failed in $(awk -v a="$T_ALL0" -v b="$T_ALL1" 'BEGIN { printf "%.1f", (b - a) / 1e6 }') s"
[ "$FAILED" = 0 ]
