#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# dropin.siw: unmodified Debian binaries on the drop-in libibverbs/librdmacm (host) against the
# same binaries on Linux siw in a qemu guest (../shared/tools/siw-vm), in ONE guest boot:
#   rping, both roles: 64 octets -V with CRC off and on, 65535 octets -V
#   perftest -R: ib_write_bw, ib_read_bw, ib_send_bw, ib_write_lat, ib_read_lat, ib_send_lat,
#     both roles (sizes 4096 for bandwidth, 64 for latency; small counts: TCG is slow); each
#     side's result line must show the same size and iteration count
#   ib_atomic_bw: siw has no RFC 7306 atomics; the drop-in's client must fail cleanly (non-zero
#     exit within the timeout, no hang), whatever siw's server does. What siw's kernel does: the
#     drop-in's RTR and its first atomics reach siw in one segment, siw answers with a Terminate,
#     and siw 6.1's iw_cm then hits BUG() (iwcm.c:969, docs/interop-siw.md): the guest kernel is
#     dead. The run is last; once the console shows that BUG the host stops the guest instead
#     of waiting out its timeout, and reports it ("KNOWN").
#   ib_write_lat-held: h2g ib_write_lat with the drop-in's first FPDU held 1.5 s, so that siw's
#     server writes first (the PASS line says whether it did)
#   h2g: the guest's program serves, ours dials 127.0.0.1 through a hostfwd;
#   g2h: ours serves, the guest's program dials 10.0.2.2.
# The guest NIC's capture is judged per port (../tests/interop/judge_lib.sh): nothing but
# [crc-off] on a CRC-off connection, and siw's known [pad] (its non-zero PAD octets in perftest's
# 2-octet MTU exchange, RFC 5044 §4.1) in siw's direction.
# siw's perftest sometimes fails its closing handshake after a complete run (g2h ib_read_lat 2 of
# 6 runs, once g2h ib_write_bw): its own last Send, which the capture shows on the wire and our
# side answered, completes with IBV_WC_LOC_QP_OP_ERR ("Bad wc status 2", "Unable to write to
# socket/rdma_cm", "Failed to close connection between server and client") once our FIN has
# come. Such a run passes when everything else holds (our exit 0, both result lines, the judge,
# and in the capture our FIN on each connection acknowledging every octet siw sent: we closed
# after the whole exchange) and is reported with "KNOWN: ..."; any other guest failure fails. DROPIN_SIW_READS=0 leaves
# out ib_read_bw and ib_read_lat.
# siw's rping client (g2h) once exited 255 after a complete run: its output was its normal
# "client DISCONNECT EVENT..." and then "rdma_get_cm_event: Bad file descriptor", which its cm
# thread prints before exit(-1) when main has destroyed the event channel that thread still
# reads: rping's own teardown race, after every ping was verified (-V prints "data mismatch!",
# and each other failure of its loop its own message). Such a run passes, reported "KNOWN", when
# that is all the guest printed and everything else holds (as above, our FIN included).
# siw once (CI, rping-65535-h2g) sent an RDMA Write whose segments skipped 1436 octets of its
# Tagged Offsets, and our rping's -V found that part of its buffer unwritten. A rping data
# mismatch passes as "KNOWN" only when the judge's findings on that connection are all such
# skips in siw's own direction (siw_stream_hole) and everything else holds; a mismatch without
# them, or with any other finding, fails.
# Not run: g2h ib_write_lat. perftest's ib_write_lat server (the MPA Responder) sends the first
# FPDU, which RFC 5044 §7.1.2 forbids before the Initiator's first FPDU arrives; siw's client
# does not use RFC 6581's RTR, so the drop-in's server would wait for a client that waits for it.
#
# Usage: siw.sh BUILD_DIR [SHARED_DIR]   (CTest passes both)
# Env: DROPIN_SIW_ITERS (bandwidth iterations, default 50; latency: half), DROPIN_SIW_ONLY (a
# glob of run names), DROPIN_SIW_KEEP=DIR (keep the work directory when a run failed or was KNOWN).
# Exit: 0 all passed, 1 a run failed, 77 skipped (no image cache, no qemu, not root, no tshark).
set -u
BUILD=$(realpath "${1:?usage: siw.sh BUILD_DIR [SHARED_DIR]}")
SHARED=$(realpath "${2:-$(dirname "$0")/../../../shared}")
VM=$SHARED/tools/siw-vm
export JUDGE=$SHARED/tools/wire-check/check.sh # used by judge_lib.sh
HERE=$(dirname "$(realpath "$0")")
# shellcheck source=../interop/judge_lib.sh
. "$HERE/../interop/judge_lib.sh"
# shellcheck source=../interop/siw_known.sh
. "$HERE/../interop/siw_known.sh"
# shellcheck source=../support/wait_for.sh
. "$HERE/../support/wait_for.sh"
# shellcheck source=../support/bounded.sh
. "$HERE/../support/bounded.sh"
CACHE=${SIW_VM_CACHE:-$HOME/.cache/iwarp-siw-vm}
ITERS=${DROPIN_SIW_ITERS:-50}
LAT_ITERS=$(((ITERS + 1) / 2))
export SIW_VM_TIMEOUT=${SIW_VM_TIMEOUT:-400}
SIW_KNOWN="pad"
# Linux siw 6.1 as MPA responder sends its Reply before it installs its socket callbacks: an FPDU
# arriving at once can go unnoticed; the drop-in's connector holds its first FPDU this long.
export IWARP_FIRST_FPDU_DELAY_MS=${IWARP_FIRST_FPDU_DELAY_MS:-250}
# perftest -R (h2g) dials the guest's server twice: a control connection, then the data
# connection. Its server destroys its listener after accepting the first and listens again only
# later, which in the slow guest is well after our client dials: the hostfwd accepts and then
# resets (or the guest refuses), and perftest's own retry loop then uses freed memory and
# crashes. The drop-in's connector dials again by itself for this long instead.
export IWARP_CONNECT_RETRY_MS=${IWARP_CONNECT_RETRY_MS:-5000}

skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "not root (the siw-vm guest runs as root)"
command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 is not installed"
[ -s "$CACHE/disk.img" ] || skip "no siw-vm image cache in $CACHE (run $VM/setup.sh once)"
command -v tshark >/dev/null || skip "tshark is not installed (the wire judge needs it)"
command -v rping >/dev/null && command -v ib_write_bw >/dev/null ||
    skip "rdmacm-utils and perftest are not installed"
[ -e "$BUILD/dropin/librdmacm.so.1" ] || { echo "siw.sh: no drop-in in $BUILD/dropin"; exit 1; }
DROPIN=(env LD_LIBRARY_PATH="$BUILD/dropin")

W=$(mktemp -d "${TMPDIR:-/tmp}/dropin_siw.XXXXXX")
S=$W/share
mkdir -p "$S"
KIDS=()
cleanup() { for p in "${KIDS[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$W"; }
trap cleanup EXIT
trap "exit 1" INT TERM
BASE=$((24000 + $$ % 4900)) # its band (see perftest.sh); below the ephemeral range (32768-)

# The runs: NAME DIR PROGRAM HOST_ENV ARGS. NAME's port is BASE + its index.
RUNS=(
    "rping-64-crc-off h2g rping - -C 10 -S 64"
    "rping-64-crc-off g2h rping - -C 10 -S 64"
    "rping-64-crc-on h2g rping IWARP_MPA_CRC=1 -C 10 -S 64"
    "rping-64-crc-on g2h rping IWARP_MPA_CRC=1 -C 10 -S 64"
    "rping-65535 h2g rping - -C 5 -S 65535"
    "rping-65535 g2h rping - -C 5 -S 65535"
)
PERFTESTS="ib_write_bw ib_read_bw ib_send_bw ib_write_lat ib_read_lat ib_send_lat"
[ "${DROPIN_SIW_READS:-1}" = 0 ] && PERFTESTS="ib_write_bw ib_send_bw ib_write_lat ib_send_lat"
for t in $PERFTESTS; do
    if [[ $t == *_bw ]]; then a="-s 4096 -n $ITERS"; else a="-s 64 -n $LAT_ITERS"; fi
    RUNS+=("$t h2g $t - $a")
    [ $t = ib_write_lat ] || RUNS+=("$t g2h $t - $a")
done
# Our first FPDU held long enough (1.5 s) that siw's ib_write_lat server writes before it comes:
# the drop-in must take that Write (docs/interop-siw.md), not fail the connection.
RUNS+=("ib_write_lat-held h2g ib_write_lat IWARP_FIRST_FPDU_DELAY_MS=1500 -s 64 -n $LAT_ITERS")
# siw Reads 64 KiB from us with CRC on: our Read Responses go through the TX staging ring,
# and, when siw's Requests queue up, in segments shortened to the ring's room (docs/design.md).
RUNS+=("ib_read_bw-64k-crc-on g2h ib_read_bw IWARP_MPA_CRC=1 -s 65536 -n $ITERS")
# Last: siw's guest kernel may die of it (above), and nothing after it could run.
RUNS+=("ib_atomic_bw h2g ib_atomic_bw - -n 10")

