#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# interop.siw_scen: MPA variants, protection errors and abrupt endings between libiwarp (`iwarp
# ping`, tools/iwarp/ping.c, with its hidden --x-* test options) and Linux siw's rping in a qemu
# guest (../shared/tools/siw-vm). Two guest boots:
#
# Boot 1 (host -> guest; the guest runs one `rping -s` per run, each on its own port):
#   markers   we ask for markers (M=1); siw answers R=1 (it implements no markers, RFC 5044
#             §7.1 lets a responder refuse); we must report REJECTED with IWARP_ERR_MPA_MARKERS
#             (-29) and exit 1.
#   markers-fb  the same with iwarp_conn_param.markers_fallback: after siw's Reject we connect
#             again without markers (same rping: siw refuses M=1 in the kernel, rping never
#             sees the first connection); 3 validated pings must follow with markers off.
#   p2p-w     we offer RFC 6581 peer-to-peer with a Write RTR only; siw (rtr_type
#             READ_RTR|WRITE_RTR) picks it; 3 validated pings must follow.
#   bad-sink  we advertise a corrupted STag for the sink; siw's RDMA Write hits it and we send
#             the RFC 5040 §4.8 Terminate (DDP tagged, invalid STag: 1/1/0x00 with M+D); siw's
#             dmesg must show it arriving ("got TERMINATE"), and our ping reports it (exit 1).
#   atomic    we enable RFC 7306 atomics on our QP and probe siw as RFC 7306 §1.1 suggests (a
#             FetchAdd of 0); siw has no RFC 7306 (atomic_cap 0) and answers with a Terminate,
#             RDMAP Remote Operation, Unexpected OpCode (0/2/0x06, in its bit-reversed layout);
#             the FetchAdd must complete "remote operation error" with that cause, the async
#             event must carry it from the peer, and our ping exits 1.
#   rst       `iwarp ping -c --x-audit` runs 4096-octet pings; the guest kills its rping -9 mid
#             transfer (siw resets the stream); every WR must complete exactly once (flushed or
#             errored) and every destroy succeed (audit PASS, exit 0).
#   kill      the same, then the whole guest (qemu) is killed mid-transfer.
# Boot 2 (the guest dials us, then we dial it):
#   bad-rkey  our server RDMA-Reads the client's buffer with a corrupted STag (a protection error
#             we commit); siw answers with a Terminate (RDMAP Remote Protection, invalid STag,
#             M+D+R); we decode it (its bit-reversed control word, wire-reference §1.5) and
#             report an async event with term_from_peer, cause 0/1/0x00 (exit 1).
#   p2p-r     peer-to-peer offering a Read RTR only: siw's Reply picks it (D=1) and we send a
#             zero-length Read RTR (STag 1, size 0) 250 ms after the Reply
#             (iwarp_conn_param.first_fpdu_delay_ms: siw 6.1's accept sends the Reply before it
#             installs its socket callbacks, docs/interop-siw.md, so an RTR sent at once can go
#             unnoticed and the run stalls); siw must answer and 3 validated pings follow.
#   p2p-s     peer-to-peer offering a Send RTR only: siw offers Write instead (RFC 6581 §9.2
#             allows that); we cannot send it, so we send TERM 2/0/0x07 (RFC 6581 §9.2 "MUST")
#             and report CONNECT_ERROR IWARP_ERR_MPA_RTR (-27). Last, because siw 6.1 then hits
#             "kernel BUG at drivers/infiniband/core/iwcm.c:969" in its iw_cm worker (reported
#             as NOTE; the guest's iw_cm is dead afterwards).
#
# Wire judge (../shared/tools/wire-check/check.sh) per run, on the capture of the guest NIC:
#   - always allowed: [crc-off] (both peers declined CRC: a property of the connection);
#   - bad-rkey, siw's direction: [terminate] (M/D/R in the reserved bits) and [length] (so the
#     headers look unannounced): siw's bit-reversed Terminate, wire-reference §1.5;
#   - rst, kill: the end-of-capture warnings ("#end") either way: a message or Read Response
#     under way when the connection ends abruptly stays unfinished;
#   - kill: [undissected] either way, for the FPDU the capture ends inside of: qemu, which writes
#     the capture, dies mid-transfer (no reset follows);
#   - rst, siw's direction only: [undissected]. When its process dies, siw's socket is closed
#     with our data unread, so Linux aborts it (RST) and drops what siw had queued, which can be
#     the rest of an FPDU: the judge calls that the sender's own reset mid-FPDU. An FPDU of ours
#     cut by that reset is listed as cut, not as a finding.
# Nothing else in libiwarp's direction.
#
# CRC on/off and siw's defaults (Rev 2, enhanced, no CRC) in both roles: interop.siw_rping.
# Usage: siw_scen.sh IWARP_BINARY [SHARED_DIR]. SIW_SCEN_KEEP=DIR keeps the files there.
# Exit: 0 all passed, 1 a run failed, 77 skipped (no guest image, qemu, root or tshark).
set -u
BIN=$(realpath "${1:?usage: siw_scen.sh IWARP_BINARY [SHARED_DIR]}")
SHARED=$(realpath "${2:-$(dirname "$0")/../../../shared}")
VM=$SHARED/tools/siw-vm
export JUDGE=$SHARED/tools/wire-check/check.sh # used by judge_lib.sh
HERE=$(dirname "$(realpath "$0")")
# shellcheck source=judge_lib.sh
. "$HERE/judge_lib.sh"
# shellcheck source=../support/wait_for.sh
. "$HERE/../support/wait_for.sh"
# shellcheck source=../support/bounded.sh
. "$HERE/../support/bounded.sh"
# Put in front of the guest's commands: wait_for and the guest's conditions (guest_lib.sh)
GUEST_LIB=$(cat "$HERE/../support/wait_for.sh" "$HERE/guest_lib.sh")
CACHE=${SIW_VM_CACHE:-$HOME/.cache/iwarp-siw-vm}
export SIW_VM_TIMEOUT=${SIW_VM_TIMEOUT:-240}
# What siw 6.1 does with a peer-to-peer offer of one RTR type (w r s): ok = accepted, pings run
# Judge categories siw's Terminate brings (its control word is bit-reversed, wire-reference §1.5)
SIW_TERM_KNOWN="terminate length"
# An abrupt ending leaves messages unfinished (rst, kill); the capture ends with the guest
# (kill): its last FPDU may be incomplete; siw's socket aborted with an FPDU half sent (rst)
ABRUPT_END="end"
CAPTURE_CUT="undissected end"
SIW_ABORT="undissected end"
# Ping size of the abrupt-ending runs: rping's largest (multi-segment Writes and Read
# Responses, large FPDUs re-segmented by slirp).
ABRUPT_SIZE=65535
# The abrupt endings come once this many pings are done: the transfer is well under way.
PINGS_UNDER_WAY=20
# pings_done LOG: `iwarp ping -c -d`'s LOG shows PINGS_UNDER_WAY pings done (a ping is two
# advertisements, each answered by a Send: two "recv completion" lines).
pings_done() { [ "$(grep -c '^recv completion' "$1")" -ge $((2 * PINGS_UNDER_WAY)) ]; }

skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "not root (the siw-vm guest runs as root)"
command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 is not installed"
[ -s "$CACHE/disk.img" ] || skip "no siw-vm image cache in $CACHE (run $VM/setup.sh once)"
command -v tshark >/dev/null || skip "tshark is not installed (the wire judge needs it)"
[ -x "$BIN" ] || { echo "siw_scen.sh: $BIN is not executable"; exit 1; }
# Another engineer's guest: wait for it (TCG on 2 cores cannot run two well), then go on anyway.
no_guest() { ! pgrep -f qemu-system >/dev/null; }
wait_for 300 "other qemu guests to end" no_guest

W=$(mktemp -d "${TMPDIR:-/tmp}/siw_scen.XXXXXX")
KIDS=()
cleanup() {
    for p in "${KIDS[@]}"; do kill "$p" 2>/dev/null; done
    [ -n "${SIW_SCEN_KEEP:-}" ] && cp -r "$W"/. "$SIW_SCEN_KEEP/" 2>/dev/null
    rm -rf "$W"
}
trap cleanup EXIT
BASE=$((20000 + ($$ * 7) % 12000)) # below the ephemeral range (32768-)
PASSED=0 FAILED=0

# Judge a capture for one port; prints the findings not allowed (judge_lib.sh). OURS is i>r or
# r>i; ALLOW_OURS and ALLOW_SIW are categories allowed per direction.
judge() { # PCAP PORT OURS ALLOW_OURS ALLOW_SIW
    siw_judge "$1" "$2" "$3" "crc-off $4" "crc-off $5"
}

