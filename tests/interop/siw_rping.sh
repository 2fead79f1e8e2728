#!/bin/bash
# interop.siw_rping: libiwarp's whole stack through its public API (tests/interop/siw_rping.c) against the real
# rping of rdma-core on Linux siw, in a qemu guest (../shared/tools/siw-vm), in both roles:
#   host -> guest: `rping -s` in the guest, `siw_rping client` dials it through a qemu hostfwd
#   guest -> host: `siw_rping server` on 127.0.0.1, `rping -c -V` in the guest dials 10.0.2.2
# for: 10 x 64 octets (CRC off, siw's default), 10 x 64 with --crc (we ask, siw honours C=1),
# and 10 x 65535 (the largest rping size: multi-segment Read Responses and Writes).
#
# Each run passes only if both programs exit 0, the guest's rping printed exactly the expected
# data for every iteration (-v; not for 65535, where rping -c -V validates instead), and the wire
# judge (../shared/tools/wire-check/check.sh) passes the capture of the guest NIC with these
# findings only:
#   - [crc-off] in the runs without CRC: both peers declined CRC by configuration (siw's default,
#     which we match); a property of the connection, reported on the MPA Reply, not a deviation;
#   - in siw's direction: nothing else is expected either (siw's known deviations, wire-reference
#     §1.5/§1.6, only show in Terminates, and none is sent). Add a category to SIW_KNOWN only with
#     a reason.
# Any other WARN or ERROR in our direction (or without a frame) fails the run.
#
# Usage: siw_rping.sh SIW_RPING_BINARY [SHARED_DIR]    (CTest passes both)
# SIW_RPING_ONLY=GLOB runs only the matching runs (e.g. 'h2g-*'); SIW_RPING_KEEP=DIR keeps the
# files of failed runs there.
# Exit: 0 all passed, 1 a run failed, 77 skipped (no siw-vm image cache, no qemu, not root,
# no tshark). Prints one line per run and "N passed, N failed". About 2 minutes under TCG.
set -u
BIN=$(realpath "${1:?usage: siw_rping.sh SIW_RPING_BINARY [SHARED_DIR]}")
SHARED=$(realpath "${2:-$(dirname "$0")/../../../shared}")
VM=$SHARED/tools/siw-vm
JUDGE=$SHARED/tools/wire-check/check.sh
CACHE=${SIW_VM_CACHE:-$HOME/.cache/iwarp-siw-vm}
export SIW_VM_TIMEOUT=${SIW_VM_TIMEOUT:-90} # one guest run; a hung one must not eat the budget
SIW_KNOWN="" # judge categories siw's direction may show (none needed so far)
# siw 6.1 as MPA responder (rping -s): when the initiator's first FPDU (our Send) follows the MPA
# Reply at once, rping's RDMA Read is sometimes never transmitted (or ibv_post_send fails) and the
# run stalls; 250 ms between the Reply and the first FPDU avoids it (siw_rping.c --first-delay).
FIRST_DELAY_MS=${SIW_RPING_FIRST_DELAY_MS:-250}

skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "not root (the siw-vm guest runs as root)"
command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 is not installed"
[ -s "$CACHE/disk.img" ] || skip "no siw-vm image cache in $CACHE (run $VM/setup.sh once)"
command -v tshark >/dev/null || skip "tshark is not installed (the wire judge needs it)"
[ -x "$BIN" ] || { echo "siw_rping.sh: $BIN is not executable"; exit 1; }

W=$(mktemp -d "${TMPDIR:-/tmp}/siw_rping.XXXXXX")
KIDS=()
cleanup() { for p in "${KIDS[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$W"; }
trap cleanup EXIT
PORT=$((20000 + $$ % 20000))
PASSED=0 FAILED=0
T0=$(date +%s)

# The lines rping -v prints for COUNT iterations of SIZE octets (rping_test_client's pattern).
expected() { # PREFIX COUNT SIZE
    python3 - "$@" <<'EOF'
import sys
prefix, count, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for ping in range(count):
    b = bytearray(b"rdma-ping-%d: " % ping)
    c = 65 + ping % 58
    while len(b) < size:
        b.append(c)
        c = 65 if c == 122 else c + 1
    print(prefix + b[:size - 1].decode())  # the last octet is the NUL
EOF
}

