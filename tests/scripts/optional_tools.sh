#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Optional tools skip, never fail. Runs a built tree's tool-using tests (all but unit, e2e, fuzz
# replays and TSan) as a machine with only the build dependencies would (tests/support/
# without_tools.sh: no tshark, qemu, siw image, iproute2, python3, rdma-core or perftest programs,
# libfabric tools), and configures a scratch tree the same way: no test may FAIL, the ones that
# need those tools must be SKIPPED with a reason, and the rest must still pass.
#   optional_tools.sh BUILD_DIR
set -euo pipefail
build=$(cd "${1:?usage: optional_tools.sh BUILD_DIR}" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
masked=$src/tests/support/without_tools.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# 1. the built tree's tests, without the tools
"$masked" ctest --test-dir "$build" -E '^(unit|e2e|fuzz_replay|tsan)\.' -j 2 --output-on-failure \
  >"$tmp/ctest" 2>&1 || true
grep -E '^ *[0-9]+/[0-9]+ Test' "$tmp/ctest" | sed 's/^ *//'
grep -qE 'tests failed out of|Test #' "$tmp/ctest" || { cat "$tmp/ctest"; fail "ctest did not run"; }
failed=$(grep -E '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .*\*\*\*(Failed|Timeout|Exception|Not Run)' "$tmp/ctest" || true)
[ -z "$failed" ] || { fail "tests failed without the optional tools:"; echo "$failed"; cat "$tmp/ctest"; }
# The mask worked: tests that cannot run without the tools were skipped, and said why.
for t in wire.judge interop.siw_rping scripts.perf_cli scripts.dump_cli; do
  grep -qE "Test +#[0-9]+: $t .*Skipped" "$tmp/ctest" || fail "$t was not skipped without its tools"
done

# 2. a tree configured without python3: its tests are registered as skips. CMake's find_program
# also looks in /usr/bin, which no PATH hides, so python3's absence is given to it directly.
"$masked" cmake -S "$src" -B "$tmp/cfg" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DIWARP_PYTHON3=IWARP_PYTHON3-NOTFOUND >"$tmp/cfg.log" 2>&1 ||
  { cat "$tmp/cfg.log"; fail "configure without the optional tools"; }
"$masked" ctest --test-dir "$tmp/cfg" -R '^scripts\.api_(docs|cycles)$' --output-on-failure \
  >"$tmp/cfg.ctest" 2>&1 || true
for t in scripts.api_docs scripts.api_cycles; do
  grep -qE "Test +#[0-9]+: $t .*Skipped" "$tmp/cfg.ctest" ||
    { cat "$tmp/cfg.ctest"; fail "$t is not a SKIP in a tree configured without python3"; }
done

n=$(grep -cE 'Test +#[0-9]+: .*Skipped' "$tmp/ctest" || true)
[ "$fails" = 0 ] && echo "PASS: optional tools: nothing failed without them, $n tests skipped with a reason"
exit $((fails > 0))
