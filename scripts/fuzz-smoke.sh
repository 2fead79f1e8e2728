#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Runs every libFuzzer target of the fuzz preset for FUZZ_SECONDS (default 15) each, under
# ASan+UBSan, starting from its committed seed corpus. New inputs go to a scratch directory, never
# into the repository; a crash leaves its reproducer in build/fuzz/artifacts/ and fails the run.
#   scripts/fuzz-smoke.sh [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${FUZZ_SECONDS:-15}
bin=build/fuzz/fuzz
[ -d "$bin" ] || { echo "fuzz-smoke: $bin missing: cmake --preset fuzz && cmake --build --preset fuzz" >&2; exit 2; }
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in "$bin"/fuzz_*; do [ -x "$f" ] && targets+=("$(basename "$f" | sed 's/^fuzz_//')"); done
fi
mkdir -p build/fuzz/artifacts
scratch=$(mktemp -d); trap 'rm -rf "$scratch"' EXIT
failed=0
for t in "${targets[@]}"; do
  mkdir -p "$scratch/$t"
  log=build/fuzz/artifacts/$t.log
  if "$bin/fuzz_$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="build/fuzz/artifacts/$t-" "$scratch/$t" "fuzz/corpus/$t" >"$log" 2>&1; then
    runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo '?')
    cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 || true)
    echo "PASS fuzz_$t: $runs runs in ${secs}s, $cov"
  else
    echo "FAIL fuzz_$t (log: $log)"; tail -n 40 "$log"; failed=$((failed+1))
  fi
done
echo "fuzz-smoke: ${#targets[@]} targets, $failed failed"
[ "$failed" = 0 ]
