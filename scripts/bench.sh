#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The performance table (see scripts/bench.py for what it measures and how):
#   scripts/bench.sh [--quick] [--passes N] [--json FILE] [--only TARGET] [--cc NAME] [-v]
# Builds the release preset's iwarp, bench_fabric and bench_usrsctp first (bench_fabric only
# where libfabric-dev is installed: `apt-get install libfabric-dev`; without it the libfabric
# column says it was skipped). Full run: under 20 minutes on a 2-core machine; --quick: one row
# per target, 3 passes, under 5. Run it on an otherwise idle machine: every pass reports the
# CPU other processes used meanwhile, and disturbed passes are marked.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build/release
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
    cmake --preset release -S "$ROOT" >/dev/null
fi
targets=(iwarp_cli bench_threads)
grep -q '^FABRIC_FOUND:INTERNAL=1' "$BUILD/CMakeCache.txt" && targets+=(bench_fabric)
grep -q '^IWARP_WITH_SCTP:BOOL=ON' "$BUILD/CMakeCache.txt" && targets+=(bench_usrsctp)
cmake --build "$BUILD" -j"$(nproc)" --target "${targets[@]}" >/dev/null
exec python3 "$ROOT/scripts/bench.py" --build "$BUILD" "$@"
