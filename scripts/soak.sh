#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The soak (issue 17 item 8; docs/soak.md): 1,000 QP pairs in one process with connection
# churn for an hour, RSS and descriptors sampled every 10 s, judged flat after the warm-up.
#   scripts/soak.sh [--quick] [--out PREFIX] [BENCH_SOAK_OPTIONS...]
# Builds the release preset's bench_soak and runs it: --duration 3600 --qps 1000 --interval 10
# (--quick: --duration 120 --interval 5 --no-judge-rss, about 2 minutes: RSS takes about 5
# minutes to settle, docs/soak.md); later options override these. The
# samples go to PREFIX.csv and the whole run (samples, totals, judgement) to PREFIX.json
# (default build/release/soak/soak-DATE-TIME). Exit status: bench_soak's (0 flat, 1 an error or
# not flat, 2 usage). Not part of CI. On a shared machine: `nice -n 10 scripts/soak.sh`.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build/release
args=(--duration 3600 --qps 1000 --interval 10)
out=""
more=()
while [ $# -gt 0 ]; do
    case "$1" in
    --quick) args=(--duration 120 --qps 1000 --interval 5 --no-judge-rss); shift ;;
    --out) out=$2; shift 2 ;;
    -h | --help) sed -n '3,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) more+=("$1"); shift ;;
    esac
done
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
    cmake --preset release -S "$ROOT" >/dev/null
fi
cmake --build "$BUILD" --target bench_soak >/dev/null
if [ -z "$out" ]; then
    mkdir -p "$BUILD/soak"
    out=$BUILD/soak/soak-$(date -u +%Y%m%d-%H%M%S)
fi
echo "soak: ${args[*]} ${more[*]}; samples in $out.csv, the run in $out.json" >&2
set +e
"$BUILD/bench/bench_soak" "${args[@]}" "${more[@]}" --json "$out.json" | tee "$out.csv"
rc=${PIPESTATUS[0]}
exit "$rc"
