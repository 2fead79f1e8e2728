#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Instructions per one-way 64 B Send over SCTP, counted exactly, for libiwarp and for raw
# usrsctp (scripts/critpath.sh does the same over TCP). bench/bench_usrsctp drives both ends of
# its ping-pong from one thread, so callgrind sees the whole path: usrsctp's input and output,
# the library's work on both sides, the UDP system calls' user-space side. Each transport runs
# twice under callgrind (N and 3N round trips, --only and --lat-only); the difference of the
# two totals over 4N one-way messages leaves out set-up and teardown. Prints libiwarp, raw
# usrsctp (its own CRC32c) and raw/ISA-L (its CRC32c offloaded to ISA-L as llp_sctp runs it)
# and the ratios. The build has the read-to-send instrument (-DIWARP_CRITPATH=ON,
# src/util/critpath.h), so libiwarp's count is also split: the path one-way latency waits on,
# from the read that brings a packet in to the send of a packet with DATA in it (the answer),
# and the rest (empty polls, what follows a send). -v adds libiwarp's top functions (exclusive,
# per one-way, whole run).
#   scripts/critpath-sctp.sh [-v] [--no-lto] [-n N]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build/critpath-sctp
lto=ON
verbose=0
n=2000
while [ $# -gt 0 ]; do
    case $1 in
    -v) verbose=1 ;;
    --no-lto) lto=OFF; BUILD=$ROOT/build/critpath-sctp-nolto ;;
    -n) n=$2; shift ;;
    *) echo "critpath-sctp.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
command -v valgrind >/dev/null || { echo "critpath-sctp.sh: needs valgrind" >&2; exit 2; }
if ! grep -qs '^IWARP_CRITPATH:BOOL=ON' "$BUILD/CMakeCache.txt"; then
    cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS=-g \
        -DIWARP_CRITPATH=ON -DIWARP_LTO=$lto -DIWARP_BUILD_TESTS=OFF -DIWARP_BUILD_BENCH=ON \
        -DIWARP_BUILD_EXAMPLES=OFF >/dev/null
fi
cmake --build "$BUILD" --target bench_usrsctp >/dev/null
exe=$BUILD/bench/bench_usrsctp
[ -x "$exe" ] || { echo "critpath-sctp.sh: no bench_usrsctp (built without usrsctp?)" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# run TRANSPORT ROUND_TRIPS [no]: callgrind's instructions of that run; with "no", only those
# of libiwarp's paths (collection starts off, and each path turns it on and off again; without
# it, the same toggles leave out the paths, so the two add up to the whole run)
run() {
    valgrind --tool=callgrind --collect-atstart="${3:-yes}" --callgrind-out-file="$out/$1.$2${3:-}" \
        "$exe" --only "$1" --lat-only --passes 1 --lat-iters "$2" >/dev/null \
        2>"$out/$1.$2${3:-}.log" || {
        cat "$out/$1.$2${3:-}.log" >&2
        exit 1
    }
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$out/$1.$2${3:-}.log"
}
declare -A per
for t in iwarp raw raw-isal; do
    a=$(run "$t" "$n")
    b=$(run "$t" $((3 * n)))
    per[$t]=$(((b - a) / (4 * n)))
done
a=$(run iwarp "$n" no)
b=$(run iwarp $((3 * n)) no)
path=$(((b - a) / (4 * n)))
per[iwarp]=$((per[iwarp] + path))
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
echo "critpath-sctp: 64 B Send ping-pong, LTO $lto, instructions per one-way message ($((2 * n)) vs $((6 * n)) one-ways)"
echo "  libiwarp   ${per[iwarp]}  (from a read to the answer's send: $path)"
echo "  raw usrsctp ${per[raw]}  (libiwarp / raw $(ratio "${per[iwarp]}" "${per[raw]}"))"
echo "  raw/ISA-L  ${per[raw-isal]}  (libiwarp / raw/ISA-L $(ratio "${per[iwarp]}" "${per[raw-isal]}"))"
if [ "$verbose" = 1 ]; then
    echo "  libiwarp, exclusive per one-way (the larger run less the smaller):"
    for k in "$n" $((3 * n)); do
        callgrind_annotate --auto=no "$out/iwarp.$k" 2>/dev/null | tr -d , |
            sed -nE 's/^ *([0-9]+) \([^)]*\) +([^ =][^ ]*).*/\1\t\2/p' >"$out/fn.$k"
    done
    awk -F'\t' -v d=$((4 * n)) 'NR == FNR { a[$2] = $1; next }
        $2 != "PROGRAM" { v = ($1 - a[$2]) / d; if (v >= 20) printf "  %6.0f %s\n", v, $2 }' \
        "$out/fn.$n" "$out/fn.$((3 * n))" | sort -rn | head -40
fi