# Boot 1's verdicts wait until the guest is gone and its capture complete.
LATER_NAME=() LATER_PR=() LATER_JUDGE=()
later() { # NAME PROBLEMS PORT OURS ALLOW_OURS ALLOW_SIW
    LATER_NAME+=("$1") LATER_PR+=("$2") LATER_JUDGE+=("$3|$4|$5|$6")
}

# The guest's waits that timed out (wait_for's lines in its log), once the guest is gone.
guest_waits() { grep '^wait_for: ' "$D/guest.log" | sed 's/^/NOTE guest: /'; }

verdict() { # NAME PROBLEMS
    if [ -z "$2" ]; then
        PASSED=$((PASSED + 1))
        echo "PASS $1"
    else
        FAILED=$((FAILED + 1))
        echo "FAIL $1"
        echo "$2"
    fi
}

# ---- boot 1: host -> guest ----------------------------------------------------------------
D=$W/h2g
mkdir -p "$D/share"
PM=$BASE PW=$((BASE + 1)) PB=$((BASE + 2)) PT=$((BASE + 3)) PK=$((BASE + 4)) PF=$((BASE + 8))
PA=$((BASE + 9))
# The host touches go-rst once the rst run is well under way (bad-sink is over by then): the
# guest takes dmesg for bad-sink once siw has seen its whole connection, then kills rst's rping.
GUEST="$GUEST_LIB
cd /share
for p in $PM $PF $PW $PB $PA $PT $PK; do
    rping -s -a 10.0.2.15 -p \$p -S $ABRUPT_SIZE >rping.\$p.log 2>&1 & echo \$! >pid.\$p
done
for p in $PM $PF $PW $PB $PA $PT $PK; do
    wait_for -p \$(cat pid.\$p) 60 \"rping's listener on port \$p\" listening \$p || exit 1
done
touch ready
until [ -e go-rst ]; do sleep 0.2; done
wait_for 30 \"the end of the bad-sink connection (port $PB)\" port_closed $PB
dmesg >dmesg1.txt
kill -9 \$(cat pid.$PT); touch rst-done
until [ -e never ]; do sleep 1; done"
FWD=()
for p in $PM $PF $PW $PB $PA $PT $PK; do FWD+=(--hostfwd "$p"); done
"$VM/run.sh" "${FWD[@]}" --pcap "$D/cap.pcap" --share "$D/share" "$GUEST" >"$D/guest.log" 2>&1 &
VMPID=$!
KIDS+=("$VMPID")
wait_for -p "$VMPID" 180 "boot 1's guest (its rping listeners)" test -e "$D/share/ready" ||
    { echo "FAIL boot 1: the guest did not start: $(tail -n 5 "$D/guest.log")"; exit 1; }
ping_c() { # PORT LOG ARGS...
    local port=$1 log=$2
    shift 2
    bounded 120 "${log%.log}.hang" "$BIN" ping -c -a 127.0.0.1 -p "$port" -d --first-delay 250 \
        "$@" >"$log" 2>&1
}

# markers
ping_c "$PM" "$D/markers.log" -C 1 --x-markers
rc=$?
pr=$(
    [ $rc = 1 ] || echo "    iwarp ping exit $rc (want 1)"
    grep -q 'cm event REJECTED, error -29 ' "$D/markers.log" ||
        echo "    no REJECTED with IWARP_ERR_MPA_MARKERS: $(grep 'iwarp ping' "$D/markers.log" | head -n 3)"
)
later "markers (REJECTED, MPA_MARKERS)" "$pr" "$PM" "i>r" "" ""

