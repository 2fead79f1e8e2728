#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Instructions on the busy-poll latency path, counted exactly (the machine's wall-clock noise
# hides changes of a few hundred instructions): builds build/critpath with -DIWARP_CRITPATH=ON
# (src/util/critpath.h) and runs the client of `iwarp perf --lat --busy-poll` under callgrind
# against a server in a process of its own, collecting only from each read that brings a
# message in to the write of the answer. Prints, per message, the whole path (the perf
# loop's own work included) and, in a build without link-time optimisation (--no-lto, where the
# API functions are not inlined into the tool), the library's part: iwarp_poll_cq,
# iwarp_post_recv and iwarp_post_send, inclusive. -v adds the top functions.
#   scripts/critpath.sh [-v] [--no-lto] [--op send|write] [-s SIZE] [-n ITERS] [--crc|--no-crc]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build/critpath
lto=ON
verbose=0
args=(--op send -s 64)
n=10000
extra=()
while [ $# -gt 0 ]; do
    case $1 in
    -v) verbose=1 ;;
    --no-lto) lto=OFF; BUILD=$ROOT/build/critpath-nolto ;;
    --op) args[1]=$2; shift ;;
    -s) args[3]=$2; shift ;;
    -n) n=$2; shift ;;
    --crc | --no-crc) extra+=("$1") ;;
    *) echo "critpath.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
command -v valgrind >/dev/null || { echo "critpath.sh: needs valgrind" >&2; exit 2; }
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
    cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS=-g -DIWARP_CRITPATH=ON \
        -DIWARP_LTO=$lto -DIWARP_BUILD_TESTS=OFF -DIWARP_BUILD_BENCH=OFF -DIWARP_BUILD_EXAMPLES=OFF >/dev/null
fi
cmake --build "$BUILD" --target iwarp_cli >/dev/null
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
[ -n "${CRITPATH_KEEP:-}" ] && trap - EXIT && echo "critpath: keeping $out"
# The server runs natively in its own process: under callgrind only the client's thread runs,
# so nothing else is counted inside its paths (callgrind's collection is process-wide).
port=$((20000 + RANDOM % 20000))
common=(--lat --busy-poll --no-pin --passes 1 -p "$port" -n "$n" "${args[@]}" "${extra[@]}")
"$BUILD/iwarp" perf --server "${common[@]}" >"$out/server" 2>&1 &
server=$!
sleep 0.5
valgrind --tool=callgrind --collect-atstart=no --callgrind-out-file="$out/cg" \
    "$BUILD/iwarp" perf 127.0.0.1 "${common[@]}" >"$out/perf" 2>"$out/log" || {
    kill "$server" 2>/dev/null; cat "$out/log" "$out/server" >&2; exit 1; }
wait "$server" || true
paths=$(sed -n 's/^critpath: \([0-9]*\) paths$/\1/p' "$out/log")
[ -n "$paths" ] && [ "$paths" -gt 0 ] || { cat "$out/log" >&2; exit 1; }
callgrind_annotate --inclusive=yes "$out/cg" 2>/dev/null | tr -d , >"$out/incl"
per() { awk -v f=":$1" -v p="$paths" 'index($0, f " ") {printf "%.0f", $1 / p; exit}' "$out/incl"; }
total=$(awk -v p="$paths" '/PROGRAM TOTALS/ {printf "%.0f", $1 / p; exit}' "$out/incl")
after=$(per perf_lat_summarize) # the statistics after the last message
poll=$(per iwarp_poll_cq)
recv=$(per iwarp_post_recv)
send=$(per iwarp_post_send)
echo "critpath: ${args[*]} ${extra[*]}, LTO $lto, $paths paths (one per message)"
echo "  path per message: $((total - ${after:-0})) instructions"
if [ "$lto" = OFF ] && [ -n "$poll" ] && [ -n "$send" ]; then
    printf '  library part: %d (iwarp_poll_cq %d, iwarp_post_recv %d, iwarp_post_send up to its write %d)\n' \
        $((poll + ${recv:-0} + send)) "$poll" "${recv:-0}" "$send"
fi
if [ "$verbose" = 1 ]; then
    echo "  exclusive, per message:"
    callgrind_annotate "$out/cg" 2>/dev/null | tr -d , |
        sed 's/ \[.*//' | awk -v p="$paths" '/^ *[0-9]+ / && $NF != "TOTALS" {n=$1/p; if (n >= 20) printf "  %6.0f %s\n", n, $NF}' |
        head -40
fi
