#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# dropin.perftest: Debian's perftest binaries, unmodified, on the drop-in libibverbs/librdmacm at
# both ends over loopback TCP: ib_write_bw, ib_read_bw, ib_send_bw, ib_write_lat, ib_read_lat,
# ib_send_lat, ib_atomic_bw and ib_atomic_lat, all with -R (rdma_cm). A run passes when both
# programs exit 0 and every result line perftest prints shows the size and iteration count
# asked for. Each run's loopback traffic is captured (../shared/tools/wire-check/capture.sh) and
# the wire judge must find nothing in it but [crc-off] (CRC is off, as perftest's peers on siw
# expect, unless PERFTEST_CRC=1).
#
# Usage: perftest.sh BUILD_DIR [SHARED_DIR]   (CTest passes both)
# Env: DROPIN_PERFTEST_ITERS (bandwidth iterations of 16 KiB, default 200: much more overflows
# the loopback capture; latency and atomics: twice as many), DROPIN_PERFTEST_ONLY ('ib_read_bw ...'),
# PERFTEST_CRC=1 (IWARP_MPA_CRC=1 on both sides).
# Exit: 0 all passed, 1 a run failed, 77 skipped (perftest not installed).
set -u
BUILD=$(realpath "${1:?usage: perftest.sh BUILD_DIR [SHARED_DIR]}")
SHARED=$(realpath "${2:-$(dirname "$0")/../../../shared}")
JUDGE=$SHARED/tools/wire-check/check.sh
CAPTURE=$SHARED/tools/wire-check/capture.sh
HERE=$(dirname "$(realpath "$0")")
# shellcheck source=../support/wait_for.sh
. "$HERE/../support/wait_for.sh"
command -v ib_write_bw >/dev/null || { echo "SKIP: perftest is not installed"; exit 77; }
[ -e "$BUILD/dropin/librdmacm.so.1" ] || { echo "perftest.sh: no drop-in in $BUILD/dropin"; exit 1; }
ITERS=${DROPIN_PERFTEST_ITERS:-200}
LAT_ITERS=$((ITERS * 2))
TESTS=${DROPIN_PERFTEST_ONLY:-ib_write_bw ib_read_bw ib_send_bw ib_write_lat ib_read_lat ib_send_lat ib_atomic_bw ib_atomic_lat}
export LD_LIBRARY_PATH=$BUILD/dropin
[ "${PERFTEST_CRC:-0}" = 1 ] && export IWARP_MPA_CRC=1
# perftest's -R server listens for the data connection only after the first exchange over its
# own rdma_cm connection, and its client may dial before that: refused, it calls its retry loop,
# which in perftest 4.5 resolves on the rdma_cm_ids it has just destroyed and crashes (SIGSEGV
# in rdma_resolve_addr, as on a kernel device). The drop-in's connector dials again instead.
export IWARP_CONNECT_RETRY_MS=${IWARP_CONNECT_RETRY_MS:-5000}
# A failing run's capture is kept here (and its first packets printed) to be looked at.
KEEP=$BUILD/Testing/dropin-perftest-failures

W=$(mktemp -d "${TMPDIR:-/tmp}/dropin_perftest.XXXXXX")
KIDS=()
cleanup() { for p in "${KIDS[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$W"; }
trap cleanup EXIT
trap "exit 1" INT TERM
# Each drop-in script has its own band of ports (they run side by side under ctest -j):
# perftest.sh 20000-20999, rdmacm_lib.sh 21000-23999, siw.sh 24000-28999, exec.sh 29000-29499;
# below the ephemeral range (32768-). A port something listens on is skipped.
PORT=$((20000 + $$ % 900))
free_port() { while ss -Hltn "sport = :$PORT" | grep -q .; do PORT=$((PORT + 1)); done; }
PASSED=0 FAILED=0

# perftest's result line: "#bytes #iterations ..." then " SIZE ITERS ...".
result_ok() { tr -d '\r' <"$1" | grep -qE "^ *$2 +$3 +[0-9]"; }

for t in $TESTS; do
    case $t in
    ib_atomic_*) size=8 n=$LAT_ITERS ;;
    *_bw) size=16384 n=$ITERS ;;
    *) size=64 n=$LAT_ITERS ;;
    esac
    args=(-R -F -s "$size" -n "$n" -p "$PORT")
    [[ $t == ib_atomic_* ]] && args=(-R -F -n "$n" -p "$PORT")
    pcap=$W/$t.pcap
    free_port
    timeout 60 "$t" "${args[@]}" >"$W/$t.server" 2>&1 &
    srv=$!
    KIDS+=("$srv")
    wait_for -p "$srv" 20 "$t's listener on port $PORT" sh -c "ss -Hltn 'sport = :$PORT' | grep -q ."
    # The client starts a second after capture.sh says the capture runs: under load, dumpcap
    # says so before it records (captures then began mid-connection, without the MPA
    # Request: the judge's [no-mpa]).
    "$CAPTURE" "$PORT" "$pcap" -- sh -c 'sleep 1; exec "$@"' sh \
        timeout 60 "$t" "${args[@]}" 127.0.0.1 >"$W/$t.client" 2>&1
    crc=$?
    wait "$srv"
    src=$?
    problems=$(
        [ "$src" = 0 ] || echo "    server exit $src: $(tail -n 4 "$W/$t.server")"
        [ "$crc" = 0 ] || echo "    client exit $crc: $(tail -n 4 "$W/$t.client")"
        for side in client server; do
            # perftest's ib_read_lat and ib_atomic_lat servers print no result line
            [[ $side == server && $t == ib_@(read|atomic)_lat ]] && continue
            result_ok "$W/$t.$side" "$size" "$n" ||
                echo "    $side's result is not $size octets x $n: $(grep -A1 '#bytes' "$W/$t.$side" | tail -n 1)"
        done
        out=$("$JUDGE" -q "$pcap" "$PORT" 2>&1)
        jrc=$?
        echo "$out" >"$W/$t.judge"
        if [ $jrc -gt 1 ]; then
            echo "    judge could not run (rc $jrc): $(tail -n 2 <<<"$out")"
        else
            bad=$(grep -E '^\s*(WARN|ERROR) ' <<<"$out" | grep -v '\[crc-off\]')
            if [ -n "$bad" ]; then
                echo "    wire judge: $(head -n 5 <<<"$bad")"
                mkdir -p "$KEEP" && cp "$pcap" "$KEEP/$t.$PORT.pcap" &&
                    echo "    capture kept: $KEEP/$t.$PORT.pcap; its first packets:"
                tshark -r "$pcap" -c 12 2>/dev/null | sed 's/^/      /'
            fi
        fi
    )
    if [ -z "$problems" ]; then
        PASSED=$((PASSED + 1))
        echo "PASS $t ($size octets x $n; judge: $(grep -h '^SUMMARY: errors' "$W/$t.judge"))"
    else
        FAILED=$((FAILED + 1))
        echo "FAIL $t ($size octets x $n)"
        echo "$problems"
    fi
    PORT=$((PORT + 1))
done
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