# markers with the fallback: Reject, then a connection without markers
ping_c "$PF" "$D/markers-fb.log" -C 3 -S 64 -V --x-markers-fallback
rc=$?
mpa=$(grep '^MPA:' "$D/markers-fb.log" | sed 's/^MPA: //')
pr=$(
    [ $rc = 0 ] || echo "    iwarp ping exit $rc: $(grep '^iwarp ping' "$D/markers-fb.log" | tail -n 3)"
    grep -q 'markers off' <<<"$mpa" || echo "    markers not off: $mpa"
    grep -q ': 3 pings of 64 octets done' "$D/markers-fb.log" || echo "    $(grep 'pings of' "$D/markers-fb.log" || echo 'no summary line')"
)
later "markers-fb (Reject, then $mpa)" "$pr" "$PF" "i>r" "" ""

# peer-to-peer with a Write RTR
ping_c "$PW" "$D/p2p-w.log" -C 3 -S 64 -V --x-p2p w
rc=$?
mpa=$(grep '^MPA:' "$D/p2p-w.log" | sed 's/^MPA: //')
pr=$(
    [ $rc = 0 ] || echo "    iwarp ping exit $rc: $(grep '^iwarp ping' "$D/p2p-w.log" | tail -n 3)"
    grep -q 'peer-to-peer, Write RTR' <<<"$mpa" || echo "    not a Write RTR: $mpa"
)
later "p2p-w ($mpa)" "$pr" "$PW" "i>r" "" ""

# bad sink STag: we send the Terminate
ping_c "$PB" "$D/bad-sink.log" -C 1 -S 64 --x-bad-sink
rc=$?
pr=$(
    [ $rc = 1 ] || echo "    iwarp ping exit $rc (want 1)"
    grep -q 'async event .*Terminate cause 010100)' "$D/bad-sink.log" ||
        echo "    no Terminate 1/1/0x00 reported: $(grep 'async\|iwarp ping' "$D/bad-sink.log" | head -n 3)"
)
bs_pr=$pr

# atomic: the RFC 7306 §1.1 probe; siw answers Unexpected OpCode
ping_c "$PA" "$D/atomic.log" -C 1 -S 64 --x-atomic
rc=$?
pr=$(
    [ $rc = 1 ] || echo "    iwarp ping exit $rc (want 1)"
    grep -q 'atomic probe: FetchAdd of 0 posted' "$D/atomic.log" || echo "    no probe posted"
    grep -q 'cq completion failed: remote operation error (Terminate cause 000206)' "$D/atomic.log" ||
        echo "    the FetchAdd did not fail with 0/2/0x06: $(grep 'iwarp ping' "$D/atomic.log" | head -n 4)"
    grep -q 'async event .*Terminate cause 000206, from the peer)' "$D/atomic.log" ||
        echo "    no async event with siw's cause: $(grep 'async' "$D/atomic.log" | head -n 2)"
)
at_pr=$pr

# rst: rping killed -9 mid-transfer, once PINGS_UNDER_WAY pings are done (-d: a trace line per
# completion, to count them)
bounded 120 "$D/rst.hang" "$BIN" ping -c -a 127.0.0.1 -p "$PT" -S "$ABRUPT_SIZE" -C 0 \
    --first-delay 250 --retry 30 -d --x-audit >"$D/rst.log" 2>&1 &
OP=$!
KIDS+=("$OP")
wait_for -p "$OP" 60 "$PINGS_UNDER_WAY pings done in the rst run" pings_done "$D/rst.log"
touch "$D/share/go-rst"
wait "$OP"
rc=$?
pr=$(
    [ $rc = 0 ] || echo "    iwarp ping exit $rc: $(grep -E '^audit|^iwarp ping' "$D/rst.log" | tail -n 4)"
    grep -qE '^audit: .* [1-9][0-9]* flushed.*PASS' "$D/rst.log" || echo "    $(grep '^audit' "$D/rst.log" || echo 'no audit line')"
    wait_for -p "$VMPID" 30 "the guest's kill of rst's rping" test -e "$D/share/rst-done" ||
        echo "    the guest did not kill its rping"
)
later "rst (peer killed -9: $(grep '^audit' "$D/rst.log" | sed 's/^audit: //'))" "$pr" "$PT" "i>r" "$ABRUPT_END" "$SIW_ABORT"
# siw logs the Terminate it receives (siw_proc_terminate); Layer 1 EType 1 reads the same in
# siw's bit-reversed decoding
SIWTERM=$(grep -o 'got TERMINATE.*' "$D/share/dmesg1.txt" 2>/dev/null | head -n 1)
[ "$SIWTERM" = "got TERMINATE. layer 1, type 1, code 0" ] ||
    bs_pr+="    siw's dmesg does not show our Terminate: ${SIWTERM:-none}"