selected() { [[ -z "${DROPIN_SIW_ONLY:-}" || "$1" == $DROPIN_SIW_ONLY ]]; }
# A program's role options: rping -s/-c with -a; perftest: server bare, client the address.
guest_args() { # PROGRAM ROLE PORT ARGS
    case $1 in
    rping) [ "$2" = server ] && echo "-s -a 10.0.2.15 -p $3 $4" || echo "-c -a 10.0.2.2 -p $3 -V $4" ;;
    # -F: report even when the cycle-counter calibration fails under TCG
    *) [ "$2" = server ] && echo "-R -F -d siw0 -p $3 $4" || echo "-R -F -d siw0 -p $3 $4 10.0.2.2" ;;
    esac
}
host_args() { # PROGRAM ROLE PORT ARGS
    case $1 in
    rping) [ "$2" = server ] && echo "-s -a 127.0.0.1 -p $3 $4" || echo "-c -a 127.0.0.1 -p $3 -V $4" ;;
    *) [ "$2" = server ] && echo "-R -F -p $3 $4" || echo "-R -F -p $3 $4 127.0.0.1" ;;
    esac
}

# The guest's side, in order; the host follows the marker files in /share.
{
    cat "$HERE/../support/wait_for.sh" "$HERE/../interop/guest_lib.sh"
    echo 'cd /share'
    i=0
    for r in "${RUNS[@]}"; do
        read -r name dir prog _ args <<<"$r"
        port=$((BASE + i)) i=$((i + 1))
        selected "$name-$dir" || continue
        n=$name-$dir
        if [ "$dir" = h2g ]; then
            echo "timeout 60 stdbuf -oL $prog $(guest_args "$prog" server $port "$args") >$n.guest 2>&1 & pid=\$!"
            echo "wait_for -p \$pid 30 \"$n's listener on port $port\" listening $port"
            echo "touch $n.ready; wait \$pid; echo \$? >$n.rc"
        else
            echo "wait_for 60 \"the host's $n server\" test -e $n.ready"
            echo "timeout 60 stdbuf -oL $prog $(guest_args "$prog" client $port "$args") >$n.guest 2>&1; echo \$? >$n.rc"
        fi
    done
    echo "dmesg | grep -iE 'siw|iw_cm' | tail -n 20 >dmesg.txt"
} >"$S/guest.sh"

FWD=()
i=0
for r in "${RUNS[@]}"; do
    read -r name dir _ <<<"$r"
    [ "$dir" = h2g ] && selected "$name-$dir" && FWD+=(--hostfwd $((BASE + i)))
    i=$((i + 1))
done

T0=$SECONDS
# run.sh keeps the guest console in its temporary directory: under $W, to be read while it runs
TMPDIR=$W "$VM/run.sh" "${FWD[@]}" --pcap "$W/cap.pcap" --share "$S" 'bash /share/guest.sh' \
    >"$W/guest.log" 2>&1 &
VMPID=$!
KIDS+=("$VMPID")
await() { wait_for -p "$VMPID" 150 "the guest's ${1##*/}" test -e "$1"; }
# The guest kernel's BUG line, if its console (kept by run.sh under $W) shows one.
guest_bug() { cat "$W"/siw-vm.*/console.log 2>/dev/null | grep -m 1 'kernel BUG at'; }
rc_or_bug() { test -e "$1" || guest_bug >/dev/null; }

i=0
for r in "${RUNS[@]}"; do
    read -r name dir prog envs args <<<"$r"
    port=$((BASE + i)) i=$((i + 1))
    n=$name-$dir
    selected "$n" || continue
    env=()
    [ "$envs" = - ] || env=("$envs")
    if [ "$dir" = h2g ]; then
        if await "$S/$n.ready"; then
            # shellcheck disable=SC2046 # the arguments are words
            bounded 90 "$S/$n.hang" stdbuf -oL "${DROPIN[@]}" "${env[@]}" \
                $prog $(host_args "$prog" client $port "$args") >"$S/$n.ours" 2>&1
            echo $? >"$S/$n.ours.rc"
        fi
    else
        # shellcheck disable=SC2046
        bounded 90 "$S/$n.hang" stdbuf -oL "${DROPIN[@]}" "${env[@]}" \
            $prog $(host_args "$prog" server $port "$args") >"$S/$n.ours" 2>&1 &
        srv=$!
        KIDS+=("$srv")
        wait_for -p "$srv" 30 "our $n server's listener (port $port)" \
            sh -c "ss -Hltn 'sport = :$port' | grep -q ."
        touch "$S/$n.ready"
        wait "$srv"
        echo $? >"$S/$n.ours.rc"
    fi
    if [ "$prog" = ib_atomic_bw ]; then # see the header: the guest's kernel may be dead
        wait_for -p "$VMPID" 150 "the guest's $n.rc (or its kernel's BUG)" rc_or_bug "$S/$n.rc"
        guest_bug >"$S/$n.bug" || rm -f "$S/$n.bug"
        [ -e "$S/$n.bug" ] && pkill -TERM -P "$VMPID" timeout
    else
        await "$S/$n.rc"
    fi
