#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The whole test suite, as CI runs it (.ci/run calls this). On a fresh Debian 12 machine it
# installs what is missing, then: format check, layering check, the Linux siw guest image (once),
# ASan+UBSan build (-Werror) and every CTest test (unit tests, fuzz corpus replays, the wire judge
# on generated captures, rping against siw), a release build with an install/consumer check, the
# ABI check against the committed dumps (abi/), the Debian packages (built in a scratch copy,
# lintian, the example on the unpacked .debs), a build without ISA-L, and each libFuzzer target
# for FUZZ_SECONDS (15).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${JOBS:-$(nproc)}
step() { printf '\n==== %s ====\n' "$*"; }
t0=$(date +%s)

step "dependencies"
scripts/install-deps.sh

step "format (clang-format 14)"
scripts/check-format.sh

step "layering"
scripts/check-layering.sh

step "licence (BSD-2-Clause, an SPDX line in every source file)"
scripts/check-licence.sh

step "Linux siw guest for the interop tests (../shared/tools/siw-vm; built once, then cached)"
siw_setup=../shared/tools/siw-vm/setup.sh
if [ -x "$siw_setup" ] && "$siw_setup"; then
  echo "siw-vm: ready"
else
  # The interop tests then report SKIP with the reason; they never pass without a guest.
  echo "siw-vm: the guest image could not be built here; interop tests will be SKIPPED"
fi

step "ASan+UBSan build and tests"
cmake --preset asan-ubsan >/dev/null
cmake --build --preset asan-ubsan -j "$jobs"
ctest --preset asan-ubsan -j "$jobs"

step "ThreadSanitizer: threads posting/polling one QP and CQ with the progress thread; CM; loop; event waits; lock holds; owned I/O waits; SCTP matrix; atomics contention; the multi-threaded example client"
cmake --preset tsan >/dev/null
cmake --build --preset tsan -j "$jobs" --target test_stack_threads test_stack_many_qps test_cm test_loop test_stack_matrix test_cq_event_wait test_lock_holds test_owned_io_wait test_stack_rdmap_ext mt_client event_server
ctest --preset tsan -R '^(tsan\.(stack_threads|stack_matrix_sctp|stack_rdmap_ext_contention|example_mt_client)|unit\.test_loop|e2e\.test_(cm|stack_many_qps|cq_event_wait|lock_holds|owned_io_wait))$'

step "release build and install check"
cmake --preset release >/dev/null
cmake --build --preset release -j "$jobs"
tests/scripts/install_check.sh build/release

step "ABI: libiwarp.so against the committed abi/ dumps (abi-dumper, abi-compliance-checker; docs/abi.md)"
JOBS=$jobs scripts/abi-check.sh --selftest

step "Debian packages: dpkg-buildpackage in a scratch copy, lintian, the example on the unpacked .debs"
tests/scripts/deb_check.sh

step "drop-in libibverbs/librdmacm: unmodified rdma-core programs (release build)"
ctest --preset release -L '^dropin$' -j "$jobs"

step "optional tools skip, never fail: the release tree's tests without tshark, qemu, the siw image, iproute2, python3, rdma-core's programs"
tests/scripts/optional_tools.sh build/release

step "portable CRC32C (a build without ISA-L)"
cmake -S . -B build/no-isal -G Ninja -DCMAKE_BUILD_TYPE=Debug -DIWARP_WITH_ISAL=OFF -DIWARP_WERROR=ON >/dev/null
cmake --build build/no-isal -j "$jobs" --target test_crc32c
build/no-isal/tests/test_crc32c | tail -n 2

step "fuzz smoke (${FUZZ_SECONDS:-15} s per target, clang + libFuzzer + ASan + UBSan)"
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j "$jobs"
scripts/fuzz-smoke.sh

step "all passed in $(( $(date +%s) - t0 )) s"