later "bad-sink (our Terminate 1/1/0x00; siw: $SIWTERM)" "$bs_pr" "$PB" "i>r" "" ""
# siw logs the opcode it does not know (siw_get_hdr): 10, the Atomic Request
grep -q 'siw: received unknown packet type 10' "$D/share/dmesg1.txt" 2>/dev/null ||
    at_pr+="    siw's dmesg does not show the Atomic Request as unknown"
later "atomic (FetchAdd probe: siw's Terminate 0/2/0x06 reported)" "$at_pr" "$PA" "i>r" "" \
    "$SIW_TERM_KNOWN"

# kill: the guest dies mid-transfer
bounded 120 "$D/kill.hang" "$BIN" ping -c -a 127.0.0.1 -p "$PK" -S "$ABRUPT_SIZE" -C 0 \
    --first-delay 250 --retry 30 -d --x-audit >"$D/kill.log" 2>&1 &
OP=$!
KIDS+=("$OP")
wait_for -p "$OP" 60 "$PINGS_UNDER_WAY pings done in the kill run" pings_done "$D/kill.log"
QEMU=$(pgrep -P "$VMPID" -f qemu-system)
[ -n "$QEMU" ] && kill "$QEMU"
wait "$OP"
rc=$?
wait "$VMPID"
pr=$(
    [ -n "$QEMU" ] || echo "    no qemu process to kill"
    [ $rc = 0 ] || echo "    iwarp ping exit $rc: $(grep -E '^audit|^iwarp ping' "$D/kill.log" | tail -n 4)"
    grep -qE '^audit: .* [1-9][0-9]* flushed.*PASS' "$D/kill.log" || echo "    $(grep '^audit' "$D/kill.log" || echo 'no audit line')"
)
later "kill (guest killed: $(grep '^audit' "$D/kill.log" | sed 's/^audit: //'))" "$pr" "$PK" "i>r" \
    "$CAPTURE_CUT" "$CAPTURE_CUT"
for i in "${!LATER_NAME[@]}"; do
    IFS='|' read -r port ours ao as <<<"${LATER_JUDGE[$i]}"
    verdict "${LATER_NAME[$i]}" "${LATER_PR[$i]}$(judge "$D/cap.pcap" "$port" "$ours" "$ao" "$as")"
done
guest_waits

# ---- boot 2: the guest dials us (bad-rkey), then we dial it (p2p-r, p2p-s) ---------------
D=$W/g2h
mkdir -p "$D/share"
PORT=$((BASE + 5)) PR=$((BASE + 6)) PS=$((BASE + 7))
bounded 120 "$D/ours.hang" "$BIN" ping -s -a 127.0.0.1 -p "$PORT" -S 64 -d --x-bad-rkey \
    >"$D/ours.log" 2>&1 &
SRV=$!
KIDS+=("$SRV")
wait_for -p "$SRV" 30 "our server's listener (port $PORT)" grep -q '^listening on' "$D/ours.log"
# The host touches done when its p2p-s run has ended; the guest then waits until its side of that
# connection has closed too (siw has read our TERM and our FIN, and all of it is in the capture)
# before it takes dmesg (siw's "got TERMINATE" and iw_cm's BUG come with that close).
GUEST="$GUEST_LIB
cd /share
for p in $PR $PS; do
    rping -s -a 10.0.2.15 -p \$p -S 64 >rping.\$p.log 2>&1 &
    wait_for -p \$! 60 \"rping's listener on port \$p\" listening \$p || exit 1
done
touch ready
rping -c -a 10.0.2.2 -p $PORT -C 1 -S 64 -V >rping-c.log 2>&1
until [ -e done ]; do sleep 0.2; done
wait_for 30 \"the end of the p2p-s connection (port $PS)\" port_closed $PS
dmesg >dmesg2.txt"
"$VM/run.sh" --hostfwd "$PR" --hostfwd "$PS" --pcap "$D/cap.pcap" --share "$D/share" "$GUEST" \
    >"$D/guest.log" 2>&1 &