# Judges the capture; prints the findings not allowed. OURS is i>r or r>i.
judge() { # PCAP PORT OURS CRC
    local out
    out=$("$JUDGE" "$1" "$2" 2>&1)
    local rc=$?
    echo "$out" >"$1.judge"
    [ $rc -le 1 ] || { echo "    judge could not run (rc $rc): $(tail -n 1 "$1.judge")"; return; }
    awk -v ours="$3" -v crc="$4" -v known=" $SIW_KNOWN " '
        /^#[0-9]+ / { dir[substr($1, 2)] = $2 }
        /^  (WARN|ERROR) / {
            n = ""; if ($2 ~ /^#[0-9]+$/) n = substr($2, 2)
            cat = $0; sub(/^[^[]*\[/, "", cat); sub(/\].*/, "", cat)
            if (cat == "crc-off" && crc == "off") next
            if (n != "" && dir[n] != "" && dir[n] != ours && index(known, " " cat " ")) next
            print "    judge: " (n != "" && dir[n] != "" ? dir[n] : "?") " " $0
        }
        /^RESULT: FAIL/ { print "    judge: RESULT: FAIL" }' "$1.judge"
}

# Checks the guest's rping -v lines against the pattern; prints a diff when they differ.
check_lines() { # LOG PREFIX COUNT SIZE
    diff <(tr -d '\r' <"$1" | grep "^$2") <(expected "$2" "$3" "$4") >"$1.diff" ||
        echo "    guest rping printed other data: $(head -c 300 "$1.diff")"
}

# One run: DIR h2g|g2h, COUNT, SIZE, CRC on|off, VERBOSE (guest -v) yes|no
run() {
    local dir=$1 count=$2 size=$3 crc=$4 gv=$5
    local name="$dir-${count}x$size-crc-$crc" port=$((PORT++))
    local d="$W/$name" copt=() vopt=() t=$SECONDS problems
    [[ -z "${SIW_RPING_ONLY:-}" || "$name" == $SIW_RPING_ONLY ]] || return 0
    mkdir -p "$d/share"
    [ "$crc" = on ] && copt=(--crc)
    [ "$gv" = yes ] && vopt=(-v)
    local dm="rc=\$?; dmesg | grep -iE 'siw|iw_cm|rdma' | tail -n 20; exit \$rc"
    if [ "$dir" = h2g ]; then # guest: rping server; host: our client
        "$VM/run.sh" --hostfwd "$port" --pcap "$d/cap.pcap" --share "$d/share" \
            "rping -s -a 10.0.2.15 -p $port -C $count -S $size ${vopt[*]} & sleep 2;
             touch /share/ready; wait \$!; $dm" >"$d/guest.log" 2>&1 &
        local vm=$!
        KIDS+=("$vm")
        for _ in $(seq 600); do # until the guest's listener is up (or the guest is gone)
            [ -e "$d/share/ready" ] || ! kill -0 "$vm" 2>/dev/null && break
            sleep 0.2
        done
        "$BIN" client --port "$port" --count "$count" --size "$size" "${copt[@]}" \
            --first-delay "$FIRST_DELAY_MS" >"$d/ours.log" 2>&1
        local ours=$?
        wait "$vm"
        local guest=$? side=i\>r prefix="server ping data: "
    else # host: our server; guest: rping client, validating what we write back (-V)
        "$BIN" server --port "$port" --count "$count" --size "$size" "${copt[@]}" >"$d/ours.log" 2>&1 &
        local srv=$!
        KIDS+=("$srv")
        for _ in $(seq 50); do grep -q listening "$d/ours.log" 2>/dev/null && break; sleep 0.1; done
        "$VM/run.sh" --pcap "$d/cap.pcap" \
            "rping -c -a 10.0.2.2 -p $port -C $count -S $size -V ${vopt[*]}; $dm" >"$d/guest.log" 2>&1
        local guest=$?
        wait "$srv"
        local ours=$? side=r\>i prefix="ping data: "
    fi
    problems=$(
        [ "$ours" = 0 ] || echo "    siw_rping exit $ours: $(grep -v '^ping ' "$d/ours.log" | tail -n 3)"
        [ "$guest" = 0 ] || echo "    guest rping exit $guest: $(tail -n 8 "$d/guest.log")"
        [ "$gv" = no ] || check_lines "$d/guest.log" "$prefix" "$count" "$size"
        judge "$d/cap.pcap" "$port" "$side" "$crc"
    )
    local secs=$((SECONDS - t)) summary
    summary=$(grep -h '^SUMMARY: crc' "$d/cap.pcap.judge" 2>/dev/null | sed 's/SUMMARY: //')
    if [ -z "$problems" ]; then
        PASSED=$((PASSED + 1))
        echo "PASS $name (${secs}s; $(grep '^MPA:' "$d/ours.log" | sed 's/^MPA: //'); judge: $summary)"
    else
        FAILED=$((FAILED + 1))
        echo "FAIL $name (${secs}s)"
        echo "$problems"
        if [ -n "${SIW_RPING_KEEP:-}" ]; then cp -r "$d" "$SIW_RPING_KEEP/"; fi
    fi
}

run h2g 10 64 off yes
run g2h 10 64 off yes
run h2g 10 64 on yes
run g2h 10 64 on yes
# 65535 octets: only if the guest was quick so far (TCG on a busy host can be slow)
if [ $((SECONDS)) -lt 100 ]; then
    run h2g 10 65535 off no
    run g2h 10 65535 off no
else
    echo "65535-octet runs left out: the first runs took ${SECONDS}s"
fi
echo "$PASSED passed, $FAILED failed ($(($(date +%s) - T0))s)"
[ "$FAILED" = 0 ]