done
wait "$VMPID"
echo "guest: rc $?, $(grep -o 'accel=.*' "$W/guest.log" | tail -n 1), $((SECONDS - T0)) s in all"

PASSED=0 FAILED=0 KNOWN=0
segments() { # PCAP PORT: the first 40 segments with payload or SYN/FIN/RST, one line each
    tshark -r "$1" -Y "tcp.port == $2 && (tcp.len > 0 || tcp.flags.syn == 1 || tcp.flags.fin == 1 || tcp.flags.reset == 1)" \
        -T fields -e frame.time_relative -e tcp.stream -e ip.src -e tcp.flags.str -e tcp.len 2>/dev/null |
        awk '{ f = $4; gsub(/[^A-Z]/, "", f); printf "    seg %.3f s  conn %s  %s  %-4s %s octets\n", $1, $2, ($3 == "10.0.2.15" ? "siw " : "ours"), f, $5 }' |
        head -n 40
}
report() { # NAME PROBLEMS
    if [ -z "$2" ]; then
        PASSED=$((PASSED + 1))
        echo "PASS $1"
    else
        FAILED=$((FAILED + 1))
        echo "FAIL $1"
        echo "$2"
    fi
}
# perftest's result line: "#bytes #iterations ..." then " SIZE ITERS ...".
result_ok() { tr -d '\r' <"$1" | grep -qE "^ *$2 +$3 +[0-9]"; }
# siw's perftest failed only in its closing handshake (see the header): its own last Send
# completed with IBV_WC_LOC_QP_OP_ERR (status 2) after our side's FIN.
siw_close_failure() { # GUEST_OUTPUT
    grep -q 'Failed to close connection between server and client' "$1" &&
        grep -qE 'Bad wc status 2|Unable to (write to|read from) socket/rdma_cm' "$1"
}

