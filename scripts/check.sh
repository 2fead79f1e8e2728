#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The inner loop, for before every commit: the format, layering, licence and man page checks,
# the `dev` preset's build of what the unit tests need, and the unit tests (`ctest -L unit`: one
# module each, no sockets or threads between two stacks). Aimed at well under two minutes from a
# warm build directory on two cores. The e2e, wire, script and interop tests, the sanitizer
# builds and the fuzzers are CI's (scripts/test.sh).
#   scripts/check.sh [--all] [CTEST ARGS...]
#     --all       build every target of the preset, not only the unit tests and the library
#     CTEST ARGS  passed to ctest after -L unit, e.g. -R trace
# Exit 0 when everything passed; the failures are listed at the end otherwise.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
jobs=${JOBS:-$(nproc)}
all=0
if [ "${1:-}" = --all ]; then
    all=1
    shift
fi
t0=$(date +%s)
failed=()
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The three repository checks read files only: they run beside the build.
scripts/check-format.sh >"$tmp/format" 2>&1 &
fmt=$!
scripts/check-layering.sh >"$tmp/layering" 2>&1 &
lay=$!
scripts/check-licence.sh >"$tmp/licence" 2>&1 &
lic=$!
# The man pages' generated regions against the headers (docs.man_check does the rest in CI).
python3 scripts/gen-man.py --check >"$tmp/man" 2>&1 &
man=$!

echo "==== build (dev preset)"
if cmake --preset dev >"$tmp/configure" 2>&1; then
    targets=()
    if [ "$all" = 0 ]; then
        # unit.test_<x> runs the executable test_<x>
        mapfile -t targets < <(ctest --test-dir build/dev -N -L unit |
            sed -n 's/^ *Test *#[0-9]*: unit\.\(test_[A-Za-z0-9_]*\)$/\1/p')
        [ ${#targets[@]} -gt 0 ] || { echo "check: no unit tests found"; failed+=(build); }
    fi
    if [ ${#failed[@]} = 0 ] &&
        cmake --build --preset dev -j "$jobs" ${targets[@]:+--target "${targets[@]}"}; then
        echo "==== unit tests"
        ctest --preset dev -L unit -j "$jobs" "$@" || failed+=(unit-tests)
    else
        failed+=(build)
    fi
else
    cat "$tmp/configure"
    failed+=(configure)
fi

echo "==== format"
wait "$fmt" || failed+=(format)
cat "$tmp/format"
echo "==== layering"
wait "$lay" || failed+=(layering)
cat "$tmp/layering"
echo "==== licence"
wait "$lic" || failed+=(licence)
cat "$tmp/licence"
echo "==== man pages"
wait "$man" || failed+=(man-pages)
cat "$tmp/man"

if [ ${#failed[@]} = 0 ]; then
    echo "check: all passed in $(($(date +%s) - t0)) s"
else
    echo "check: FAILED: ${failed[*]} ($(($(date +%s) - t0)) s)"
    exit 1
fi