VMPID=$!
KIDS+=("$VMPID")
wait_for -p "$VMPID" 180 "boot 2's guest (its rping listeners)" test -e "$D/share/ready"
wait "$SRV"
rc=$?
pr=$(
    [ $rc = 1 ] || echo "    iwarp ping exit $rc (want 1)"
    grep -qE 'async event .*Terminate cause 000100, from the peer' "$D/ours.log" ||
        echo "    no Terminate 0/1/0x00 from the peer: $(grep 'async\|iwarp ping' "$D/ours.log" | head -n 3)"
)
BR_PR=$pr BR_NAME="bad-rkey (siw's Terminate: $(grep -o 'Terminate cause [0-9a-f]*, from the peer' "$D/ours.log" | head -n 1))"

# p2p-r: Read RTR negotiated and answered (see above)
bounded 15 "$D/p2p-r.hang" "$BIN" ping -c -a 127.0.0.1 -p "$PR" -d -C 3 -S 64 -V --x-p2p r \
    --first-delay 250 >"$D/p2p-r.log" 2>&1
rc=$?
mpa=$(grep '^MPA:' "$D/p2p-r.log" | sed 's/^MPA: //')
pr=$(
    [ $rc = 0 ] || echo "    iwarp ping exit $rc (124: stalled, siw never answered the Read RTR)"
    grep -q ': 3 pings of 64 octets done' "$D/p2p-r.log" || echo "    not 3 pings done"
    grep -q 'peer-to-peer, Read RTR' <<<"$mpa" || echo "    not a Read RTR: $mpa"
)
PR_PR=$pr PR_NAME="p2p-r ($mpa; $(grep -o '[0-9]* pings of [0-9]* octets done' "$D/p2p-r.log"))"

# p2p-s: siw offers Write instead; we send TERM 2/0/0x07
bounded 30 "$D/p2p-s.hang" "$BIN" ping -c -a 127.0.0.1 -p "$PS" -d -C 1 -S 64 --x-p2p s \
    >"$D/p2p-s.log" 2>&1
rc=$?
touch "$D/share/done"
wait "$VMPID" # the capture is complete only now
verdict "$BR_NAME" "$BR_PR$(judge "$D/cap.pcap" "$PORT" "r>i" "" "$SIW_TERM_KNOWN")"
verdict "$PR_NAME" "$PR_PR$(
    judge "$D/cap.pcap" "$PR" "i>r" "" ""
    grep -q 'i>r FPDU .*ReadReq sink=0x00000001@0x0 size=0' "$D/cap.pcap.$PR.judge" ||
        echo "    no zero-length Read RTR on the wire"
)"
pr=$(
    [ $rc = 1 ] || echo "    iwarp ping exit $rc (want 1)"
    grep -q 'cm event CONNECT_ERROR, error -27 ' "$D/p2p-s.log" ||
        echo "    no CONNECT_ERROR MPA_RTR: $(grep 'iwarp ping' "$D/p2p-s.log" | head -n 3)"
    judge "$D/cap.pcap" "$PS" "i>r" "" ""
    grep -q 'i>r FPDU .*Terminate layer=LLP etype=0 code=0x07' "$D/cap.pcap.$PS.judge" ||
        echo "    our TERM 2/0/0x07 is not on the wire"
)
# siw logs "got TERMINATE" only when it reads the TERM before it sees our close (not always:
# the accept race again), so its line is information, not a condition.
siwterm=$(grep -o 'got TERMINATE.*' "$D/share/dmesg2.txt" | head -n 1)
verdict "p2p-s (siw offers a Write RTR; we send TERM 2/0/0x07; siw: ${siwterm:-logged no Terminate})" "$pr"
grep -q 'kernel BUG at' "$D/share/dmesg2.txt" &&
    echo "NOTE siw: $(grep -o 'kernel BUG at.*' "$D/share/dmesg2.txt" | head -n 1) after our RFC 6581 §9.2 TERM"
guest_waits

bounded_report "$W"/*/*.hang # our programs that overran their bound, if any
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