i=0
for r in "${RUNS[@]}"; do
    read -r name dir prog envs args <<<"$r"
    port=$((BASE + i)) i=$((i + 1))
    n=$name-$dir f=$S/$n
    selected "$n" || continue
    ours_rc=$(cat "$f.ours.rc" 2>/dev/null || echo none)
    guest_rc=$(cat "$f.rc" 2>/dev/null || echo none)
    problems=$(
        if [ "$prog" = ib_atomic_bw ]; then
            # siw answers an atomic with a Terminate: the drop-in's client must end, not hang
            # (timeout's 124), and must not claim success.
            case $ours_rc in 0 | 124 | none) echo "    drop-in ib_atomic_bw exit $ours_rc (expected a clean failure): $(tail -n 3 "$f.ours")" ;; esac
        else
            # rping's -V client found a data mismatch: siw's when the judge finds a hole in
            # siw's own stream (below), else a failure
            if [ "$prog" = rping ] && [ "$dir" = h2g ] && [ "$ours_rc" = 255 ] &&
                grep -q 'data mismatch!' "$f.ours"; then
                touch "$f.hole"
            elif [ "$ours_rc" != 0 ]; then
                echo "    drop-in $prog exit $ours_rc: $(tail -n 4 "$f.ours" 2>/dev/null)"
            fi
            if [ "$guest_rc" = 0 ]; then
                :
            elif [ "$prog" = rping ] && [ "$dir" = g2h ] && [ "$guest_rc" = 255 ] &&
                grep -q 'data mismatch!' "$f.guest"; then
                touch "$f.hole"
            elif [[ $prog == ib_* ]] && siw_close_failure "$f.guest"; then
                touch "$f.known" # everything else below must still hold
                fin_acked_all_siw_sent "$W/cap.pcap" "$port" ||
                    echo "    siw's closing-handshake failure, but our FIN did not acknowledge everything siw sent (we closed early?)"
            elif [ "$prog" = rping ] && [ "$guest_rc" = 255 ] && siw_rping_teardown_race "$f.guest"; then
                touch "$f.race" # everything else below must still hold
                fin_acked_all_siw_sent "$W/cap.pcap" "$port" ||
                    echo "    siw's rping teardown race, but our FIN did not acknowledge everything siw sent (we closed early?)"
            else
                echo "    guest $prog exit $guest_rc: $(tail -n 4 "$f.guest" 2>/dev/null)"
            fi
            if [[ $prog == ib_* ]]; then
                read -r _ size _ iters <<<"$args"
                # perftest's ib_read_lat server and ib_write_lat print no result line.
                for side in ours guest; do
                    file=$f.$side
                    [ $side = ours ] && role=$([ $dir = h2g ] && echo client || echo server)
                    [ $side = guest ] && role=$([ $dir = h2g ] && echo server || echo client)
                    [[ $role == server && $prog == ib_read_lat ]] && continue
                    result_ok "$file" "$size" "$iters" || grep -q 'Correlation coefficient r^2' "$file" ||
                        echo "    $side's result is not $size octets x $iters: $(grep -A1 '#bytes' "$file" | tail -n 1)"
                done
            fi
        fi
        crc=off
        [[ $envs == *CRC=1* ]] && crc=on
        off=""
        [ $crc = off ] && off="crc-off"
        ours_dir=$([ "$dir" = h2g ] && echo 'i>r' || echo 'r>i')
        allow_ours=$off allow_siw="$off $SIW_KNOWN"
        # atomics: the Terminate siw sends and the connection's abrupt end are the point
        [ "$prog" = ib_atomic_bw ] && allow_ours="$off end" allow_siw="$off $SIW_KNOWN end"
        # perftest's ib_write_lat server writes first; siw does not hold it for our RTR, which
        # the drop-in's connector holds 250 ms (above): a quick server's Write breaks rule 4
        # (siw's [startup]), and the drop-in takes it (docs/interop-siw.md)
        [ "$prog" = ib_write_lat ] && allow_siw+=" startup"
        found=$(siw_judge "$W/cap.pcap" "$port" "$ours_dir" "$allow_ours" "$allow_siw")
        if [ -e "$f.hole" ] && siw_stream_hole "$found" "$ours_dir"; then
            touch "$f.hole.siw" # everything else above must still hold
        else
            [ -z "$found" ] || echo "$found"
            [ ! -e "$f.hole" ] || echo "    rping -V found a data mismatch that no hole in siw's stream explains: $(grep -h -m1 -B1 -A1 'data mismatch' "$f.ours" "$f.guest" 2>/dev/null | tr '\n' ' ')"
        fi
    )
    # a failed run shows its connections' first segments: which side sent what, when
    [ -z "$problems" ] || problems+=$'\n'$(segments "$W/cap.pcap" "$port")
    known=""
    [ -e "$f.known" ] && known="; KNOWN: siw's perftest exited 1 in its closing handshake, its last Send completed with LOC_QP_OP_ERR after our FIN" &&
        KNOWN=$((KNOWN + 1))
    [ -e "$f.race" ] && known="; KNOWN: siw's rping exited 255 after its run, in its own teardown (rdma_get_cm_event on the channel it had destroyed)" &&
        KNOWN=$((KNOWN + 1))
    [ -e "$f.hole.siw" ] && known="; KNOWN: siw's stream skipped Tagged Offsets (the judge's [to] in siw's direction, nothing else), and rping -V found the data it left out missing" &&
        KNOWN=$((KNOWN + 1))
    [ -e "$f.bug" ] && known="; KNOWN: after siw's Terminate the guest kernel died in iw_cm: $(sed 's/^\[[^]]*\] //' "$f.bug")" &&
        KNOWN=$((KNOWN + 1))
    [[ $name == *-held ]] && known+="; siw wrote first: $(grep -q '\[startup\]' "$W/cap.pcap.$port.judge" && echo yes || echo no)"
    report "$n (port $port; judge: $(grep -h '^SUMMARY: errors' "$W/cap.pcap.$port.judge" 2>/dev/null)$known)" "$problems"
done
bounded_report "$S"/*.hang # drop-in programs that overran their bound, if any
[ -s "$S/dmesg.txt" ] && sed 's/^/    guest dmesg: /' "$S/dmesg.txt"
grep '^wait_for: ' "$W/guest.log" | sed 's/^/    guest /'
echo "$PASSED passed ($KNOWN of them with a KNOWN siw failure), $FAILED failed ($((SECONDS - T0)) s)"
if [ $((FAILED + KNOWN)) -gt 0 ] && [ -n "${DROPIN_SIW_KEEP:-}" ]; then mkdir -p "$DROPIN_SIW_KEEP" && cp -r "$W" "$DROPIN_SIW_KEEP/"; fi
[ "$FAILED" = 0 ]
